//! The generated nemesis family (issue 17): where the fixed rows of `nemesis.rs` try one
//! flag set against one fault, each trial here draws, from a printed seed, a lock kind
//! (plain, `--limit N`, `--fair`, `--shared` readers beside exclusive runs), a topology (one server, three Redlock masters),
//! options (`--hold-min`, `--max-hold`, `--once-per`, a bounded `--wait`), side actors
//! (`redlock release --if-dead`, `redlock wait`), whether each run holds a set of names
//! (`--key A --key B …`, issue 43) and a set of faults the nemesis fires
//! at random while the contenders run; then it checks every invariant the README
//! promises that applies to the draw (for sets: each name's, and that no run keeps a
//! name while it waits for another, judged by `harness::sets`). A combination the
//! README refuses must be refused with one line (64) and leave nothing.
//!
//! Tier A (in CI) runs the fixed seeds of `TIER_A`; `NEMESIS_SEED=S` runs that seed alone
//! (to replay a failure); Tier B (`generated_tier_b`, ignored) runs fresh seeds for
//! `NEMESIS_MINUTES` (40 by default) and prints the figure.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::harness::nemesis::*;
use crate::harness::proxy::Proxy;
use crate::harness::sets::{
    Disturbed, HoldSampler, PARTIAL_AT_MOST, PartialHolds, SetName, Sets, partial_holds,
};
use crate::harness::*;
use crate::nemesis::{
    Node, QUIET, STALL, TTL_MS, args_for, blackholed, connections_killed, node,
    node_restarted_late, nodes_stopped, partitioned, redis_stopped, replies_dropped,
    restarted_late, slowed, stalling, three, through_own_proxies, wrapper_signal,
};

/// The seeds Tier A runs, in two tests that run side by side: picked from the first 80
/// (and three of the first 60, for `--supersede`; 2 and 68 for `--shared`; 30 and 65
/// for sets of names, a pool among them in 30, a read-shared name in 65) so that
/// together they draw every kind, both topologies, a refusal, every option,
/// both side actors and every fault (held by `tier_a_covers_every_draw`). The second
/// half has four trials of ~45 s (`--once-per`, `--fair` with a bounded wait): the
/// first half takes the set seeds, so that the tier ends when it did before them.
const TIER_A: [&[u64]; 2] = [
    &[7, 5, 41, 56, 32, 67, 13, 53, 2, 30, 65],
    &[55, 51, 57, 37, 10, 28, 40, 26, 68],
];
/// Contenders of a trial.
const K: usize = 6;
/// Faults each trial fires at least, and the longest a trial may run.
const INJECTIONS: usize = 3;
const TRIAL_LIMIT: Duration = Duration::from_secs(40);
/// Successful runs a trial wants before it ends (besides its faults).
const SECTIONS: usize = 40;
/// How long after a fault healed the partial-hold sampler still makes nothing of what
/// it sees: a name its run gave back in vain during the fault lives out its ttl, and a
/// run that lost one name keeps the others until its command has stopped.
const FAULT_GRACE: Duration = Duration::from_millis(TTL_MS * 5 / 4);
/// A set draw's contenders run this long before the nemesis's first quiet spell, so
/// that the sampler has calm samples to judge (the grace after each fault leaves few):
/// with 3 s, seed 65 caught a run kept waiting with a name (`set.rs`'s give-back taken
/// out) in two trials of three, with 5 s in three of three.
const CALM_START: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Plain,
    Limit(usize),
    Fair,
    /// Half the contenders `--shared`, the others the name's exclusive side.
    Shared,
}

/// What one seed drew.
#[derive(Debug)]
struct Draw {
    seed: u64,
    kind: Kind,
    redlock: bool,
    hold_min: bool,
    max_hold: bool,
    once_per: bool,
    /// With `once_per`: `--if-vanished rerun --max-attempts 3`.
    rerun: bool,
    bounded_wait: bool,
    if_dead: bool,
    wait_verb: bool,
    /// The host-local queue in front of Redis.
    local: Local,
    /// Who runs `release --if-dead` (when drawn).
    if_dead_as: IfDeadAs,
    /// Indexes into the topology's fault list.
    faults: Vec<usize>,
    /// `--supersede waiting|running` (drawn apart, like the local queue).
    supersede: Option<&'static str>,
    /// Each run holds a random 2–3 of a pool of names (`--key A --key B …`; drawn
    /// apart, like the local queue): see [`Draw::sets`].
    set: bool,
    /// With `set`: half the runs do their section in a nested `redlock-run --wait 0` of
    /// a subset of their names (drawn apart).
    nest: bool,
    /// With `set`: an actor preempts a later name of the pool again and again (`redlock
    /// preempt`, drawn apart): the run holding it stops, 80.
    preempt: bool,
}

/// How a trial's contenders use the host-local queue (drawn apart from the rest, so
/// that the draws of a seed made before it existed stay as they were).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Local {
    /// The default directory: one local queue per URL set (the proxied and the direct
    /// contenders are two "hosts").
    Default,
    /// Contenders spread over this many `--local-dir`s ("hosts").
    Hosts(usize),
    /// `--no-local-queue`: every waiter in Redis.
    Off,
}

