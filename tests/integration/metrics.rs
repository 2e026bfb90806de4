//! `--metrics FILE`: the Prometheus text file a run leaves, read with a parser as a
//! scraper would, after each outcome; never seen half-written; a host that did not get
//! the lock never reports a failure.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::harness::*;

/// The file's samples by (metric, outcome label), after checking it whole: every line
/// is a `# HELP`, a `# TYPE … gauge` (`… counter` for a `_total`) or a sample the parser
/// read as one, every metric has its help, and the text ends with a newline.
fn scrape(text: &str) -> HashMap<(String, String), f64> {
    assert!(text.ends_with('\n'), "cut short: {text:?}");
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let parsed = prometheus_parse::Scrape::parse(lines).expect("parses");
    let samples = text.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(
        parsed.samples.len(),
        samples,
        "a line the parser did not read:\n{text}"
    );
    let mut out = HashMap::new();
    for s in &parsed.samples {
        assert!(
            parsed.docs.contains_key(&s.metric),
            "no HELP for {}",
            s.metric
        );
        let v = match s.value {
            prometheus_parse::Value::Gauge(v) => v,
            prometheus_parse::Value::Counter(v) if s.metric.ends_with("_total") => v,
            _ => panic!("{} is not a gauge:\n{text}", s.metric),
        };
        assert!(
            s.labels.get("name").is_some(),
            "{} has no name label",
            s.metric
        );
        let outcome = s.labels.get("outcome").unwrap_or("").to_string();
        out.insert((s.metric.clone(), outcome), v);
    }
    for line in text.lines().filter(|l| l.starts_with("# TYPE")) {
        let counter = line.ends_with("_total counter");
        assert!(line.ends_with(" gauge") || counter, "{line}");
    }
    out
}

fn metrics_at(path: &Path) -> HashMap<(String, String), f64> {
    scrape(&std::fs::read_to_string(path).expect("the metrics file"))
}

fn value(m: &HashMap<(String, String), f64>, metric: &str) -> Option<f64> {
    m.get(&(metric.to_string(), String::new())).copied()
}

/// The outcome whose `redlock_last_outcome` is 1 (and checks the others are 0).
fn outcome(m: &HashMap<(String, String), f64>) -> String {
    let set: Vec<&String> = m
        .iter()
        .filter(|((metric, _), v)| metric == "redlock_last_outcome" && **v == 1.0)
        .map(|((_, o), _)| o)
        .collect();
    let all = m
        .keys()
        .filter(|(metric, _)| metric == "redlock_last_outcome")
        .count();
    let labels = redlock::outcome::metric_labels().len();
    assert_eq!((set.len(), all), (1, labels), "{m:?}");
    set[0].clone()
}

fn run_with_metrics(
    redis_args: &[String],
    file: &Path,
    extra: &[&str],
    script: &str,
) -> (i32, String) {
    let out = output_within(
        redlock_run()
            .args(redis_args)
            .arg("--metrics")
            .arg(file)
            .args(extra)
            .args(["--", "sh", "-c", script]),
        Duration::from_secs(60),
    );
    (code(&out), stderr(&out))
}

