//! `--shared` through the CLI (issue 42): shared runs beside each other, a run without
//! `--shared` (the exclusive side) never beside anyone, from 4 simulated hosts (UTS
//! namespaces where they can be made, each host with its own local queue directory);
//! writer preference under an endless stream of overlapping shared runs; a SIGKILLed
//! shared holder; every key expiring. The journal is one file every section appends
//! its enter and leave lines to (O_APPEND: the file's order is the order of events).
//! The same on a 3-master Redis Cluster (the name's slot on a master other than the
//! first seed). The scripts themselves are tested in `shared_scripts`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::harness::*;

const HOSTS: usize = 4;

/// Simulated hosts for one test: a server, a scratch dir with the journal, each host's
/// local queue directory.
struct Fleet {
    url: String,
    scratch: Scratch,
    namespaces: bool,
}

impl Fleet {
    fn new(redis: &Redis) -> Fleet {
        Fleet {
            url: redis.url(),
            scratch: Scratch::new(),
            namespaces: hosts_can_be_namespaces(),
        }
    }

    fn journal(&self) -> PathBuf {
        self.scratch.path("journal")
    }

    /// `redlock-run --key NAME [--shared] <extra> -- sh -c <script>` on host `host`.
    fn run(&self, host: usize, name: &str, shared: bool, extra: &[&str], script: &str) -> Command {
        let local = self.scratch.path(&format!("local-{host}"));
        let mut args: Vec<String> = vec![
            "--key".into(),
            name.into(),
            "--redis".into(),
            self.url.clone(),
            "--local-dir".into(),
            local.display().to_string(),
        ];
        if shared {
            args.push("--shared".into());
        }
        args.extend(extra.iter().map(|a| a.to_string()));
        args.extend(["--".into(), "sh".into(), "-c".into(), script.into()]);
        let mut cmd = on_host(&format!("shared-host-{host}"), &args, self.namespaces);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        cmd
    }
}

/// A section's script: appends `+ KIND id` to the journal, holds `hold_ms`, appends
/// `- KIND id` (with `stamp`, each line also carries `date +%s%N`).
fn section(journal: &Path, kind: char, hold_ms: u64, stamp: bool) -> String {
    let j = journal.display();
    let when = if stamp { " $(date +%s%N)" } else { "" };
    format!(
        "echo \"+ {kind} $$ {when}\" >> '{j}'; sleep {}; echo \"- {kind} $$ {when}\" >> '{j}'",
        hold_ms as f64 / 1000.0
    )
}

/// What the journal shows, by its order: sections, times anyone entered beside an
/// exclusive holder (or an exclusive holder beside anyone), the most shared holders at
/// once, sections never left, and the longest shared hold in ms (stamped journals).
#[derive(Debug, Default)]
struct Judged {
    sections: usize,
    overlaps: usize,
    most_shared: usize,
    open: usize,
    longest_shared_ms: u64,
}

fn judge(journal: &Path) -> Judged {
    let text = std::fs::read_to_string(journal).unwrap_or_default();
    let mut j = Judged::default();
    let (mut shared, mut exclusive) = (0usize, 0usize);
    let mut entered: std::collections::HashMap<String, u64> = Default::default();
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let (sign, kind, id) = (parts[0], parts[1], parts[2]);
        let at = parts.get(3).and_then(|t| t.parse::<u64>().ok());
        match (sign, kind) {
            ("+", k) => {
                j.sections += 1;
                if exclusive > 0 || (k == "E" && shared > 0) {
                    j.overlaps += 1;
                }
                if k == "E" {
                    exclusive += 1;
                } else {
                    shared += 1;
                    j.most_shared = j.most_shared.max(shared);
                    if let Some(at) = at {
                        entered.insert(id.to_string(), at);
                    }
                }
            }
            (_, "E") => exclusive -= 1,
            _ => {
                shared -= 1;
                if let (Some(from), Some(to)) = (entered.remove(id), at) {
                    let held = to.saturating_sub(from) / 1_000_000;
                    j.longest_shared_ms = j.longest_shared_ms.max(held);
                }
            }
        }
    }
    j.open = shared + exclusive;
    j
}

