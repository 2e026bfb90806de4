//! What the tool asks of Redis: every command each verb sends, and every command its
//! scripts call (a script runs its commands under the caller's ACL user too), with the
//! key each one touches, so that an ACL check can name the command a user lacks and
//! the verbs that breaks. What each script calls is the script's own list
//! (`src/scripts/`, each held to its Lua by a unit test there); this file says which
//! uses run which scripts and send which commands directly.
//!
//! Data only: the checks themselves run in `doctor.rs`.

pub use crate::scripts::{Key, Need, Which as Script, bare, on};

/// Whether a call of a script that plain runs share is made only for an option (uses
/// of their own below): the run history and `--once-per` (the acquire script reads the
/// history only for `--once-per`; the release's record is best effort, `pcall`), a
/// semaphore's or a fair queue's keys, and the mode key beyond the plain acquire's
/// GET, the release's SCARD of the waiters, and a `--once-id` record's commands. A
/// user without them still takes and releases plain locks. (`TIME` is not
/// optional: every acquisition draws its fencing number from it.)
pub fn optional(need: &Need) -> bool {
    use Key::*;
    matches!(
        need.key,
        Some(History | Slot | Queue | Beats | QueueInfo | OwnWake | Once | Verdicts | Order)
    ) || (need.key == Some(Mode) && need.command != "get")
        // The release's backup wake-up: without SCARD it falls back to EXISTS and one
        // wake-up (a user whose ACL predates it still releases and wakes).
        || (need.key == Some(Waiters) && need.command == "scard")
}

impl Script {
    /// The calls a use of the script cannot do without: all of them for the scripts of
    /// one option (a semaphore's, a fair queue's), the non-[`optional`] ones for the
    /// scripts plain runs share.
    pub fn required(self) -> impl Iterator<Item = &'static Need> {
        let whole = matches!(
            self,
            Script::SemAcquire
                | Script::Settle
                | Script::FairAcquire
                | Script::FairLeave
                | Script::WakeHead
                | Script::NewestAcquire
                | Script::Preempt
                | Script::Notify
        );
        self.calls().iter().filter(move |n| whole || !optional(n))
    }
}

/// A use of the tool that a missing command can break: a verb, or a verb with an
/// option that needs more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Use {
    pub name: &'static str,
    pub scripts: &'static [Script],
    /// Commands sent directly (besides EVALSHA and SCRIPT LOAD for the scripts).
    pub direct: &'static [Need],
    /// Whether the wrapper needs it: a command it lacks is an error, otherwise a warning.
    pub wrapper: bool,
}