const SINGLE_FAULTS: [&str; 8] = [
    "wrapper SIGKILL",
    "CLIENT KILL",
    "blackhole",
    "replies dropped",
    "latency 150 ms",
    "kill -9 redis, down 1.2 ttl",
    "SIGSTOP redis",
    "SIGSTOP a waiting wrapper",
];
const REDLOCK_FAULTS: [&str; 5] = [
    "wrapper SIGKILL",
    "CLIENT KILL one node",
    "SIGSTOP one node",
    "kill -9 one node, down 1.2 ttl",
    "each contender cut from a different node",
];

fn draw(seed: u64) -> Draw {
    let mut rng = fastrand::Rng::with_seed(seed);
    let kind = match rng.usize(..4) {
        0 | 1 => Kind::Plain,
        2 => Kind::Limit(rng.usize(2..=3)),
        _ => Kind::Fair,
    };
    let redlock = rng.f64() < 0.3;
    let list = if redlock {
        REDLOCK_FAULTS.len()
    } else {
        SINGLE_FAULTS.len()
    };
    let mut faults: Vec<usize> = (0..list).collect();
    rng.shuffle(&mut faults);
    faults.truncate(rng.usize(1..=3));
    Draw {
        seed,
        kind,
        redlock,
        hold_min: rng.f64() < 0.3,
        max_hold: rng.f64() < 0.25,
        once_per: rng.f64() < 0.25,
        bounded_wait: rng.f64() < 0.25,
        if_dead: rng.f64() < 0.4,
        wait_verb: rng.f64() < 0.3,
        rerun: draw_rerun(seed),
        local: draw_local(seed),
        if_dead_as: draw_if_dead_as(seed),
        faults,
        supersede: draw_supersede(seed).filter(|_| kind == Kind::Plain),
        set: false,
        nest: draw_nest(seed),
        preempt: draw_preempt(seed),
    }
    .sharing(draw_shared(seed))
    .naming(draw_set(seed))
}

/// Whether the contenders hold sets of names, where the draw allows (its own stream,
/// so that the draws of earlier seeds stay what they were).
fn draw_set(seed: u64) -> bool {
    fastrand::Rng::with_seed(seed ^ 0x5e7b).f64() < 0.5
}

/// Whether a set draw's runs nest (own stream, as every later draw).
fn draw_nest(seed: u64) -> bool {
    fastrand::Rng::with_seed(seed ^ 0x4e5c).f64() < 0.6
}

/// Whether a set draw has an actor preempting a later name (own stream).
fn draw_preempt(seed: u64) -> bool {
    fastrand::Rng::with_seed(seed ^ 0x9e3e).f64() < 0.4
}

/// Whether a plain draw's contenders share the name (half of them `--shared`; its own
/// stream, so that the draws of earlier seeds stay what they were).
fn draw_shared(seed: u64) -> bool {
    fastrand::Rng::with_seed(seed ^ 0x54a6ed).f64() < 0.3
}

/// Whether the contenders give `--supersede`, and which (its own stream; a plain draw
/// only, so that the semaphores and queues of earlier seeds stay as they were).
fn draw_supersede(seed: u64) -> Option<&'static str> {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x5e9e);
    match rng.f64() {
        x if x < 0.15 => Some("waiting"),
        x if x < 0.3 => Some("running"),
        _ => None,
    }
}

/// Who runs the `release --if-dead` actor (drawn apart, like the local queue): the
/// contenders' own user, or user nobody with `/proc` mounted `hidepid=2`, to whom every
/// holder's process is hidden (alive, stopped by a fault, or kept by `--hold-min` alike:
/// none may be removed).
#[derive(Debug, Clone, Copy, PartialEq)]
enum IfDeadAs {
    Owner,
    Hidden,
}

fn draw_if_dead_as(seed: u64) -> IfDeadAs {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x1fdead);
    if rng.bool() {
        IfDeadAs::Hidden
    } else {
        IfDeadAs::Owner
    }
}

/// Whether a `--once-per` draw reruns vanished runs (its own stream: the other draws
/// of a seed stay what they were).
fn draw_rerun(seed: u64) -> bool {
    fastrand::Rng::with_seed(seed ^ 0x4e4f).f64() < 0.4
}

fn draw_local(seed: u64) -> Local {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x10ca1);
    match rng.usize(..4) {
        0 => Local::Default,
        1 => Local::Off,
        _ => Local::Hosts(rng.usize(1..=3)),
    }
}

impl Draw {
    /// A plain draw on one server without `--supersede` turned into a shared one
    /// (Redlock draws stay what they were: `--shared` over several nodes is a refusal
    /// the refusal table's tests hold).
    fn sharing(mut self, shared: bool) -> Draw {
        if shared && self.kind == Kind::Plain && self.supersede.is_none() && !self.redlock {
            self.kind = Kind::Shared;
        }
        self
    }

    /// A draw whose flags combine with several names (one server; no `--fair`,
    /// `--once-per`, `--supersede` or `--hold-min`: the README refuses those with
    /// several names) turned into one whose runs hold sets of names.
    fn naming(mut self, set: bool) -> Draw {
        self.set = set
            && !self.redlock
            && self.kind != Kind::Fair
            && !self.once_per
            && self.supersede.is_none()
            && !self.hold_min;
        self.nest &= self.set;
        self.preempt &= self.set;
        self
    }

