//! Decoding replies into plain parts: the scripts' replies (see [`super::scripts`] for
//! their shapes) as small enums of bytes and numbers. This layer knows nothing of
//! holders or quorums: the parts go up to the lease and the verbs, which build their
//! own types from them.

use redis::Value;

/// Field/value pairs of a metadata hash (HGETALL).
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// The lock's value, time to live and metadata as a script read them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub token: Vec<u8>,
    /// PTTL in milliseconds (-1: no expiry).
    pub pttl_ms: i64,
    pub meta: Pairs,
}

/// The ACQUIRE script's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// Taken now, or already ours, with the fencing number (0: unknown) and the
    /// server's time in ms when it was asked for (`--once-per`; else 0).
    Yes { fence: i64, now_ms: i64, slot: i64 },
    /// The `--once-per` slot starting at `slot_ms` already had a successful run: this
    /// history record.
    AlreadyRan { slot_ms: i64, record: Vec<u8> },
    /// Held by another token; in a fair queue, this waiter's place (1-based; 0: not in
    /// it) and the queue's length.
    Busy {
        held: Held,
        place: Option<(u64, u64)>,
    },
    /// The lock key holds a value of this other type.
    NotALock(String),
    /// The metadata key holds a value of this other type (not a hash).
    ForeignMeta(String),
    /// The fence counter holds a value of this other type (or not a number).
    ForeignFence(String),
    /// The history key holds a value of this other type (not a list).
    ForeignHistory(String),
    /// The name is in use as another kind of lock: the mode key's value (`limit 3`,
    /// `fair`), or `plain`.
    OtherKind(String),
}

/// The INSPECT script's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inspected {
    Free,
    Held(Held),
    NotALock(String),
}

/// The FORCE_RELEASE script's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForceReleased {
    Free,
    /// Removed; the token and metadata that were there (no ttl).
    Removed(Held),
    NotALock(String),
}

/// Decodes an ACQUIRE reply; `None` when it has another shape.
pub fn acquired(value: Value) -> Option<Acquired> {
    let mut items = array(value)?;
    match int(items.next())? {
        1 | 2 => Some(Acquired::Yes {
            fence: int(items.next()).unwrap_or(0),
            now_ms: int(items.next()).unwrap_or(0),
            slot: int(items.next()).unwrap_or(1),
        }),
        -4 => Some(Acquired::AlreadyRan {
            slot_ms: int(items.next())?,
            record: bytes(items.next()),
        }),
        -5 => Some(Acquired::ForeignHistory(string(items.next()))),
        -6 => Some(Acquired::OtherKind(string(items.next()))),
        -1 => Some(Acquired::NotALock(string(items.next()))),
        -2 => Some(Acquired::ForeignMeta(string(items.next()))),
        -3 => Some(Acquired::ForeignFence(string(items.next()))),
        0 => {
            let held = held(&mut items);
            let place = int(items.next()).zip(int(items.next()));
            let place = place.map(|(p, n)| (p.max(0) as u64, n.max(0) as u64));
            Some(Acquired::Busy { held, place })
        }
        _ => None,
    }
}

/// Decodes an INSPECT reply; `None` when it has another shape.
pub fn inspected(value: Value) -> Option<Inspected> {
    let mut items = array(value)?;
    match string(items.next()).as_str() {
        "none" => Some(Inspected::Free),
        "string" => Some(Inspected::Held(held(&mut items))),
        "" => None,
        other => Some(Inspected::NotALock(other.to_string())),
    }
}

/// Decodes a FORCE_RELEASE reply; `None` when it has another shape.
pub fn force_released(value: Value) -> Option<ForceReleased> {
    let mut items = array(value)?;
    match int(items.next())? {
        0 => Some(ForceReleased::Free),
        -1 => Some(ForceReleased::NotALock(string(items.next()))),
        1 => {
            let token = bytes(items.next());
            let meta = pairs(items.next());
            Some(ForceReleased::Removed(Held {
                token,
                pttl_ms: -1,
                meta,
            }))
        }
        _ => None,
    }
}

/// The WATCH script's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watched {
    Free,
    Held,
    NotALock(String),
}