/// Every use, in the order they are listed.
pub const USES: &[Use] = &[
    Use {
        name: "run",
        scripts: &[
            Script::Acquire,
            Script::RaiseFence,
            Script::Renew,
            Script::Release,
        ],
        // GET: the re-entrancy check of a run started inside a holder. BLPOP: a holder
        // waits for a request to stop (`redlock preempt`) on its own wake list. GET of
        // the mode, PTTL, HGETALL: a first try's glance (`crate::glance`; the acquire
        // script calls them too; `--once-per`'s TIME and LRANGE are the script's own).
        direct: &[
            on("get", Key::Lock),
            on("blpop", Key::OwnWake),
            on("get", Key::Mode),
            on("pttl", Key::Lock),
            on("hgetall", Key::Meta),
        ],
        wrapper: true,
    },
    Use {
        name: "run --wait",
        scripts: &[Script::Acquire, Script::Leave],
        // SCARD: the release's backup wake-up, for a woken waiter that is stopped.
        direct: &[on("blpop", Key::Wake), on("scard", Key::Waiters)],
        wrapper: true,
    },
    Use {
        name: "acquire",
        scripts: &[Script::Acquire, Script::RaiseFence, Script::Leave],
        direct: &[on("blpop", Key::Wake)],
        wrapper: false,
    },
    Use {
        name: "extend",
        scripts: &[Script::Renew],
        direct: &[],
        wrapper: false,
    },
    Use {
        name: "status",
        scripts: &[Script::Inspect],
        direct: &[],
        wrapper: false,
    },
    Use {
        name: "list",
        scripts: &[Script::Inspect],
        direct: &[bare("scan")],
        wrapper: false,
    },
    Use {
        name: "release",
        scripts: &[
            Script::Inspect,
            Script::Release,
            Script::ForceRelease,
            Script::WakeHead,
        ],
        direct: &[],
        wrapper: false,
    },
    Use {
        name: "forget",
        scripts: &[Script::Forget],
        direct: &[],
        wrapper: false,
    },
    Use {
        name: "run --limit",
        scripts: &[
            Script::SemAcquire,
            Script::Settle,
            Script::Renew,
            Script::Release,
        ],
        direct: &[],
        wrapper: false,
    },
    Use {
        name: "run --fair",
        scripts: &[
            Script::FairAcquire,
            Script::FairLeave,
            Script::WakeHead,
            Script::Settle,
            Script::Renew,
            Script::Release,
        ],
        // A waiter blocks on its own wake list.
        direct: &[on("blpop", Key::OwnWake)],
        wrapper: false,
    },
    Use {
        name: "run --supersede",
        scripts: &[
            Script::NewestAcquire,
            Script::Notify,
            Script::FairLeave,
            Script::WakeHead,
            Script::Settle,
            Script::Renew,
            Script::Release,
        ],
        // A waiter blocks on its own wake list, and so does a holder for a request to
        // stop (as every holder does, see `run`).
        direct: &[on("blpop", Key::OwnWake)],
        wrapper: false,
    },
    Use {
        name: "preempt",
        scripts: &[Script::Preempt, Script::Notify, Script::Inspect],
        direct: &[],
        wrapper: false,
    },
    Use {
        name: "run --once-per",
        scripts: &[Script::Started],
        direct: &[
            on("type", Key::History),
            on("lrange", Key::History),
            on("lpush", Key::History),
            on("lrem", Key::History),
        ],
        wrapper: false,
    },
    Use {
        name: "run --once-id",
        scripts: &[],
        direct: &[
            on("type", Key::Once),
            on("hget", Key::Once),
            on("hincrby", Key::Once),
            on("hset", Key::Once),
            on("hsetnx", Key::Once),
            on("pexpire", Key::Once),
        ],
        wrapper: false,
    },
    Use {
        name: "the run history",
        scripts: &[],
        direct: &[
            on("lpush", Key::History),
            on("ltrim", Key::History),
            on("pexpire", Key::History),
        ],
        wrapper: false,
    },
    Use {
        name: "history",
        scripts: &[],
        direct: &[on("lrange", Key::History)],
        wrapper: false,
    },
    Use {
        name: "wait",
        scripts: &[
            Script::Inspect,
            Script::Watch,
            Script::HandOn,
            Script::Leave,
        ],
        direct: &[on("blpop", Key::Wake)],
        wrapper: false,
    },
    Use {
        // INFO server and the data epoch after every grant: the lock-delay's check of
        // a restart or a flush (see `run/lock_delay.rs`); without INFO a run that saw
        // the server fail waits a whole ttl, and a restart only the host's kept run ID
        // would show goes unseen; without the epoch's SET, GET and PTTL a flush does.
        name: "run (the lock-delay's check)",
        scripts: &[],
        direct: &[
            bare("info"),
            on("set", Key::Epoch),
            on("get", Key::Epoch),
            on("pttl", Key::Epoch),
        ],
        wrapper: false,
    },
];

/// On a Cluster and through Sentinel, a grant and each renewal are acknowledged by a
/// replica (`WAIT 1`, see `redis::Node::acknowledge`); without it a crash failover to a
/// replica that missed the grant loses the lock, and the run says so once.
pub const REPLICA_ACK: Use = Use {
    name: "run on a Cluster or through Sentinel (a replica's acknowledgement)",
    scripts: &[],
    direct: &[bare("wait")],
    wrapper: false,
};

