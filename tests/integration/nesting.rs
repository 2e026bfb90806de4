//! Issue 56: the generated nesting family (Tier A). Each seed draws the kind of an
//! enclosing run (a mutex, a pool, a fair queue, a share, newest wins, a set of two
//! names) and a chain of 2–3 nested `redlock-run`s under it, each with a drawn subset
//! of the names (sometimes a name of its own), a kind (most often the enclosing run's,
//! sometimes another), a completion flag (`--once-id`, `--once-per 1d`) and whether its
//! command fails for the first contender. Three contenders run the chain at once; then
//! the family checks the invariants every run keeps, nested or not:
//! - a nested run never waits for its own holder: each ends with what its draw allows
//!   (64 at once where its kind differs from the enclosing run's, or it asks a pool's
//!   slot or a share for a record; never 75 while every name it needs is its
//!   ancestors');
//! - at most one successful run per `--once-id` and per `--once-per` slot;
//! - the command's fence is its own first name's (`REDLOCK_FENCE` is
//!   `REDLOCK_FENCE_<FIRST>`), and a held name's fence is the one its enclosing run got;
//! - the enclosing runs' fences strictly increase per name (exclusive kinds);
//! - every key left behind expires.
//!
//! `NESTING_SEED=S` runs that seed alone.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use crate::harness::*;

/// The seeds Tier A runs (together they draw every kind, refusals, both completion
/// flags and failing first attempts: held by `the_seeds_draw_every_case`).
const SEEDS: std::ops::Range<u64> = 0..40;
/// Contenders that run the chain at once.
const K: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Plain,
    Limit,
    Fair,
    Shared,
    Newest,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Plain,
        Kind::Limit,
        Kind::Fair,
        Kind::Shared,
        Kind::Newest,
    ];

    fn flags(self) -> &'static str {
        match self {
            Kind::Plain => "",
            Kind::Limit => "--limit 2",
            Kind::Fair => "--fair",
            Kind::Shared => "--shared",
            Kind::Newest => "--supersede waiting --order-key 5",
        }
    }

    /// Whether a run of this kind may record (`--once-id`, `--once-per`) when nested.
    fn records_nested(self) -> bool {
        matches!(self, Kind::Plain | Kind::Fair)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Completion {
    None,
    OnceId(String),
    OncePer,
}

/// One nested level of the chain.
#[derive(Debug, Clone)]
struct Level {
    names: Vec<String>,
    kind: Kind,
    completion: Completion,
    /// The first contender's command fails (exit 3) at this level.
    fails_first: bool,
}

#[derive(Debug)]
struct Draw {
    /// The enclosing run's names and kind.
    top: Vec<String>,
    kind: Kind,
    levels: Vec<Level>,
}

fn draw(seed: u64) -> Draw {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x4e57);
    let set = rng.f64() < 0.25;
    let kind = if set {
        Kind::Plain
    } else {
        Kind::ALL[rng.usize(..Kind::ALL.len())]
    };
    let base = format!("n{seed}");
    let top: Vec<String> = if set {
        vec![format!("{base}-a"), format!("{base}-b")]
    } else {
        vec![format!("{base}-a")]
    };
    let own = format!("{base}-c");
    let levels = (0..rng.usize(2..=3))
        .map(|i| {
            let kind = if rng.f64() < 0.8 {
                kind
            } else {
                Kind::ALL[rng.usize(..Kind::ALL.len())]
            };
            // Several names at once: plain locks only (a set's pool or share names
            // itself, `--limit a=2`; a fair or newest set is refused).
            let mut names: Vec<String> = top.iter().filter(|_| rng.f64() < 0.7).cloned().collect();
            if names.is_empty() || kind != Kind::Plain {
                names = vec![top[rng.usize(..top.len())].clone()];
            }
            rng.shuffle(&mut names);
            if kind == Kind::Plain && rng.f64() < 0.25 {
                names.push(own.clone());
            }
            let completion = match (names.len(), rng.usize(..10)) {
                (1, 0..=2) => Completion::OnceId(format!("id{seed}-{i}")),
                (1, 3..=5) => Completion::OncePer,
                _ => Completion::None,
            };
            Level {
                names,
                kind,
                completion,
                fails_first: rng.f64() < 0.3,
            }
        })
        .collect();
    Draw { top, kind, levels }
}

/// A name's variable suffix (the names drawn are of a-z, 0-9 and -).
fn var(name: &str) -> String {
    name.to_uppercase().replace('-', "_")
}

/// What a level's run may end with, given what its ancestors hold (`held`: each name
/// and the kind it is held as): `Some(64)` when it must be refused at once, else `None`
/// (0, or 75 for a skip of its completion, or a name of its own found busy).
fn refused(level: &Level, held: &HashMap<String, Kind>) -> bool {
    level.names.iter().any(|n| {
        held.get(n).is_some_and(|k| {
            *k != level.kind || (!k.records_nested() && level.completion != Completion::None)
        })
    })
}

