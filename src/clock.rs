//! The suspend-aware monotonic clock used for every lease deadline, and the wall clock
//! for what is only shown or recorded ([`wall_ms`]).
//!
//! Rust's `Instant` is `CLOCK_MONOTONIC` on Linux, which stops while the machine is
//! suspended; a laptop or VM that sleeps while holding a lease would believe no time had
//! passed. `CLOCK_BOOTTIME` keeps counting through suspend and never steps like wall time.
//! Timers still sleep on tokio's clock, so the supervisor wakes at least every
//! [`MAX_SLEEP`] and re-reads this clock (see `supervise`).

use std::time::Duration;

use nix::time::{ClockId, clock_gettime};

use crate::timing::Point;

/// The longest the supervisor sleeps before re-reading the clock.
pub const MAX_SLEEP: Duration = Duration::from_millis(250);

/// Now, on `CLOCK_BOOTTIME` (falling back to `CLOCK_MONOTONIC` where it is missing).
pub fn now() -> Point {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let id = ClockId::CLOCK_BOOTTIME;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let id = ClockId::CLOCK_MONOTONIC;
    let ts = clock_gettime(id).expect("clock_gettime on a monotonic clock cannot fail");
    Duration::new(ts.tv_sec() as u64, ts.tv_nsec() as u32)
}

/// Now on the wall clock, Unix milliseconds: for display and records only (metadata,
/// events), never for a deadline.
pub fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// How long to sleep on tokio's clock to reach `deadline`, capped at [`MAX_SLEEP`].
pub fn sleep_for(deadline: Point) -> Duration {
    deadline.saturating_sub(now()).min(MAX_SLEEP)
}
