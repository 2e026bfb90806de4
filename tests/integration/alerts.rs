//! The shipped alert rules (`contrib/prometheus/redlock.rules.yml`) under `promtool test
//! rules`, fed with the `--metrics` files the binary wrote (issue 31, newcomer-4 P2):
//! each scenario runs real runs whose clocks read a time of the test's day (faketime
//! from the Unix epoch, where promtool's time starts), snapshots every host's file
//! after each step, and turns the snapshots into promtool's input series, one sample a
//! minute: what the textfile collector would have exported at each scrape.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::harness::*;

/// Every host's file as it was after each step: host → (minute, text).
#[derive(Default)]
struct Snapshots(BTreeMap<String, Vec<(u64, String)>>);

impl Snapshots {
    fn take(&mut self, host: &str, minute: u64, file: &Path) {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        self.0
            .entry(host.to_string())
            .or_default()
            .push((minute, text));
    }

    /// promtool's `input_series`: each sample line of each host, one value a minute up
    /// to `last`, from the newest snapshot at or before that minute ('_' before any).
    fn input_series(&self, last: u64) -> String {
        let mut out = String::new();
        for (host, snapshots) in &self.0 {
            let mut lines: Vec<String> = Vec::new();
            for (_, text) in snapshots {
                for line in text.lines().filter(|l| !l.starts_with('#')) {
                    let series = line.rsplit_once(' ').unwrap().0.to_string();
                    if !lines.contains(&series) {
                        lines.push(series);
                    }
                }
            }
            for series in lines {
                let values: Vec<String> = (0..=last)
                    .map(|minute| {
                        snapshots
                            .iter()
                            .rev()
                            .find(|(at, _)| *at <= minute)
                            .and_then(|(_, text)| {
                                text.lines()
                                    .find(|l| l.rsplit_once(' ').unwrap().0 == series)
                                    .map(|l| l.rsplit_once(' ').unwrap().1.to_string())
                            })
                            .unwrap_or_else(|| "_".to_string())
                    })
                    .collect();
                let labelled =
                    series.replacen('{', &format!("{{instance=\"{host}\",job=\"node\","), 1);
                out.push_str(&format!(
                    "      - series: '{labelled}'\n        values: '{}'\n",
                    values.join(" ")
                ));
            }
        }
        out
    }
}

