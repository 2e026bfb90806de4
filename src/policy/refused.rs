//! Every flag combination a run refuses, with its one line: one table ([`RULES`]) that
//! `Policy::from_flags` applies, that docs/design/model.md carries ([`markdown`], held by a test),
//! and that the generated test family asks before it draws a trial.

use std::fmt::Write as _;

/// A property of a run's flags that a rule names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// `--fair`.
    Fair,
    /// `--limit N` with N > 1 (`--limit 1` is a plain lock).
    Limit,
    /// Several independent `--redis` nodes (Redlock).
    Redlock,
    /// `--once-per P`.
    OncePer,
    /// `--history 0`.
    HistoryOff,
    /// `--history` below the starts that close a slot (`--max-attempts`, 3 with
    /// `--if-vanished rerun`).
    HistoryBelowAttempts,
    /// No `--once-per`.
    NoOncePer,
    /// `--if-vanished`.
    IfVanished,
    /// `--max-attempts`.
    MaxAttempts,
    /// `--once-id`.
    OnceId,
    /// Neither `--once-per` nor `--once-id`.
    NoOnce,
    /// `--supersede`.
    Supersede,
    /// No `--supersede`.
    NoSupersede,
    /// `--order-key`.
    OrderKey,
    /// `--wait 0` (the default): the run never waits.
    NoWait,
    /// `--elect`.
    Elect,
    /// `--wait` given (any value).
    WaitGiven,
    /// `--hold-min`.
    HoldMin,
    /// `--on-lost keep`.
    OnLostKeep,
    /// `--splay D`.
    Splay,
    /// `--shared`.
    Shared,
    /// Several `--key` names (a set).
    Names,
}

impl Flag {
    /// How the flag is written in the table of docs/design/model.md.
    fn text(self) -> &'static str {
        match self {
            Flag::Fair => "`--fair`",
            Flag::Limit => "`--limit N` (N > 1)",
            Flag::Redlock => "several `--redis` nodes",
            Flag::OncePer => "`--once-per P`",
            Flag::HistoryOff => "`--history 0`",
            Flag::HistoryBelowAttempts => "`--history` below `--max-attempts`",
            Flag::NoOncePer => "no `--once-per`",
            Flag::IfVanished => "`--if-vanished`",
            Flag::MaxAttempts => "`--max-attempts`",
            Flag::OnceId => "`--once-id`",
            Flag::NoOnce => "neither `--once-per` nor `--once-id`",
            Flag::Supersede => "`--supersede`",
            Flag::NoSupersede => "no `--supersede`",
            Flag::OrderKey => "`--order-key`",
            Flag::NoWait => "no `--wait` (or `--wait 0`)",
            Flag::Elect => "`--elect`",
            Flag::WaitGiven => "`--wait`",
            Flag::HoldMin => "`--hold-min`",
            Flag::OnLostKeep => "`--on-lost keep`",
            Flag::Splay => "`--splay D`",
            Flag::Shared => "`--shared`",
            Flag::Names => "several `--key` names",
        }
    }
}

/// What a run's flags are, as far as the rules look at them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Given {
    pub fair: bool,
    /// `--limit` (1 when not given).
    pub limit: u32,
    /// How many `--redis` nodes.
    pub nodes: usize,
    pub once_per: bool,
    /// `--history`.
    pub history: u32,
    /// The starts that close a `--once-per` slot (0: no limit): `--max-attempts`, or
    /// its default with `--if-vanished rerun` (`Completion::attempts`).
    pub attempts: u32,
    /// `--if-vanished` given.
    pub if_vanished: bool,
    /// `--max-attempts` given.
    pub max_attempts: bool,
    /// `--once-id` given.
    pub once_id: bool,
    /// `--supersede` given.
    pub supersede: bool,
    /// `--order-key` given.
    pub order_key: bool,
    /// The run may wait (`--wait` other than 0, or `--elect`).
    pub may_wait: bool,
    /// `--elect` given.
    pub elect: bool,
    /// `--wait` given.
    pub wait_given: bool,
    /// `--hold-min` given (and not 0).
    pub hold_min: bool,
    /// `--on-lost keep`.
    pub on_lost_keep: bool,
    /// `--splay` given.
    pub splay: bool,
    /// `--shared` given.
    pub shared: bool,
    /// How many `--key` names (0 and 1: one).
    pub names: usize,
}

