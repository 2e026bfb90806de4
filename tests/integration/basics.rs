//! The core path: acquire, run, release; the key layout, odd key names included.

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;

use crate::harness::proxy::Proxy;
use crate::harness::*;

#[test]
fn runs_the_command_and_releases() {
    let redis = Redis::start();
    let out = output(
        redlock_run()
            .args(["--key", "job", "--redis", &redis.url(), "--"])
            .args([
                "sh",
                "-c",
                "echo \"$REDLOCK_KEY $REDLOCK_NAME $REDLOCK_TTL_MS\"; exit 7",
            ]),
    );
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert_eq!(stdout(&out), "redlock:{job} job 30000\n");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

#[test]
fn contention_smoke() {
    let redis = Redis::start();
    let args = vec![
        "--key".to_string(),
        "smoke".to_string(),
        "--redis".to_string(),
        redis.url(),
    ];
    let c = contend(&args, 4, 5);
    assert_eq!(c.sections, 20, "{c:?}");
    assert_eq!((c.overlaps, c.duplicate_tokens), (0, 0), "{c:?}");
    assert_eq!(c.fences_not_increasing, 0, "{c:?}");
    assert_eq!(c.counter, 20);
    assert!(c.failures.is_empty());
    assert!(redis.keys().is_empty());
}

// Odd key names ---------------------------------------------------------------------

/// Names with bytes that are not UTF-8, a newline, glob characters and braces: the lock
/// is held under exactly `redlock:{NAME}` while the command runs, the command sees that
/// key in REDLOCK_KEY, and nothing is left afterwards.
#[test]
fn odd_key_names_round_trip() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let child = scratch.script(
        "holder",
        "printf %s \"$REDLOCK_KEY\" > \"$1/key\"\n\
         echo ready > \"$1/ready\"\n\
         while [ ! -e \"$1/stop\" ]; do sleep 0.02; done",
    );
    let names: [&[u8]; 9] = [
        b"\xff\xfe",
        b"caf\xc3\xa9 \xe2\x98\x83",
        b"line\nbreak",
        b"tab\tand space",
        b"*?[a-z]\\",
        b"{}",
        b"}{",
        b"{inner}x",
        b"a:b:{c}",
    ];
    for (i, name) in names.iter().enumerate() {
        let dir = scratch.path(&format!("n{i}"));
        std::fs::create_dir(&dir).unwrap();
        let mut cmd = redlock_run();
        cmd.arg("--key")
            .arg(OsStr::from_bytes(name))
            .args(["--redis", &redis.url(), "--"])
            .arg(&child)
            .arg(&dir);
        let mut running = start_piped(cmd, &scratch, &format!("n{i}"));
        let ctx = format!("name {:?}", String::from_utf8_lossy(name));
        wait_file(&dir.join("ready"), "ready", &running);
        let expected = [b"redlock:{".as_slice(), name, b"}"].concat();
        assert_eq!(
            std::fs::read(dir.join("key")).unwrap(),
            expected,
            "{ctx}: REDLOCK_KEY"
        );
        let held: Vec<u8> = redis::cmd("GET")
            .arg(&expected)
            .query::<Option<Vec<u8>>>(&mut redis.conn())
            .expect("GET")
            .unwrap_or_else(|| panic!("{ctx}: lock key not in Redis: {:?}", raw_keys(&redis)));
        assert_eq!(held.len(), 36, "{ctx}: the value is the token");
        File::create(dir.join("stop")).unwrap();
        assert_eq!(running.code(), 0, "{ctx}: {}", running.said());
        assert_no_keys(&redis, &ctx);
    }
}

/// An uncontended run is three round trips: the first try's glance (plain reads that
/// answer a losing try alone, see `src/glance.rs`), the acquire and the release. The
/// connect sends nothing of its own (no CLIENT SETINFO), and the scripts go by EVALSHA
/// with a digest known before the run. With an empty script cache each script costs
/// one more (EVAL with its text after NOSCRIPT), not two.
#[test]
fn an_uncontended_run_is_three_round_trips() {
    let redis = Redis::start();
    let proxy = Proxy::start(redis.port);
    let run = |name: &str| {
        let out =
            output(redlock_run().args(["--key", name, "--redis", &proxy.url(), "--", "true"]));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    };
    run("warm");
    let before = proxy.round_trips();
    run("uncontended");
    assert_eq!(
        proxy.round_trips() - before,
        3,
        "glance, acquire and release"
    );
    let _: String = redis.cmd(&["SCRIPT", "FLUSH"]);
    let before = proxy.round_trips();
    run("cold");
    assert_eq!(
        proxy.round_trips() - before,
        5,
        "each script once more, by EVAL"
    );
}