/// `redlock-run` as a host whose clock reads `minute` minutes after the epoch.
fn at_minute(minute: u64, redis: &Redis, file: &Path, flags: &[&str], script: &str) -> Command {
    let mut cmd = redlock_run();
    let (h, m) = (minute / 60, minute % 60);
    let day = 1 + h / 24;
    with_clock_offset(
        &mut cmd,
        &format!("@1970-01-{day:02} {:02}:{m:02}:00", h % 24),
    );
    cmd.args(["--redis", &redis.url(), "--key", "nightly", "--metrics"])
        .arg(file)
        .args(flags)
        .args(["--", "sh", "-c", script])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn run_at(minute: u64, redis: &Redis, file: &Path, flags: &[&str], script: &str) -> i32 {
    let status = at_minute(minute, redis, file, flags, script)
        .status()
        .unwrap();
    status.code().unwrap_or(-1)
}

/// An alert expected at `minute`: name and labels; an empty list expects none.
struct Expect {
    minute: u64,
    alert: &'static str,
    fired: Vec<(&'static str, String)>,
}

fn alert_tests(expects: &[Expect]) -> String {
    let mut out = String::from("    alert_rule_test:\n");
    for e in expects {
        out.push_str(&format!(
            "      - eval_time: {}m\n        alertname: {}\n        exp_alerts:",
            e.minute, e.alert
        ));
        if e.fired.is_empty() {
            out.push_str(" []\n");
            continue;
        }
        out.push_str("\n          - exp_labels:\n");
        for (k, v) in &e.fired {
            out.push_str(&format!("              {k}: {v}\n"));
        }
        let name = e
            .fired
            .iter()
            .find(|(k, _)| *k == "name")
            .map(|(_, v)| v.as_str());
        let summary = match e.alert {
            "RedlockJobNeverTried" => format!(
                "{}: expected, but no host has tried it for 26 hours",
                name.unwrap_or_default()
            ),
            "RedlockJobMissed" => {
                "nightly: no run has succeeded on any host for 26 hours".to_string()
            }
            "RedlockNoLeader" => "consumer: no host leads (--elect) for 5 minutes".to_string(),
            "RedlockRunVanished" => {
                "nightly: a run vanished (its end never recorded); check whether it did its work"
                    .to_string()
            }
            _ => format!(
                "nightly on {}: a run has held the lock for more than 2 hours",
                e.fired.iter().find(|(k, _)| *k == "instance").unwrap().1
            ),
        };
        out.push_str(&format!(
            "            exp_annotations:\n              summary: \"{summary}\"\n"
        ));
    }
    out
}

fn rules() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/prometheus/redlock.rules.yml")
}

/// A job hung for 3 h on host0 while host0's and host1's next tries find it busy:
/// "running too long" fires for host0, nothing is missed yet.
fn hung(s: &Scratch) -> String {
    let redis = Redis::start();
    let mut snaps = Snapshots::default();
    let (f0, f1) = (s.path("hung0.prom"), s.path("hung1.prom"));
    let started = s.path("hung-started");
    let mut holder: Child = at_minute(
        1,
        &redis,
        &f0,
        &[],
        &format!("touch {}; sleep 60", started.display()),
    )
    .spawn()
    .unwrap();
    assert!(eventually(Duration::from_secs(10), || started.exists()));
    snaps.take("host0", 1, &f0);
    for minute in (30..=180).step_by(30) {
        for (host, file) in [("host0", &f0), ("host1", &f1)] {
            let code = run_at(minute, &redis, file, &["--busy-exit-code", "0"], "true");
            assert_eq!(code, 0);
            snaps.take(host, minute, file);
        }
    }
    let _ = holder.kill();
    let _ = holder.wait();
    let host0 = || {
        vec![
            ("name", "nightly".to_string()),
            ("instance", "host0".to_string()),
            ("severity", "ticket".to_string()),
        ]
    };
    let expects = [
        Expect {
            minute: 100,
            alert: "RedlockJobRunningTooLong",
            fired: vec![],
        },
        Expect {
            minute: 180,
            alert: "RedlockJobRunningTooLong",
            fired: host0(),
        },
        Expect {
            minute: 180,
            alert: "RedlockJobMissed",
            fired: vec![],
        },
    ];
    format!(
        "  - name: a job hung for 3 hours while the hosts keep trying\n    interval: 1m\n    input_series:\n{}{}",
        snaps.input_series(180),
        alert_tests(&expects)
    )
}

/// Every run fails on two hosts for 27 h: no success series exists anywhere, and
/// "missed" fires once the job has been tried for 26 h.
fn never_succeeded(s: &Scratch) -> String {
    let redis = Redis::start();
    let mut snaps = Snapshots::default();
    let files = [s.path("never0.prom"), s.path("never1.prom")];
    for minute in (0..=1620).step_by(180) {
        for (h, file) in files.iter().enumerate() {
            assert_eq!(run_at(minute + h as u64, &redis, file, &[], "exit 1"), 1);
            snaps.take(&format!("host{h}"), minute + h as u64, file);
        }
    }
    let missed = vec![
        ("name", "nightly".to_string()),
        ("severity", "page".to_string()),
    ];
    let expects = [
        Expect {
            minute: 1500,
            alert: "RedlockJobMissed",
            fired: vec![],
        },
        Expect {
            minute: 1620,
            alert: "RedlockJobMissed",
            fired: missed,
        },
        Expect {
            minute: 1620,
            alert: "RedlockJobRunningTooLong",
            fired: vec![],
        },
    ];
    format!(
        "  - name: a job that never succeeded\n    interval: 1m\n    input_series:\n{}{}",
        snaps.input_series(1621),
        alert_tests(&expects)
    )
}

/// A day with one success on host0 at 02:00 and skipped tries on three hosts all day:
/// nothing fires.
fn a_good_day(s: &Scratch) -> String {
    let redis = Redis::start();
    let mut snaps = Snapshots::default();
    let files = [
        s.path("day0.prom"),
        s.path("day1.prom"),
        s.path("day2.prom"),
    ];
    assert_eq!(
        run_at(120, &redis, &files[0], &["--once-per", "1d"], "true"),
        0
    );
    snaps.take("host0", 120, &files[0]);
    for minute in (180..=1380).step_by(120) {
        for (h, file) in files.iter().enumerate() {
            let flags = ["--once-per", "1d", "--busy-exit-code", "0"];
            assert_eq!(run_at(minute + h as u64, &redis, file, &flags, "true"), 0);
            snaps.take(&format!("host{h}"), minute + h as u64, file);
        }
    }
    let expects = [
        Expect {
            minute: 1440,
            alert: "RedlockJobMissed",
            fired: vec![],
        },
        Expect {
            minute: 1440,
            alert: "RedlockJobRunningTooLong",
            fired: vec![],
        },
    ];
    format!(
        "  - name: one success on one host, skipped everywhere else\n    interval: 1m\n    input_series:\n{}{}",
        snaps.input_series(1440),
        alert_tests(&expects)
    )
}

/// `redlock-run --elect --key consumer` with `file` as its `--metrics`, as a host whose
/// clock reads `minute` minutes after the epoch; its daemon exits on SIGTERM.
fn elect_at(redis: &Redis, file: &Path, local: &Path, minute: u64) -> Child {
    let mut cmd = redlock_run();
    let (hh, m) = (minute / 60, minute % 60);
    with_clock_offset(
        &mut cmd,
        &format!("@1970-01-{:02} {:02}:{m:02}:00", 1 + hh / 24, hh % 24),
    );
    cmd.args([
        "--redis",
        &redis.url(),
        "--key",
        "consumer",
        "--elect",
        "--metrics",
    ])
    .arg(file)
    .args(["--local-dir", &local.display().to_string()])
    .args([
        "--",
        "sh",
        "-c",
        "trap 'exit 0' TERM; while :; do sleep 0.05; done",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap()
}

/// A leader killed outright (SIGKILL: the OOM killer) and no standby (newcomer-5 P2,
/// review-5 #4): its group guard settles its file to `redlock_leader 0` and
/// `redlock_running 0`, so "no leader" fires 5 minutes later; a file left at 1 would
/// keep it silent for ever.
fn a_killed_leader(s: &Scratch) -> String {
    let redis = Redis::start();
    let mut snaps = Snapshots::default();
    let file = s.path("killed0.prom");
    let mut host0 = elect_at(&redis, &file, &s.path("killed-local0"), 0);
    let says = |what: &str| {
        eventually(Duration::from_secs(10), || {
            std::fs::read_to_string(&file)
                .unwrap_or_default()
                .contains(what)
        })
    };
    assert!(says("redlock_leader{name=\"consumer\"} 1"));
    // Killed once its daemon runs (the guard tidies for a wrapper that has started it).
    let wrapper = host0.id().to_string();
    let daemon_runs = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read_to_string(e.path().join("stat")).is_ok_and(|stat| {
                let (comm, rest) = stat.split_once(") ").unwrap_or_default();
                comm.ends_with("(sh") && rest.split_whitespace().nth(1) == Some(&wrapper)
            })
        })
    };
    assert!(
        eventually(Duration::from_secs(10), daemon_runs),
        "no daemon"
    );
    snaps.take("host0", 0, &file);
    let _ = host0.kill();
    let _ = host0.wait();
    assert!(
        says("redlock_leader{name=\"consumer\"} 0") && says("redlock_running{name=\"consumer\"} 0"),
        "a SIGKILLed leader's file still says it leads: {}",
        std::fs::read_to_string(&file).unwrap_or_default()
    );
    snaps.take("host0", 60, &file);
    let expects = [
        Expect {
            minute: 30,
            alert: "RedlockNoLeader",
            fired: vec![],
        },
        Expect {
            minute: 66,
            alert: "RedlockNoLeader",
            fired: vec![
                ("name", "consumer".to_string()),
                ("severity", "page".to_string()),
            ],
        },
    ];
    format!(
        "  - name: a leader killed outright, no standby\n    interval: 1m\n    input_series:\n{}{}",
        snaps.input_series(120),
        alert_tests(&expects)
    )
}