/// The journal's order is judged right: an exclusive section entered beside a shared
/// one, and a shared one beside an exclusive one, are both counted.
#[test]
fn the_journal_judge_counts_overlaps() {
    let s = Scratch::new();
    let journal = s.path("j");
    std::fs::write(
        &journal,
        "+ S 1\n+ S 2\n- S 1\n+ E 3\n- S 2\n- E 3\n+ E 4\n+ S 5\n- E 4\n- S 5\n",
    )
    .unwrap();
    let j = judge(&journal);
    assert_eq!(
        (j.sections, j.overlaps, j.most_shared, j.open),
        (5, 2, 2, 0)
    );
}

/// 12 shared and 4 exclusive runs looping (`--wait`) on 4 hosts until 1,000 sections:
/// never an exclusive run beside anyone, and at least 8 shared runs at once. Holds are
/// 0–50 ms; an exclusive run pauses 100–300 ms between its runs (a maintenance job
/// does not loop back to back), so that the readers can gather.
#[test]
fn readers_share_writers_run_alone_4_hosts() {
    let redis = Redis::start();
    let fleet = Arc::new(Fleet::new(&redis));
    let (target, limit) = (1_000, Duration::from_secs(150));
    let done = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let start = Instant::now();
    let workers: Vec<_> = (0..16)
        .map(|i| {
            let (fleet, done, failed) = (fleet.clone(), done.clone(), failed.clone());
            std::thread::spawn(move || {
                let shared = i < 12;
                while done.load(Ordering::SeqCst) < target && start.elapsed() < limit {
                    // Shared holds long enough to overlap (the concurrency this test
                    // shows), exclusive ones short.
                    let hold = match shared {
                        true => fastrand::u64(100..=300),
                        false => fastrand::u64(0..=50),
                    };
                    let kind = if shared { 'S' } else { 'E' };
                    let script = section(&fleet.journal(), kind, hold, false);
                    let mut cmd =
                        fleet.run(i % HOSTS, "fleet", shared, &["--wait", "60s"], &script);
                    let out = output_within(&mut cmd, Duration::from_secs(90));
                    if code(&out) == 0 {
                        done.fetch_add(1, Ordering::SeqCst);
                    } else {
                        failed
                            .lock()
                            .unwrap()
                            .push(format!("{}: {}", code(&out), stderr(&out)));
                    }
                    if !shared {
                        std::thread::sleep(Duration::from_millis(fastrand::u64(400..=900)));
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let failed = failed.lock().unwrap();
    assert!(
        failed.is_empty(),
        "{} runs failed: {:?}",
        failed.len(),
        &failed[..failed.len().min(3)]
    );
    let j = judge(&fleet.journal());
    eprintln!(
        "shared: 12 shared + 4 exclusive runs on {HOSTS} hosts{}: {j:?} in {:.1} s",
        if fleet.namespaces {
            " (UTS namespaces)"
        } else {
            ""
        },
        start.elapsed().as_secs_f64()
    );
    assert!(j.sections >= target, "{j:?} within {limit:?}");
    assert_eq!(j.overlaps, 0, "{j:?}");
    assert_eq!(j.open, 0, "{j:?}");
    assert!(j.most_shared >= 8, "{j:?}");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// A stream of shared runs that never lets the name go (each holds 1 s, a new one every
/// 0.3 s) and 50 exclusive runs arriving at random moments, 0.4–1.4 s apart (so that
/// the trials overlap): each starts within the longest shared hold + 1 s of its
/// arrival, 50 of 50, and never beside a shared run.
#[test]
fn a_writer_is_not_starved_by_overlapping_readers() {
    let redis = Redis::start();
    let fleet = Arc::new(Fleet::new(&redis));
    let stop = Arc::new(AtomicBool::new(false));
    let stream = {
        let (fleet, stop) = (fleet.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut readers: Vec<Child> = Vec::new();
            let mut next = Instant::now();
            for n in 0.. {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let script = section(&fleet.journal(), 'S', 1_000, true);
                let mut cmd = fleet.run(n % HOSTS, "drain", true, &["--wait", "60s"], &script);
                readers.push(cmd.spawn().expect("spawn"));
                next += Duration::from_millis(300);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            readers
                .into_iter()
                .map(|r| finish(r, Duration::from_secs(90)))
                .collect::<Vec<_>>()
        })
    };
    // The stream is under way: the name is held from now on.
    let held = eventually(Duration::from_secs(10), || redis.exists(&lock_key("drain")));
    assert!(held, "no shared run began");
    let trials: Vec<_> = (0..50)
        .map(|i| {
            std::thread::sleep(Duration::from_millis(fastrand::u64(400..=1_400)));
            let fleet = fleet.clone();
            std::thread::spawn(move || {
                let started = fleet.scratch.path(&format!("started-{i}"));
                let script = format!(
                    "date +%s%N > '{}'; {}",
                    started.display(),
                    section(&fleet.journal(), 'E', 50, true)
                );
                let mut cmd = fleet.run(i % HOSTS, "drain", false, &["--wait", "60s"], &script);
                let arrived = wall_ms();
                let (code, err) = finish(cmd.spawn().expect("spawn"), Duration::from_secs(60));
                let at: f64 = read_trimmed(&started).parse::<f64>().unwrap() / 1e6;
                (code, err, at - arrived)
            })
        })
        .collect();
    let waits: Vec<(i32, String, f64)> = trials.into_iter().map(|t| t.join().unwrap()).collect();
    stop.store(true, Ordering::SeqCst);
    let readers = stream.join().unwrap();
    assert!(readers.iter().all(|(c, _)| *c == 0), "{readers:?}");
    let j = judge(&fleet.journal());
    let bound = j.longest_shared_ms.max(1_000) as f64 + 1_000.0;
    let late: Vec<_> = waits
        .iter()
        .filter(|(c, _, w)| *c != 0 || *w > bound)
        .collect();
    let longest = waits.iter().map(|w| w.2).fold(0.0, f64::max);
    eprintln!(
        "shared: 50 exclusive runs into a stream of {} shared runs: longest wait {longest:.0} ms \
         (bound {bound:.0} ms), {j:?}",
        readers.len()
    );
    assert!(
        late.is_empty(),
        "{} of 50 late or failed: {late:?}",
        late.len()
    );
    assert_eq!(j.overlaps, 0, "{j:?}");
    assert!(j.most_shared >= 3, "the shared runs overlapped: {j:?}");
}

/// A shared holder whose wrapper is SIGKILLed delays a waiting exclusive run by at
/// most its ttl + 1 s.
#[test]
fn a_killed_shared_holder_delays_a_writer_by_at_most_its_ttl() {
    let redis = Redis::start();
    let s = Scratch::new();
    let mut args = lock_args(&redis, "killed");
    args.extend(["--shared".into(), "--ttl".into(), "2s".into()]);
    let holder = Holding::start(&args);
    let started = s.path("started");
    let writer = start_run(
        &[
            lock_args(&redis, "killed"),
            vec!["--wait".into(), "30s".into()],
        ]
        .concat(),
        &format!("date +%s%N > '{}'", started.display()),
    );
    let registered = eventually(Duration::from_secs(10), || {
        redis.cmd::<i64>(&["ZCARD", "redlock:{killed}:writers"]) == 1
    });
    assert!(
        registered,
        "the exclusive run never waited: {:?}",
        redis.keys()
    );
    let killed_at = wall_ms();
    kill_wrapper(holder.wrapper_pid());
    let (code, err) = finish(writer, Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    let delay = read_trimmed(&started).parse::<f64>().unwrap() / 1e6 - killed_at;
    eprintln!(
        "shared: a SIGKILLed shared holder (ttl 2 s) delayed the exclusive run {delay:.0} ms"
    );
    assert!(delay <= 3_000.0, "{delay:.0} ms");
    holder.let_go();
}

fn kill_wrapper(pid: u32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("SIGKILL");
}

/// While two shared runs hold (one to be SIGKILLed), an exclusive run and a shared run
/// wait behind it, every key has an expiry; once they end and the killed one's ttl
/// passes, nothing is left but the fence counter and the history (kept `--retain`).
#[test]
fn every_key_expires_after_shared_runs() {
    let redis = Redis::start();
    let mut args = lock_args(&redis, "tidy");
    args.extend(["--shared".into(), "--ttl".into(), "2s".into()]);
    let killed = Holding::start(&args);
    let kept = Holding::start(&args);
    let waiting = |shared: bool| {
        let mut a = lock_args(&redis, "tidy");
        if shared {
            a.push("--shared".into());
        }
        a.extend(["--wait".into(), "30s".into()]);
        start_run(&a, "true")
    };
    let writer = waiting(false);
    let registered = eventually(Duration::from_secs(10), || {
        redis.cmd::<i64>(&["ZCARD", "redlock:{tidy}:writers"]) == 1
    });
    assert!(registered, "the exclusive run never waited");
    let reader = waiting(true);
    let queued = eventually(Duration::from_secs(10), || {
        redis.cmd::<i64>(&["SCARD", "redlock:{tidy}:waiters"]) == 2
    });
    assert!(queued, "the shared run never waited behind the writer");
    for (key, pttl) in redis.all_keys() {
        assert!(pttl > 0, "{key} has no expiry ({pttl})");
    }
    kill_wrapper(killed.wrapper_pid());
    let (code, err) = kept.finish();
    assert_eq!(code, 0, "{err}");
    for run in [writer, reader] {
        let (code, err) = finish(run, Duration::from_secs(30));
        assert_eq!(code, 0, "{err}");
    }
    for (key, pttl) in redis.all_keys() {
        assert!(pttl > 0, "{key} has no expiry ({pttl})");
    }
    let gone = eventually(Duration::from_secs(5), || redis.keys().is_empty());
    assert!(gone, "left: {:?}", redis.all_keys());
    killed.let_go();
}

/// On a 3-master Cluster, the name's slot on a master other than the first seed: 3
/// shared and 3 exclusive contenders, 15 runs each; the witness file (`flock -s` and
/// `-x`) and the log order find no exclusive section beside any other; `status` says
/// "shared by N" while shares hold; every key goes.
#[test]
fn shared_on_a_cluster() {
    let cluster = Cluster::start(3);
    let url = cluster.url();
    let name = (0..)
        .map(|i| format!("s{i}"))
        .find(|n| cluster.owner(&format!("redlock:{{{n}}}")) != 0)
        .unwrap();
    let args: Vec<String> = ["--key", &name, "--redis", &url, "--ttl", "5s"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut w = Workload::new(args.clone(), 6);
    w.readers = 3;
    w.rounds = Some(15);
    w.wait = "60s".into();
    let report = w.start().finish();
    report.assert_safe();
    let v = &report.verdict;
    eprintln!(
        "shared on a cluster: {} shared and {} exclusive sections, at most {} shared at once",
        v.shared_sections, v.sections, v.most_shared
    );
    assert_eq!((v.sections, v.shared_sections), (45, 45), "{report:#?}");
    let share = |ttl: &str| {
        let out =
            output(redlock().args(["acquire", &name, "--shared", "--ttl", ttl, "--redis", &url]));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out).trim().to_string()
    };
    let (one, two) = (share("1m"), share("1m"));
    let out = output(redlock().args(["status", &name, "--redis", &url]));
    assert!(
        stdout(&out).contains("shared by 2 runs"),
        "{}",
        stdout(&out)
    );
    for token in [one, two] {
        let out = output(redlock().args(["release", &name, "--token", &token, "--redis", &url]));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let history = format!("redlock:{{{name}}}:history");
    let fence = format!("redlock:{{{name}}}:fence");
    let left: Vec<String> = cluster
        .keys()
        .into_iter()
        .filter(|k| *k != history && *k != fence)
        .collect();
    assert!(left.is_empty(), "left: {left:?}");
}

/// The CI guide's fleet-wide pause (`shared-pause`), its two lines as written: three
/// jobs share the name; the maintenance line waits for them, and a job that comes
/// while it waits starts only after it. Nothing runs beside the maintenance.
#[test]
fn the_guides_fleet_pause_runs_as_written() {
    let redis = Redis::start();
    let dir = Scratch::new();
    let journal = dir.path("journal");
    let lines = example_runs("shared-pause");
    assert_eq!(lines.len(), 2, "{lines:?}");
    for (script, hold) in [("job.sh", "1"), ("upgrade.sh", "0.5")] {
        let tag = script.trim_end_matches(".sh");
        let body = format!(
            "echo \"+{tag} $$\" >> '{j}'\nsleep {hold}\necho \"-{tag} $$\" >> '{j}'\n",
            j = journal.display()
        );
        dir.script(script, &body);
    }
    let line = |i: usize| {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &lines[i]])
            .current_dir(dir.path(""))
            .env("REDLOCK_REDIS_URL", redis.url())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        cmd.spawn().expect("spawn")
    };
    let jobs: Vec<Child> = (0..3).map(|_| line(0)).collect();
    let shared = eventually(Duration::from_secs(10), || {
        redis.cmd::<i64>(&["ZCARD", "redlock:{fleet}:shares"]) == 3
    });
    assert!(shared, "the three jobs never shared the name");
    let upgrade = line(1);
    let waits = eventually(Duration::from_secs(10), || {
        redis.cmd::<i64>(&["ZCARD", "redlock:{fleet}:writers"]) == 1
    });
    assert!(waits, "the maintenance never waited");
    let late = line(0);
    for child in jobs.into_iter().chain([upgrade, late]) {
        let (code, err) = finish(child, Duration::from_secs(30));
        assert_eq!(code, 0, "{err}");
    }
    let text = read_trimmed(&journal);
    let order: Vec<&str> = text.lines().map(|l| &l[..2]).collect();
    // Three jobs in and out, then the upgrade alone, then the late job.
    assert_eq!(
        order,
        ["+j", "+j", "+j", "-j", "-j", "-j", "+u", "-u", "+j", "-j"],
        "{text}"
    );
}

/// `release --if-dead` judges each share: of two shares taken by `redlock acquire
/// --shared --holder-pid`, the one whose process is gone is removed and the live one
/// stays (a second --if-dead is refused, 75, naming it).
#[test]
fn release_if_dead_removes_only_the_dead_share() {
    let redis = Redis::start();
    let url = redis.url();
    let mut gone = Command::new("sleep").arg("60").spawn().unwrap();
    let gone_pid = gone.id();
    let mut live = Command::new("sleep").arg("60").spawn().unwrap();
    let share = |pid: u32| {
        let out = output(redlock().args([
            "acquire",
            "pause",
            "--shared",
            "--ttl",
            "1m",
            "--holder-pid",
            &pid.to_string(),
            "--redis",
            &url,
        ]));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out).trim().to_string()
    };
    let (_dead, alive) = (share(gone_pid), share(live.id()));
    gone.kill().unwrap();
    gone.wait().unwrap();
    let out = output(redlock().args(["release", "pause", "--if-dead", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let out = output(redlock().args(["status", "pause", "--json", "--redis", &url]));
    let doc: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(doc["shared_by"], 1, "{doc}");
    assert_eq!(doc["shares"][0]["token"], alive.as_str(), "{doc}");
    let out = output(redlock().args(["release", "pause", "--if-dead", "--redis", &url]));
    assert_eq!(code(&out), 75, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
    let out = output(redlock().args(["release", "pause", "--token", &alive, "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    live.kill().unwrap();
    live.wait().unwrap();
}

/// Issue 52 item 11: the texts about a shared name say what can be done to it.
/// `release --if-dead` refused by a live share does not suggest `redlock preempt`
/// (which refuses shared names, 64); `release --force` says the shared holders held
/// it, with no token (the marker `shared` is none); `--limit =2` refuses the empty
/// name as such (not "give --key  too").
#[test]
fn texts_about_a_shared_name_say_what_can_be_done() {
    let redis = Redis::start();
    let url = redis.url();
    let mut live = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = live.id().to_string();
    let share = ["acquire", "pause", "--shared", "--holder-pid", &pid];
    let out = output(redlock().args(share).args(["--ttl", "1m", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = output(redlock().args(["release", "pause", "--if-dead", "--redis", &url]));
    assert_eq!(code(&out), 75, "{}", stderr(&out));
    assert!(!stderr(&out).contains("preempt"), "{}", stderr(&out));
    let out = output(redlock().args(["release", "pause", "--force", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("held by its shared holders"), "{said}");
    assert!(!said.contains("token"), "{said}");
    live.kill().unwrap();
    live.wait().unwrap();
    let out =
        output(redlock_run().args(["--key", "a", "--key", "b", "--limit", "=2", "--", "true"]));
    assert_eq!(code(&out), 64, "{}", stderr(&out));
    assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
    assert!(!stderr(&out).contains("--key  "), "{}", stderr(&out));
    assert!(stderr(&out).contains("empty"), "{}", stderr(&out));
}

/// Issue 52 item 8 (newcomer-6 P10): `status --json` of a shared name is one
/// consistent state while shares come and go: free with no holder, or held by shares
/// (`shared_by` as many as `shares`, the holder the first of them, with its host),
/// never the marker `shared` as a holder with null fields. 2,000 samples while four
/// loops take and give back shares.
#[test]
fn status_json_of_a_shared_name_is_one_state_while_shares_come_and_go() {
    let redis = Redis::start();
    let url = redis.url();
    let stop = Arc::new(AtomicBool::new(false));
    let churn: Vec<_> = (0..4)
        .map(|_| {
            let (url, stop) = (url.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let out =
                        output(redlock().args(["acquire", "db", "--shared", "--redis", &url]));
                    let token = stdout(&out).trim().to_string();
                    let _ = output(
                        redlock().args(["release", "db", "--token", &token, "--redis", &url]),
                    );
                }
            })
        })
        .collect();
    let samples = Arc::new(AtomicUsize::new(0));
    let bad = Arc::new(std::sync::Mutex::new(Vec::new()));
    let samplers: Vec<_> = (0..2)
        .map(|_| {
            let (url, samples, bad) = (url.clone(), samples.clone(), bad.clone());
            std::thread::spawn(move || {
                while samples.fetch_add(1, Ordering::Relaxed) < 2000 {
                    let out = output(redlock().args(["status", "db", "--json", "--redis", &url]));
                    let doc: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
                    if let Some(why) = inconsistent(&doc) {
                        bad.lock().unwrap().push(format!("{why}: {doc}"));
                    }
                }
            })
        })
        .collect();
    for s in samplers {
        s.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for c in churn {
        c.join().unwrap();
    }
    let bad = bad.lock().unwrap();
    assert!(
        bad.is_empty(),
        "{} of 2000 samples: {:?}",
        bad.len(),
        bad.first()
    );
}

/// Why a `status --json` of a shared name is not one state (None: it is).
fn inconsistent(doc: &serde_json::Value) -> Option<&'static str> {
    let shares = doc["shares"].as_array().map_or(0, Vec::len);
    match doc["state"].as_str() {
        Some("free") if doc["holder"].is_null() && shares == 0 => None,
        Some("free") => Some("free with a holder or shares"),
        Some("held") if doc["holder"]["token"] == "shared" => Some("the marker as a holder"),
        Some("held") if doc["holder"]["host"].is_null() => Some("a holder without a host"),
        Some("held") if doc["shared_by"].as_u64() != Some(shares as u64) => {
            Some("shared_by is not the shares")
        }
        Some("held") if shares > 0 && doc["holder"] != doc["shares"][0] => {
            Some("the holder is not the first share")
        }
        Some("held") => None,
        _ => Some("no state"),
    }
}

/// The verbs that speak of one holder say what a shared name is: `preempt` is refused
/// (64, one line: no one holder), `leader` says shared runs hold it.
#[test]
fn preempt_and_leader_say_a_shared_name_has_many_holders() {
    let redis = Redis::start();
    let url = redis.url();
    let out = output(redlock().args(["acquire", "many", "--shared", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = output(redlock().args(["preempt", "many", "--redis", &url]));
    assert_eq!(code(&out), 64, "{}", stderr(&out));
    assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("no one holder"), "{}", stderr(&out));
    let out = output(redlock().args(["leader", "many", "--redis", &url]));
    assert!(
        stdout(&out).contains("shared runs hold it (--shared)"),
        "{}",
        stdout(&out)
    );
}

/// An exclusive run killed (SIGKILL) while it waits behind a share stays registered
/// until its heartbeat ends; the shares waiting behind it, woken while the lock is
/// free, hand the wake-up on at most one round a second (not in a loop as fast as
/// Redis answers), and run once the dead writer's registration is gone.
#[test]
fn a_killed_waiting_writer_costs_little_and_holds_shares_back_only_its_heartbeat() {
    let redis = Redis::start();
    let url = redis.url();
    // The writer promises to come back within the shares' time to live (3 s) and a
    // little: that long its registration outlives it.
    let out = output(redlock().args(["acquire", "dw", "--shared", "--ttl", "3s", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let first = stdout(&out).trim().to_string();
    let base = |shared: bool| {
        let mut a = lock_args(&redis, "dw");
        a.extend(["--ttl".into(), "2s".into(), "--wait".into(), "60s".into()]);
        if shared {
            a.push("--shared".into());
        }
        a
    };
    let writer = start_run(&base(false), "true");
    let registered = eventually(Duration::from_secs(10), || {
        redis.cmd::<i64>(&["ZCARD", "redlock:{dw}:writers"]) == 1
    });
    assert!(registered, "the writer never waited");
    let readers: Vec<Child> = (0..3).map(|_| start_run(&base(true), "true")).collect();
    let waiting = eventually(Duration::from_secs(10), || {
        redis.cmd::<i64>(&["SCARD", "redlock:{dw}:waiters"]) == 4
    });
    assert!(waiting, "the shares never waited behind the writer");
    kill_wrapper(writer.id());
    let killed = Instant::now();
    let out = output(redlock().args(["release", "dw", "--token", &first, "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let _: String = redis.cmd(&["CONFIG", "RESETSTAT"]);
    std::thread::sleep(Duration::from_secs(2));
    let stats: String = redis.cmd(&["INFO", "commandstats"]);
    let pushes: u64 = stats
        .lines()
        .find(|l| l.starts_with("cmdstat_lpush:"))
        .and_then(|l| l.split("calls=").nth(1)?.split(',').next()?.parse().ok())
        .unwrap_or(0);
    eprintln!("shared: wake-ups handed on in 2 s behind a killed writer: {pushes}");
    assert!(pushes <= 12, "{pushes} wake-ups in 2 s:\n{stats}");
    for reader in readers {
        let (code, err) = finish(reader, Duration::from_secs(30));
        assert_eq!(code, 0, "{err}");
    }
    let held_back = killed.elapsed();
    eprintln!("shared: a killed waiting writer held the shares back {held_back:?}");
    assert!(held_back < Duration::from_secs(12), "{held_back:?}");
    let mut writer = writer;
    writer.wait().unwrap();
}

/// A share whose entry is gone (Redis restarted empty: here FLUSHALL) is a lost lock:
/// its next renewal finds it, the command is stopped and the run exits 79; the other
/// share finds the same.
#[test]
fn a_share_that_is_gone_is_a_lost_lock() {
    let redis = Redis::start();
    let mut args = lock_args(&redis, "gone");
    args.extend(["--shared".into(), "--ttl".into(), "1s".into()]);
    let (one, two) = (Holding::start(&args), Holding::start(&args));
    let _: String = redis.cmd(&["FLUSHALL"]);
    for holder in [one, two] {
        let (code, err) = holder.finish();
        assert_eq!(code, 79, "{err}");
        assert!(err.contains("lost"), "{err}");
    }
}
