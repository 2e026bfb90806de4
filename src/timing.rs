//! Pure timing math: defaults derived from the ttl, the safety budget, lease validity,
//! the termination schedule, hold-min and backoff. Nothing here reads a clock; time
//! points are durations since an arbitrary origin (see [`crate::clock`]) and jitter is a
//! parameter, so every function is table-tested.
//!
//! The safety rule (see docs/design/lease.md): let `t_sent` be the time the
//! last successful acquire or renew request was *sent*. The server sets its expiry when
//! the request arrives, so no other client can acquire before `t_sent + ttl` on a clock
//! running at the same rate. We allow for clock-rate drift and call
//! `E = t_sent + ttl − drift(ttl)` the lease end. If renewals keep failing, the child gets
//! SIGTERM at `E − kill_after − margin` and SIGKILL at `E − margin`, so it is dead
//! before anyone else can hold the lock.

use std::time::Duration;

/// A point on the suspend-aware monotonic clock, as time since its origin.
pub type Point = Duration;

/// Clock drift allowance for a ttl: 1 % plus 2 ms (Redis expires with 1 ms precision).
pub fn drift(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

/// Default renewal interval: a third of the ttl.
pub fn default_renew_every(ttl: Duration) -> Duration {
    ttl / 3
}

/// Default grace between SIGTERM and SIGKILL: a sixth of the ttl, at most 5 s.
pub fn default_kill_after(ttl: Duration) -> Duration {
    (ttl / 6).min(Duration::from_secs(5))
}

/// Default per-node request timeout: a fifteenth of the ttl, at most 2 s; a twentieth
/// when a renewal attempt makes more requests (a replica's `WAIT` on a Cluster or
/// through Sentinel, and there the ask of a sentinel), so that two attempts still fit
/// the default budget.
pub fn default_node_timeout(ttl: Duration, requests: u32) -> Duration {
    let share = if requests > 1 { 20 } else { 15 };
    (ttl / share).min(Duration::from_secs(2))
}

/// Time kept in reserve for signal delivery and reaping on a loaded host: ttl/10, at
/// most 500 ms.
pub fn margin(ttl: Duration) -> Duration {
    (ttl / 10).min(Duration::from_millis(500))
}

/// The lease parameters of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub ttl: Duration,
    pub renew_every: Duration,
    pub node_timeout: Duration,
    pub kill_after: Duration,
    /// Requests one renewal attempt makes in turn, each within the node timeout: 1; 2
    /// on a Cluster (the renewal, a replica's `WAIT`); 3 through Sentinel (the ask of a
    /// sentinel too).
    pub requests: u32,
}

/// Why a budget cannot keep the child inside its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetError {
    RenewNotBelowTtl,
    DoesNotFit {
        needed: Duration,
        available: Duration,
    },
}

impl Budget {
    /// Checks that at least two renewal attempts fit before termination must start:
    /// `renew_every + 2 × requests × node_timeout ≤ ttl − drift − kill_after − margin`.
    pub fn check(&self) -> Result<(), BudgetError> {
        if self.renew_every >= self.ttl || self.renew_every.is_zero() {
            return Err(BudgetError::RenewNotBelowTtl);
        }
        let needed = self.renew_every + self.attempt() * 2;
        let available = self
            .ttl
            .saturating_sub(drift(self.ttl) + self.kill_after + margin(self.ttl));
        if needed > available {
            return Err(BudgetError::DoesNotFit { needed, available });
        }
        Ok(())
    }

    /// The longest one renewal attempt takes: its requests, each within the node
    /// timeout.
    pub fn attempt(&self) -> Duration {
        self.node_timeout * self.requests.max(1)
    }

    /// The lease end `E` for a lease whose last successful request was sent at `t_sent`.
    pub fn lease_end(&self, t_sent: Point) -> Point {
        lease_end(t_sent, self.ttl)
    }

    /// When to send SIGTERM if no renewal succeeds before then.
    pub fn term_at(&self, lease_end: Point) -> Point {
        lease_end.saturating_sub(self.kill_after + margin(self.ttl))
    }

    /// When to send SIGKILL if the child is still alive.
    pub fn kill_at(&self, lease_end: Point) -> Point {
        lease_end.saturating_sub(margin(self.ttl))
    }