impl Given {
    fn has(&self, flag: Flag) -> bool {
        match flag {
            Flag::Fair => self.fair,
            Flag::Limit => self.limit > 1,
            Flag::Redlock => self.nodes > 1,
            Flag::OncePer => self.once_per,
            Flag::HistoryOff => self.history == 0,
            Flag::HistoryBelowAttempts => self.history < self.attempts,
            Flag::NoOncePer => !self.once_per,
            Flag::IfVanished => self.if_vanished,
            Flag::MaxAttempts => self.max_attempts,
            Flag::OnceId => self.once_id,
            Flag::NoOnce => !self.once_per && !self.once_id,
            Flag::Supersede => self.supersede,
            Flag::NoSupersede => !self.supersede,
            Flag::OrderKey => self.order_key,
            Flag::NoWait => !self.may_wait,
            Flag::Elect => self.elect,
            Flag::WaitGiven => self.wait_given,
            Flag::HoldMin => self.hold_min,
            Flag::OnLostKeep => self.on_lost_keep,
            Flag::Splay => self.splay,
            Flag::Shared => self.shared,
            Flag::Names => self.names > 1,
        }
    }

    /// The line of a rule with this run's figures in place of `{limit}`, `{nodes}`,
    /// `{history}` and `{attempts}`.
    fn fill(&self, line: &str) -> String {
        line.replace("{limit}", &self.limit.to_string())
            .replace("{nodes}", &self.nodes.to_string())
            .replace("{history}", &self.history.to_string())
            .replace("{attempts}", &self.attempts.to_string())
    }
}

/// A refused combination: a run that has both flags is refused with the line (exit 64,
/// before anything is written).
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub both: [Flag; 2],
    /// The line, with `{limit}`, `{nodes}`, `{history}` and `{attempts}` for the run's
    /// figures.
    pub line: &'static str,
}

