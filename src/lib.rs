//! redlock: run commands under a distributed lock held in Redis, and inspect or clear
//! such locks.
//!
//! Module map:
//! - [`cli`]: clap definitions (raw values) of `redlock-run` and `redlock`;
//! - [`config`]: raw arguments to checked configuration (usage errors name the flag);
//! - [`exit`]: THE exit-code table; [`error`]: typed errors mapped onto it;
//! - [`timing`]: pure timing math (budget, validity, deadlines, backoff); [`clock`]: the
//!   suspend-aware clock;
//! - [`url`]: Redis URLs and their redacted display; [`keys`]: key layout and hash tags;
//! - [`scripts`]: the Lua scripts; [`node`]: one Redis node (server, Cluster or
//!   Sentinel master); [`topology`]: reaching a Cluster or a Sentinel master, and
//!   connection error hints (TLS);
//!   [`lease`]: acquire/renew/release over one or several nodes (Redlock quorum);
//!   [`holder`]: holder metadata;
//! - [`wait`]: waiting for a busy lock; [`child`]: starting the command;
//!   [`signals`]: the signal rule; [`supervise`]: the supervisor loop;
//! - [`run`]: the wrapper end to end; [`inspect`]: status, list, release, acquire,
//!   extend; [`docs`]: man pages and completions; [`report`]: stderr messages;
//! - [`entry`]: the entry points both binaries call.

pub mod child;
pub mod cli;
pub mod clock;
pub mod config;
pub mod docs;
pub mod entry;
pub mod error;
pub mod exit;
pub mod holder;
pub mod inspect;
pub mod keys;
pub mod lease;
pub mod node;
pub mod report;
pub mod run;
pub mod scripts;
pub mod signals;
pub mod supervise;
pub mod timing;
pub mod topology;
pub mod url;
pub mod wait;