    /// When the next renewal attempt is due, given the last success and the last attempt.
    pub fn next_renew(&self, t_sent: Point, last_attempt: Option<Point>) -> Point {
        let scheduled = t_sent + self.renew_every;
        match last_attempt {
            Some(at) if at >= scheduled => at + self.retry_delay(),
            _ => scheduled,
        }
    }

    /// Pause between failed renewal attempts: a quarter of the renewal interval, capped
    /// at 500 ms, so that several attempts fit before the SIGTERM point.
    pub fn retry_delay(&self) -> Duration {
        (self.renew_every / 4).min(Duration::from_millis(500))
    }
}

/// How long before a renewal is due a holder's wait for a request to stop ends: the
/// wait (a `BLPOP` on the connection the renewal goes through) must be over on the
/// server before the renewal arrives there, and Redis ends a blocked wait at its next
/// event-loop turn (up to 100 ms late at the default `hz 10`).
pub const LISTEN_MARGIN: Duration = Duration::from_millis(250);

/// The shortest wait for a request worth sending: closer to the renewal, the renewal
/// finds the request itself.
pub const LISTEN_MIN: Duration = Duration::from_millis(100);

/// How long a holder runs before it first waits for a request to stop: the wait moves
/// the holder's calls to a connection of their own and its release to a new one (see
/// `Node::hold_pop`), which a command that ends sooner should not pay for. A request
/// meanwhile waits in the list for the first pop.
pub const LISTEN_AFTER: Duration = Duration::from_millis(250);

/// Until when a holder waits for a request to stop at `now`, the next renewal due at
/// `next_renew`: [`LISTEN_MARGIN`] before it; `None` when that leaves less than
/// [`LISTEN_MIN`].
pub fn listen_until(now: Point, next_renew: Point) -> Option<Point> {
    let until = next_renew.checked_sub(LISTEN_MARGIN)?;
    (until >= now + LISTEN_MIN).then_some(until)
}

/// `--elect --on-exit resign`: how long a leader whose command exited by itself waits
/// before it contends again: two renewal intervals (a standby woken by the release takes
/// the lock well within them), at least 100ms, at most 30s.
pub fn resign_backoff(renew_every: Duration) -> Duration {
    (renew_every * 2).clamp(Duration::from_millis(100), Duration::from_secs(30))
}

/// `--elect --on-exit restart`: the pause before the `restarts`-th restart in a row of a
/// command that keeps exiting: 1s, doubling, at most 60s.
pub fn restart_backoff(restarts: u32) -> Duration {
    Duration::from_secs(1u64 << restarts.min(6)).min(Duration::from_secs(60))
}

/// A command that ran this long before it exited was not flapping: the restart back-off
/// starts over.
pub const RESTART_SETTLED: Duration = Duration::from_secs(60);

/// When the group guard sends the stop signal if the wrapper has not: a little after
/// the wrapper's own SIGTERM point (`term_at`), so that a wrapper that is running
/// signals the command once, and tells the guard it did, before the guard would
/// (a quarter of `--kill-after`, at most 250 ms, taken from the command's grace only
/// when the wrapper is stopped). The guard's SIGKILL stays at the lease's own point.
pub fn guard_term_at(term_at: Point, kill_after: Duration) -> Point {
    term_at + (kill_after / 4).min(Duration::from_millis(250))
}

/// A gap between two turns of the supervisor loop this long is a pause of the wrapper,
/// not a slow turn: the loop never sleeps longer than half of it
/// (`crate::clock::MAX_SLEEP`).
pub const PAUSE: Duration = Duration::from_millis(500);

/// When the loop last ran at `last_turn` and runs again at `now`, past the SIGTERM
/// point `term_at` it would have woken for: how long the wrapper was stopped (or
/// starved), if that gap is a pause ([`PAUSE`]) and it carried the lease past the
/// point; `None` when the loop ran before the point (renewals failed).
pub fn paused_past(last_turn: Point, now: Point, term_at: Point) -> Option<Duration> {
    let gap = now.saturating_sub(last_turn);
    (last_turn < term_at && term_at <= now && gap >= PAUSE).then_some(gap)
}

/// `E = t_sent + ttl − drift(ttl)`.
pub fn lease_end(t_sent: Point, ttl: Duration) -> Point {
    (t_sent + ttl).saturating_sub(drift(ttl))
}