/// A standby service (`--elect`) on two hosts for 30 h: host0 leads 10 h, host1 then
/// 18 h, then both stop. Neither job alert fires for it (a daemon is neither missed nor
/// hung); "no leader" fires 5 minutes after the last leader stopped, not before.
fn a_standby_service(s: &Scratch) -> String {
    let redis = Redis::start();
    let mut snaps = Snapshots::default();
    let files = [s.path("svc0.prom"), s.path("svc1.prom")];
    let lead = |h: usize, minute: u64| {
        elect_at(&redis, &files[h], &s.path(&format!("svc-local{h}")), minute)
    };
    let leads = |h: usize, value: u8| {
        let file = &files[h];
        eventually(Duration::from_secs(10), || {
            std::fs::read_to_string(file)
                .unwrap_or_default()
                .contains(&format!("redlock_leader{{name=\"consumer\"}} {value}"))
        })
    };
    let stop = |child: &mut Child| {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        wait_child(child, Duration::from_secs(10));
    };
    let mut host0 = lead(0, 0);
    assert!(leads(0, 1));
    snaps.take("host0", 0, &files[0]);
    let mut host1 = lead(1, 5);
    snaps.take("host1", 5, &files[1]);
    stop(&mut host0);
    assert!(leads(0, 0) && leads(1, 1));
    snaps.take("host0", 600, &files[0]);
    snaps.take("host1", 600, &files[1]);
    stop(&mut host1);
    assert!(leads(1, 0));
    snaps.take("host1", 1680, &files[1]);
    let none = |minute, alert| Expect {
        minute,
        alert,
        fired: vec![],
    };
    let expects = [
        none(300, "RedlockJobRunningTooLong"),
        none(1200, "RedlockJobRunningTooLong"),
        none(1800, "RedlockJobMissed"),
        none(1200, "RedlockNoLeader"),
        none(1684, "RedlockNoLeader"),
        Expect {
            minute: 1686,
            alert: "RedlockNoLeader",
            fired: vec![
                ("name", "consumer".to_string()),
                ("severity", "page".to_string()),
            ],
        },
    ];
    format!(
        "  - name: a standby service whose last leader stopped\n    interval: 1m\n    input_series:\n{}{}",
        snaps.input_series(1800),
        alert_tests(&expects)
    )
}