/// Decodes a WATCH reply; `None` when it has another shape.
pub fn watched(value: Value) -> Option<Watched> {
    let mut items = array(value)?;
    match int(items.next())? {
        0 => Some(Watched::Free),
        1 => Some(Watched::Held),
        -1 => Some(Watched::NotALock(string(items.next()))),
        _ => None,
    }
}

/// The role of a `ROLE` reply (`master`, `slave`, `sentinel`).
pub fn role(reply: Vec<Value>) -> String {
    string(reply.into_iter().next())
}

/// Token, PTTL and metadata pairs, in that order.
fn held(items: &mut impl Iterator<Item = Value>) -> Held {
    let token = bytes(items.next());
    let pttl_ms = int(items.next()).unwrap_or(-1);
    let meta = pairs(items.next());
    Held {
        token,
        pttl_ms,
        meta,
    }
}

fn array(value: Value) -> Option<std::vec::IntoIter<Value>> {
    match value {
        Value::Array(items) => Some(items.into_iter()),
        _ => None,
    }
}

fn int(value: Option<Value>) -> Option<i64> {
    match value {
        Some(Value::Int(n)) => Some(n),
        _ => None,
    }
}

/// Bytes of a bulk or simple string reply (empty otherwise).
fn bytes(value: Option<Value>) -> Vec<u8> {
    match value {
        Some(Value::BulkString(b)) => b,
        Some(Value::SimpleString(s)) => s.into_bytes(),
        Some(Value::Okay) => b"OK".to_vec(),
        _ => Vec::new(),
    }
}

/// A string reply, lossily decoded.
fn string(value: Option<Value>) -> String {
    String::from_utf8_lossy(&bytes(value)).into_owned()
}

/// Field/value pairs of an HGETALL reply (a flat array, or a map under RESP3).
fn pairs(value: Option<Value>) -> Pairs {
    match value {
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            let mut it = items.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                out.push((bytes(Some(k)), bytes(Some(v))));
            }
            out
        }
        Some(Value::Map(entries)) => entries
            .into_iter()
            .map(|(k, v)| (bytes(Some(k)), bytes(Some(v))))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn acquire_replies() {
        assert_eq!(
            acquired(Value::Array(vec![Value::Int(1), Value::Int(7)])),
            Some(Acquired::Yes {
                fence: 7,
                now_ms: 0,
                slot: 1
            })
        );
        assert_eq!(
            acquired(Value::Array(vec![
                Value::Int(-4),
                Value::Int(60_000),
                bulk("{}")
            ])),
            Some(Acquired::AlreadyRan {
                slot_ms: 60_000,
                record: b"{}".to_vec()
            })
        );
        assert_eq!(
            acquired(Value::Array(vec![Value::Int(-1), bulk("list")])),
            Some(Acquired::NotALock("list".into()))
        );
        let busy = Value::Array(vec![
            Value::Int(0),
            bulk("tok"),
            Value::Int(1500),
            Value::Array(vec![bulk("host"), bulk("h")]),
        ]);
        assert_eq!(
            acquired(busy),
            Some(Acquired::Busy {
                held: Held {
                    token: b"tok".to_vec(),
                    pttl_ms: 1500,
                    meta: vec![(b"host".to_vec(), b"h".to_vec())],
                },
                place: None
            })
        );
        assert_eq!(acquired(Value::Int(1)), None);
        assert_eq!(acquired(Value::Array(vec![Value::Int(7)])), None);
    }

    #[test]
    fn inspect_and_force_release_replies() {
        assert_eq!(
            inspected(Value::Array(vec![bulk("none")])),
            Some(Inspected::Free)
        );
        assert_eq!(
            inspected(Value::Array(vec![bulk("hash")])),
            Some(Inspected::NotALock("hash".into()))
        );
        assert_eq!(inspected(Value::Nil), None);
        assert_eq!(
            force_released(Value::Array(vec![Value::Int(0)])),
            Some(ForceReleased::Free)
        );
        let removed = force_released(Value::Array(vec![
            Value::Int(1),
            bulk("t"),
            Value::Map(vec![(bulk("pid"), bulk("7"))]),
        ]));
        assert_eq!(
            removed,
            Some(ForceReleased::Removed(Held {
                token: b"t".to_vec(),
                pttl_ms: -1,
                meta: vec![(b"pid".to_vec(), b"7".to_vec())],
            }))
        );
    }
}