/// Validity left after an acquire that took `elapsed`: `ttl − elapsed − drift`, or `None`
/// when nothing is left (the lock must then be treated as not acquired).
pub fn validity(ttl: Duration, elapsed: Duration) -> Option<Duration> {
    ttl.checked_sub(elapsed + drift(ttl))
        .filter(|left| !left.is_zero())
}

/// With `--hold-min`, how long the key must still live when the command has ended after
/// `held_for`; `None` means delete it now.
pub fn hold_remaining(hold_min: Duration, held_for: Duration) -> Option<Duration> {
    hold_min
        .checked_sub(held_for)
        .filter(|left| *left >= Duration::from_millis(1))
}

/// Safety-net polling delay while waiting for a busy lock: exponential from 50 ms to
/// 2 s, never past the holder's remaining ttl (the key may expire without a release
/// message), with ±25 % jitter (`jitter` in `[0, 1)`) so waiters do not move in step.
pub fn poll_delay(attempt: u32, holder_ttl_left: Option<Duration>, jitter: f64) -> Duration {
    let base = Duration::from_millis(50);
    let max = Duration::from_secs(2);
    let exp = base.saturating_mul(1u32 << attempt.min(10)).min(max);
    let exp = match holder_ttl_left {
        Some(left) => exp.min(left + Duration::from_millis(5)),
        None => exp,
    };
    let factor = 0.75 + 0.5 * jitter.clamp(0.0, 1.0);
    exp.mul_f64(factor).max(Duration::from_millis(1))
}

/// How long a waiter blocks before trying again without a wake-up: until the holder's
/// key can have expired (`holder_ttl_left`), plus 0–10 % (and 5 ms) of jitter so that
/// waiters do not all come back at the same instant; at least 1 ms.
pub fn until_expiry(holder_ttl_left: Duration, jitter: f64) -> Duration {
    let spread = holder_ttl_left.mul_f64(0.1 * jitter.clamp(0.0, 1.0));
    (holder_ttl_left + spread + Duration::from_millis(5)).max(Duration::from_millis(1))
}

/// The lock-delay of a run that took a lock on a server that may have restarted empty:
/// how long it holds the lock before starting its command, so that every lease granted
/// or renewed before the restart has ended (Chubby's and Consul's lock-delay, applied
/// only when needed). `uptime`: the server's `uptime_in_seconds` (whole seconds, rounded
/// down: it started at most that long ago); `since_answer`: how long ago it last
/// answered this run before a connection failed (`None`: a restart is known otherwise);
/// `bound`: the longest ttl a lease from before it can have had. A lease renewed at the
/// restart's instant at the latest expires `bound` after it, on the server's clock;
/// `drift(bound)` allows for this host's clock running at another rate. `None`: no
/// delay: the server was already up when it last answered (the same process), or it has
/// been up longer than any lease from before it could last.
pub fn lock_delay(
    uptime: Duration,
    since_answer: Option<Duration>,
    bound: Duration,
) -> Option<Duration> {
    if since_answer.is_some_and(|since| uptime >= since) {
        return None;
    }
    (bound + drift(bound))
        .checked_sub(uptime)
        .filter(|d| !d.is_zero())
}