/// How every script is sent: EVALSHA, and after NOSCRIPT (the script cache empties on
/// restart and failover, so a user without it works until then) EVAL, or for a user
/// who may not EVAL, SCRIPT LOAD then EVALSHA: `+eval` is optional (one round trip
/// fewer after a restart), SCRIPT LOAD is what every user is asked for.
pub const SCRIPTING: &[Need] = &[bare("evalsha"), bare("script|load")];

/// What reaching the node needs besides: a Cluster client reads the slot map, a
/// Sentinel lookup asks the master its ROLE.
pub fn topology(cluster: bool, sentinel: bool) -> &'static [Need] {
    match (cluster, sentinel) {
        (true, _) => const { &[bare("cluster|slots")] },
        (_, true) => const { &[bare("role")] },
        _ => &[],
    }
}

/// Every distinct command (and key) to check, in a stable order.
pub fn all(cluster: bool, sentinel: bool) -> Vec<Need> {
    let mut out: Vec<Need> = Vec::new();
    let mut add = |need: Need| {
        if !out.contains(&need) {
            out.push(need);
        }
    };
    SCRIPTING.iter().copied().for_each(&mut add);
    topology(cluster, sentinel)
        .iter()
        .copied()
        .for_each(&mut add);
    if sentinel || cluster {
        REPLICA_ACK.direct.iter().copied().for_each(&mut add);
    }
    for u in USES {
        u.direct.iter().copied().for_each(&mut add);
        for s in u.scripts {
            s.calls().iter().copied().for_each(&mut add);
        }
    }
    out
}

/// The uses that `need` is part of: every use for topology, every use that runs a
/// script for scripting (the history's own uses are parts of `run`, and the `history`
/// verb reads with LRANGE alone).
pub fn broken_by(need: Need, cluster: bool, sentinel: bool) -> Vec<&'static Use> {
    if (sentinel || cluster) && REPLICA_ACK.direct.contains(&need) {
        return vec![&REPLICA_ACK];
    }
    let scripting = SCRIPTING.contains(&need);
    let everywhere = topology(cluster, sentinel).contains(&need);
    USES.iter()
        .filter(|u| {
            everywhere
                || (scripting && !u.scripts.is_empty())
                || u.direct.contains(&need)
                || u.scripts.iter().any(|s| s.required().any(|n| *n == need))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evalsha_breaks_everything_blpop_only_waiting() {
        let evalsha = bare("evalsha");
        let scripted = USES.iter().filter(|u| !u.scripts.is_empty()).count();
        assert_eq!(broken_by(evalsha, false, false).len(), scripted);
        let slots = bare("cluster|slots");
        assert_eq!(broken_by(slots, true, false).len(), USES.len());
        let blpop = on("blpop", Key::Wake);
        let names: Vec<_> = broken_by(blpop, false, false)
            .iter()
            .map(|u| u.name)
            .collect();
        assert_eq!(names, ["run --wait", "acquire", "wait"]);
        // Every holder that can be asked to stop waits on its own wake list; a
        // semaphore's cannot be (no one holder), so it does not.
        let own = on("blpop", Key::OwnWake);
        let names: Vec<_> = broken_by(own, false, false)
            .iter()
            .map(|u| u.name)
            .collect();
        assert_eq!(names, ["run", "run --fair", "run --supersede"]);
        let scan = bare("scan");
        assert!(!broken_by(scan, false, false).iter().any(|u| u.wrapper));
    }

    #[test]
    fn info_and_a_sentinels_wait_are_warnings() {
        let info = broken_by(bare("info"), false, false);
        assert_eq!(info.len(), 1);
        assert!(!info[0].wrapper);
        assert!(!all(false, false).contains(&bare("wait")));
        assert!(all(false, true).contains(&bare("wait")));
        assert!(all(true, false).contains(&bare("wait")));
        let wait = broken_by(bare("wait"), false, true);
        assert_eq!(wait.len(), 1);
        assert!(!wait[0].wrapper);
    }

    #[test]
    fn all_is_distinct() {
        let all = all(true, false);
        for (i, n) in all.iter().enumerate() {
            assert!(!all[..i].contains(n), "{n:?}");
        }
        assert!(all.contains(&bare("cluster|slots")));
    }
}