/// Every refused combination, in the order they are checked.
pub const RULES: &[Rule] = &[
    Rule {
        both: [Flag::Fair, Flag::Limit],
        line: "--fair and --limit {limit} do not combine: a queue of slots is not built; use one or the other",
    },
    Rule {
        both: [Flag::Fair, Flag::Redlock],
        line: "--fair works on one server, a Cluster or a Sentinel, not over {nodes} independent --redis nodes: the queue's order would have to be agreed by a majority of them",
    },
    Rule {
        both: [Flag::Limit, Flag::Redlock],
        line: "--limit {limit} works on one server, a Cluster or a Sentinel, not over {nodes} independent --redis nodes: every node would have to grant the same slot, one Redlock round per slot",
    },
    Rule {
        both: [Flag::OncePer, Flag::HistoryOff],
        line: "--once-per needs the run history, which --history 0 turns off; give --history 1 or more",
    },
    // The acquire script counts a slot's starts among the records the history keeps
    // (`scripts::completion`'s `once_per`), and each release trims it to `--history`:
    // with fewer records than the attempts, the oldest starts are gone before they
    // are counted, and the slot never closes.
    Rule {
        both: [Flag::OncePer, Flag::HistoryBelowAttempts],
        line: "--max-attempts {attempts} counts the runs started in a --once-per slot in the run history, which --history {history} trims to fewer: the slot would never close; give --history {attempts} or more",
    },
    Rule {
        both: [Flag::OncePer, Flag::Limit],
        line: "--once-per runs a job at most once per slot, and --limit {limit} lets {limit} runs start at once, before any has succeeded; use one or the other",
    },
    Rule {
        both: [Flag::Splay, Flag::NoOncePer],
        line: "--splay spreads a fleet's tries over a --once-per slot; give --once-per PERIOD too",
    },
    Rule {
        both: [Flag::IfVanished, Flag::NoOncePer],
        line: "--if-vanished says what a --once-per slot does when its run vanished; give --once-per PERIOD too",
    },
    Rule {
        both: [Flag::MaxAttempts, Flag::NoOnce],
        line: "--max-attempts counts the runs started in a --once-per slot or for a --once-id; give one of them too",
    },
    Rule {
        both: [Flag::OnceId, Flag::OncePer],
        line: "--once-id runs a job once per ID and --once-per once per period; use one or the other",
    },
    Rule {
        both: [Flag::OnceId, Flag::Limit],
        line: "--once-id runs a job once, and --limit {limit} lets {limit} runs start at once, before any has succeeded; use one or the other",
    },
    Rule {
        both: [Flag::OrderKey, Flag::NoSupersede],
        line: "--order-key says which run is the newest for --supersede; give --supersede waiting or --supersede running too",
    },
    Rule {
        both: [Flag::Supersede, Flag::NoWait],
        line: "--supersede orders the runs that wait for the lock, and this run does not wait; give --wait too (e.g. --wait 1h)",
    },
    Rule {
        both: [Flag::Supersede, Flag::Fair],
        line: "--supersede serves the newest waiter and --fair the oldest; use one or the other",
    },
    Rule {
        both: [Flag::Supersede, Flag::Limit],
        line: "--supersede and --limit {limit} do not combine: a newest-wins semaphore is not built; use one or the other",
    },
    Rule {
        both: [Flag::Supersede, Flag::Redlock],
        line: "--supersede works on one server, a Cluster or a Sentinel, not over {nodes} independent --redis nodes: which run is the newest would have to be agreed by a majority of them",
    },
    Rule {
        both: [Flag::Supersede, Flag::OncePer],
        line: "--supersede runs only the newest of the runs that come, and --once-per runs the first of each period; use one or the other",
    },
    Rule {
        both: [Flag::Supersede, Flag::OnceId],
        line: "--supersede runs only the newest of the runs that come, and --once-id the first of an ID; use one or the other",
    },
    Rule {
        both: [Flag::Elect, Flag::OncePer],
        line: "--elect keeps one copy of a service running for as long as it runs, and --once-per runs a job once per period; use one or the other",
    },
    Rule {
        both: [Flag::Shared, Flag::Fair],
        line: "--shared and --fair do not combine: a first-come, first-served queue of shared and exclusive runs is not built; use one or the other",
    },
    Rule {
        both: [Flag::Shared, Flag::Limit],
        line: "--shared lets any number of runs share the name, and --limit {limit} counts its holders; use one or the other",
    },
    Rule {
        both: [Flag::Shared, Flag::Redlock],
        line: "--shared works on one server, a Cluster or a Sentinel, not over {nodes} independent --redis nodes: the shares would have to be counted by a majority of them",
    },
    Rule {
        both: [Flag::Shared, Flag::OncePer],
        line: "--once-per runs a job at most once per slot, and --shared lets many runs start at once; use one or the other",
    },
    Rule {
        both: [Flag::Shared, Flag::OnceId],
        line: "--once-id runs a job once, and --shared lets many runs start at once; use one or the other",
    },
    Rule {
        both: [Flag::Shared, Flag::Supersede],
        line: "--supersede replaces the holder with the newest run, and --shared lets many hold at once; use one or the other",
    },
    Rule {
        both: [Flag::Shared, Flag::Elect],
        line: "--elect elects one leader, and --shared lets many runs hold the name at once; use one or the other",
    },
    Rule {
        both: [Flag::Shared, Flag::HoldMin],
        line: "--hold-min keeps the name from other runs after a run ends, and a share keeps out only exclusive runs; --hold-min works without --shared",
    },
    Rule {
        both: [Flag::Elect, Flag::OnceId],
        line: "--elect keeps one copy of a service running for as long as it runs, and --once-id runs a job once; use one or the other",
    },
    Rule {
        both: [Flag::Elect, Flag::Limit],
        line: "--elect elects one leader, and --limit {limit} lets {limit} runs hold the lock at once; use one or the other",
    },
    Rule {
        both: [Flag::Elect, Flag::Supersede],
        line: "--elect keeps the leader until it stops, and --supersede replaces it with the newest run; use one or the other",
    },
    Rule {
        both: [Flag::Elect, Flag::WaitGiven],
        line: "--elect waits for the lock for as long as it runs (a standby); drop --wait",
    },
    Rule {
        both: [Flag::Elect, Flag::HoldMin],
        line: "--elect holds the lock for as long as the leader leads, and --hold-min keeps it after a run ends; use one or the other",
    },
    Rule {
        both: [Flag::Elect, Flag::OnLostKeep],
        line: "--on-lost keep lets the command run on without the lock, and --elect contends again when it loses it: two copies would run; drop --on-lost keep",
    },
    Rule {
        both: [Flag::Names, Flag::Fair],
        line: "several --key names and --fair do not combine: a first-come, first-served order across names is not built; give one name, or drop --fair",
    },
    Rule {
        both: [Flag::Names, Flag::Redlock],
        line: "several --key names work on one server, a Cluster or a Sentinel, not over {nodes} independent --redis nodes; give one name, or one server",
    },
    Rule {
        both: [Flag::Names, Flag::OncePer],
        line: "--once-per closes a slot of one name, and this run holds several; give one --key",
    },
    Rule {
        both: [Flag::Names, Flag::OnceId],
        line: "--once-id records the run of one name, and this run holds several; give one --key",
    },
    Rule {
        both: [Flag::Names, Flag::Supersede],
        line: "--supersede orders the runs of one name, and this run holds several; give one --key",
    },
    Rule {
        both: [Flag::Names, Flag::Elect],
        line: "--elect elects a leader of one name, and this run holds several; give one --key",
    },
    Rule {
        both: [Flag::Names, Flag::HoldMin],
        line: "--hold-min keeps one name after a run ends, and this run holds several; give one --key, or drop --hold-min",
    },
];

