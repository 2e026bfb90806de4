//! What the tool asks of Redis: every command each verb sends, and every command its
//! scripts call (a script runs its commands under the caller's ACL user too), with the
//! key each one touches, so that an ACL check can name the command a user lacks and
//! the verbs that breaks. Derived from `redis/scripts.rs` and the verbs; a unit test
//! holds the script table to the scripts' text.
//!
//! Data only: the checks themselves run in `doctor.rs`.

/// Which of a lock's keys a command touches (key permissions are checked too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Lock,
    Meta,
    Waiters,
    Wake,
    Fence,
    History,
    Mode,
    /// A semaphore's slot key other than the first (`…:slot:2`).
    Slot,
    /// A fair queue's keys: the queue, the heartbeats, who waits, a waiter's wake list.
    Queue,
    Beats,
    QueueInfo,
    OwnWake,
}

/// One command as sent: its name (`script|load` for a subcommand) and key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub command: &'static str,
    pub key: Option<Key>,
}

const fn on(command: &'static str, key: Key) -> Need {
    Need {
        command,
        key: Some(key),
    }
}

const fn bare(command: &'static str) -> Need {
    Need { command, key: None }
}

/// The Lua scripts of `redis/scripts.rs` and what each calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    Acquire,
    SemAcquire,
    Settle,
    FairAcquire,
    FairLeave,
    RaiseFence,
    Watch,
    HandOn,
    Leave,
    Renew,
    Release,
    ForceRelease,
    Inspect,
}

