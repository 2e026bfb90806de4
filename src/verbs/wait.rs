//! `redlock wait NAME [--timeout D]`: block until a lock is free, without taking it
//! ("deploy after the migration finishes"); a semaphore is free when no slot is held. It waits the way a waiter does: it joins
//! the lock's waiters and blocks on the wake list, so the release wakes it and it costs
//! Redis what a waiter costs; its safety net is the holder's time to live. A wake-up it
//! pops may have been meant for a run waiting to acquire: when it finds the lock free
//! after one, it hands one on if someone else still waits. It returns only when the
//! lock is free and no run waiting to acquire was woken to take it: when others wait,
//! it gives them [`HANDOVER_GRACE`] to take the lock, and goes on waiting if one does.

use nix::sys::signal::Signal;
use tokio::sync::mpsc::UnboundedReceiver;

use super::open;
use super::state::read;
use crate::clock::wall_ms;
use crate::config::{DEFAULT_TTL, WaitConfig};
use crate::error::{Error, Result};
use crate::exit::{self, Code};
use crate::keys::LockKeys;
use crate::lease::{hand_on, leave_waiters, new_token};
use crate::quorum::Nodes;
use crate::report::{Reporter, human};
use crate::scripts::waiters::{self, Watched};
use crate::timing;
use crate::wait::{Patience, pop_until};

pub async fn run(config: WaitConfig, report: &Reporter) -> Result<u8> {
    let report = Reporter {
        quiet: config.quiet,
        ..report.clone()
    };
    let mut signals = crate::signals::listen()
        .map_err(|e| Error::internal(format!("cannot install signal handlers: {e}")))?;
    let nodes = open(&config.conn, DEFAULT_TTL).await?;
    let watcher = Watcher {
        nodes: &nodes,
        keys: &config.keys,
        token: new_token(),
        patience: Patience::new(config.timeout),
        woken: std::cell::Cell::new(false),
    };
    let result = watcher.watch(&mut signals, &report).await;
    if !matches!(result, Ok(0)) || !watcher.woken.get() {
        watcher.leave().await;
    }
    result
}

/// How long a free lock is watched, when runs wait to acquire it, for one of them to
/// take it: a woken waiter takes it within a round trip, a release's backup waiter
/// after its grace (700 ms, see `wait`).
const HANDOVER_GRACE: std::time::Duration = std::time::Duration::from_millis(1000);

/// One `redlock wait`.
struct Watcher<'a> {
    nodes: &'a Nodes,
    keys: &'a LockKeys,
    /// Its entry in the waiters set.
    token: String,
    patience: Patience,
    /// Whether the last block ended with a wake-up popped.
    woken: std::cell::Cell<bool>,
}

impl Watcher<'_> {
    async fn watch(
        &self,
        signals: &mut UnboundedReceiver<Signal>,
        report: &Reporter,
    ) -> Result<u8> {
        loop {
            let state = read(self.nodes, self.keys).await?;
            // A semaphore is free when no slot is held; the wait watches a held slot.
            let held_slot = state
                .slots
                .iter()
                .find(|s| s.holder.is_some())
                .map_or(1, |s| s.slot);
            let Some(holder) = state.holder else {
                if self.woken.get() {
                    self.hand_on().await;
                    self.woken.set(false);
                }
                if self.taken_by_a_waiter(held_slot).await? {
                    continue;
                }
                return Ok(0);
            };
            let Some(left) = self.patience.left() else {
                report.note(&format!(
                    "lock {} is still held by {} after {}",
                    self.keys.display_name(),
                    holder.describe(wall_ms()),
                    human(self.patience.waited())
                ));
                return Ok(Code::Busy.value());
            };
            let nap = holder
                .ttl_left
                .map_or(std::time::Duration::from_secs(2), |ttl| {
                    timing::until_expiry(ttl, fastrand::f64())
                })
                .min(left);
            let until = crate::clock::now() + nap;
            let slot = self.keys.for_slot(held_slot);
            tokio::select! {
                _ = self.block(&slot, until) => {}
                Some(sig) = signals.recv() => {
                    if crate::signals::ends_wait(sig) {
                        return Ok(exit::from_signal(sig as i32));
                    }
                }
            }
        }
    }

    /// Joins the waiters on the primary node and blocks on its wake list until
    /// `until`, while `slot` (a held lock key: the lock, or a semaphore's held slot) is
    /// held; a wake-up it takes is handed on. Without a primary, sleeps.
    async fn block(&self, slot: &LockKeys, until: timing::Point) {
        let Some(primary) = self.nodes.primary() else {
            tokio::time::sleep(until.saturating_sub(crate::clock::now())).await;
            return;
        };
        let heartbeat = until.saturating_sub(crate::clock::now())
            + self.nodes.timeout() * 2
            + std::time::Duration::from_secs(1);
        let call = waiters::watch(slot, &self.token, heartbeat.as_millis() as u64);
        match primary
            .run_idempotent::<redis::Value>(&call)
            .await
            .map(waiters::decode_watch)
        {
            Ok(Some(Watched::Held)) => {}
            // Free (or gone) meanwhile, or an error: read the state again at once.
            _ => {
                self.woken.set(false);
                return;
            }
        }
        let woke = matches!(
            pop_until(primary, &self.keys.wake, until).await,
            Ok(Some(_))
        );
        self.woken.set(woke);
    }

    /// The lock is free: whether a run waiting to acquire it takes it within
    /// [`HANDOVER_GRACE`] (then this wait goes on until that run releases it). Nobody
    /// else waiting: free for good, at once.
    async fn taken_by_a_waiter(&self, slot: u32) -> Result<bool> {
        let Some(primary) = self.nodes.primary() else {
            return Ok(false);
        };
        let keys = self.keys.for_slot(slot);
        let call = waiters::watch(&keys, &self.token, 1);
        let others = match primary.run_idempotent::<redis::Value>(&call).await {
            Ok(value) => match waiters::decode_watch(value) {
                Some(Watched::Free { others }) => others,
                // Taken since the read: wait for its release.
                Some(Watched::Held) => return Ok(true),
                _ => 0,
            },
            Err(_) => 0,
        };
        if others == 0 {
            return Ok(false);
        }
        let until = crate::clock::now() + HANDOVER_GRACE;
        while crate::clock::now() < until {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            if read(self.nodes, self.keys).await?.holder.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Leaves the waiters, handing the wake-up it took on to whoever else waits.
    async fn hand_on(&self) {
        hand_on(self.nodes, self.keys, &self.token).await;
    }

    /// Leaves the waiters (best effort: the entry expires with its heartbeat anyway).
    async fn leave(&self) {
        leave_waiters(self.nodes, self.keys, &self.token).await;
    }
}