/// The line of the first rule `given` breaks, if any.
pub fn refusal(given: &Given) -> Option<String> {
    RULES
        .iter()
        .find(|rule| rule.both.iter().all(|&flag| given.has(flag)))
        .map(|rule| given.fill(rule.line))
}

/// The table of refused combinations as docs/design/model.md carries it.
pub fn markdown() -> String {
    let mut out = String::from("| refused | because |\n| --- | --- |\n");
    for rule in RULES {
        let [a, b] = rule.both;
        let why = rule
            .line
            .replace("{limit}", "N")
            .replace("{nodes}", "K")
            .replace("{history}", "H")
            .replace("{attempts}", "A");
        let _ = writeln!(out, "| {} with {} | {} |", a.text(), b.text(), why);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `g` with `flag` set.
    fn set(mut g: Given, flag: Flag) -> Given {
        match flag {
            Flag::Fair => g.fair = true,
            Flag::Limit => g.limit = 3,
            Flag::Redlock => g.nodes = 3,
            Flag::OncePer => g.once_per = true,
            Flag::HistoryOff => g.history = 0,
            Flag::HistoryBelowAttempts => {
                g.history = 2;
                g.attempts = 3;
            }
            Flag::NoOncePer => g.once_per = false,
            Flag::IfVanished => g.if_vanished = true,
            Flag::MaxAttempts => g.max_attempts = true,
            Flag::OnceId => g.once_id = true,
            Flag::NoOnce => {
                g.once_per = false;
                g.once_id = false;
            }
            Flag::Supersede => g.supersede = true,
            Flag::NoSupersede => g.supersede = false,
            Flag::OrderKey => g.order_key = true,
            Flag::NoWait => g.may_wait = false,
            Flag::Elect => g.elect = true,
            Flag::WaitGiven => g.wait_given = true,
            Flag::HoldMin => g.hold_min = true,
            Flag::OnLostKeep => g.on_lost_keep = true,
            Flag::Splay => g.splay = true,
            Flag::Shared => g.shared = true,
            Flag::Names => g.names = 3,
        }
        g
    }

    #[test]
    fn each_rule_refuses_its_pair_with_its_own_line() {
        let plain = Given {
            limit: 1,
            nodes: 1,
            history: 20,
            may_wait: true,
            ..Given::default()
        };
        assert_eq!(refusal(&plain), None);
        let newest = set(plain, Flag::Supersede);
        // Each flag alone, beside the flags that make it meaningful, is accepted.
        let once = set(plain, Flag::OncePer);
        for alone in [
            set(plain, Flag::Fair),
            set(plain, Flag::Limit),
            set(plain, Flag::Redlock),
            once,
            set(plain, Flag::HistoryOff),
            set(once, Flag::IfVanished),
            set(once, Flag::MaxAttempts),
            set(plain, Flag::HistoryBelowAttempts),
            Given {
                history: 3,
                attempts: 3,
                ..once
            },
            set(plain, Flag::OnceId),
            set(set(plain, Flag::OnceId), Flag::MaxAttempts),
            newest,
            set(newest, Flag::OrderKey),
            set(plain, Flag::NoWait),
            set(plain, Flag::Elect),
            set(set(plain, Flag::Elect), Flag::Fair),
            set(set(plain, Flag::Elect), Flag::Redlock),
            set(plain, Flag::WaitGiven),
            set(plain, Flag::HoldMin),
            set(plain, Flag::OnLostKeep),
            set(plain, Flag::Shared),
            set(plain, Flag::Names),
            set(set(plain, Flag::Names), Flag::Limit),
            set(set(plain, Flag::Names), Flag::Shared),
        ] {
            assert_eq!(refusal(&alone), None, "{alone:?}");
        }
        for rule in RULES {
            let [a, b] = rule.both;
            let both = set(set(plain, a), b);
            assert_eq!(
                refusal(&both),
                Some(both.fill(rule.line)),
                "{a:?} with {b:?}"
            );
            assert!(!both.fill(rule.line).contains('{'), "{}", rule.line);
        }
    }

    #[test]
    fn todays_lines() {
        let given = Given {
            limit: 3,
            nodes: 1,
            once_per: true,
            history: 20,
            ..Given::default()
        };
        assert_eq!(
            refusal(&given).as_deref(),
            Some(
                "--once-per runs a job at most once per slot, and --limit 3 lets 3 runs start at once, before any has succeeded; use one or the other"
            )
        );
    }
}
