//! Hosts whose clocks are wrong: a process whose wall clock runs at an offset from the
//! real one, with libfaketime (Debian's `faketime` package; `scripts/test` installs it).
//! Monotonic clocks are left alone. (Debian's redis-server cannot run under
//! libfaketime: its jemalloc calls clock_gettime while the library initialises.)

use std::path::PathBuf;
use std::process::Command;

/// The libfaketime preload library.
pub fn libfaketime() -> PathBuf {
    let found = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|arch| arch.path().join("faketime/libfaketime.so.1"))
        .chain([PathBuf::from("/usr/lib/faketime/libfaketime.so.1")])
        .find(|p| p.exists());
    found.expect("libfaketime is needed: apt-get install faketime (scripts/test does)")
}

/// Runs `cmd` with its wall clock `offset` from the real one (e.g. "-3h", "+90m").
pub fn with_clock_offset(cmd: &mut Command, offset: &str) {
    cmd.env("LD_PRELOAD", libfaketime())
        .env("FAKETIME", offset)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
}

/// A preload library that moves a process's wall clock (`CLOCK_REALTIME`,
/// `gettimeofday`, `time`) by `WALL_CLOCK_OFFSET_MS`, and nothing else: a server whose
/// `TIME` is a moment the test chooses (a DST change night), which libfaketime cannot
/// give redis-server (see the module doc). Raw system calls, no allocation, so it is
/// safe while jemalloc initialises. Built once with `cc` (the machine's C compiler).
pub fn wall_clock_shim() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir =
                std::env::temp_dir().join(format!("redlock-clock-shim-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let (src, lib) = (dir.join("shim.c"), dir.join("shim.so"));
            std::fs::write(&src, SHIM).unwrap();
            let built = Command::new("cc")
                .args(["-shared", "-fPIC", "-O2", "-o"])
                .arg(&lib)
                .arg(&src)
                .status()
                .expect("cc (apt-get install gcc)");
            assert!(built.success(), "the clock shim did not build");
            lib
        })
        .clone()
}

/// The shim's source (see [`wall_clock_shim`]).
const SHIM: &str = r#"
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long offset_ns(void) {
    static long long offset;
    static int read;
    if (!read) {
        const char *ms = getenv("WALL_CLOCK_OFFSET_MS");
        offset = ms ? atoll(ms) * 1000000LL : 0;
        read = 1;
    }
    return offset;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    int r = syscall(SYS_clock_gettime, id, ts);
    if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ns();
        ts->tv_sec = ns / 1000000000LL;
        ts->tv_nsec = ns % 1000000000LL;
    }
    return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    struct timespec ts;
    (void)tz;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
    if (tv) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return 0;
}

time_t time(time_t *t) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
"#;
