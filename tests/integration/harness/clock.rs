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
