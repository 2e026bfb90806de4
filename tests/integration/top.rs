//! `redlock top`: one frame as text (`--once`, no terminal), and the live view in a
//! real terminal (tmux): what is held and waited for appears within two refreshes, `q`
//! quits and the screen is restored.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::harness::*;

fn holder(redis: &Redis, name: &str, extra: &[&str]) -> Child {
    redlock_run()
        .args(lock_args(redis, name))
        .args(extra)
        .args(["--", "sleep", "60"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn stop(children: Vec<Child>) {
    for mut c in children {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(c.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = c.wait();
    }
}

fn once(redis: &Redis) -> String {
    let out = output(redlock().args(["top", "--once", "--redis", &redis.url()]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn once_prints_holders_waiters_slots_and_the_fair_line() {
    let redis = Redis::start();
    let mut running = vec![holder(&redis, "deploy", &[])];
    assert!(eventually(READY, || redis.exists(&lock_key("deploy"))));
    running.push(holder(
        &redis,
        "deploy",
        &["--wait", "60s", "--no-local-queue"],
    ));
    running.push(holder(&redis, "sem", &["--limit", "3"]));
    running.push(holder(&redis, "sem", &["--limit", "3"]));
    running.push(holder(&redis, "fq", &["--fair"]));
    assert!(eventually(READY, || redis.exists(&lock_key("fq"))));
    running.push(holder(&redis, "fq", &["--fair", "--wait", "60s"]));
    assert!(
        eventually(READY, || {
            let text = once(&redis);
            text.contains("2 of 3 slots")
                && text.contains("(fair: #1 ")
                && text.lines().count() == 4
        }),
        "{}",
        once(&redis)
    );
    let text = once(&redis);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("NAME  ") && lines[0].contains("WAITERS"),
        "{text}"
    );
    // Waiters behind a holder first.
    let deploy = lines.iter().position(|l| l.starts_with("deploy ")).unwrap();
    let sem = lines.iter().position(|l| l.starts_with("sem ")).unwrap();
    assert!(deploy < sem, "{text}");
    assert!(
        lines[deploy].contains(" held ") && lines[deploy].contains("sleep 60"),
        "{text}"
    );
    stop(running);
}

/// A tmux server of its own, a session running `command` in a 160×24 window.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(command: &str) -> Tmux {
        Tmux::sized(command, 160, 24)
    }

    /// A session of `x`×`y`.
    fn sized(command: &str, x: u16, y: u16) -> Tmux {
        // One server per session: tests run at once in one process.
        static SESSIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = format!("redlock-top-{}-{x}-{n}", std::process::id());
        let tmux = Tmux { socket };
        let status = tmux
            .cmd()
            .args([
                "new-session",
                "-d",
                "-x",
                &x.to_string(),
                "-y",
                &y.to_string(),
                "sh",
                "-c",
                command,
            ])
            .status()
            .expect("tmux (scripts/test installs it)");
        assert!(status.success());
        tmux
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &self.socket]).env("TERM", "xterm-256color");
        cmd
    }

    fn screen(&self) -> String {
        let out = self.cmd().args(["capture-pane", "-p"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &str) {
        assert!(
            self.cmd()
                .args(["send-keys", keys])
                .status()
                .unwrap()
                .success()
        );
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

#[test]
fn live_view_in_a_terminal_shows_changes_within_two_refreshes_and_q_restores_the_screen() {
    let redis = Redis::start();
    let mut running = vec![holder(&redis, "deploy", &[])];
    assert!(eventually(READY, || redis.exists(&lock_key("deploy"))));
    let tmux = Tmux::start(&format!(
        "echo BEFORE-TOP; '{REDLOCK}' top --redis '{}' -n 300ms; echo TOP-EXITED $?; sleep 60",
        redis.url()
    ));
    assert!(
        eventually(READY, || tmux.screen().contains("redlock top: 1 locks")),
        "{}",
        tmux.screen()
    );
    assert!(tmux.screen().contains("deploy") && tmux.screen().contains("sleep 60"));
    // New holders and waiters show within two refreshes (0.6 s; generous on a busy machine).
    running.push(holder(&redis, "sem", &["--limit", "2"]));
    running.push(holder(
        &redis,
        "deploy",
        &["--wait", "60s", "--no-local-queue"],
    ));
    assert!(eventually(READY, || redis.exists(&lock_key("sem"))));
    assert!(
        eventually(Duration::from_secs(5), || {
            let screen = tmux.screen();
            screen.contains("1 of 2 slots") && screen.contains("redlock top: 2 locks")
        }),
        "{}",
        tmux.screen()
    );
    // A resize redraws the view to the new width.
    assert!(
        tmux.cmd()
            .args(["resize-window", "-x", "100", "-y", "20"])
            .status()
            .unwrap()
            .success()
    );
    assert!(
        eventually(Duration::from_secs(5), || {
            let screen = tmux.screen();
            let top = screen
                .lines()
                .find(|l| l.contains("redlock top:"))
                .unwrap_or("");
            // Redrawn: the frame's corner is at the new edge (a cut-off wider frame
            // would end in its top rule).
            top.trim_end().chars().count() == 100 && top.trim_end().ends_with('┐')
        }),
        "{}",
        tmux.screen()
    );
    // Five more resizes: the view stays (newcomer-4 P6: it quit on SIGWINCH).
    for (x, y) in [(80, 24), (120, 30), (90, 20), (100, 30), (80, 24)] {
        let (x, y) = (x.to_string(), y.to_string());
        let resized = tmux
            .cmd()
            .args(["resize-window", "-x", &x, "-y", &y])
            .status();
        assert!(resized.unwrap().success());
        std::thread::sleep(Duration::from_millis(300));
    }
    std::thread::sleep(Duration::from_secs(1));
    let screen = tmux.screen();
    assert!(
        !screen.contains("TOP-EXITED") && screen.contains("redlock top:"),
        "quit on a resize:\n{screen}"
    );
    tmux.keys("q");
    assert!(
        eventually(READY, || tmux.screen().contains("TOP-EXITED 0")),
        "{}",
        tmux.screen()
    );
    let screen = tmux.screen();
    // The alternate screen is gone: the shell's lines are back, the table is not.
    assert!(
        screen.contains("BEFORE-TOP") && !screen.contains("redlock top:"),
        "{screen}"
    );
    stop(running);
}

#[test]
fn without_a_terminal_the_live_view_says_to_use_once() {
    let redis = Redis::start();
    let out = output(redlock().args(["top", "--redis", &redis.url()]));
    assert_eq!(code(&out), 64, "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("--once"), "{}", stderr(&out));
    // Nothing in the pipe: no escape sequence before the error (P15).
    assert!(out.stdout.is_empty(), "{:?}", stdout(&out));
}

/// (review 4, #11) `top` and `list` read many locks together: 2,000 held locks were read
/// one request after another (about 10,000 round trips a `top` frame, 3 s); their reads
/// now go out 1,000 locks at a time on one connection, so the proxy sees a couple of
/// hundred bursts each way, flat in the number of locks per page (it counts a burst of
/// requests after a reply as a round trip; replies stream back while a burst is still
/// being written, so one pipelined stage shows as several).
#[test]
fn two_thousand_locks_are_read_in_a_few_round_trips() {
    use crate::harness::proxy::Proxy;
    let redis = Redis::start();
    let _: i64 = redis.cmd(&[
        "EVAL",
        "for i = 1, 2000 do \
           local k = 'redlock:{many' .. i .. '}' \
           redis.call('SET', k, 't' .. i, 'PX', 600000) \
           redis.call('HSET', k .. ':meta', 'token', 't' .. i, 'host', 'h', 'pid', i, 'cmd', 'job', 'since_ms', 1, 'ttl_ms', 600000) \
           redis.call('PEXPIRE', k .. ':meta', 600000) \
         end return 1",
        "0",
    ]);
    let proxy = Proxy::start(redis.port);
    for verb in [&["top", "--once"][..], &["list"][..]] {
        let before = proxy.round_trips();
        let out = output(redlock().args(verb).args(["--redis", &proxy.url()]));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(stdout(&out).lines().count() >= 2000, "{verb:?}");
        let trips = proxy.round_trips() - before;
        // One request after another, as before, is at least 2 per lock (4,000).
        assert!(trips < 400, "{verb:?}: {trips} round trips");
        eprintln!("{verb:?}: {trips} round trips for 2,000 locks");
    }
}

/// At 80×24 and 100×30 a 29-character name, the holder, how long it is held, its
/// waiters and the last run's outcome stay legible (newcomer-4 P7: names were cut to 12
/// characters and the outcome never showed); the fence goes first when it is narrow.
#[test]
fn a_narrow_terminal_keeps_the_name_holder_held_waiters_and_outcome() {
    let redis = Redis::start();
    let name = "release-train-production-eu-1";
    let url = redis.url();
    let ran = output(redlock_run().args(["--redis", &url, "--key", name, "--", "true"]));
    assert_eq!(code(&ran), 0);
    let mut running = vec![holder(&redis, name, &[])];
    assert!(eventually(READY, || redis.exists(&lock_key(name))));
    running.push(holder(&redis, name, &["--wait", "60s", "--no-local-queue"]));
    for (x, y) in [(80, 24), (100, 30)] {
        let tmux = Tmux::sized(
            &format!("'{REDLOCK}' top --redis '{url}' -n 300ms; sleep 60"),
            x,
            y,
        );
        let legible = eventually(Duration::from_secs(8), || {
            let screen = tmux.screen();
            let row = screen.lines().find(|l| l.contains(name)).unwrap_or("");
            let pid = format!("pid {}", running[0].id());
            row.contains("held")
                && row.contains(&pid)
                && (x < 100 || row.contains("sleep 60"))
                && row.contains("exit 0")
                && row.contains(" 1 ")
                && screen.contains("HELD")
        });
        assert!(legible, "{x}×{y}:\n{}", tmux.screen());
    }
    stop(running);
}

/// (newcomer-5 P6) At 80×24 the holder showed `pid 1752` for pid 17525 (another,
/// plausible pid) and the last run `exit 0, 1m`; at 120×40 the ttl and the fence were
/// still gone. A cell is now shown whole or shortened at a word with `…`: the holder's
/// host and whole pid and the last run's outcome and when stay from 80 columns, the
/// ttl and the fence appear at 120.
#[test]
fn top_never_cuts_a_number_and_shows_ttl_and_fence_from_120_columns() {
    let redis = Redis::start();
    let url = redis.url();
    let long = "a-very-long-lock-name-for-the-nightly-reconciliation-of-every-region-eu1";
    let fence = "1795673560532341";
    // A last run for each (exit 0 on this host), then a holder whose host and pid are
    // the scenario's (written as a wrapper writes them).
    for (name, host, pid, cmd) in [
        (
            "deploy-production",
            "ci-runner-7",
            "17431",
            "./deploy.sh production",
        ),
        (long, "web-9", "17525", "./reconcile.sh --all-regions"),
    ] {
        let ran = output(redlock_run().args(["--redis", &url, "--key", name, "--", "true"]));
        assert_eq!(code(&ran), 0, "{}", stderr(&ran));
        let key = lock_key(name);
        let meta = meta_key(name);
        let _: String = redis.cmd(&["SET", &key, "t-top", "PX", "600000"]);
        let _: i64 = redis.cmd(&[
            "HSET",
            &meta,
            "token",
            "t-top",
            "host",
            host,
            "pid",
            pid,
            "user",
            "ci",
            "cmd",
            cmd,
            "since_ms",
            &(wall_ms() as u64 - 65_000).to_string(),
            "ttl_ms",
            "600000",
            "fence",
            fence,
        ]);
        let _: i64 = redis.cmd(&["PEXPIRE", &meta, "600000"]);
    }
    let mut running = Vec::new();
    for _ in 0..3 {
        running.push(holder(&redis, "test-db", &["--limit", "3"]));
    }
    let mut pids: Vec<String> = running.iter().map(|c| c.id().to_string()).collect();
    pids.extend(["17431".to_string(), "17525".to_string()]);
    for (x, y) in [(80, 24), (120, 40)] {
        let tmux = Tmux::sized(
            &format!("'{REDLOCK}' top --redis '{url}' -n 300ms; sleep 60"),
            x,
            y,
        );
        let drawn = eventually(Duration::from_secs(8), || {
            tmux.screen().contains("3 of 3 slots")
        });
        assert!(drawn, "{x}×{y}:\n{}", tmux.screen());
        let screen = tmux.screen();
        let row = |start: &str| {
            screen
                .lines()
                .find(|l| l.trim_start_matches('│').starts_with(start))
                .unwrap_or_else(|| panic!("no row {start} at {x}×{y}:\n{screen}"))
                .to_string()
        };
        let deploy = row("depl");
        let reconcile = row("a-ve");
        for (row, holder) in [
            (&deploy, "ci-runner-7 pid 17431"),
            (&reconcile, "web-9 pid 17525"),
        ] {
            assert!(row.contains(holder), "{x}×{y}: {holder}:\n{screen}");
            // The last run: its outcome and when, whole.
            assert!(
                row.contains("exit 0, ") && row.contains(" ago"),
                "{x}×{y}: last run:\n{screen}"
            );
        }
        // Every pid shown is one that holds: none cut into another.
        for shown in screen.split("pid ").skip(1) {
            let digits: String = shown.chars().take_while(char::is_ascii_digit).collect();
            assert!(pids.contains(&digits), "{x}×{y}: pid {digits}?\n{screen}");
        }
        if x >= 120 {
            let header = row("NAME");
            assert!(
                header.contains("TTL") && header.contains("FENCE"),
                "{x}×{y}:\n{screen}"
            );
            assert!(deploy.contains(fence), "{x}×{y}:\n{screen}");
        }
    }
    stop(running);
}

/// Issue 52 item 5 (newcomer-6 P5): a free name with a history is a row (state free,
/// its last run), after the held and waited ones; `top` said "(no locks)" for a cron
/// job between its runs. At 80 columns the row keeps its state and last run.
#[test]
fn a_free_name_with_a_history_is_a_row_after_the_held_ones() {
    let redis = Redis::start();
    let url = redis.url();
    for _ in 0..3 {
        let ran =
            output(redlock_run().args(["--redis", &url, "--key", "close-order", "--", "true"]));
        assert_eq!(code(&ran), 0, "{}", stderr(&ran));
    }
    let text = once(&redis);
    let row = text.lines().find(|l| l.starts_with("close-order "));
    let row = row.unwrap_or_else(|| panic!("no row for the free name:\n{text}"));
    assert!(row.contains(" free ") && row.contains("exit 0, "), "{text}");
    let running = vec![holder(&redis, "deploy", &[])];
    assert!(eventually(READY, || once(&redis).contains("deploy ")));
    let text = once(&redis);
    let lines: Vec<&str> = text.lines().collect();
    let at = |name: &str| lines.iter().position(|l| l.starts_with(name)).unwrap();
    assert!(at("deploy ") < at("close-order "), "{text}");
    let tmux = Tmux::sized(
        &format!("'{REDLOCK}' top --redis '{url}' -n 300ms; sleep 60"),
        80,
        24,
    );
    let legible = eventually(Duration::from_secs(8), || {
        let screen = tmux.screen();
        let row = screen
            .lines()
            .find(|l| l.contains("close-order"))
            .unwrap_or("");
        row.contains("free") && row.contains("exit 0")
    });
    assert!(legible, "80×24:\n{}", tmux.screen());
    stop(running);
}
