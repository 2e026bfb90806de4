//! `redlock-run` / `redlock run` from a checked configuration to an exit status, as
//! named stages that read top to bottom ([`stages`]): find the command and take over
//! the signals, queue on this host, connect, leave out the names an enclosing run
//! holds (running at once when it holds them all), then one term (`term.rs`: take the
//! names, run the command under the supervisor, release, report). Each stage returns a
//! [`Step`]: what the next stage needs, or the [`End`] of the run. A run that does not
//! start its command leaves no lock behind.
//!
//! A run holds a set of leases, one name being a set of one; each per-name question is
//! written once and asked of every lease:
//! - nested (is this name held by an enclosing run?): `nested.rs`, the name's kind
//!   saying where its token holds it (`kinds::LockKind::holding`);
//! - take: `term::take` for one name (it waits as its kind waits), `set::take_all` for
//!   several (all or nothing, never a name held while waiting);
//! - announce, the signal check before the start, the start record, the ready file,
//!   the command's environment (`command.rs`: each name's token, fence and slot), the
//!   release and its record (`release.rs`), the `exited` event: `term.rs`, over every
//!   lease;
//! - renewal, preempt (a wait on every name that can be asked), loss, `--max-hold` and
//!   the lines that name the name: `supervise.rs`, over every lease.
//!
//! - `term.rs`: one term: take, start, supervise, finish;
//! - `elect.rs`: `--elect`, a loop of terms (a hot standby);
//! - `command.rs`: the command's start under the lock's environment and its supervision;
//! - `nested.rs`: a run inside a holder of its own names;
//! - `set.rs`: taking several names (`--key A --key B`): all or nothing, never a name
//!   held while waiting;
//! - `lock_delay.rs`: after a server restarted empty, the command starts only once every
//!   lease from before the restart has ended (the names held and renewed meanwhile);
//! - `release.rs`: the release with retries, the status it makes, the `released` event;
//! - `vanished.rs`: a vanished run told once, by the try whose acquire found it untold.

mod command;
mod elect;
mod lock_delay;
mod nested;
mod release;
mod set;
mod splay;
mod term;
mod vanished;

use std::path::PathBuf;

use nix::sys::signal::Signal;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::child;
use crate::config::{RunConfig, Wait};
use crate::error::{Error, Result};
use crate::exit;
use crate::lease::{Lease, new_token};
use crate::policy::Mode;
use crate::report::Reporter;
use crate::wait::{self, Connected, Entered, Head, LocalQueue, Patience, Progress};

type Signals = UnboundedReceiver<Signal>;

/// How a run ends before its last stage: with this exit status (busy, interrupted, a
/// nested run's command), or with an error (its kind decides the status).
pub enum End {
    Status(u8),
    Failed(Error),
}

impl From<Error> for End {
    fn from(e: Error) -> End {
        End::Failed(e)
    }
}

/// What a stage hands to the next, or how the run ends there.
type Step<T> = std::result::Result<T, End>;

/// What every stage of a run shares.
struct Run<'r> {
    config: RunConfig,
    /// The command's program, found before anything is asked of Redis.
    program: PathBuf,
    signals: Signals,
    patience: Patience,
    /// When the run started: what it waited, all levels told, is measured from here.
    started: crate::timing::Point,
    report: &'r Reporter,
}

/// Runs the wrapper; returns the exit status.
pub async fn run(config: RunConfig, report: &Reporter) -> Result<u8> {
    match stages(config, report).await {
        Ok(status) | Err(End::Status(status)) => Ok(status),
        Err(End::Failed(e)) => Err(e),
    }
}

/// The run, stage by stage.
async fn stages(config: RunConfig, report: &Reporter) -> Step<u8> {
    let mut run = Run::start(config, report)?;
    let head = run.queue_locally().await?;
    let slot = splay::splay(&mut run).await?;
    let lease = run.connect().await?;
    let mut leases = nested::leases(&mut run, lease).await?;
    if let Some(slot) = slot {
        leases[0].pin_slot(slot);
    }
    if run.config.policy.elect.is_some() {
        let lease = leases.into_iter().next().expect("a run has a name");
        return elect::elect(&mut run, lease, head).await;
    }
    term::term(&mut run, &mut leases, head).await
}

