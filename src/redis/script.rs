//! A Lua script as the server runs it: its text and its SHA1, sent by `EVALSHA`.
//!
//! The SHA1 is written beside each text (`src/scripts/`) and held to it by a unit test,
//! so that no start pays for hashing the scripts' text (it was an eighth of the
//! wrapper's own instructions). On `NOSCRIPT` (the server's script cache is empty after
//! a restart, a failover, `SCRIPT FLUSH`) the call is made again at once by `EVAL` with
//! the text, which both runs the script and caches it: one round trip more, where the
//! client library's `redis::Script` spends two (`SCRIPT LOAD`, then `EVALSHA`), and
//! through a cluster it is routed by its first key like the `EVALSHA` (a `SCRIPT LOAD`
//! has no key). Hand-written because `redis::Script` can only hash at run time.

use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, RedisResult, ToRedisArgs};

/// One script: its SHA1 (lower-case hex) and where its text comes from (a constant, or
/// text spliced once on first use).
pub struct Lua {
    sha: &'static str,
    text: fn() -> &'static str,
}

impl Lua {
    pub const fn new(sha: &'static str, text: fn() -> &'static str) -> Lua {
        Lua { sha, text }
    }

    /// The SHA1 the server knows the script by.
    pub fn sha(&self) -> &'static str {
        self.sha
    }

    /// The script's text.
    pub fn text(&self) -> &'static str {
        (self.text)()
    }

    /// A call of this script, its keys and arguments added by the caller.
    pub fn call(&'static self) -> Call {
        Call {
            lua: self,
            keys: Vec::new(),
            args: Vec::new(),
        }
    }
}

/// A call of a script on its KEYS with its ARGV.
#[derive(Clone)]
pub struct Call {
    lua: &'static Lua,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl Call {
    pub fn key<T: ToRedisArgs>(&mut self, key: T) -> &mut Call {
        self.keys.extend(key.to_redis_args());
        self
    }

    pub fn arg<T: ToRedisArgs>(&mut self, arg: T) -> &mut Call {
        self.args.extend(arg.to_redis_args());
        self
    }

    /// `EVALSHA`, then `EVAL` with the text if the server does not have the script. A
    /// user whose ACL allows `SCRIPT LOAD` but not `EVAL` (the documented
    /// least-privilege user: `+eval` is optional) gets the script loaded, then
    /// `EVALSHA` again.
    pub async fn invoke<T: FromRedisValue>(
        &self,
        conn: &mut impl ConnectionLike,
    ) -> RedisResult<T> {
        let by_sha = self.command("EVALSHA", self.lua.sha);
        match by_sha.query_async(conn).await {
            Err(e) if e.code() == Some("NOSCRIPT") => {
                match self
                    .command("EVAL", self.lua.text())
                    .query_async(conn)
                    .await
                {
                    Err(e) if eval_denied(&e) => {
                        let load = redis::cmd("SCRIPT")
                            .arg("LOAD")
                            .arg(self.lua.text())
                            .clone();
                        load.query_async::<()>(conn).await?;
                        by_sha.query_async(conn).await
                    }
                    done => done,
                }
            }
            done => done,
        }
    }

    /// The call as one `EVAL` with the text (a test's own connection).
    pub fn eval(&self) -> Cmd {
        self.command("EVAL", self.lua.text())
    }

    fn command(&self, verb: &str, script: &str) -> Cmd {
        let mut cmd = redis::cmd(verb);
        cmd.arg(script)
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        cmd
    }
}

/// The ACL refused `EVAL` itself (not a command the script calls: that script ran up
/// to the refusal, and must not run again).
fn eval_denied(e: &redis::RedisError) -> bool {
    e.code() == Some("NOPERM") && e.detail().is_some_and(|d| d.contains("'eval'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    static ECHO: Lua = Lua::new("0123", || "return KEYS[1]");

    #[test]
    fn evalsha_then_eval_carry_the_same_keys_and_arguments() {
        let mut call = ECHO.call();
        call.key("k").arg(7).arg("v");
        let packed = |cmd: Cmd| String::from_utf8(cmd.get_packed_command()).unwrap();
        assert_eq!(
            packed(call.command("EVALSHA", ECHO.sha())),
            "*6\r\n$7\r\nEVALSHA\r\n$4\r\n0123\r\n$1\r\n1\r\n$1\r\nk\r\n$1\r\n7\r\n$1\r\nv\r\n"
        );
        assert!(
            packed(call.command("EVAL", ECHO.text()))
                .contains("return KEYS[1]\r\n$1\r\n1\r\n$1\r\nk")
        );
    }
}