/// The shell script of level `i` (its command), which runs level `i + 1` and then says
/// how it ended; `journal` gets one line per command.
fn level_script(d: &Draw, i: usize, dir: &Path, url: &str) -> String {
    let level = &d.levels[i];
    let journal = dir.join("journal");
    let j = journal.display();
    let fences: Vec<String> = level
        .names
        .iter()
        .map(|n| format!("{n}=$REDLOCK_FENCE_{}", var(n)))
        .collect();
    let mut s = format!(
        "echo \"L{i} $C $REDLOCK_NAME $REDLOCK_FENCE $REDLOCK_FENCE_{} {}\" >> {j}\n",
        var(&level.names[0]),
        fences.join(" ")
    );
    if let Some(next) = d.levels.get(i + 1) {
        s += &format!(
            "{} {}/level{} ; echo \"$C {} $?\" >> {}/rc\n",
            level_args(next, url),
            dir.display(),
            i + 1,
            i + 1,
            dir.display()
        );
    }
    if level.fails_first {
        s += "[ \"$C\" = 0 ] && exit 3\n";
    }
    match &level.completion {
        Completion::OnceId(id) => s += &format!("echo \"ID {id}\" >> {j}\n"),
        Completion::OncePer => {
            s += &format!(
                "echo \"SLOT {} $REDLOCK_SLOT_START\" >> {j}\n",
                level.names[0]
            )
        }
        Completion::None => {}
    }
    s + "exit 0\n"
}

/// `redlock-run` and a level's flags, up to its command.
fn level_args(level: &Level, url: &str) -> String {
    let keys: Vec<String> = level.names.iter().map(|n| format!("--key {n}")).collect();
    let completion = match &level.completion {
        Completion::None => String::new(),
        Completion::OnceId(id) => format!("--once-id {id}"),
        Completion::OncePer => "--once-per 1d".into(),
    };
    format!(
        "'{RUN}' {} {} {completion} --wait 5s --ttl 10s --redis '{url}' --",
        keys.join(" "),
        level.kind.flags()
    )
}

/// Runs one seed's trial and checks the invariants; the failures, if any.
fn trial(d: &Draw) -> Vec<String> {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    let url = redis.url();
    for i in 0..d.levels.len() {
        let body = level_script(d, i, &dir, &url);
        s.script(&format!("level{i}"), &body);
    }
    let top_fences: Vec<String> = d
        .top
        .iter()
        .map(|n| format!("{n}=$REDLOCK_FENCE_{}", var(n)))
        .collect();
    let top_script = format!(
        "echo \"TOP $C {}\" >> {}/journal; {} {}/level0; echo \"$C 0 $?\" >> {}/rc",
        top_fences.join(" "),
        dir.display(),
        level_args(&d.levels[0], &url),
        dir.display(),
        dir.display()
    );
    let keys: Vec<String> = d.top.iter().map(|n| format!("--key {n}")).collect();
    let args = format!(
        "{} {} --wait 60s --ttl 10s --redis {url}",
        keys.join(" "),
        d.kind.flags()
    );
    let runs: Vec<_> = (0..K)
        .map(|c| {
            redlock_run()
                .args(args.split_whitespace())
                .args(["--", "sh", "-c", &top_script])
                .env("C", c.to_string())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut failures = Vec::new();
    for run in runs {
        let (code, err) = finish(run, Duration::from_secs(90));
        // Newest wins: a waiter superseded by a newer one ends 73 without running.
        let superseded = d.kind == Kind::Newest && code == codes::SUPERSEDED;
        if code != 0 && !superseded {
            failures.push(format!("an enclosing run exited {code}: {err}"));
        }
    }
    let journal = std::fs::read_to_string(dir.join("journal")).unwrap_or_default();
    let rc = std::fs::read_to_string(dir.join("rc")).unwrap_or_default();
    failures.extend(check_exits(d, &rc, &journal));
    failures.extend(check_journal(d, &journal));
    failures.extend(check_expiry(&redis));
    failures
}

/// Every level's exit is one its draw allows; a level runs (its command's journal
/// line) only under a level whose command ran, and a refused level's command never.
fn check_exits(d: &Draw, rc: &str, journal: &str) -> Vec<String> {
    let mut held: HashMap<String, Kind> = d.top.iter().map(|n| (n.clone(), d.kind)).collect();
    let mut failures = Vec::new();
    let ran = |tag: &str, c: usize| {
        journal
            .lines()
            .any(|l| l.starts_with(&format!("{tag} {c} ")))
    };
    for (i, level) in d.levels.iter().enumerate() {
        let must_refuse = refused(level, &held);
        let all_held = level.names.iter().all(|n| held.contains_key(n));
        for c in 0..K {
            let parent = if i == 0 {
                "TOP".to_string()
            } else {
                format!("L{}", i - 1)
            };
            let code = rc
                .lines()
                .find(|l| l.starts_with(&format!("{c} {i} ")))
                .map(|l| l.rsplit(' ').next().unwrap_or("").to_string());
            let Some(code) = code else {
                if ran(&parent, c) {
                    failures.push(format!("contender {c} level {i}: no exit recorded"));
                }
                continue;
            };
            let ok = match code.as_str() {
                "64" => must_refuse && !ran(&format!("L{i}"), c),
                "0" | "3" => !must_refuse,
                "75" => !must_refuse && (level.completion != Completion::None || !all_held),
                _ => false,
            };
            if !ok {
                failures.push(format!(
                    "contender {c} level {i} {level:?} exited {code} (held {held:?})"
                ));
            }
        }
        if must_refuse {
            break;
        }
        for n in &level.names {
            held.entry(n.clone()).or_insert(level.kind);
        }
    }
    failures
}

/// At most one success per ID and per slot; fences are each command's own names'.
fn check_journal(d: &Draw, journal: &str) -> Vec<String> {
    let mut failures = Vec::new();
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let mut slots: HashMap<String, usize> = HashMap::new();
    let mut top: HashMap<(String, String), String> = HashMap::new();
    let mut last_top: HashMap<String, u64> = HashMap::new();
    for line in journal.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        match words[0] {
            "ID" => *ids.entry(words[1]).or_default() += 1,
            "SLOT" => *slots.entry(line.to_string()).or_default() += 1,
            "TOP" => {
                for pair in &words[2..] {
                    let (name, fence) = pair.split_once('=').unwrap_or_default();
                    top.insert((words[1].to_string(), name.to_string()), fence.to_string());
                    let fence: u64 = fence.parse().unwrap_or(0);
                    let exclusive = !matches!(d.kind, Kind::Limit | Kind::Shared);
                    let before = last_top.insert(name.to_string(), fence).unwrap_or(0);
                    if exclusive && fence <= before {
                        failures.push(format!("{name}: fence {fence} after {before}"));
                    }
                }
            }
            _ => {
                let (c, first, own) = (words[1], words[3], words[4]);
                if first != own || first.is_empty() {
                    failures.push(format!("REDLOCK_FENCE is not the first name's: {line}"));
                }
                for pair in &words[5..] {
                    let (name, fence) = pair.split_once('=').unwrap_or_default();
                    let held = top.get(&(c.to_string(), name.to_string()));
                    if held.is_some_and(|h| h != fence) {
                        failures.push(format!("{name}'s fence is not its holder's: {line}"));
                    }
                }
            }
        }
    }
    failures.extend(
        ids.iter()
            .filter(|(_, n)| **n > 1)
            .map(|(id, n)| format!("--once-id {id} ran {n} times")),
    );
    failures.extend(
        slots
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(s, n)| format!("{s}: ran {n} times")),
    );
    failures
}