/// (newcomer-5 P16) The metrics page's expected-jobs file lists `nightly-report`, run
/// every 3 h on two hosts (`nightly` here: its files as the binary wrote them, under
/// that name), and `close-order`, whose line never ran: no file, no series, and no
/// alert fired for it. `RedlockJobNeverTried` fires for `close-order` once 26 h have
/// passed, and for no name that runs.
fn never_tried(s: &Scratch) -> String {
    let redis = Redis::start();
    let mut snaps = Snapshots::default();
    let files = [s.path("tried0.prom"), s.path("tried1.prom")];
    for minute in (0..=1620).step_by(180) {
        for (h, file) in files.iter().enumerate() {
            assert_eq!(run_at(minute + h as u64, &redis, file, &[], "exit 0"), 0);
            snaps.take(&format!("host{h}"), minute + h as u64, file);
        }
    }
    // The page's file as written, the job that runs under the name it runs as here.
    let expected = s.path("redlock-expected.prom");
    let text = example("expected-jobs").replace("nightly-report", "nightly");
    assert!(text.contains("name=\"close-order\""), "{text}");
    std::fs::write(&expected, text).unwrap();
    snaps.take("host9", 0, &expected);
    let never = vec![
        ("name", "close-order".to_string()),
        ("severity", "page".to_string()),
    ];
    let expects = [
        Expect {
            minute: 1500,
            alert: "RedlockJobNeverTried",
            fired: vec![],
        },
        Expect {
            minute: 1620,
            alert: "RedlockJobNeverTried",
            fired: never,
        },
        Expect {
            minute: 1620,
            alert: "RedlockJobMissed",
            fired: vec![],
        },
    ];
    format!(
        "  - name: a job that was never tried\n    interval: 1m\n    input_series:\n{}{}",
        snaps.input_series(1621),
        alert_tests(&expects)
    )
}