impl Script {
    /// Every command the script may call, on the key it calls it on. (Long because it is
    /// data: one list per script, held to the scripts' text by the test below.)
    pub fn calls(self) -> &'static [Need] {
        use Key::*;
        match self {
            Script::Acquire => {
                const {
                    &[
                        on("set", Lock),
                        on("type", Meta),
                        on("del", Lock),
                        on("incr", Fence),
                        on("decr", Fence),
                        on("del", Fence),
                        on("type", Fence),
                        on("hset", Meta),
                        on("pexpire", Meta),
                        on("srem", Waiters),
                        on("exists", Waiters),
                        on("del", Wake),
                        on("get", Lock),
                        on("type", Lock),
                        on("pexpire", Lock),
                        on("hget", Meta),
                        on("sadd", Waiters),
                        on("pttl", Waiters),
                        on("pexpire", Waiters),
                        on("hgetall", Meta),
                        on("pttl", Lock),
                        bare("time"),
                        on("type", History),
                        on("lrange", History),
                        on("get", Mode),
                    ]
                }
            }
            Script::SemAcquire => {
                const {
                    &[
                        bare("time"),
                        on("type", History),
                        on("lrange", History),
                        on("get", Mode),
                        on("exists", Lock),
                        on("set", Slot),
                        on("type", Meta),
                        on("del", Slot),
                        on("incr", Fence),
                        on("decr", Fence),
                        on("del", Fence),
                        on("type", Fence),
                        on("hset", Meta),
                        on("pexpire", Meta),
                        on("pttl", Mode),
                        on("set", Mode),
                        on("srem", Waiters),
                        on("exists", Waiters),
                        on("del", Wake),
                        on("get", Slot),
                        on("type", Slot),
                        on("pttl", Slot),
                        on("pexpire", Slot),
                        on("hget", Meta),
                        on("sadd", Waiters),
                        on("pttl", Waiters),
                        on("pexpire", Waiters),
                        on("hgetall", Meta),
                    ]
                }
            }
            Script::Settle => const { &[on("exists", Slot), on("del", Mode)] },
            Script::FairAcquire => {
                const {
                    &[
                        bare("time"),
                        on("type", History),
                        on("lrange", History),
                        on("get", Mode),
                        on("exists", Lock),
                        on("zrangebyscore", Beats),
                        on("zrem", Queue),
                        on("zrem", Beats),
                        on("hdel", QueueInfo),
                        on("zrange", Queue),
                        on("set", Lock),
                        on("type", Meta),
                        on("del", Lock),
                        on("incr", Fence),
                        on("decr", Fence),
                        on("del", Fence),
                        on("type", Fence),
                        on("hset", Meta),
                        on("pexpire", Meta),
                        on("del", OwnWake),
                        on("pttl", Mode),
                        on("set", Mode),
                        on("get", Lock),
                        on("type", Lock),
                        on("pexpire", Lock),
                        on("hget", Meta),
                        on("zscore", Queue),
                        on("zadd", Queue),
                        on("hset", QueueInfo),
                        on("zadd", Beats),
                        on("pttl", Queue),
                        on("pexpire", Queue),
                        on("pttl", Lock),
                        on("zscore", Beats),
                        on("lpush", OwnWake),
                        on("pexpire", OwnWake),
                        on("hgetall", Meta),
                        on("zrank", Queue),
                        on("zcard", Queue),
                    ]
                }
            }
            Script::FairLeave => {
                const {
                    &[
                        on("zrange", Queue),
                        on("zrem", Queue),
                        on("zrem", Beats),
                        on("hdel", QueueInfo),
                        on("del", OwnWake),
                        on("exists", Lock),
                        on("lpush", OwnWake),
                        on("pexpire", OwnWake),
                    ]
                }
            }
            Script::RaiseFence => {
                const {
                    &[
                        on("get", Fence),
                        on("set", Fence),
                        on("hget", Meta),
                        on("hset", Meta),
                    ]
                }
            }
            Script::Watch => {
                const {
                    &[
                        on("get", Lock),
                        on("type", Lock),
                        on("sadd", Waiters),
                        on("pttl", Waiters),
                        on("pexpire", Waiters),
                        on("pttl", Lock),
                    ]
                }
            }
            Script::HandOn => {
                const {
                    &[
                        on("srem", Waiters),
                        on("exists", Waiters),
                        on("lpush", Wake),
                        on("pexpire", Wake),
                        on("del", Wake),
                    ]
                }
            }
            Script::Leave => {
                const { &[on("srem", Waiters), on("exists", Waiters), on("del", Wake)] }
            }
            Script::Renew => {
                const {
                    &[
                        on("get", Lock),
                        on("pexpire", Lock),
                        on("hget", Meta),
                        on("pexpire", Meta),
                        on("pttl", Mode),
                        on("set", Mode),
                    ]
                }
            }
            Script::Release => {
                const {
                    &[
                        on("hget", Meta),
                        on("get", Lock),
                        on("del", Meta),
                        on("pexpire", Lock),
                        on("pexpire", Meta),
                        on("del", Lock),
                        on("exists", Waiters),
                        on("lpush", Wake),
                        on("pexpire", Wake),
                        on("lrange", History),
                        bare("time"),
                        on("lpush", History),
                        on("ltrim", History),
                        on("zrange", Queue),
                        on("lpush", OwnWake),
                        on("pexpire", OwnWake),
                    ]
                }
            }
            Script::ForceRelease => {
                const {
                    &[
                        on("type", Lock),
                        on("get", Lock),
                        on("type", Meta),
                        on("hgetall", Meta),
                        on("del", Meta),
                        on("del", Lock),
                        on("zrange", Queue),
                        on("lpush", OwnWake),
                        on("pexpire", OwnWake),
                        on("exists", Waiters),
                        on("lpush", Wake),
                        on("pexpire", Wake),
                    ]
                }
            }
            Script::Inspect => {
                const {
                    &[
                        on("type", Lock),
                        on("type", Meta),
                        on("hgetall", Meta),
                        on("get", Lock),
                        on("pttl", Lock),
                    ]
                }
            }
        }
    }
}

/// Whether a call of a script that plain runs share is made only for an option (uses
/// of their own below): the run history and `--once-per` (the acquire script reads the
/// history only for `--once-per`; the release's record is best effort, `pcall`), a
/// semaphore's or a fair queue's keys, and the mode key beyond the plain acquire's
/// GET. A user without them still takes and releases plain locks.
pub fn optional(need: &Need) -> bool {
    use Key::*;
    need.command == "time"
        || matches!(
            need.key,
            Some(History | Slot | Queue | Beats | QueueInfo | OwnWake)
        )
        || (need.key == Some(Mode) && need.command != "get")
}

/// Whether a call is best effort in every script: the undo of a fence number drawn for
/// an acquisition then refused (DECR, `pcall`): without it the counter is one higher,
/// which a fencing number may be.
fn best_effort(need: &Need) -> bool {
    need.command == "decr" && need.key == Some(Key::Fence)
}