    /// The pool of names a set draw's runs draw from: three mutexes and a fourth that
    /// is the draw's kind (a mutex, a `--limit NAME=N` pool, or a name the readers hold
    /// `--shared NAME`); `None` for a draw of one name.
    fn sets(&self, name: &str) -> Option<Sets> {
        if !self.set {
            return None;
        }
        let one = |suffix: &str, limit: usize, read_shared: bool| SetName {
            name: format!("{name}-{suffix}"),
            limit,
            read_shared,
        };
        let mut names: Vec<SetName> = (0..3).map(|i| one(&format!("m{i}"), 1, false)).collect();
        names.push(match self.kind {
            Kind::Limit(n) => one("pool", n, false),
            Kind::Shared => one("rw", 1, true),
            Kind::Plain | Kind::Fair => one("m3", 1, false),
        });
        Some(Sets {
            names,
            nest: self.nest,
        })
    }

    /// The name the side actors (`release --if-dead`, `redlock wait`) and a refusal's
    /// `--key` go by: the draw's name, or the first of its pool.
    fn first_name(&self, name: &str) -> String {
        self.sets(name)
            .map_or_else(|| name.to_string(), |s| s.names[0].name.clone())
    }

    /// A set draw's `--key`, `--limit NAME=N` and `--shared NAME` for a refusal: every
    /// name of its pool (empty for a draw of one name).
    fn set_args(&self, name: &str) -> Vec<String> {
        let Some(sets) = self.sets(name) else {
            return Vec::new();
        };
        let mut args = Vec::new();
        for n in &sets.names[1..] {
            args.extend(["--key".to_string(), n.name.clone()]);
            if n.limit > 1 {
                args.extend(["--limit".to_string(), format!("{}={}", n.name, n.limit)]);
            }
            if n.read_shared {
                args.extend(["--shared".to_string(), n.name.clone()]);
            }
        }
        args
    }

    fn fault_names(&self) -> Vec<&'static str> {
        let list: &[&'static str] = if self.redlock {
            &REDLOCK_FAULTS
        } else {
            &SINGLE_FAULTS
        };
        self.faults.iter().map(|&i| list[i]).collect()
    }

    /// The flags beside `--key` and `--redis` (and the lease budget).
    fn flags(&self) -> Vec<String> {
        let mut f: Vec<&str> = Vec::new();
        match self.kind {
            // A set's pool is `--limit NAME=N`, given by each run that holds it.
            Kind::Plain | Kind::Shared => {}
            Kind::Limit(_) if self.set => {}
            Kind::Limit(2) => f.extend(["--limit", "2"]),
            Kind::Limit(_) => f.extend(["--limit", "3"]),
            Kind::Fair => f.push("--fair"),
        }
        if self.hold_min {
            f.extend(["--hold-min", "200ms"]);
        }
        if self.max_hold {
            f.extend(["--max-hold", "1500ms"]);
        }
        if self.once_per {
            f.extend(["--once-per", "1s"]);
            if self.rerun {
                f.extend(["--if-vanished", "rerun", "--max-attempts", "3"]);
            }
        }
        if let Some(which) = self.supersede {
            f.extend(["--supersede", which]);
        }
        f.into_iter().map(String::from).collect()
    }

    /// A combination the README refuses, as the tool's own refusal table says
    /// (`--limit` or `--fair` over Redlock nodes, `--once-per` with `--limit`, …).
    fn is_refused(&self) -> bool {
        let given = redlock::policy::refused::Given {
            fair: self.kind == Kind::Fair,
            limit: self.limit() as u32,
            nodes: if self.redlock { 3 } else { 1 },
            once_per: self.once_per,
            history: 20,
            attempts: if self.once_per && self.rerun { 3 } else { 0 },
            if_vanished: self.once_per && self.rerun,
            max_attempts: self.once_per && self.rerun,
            once_id: false,
            supersede: self.supersede.is_some(),
            shared: self.kind == Kind::Shared,
            hold_min: self.hold_min,
            order_key: false,
            may_wait: true,
            names: if self.set { 3 } else { 1 },
            // The family draws no --elect (tests/integration/elect.rs attacks it).
            ..Default::default()
        };
        redlock::policy::refused::refusal(&given).is_some()
    }

    fn limit(&self) -> usize {
        match self.kind {
            Kind::Limit(n) => n,
            _ => 1,
        }
    }
}

/// What a trial checked and found.
#[derive(Default)]
struct Checked {
    invariants: usize,
    violations: Vec<String>,
}

impl Checked {
    fn hold(&mut self, what: &str, ok: bool, detail: impl FnOnce() -> String) {
        self.invariants += 1;
        if !ok {
            self.violations.push(format!("{what}: {}", detail()));
        }
    }
}

