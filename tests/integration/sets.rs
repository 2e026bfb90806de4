//! Several names at once (issue 43) through the CLI: `--key A --key B …`, a pool among
//! them (`--limit pool=3`), from 4 simulated hosts (UTS namespaces where they can be
//! made). The journal is one file every section appends its enter and leave lines to,
//! one per name (O_APPEND: the file's order is the order of events); a sampler reads
//! the holders' metadata while the runs loop, and finds any run that holds part of its
//! names for longer than a try (a partial hold while waiting). Also: a run of one name
//! is not kept out by a set that waits; a SIGKILLed holder of three names frees all
//! three within its ttl; a name lost is the lock lost (79) and the rest released; the
//! same loop on a 3-master Cluster with the names in different slots; every key
//! expires; bad input is one line, 64, nothing written.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::harness::*;

const HOSTS: usize = 4;

/// The names the loops draw from: five mutexes and a pool of 3.
const NAMES: [&str; 6] = ["alpha", "bravo", "charlie", "delta", "echo", "pool"];
const POOL: usize = 3;

/// A set's section: appends `+ NAME pid` for each name, holds `hold_ms`, appends
/// `- NAME pid` for each.
fn section(journal: &Path, names: &[&str], hold_ms: u64) -> String {
    let j = journal.display();
    let lines = |sign: char| -> String {
        names
            .iter()
            .map(|n| format!("echo \"{sign} {n} $$\" >> '{j}'; "))
            .collect()
    };
    format!(
        "{}sleep {}; {}",
        lines('+'),
        hold_ms as f64 / 1000.0,
        lines('-')
    )
}

/// What the journal shows: enter lines, entries beside a holder of a mutex name, the
/// pool above its size, the most holders of the pool at once, sections never left.
#[derive(Debug, Default)]
struct Judged {
    entries: usize,
    overlaps: usize,
    pool_over: usize,
    most_in_pool: usize,
    open: usize,
}

fn judge(journal: &Path) -> Judged {
    judge_pool(journal, "pool", POOL)
}

/// [`judge`] with the pool `pool` of `size`.
fn judge_pool(journal: &Path, pool: &str, size: usize) -> Judged {
    let text = std::fs::read_to_string(journal).unwrap_or_default();
    let mut j = Judged::default();
    let mut inside: HashMap<String, usize> = HashMap::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let (sign, name) = (parts[0], parts[1].to_string());
        let n = inside.entry(name.clone()).or_default();
        if sign == "+" {
            j.entries += 1;
            if name == pool {
                if *n >= size {
                    j.pool_over += 1;
                }
            } else if *n > 0 {
                j.overlaps += 1;
            }
            *n += 1;
            if name == pool {
                j.most_in_pool = j.most_in_pool.max(*n);
            }
        } else {
            *n = n.saturating_sub(1);
        }
    }
    j.open = inside.values().sum();
    j
}

/// The journal judge counts a second holder of a mutex name and a pool above 3.
#[test]
fn the_journal_judge_counts_overlaps_per_name() {
    let s = Scratch::new();
    let journal = s.path("j");
    std::fs::write(
        &journal,
        "+ alpha 1\n+ bravo 1\n+ bravo 2\n- alpha 1\n- bravo 1\n- bravo 2\n\
         + pool 1\n+ pool 2\n+ pool 3\n+ pool 4\n- pool 1\n- pool 2\n- pool 3\n- pool 4\n",
    )
    .unwrap();
    let j = judge(&journal);
    assert_eq!(
        (j.entries, j.overlaps, j.pool_over, j.most_in_pool, j.open),
        (7, 1, 1, 4, 0)
    );
}

/// `count` distinct names of [`NAMES`], in a random order.
fn draw_set(count: usize) -> Vec<&'static str> {
    let mut names = NAMES.to_vec();
    fastrand::shuffle(&mut names);
    names.truncate(count);
    names
}