impl Script {
    /// The calls a use of the script cannot do without: all of them for the scripts of
    /// one option (a semaphore's, a fair queue's), the non-[`optional`] ones for the
    /// scripts plain runs share.
    pub fn required(self) -> impl Iterator<Item = &'static Need> {
        let whole = matches!(
            self,
            Script::SemAcquire | Script::Settle | Script::FairAcquire | Script::FairLeave
        );
        self.calls()
            .iter()
            .filter(move |n| !best_effort(n) && (whole || !optional(n)))
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
        // GET: the re-entrancy check of a run started inside a holder.
        direct: &[on("get", Key::Lock)],
        wrapper: true,
    },
    Use {
        name: "run --wait",
        scripts: &[Script::Acquire, Script::Leave],
        direct: &[on("blpop", Key::Wake)],
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
        scripts: &[Script::Inspect, Script::Release, Script::ForceRelease],
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
        // The renewal keeps the mode key up.
        direct: &[on("pttl", Key::Mode), on("set", Key::Mode)],
        wrapper: false,
    },
    Use {
        name: "run --fair",
        scripts: &[
            Script::FairAcquire,
            Script::FairLeave,
            Script::Settle,
            Script::Renew,
            Script::Release,
        ],
        // The renewal keeps the mode key up; the release wakes the head on its list.
        direct: &[
            on("pttl", Key::Mode),
            on("set", Key::Mode),
            on("zrange", Key::Queue),
            on("lpush", Key::OwnWake),
            on("blpop", Key::OwnWake),
        ],
        wrapper: false,
    },
    Use {
        name: "run --once-per",
        scripts: &[],
        direct: &[
            bare("time"),
            on("type", Key::History),
            on("lrange", Key::History),
        ],
        wrapper: false,
    },
    Use {
        name: "the run history",
        scripts: &[],
        direct: &[
            bare("time"),
            on("lpush", Key::History),
            on("ltrim", Key::History),
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
];

/// How every script is sent: EVALSHA, and SCRIPT LOAD after NOSCRIPT (the script
/// cache empties on restart and failover, so a user without it works until then).
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

/// Every distinct command (and key) to check, in a stable order; best-effort calls
/// break nothing and are not checked.
pub fn all(cluster: bool, sentinel: bool) -> Vec<Need> {
    let mut out: Vec<Need> = Vec::new();
    let mut add = |need: Need| {
        if !out.contains(&need) && !best_effort(&need) {
            out.push(need);
        }
    };
    SCRIPTING.iter().copied().for_each(&mut add);
    topology(cluster, sentinel)
        .iter()
        .copied()
        .for_each(&mut add);
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
    use crate::redis::scripts;

    /// Every `redis.call`/`redis.pcall` in a script's text is in its table, and the
    /// table names nothing the script does not call.
    #[test]
    fn the_table_matches_the_scripts() {
        let pairs: [(Script, &redis::Script); 13] = [
            (Script::FairAcquire, &scripts::FAIR_ACQUIRE),
            (Script::FairLeave, &scripts::FAIR_LEAVE),
            (Script::Acquire, &scripts::ACQUIRE),
            (Script::SemAcquire, &scripts::SEM_ACQUIRE),
            (Script::Settle, &scripts::SETTLE),
            (Script::RaiseFence, &scripts::RAISE_FENCE),
            (Script::Watch, &scripts::WATCH),
            (Script::HandOn, &scripts::HAND_ON),
            (Script::Leave, &scripts::LEAVE),
            (Script::Renew, &scripts::RENEW),
            (Script::Release, &scripts::RELEASE),
            (Script::ForceRelease, &scripts::FORCE_RELEASE),
            (Script::Inspect, &scripts::INSPECT),
        ];
        for (which, script) in pairs {
            let text = script_text(script);
            let mut called: Vec<String> = Vec::new();
            for part in text.split("call('").skip(1) {
                let name = part.split('\'').next().unwrap().to_ascii_lowercase();
                if !called.contains(&name) {
                    called.push(name);
                }
            }
            let mut listed: Vec<String> = which
                .calls()
                .iter()
                .map(|n| n.command.to_string())
                .collect();
            listed.dedup();
            for name in &called {
                assert!(listed.contains(name), "{which:?} calls {name}");
            }
            for name in &listed {
                assert!(called.contains(name), "{which:?} lists {name}");
            }
        }
    }

    fn script_text(script: &redis::Script) -> String {
        // The client library keeps the text private; its Debug shows it.
        format!("{script:?}")
            .replace("\\n", "\n")
            .replace("\\'", "'")
    }

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
        let scan = bare("scan");
        assert!(!broken_by(scan, false, false).iter().any(|u| u.wrapper));
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