/// Runs one drawn trial; returns what it checked.
fn trial(d: &Draw) -> Checked {
    fastrand::seed(d.seed);
    let hosts = Scratch::new();
    let name = format!("gen{}", d.seed);
    if d.is_refused() {
        return refused(d, &name);
    }
    if d.redlock {
        let nodes = three();
        let (proxies, w) = through_own_proxies(&nodes, K, &name);
        let w = with_draw(w, d, &hosts, &name);
        let mut faults: Vec<Fault> = d
            .faults
            .iter()
            .map(|&i| match i {
                0 => wrapper_signal(Signal::SIGKILL),
                1 => connections_killed(&nodes[1]),
                2 => nodes_stopped(&nodes, 1),
                3 => node_restarted_late(&nodes),
                _ => partitioned(&proxies),
            })
            .collect();
        let urls: Vec<String> = nodes.iter().map(|n| n.borrow().url()).collect();
        run_trial(
            d,
            &name,
            &w,
            &mut faults,
            &nodes.iter().collect::<Vec<_>>(),
            &urls,
        )
    } else {
        let redis = node();
        let proxy = Proxy::start(redis.borrow().port);
        let direct = one_server_args(d, &redis.borrow().url(), &name);
        let proxied = one_server_args(d, &proxy.url(), &name);
        let w = Workload::per_contender(
            Arc::new(move |i| {
                if i % 2 == 0 {
                    proxied.clone()
                } else {
                    direct.clone()
                }
            }),
            K,
        );
        let w = with_draw(w, d, &hosts, &name);
        let mut faults: Vec<Fault> = d
            .faults
            .iter()
            .map(|&i| match i {
                0 => wrapper_signal(Signal::SIGKILL),
                1 => connections_killed(&redis),
                2 => blackholed(&proxy),
                3 => replies_dropped(&proxy),
                4 => slowed(&proxy, 150),
                5 => restarted_late(&redis),
                6 => redis_stopped(&redis),
                _ => waiter_stopped(),
            })
            .collect();
        let url = redis.borrow().url();
        run_trial(d, &name, &w, &mut faults, &[&redis], &[url])
    }
}

/// A contender's arguments on one server: the draw's name, or (a set draw) none, each
/// run giving the names it draws (`Workload::sets`).
fn one_server_args(d: &Draw, url: &str, name: &str) -> Vec<String> {
    if d.set {
        let mut args = vec!["--redis".to_string(), url.to_string()];
        args.extend(budget_args(TTL_MS));
        args
    } else {
        args_for(&[url.to_string()], name, TTL_MS)
    }
}

/// SIGSTOP a waiting wrapper for a stall, then SIGCONT: it must not hold up the others.
fn waiter_stopped<'a>() -> Fault<'a> {
    Fault::new("SIGSTOP a waiting wrapper", |u: &Underway| {
        if let Some(pid) = u.signal_waiter(Signal::SIGSTOP) {
            std::thread::sleep(STALL);
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGCONT);
        }
    })
}

/// The workload with the draw's flags (and, a set draw, its pool of names) and the
/// statuses they allow.
fn with_draw(w: Workload, d: &Draw, hosts: &Scratch, name: &str) -> Workload {
    let base = w.args.clone();
    let flags = d.flags();
    let root = hosts.path("host");
    let local = d.local;
    let mut w = stalling(Workload::per_contender(
        Arc::new(move |i| {
            let local: Vec<String> = match local {
                Local::Default => vec![],
                Local::Off => vec!["--no-local-queue".into()],
                Local::Hosts(n) => {
                    vec!["--local-dir".into(), format!("{}{}", root.display(), i % n)]
                }
            };
            [base(i), flags.clone(), local].concat()
        }),
        K,
    ));
    w.limit = d.limit();
    w.arrivals = d.kind == Kind::Fair;
    if d.kind == Kind::Shared {
        w.readers = K / 2;
    }
    w.sets = d.sets(name).map(Arc::new);
    if d.preempt {
        w.allowed.push(codes::PREEMPTED);
    }
    w.allowed.push(codes::REDIS);
    if d.max_hold {
        w.allowed.push(codes::MAX_HOLD);
    }
    if d.once_per || d.bounded_wait {
        w.allowed.push(codes::BUSY);
    }
    if d.once_per {
        // A --once-per run records its start before its command starts; when that
        // record cannot be confirmed (its reply lost, Redis gone), the run gives the
        // lock back, runs nothing and exits 69 (docs/guide/cron.md), whatever --wait.
        w.allowed.push(codes::UNREACHABLE);
    }
    if d.supersede.is_some() {
        w.allowed.push(codes::SUPERSEDED);
    }
    if d.supersede == Some("running") {
        w.allowed.push(codes::PREEMPTED);
    }
    if d.bounded_wait {
        w.wait = "3s".into();
        w.allowed.push(codes::UNREACHABLE);
    }
    w
}

/// A combination the README refuses: one line, 64, nothing written.
fn refused(d: &Draw, name: &str) -> Checked {
    let nodes = if d.redlock { three() } else { vec![node()] };
    let urls: Vec<String> = nodes.iter().map(|n| n.borrow().url()).collect();
    let out = output(
        redlock_run()
            .args(args_for(&urls, &d.first_name(name), TTL_MS))
            .args(d.set_args(name))
            .args(d.flags())
            .args(if d.kind == Kind::Shared && !d.set {
                &["--shared"][..]
            } else {
                &[]
            })
            .args(["--", "true"]),
    );
    let mut c = Checked::default();
    let err = stderr(&out);
    summary(&format!(
        "generated seed {} {:?}{} {:?}: refused ({}): {}",
        d.seed,
        d.kind,
        if d.redlock {
            " Redlock N=3"
        } else {
            " one server"
        },
        d.flags(),
        code(&out),
        err.trim()
    ));
    c.hold(
        "refused with one line (64)",
        code(&out) == 64 && err.trim().lines().count() == 1,
        || format!("{} {err}", code(&out)),
    );
    let left: Vec<_> = nodes.iter().flat_map(|n| n.borrow().all_keys()).collect();
    c.hold("a refusal writes nothing", left.is_empty(), || {
        format!("{left:?}")
    });
    c
}