/// `redlock-run`'s arguments for a set: each name, the pool's limit when drawn.
fn set_args(names: &[&str], url: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    for n in names {
        args.extend(["--key".into(), n.to_string()]);
    }
    if names.contains(&"pool") {
        args.extend(["--limit".into(), format!("pool={POOL}")]);
    }
    args.extend(["--redis".into(), url.into()]);
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

/// A sampler of the holders' metadata: every `every`, reads each holder (its name, pid
/// and the names it holds with) and notes a pid that held part of its set (fewer
/// names than `with` + 1) in every sample for longer than `longest`: a run that keeps
/// a name while it waits for another. Returns the partial holds found.
fn partial_hold_sampler(
    read: Box<dyn Fn() -> Vec<(String, String, usize)> + Send>,
    stop: Arc<AtomicBool>,
    longest: Duration,
) -> std::thread::JoinHandle<(usize, Vec<String>)> {
    std::thread::spawn(move || {
        let mut since: HashMap<String, Instant> = HashMap::new();
        let mut found = Vec::new();
        let mut samples = 0;
        while !stop.load(Ordering::SeqCst) {
            samples += 1;
            let mut held: HashMap<String, (HashSet<String>, usize)> = HashMap::new();
            for (name, pid, with) in read() {
                let e = held.entry(pid).or_default();
                e.0.insert(name);
                e.1 = with + 1;
            }
            let partial: HashSet<String> = held
                .iter()
                .filter(|(_, (names, of))| names.len() < *of)
                .map(|(pid, _)| pid.clone())
                .collect();
            since.retain(|pid, _| partial.contains(pid));
            for pid in partial {
                let first = *since.entry(pid.clone()).or_insert_with(Instant::now);
                if first.elapsed() > longest {
                    found.push(format!("pid {pid} held {:?} of its set", held[&pid]));
                    since.remove(&pid);
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        (samples, found)
    })
}

/// Every holder's (name, pid, number of names held with) on one server: the metadata
/// hashes of the names and of the pool's slots.
fn holders_on(url: String) -> impl Fn() -> Vec<(String, String, usize)> + Send + 'static {
    let client = redis::Client::open(url).unwrap();
    move || {
        let Ok(mut con) = client.get_connection() else {
            return Vec::new();
        };
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("redlock:{*}*meta*")
            .query(&mut con)
            .unwrap_or_default();
        keys.iter()
            .filter_map(|key| {
                let fields: HashMap<String, String> =
                    redis::cmd("HGETALL").arg(key).query(&mut con).ok()?;
                let name = key.split('{').nth(1)?.split('}').next()?.to_string();
                let with: Vec<String> = serde_json::from_str(fields.get("with")?).ok()?;
                Some((name, fields.get("pid")?.clone(), with.len()))
            })
            .collect()
    }
}

/// What a loop of set runs gave.
struct Looped {
    runs: usize,
    failed: Vec<String>,
    partial: Vec<String>,
    samples: usize,
    elapsed: Duration,
}

impl Looped {
    /// Every run exited 0: none busy after its wait (a deadlock or a starved set would
    /// be), none in error; the first three failures are shown.
    fn assert_none_failed(&self) {
        assert!(
            self.failed.is_empty(),
            "{} runs failed: {:?}",
            self.failed.len(),
            &self.failed[..self.failed.len().min(3)]
        );
    }

    /// At least `runs` ran, and the journal's verdict `j` is sound: never two holders
    /// of a mutex name, the pool never above its size, no entry left open.
    fn assert_sound(&self, j: &Judged, runs: usize) {
        assert!(self.runs >= runs, "only {} runs", self.runs);
        assert_eq!((j.overlaps, j.pool_over, j.open), (0, 0, 0), "{j:?}");
    }
}

/// `workers` processes (on [`HOSTS`] hosts) each looping on a random 2–4 of the
/// [`NAMES`], in a random order, `--wait 30s`, until `target` runs are done (or
/// `limit`); one run in 50 holds 600 ms, so that a run kept waiting on a name while it
/// held another would be seen by the sampler (400 ms; with `sample`: on one server).
/// `url` is the server's or the Cluster's.
fn loop_sets(
    url: &str,
    journal: &Path,
    workers: usize,
    target: usize,
    limit: Duration,
    sample: bool,
) -> Looped {
    let namespaces = hosts_can_be_namespaces();
    let done = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let read: Box<dyn Fn() -> Vec<(String, String, usize)> + Send> = match sample {
        true => Box::new(holders_on(url.to_string())),
        false => Box::new(Vec::new),
    };
    let sampler = partial_hold_sampler(read, stop.clone(), Duration::from_millis(400));
    let start = Instant::now();
    let threads: Vec<_> = (0..workers)
        .map(|i| {
            let (done, failed) = (done.clone(), failed.clone());
            let (url, journal) = (url.to_string(), journal.to_path_buf());
            std::thread::spawn(move || {
                while done.load(Ordering::SeqCst) < target && start.elapsed() < limit {
                    let names = draw_set(fastrand::usize(2..=4));
                    let hold = match fastrand::usize(0..50) {
                        0 => 600,
                        _ => fastrand::u64(0..=30),
                    };
                    let args = set_args(&names, &url, &["--wait", "30s", "--ttl", "10s"]);
                    let mut args = args;
                    args.extend(["--".into(), "sh".into(), "-c".into()]);
                    args.push(section(&journal, &names, hold));
                    let mut cmd = on_host(&format!("set-host-{}", i % HOSTS), &args, namespaces);
                    cmd.stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::piped());
                    let out = output_within(&mut cmd, Duration::from_secs(60));
                    if code(&out) == 0 {
                        done.fetch_add(1, Ordering::SeqCst);
                    } else {
                        let line = format!("{}: {} ({names:?})", code(&out), stderr(&out));
                        failed.lock().unwrap().push(line);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let elapsed = start.elapsed();
    stop.store(true, Ordering::SeqCst);
    let (samples, partial) = sampler.join().unwrap();
    let failed = failed.lock().unwrap().clone();
    Looped {
        runs: done.load(Ordering::SeqCst),
        failed,
        partial,
        samples,
        elapsed,
    }
}

/// 16 processes on 4 hosts, each looping on a random 2–4 of 6 names (one a pool of 3)
/// in a random command-line order, `--wait 30s`: at least 2,000 runs, never two holders
/// of a mutex name at once, the pool never above 3, no run that ends busy or in error
/// (no deadlock: every run got all its names within its wait), no partial hold while
/// waiting; every key expires.
#[test]
fn sixteen_loops_on_random_sets_of_six_names_from_4_hosts() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let journal = scratch.path("journal");
    let looped = loop_sets(
        &redis.url(),
        &journal,
        16,
        2_000,
        Duration::from_secs(300),
        true,
    );
    looped.assert_none_failed();
    let j = judge(&journal);
    eprintln!(
        "sets: {} runs, {} name entries, {} overlaps, pool over {POOL}: {}, most in the pool {}, {} open, {} partial holds in {} samples, {:?}",
        looped.runs,
        j.entries,
        j.overlaps,
        j.pool_over,
        j.most_in_pool,
        j.open,
        looped.partial.len(),
        looped.samples,
        looped.elapsed
    );
    looped.assert_sound(&j, 2_000);
    assert!(j.most_in_pool >= 2, "the pool never had two holders: {j:?}");
    assert!(looped.partial.is_empty(), "{:?}", looped.partial);
    for (key, pttl) in redis.all_keys() {
        assert!(pttl > 0, "{key} has no expiry ({pttl})");
    }
    let gone = eventually(Duration::from_secs(5), || redis.keys().is_empty());
    assert!(gone, "left: {:?}", redis.all_keys());
}

/// The same loop on a 3-master Cluster, the names in different slots (on at least two
/// masters): no overlap, the pool never above 3, no run busy or in error, no partial
/// hold; nothing left but fence counters and histories.
#[test]
fn random_sets_on_a_cluster() {
    let cluster = Cluster::start(3);
    let owners: HashSet<usize> = NAMES
        .iter()
        .map(|n| cluster.owner(&format!("redlock:{{{n}}}")))
        .collect();
    assert!(owners.len() >= 2, "the names all hash to one master");
    let scratch = Scratch::new();
    let journal = scratch.path("journal");
    let looped = loop_sets(
        &cluster.url(),
        &journal,
        8,
        300,
        Duration::from_secs(150),
        false,
    );
    looped.assert_none_failed();
    let j = judge(&journal);
    eprintln!(
        "sets on a cluster ({} masters hold the names): {} runs, {} name entries, {} overlaps, pool over {POOL}: {}, {:?}",
        owners.len(),
        looped.runs,
        j.entries,
        j.overlaps,
        j.pool_over,
        looped.elapsed
    );
    looped.assert_sound(&j, 300);
    let left: Vec<String> = cluster
        .keys()
        .into_iter()
        .filter(|k| !k.ends_with(":history") && !k.ends_with(":fence"))
        .collect();
    assert!(left.is_empty(), "left: {left:?}");
}

/// A set that waits holds nothing: while a run of `a` and `b` waits for `b`, a run of
/// `a` alone gets `a` at once (no `--wait`), and `status a` says it is free; then the
/// set runs when `b` comes free. Both command-line orders.
#[test]
fn a_set_that_waits_keeps_no_name_from_others() {
    let redis = Redis::start();
    let url = redis.url();
    for order in [["a", "b"], ["b", "a"]] {
        let holder = Holding::start(&set_args(&["b"], &url, &[]));
        let mut set = set_args(&order, &url, &["--wait", "30s"]);
        set.extend(["--".into(), "true".into()]);
        let waiting = redlock_run()
            .args(&set)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let joined = eventually(Duration::from_secs(10), || {
            redis.cmd::<i64>(&["SCARD", "redlock:{b}:waiters"]) == 1
        });
        assert!(joined, "the set never waited for b");
        let out = output(redlock().args(["status", "a", "--json", "--redis", &url]));
        let state: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(state["state"], "free", "{state}");
        let mut alone = set_args(&["a"], &url, &[]);
        alone.extend(["--".into(), "true".into()]);
        let out = output(redlock_run().args(&alone));
        assert_eq!(code(&out), 0, "a run of a alone: {}", stderr(&out));
        let (status, err) = holder.finish();
        assert_eq!(status, 0, "{err}");
        let (status, err) = finish(waiting, Duration::from_secs(20));
        assert_eq!(status, 0, "the set: {err}");
    }
}

/// A holder of three names whose wrapper is SIGKILLed frees all three within its ttl
/// (2 s) and 1 s: a run of the three (in another order) that waits starts by then.
#[test]
fn a_killed_holder_of_three_names_frees_all_three_within_its_ttl() {
    let redis = Redis::start();
    let url = redis.url();
    let holder = Holding::start(&set_args(&["x", "y", "z"], &url, &["--ttl", "2s"]));
    let scratch = Scratch::new();
    let started = scratch.path("started");
    let mut set = set_args(&["z", "x", "y"], &url, &["--wait", "20s"]);
    set.extend(["--".into(), "sh".into(), "-c".into()]);
    set.push(format!("date +%s%N > '{}'", started.display()));
    let waiting = redlock_run()
        .args(&set)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let joined = eventually(Duration::from_secs(10), || {
        redis.cmd::<i64>(&["SCARD", "redlock:{x}:waiters"]) == 1
    });
    assert!(joined, "the set never waited");
    let killed_at = wall_ms();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(holder.wrapper_pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let (status, err) = finish(waiting, Duration::from_secs(20));
    assert_eq!(status, 0, "{err}");
    let delay = read_trimmed(&started).parse::<f64>().unwrap() / 1e6 - killed_at;
    eprintln!("sets: a SIGKILLed holder of 3 names (ttl 2 s) delayed the next set {delay:.0} ms");
    assert!(delay < 3_000.0, "{delay:.0} ms");
    holder.let_go();
}

/// Each name's fencing number goes to the command as `REDLOCK_FENCE_<NAME>` (and the
/// pool's slot as `REDLOCK_SLOT_POOL`), the first name's as `REDLOCK_FENCE` too; the
/// holder metadata, `status`, `list`, the history and the `--metrics` file (its first
/// name's) say the names held together.
#[test]
fn the_command_gets_each_names_fence_and_readers_say_the_set() {
    let redis = Redis::start();
    let url = redis.url();
    let scratch = Scratch::new();
    let metrics = scratch.path("set.prom");
    let metrics_arg = metrics.display().to_string();
    let mut args = set_args(&["deploy-env", "pool"], &url, &["--metrics", &metrics_arg]);
    args.extend(["--".into(), "sh".into(), "-c".into()]);
    args.push(
        "echo \"$REDLOCK_FENCE $REDLOCK_FENCE_DEPLOY_ENV $REDLOCK_FENCE_POOL $REDLOCK_SLOT_POOL\"; \
         redlock status deploy-env; redlock list"
            .into(),
    );
    let out = output(
        redlock_run()
            .args(&args)
            .env("PATH", path_with_redlock())
            .env("REDLOCK_REDIS_URL", &url),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let first: Vec<&str> = text.lines().next().unwrap().split(' ').collect();
    assert_eq!(first.len(), 4, "{text}");
    assert_eq!(first[0], first[1], "{text}");
    assert!(first[2].parse::<u64>().is_ok() && first[3] == "1", "{text}");
    assert!(
        text.contains("held with: pool (one run holds them together)"),
        "{text}"
    );
    assert!(text.contains("held with deploy-env"), "{text}");
    let history = history_json(&redis, "pool");
    assert_eq!(
        history["runs"][0]["with"],
        serde_json::json!(["deploy-env"]),
        "{history}"
    );
    let prom = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        prom.contains("redlock_last_run_held_with{name=\"deploy-env\",with=\"pool\"} 1\n"),
        "{prom}"
    );
    let fence = format!("redlock_fence{{name=\"deploy-env\"}} {}\n", first[1]);
    assert!(prom.contains(&fence), "{prom}");
}

/// The directory of the `redlock` binary before the rest of PATH.
fn path_with_redlock() -> String {
    let dir = Path::new(RUN).parent().unwrap().display().to_string();
    format!("{dir}:{}", std::env::var("PATH").unwrap_or_default())
}

/// A name of a set that is gone (Redis flushed) is a lost lock: the command is
/// stopped, the run exits 79, and the other name is released (nothing of the run is
/// left but the record of its end).
#[test]
fn a_name_of_a_set_lost_is_the_lock_lost() {
    let redis = Redis::start();
    let url = redis.url();
    let holder = Holding::start(&set_args(&["keep", "lose"], &url, &["--ttl", "1s"]));
    let _: i64 = redis.cmd(&["DEL", "redlock:{lose}", "redlock:{lose}:meta"]);
    let out = holder.wait();
    assert_eq!(
        out.status.code(),
        Some(79),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lock lose lost"), "{err}");
    assert!(
        get(&redis, "redlock:{keep}").is_none(),
        "keep is still held"
    );
    let history = history_json(&redis, "keep");
    assert_eq!(history["runs"][0]["status"], 79, "{history}");
}

/// Bad input for a set: one line, 64, nothing written.
#[test]
fn bad_sets_are_refused_with_one_line_and_write_nothing() {
    let redis = Redis::start();
    let url = redis.url();
    let cases: &[(&[&str], &str)] = &[
        (&["--key", "a", "--key", "a"], "given twice"),
        (
            &["--key", "a", "--key", "b", "--limit", "c=2"],
            "not one of the --key names",
        ),
        (
            &["--key", "a", "--key", "b", "--shared", "c"],
            "not one of the --key names",
        ),
        (
            &["--key", "a", "--key", "b", "--limit", "2"],
            "say which name is the pool",
        ),
        (
            &["--key", "a", "--key", "b", "--shared"],
            "say which name is shared",
        ),
        (
            &[
                "--key", "a", "--key", "b", "--limit", "a=2", "--limit", "a=3",
            ],
            "given twice",
        ),
        (&["--key", "a", "--key", "b", "--fair"], "--fair"),
        (
            &["--key", "a", "--key", "b", "--once-per", "1m"],
            "--once-per",
        ),
        (
            &[
                "--key", "a", "--key", "b", "--limit", "a=2", "--shared", "a",
            ],
            "--shared",
        ),
    ];
    for (args, says) in cases {
        let out = output(
            redlock_run()
                .args(*args)
                .args(["--redis", &url, "--", "true"]),
        );
        let err = stderr(&out);
        assert_eq!(code(&out), 64, "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let many: Vec<String> = (0..17)
        .flat_map(|i| ["--key".into(), format!("n{i}")])
        .collect();
    let out = output(
        redlock_run()
            .args(&many)
            .args(["--redis", &url, "--", "true"]),
    );
    assert_eq!(code(&out), 64, "{}", stderr(&out));
    assert!(stderr(&out).contains("at most 16"), "{}", stderr(&out));
    assert!(redis.all_keys().is_empty(), "{:?}", redis.all_keys());
}

/// The CI guide's example (`sets-deploy`), its two lines as written: deploys of four
/// environments and two migrations at once: one run per environment at a time, the
/// database one migration at a time, never more than 3 deploys at once, every run 0.
#[test]
fn the_guides_deploys_and_migrations_run_as_written() {
    let redis = Redis::start();
    let dir = Scratch::new();
    let journal = dir.path("journal");
    let lines = example_runs("sets-deploy");
    assert_eq!(lines.len(), 2, "{lines:?}");
    for (script, names) in [
        ("deploy.sh", "env-$ENVIRONMENT deployers"),
        ("migrate.sh", "env-$ENVIRONMENT db"),
    ] {
        let body = format!(
            "for n in {names}; do echo \"+ $n $$\" >> '{j}'; done\nsleep 0.3\nfor n in {names}; do echo \"- $n $$\" >> '{j}'; done\n",
            j = journal.display()
        );
        dir.script(script, &body);
    }
    let runs: Vec<_> = [
        (0, "a"),
        (0, "b"),
        (0, "c"),
        (0, "d"),
        (1, "a"),
        (0, "a"),
        (1, "c"),
        (0, "b"),
    ]
    .iter()
    .map(|(line, env)| {
        std::process::Command::new("sh")
            .args(["-c", &lines[*line]])
            .current_dir(dir.path(""))
            .env("REDLOCK_REDIS_URL", redis.url())
            .env("ENVIRONMENT", env)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    })
    .collect();
    for run in runs {
        let (status, err) = finish(run, Duration::from_secs(60));
        assert_eq!(status, 0, "{err}");
    }
    let j = judge_pool(&journal, "deployers", 3);
    assert_eq!(j.entries, 16, "{j:?}");
    assert_eq!((j.overlaps, j.pool_over, j.open), (0, 0, 0), "{j:?}");
    assert!(
        j.most_in_pool >= 2,
        "the deploys never ran side by side: {j:?}"
    );
}

/// A holder of two names whose wrapper is stopped (SIGSTOP) while its command runs:
/// its group guard stops the command before the set's lease can end, so the run of
/// the same names (in the other order) that takes them over never starts beside it.
/// Three trials, the stop at a random moment of the lease.
#[test]
fn a_stopped_holder_of_two_names_never_outlives_its_lease() {
    let redis = Redis::start();
    let url = redis.url();
    for trial in 0..3 {
        let scratch = Scratch::new();
        let (pid_file, gone) = (scratch.path("pid"), scratch.path("gone"));
        let mut holder = set_args(&["p", "q"], &url, &["--ttl", "2s"]);
        holder.extend(["--".into(), "sh".into(), "-c".into()]);
        holder.push(format!(
            "echo $$ > '{}.tmp' && mv '{0}.tmp' '{0}'; sleep 60",
            pid_file.display()
        ));
        let mut holder = redlock_run()
            .args(&holder)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        assert!(eventually(Duration::from_secs(10), || pid_file.exists()));
        let command = read_trimmed(&pid_file);
        std::thread::sleep(Duration::from_millis(fastrand::u64(0..1_500)));
        let wrapper = nix::unistd::Pid::from_raw(holder.id() as i32);
        nix::sys::signal::kill(wrapper, nix::sys::signal::Signal::SIGSTOP).unwrap();
        // The next run checks, as its command starts, whether the stopped one's
        // command is still alive (a zombie is not: the stopped wrapper cannot reap it).
        let mut next = set_args(&["q", "p"], &url, &["--wait", "20s"]);
        next.extend(["--".into(), "sh".into(), "-c".into()]);
        next.push(format!(
            "s=$(awk '{{print $3}}' /proc/{command}/stat 2>/dev/null); \
             if [ -n \"$s\" ] && [ \"$s\" != Z ]; then echo alive; else echo gone; fi > '{}'",
            gone.display()
        ));
        let out = output_within(redlock_run().args(&next), Duration::from_secs(30));
        assert_eq!(code(&out), 0, "trial {trial}: {}", stderr(&out));
        assert_eq!(
            read_trimmed(&gone),
            "gone",
            "trial {trial}: two holders at once"
        );
        nix::sys::signal::kill(wrapper, nix::sys::signal::Signal::SIGCONT).unwrap();
        let status = wait_child(&mut holder, Duration::from_secs(20));
        assert_eq!(status.code(), Some(79), "trial {trial}");
    }
}

/// A name a set takes, gives back (another of its names was busy) and takes again is
/// the new grant's: the command's fence for it is the one its metadata holds, larger
/// than the fence of a run that held the name in between (a lease kept its first grant:
/// a stale fence, and a pool's slot not the one held, a false "lock lost").
#[test]
fn a_name_taken_again_has_the_new_grants_fence_and_slot() {
    let redis = Redis::start();
    let url = redis.url();
    let holder = Holding::start(&set_args(&["b"], &url, &[]));
    let scratch = Scratch::new();
    let seen = scratch.path("seen");
    let mut set = set_args(&["a", "b"], &url, &["--limit", "a=2", "--wait", "20s"]);
    set.extend(["--".into(), "sh".into(), "-c".into()]);
    set.push(format!(
        "echo \"$REDLOCK_FENCE_A $REDLOCK_SLOT_A\" > '{}'",
        seen.display()
    ));
    let waiting = redlock_run()
        .args(&set)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let joined = eventually(Duration::from_secs(10), || {
        redis.cmd::<i64>(&["SCARD", "redlock:{b}:waiters"]) == 1
    });
    assert!(joined, "the set never waited for b");
    // Meanwhile another run holds slot 1 of a (the set gave it back) and keeps it.
    let between = Holding::start(&set_args(&["a"], &url, &["--limit", "2"]));
    let between_fence: u64 = redis.cmd(&["HGET", "redlock:{a}:meta", "fence"]);
    let (status, err) = holder.finish();
    assert_eq!(status, 0, "{err}");
    let (status, err) = finish(waiting, Duration::from_secs(20));
    assert_eq!(status, 0, "the set: {err}");
    let seen = read_trimmed(&seen);
    let (fence, slot) = seen.split_once(' ').unwrap();
    let fence: u64 = fence.parse().unwrap();
    assert!(fence > between_fence, "{fence} after {between_fence}");
    assert_eq!(slot, "2", "the set holds slot 2: slot 1 is the other run's");
    let (status, err) = between.finish();
    assert_eq!(status, 0, "{err}");
}