/// Every key the runs left expires.
fn check_expiry(redis: &Redis) -> Vec<String> {
    redis
        .keys()
        .into_iter()
        .filter(|k| redis.cmd::<i64>(&["PTTL", k]) == -1)
        .map(|k| format!("{k} never expires"))
        .collect()
}

#[test]
fn the_generated_nesting_family_keeps_every_invariant() {
    let seeds: Vec<u64> = match std::env::var("NESTING_SEED") {
        Ok(s) => vec![s.parse().expect("NESTING_SEED")],
        Err(_) => SEEDS.collect(),
    };
    let mut failed = Vec::new();
    for seed in seeds {
        let d = draw(seed);
        let failures = trial(&d);
        eprintln!(
            "nesting seed {seed}: {:?} {:?}, {} levels: {}",
            d.kind,
            d.top,
            d.levels.len(),
            if failures.is_empty() {
                "ok".to_string()
            } else {
                failures.join("; ")
            }
        );
        if !failures.is_empty() {
            failed.push(format!("seed {seed} {d:?}: {}", failures.join("; ")));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The seeds draw every case the family is for.
#[test]
fn the_seeds_draw_every_case() {
    let draws: Vec<Draw> = SEEDS.map(draw).collect();
    let levels = || {
        draws
            .iter()
            .flat_map(|d| d.levels.iter().map(move |l| (d, l)))
    };
    for kind in Kind::ALL {
        assert!(
            draws.iter().any(|d| d.kind == kind),
            "no enclosing {kind:?}"
        );
    }
    assert!(draws.iter().any(|d| d.top.len() == 2), "no set");
    assert!(levels().any(|(d, l)| l.kind != d.kind), "no other kind");
    assert!(levels().any(|(_, l)| matches!(l.completion, Completion::OnceId(_))));
    assert!(levels().any(|(_, l)| l.completion == Completion::OncePer));
    assert!(levels().any(|(_, l)| l.fails_first));
    assert!(draws.iter().any(|d| d.levels.len() == 3), "no third level");
    assert!(
        levels().any(|(d, l)| l.names.iter().any(|n| !d.top.contains(n))),
        "no own name"
    );
}
