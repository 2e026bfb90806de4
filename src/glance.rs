//! A first try's glance: at a fleet's minute almost every try loses (the lock is busy,
//! or the `--once-per` slot already ran), so a plain run's try that does not join the
//! waiters (a first try) first reads, in one pipeline of plain commands, what its
//! losing answer needs, and runs the acquire script only when the reads do not settle
//! the answer.
//!
//! Why: a Redis command called from Lua costs Redis several times the same command sent
//! by the client (the script's arguments become a table, each reply is converted to Lua
//! and back), and an `EVALSHA` costs more than its commands before it runs any. A busy
//! try through the acquire script cost Redis 7.7× the instructions of a raw client's
//! failing `SET NX` cycle; these reads 2.0×, and a skip's 1.4× (10.5× before, 207× at
//! a history of 1,000), whatever `--history` keeps (docs/benchmarks.md). A run that
//! takes the lock pays one round trip more.
//!
//! - A plain try: `GET` of the mode key and of the lock key, `PTTL` of the lock key,
//!   `HGETALL` of its metadata. The lock held by another token (a string), the mode
//!   absent or `shared`: busy, exactly the acquire script's answer to a try that does not
//!   wait (`{0, holder, pttl, meta}`: the script reads the metadata whenever the
//!   holder is new to the caller, and a first try knows none). A mode of another kind:
//!   `{-6, mode}`, as the script answers before its `SET`. Anything else (the lock free
//!   or ours, a key of another type: an error in its reply) goes to the script.
//! - A `--once-per` try: `TIME`, the history's newest [`RECORDS`] records (`LRANGE`)
//!   and `GET` of the lock key, read the way `completion::once_per` reads the history
//!   (newest first, a record that ended before the slot ends the scan): a run of the
//!   slot that exited 0 closes it (`{-4}`), a start mark whose token holds the lock is
//!   its run in progress (`{-7}`, for a try that may not wait for it), a run of the
//!   slot that vanished and was told already closes it too (`{-4}`, but with
//!   `--if-vanished rerun`); a try for a slot (`--splay` pins it) that is over is over
//!   (`{-11}`). Every other case (a vanished run not told yet, which its first try must
//!   tell; attempts to count; a record older than the newest few) goes to the script,
//!   whose answer is the full check. The scan never reads more than the history's
//!   newest records: a skip costs the same whatever `--history` keeps.
//!
//! The reads are a snapshot of a moment, not one atomic step: they grant nothing and
//! write nothing, and each answer they give is one the script would have given at the
//! moment of the reads (a busy lock whose metadata changed hands between two reads is
//! told with the metadata ignored: `Holder::from_held` reads only the holder's own).
//! Only for one node (one server, a Sentinel master, or a Cluster, where the reads go to
//! the owner of the name's slot; not several `--redis` nodes, whose answer is a vote),
//! a plain lock, no `--once-id`, and a try that does not join the waiters.

use redis::Value;

use crate::keys::LockKeys;
use crate::period::Period;
use crate::redis::command;
use crate::redis::reply::held;
use crate::scripts::acquire::{Acquired, Closed, Skip};

/// How many of the history's newest records a `--once-per` glance reads: the slot's
/// answer is in the newest one or two (its run's record or start mark).
pub const RECORDS: i64 = 4;

/// What a first try looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Glance<'a> {
    /// `--once-per`'s period (`None`: none): the slot of the server's `TIME`, by the
    /// same rule as the script's (`Period::slot_at`, a calendar slot in its zone).
    pub period: Option<&'a Period>,
    /// Whether the try may wait for the slot's run in progress (then the script decides).
    pub may_wait: bool,
    /// `--if-vanished rerun`: a vanished run opens its slot again (the script counts it).
    pub reruns: bool,
    /// The slot this try is for (its start, server ms; 0: the slot of now): `--splay`
    /// pins it, and a try past it is over (`{-11}`), as in the script.
    pub pin_ms: u64,
}