fn run_trial(
    d: &Draw,
    name: &str,
    w: &Workload,
    faults: &mut [Fault],
    servers: &[&Node],
    urls: &[String],
) -> Checked {
    let began = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let ports: Vec<u16> = servers.iter().map(|n| n.borrow().port).collect();
    let sampler = ttl_sampler(ports, stop.clone());
    let redis_args: Vec<String> = urls
        .iter()
        .flat_map(|u| ["--redis".to_string(), u.clone()])
        .collect();
    let hidden = HiddenRunner::new();
    let first = d.first_name(name);
    let if_dead = d.if_dead.then(|| {
        let mut a = vec!["release".to_string(), first.clone(), "--if-dead".into()];
        a.extend(redis_args.clone());
        match (d.if_dead_as, &hidden) {
            (IfDeadAs::Hidden, Some(h)) => h.actor(a, stop.clone()),
            _ => actor(a, stop.clone()),
        }
    });
    let waits = d.wait_verb.then(|| {
        let mut a = vec![
            "wait".to_string(),
            first.clone(),
            "--timeout".into(),
            "1s".into(),
        ];
        a.extend(redis_args.clone());
        actor(a, stop.clone())
    });
    let preempts = d.preempt.then(|| {
        let later = d
            .sets(name)
            .map(|s| s.names[1].name.clone())
            .unwrap_or_default();
        let mut a = vec!["preempt".to_string(), later];
        a.extend(redis_args.clone());
        actor(a, stop.clone())
    });
    let holds = w.sets.as_ref().map(|sets| {
        let disturbed = Disturbed::default();
        disturbed.watch(faults, FAULT_GRACE);
        HoldSampler::start(servers[0].borrow().port, sets, disturbed)
    });
    let running = w.start();
    if holds.is_some() {
        // A calm stretch before the first fault: what the sampler judges.
        std::thread::sleep(CALM_START);
    }
    let s = schedule(&running, faults, SECTIONS, INJECTIONS, QUIET, TRIAL_LIMIT);
    let report = running.finish();
    stop.store(true, Ordering::SeqCst);
    let holds = holds.map(|h| partial_holds(&h.finish(), PARTIAL_AT_MOST));
    let no_ttl = sampler.join().expect("sampler");
    let if_dead = if_dead.map(|a| a.join().expect("if-dead actor"));
    let waits = waits.map(|a| a.join().expect("wait actor"));
    let preempts = preempts.map(|a| a.join().expect("preempt actor"));
    let (nested, nested_busy) = sets::nested_busy(&report.log.0);

    let mut c = Checked::default();
    let v = &report.verdict;
    c.hold("never more than N inside", v.overlaps == 0, || {
        format!("{} overlaps", v.overlaps)
    });
    if d.kind == Kind::Shared {
        // The overlaps above count an exclusive section beside any other (the
        // witness): shares among themselves are no overlap.
        c.hold(
            "never an exclusive holder beside any other holder",
            v.overlaps == 0,
            || format!("{} overlaps", v.overlaps),
        );
    }
    c.hold(
        "no lost or phantom update",
        report.lost_updates + report.phantom_updates == 0,
        || {
            format!(
                "{} lost, {} phantom",
                report.lost_updates, report.phantom_updates
            )
        },
    );
    c.hold("one token per acquisition", v.duplicate_tokens == 0, || {
        format!("{} duplicates", v.duplicate_tokens)
    });
    c.hold(
        "only documented, expected statuses",
        report.unexpected.is_empty(),
        || report.unexpected.join(" | "),
    );
    // Shares draw fences in the order they took them, not the order they logged; a
    // set's verdict counts only its mutexes' fences (`sets::merged`).
    if d.set || (d.limit() == 1 && d.kind != Kind::Shared) {
        c.hold(
            "fences strictly increase in log order",
            v.fences_not_increasing == 0,
            || format!("{} not increasing", v.fences_not_increasing),
        );
    }
    if let Some(holds) = &holds {
        c.hold(
            "no partial hold while waiting (no name kept while its run waits for another)",
            holds.too_long.is_empty(),
            || holds.too_long.join(" | "),
        );
    }
    // Arrival order is reported, not asserted: the workload notes an arrival when it
    // starts the process, a moment before the run reaches the queue, so two close
    // arrivals can be noted in the other order (`capacity::` asserts FIFO where
    // arrivals are known exactly).
    if d.once_per && !d.rerun {
        let twice = once_per_slots_run_twice(&report.log.0);
        c.hold(
            "at most one successful run per --once-per slot",
            twice.is_empty(),
            || format!("slots run twice: {twice:?}"),
        );
    }
    if d.once_per && d.rerun {
        // At least once: a vanished run (its end never recorded) may have succeeded
        // and its slot runs again; what stays is the cap on starts per slot.
        let over = once_per_slots_started_more_than(&report.log.0, 3);
        c.hold(
            "at most --max-attempts starts per --once-per slot",
            over.is_empty(),
            || format!("slots started more than 3 times: {over:?}"),
        );
    }
    c.hold("every key written expires", no_ttl.is_empty(), || {
        format!("{no_ttl:?}")
    });
    // A verdict for a superseded waiter that never came back (killed by a fault) is
    // kept its two minutes: it expires, and it is no lock.
    let left = |n: &&Node| {
        let mut keys = n.borrow().keys();
        keys.retain(|k| !k.ends_with(":verdicts"));
        keys
    };
    let clean = eventually(Duration::from_millis(TTL_MS * 5), || {
        servers.iter().all(|n| left(n).is_empty())
    });
    c.hold("no lock left after the last run", clean, || {
        format!("{:?}", servers.iter().map(left).collect::<Vec<_>>())
    });
    if let Some(codes) = &if_dead {
        let odd: Vec<_> = codes
            .iter()
            .filter(|c| ![0, 1, 69, 75].contains(*c))
            .collect();
        c.hold(
            "release --if-dead ends 0, 1 (free) or 75 (alive)",
            odd.is_empty(),
            || format!("{odd:?}"),
        );
    }
    if d.nest {
        c.hold(
            "a nested run never waits for its own holder",
            nested_busy.is_empty(),
            || format!("nested runs busy on their holder's names: {nested_busy:?}"),
        );
    }
    if let Some(codes) = &preempts {
        let odd: Vec<_> = codes.iter().filter(|c| ![0, 69].contains(*c)).collect();
        c.hold(
            "redlock preempt of a later name ends 0 or 69",
            odd.is_empty(),
            || format!("{odd:?}"),
        );
    }
    if let Some(codes) = &waits {
        let odd: Vec<_> = codes.iter().filter(|c| ![0, 69, 75].contains(*c)).collect();
        c.hold("redlock wait ends 0, 69 or 75", odd.is_empty(), || {
            format!("{odd:?}")
        });
    }
    let nested_text = if d.nest {
        format!(", {nested} nested runs")
    } else {
        String::new()
    };
    summary(&format!(
        "generated seed {} {:?}{}{} {:?} local queue {:?}{} faults {:?}{}{}: {} runs, {} sections{}, \
         {} injections, exits {:?}{}, {} invariants, {} violations, {:.1} s",
        d.seed,
        d.kind,
        if d.redlock {
            " Redlock N=3"
        } else {
            " one server"
        },
        w.sets.as_ref().map_or(String::new(), |s| set_text(s)),
        d.flags(),
        d.local,
        if d.bounded_wait { " --wait 3s" } else { "" },
        d.fault_names(),
        match (d.if_dead, d.if_dead_as) {
            (false, _) => "",
            (true, IfDeadAs::Owner) => " +release --if-dead",
            (true, IfDeadAs::Hidden) => " +release --if-dead (as nobody, hidepid=2)",
        },
        match (d.wait_verb, d.preempt) {
            (false, false) => "",
            (true, false) => " +redlock wait",
            (false, true) => " +redlock preempt of a later name",
            (true, true) => " +redlock wait +redlock preempt of a later name",
        },
        report.runs,
        v.sections,
        names_text(&report, holds.as_ref()) + &nested_text,
        s.injections,
        report.statuses,
        if d.kind == Kind::Fair {
            format!(", {} out of arrival order (reported)", v.out_of_order)
        } else {
            String::new()
        },
        c.invariants,
        c.violations.len(),
        began.elapsed().as_secs_f64(),
    ));
    c
}

