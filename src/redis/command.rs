//! The plain commands the layers above send outside scripts, each built here by name:
//! the only place outside `src/scripts/` where a Redis command is spelled. Reads of a
//! lock's parts (`status`, `history`, `top`, the re-entrancy check: a share's `ZSCORE`),
//! a first try's glance (its pipelines are a contract like a script's: `crate::glance`
//! reads their replies in this order) and `doctor`'s probes.

use redis::Cmd;

/// `GET key`.
pub fn get(key: &[u8]) -> Cmd {
    redis::cmd("GET").arg(key).clone()
}

/// `EXISTS key`.
pub fn exists(key: &[u8]) -> Cmd {
    redis::cmd("EXISTS").arg(key).clone()
}

/// `SCARD key`.
pub fn scard(key: &[u8]) -> Cmd {
    redis::cmd("SCARD").arg(key).clone()
}

/// `LRANGE key 0 last`: the first `last + 1` elements.
pub fn lrange_head(key: &[u8], last: i64) -> Cmd {
    redis::cmd("LRANGE").arg(key).arg(0).arg(last).clone()
}

/// `ZRANGE key 0 -1`: every member, in order.
pub fn zrange_all(key: &[u8]) -> Cmd {
    redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).clone()
}

/// `HMGET key field…`.
pub fn hmget(key: &[u8], fields: &[Vec<u8>]) -> Cmd {
    redis::cmd("HMGET").arg(key).arg(fields).clone()
}

/// `HGETALL key`.
pub fn hgetall(key: &[u8]) -> Cmd {
    redis::cmd("HGETALL").arg(key).clone()
}

/// `PTTL key`.
pub fn pttl(key: &[u8]) -> Cmd {
    redis::cmd("PTTL").arg(key).clone()
}

/// `PING`.
pub fn ping() -> Cmd {
    redis::cmd("PING")
}

/// `TIME`.
pub fn time() -> Cmd {
    redis::cmd("TIME")
}

/// `INFO` (every default section).
pub fn info() -> Cmd {
    redis::cmd("INFO")
}

/// A lock-delay's evidence (`super::life`), errors kept in their place: `INFO server`,
/// then the data epoch `epoch`'s `GET` and `PTTL`: reads only, so that it can go out
/// beside an acquire that may be refused.
pub fn life(epoch: &[u8]) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    pipe.cmd("INFO").arg("server");
    pipe.cmd("GET").arg(epoch);
    pipe.cmd("PTTL").arg(epoch);
    pipe
}

/// The data epoch written when missing, after a grant, errors kept in their place:
/// `SET epoch fresh NX PX ttl_ms`, then its `GET` and `PTTL` (another run's, if one
/// wrote it first).
pub fn epoch_write(epoch: &[u8], fresh: &str, ttl_ms: u64) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    pipe.cmd("SET")
        .arg(epoch)
        .arg(fresh)
        .arg("NX")
        .arg("PX")
        .arg(ttl_ms);
    pipe.cmd("GET").arg(epoch);
    pipe.cmd("PTTL").arg(epoch);
    pipe
}

/// `CONFIG GET name`.
pub fn config_get(name: &str) -> Cmd {
    redis::cmd("CONFIG").arg("GET").arg(name).clone()
}

/// `ACL WHOAMI`.
pub fn acl_whoami() -> Cmd {
    redis::cmd("ACL").arg("WHOAMI").clone()
}

/// `ACL DRYRUN user command args…`.
pub fn acl_dryrun(user: &str, command: impl IntoIterator<Item = Vec<u8>>) -> Cmd {
    let mut cmd = redis::cmd("ACL");
    cmd.arg("DRYRUN").arg(user);
    for a in command {
        cmd.arg(a);
    }
    cmd
}

/// `ZSCORE key member`.
pub fn zscore(key: &[u8], member: &str) -> Cmd {
    redis::cmd("ZSCORE").arg(key).arg(member).clone()
}

/// A plain try's glance (`crate::glance`), errors kept in their place: `GET` of the
/// mode key and of the lock key, `PTTL` of the lock key, `HGETALL` of its metadata.
pub fn glance_plain(mode: &[u8], lock: &[u8], meta: &[u8]) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    pipe.cmd("GET").arg(mode);
    pipe.cmd("GET").arg(lock);
    pipe.cmd("PTTL").arg(lock);
    pipe.cmd("HGETALL").arg(meta);
    pipe
}

/// A `--once-per` try's glance (`crate::glance`), errors kept in their place: `TIME`,
/// the history's newest `records` (`LRANGE`), `GET` of the lock key.
pub fn glance_once_per(history: &[u8], records: i64, lock: &[u8]) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    pipe.cmd("TIME");
    pipe.cmd("LRANGE").arg(history).arg(0).arg(records - 1);
    pipe.cmd("GET").arg(lock);
    pipe
}