#[test]
fn every_outcome_leaves_a_file_a_scraper_reads() {
    let redis = Redis::start();
    let s = Scratch::new();
    let file = s.path("job.prom");
    let args = lock_args(&redis, "job");

    // ran, exit 0: a success.
    assert_eq!(run_with_metrics(&args, &file, &[], "exit 0").0, 0);
    let m = metrics_at(&file);
    assert_eq!(outcome(&m), "ran");
    assert_eq!(value(&m, "redlock_last_run_exit_status"), Some(0.0));
    assert_eq!(value(&m, "redlock_running"), Some(0.0));
    let success = value(&m, "redlock_last_success_timestamp_seconds").expect("a success");
    assert!(value(&m, "redlock_fence").is_some());
    let start = value(&m, "redlock_last_run_start_timestamp_seconds").unwrap();
    let end = value(&m, "redlock_last_run_end_timestamp_seconds").unwrap();
    assert!(start <= end && end == success, "{m:?}");

    // ran, exit 3: not a success; the last success stays.
    assert_eq!(run_with_metrics(&args, &file, &[], "exit 3").0, 3);
    let m = metrics_at(&file);
    assert_eq!(outcome(&m), "ran");
    assert_eq!(value(&m, "redlock_last_run_exit_status"), Some(3.0));
    assert_eq!(
        value(&m, "redlock_last_success_timestamp_seconds"),
        Some(success)
    );

    // busy: another holder; busy is not a failure, the last success stays.
    let holder = Holding::start(&args);
    assert_eq!(
        run_with_metrics(&args, &file, &["--busy-exit-code", "0"], "exit 0").0,
        0
    );
    let m = metrics_at(&file);
    assert_eq!(outcome(&m), "busy");
    assert_eq!(
        value(&m, "redlock_last_success_timestamp_seconds"),
        Some(success)
    );
    // A try that did not get the lock keeps the series of the last run of this host
    // that held it (the exit 3 above): it never hides a job that hangs.
    assert_eq!(value(&m, "redlock_last_run_exit_status"), Some(3.0));
    assert_eq!(value(&m, "redlock_running"), Some(0.0));
    assert!(value(&m, "redlock_last_try_timestamp_seconds").is_some());

    // lost: the key deleted behind the run.
    let key = lock_key("job");
    holder.finish();
    let script = format!(
        "redis-cli -p {} DEL '{key}' >/dev/null; sleep 5",
        redis.port
    );
    let (code, err) = run_with_metrics(&args, &file, &["--ttl", "1s"], &script);
    assert_eq!(code, 79, "{err}");
    assert_eq!(outcome(&metrics_at(&file)), "lost");

    // --max-hold: timeout.
    let (code, err) = run_with_metrics(&args, &file, &["--max-hold", "300ms"], "sleep 10");
    assert_eq!(code, 124, "{err}");
    assert_eq!(outcome(&metrics_at(&file)), "timeout");

    // skipped: --once-per 1d, and today's slot already had a success (a run of the
    // job: only a --once-per run closes its slot, issue 58 item 5).
    let (code, err) = run_with_metrics(&args, &file, &["--once-per", "1d"], "exit 0");
    assert_eq!(code, 0, "{err}");
    let success = value(&metrics_at(&file), "redlock_last_success_timestamp_seconds");
    let (code, _) = run_with_metrics(&args, &file, &["--once-per", "1d"], "exit 0");
    assert_eq!(code, 75);
    let m = metrics_at(&file);
    assert_eq!(outcome(&m), "skipped");
    assert_eq!(value(&m, "redlock_last_success_timestamp_seconds"), success);

    // error: Redis unreachable.
    let down = vec![
        "--key".into(),
        "job".into(),
        "--redis".into(),
        "redis://127.0.0.1:1".into(),
    ];
    let (code, _) = run_with_metrics(&down, &file, &[], "exit 0");
    assert_eq!(code, 69);
    let m = metrics_at(&file);
    assert_eq!(outcome(&m), "error");
    assert_eq!(value(&m, "redlock_last_success_timestamp_seconds"), success);
    // Only the file itself in the directory: no temporary file left behind.
    assert_eq!(std::fs::read_dir(s.path("")).unwrap().count(), 1);
}

#[test]
fn a_running_job_shows_in_its_file() {
    let redis = Redis::start();
    let s = Scratch::new();
    let file = s.path("slow.prom");
    let mut args = lock_args(&redis, "slow");
    args.extend(["--metrics".into(), file.display().to_string()]);
    let holder = Holding::start(&args);
    let m = metrics_at(&file);
    assert_eq!(value(&m, "redlock_running"), Some(1.0));
    assert!(value(&m, "redlock_last_run_start_timestamp_seconds").is_some());
    assert!(value(&m, "redlock_fence").is_some());
    holder.finish();
    assert_eq!(value(&metrics_at(&file), "redlock_running"), Some(0.0));
}

#[test]
fn the_file_is_never_seen_half_written() {
    let redis = Redis::start();
    let s = Scratch::new();
    let file = s.path("loop.prom");
    let args = lock_args(&redis, "loop");
    assert_eq!(run_with_metrics(&args, &file, &[], "true").0, 0);
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (file, stop) = (file.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(Ordering::Relaxed) {
                let text = std::fs::read_to_string(&file).expect("always there");
                // Whole: the start file (running, with the fence) or the end file
                // (its outcome rows and the success), never a part of either.
                let m = scrape(&text);
                match value(&m, "redlock_running") {
                    Some(1.0) => assert!(value(&m, "redlock_fence").is_some(), "{text}"),
                    Some(0.0) => {
                        outcome(&m);
                        let success = "redlock_last_success_timestamp_seconds";
                        assert!(value(&m, success).is_some(), "{text}");
                    }
                    _ => panic!("no redlock_running: {text}"),
                }
                reads += 1;
            }
            reads
        })
    };
    for _ in 0..500 {
        let (code, err) = run_with_metrics(&args, &file, &[], "true");
        assert_eq!(code, 0, "{err}");
    }
    stop.store(true, Ordering::Relaxed);
    let reads = reader.join().expect("every read parsed whole");
    assert!(reads > 500, "the reader read {reads} times");
}