/// ` sets of 2-3 of [m0, m1, m2, pool=2]`: a set draw's pool, for the summary.
fn set_text(sets: &Sets) -> String {
    let names: Vec<String> = sets
        .names
        .iter()
        .map(|n| {
            let short = n.name.rsplit('-').next().unwrap_or(&n.name);
            match (n.limit, n.read_shared) {
                (1, false) => short.to_string(),
                (1, true) => format!("{short} (readers --shared)"),
                (limit, _) => format!("{short}={limit}"),
            }
        })
        .collect();
    format!(" sets of 2-3 of [{}]", names.join(", "))
}

/// A set draw's sections per name and what the partial-hold sampler saw, for the
/// summary (empty for a draw of one name).
fn names_text(report: &Report, holds: Option<&PartialHolds>) -> String {
    let Some(holds) = holds else {
        return String::new();
    };
    let per_name: Vec<String> = report
        .names
        .iter()
        .map(|n| {
            let short = n.name.rsplit('-').next().unwrap_or(&n.name);
            let shared = match n.verdict.shared_sections {
                0 => String::new(),
                s => format!(" +{s} shared"),
            };
            format!("{short} {}{shared}", n.verdict.sections)
        })
        .collect();
    format!(
        " ({}), partial holds: {} seen in {} calm samples of {}, longest followed {} ms",
        per_name.join(", "),
        holds.seen,
        holds.calm_samples,
        holds.samples,
        holds.longest_ms
    )
}