impl Glance<'_> {
    /// The reads, in one pipeline (errors kept in their place, see [`Glance::answer`];
    /// built in the Redis layer, `redis::command`).
    pub fn pipeline(&self, keys: &LockKeys) -> redis::Pipeline {
        match self.period {
            Some(_) => command::glance_once_per(&keys.history, RECORDS, &keys.lock),
            None => command::glance_plain(&keys.mode, &keys.lock, &keys.meta),
        }
    }

    /// The answer the reads make certain for `token`'s try, or `None`: the acquire
    /// script decides.
    pub fn answer(&self, replies: Vec<Value>, token: &str) -> Option<Acquired> {
        if self.period.is_some() {
            let [time, records, lock] = <[Value; 3]>::try_from(replies).ok()?;
            return self.closed(time, records, lock, token);
        }
        let [mode, lock, pttl, meta] = <[Value; 4]>::try_from(replies).ok()?;
        match mode {
            Value::Nil => {}
            Value::BulkString(mode) if mode == b"shared" => {}
            Value::BulkString(mode) => {
                return Some(Acquired::OtherKind(
                    String::from_utf8_lossy(&mode).into_owned(),
                ));
            }
            _ => return None,
        }
        match (&lock, &pttl) {
            (Value::BulkString(holder), Value::Int(_)) if holder != token.as_bytes() => {}
            _ => return None,
        }
        let held = held(&mut [lock, pttl, meta].into_iter());
        Some(Acquired::Busy {
            held,
            place: None,
            wake: Vec::new(),
        })
    }

    /// A `--once-per` slot closed by its run (ended with 0, or in progress), as
    /// `completion::once_per` finds it among the newest records; `None` when they do
    /// not say.
    fn closed(&self, time: Value, records: Value, lock: Value, token: &str) -> Option<Acquired> {
        let now_ms = server_ms(time)?;
        let slot = self.period?.slot_at(now_ms).start_ms;
        if self.pin_ms > 0 && slot != self.pin_ms {
            return Some(Acquired::Skipped(Skip {
                slot_ms: self.pin_ms,
                why: Closed::SlotOver,
                record: Vec::new(),
                now_ms: 0,
                told: false,
            }));
        }
        let Value::Array(records) = records else {
            return None;
        };
        let holder = match lock {
            Value::BulkString(holder) => Some(holder),
            Value::Nil => None,
            _ => return None,
        };
        for record in records {
            let Value::BulkString(text) = record else {
                return None;
            };
            match self.read(&text, slot, holder.as_deref(), token) {
                Read::Next => {}
                Read::End => return None,
                Read::Closes(why) => {
                    let now_ms = if why == Closed::InProgress { now_ms } else { 0 };
                    return Some(Acquired::Skipped(Skip {
                        slot_ms: slot,
                        why,
                        record: text,
                        now_ms,
                        told: false,
                    }));
                }
            }
        }
        None
    }

    /// What one record (newest first) says of the slot starting at `slot`, the lock
    /// held by `holder`, for `token`'s try: the rules of `completion::once_per`.
    fn read(&self, text: &[u8], slot: u64, holder: Option<&[u8]>, token: &str) -> Read {
        // A record that is not a run's (not JSON, no start) is passed over.
        let Ok(run) = serde_json::from_slice::<serde_json::Value>(text) else {
            return Read::Next;
        };
        let Some(start_ms) = run.get("start_ms").and_then(|s| s.as_f64()) else {
            return Read::Next;
        };
        let number = |name: &str| run.get(name).and_then(|n| n.as_f64());
        let flag = |name: &str, value: bool| run.get(name) == Some(&serde_json::Value::Bool(value));
        if number("end_ms").is_some_and(|e| e < slot as f64) {
            return Read::End;
        }
        let run_token = run.get("token").and_then(|t| t.as_str());
        if start_ms < slot as f64 || run_token == Some(token) {
            return Read::Next;
        }
        if !flag("running", true) {
            // A run of the job (a --once-per run's record says its period): the rules
            // of `completion::job`; another run of the name is passed over.
            let job = number("once_per_ms").is_some()
                || run
                    .get("once_per")
                    .is_some_and(serde_json::Value::is_string);
            return match number("status") {
                Some(0.0) if job => Read::Closes(Closed::Ran),
                _ if job && flag("told", true) && !self.reruns => Read::Closes(Closed::Ran),
                // A failed attempt, or not the job's: the scan goes on (the script
                // counts an attempt).
                _ => Read::Next,
            };
        }
        let holds = run_token.is_some_and(|t| holder == Some(t.as_bytes()));
        match (holds, flag("started", false)) {
            (true, _) if self.may_wait => Read::End,
            (true, _) => Read::Closes(Closed::InProgress),
            // A grant whose command never started: no start, the scan goes on.
            (false, true) => Read::Next,
            // Vanished, and told already: it closes the slot, as the script answers
            // (`{-4, slot, record, 0, 0}`) without `--if-vanished rerun`.
            (false, false) if flag("told", true) && !self.reruns => Read::Closes(Closed::Ran),
            // Vanished and not told yet (its first try tells it), or counted as an
            // attempt: the script's.
            (false, false) => Read::End,
        }
    }
}

/// What one history record tells a glance.
enum Read {
    /// Nothing for this slot: the next record.
    Next,
    /// The script decides (the scan is over, or the record needs it).
    End,
    /// The slot is closed for this try, by this record.
    Closes(Closed),
}

/// A `TIME` reply in milliseconds (seconds and microseconds, as bulk strings).
fn server_ms(time: Value) -> Option<u64> {
    let Value::Array(parts) = time else {
        return None;
    };
    let mut numbers = parts.into_iter().map(|p| match p {
        Value::BulkString(b) => std::str::from_utf8(&b).ok()?.parse::<u64>().ok(),
        _ => None,
    });
    let (secs, micros) = (numbers.next()??, numbers.next()??);
    Some(secs * 1000 + micros / 1000)
}

#[cfg(test)]
mod tests;
