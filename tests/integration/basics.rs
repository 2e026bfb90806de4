//! The core path: acquire, run, release; interoperability of the key layout.

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
    assert_eq!(c.counter, 20);
    assert!(c.failures.is_empty());
    assert!(redis.keys().is_empty());
}