/// Slots of 1 s (by the fencing number, which is the server's time in µs when drawn)
/// with more than one run that exited 0.
fn once_per_slots_run_twice(log: &str) -> Vec<u64> {
    let mut fence: HashMap<&str, u64> = HashMap::new();
    let mut per_slot: HashMap<u64, usize> = HashMap::new();
    for line in log.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        match w.as_slice() {
            ["BEGIN", run, _, f, _] => {
                if let Ok(f) = f.parse() {
                    fence.insert(run, f);
                }
            }
            ["EXIT", run, "0"] => {
                if let Some(f) = fence.get(run) {
                    *per_slot.entry(f / 1_000_000).or_default() += 1;
                }
            }
            _ => {}
        }
    }
    let mut twice: Vec<u64> = per_slot
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(s, _)| s)
        .collect();
    twice.sort();
    twice
}

/// Slots of 1 s (by the fencing number) in which more than `most` commands started.
fn once_per_slots_started_more_than(log: &str, most: usize) -> Vec<u64> {
    let mut per_slot: HashMap<u64, usize> = HashMap::new();
    for line in log.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        if let ["BEGIN", _, _, f, _] = w.as_slice()
            && let Ok(f) = f.parse::<u64>()
        {
            *per_slot.entry(f / 1_000_000).or_default() += 1;
        }
    }
    let mut over: Vec<u64> = per_slot
        .into_iter()
        .filter(|(_, n)| *n > most)
        .map(|(s, _)| s)
        .collect();
    over.sort();
    over
}

/// Every 300 ms, every key on the servers with no expiry (PTTL -1); until `stop`.
fn ttl_sampler(ports: Vec<u16>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut found = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            for port in &ports {
                let Ok(mut conn) = redis::Client::open(format!("redis://127.0.0.1:{port}"))
                    .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
                else {
                    continue;
                };
                let _ = conn.set_read_timeout(Some(Duration::from_millis(300)));
                let keys: Vec<String> = redis::cmd("KEYS")
                    .arg("*")
                    .query(&mut conn)
                    .unwrap_or_default();
                for key in keys {
                    let pttl: i64 = redis::cmd("PTTL").arg(&key).query(&mut conn).unwrap_or(0);
                    if pttl == -1 && !found.contains(&key) {
                        found.push(key);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        found
    })
}

/// Runs `redlock <args>` again and again (0.2–0.6 s apart) until `stop`; the exit codes.
fn actor(args: Vec<String>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<i32>> {
    std::thread::spawn(move || {
        let mut codes = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            let out = output_within(redlock().args(&args), Duration::from_secs(30));
            codes.push(code(&out));
            std::thread::sleep(Duration::from_millis(fastrand::u64(200..600)));
        }
        codes
    })
}

/// Runs `redlock` as user nobody in a mount namespace whose `/proc` is mounted with
/// `hidepid=2`, from a copy of the binary nobody can execute; `None` where that cannot
/// be set up (not root): the actor then runs as the owner, and the summary says which.
struct HiddenRunner {
    dir: tempfile::TempDir,
}

impl HiddenRunner {
    fn new() -> Option<HiddenRunner> {
        use std::os::unix::fs::PermissionsExt;
        let probe = std::process::Command::new("unshare")
            .args(["-m", "sh", "-c", "mount -t proc -o hidepid=2 proc /proc"])
            .status();
        if !probe.is_ok_and(|s| s.success()) {
            return None;
        }
        let dir = tempfile::Builder::new().prefix("hidden").tempdir().ok()?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).ok()?;
        std::fs::copy(REDLOCK, dir.path().join("redlock")).ok()?;
        Some(HiddenRunner { dir })
    }

    fn actor(&self, args: Vec<String>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<i32>> {
        let bin = self.dir.path().join("redlock");
        let line = std::iter::once(bin.display().to_string())
            .chain(args)
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ");
        let script = format!(
            "mount -t proc -o hidepid=2 proc /proc && exec setpriv --reuid=65534 --regid=65534 --clear-groups {line}"
        );
        std::thread::spawn(move || {
            let mut codes = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                let mut cmd = std::process::Command::new("unshare");
                cmd.args(["-m", "sh", "-c", &script]);
                let out = output_within(&mut cmd, Duration::from_secs(30));
                codes.push(code(&out));
                std::thread::sleep(Duration::from_millis(fastrand::u64(200..600)));
            }
            codes
        })
    }
}

fn run_seeds(
    seeds: impl Iterator<Item = u64>,
    until: Option<Instant>,
) -> (usize, usize, Vec<String>) {
    let (mut trials, mut invariants, mut violations) = (0, 0, Vec::new());
    for seed in seeds {
        if until.is_some_and(|u| Instant::now() >= u) {
            break;
        }
        let d = draw(seed);
        let c = trial(&d);
        trials += 1;
        invariants += c.invariants;
        violations.extend(
            c.violations
                .into_iter()
                .map(|v| format!("seed {seed} (NEMESIS_SEED={seed} to replay): {v}")),
        );
    }
    (trials, invariants, violations)
}

/// Tier A, first half: its fixed seeds, or `NEMESIS_SEED` alone.
#[test]
fn generated_tier_a() {
    tier_a(TIER_A[0], true);
}

/// Tier A, second half (nothing when `NEMESIS_SEED` is set).
#[test]
fn generated_tier_a_more() {
    tier_a(TIER_A[1], false);
}