#[test]
fn hosts_that_lose_the_race_report_busy_never_a_failure() {
    let redis = Redis::start();
    let s = Scratch::new();
    let go = s.path("go");
    // Four "hosts" fire the same cron line at once; one runs the job.
    let script = format!("while [ ! -e '{}' ]; do sleep 0.02; done", go.display());
    let runs: Vec<_> = (0..4)
        .map(|h| {
            redlock_run()
                .args(lock_args(&redis, "cron"))
                .args(["--busy-exit-code", "0", "--metrics"])
                .arg(s.path(&format!("host{h}.prom")))
                .args(["--", "sh", "-c", &script])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    assert!(eventually(READY, || (0..4)
        .filter(|h| s.path(&format!("host{h}.prom")).exists())
        .count()
        == 4));
    std::fs::write(&go, "").unwrap();
    for run in runs {
        assert_eq!(finish(run, Duration::from_secs(30)).0, 0);
    }
    let outcomes: Vec<String> = (0..4)
        .map(|h| outcome(&metrics_at(&s.path(&format!("host{h}.prom")))))
        .collect();
    assert_eq!(
        outcomes.iter().filter(|o| *o == "ran").count(),
        1,
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes.iter().filter(|o| *o == "busy").count(),
        3,
        "{outcomes:?}"
    );
    for h in 0..4 {
        let m = metrics_at(&s.path(&format!("host{h}.prom")));
        // Only the host that held the lock has a held run's series; every host its try.
        let held = outcome(&m) == "ran";
        let status = value(&m, "redlock_last_run_exit_status");
        assert_eq!(status, held.then_some(0.0), "host {h}");
        assert!(value(&m, "redlock_last_try_timestamp_seconds").is_some());
        assert!(value(&m, "redlock_first_try_timestamp_seconds").is_some());
    }
}

#[test]
fn a_metrics_file_in_a_missing_directory_is_refused() {
    let redis = Redis::start();
    let out = output(redlock_run().args(lock_args(&redis, "m")).args([
        "--metrics",
        "/nonexistent-dir/x.prom",
        "--",
        "true",
    ]));
    assert_eq!(code(&out), 64, "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1);
    assert!(
        stderr(&out).contains("--metrics /nonexistent-dir/x.prom"),
        "{}",
        stderr(&out)
    );
    assert!(redis.keys().is_empty());
}

#[test]
fn a_nested_run_leaves_the_file_to_the_enclosing_run() {
    let redis = Redis::start();
    let s = Scratch::new();
    let file = s.path("outer.prom");
    let inner = format!(
        "'{RUN}' --key nest --redis '{}' -- true; cat '{}' > '{}'",
        redis.url(),
        file.display(),
        s.path("seen").display()
    );
    let out = output_within(
        redlock_run()
            .env("REDLOCK_METRICS", &file)
            .args(lock_args(&redis, "nest"))
            .args(["--", "sh", "-c", &inner]),
        Duration::from_secs(30),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // While the nested run ran, the file was still the enclosing run's start file.
    let seen = scrape(&std::fs::read_to_string(s.path("seen")).unwrap());
    assert_eq!(value(&seen, "redlock_running"), Some(1.0));
    assert_eq!(outcome(&metrics_at(&file)), "ran");
}

/// (review 4, #11) `--metrics` through a symbolic link writes the link's target and
/// leaves the link a link (it was replaced by a regular file, the target never
/// updated); no temporary file is left beside it.
#[test]
fn a_metrics_link_is_followed_to_its_target() {
    let redis = Redis::start();
    let s = Scratch::new();
    let store = s.path("store");
    let collector = s.path("collector");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::create_dir_all(&collector).unwrap();
    let real = store.join("job.prom");
    std::fs::write(&real, "old\n").unwrap();
    let link = collector.join("job.prom");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = output(
        redlock_run()
            .args(["--key", "m1", "--redis", &redis.url(), "--metrics"])
            .arg(&link)
            .args(["--", "true"]),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced"
    );
    assert_eq!(outcome(&metrics_at(&real)), "ran");
    let left: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .chain(std::fs::read_dir(&collector).unwrap())
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

/// A lock found lost at the release (the run too short for a renewal to find it) is
/// `lost`, as its exit status (79) and the history say, not `ran`.
#[test]
fn a_lock_lost_at_the_release_is_lost() {
    let redis = Redis::start();
    let s = Scratch::new();
    let file = s.path("lost.prom");
    let args = lock_args(&redis, "m-lost");
    let key = lock_key("m-lost");
    let flag = s.path("started");
    let script = format!("touch {}; sleep 1", flag.display());
    let run = std::thread::spawn({
        let (args, file) = (args.clone(), file.clone());
        move || run_with_metrics(&args, &file, &[], &script)
    });
    assert!(eventually(Duration::from_secs(10), || flag.exists()));
    let _: i64 = redis.cmd(&["DEL", &key]);
    let (status, err) = run.join().unwrap();
    assert_eq!(status, codes::LOST, "{err}");
    let m = metrics_at(&file);
    assert_eq!(outcome(&m), "lost");
    assert_eq!(value(&m, "redlock_last_run_exit_status"), Some(79.0));
}