impl<'r> Run<'r> {
    /// How long the run has waited for the lock, in its host's queue and in Redis
    /// (`None` for a run that may not wait).
    fn waited(&self) -> Option<std::time::Duration> {
        (self.config.wait != Wait::For(std::time::Duration::ZERO))
            .then(|| crate::clock::now().saturating_sub(self.started))
    }

    /// Finds the command, takes over the forwarded signals and makes the wrapper the
    /// subreaper of what the command leaves behind.
    fn start(config: RunConfig, report: &'r Reporter) -> Result<Run<'r>> {
        let program = child::resolve(&config.command[0])?;
        let signals = crate::signals::listen()
            .map_err(|e| Error::internal(format!("cannot install signal handlers: {e}")))?;
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let _ = nix::sys::prctl::set_child_subreaper(true);
        // What the host keeps of its servers (a Cluster's slot map, each server's run
        // ID) is kept in its local directory, for its next runs (what the directory's
        // trouble is, the local queue says).
        let silent = Reporter::new("redlock-run", true, false);
        if let Ok(Some(dir)) = wait::resolve_dir(&config.local, &silent) {
            crate::redis::kept::keep_in(dir);
        }
        Ok(Run {
            patience: Patience::new(config.wait),
            started: crate::clock::now(),
            config,
            program,
            signals,
            report,
        })
    }

    /// Waits in this host's local queue until this run is the host's head (the one
    /// that contends in Redis); `None`: it goes to Redis directly (no local queue for
    /// `--wait 0`, `--fair`, a nested run, `--no-local-queue` or no usable directory, or
    /// a head that does not progress). A wait that ran out there leaves one Redis try.
    async fn queue_locally(&mut self) -> Step<Option<Head>> {
        let (config, report) = (&self.config, self.report);
        let uses = config.kind().rules().uses_local_queue() && config.also.is_empty();
        if !self.patience.allows_waiting() || !uses || nested::is_nested(config) {
            return Ok(None);
        }
        let Some(dir) = wait::resolve_dir(&config.local, report)? else {
            return Ok(None);
        };
        let slots = config.kind().rules().slots();
        let queue = LocalQueue::new(&dir, &config.keys, &config.conn.urls, slots);
        let name = config.keys.display_name();
        let mut progress = Progress::new(report, name.clone(), self.chatty());
        let entered = queue.enter(&self.patience, &mut progress, &mut self.signals);
        let entered = entered.await?;
        progress.ended();
        match entered {
            Entered::Head(head) => {
                if head.waited {
                    report.verbose(|| format!("first of this host for {name}; trying Redis"));
                }
                Ok(Some(head))
            }
            Entered::Unavailable(why) => {
                report.verbose(|| format!("not queueing on this host: {why}"));
                Ok(None)
            }
            // One Redis try decides, and its busy line names the holder as it is now.
            Entered::TimedOut => {
                self.patience = Patience::new(Wait::For(std::time::Duration::ZERO));
                Ok(None)
            }
            Entered::HeadStalled(why) => {
                report.verbose(|| format!("{why}; waiting in Redis directly"));
                Ok(None)
            }
            Entered::Interrupted(sig) => Err(self.interrupted_while_waiting(sig)),
        }
    }

    /// Connects to the nodes (retried within `--wait`) and builds the lease over them.
    async fn connect(&mut self) -> Step<Lease> {
        let (keys, mode) = (self.config.keys.clone(), self.config.policy.mode);
        self.connect_as(keys, mode).await
    }

    /// Connects to the nodes and builds the lease of `keys`, a lock of `mode`, with a
    /// token of its own.
    async fn connect_as(&mut self, keys: crate::keys::LockKeys, mode: Mode) -> Step<Lease> {
        let config = &self.config;
        let timeout = config.budget.node_timeout;
        let urls = &config.conn.urls;
        let connected = wait::connect(
            urls,
            timeout,
            &self.patience,
            &mut self.signals,
            self.report,
        );
        match connected.await? {
            Connected::Up(nodes) => Ok(self.lease_over(nodes, keys, mode)),
            Connected::Interrupted(sig) => Err(self.interrupted_while_waiting(sig)),
        }
    }

    /// The lease of `keys`, a lock of `mode`, with a token of its own, over `nodes`
    /// (the names of a run share the nodes' connections).
    fn lease_over(
        &self,
        nodes: crate::quorum::Nodes,
        keys: crate::keys::LockKeys,
        mode: Mode,
    ) -> Lease {
        self.lease_as(nodes, keys, mode, new_token(), self.config.budget.ttl)
    }

    /// The lease of `keys`, a lock of `mode`, with `token`, renewed to `ttl`, over
    /// `nodes` (a nested run's lease of a name its enclosing run holds has that run's).
    fn lease_as(
        &self,
        nodes: crate::quorum::Nodes,
        keys: crate::keys::LockKeys,
        mode: Mode,
        token: String,
        ttl: std::time::Duration,
    ) -> Lease {
        let config = &self.config;
        Lease::new(nodes, keys, ttl, token)
            .completion(config.policy.completion.clone())
            .retain(config.retain)
            // An `--elect` term, an `--once-id` run, is a record from its start: one
            // whose wrapper dies is read as vanished (see `scripts::started`).
            .pushes_mark(
                (config.policy.elect.is_some() || config.policy.completion.once_id.is_some())
                    && config.history > 0,
            )
            .mode(mode)
            .newest(
                config.policy.newest.and_then(|n| n.order_key),
                config.policy.newest.is_some_and(|n| n.preempts()),
            )
    }

    /// Whether waiting may be reported off a terminal (see `wait/progress.rs`): not
    /// with `--busy-exit-code 0`, nor for a `--once-per` or `--once-id` run, whose wait
    /// for its slot's or ID's run is the fleet's ordinary coordination (cron mails what
    /// it prints), nor for an `--elect` standby, which says each term's start and end
    /// instead of a line a minute in the journal; always with `--verbose`.
    fn chatty(&self) -> bool {
        let completion = &self.config.policy.completion;
        let coordinated = completion.once_per.is_some()
            || completion.once_id.is_some()
            || self.config.policy.elect.is_some();
        (self.config.busy_code != 0 && !coordinated) || self.report.verbose
    }

    /// The run is busy on `lease`'s name (it may not wait, or its wait ran out): says
    /// who holds it and ends the run with the busy status.
    fn busy(&self, lease: &Lease, holder: &crate::holder::Holder) -> End {
        let name = lease.keys().display_name();
        if let Some(slot_ms) = self.earlier_slots_run(holder) {
            return self.lost_slot(&name, holder, slot_ms);
        }
        let busy = (self.config.busy_code, self.waited());
        wait::busy_note(&name, lease.limit(), holder, busy, self.report);
        End::Status(self.config.busy_code)
    }

    /// `--once-per`: the start of this try's slot when the holder took the lock before
    /// it (a run of an earlier slot whose lease reaches into this one: a crashed winner,
    /// or a long job). The slot's own run in progress is answered by the script (in
    /// progress), never busy.
    fn earlier_slots_run(&self, holder: &crate::holder::Holder) -> Option<u64> {
        let period = self.config.policy.completion.once_per.as_ref()?;
        let slot = period.slot_at(crate::clock::wall_ms()).start_ms;
        holder.since_ms.filter(|since| *since < slot).map(|_| slot)
    }

    /// A try that finds an earlier slot's run still holding the lock: its slot gets no
    /// run, which is counted (the `skipped` event, reason `earlier_run_holds`, and so
    /// the metrics) but not said on every host of the fleet: the earlier run is told
    /// once, by the slot after its lease (see `vanished.rs`). With `--verbose`, a line.
    fn lost_slot(&self, name: &str, holder: &crate::holder::Holder, slot_ms: u64) -> End {
        let report = self.report;
        report.verbose(|| {
            format!(
                "lock {name} is held by a run of an earlier slot ({}); this slot gets no run",
                holder.describe(crate::clock::wall_ms())
            )
        });
        report.event(
            crate::events::Event::Skipped,
            name,
            serde_json::json!({
                "reason": "earlier_run_holds",
                "slot_start_ms": slot_ms,
                "holder": holder,
            }),
        );
        End::Status(self.config.busy_code)
    }

    /// A signal ended the wait: nothing was run; the status is 128+N.
    fn interrupted_while_waiting(&self, sig: Signal) -> End {
        self.report.note(&format!(
            "interrupted by {sig} while waiting; nothing was run"
        ));
        End::Status(exit::from_signal(sig as i32))
    }
}