fn tier_a(seeds: &[u64], replays: bool) {
    let chosen: Option<u64> = std::env::var("NEMESIS_SEED")
        .ok()
        .and_then(|s| s.parse().ok());
    let seeds: Vec<u64> = match chosen {
        Some(seed) if replays => vec![seed],
        Some(_) => Vec::new(),
        None => seeds.to_vec(),
    };
    let (trials, invariants, violations) = run_seeds(seeds.into_iter(), None);
    summary(&format!(
        "generated Tier A: {trials} trials, {invariants} invariants checked, {} violations",
        violations.len()
    ));
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// The Tier A seeds draw every kind, topology, option, side actor and fault.
#[test]
fn tier_a_covers_every_draw() {
    let draws: Vec<Draw> = TIER_A
        .iter()
        .flat_map(|s| s.iter())
        .map(|&s| draw(s))
        .collect();
    let any = |f: &dyn Fn(&Draw) -> bool| draws.iter().any(f);
    assert!(
        any(&|d| d.redlock && d.kind != Kind::Plain),
        "a refusal over Redlock"
    );
    assert!(
        any(&|d| !d.redlock && d.is_refused()),
        "--once-per with --limit refused"
    );
    assert!(any(&|d| d.redlock && d.kind == Kind::Plain), "Redlock");
    let runs = |d: &Draw| !d.is_refused();
    for kind in [
        Kind::Plain,
        Kind::Limit(2),
        Kind::Limit(3),
        Kind::Fair,
        Kind::Shared,
    ] {
        assert!(
            any(&|d| runs(d) && !d.redlock && !d.set && d.kind == kind),
            "{kind:?}"
        );
    }
    for (kind, what) in [
        (Kind::Limit(2), "sets of names with a --limit NAME=N pool"),
        (
            Kind::Shared,
            "sets of names with a name the readers hold --shared NAME",
        ),
    ] {
        assert!(any(&|d| runs(d) && d.set && d.kind == kind), "{what}");
    }
    assert!(
        any(&|d| runs(d) && d.set && d.nest),
        "nested runs of a subset of a set's names"
    );
    assert!(
        any(&|d| runs(d) && d.set && d.preempt),
        "a preempt of a set's later name"
    );
    assert!(any(&|d| runs(d) && d.hold_min), "--hold-min");
    assert!(any(&|d| runs(d) && d.max_hold), "--max-hold");
    assert!(any(&|d| runs(d) && d.once_per), "--once-per");
    assert!(
        any(&|d| runs(d) && d.once_per && d.rerun),
        "--once-per --if-vanished rerun"
    );
    assert!(any(&|d| runs(d) && d.bounded_wait), "--wait 3s");
    assert!(
        any(&|d| runs(d) && d.if_dead && d.if_dead_as == IfDeadAs::Owner),
        "release --if-dead"
    );
    assert!(
        any(&|d| runs(d) && d.if_dead && d.if_dead_as == IfDeadAs::Hidden),
        "release --if-dead as a user to whom the holders are hidden"
    );
    assert!(any(&|d| runs(d) && d.wait_verb), "redlock wait");
    for which in ["waiting", "running"] {
        assert!(
            any(&|d| runs(d) && d.supersede == Some(which)),
            "--supersede {which}"
        );
    }
    assert!(
        any(&|d| d.is_refused() && d.supersede.is_some()),
        "--supersede refused beside --fair, --limit, --once-per or Redlock"
    );
    assert!(
        any(&|d| runs(d) && d.local == Local::Off),
        "--no-local-queue"
    );
    assert!(
        any(&|d| runs(d) && d.local == Local::Default),
        "the default local queue"
    );
    assert!(
        any(&|d| runs(d) && matches!(d.local, Local::Hosts(n) if n > 1)),
        "several --local-dir hosts"
    );
    assert!(
        any(&|d| runs(d) && d.kind != Kind::Plain && matches!(d.local, Local::Hosts(_))),
        "a semaphore or fair queue beside --local-dir"
    );
    for (redlock, list) in [(false, &SINGLE_FAULTS[..]), (true, &REDLOCK_FAULTS[..])] {
        for fault in list {
            assert!(
                any(&|d| runs(d) && d.redlock == redlock && d.fault_names().contains(fault)),
                "{fault}"
            );
        }
    }
}

/// A draw holds sets of names exactly where the tool's refusal table lets its flags
/// combine with several names: the exclusions of [`Draw::naming`] are the table's.
#[test]
fn set_draws_are_where_the_refusal_table_allows_several_names() {
    for seed in 0..2000 {
        let eligible = draw(seed).naming(true).set;
        let mut forced = draw(seed);
        forced.set = true;
        assert_eq!(eligible, !forced.is_refused(), "seed {seed}: {forced:?}");
    }
}

/// Tier B: fresh seeds for `NEMESIS_MINUTES` (40 by default), from `NEMESIS_SEED_FROM`
/// (default 1000).
#[test]
#[ignore = "Tier B: 40 minutes of generated trials; see docs/testing.md"]
fn generated_tier_b() {
    let minutes: u64 = std::env::var("NEMESIS_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(40);
    let from: u64 = std::env::var("NEMESIS_SEED_FROM")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(1000);
    let until = Instant::now() + Duration::from_secs(minutes * 60);
    let (trials, invariants, violations) = run_seeds(from.., Some(until));
    summary(&format!(
        "generated Tier B: {minutes} min, {trials} trials, {invariants} invariants checked, {} violations",
        violations.len()
    ));
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}
