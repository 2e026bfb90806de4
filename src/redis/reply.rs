//! Decoding replies into plain parts: arrays, numbers, bytes, field/value pairs, and a
//! lock as a script read it ([`Held`]). The scripts' own reply shapes are decoded
//! beside each script (`src/scripts/`), from these parts. This layer knows nothing of
//! holders or quorums.

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

/// The role of a `ROLE` reply (`master`, `slave`, `sentinel`).
pub fn role(reply: Vec<Value>) -> String {
    string(reply.into_iter().next())
}

/// How many replicas a master's `ROLE` reply lists (`["master", offset, [[ip, port,
/// offset], …]]`: the replicas connected now); 0 for any other role.
pub fn replicas(reply: &[Value]) -> usize {
    match reply.get(2) {
        Some(Value::Array(replicas)) => replicas.len(),
        _ => 0,
    }
}

/// Token, PTTL and metadata pairs, in that order.
pub(crate) fn held(items: &mut impl Iterator<Item = Value>) -> Held {
    let token = bytes(items.next());
    let pttl_ms = int(items.next()).unwrap_or(-1);
    let meta = pairs(items.next());
    Held {
        token,
        pttl_ms,
        meta,
    }
}

pub(crate) fn array(value: Value) -> Option<std::vec::IntoIter<Value>> {
    match value {
        Value::Array(items) => Some(items.into_iter()),
        _ => None,
    }
}

pub(crate) fn int(value: Option<Value>) -> Option<i64> {
    match value {
        Some(Value::Int(n)) => Some(n),
        _ => None,
    }
}

/// Bytes of a bulk or simple string reply (empty otherwise).
pub(crate) fn bytes(value: Option<Value>) -> Vec<u8> {
    match value {
        Some(Value::BulkString(b)) => b,
        Some(Value::SimpleString(s)) => s.into_bytes(),
        Some(Value::Okay) => b"OK".to_vec(),
        _ => Vec::new(),
    }
}

/// A string reply, lossily decoded.
pub(crate) fn string(value: Option<Value>) -> String {
    String::from_utf8_lossy(&bytes(value)).into_owned()
}

/// Field/value pairs of an HGETALL reply (a flat array, or a map under RESP3).
pub(crate) fn pairs(value: Option<Value>) -> Pairs {
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

    #[test]
    fn replicas_of_a_role_reply() {
        let replica = |port: &str| {
            Value::Array(vec![
                Value::BulkString(b"127.0.0.1".to_vec()),
                Value::BulkString(port.as_bytes().to_vec()),
                Value::BulkString(b"0".to_vec()),
            ])
        };
        let master = |replicas: Vec<Value>| {
            vec![
                Value::BulkString(b"master".to_vec()),
                Value::Int(0),
                Value::Array(replicas),
            ]
        };
        assert_eq!(replicas(&master(vec![])), 0);
        assert_eq!(replicas(&master(vec![replica("1"), replica("2")])), 2);
        let slave = vec![
            Value::BulkString(b"slave".to_vec()),
            Value::BulkString(b"127.0.0.1".to_vec()),
            Value::Int(6379),
        ];
        assert_eq!(replicas(&slave), 0);
    }

    #[test]
    fn pairs_from_arrays_and_maps() {
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let flat = Value::Array(vec![bulk("a"), bulk("1"), bulk("b")]);
        assert_eq!(pairs(Some(flat)), vec![(b"a".to_vec(), b"1".to_vec())]);
        let map = Value::Map(vec![(bulk("pid"), bulk("7"))]);
        assert_eq!(pairs(Some(map)), vec![(b"pid".to_vec(), b"7".to_vec())]);
        assert_eq!(string(Some(Value::Okay)), "OK");
        assert_eq!(int(Some(bulk("1"))), None);
    }
}
