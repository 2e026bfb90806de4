//! The plain commands the layers above send outside scripts, each built here by name:
//! the only place outside `src/scripts/` where a Redis command is spelled. Reads of a
//! lock's parts (`status`, `history`, `top`, the re-entrancy check) and `doctor`'s probes.

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

/// `INFO server`: the server's run ID and uptime (a lock-delay's evidence).
pub fn info_server() -> Cmd {
    redis::cmd("INFO").arg("server").clone()
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