/// `--once-per 1h` on two hosts: host1's try fails at 00:00 (its file says no vanished
/// run), host0's run at 00:10 has its wrapper SIGKILLed mid-run; host1's try at 00:20,
/// after that run's lease ended, tells it (`redlock_vanished_runs_total` 1), host0's at
/// 00:30 says nothing. "run vanished" fires after the tell, not before, and resolves an
/// hour later.
fn a_vanished_run(s: &Scratch) -> String {
    let redis = Redis::start();
    let mut snaps = Snapshots::default();
    let files = [s.path("vanish0.prom"), s.path("vanish1.prom")];
    let flags = ["--once-per", "1h", "--ttl", "1s"];
    assert_eq!(run_at(0, &redis, &files[1], &flags, "exit 1"), 1);
    snaps.take("host1", 0, &files[1]);
    let killed = run_at(10, &redis, &files[0], &flags, "kill -9 $PPID; sleep 5");
    assert_eq!(killed, -1, "the wrapper was killed");
    snaps.take("host0", 10, &files[0]);
    assert!(eventually(Duration::from_secs(5), || {
        !redis.exists(&lock_key("nightly"))
    }));
    for (minute, h) in [(20, 1), (30, 0)] {
        assert_eq!(
            run_at(minute, &redis, &files[h], &flags, "true"),
            codes::BUSY
        );
        snaps.take(&format!("host{h}"), minute, &files[h]);
    }
    let told = std::fs::read_to_string(&files[1]).unwrap();
    assert!(
        told.contains("redlock_vanished_runs_total{name=\"nightly\"} 1"),
        "{told}"
    );
    let none = |minute| Expect {
        minute,
        alert: "RedlockRunVanished",
        fired: vec![],
    };
    let fired = Expect {
        minute: 25,
        alert: "RedlockRunVanished",
        fired: vec![
            ("name", "nightly".to_string()),
            ("severity", "ticket".to_string()),
        ],
    };
    let expects = [none(15), fired, none(90)];
    format!(
        "  - name: a run that vanished, told once\n    interval: 1m\n    input_series:\n{}{}",
        snaps.input_series(120),
        alert_tests(&expects)
    )
}

/// The shipped rules, `promtool check rules`, then `promtool test rules` on the
/// scenarios above.
#[test]
fn the_shipped_alert_rules_fire_on_what_the_binary_wrote() {
    let promtool = Command::new("promtool").arg("--version").output();
    assert!(
        promtool.is_ok_and(|o| o.status.success()),
        "promtool is missing: scripts/test installs Debian's prometheus package"
    );
    let check = Command::new("promtool")
        .args(["check", "rules"])
        .arg(rules())
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let s = Scratch::new();
    let tests = format!(
        "rule_files:\n  - {}\nevaluation_interval: 1m\ntests:\n{}{}{}{}{}{}{}",
        rules().display(),
        hung(&s),
        never_succeeded(&s),
        a_good_day(&s),
        a_standby_service(&s),
        never_tried(&s),
        a_killed_leader(&s),
        a_vanished_run(&s)
    );
    // Every file the runs left is clean to promtool's own lint of the text format.
    for entry in std::fs::read_dir(s.path("")).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "prom") {
            let text = std::fs::read(entry.path()).unwrap();
            let mut lint = Command::new("promtool")
                .args(["check", "metrics"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write as _;
            lint.stdin.take().unwrap().write_all(&text).unwrap();
            let out = lint.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "promtool check metrics {}: {}{}",
                entry.path().display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let file = s.path("redlock.rules.test.yml");
    std::fs::write(&file, &tests).unwrap();
    let out = Command::new("promtool")
        .args(["test", "rules"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool test rules failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