/// `--splay`: how far into its slot a try waits: an offset in [0, `splay`) drawn from
/// the host's name, the lock's name and the slot's start (server ms). A host that fires
/// twice in one slot waits the same; the next slot draws again, so the host with the
/// smallest offset (the slot's winner) changes from slot to slot and no host is always
/// last; hosts spread over the window. FNV-1a, then a 64-bit finalizer (MurmurHash3's
/// `fmix64`): FNV's low bits change little for seeds that differ only in their last
/// bytes (web-1, web-2; consecutive slots). Stable across versions and machines (no
/// `std` hasher, whose output may change).
pub fn splay_offset(host: &[u8], name: &[u8], slot_ms: u64, splay: Duration) -> Duration {
    let window = splay.as_millis() as u64;
    if window == 0 {
        return Duration::ZERO;
    }
    let seed = [host, b"\0", name, b"\0", &slot_ms.to_be_bytes()];
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in seed.into_iter().flatten() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^= hash >> 33;
    Duration::from_millis(hash % window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elect_back_offs() {
        let ms = Duration::from_millis;
        assert_eq!(resign_backoff(ms(10)), ms(100));
        assert_eq!(resign_backoff(ms(1666)), ms(3332));
        assert_eq!(
            resign_backoff(Duration::from_secs(3600)),
            Duration::from_secs(30)
        );
        let waits: Vec<u64> = (0..9).map(|n| restart_backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn budget(ttl: u64, renew: u64, timeout: u64, kill: u64) -> Budget {
        Budget {
            ttl: ms(ttl),
            renew_every: ms(renew),
            node_timeout: ms(timeout),
            kill_after: ms(kill),
            requests: 1,
        }
    }

    #[test]
    fn guard_term_at_table() {
        // SIGTERM point, kill-after -> the guard's stop point
        for (term, kill, want) in [
            (10_000, 5_000, 10_250), // ttl 30 s: capped at 250 ms
            (10_000, 164, 10_041),   // ttl 1 s (kill-after 166 ms: 41.5 ms)
            (10_000, 0, 10_000),     // --kill-after 0
            (10_000, 1_000, 10_250),
        ] {
            assert_eq!(guard_term_at(ms(term), ms(kill)), ms(want), "{term} {kill}");
        }
    }

    #[test]
    fn paused_past_table() {
        // last turn, now, SIGTERM point -> paused for
        for (last, now, term, want) in [
            (1_000, 9_000, 2_000, Some(8_000)), // stopped 8 s across the point
            (1_000, 1_900, 2_000, None),        // not yet at the point
            (1_900, 2_100, 2_000, None),        // a turn of 200 ms: renewals failed
            (1_500, 2_000, 2_000, Some(500)),   // exactly a pause, at the point
            (2_500, 9_000, 2_000, None),        // the point was already behind it
            (1_000, 1_499, 1_200, None),        // just under a pause
        ] {
            assert_eq!(
                paused_past(ms(last), ms(now), ms(term)),
                want.map(ms),
                "{last} {now} {term}"
            );
        }
    }

    #[test]
    fn lock_delay_table() {
        let s = Duration::from_secs;
        // (uptime, last answered before the failure, bound) -> delay
        let cases = [
            // Restarted 0 s ago (rounded down), answered 2 s ago: a whole ttl + drift.
            (s(0), Some(s(2)), s(3), Some(ms(3032))),
            (s(1), Some(s(2)), s(3), Some(ms(2032))),
            // Up as long as the last answer is old (or longer): the same server.
            (s(2), Some(s(2)), s(3), None),
            (s(500), Some(s(1)), s(3), None),
            // Restarted, but longer ago than any lease could last.
            (s(4), Some(s(9)), s(3), None),
            // A restart known from its run ID.
            (s(1), None, s(30), Some(ms(29_302))),
            (s(31), None, s(30), None),
        ];
        for (uptime, since, bound, want) in cases {
            assert_eq!(
                lock_delay(uptime, since, bound),
                want,
                "{uptime:?} {since:?} {bound:?}"
            );
        }
    }

    #[test]
    fn drift_table() {
        for (ttl, want) in [(30_000, 302), (2_000, 22), (100, 3), (10_000, 102)] {
            assert_eq!(drift(ms(ttl)), ms(want), "ttl {ttl}");
        }
    }

    #[test]
    fn defaults_table() {
        // ttl, renew, kill_after, node_timeout, margin
        for (ttl, renew, kill, timeout, marg) in [
            (30_000, 10_000, 5_000, 2_000, 500),
            (2_000, 666, 333, 133, 200),
            (600_000, 200_000, 5_000, 2_000, 500),
            (1_000, 333, 166, 66, 100),
        ] {
            let t = ms(ttl);
            assert_eq!(default_renew_every(t).as_millis(), renew, "renew {ttl}");
            assert_eq!(default_kill_after(t).as_millis(), kill, "kill {ttl}");
            assert_eq!(
                default_node_timeout(t, 1).as_millis(),
                timeout,
                "timeout {ttl}"
            );
            assert_eq!(margin(t), ms(marg), "margin {ttl}");
        }
    }

    #[test]
    fn budget_check_table() {
        let ok = Ok(());
        let cases: &[(Budget, bool)] = &[
            (budget(30_000, 10_000, 2_000, 5_000), true),
            (budget(2_000, 500, 200, 300), true),
            (budget(2_000, 2_000, 200, 300), false), // renew == ttl
            (budget(2_000, 0, 200, 300), false),
            (budget(2_000, 1_500, 200, 300), false), // does not fit
            (budget(1_000, 950, 10, 10), false),
            (budget(10_000, 3_333, 666, 1_666), true),
        ];
        for (b, fits) in cases {
            assert_eq!(b.check() == ok, *fits, "{b:?}");
        }
    }

    #[test]
    fn defaults_always_fit_from_100ms() {
        for requests in [1, 3] {
            for ttl in (100..=120_000).step_by(37) {
                let t = ms(ttl);
                let b = Budget {
                    ttl: t,
                    renew_every: default_renew_every(t),
                    node_timeout: default_node_timeout(t, requests),
                    kill_after: default_kill_after(t),
                    requests,
                };
                assert_eq!(b.check(), Ok(()), "ttl {ttl} ms, {requests} requests");
            }
        }
    }

    #[test]
    fn three_requests_an_attempt_need_three_node_timeouts_each() {
        let one = budget(3_000, 1_000, 200, 500);
        let three = Budget { requests: 3, ..one };
        assert_eq!(one.check(), Ok(()));
        assert!(matches!(
            three.check(),
            Err(BudgetError::DoesNotFit { needed, .. }) if needed == ms(2_200)
        ));
    }

    #[test]
    fn termination_schedule_never_passes_lease_end() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..10_000 {
            let b = budget(
                rng.u64(100..120_000),
                rng.u64(1..60_000),
                rng.u64(1..5_000),
                rng.u64(0..10_000),
            );
            if b.check().is_err() {
                continue;
            }
            let sent = ms(rng.u64(0..1_000_000));
            let end = b.lease_end(sent);
            assert!(end < sent + b.ttl);
            assert!(b.term_at(end) <= b.kill_at(end));
            assert!(b.kill_at(end) < end);
            // two renewal attempts fit before the SIGTERM point
            let first = b.next_renew(sent, None);
            assert!(first + b.node_timeout * 2 <= b.term_at(end), "{b:?}");
        }
    }

    #[test]
    fn lease_end_table() {
        assert_eq!(lease_end(ms(1_000), ms(30_000)), ms(30_698));
        assert_eq!(lease_end(ms(0), ms(2_000)), ms(1_978));
        let b = budget(2_000, 500, 200, 300);
        assert_eq!(b.term_at(ms(1_978)), ms(1_478));
        assert_eq!(b.kill_at(ms(1_978)), ms(1_778));
    }

    #[test]
    fn a_wait_for_a_request_ends_before_the_renewal_is_due() {
        assert_eq!(listen_until(ms(0), ms(10_000)), Some(ms(9_750)));
        assert_eq!(listen_until(ms(9_650), ms(10_000)), Some(ms(9_750)));
        assert_eq!(listen_until(ms(9_651), ms(10_000)), None);
        assert_eq!(listen_until(ms(0), ms(200)), None);
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..10_000 {
            let (now, next) = (ms(rng.u64(0..100_000)), ms(rng.u64(0..100_000)));
            if let Some(until) = listen_until(now, next) {
                assert!(until + LISTEN_MARGIN <= next && until > now);
            }
        }
    }

    #[test]
    fn next_renew_table() {
        let b = budget(30_000, 10_000, 2_000, 5_000);
        assert_eq!(b.next_renew(ms(0), None), ms(10_000));
        assert_eq!(b.next_renew(ms(0), Some(ms(5))), ms(10_000));
        assert_eq!(b.next_renew(ms(0), Some(ms(10_000))), ms(10_500));
        assert_eq!(b.next_renew(ms(0), Some(ms(12_000))), ms(12_500));
        let small = budget(2_000, 600, 100, 300);
        assert_eq!(small.retry_delay(), ms(150));
    }

    #[test]
    fn validity_table() {
        assert_eq!(validity(ms(30_000), ms(10)), Some(ms(29_688)));
        assert_eq!(validity(ms(2_000), ms(1_978)), None);
        assert_eq!(validity(ms(2_000), ms(5_000)), None);
        assert_eq!(validity(ms(2_000), ms(1_977)), Some(ms(1)));
    }

    #[test]
    fn hold_remaining_table() {
        assert_eq!(hold_remaining(ms(50_000), ms(200)), Some(ms(49_800)));
        assert_eq!(hold_remaining(ms(50_000), ms(50_000)), None);
        assert_eq!(hold_remaining(ms(50_000), ms(60_000)), None);
        assert_eq!(hold_remaining(ms(0), ms(0)), None);
    }

    #[test]
    fn until_expiry_table() {
        assert_eq!(until_expiry(ms(1_000), 0.0), ms(1_005));
        assert_eq!(until_expiry(ms(1_000), 1.0), ms(1_105));
        assert_eq!(until_expiry(ms(0), 0.5), ms(5));
        assert!(until_expiry(ms(30_000), 0.5) < ms(33_006));
    }

    #[test]
    fn poll_delay_table() {
        assert_eq!(poll_delay(0, None, 0.5), ms(50));
        assert_eq!(poll_delay(1, None, 0.5), ms(100));
        assert_eq!(poll_delay(20, None, 0.5), ms(2_000));
        assert_eq!(poll_delay(20, None, 0.0), ms(1_500));
        assert_eq!(poll_delay(20, Some(ms(95)), 0.5), ms(100));
        assert!(poll_delay(3, None, 0.999) <= ms(500));
        assert!(poll_delay(0, Some(ms(0)), 0.0) >= ms(1));
    }

    const SLOT: u64 = 1_795_000_000_000;

    fn offset(host: &str, slot: u64) -> Duration {
        splay_offset(
            host.as_bytes(),
            b"job",
            SLOT + slot * 60_000,
            Duration::from_secs(6),
        )
    }

    #[test]
    fn a_splay_offset_is_stable_within_a_slot_and_spread_over_hosts() {
        let window = Duration::from_secs(6);
        assert_eq!(offset("web-1", 0), offset("web-1", 0), "twice in one slot");
        assert_ne!(offset("web-1", 0), offset("web-2", 0));
        assert_ne!(
            splay_offset(b"web-1", b"job", SLOT, window),
            splay_offset(b"web-1", b"other", SLOT, window),
            "another name"
        );
        assert_eq!(
            splay_offset(b"x", b"y", SLOT, Duration::ZERO),
            Duration::ZERO
        );
        for slot in [0, 1, 500] {
            let offsets: Vec<Duration> = (0..100)
                .map(|i| offset(&format!("web-{i}"), slot))
                .collect();
            assert!(offsets.iter().all(|o| *o < window));
            // 100 hosts over six 1-second buckets: every bucket used, none above a third.
            for second in 0..6 {
                let n = offsets.iter().filter(|o| o.as_secs() == second).count();
                assert!(
                    (5..=33).contains(&n),
                    "slot {slot}, second {second}: {n} of 100"
                );
            }
        }
    }

    /// The host of the smallest offset among `hosts` (the slot's winner) and of the
    /// largest (its last), for each of `slots` consecutive one-minute slots.
    fn first_and_last(hosts: usize, slots: u64) -> Vec<(usize, usize)> {
        (0..slots)
            .map(|slot| {
                let of = |h: &usize| offset(&format!("web-{h}"), slot);
                let first = (0..hosts).min_by_key(of).unwrap();
                let last = (0..hosts).max_by_key(of).unwrap();
                (first, last)
            })
            .collect()
    }

    #[test]
    fn a_splay_offset_changes_from_slot_to_slot_so_the_winner_rotates() {
        let slots: Vec<Duration> = (0..12).map(|s| offset("web-1", s)).collect();
        let mut distinct = slots.clone();
        distinct.sort();
        distinct.dedup();
        assert!(distinct.len() >= 10, "web-1's offsets: {slots:?}");
        // Ten hosts, 12 slots: at least 3 winners, none in more than half the slots.
        let twelve = first_and_last(10, 12);
        let mut winners: Vec<usize> = twelve.iter().map(|(f, _)| *f).collect();
        let most = (0..10)
            .map(|h| winners.iter().filter(|w| **w == h).count())
            .max();
        winners.sort();
        winners.dedup();
        assert!(winners.len() >= 3 && most <= Some(6), "{twelve:?}");
        // Over 1000 slots every host wins, and is last, between 5 % and 15 % of them.
        let many = first_and_last(10, 1000);
        for h in 0..10 {
            let wins = many.iter().filter(|(f, _)| *f == h).count();
            let lasts = many.iter().filter(|(_, l)| *l == h).count();
            assert!((50..=150).contains(&wins), "host {h} won {wins} of 1000");
            assert!(
                (50..=150).contains(&lasts),
                "host {h} was last {lasts} of 1000"
            );
        }
    }
}
