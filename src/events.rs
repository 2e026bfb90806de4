//! Lifecycle events for monitoring, one JSON object per line (`--events FILE`, `-` for
//! stderr): `waiting`, `acquired`, `renewed`, `renew_failed`, `lost`, `released`,
//! `exited`, `skipped`, `preempted`, `vanished`, `followed`, `unacknowledged` ([`Event`]). Every line has `ts_ms` (wall clock, Unix milliseconds), `event` and
//! `name`; the other fields depend on the event (docs/operations/events.md). Keys come sorted.
//!
//! Lines are handed to a writer thread through a channel, so a slow file or a full
//! pipe never blocks the supervisor loop; closing the sink waits for the thread to
//! write what it was given. Each line, newline included, is one `write(2)` on a file
//! opened with `O_APPEND`, so runs sharing one file never tear each other's lines.

use std::io::Write;
use std::path::Path;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Map, Value};

/// A lifecycle event: its name in the `event` field (README, "Events"; the outcome
/// table in `outcome.rs` says which event tells each way a run ends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Waiting,
    Acquired,
    Renewed,
    RenewFailed,
    Lost,
    Released,
    Exited,
    Skipped,
    Preempted,
    /// `--elect`: a term begins (the lock is taken, the command starts).
    Elected,
    /// `--elect`: a term ends (lost, the command exited, or the wrapper was stopped).
    Deposed,
    /// A run that vanished (started, never ended, its lease gone), told by the one try
    /// that found it untold (`--once-per`, `--once-id`).
    Vanished,
    /// Through Sentinel, the holder followed its master to another server (a
    /// switchover or failover) and renews and releases there.
    Followed,
    /// A grant or renewal that no replica acknowledged in time (`WAIT`), once per
    /// master: a crash failover could lose the lock.
    Unacknowledged,
    /// A run holds its names without starting its command while any lease from before
    /// a server's restart may last (see `run/lock_delay.rs`).
    LockDelay,
}

impl Event {
    /// The `event` field's value.
    pub fn name(self) -> &'static str {
        match self {
            Event::Waiting => "waiting",
            Event::Acquired => "acquired",
            Event::Renewed => "renewed",
            Event::RenewFailed => "renew_failed",
            Event::Lost => "lost",
            Event::Released => "released",
            Event::Exited => "exited",
            Event::Skipped => "skipped",
            Event::Preempted => "preempted",
            Event::Elected => "elected",
            Event::Deposed => "deposed",
            Event::Vanished => "vanished",
            Event::Followed => "followed",
            Event::Unacknowledged => "unacknowledged",
            Event::LockDelay => "lock_delay",
        }
    }
}

/// Where events go.
pub struct EventSink {
    tx: Mutex<Option<Sender<String>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl EventSink {
    /// Opens `path` for appending (`-`: stderr) and starts the writer thread.
    pub fn open(path: &Path) -> std::io::Result<Arc<EventSink>> {
        let mut out: Box<dyn Write + Send> = if path.as_os_str() == "-" {
            Box::new(std::io::stderr())
        } else {
            Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            )
        };
        let (tx, rx) = channel::<String>();
        let writer = std::thread::Builder::new()
            .name("events".into())
            .spawn(move || {
                for mut line in rx {
                    // One write(2) per line: with O_APPEND a line lands whole even
                    // when several runs append to one file.
                    line.push('\n');
                    let _ = out.write_all(line.as_bytes());
                    let _ = out.flush();
                }
            })?;
        Ok(Arc::new(EventSink {
            tx: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
        }))
    }

    /// Queues one event; `fields` (an object) joins `ts_ms`, `event` and `name`.
    pub fn emit(&self, event: Event, name: &str, fields: Value) {
        let mut line = match fields {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        line.insert("ts_ms".into(), crate::clock::wall_ms().into());
        line.insert("event".into(), event.name().into());
        line.insert("name".into(), name.into());
        if let Some(tx) = self.tx.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            let _ = tx.send(Value::Object(line).to_string());
        }
    }

    /// Stops taking events and waits until the writer has written those it has.
    pub fn close(&self) {
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(writer) = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = writer.join();
        }
    }
}
