//! Typed errors: every error carries a [`Kind`], which alone decides the exit code
//! ([`Kind::code`], the one place), a one-line message saying what went wrong and what to
//! do, and optionally the error it was caused by. Callers match kinds, never codes or
//! message text, and add context by wrapping ([`Error::context`]), never by editing a
//! message. Messages never contain a password (URLs are shown through the redacted form
//! of [`crate::redis::RedisUrl`]).
//!
//! The mapping from the Redis client's errors onto kinds lives in the Redis layer
//! (`redis/errors.rs`), not here.

use std::fmt;

use crate::exit::Code;

/// What kind of failure an error is; decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A bad flag, duration, key name, URL or command line.
    Usage,
    /// Redis could not be reached, timed out, or is not ready (LOADING, BUSY, …):
    /// the only kind that may heal by trying again.
    Unreachable,
    /// Credentials refused or a command forbidden by the ACL.
    Auth,
    /// The lock's key (or its metadata key) holds a value of another type.
    NotALock,
    /// The server is a read-only replica.
    ReadOnly,
    /// The server is out of memory (maxmemory reached, OOM).
    OutOfMemory,
    /// Any other error the server answered with (MISCONF, MOVED on a plain URL, …).
    Server,
    /// A reply the tool does not understand.
    BadReply,
    /// The lock is no longer held by the token in hand.
    Lost,
    /// The lock is held by a process that is alive, or whose life cannot be checked
    /// here (`release --if-dead` refuses), or the name is in use (`forget` refuses).
    HeldByLive,
    /// The command was found but cannot be executed.
    CannotExecute,
    /// The command was not found.
    NotFound,
    /// A fault of redlock itself.
    Internal,
}

impl Kind {
    /// The exit status for this kind: the one map from errors onto [`Code`].
    pub const fn code(self) -> Code {
        match self {
            Kind::Usage => Code::Usage,
            Kind::Unreachable => Code::Unreachable,
            Kind::Auth => Code::Auth,
            Kind::NotALock | Kind::ReadOnly | Kind::OutOfMemory | Kind::Server | Kind::BadReply => {
                Code::Redis
            }
            Kind::Lost => Code::Lost,
            Kind::HeldByLive => Code::Busy,
            Kind::CannotExecute => Code::CannotExecute,
            Kind::NotFound => Code::NotFound,
            Kind::Internal => Code::Internal,
        }
    }

    /// How much an error of this kind tells the user, best first: among several
    /// nodes' errors the one shown is the most telling (credentials and server answers
    /// will not go away by trying again; a timeout says least).
    const fn rank(self) -> u8 {
        match self {
            Kind::Auth => 0,
            Kind::NotALock | Kind::ReadOnly | Kind::OutOfMemory | Kind::Server | Kind::BadReply => {
                1
            }
            Kind::Usage => 2,
            _ => 3,
        }
    }
}

/// An error that ends a command with a documented exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: Kind,
    message: String,
    cause: Option<Box<Error>>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            cause: None,
        }
    }
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(Kind::Usage, message)
    }
    pub fn unreachable(message: impl Into<String>) -> Self {
        Self::new(Kind::Unreachable, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Kind::Internal, message)
    }

    /// This error seen from a wider step: the message is `context; <this error>`, and
    /// the kind (hence the exit code) stays this error's.
    pub fn context(self, context: impl Into<String>) -> Self {
        Error {
            kind: self.kind,
            message: context.into(),
            cause: Some(Box::new(self)),
        }
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The exit status this error ends a command with.
    pub fn code(&self) -> Code {
        self.kind.code()
    }

    /// Whether trying again may succeed (a dropped connection, a timeout, a server
    /// not ready yet).
    pub fn is_transient(&self) -> bool {
        self.kind == Kind::Unreachable
    }

    /// Whether a process that lives on (an `--elect` standby) may see it go away by
    /// waiting: besides [`Self::is_transient`], a server that is read-only or full for
    /// a while (a failover behind a plain URL), another server answer, one it cannot
    /// read, a lock lost. A usage or auth error, a command that cannot run, a key of
    /// another type and a fault of ours do not.
    pub fn heals_with_time(&self) -> bool {
        matches!(
            self.kind,
            Kind::Unreachable
                | Kind::ReadOnly
                | Kind::OutOfMemory
                | Kind::Server
                | Kind::BadReply
                | Kind::Lost
        )
    }
}

/// Of several nodes' errors, the one that tells the user the most (see [`Kind`]); the
/// first of equals.
pub fn most_telling(errors: impl IntoIterator<Item = Error>) -> Option<Error> {
    errors.into_iter().min_by_key(|e| e.kind.rank())
}

/// Collapses a message onto one line.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(cause) = &self.cause {
            write!(f, "; {cause}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_folds_newlines() {
        assert_eq!(one_line("a\nb\t c"), "a b c");
    }

    #[test]
    fn context_keeps_the_kind_and_shows_the_cause() {
        let err = Error::new(Kind::Auth, "node: WRONGPASS").context("no quorum");
        assert_eq!(err.kind(), Kind::Auth);
        assert_eq!(err.code(), Code::Auth);
        assert_eq!(err.to_string(), "no quorum; node: WRONGPASS");
    }

    #[test]
    fn the_most_telling_error_wins() {
        let errors = vec![
            Error::unreachable("timed out"),
            Error::new(Kind::OutOfMemory, "oom"),
            Error::new(Kind::Auth, "auth"),
        ];
        assert_eq!(most_telling(errors).unwrap().kind(), Kind::Auth);
        assert!(most_telling(Vec::new()).is_none());
    }
}
