//! The Redis layer: everything that talks to Redis, below the lock's semantics.
//!
//! What it hides from the layers above:
//! - where the server is: one server, a Redis Cluster (slot routing, MOVED/ASK), or a
//!   Sentinel-managed master (discovery, failover), all behind one [`Node`];
//! - how long a call may take: every call is bounded by the node timeout;
//! - the script cache: scripts run by EVALSHA with a SHA1 known before the run, and
//!   by EVAL on NOSCRIPT ([`Lua`]; the scripts themselves are `src/scripts/`, above
//!   this layer);
//! - TLS: certificates, client certificates and `--tls-insecure-skip-verify`;
//! - the client library's errors: mapped, with hints, onto typed errors in one place
//!   (`errors.rs`), and its replies decoded into plain parts ([`reply`]).
//!
//! What it does not know: tokens, quorums, holders, waiting. Those are the lease's
//! (`lease.rs`, `quorum.rs`) and the verbs'. Nothing in this folder imports from above
//! it: only the crate's floor (`error`, `exit`, `report`, `hash`, `clock`).
//!
//! - `url.rs`: parse, check and redact URLs (data only);
//! - `connect.rs`: clients for a server, Sentinel discovery;
//! - `routed.rs`: a Cluster reached where a call's key lives (the slot map, kept on
//!   the host; MOVED and ASK followed);
//! - `script.rs`: a Lua script and a call of it (EVALSHA, EVAL on NOSCRIPT);
//! - `command.rs`: the plain commands sent outside scripts, each built by name;
//! - `node.rs`: one node: run, query, scan under the node timeout, and blocking pops;
//!   when the server last answered and whether a connection failed after that;
//! - `follow.rs`: a Sentinel master followed at each renewal and release (one ask to
//!   one sentinel), looked up again after a failure; its replicas, and notes of both;
//! - `life.rs`: the server's life from `INFO server` (run ID, uptime), and the run ID
//!   this host last saw at a server's address;
//! - `kept.rs`: what a host keeps of its servers between runs (slot maps, run IDs),
//!   in the run's local directory, where only the user can write;
//! - `errors.rs`: THE map from a client error to ours;
//! - `reply.rs`: replies as plain parts.

pub(crate) mod command;
mod connect;
mod errors;
mod follow;
pub(crate) mod kept;
pub(crate) mod life;
mod node;
pub(crate) mod reply;
pub(crate) mod routed;
mod script;
mod url;

pub(crate) use follow::Note;
pub(crate) use node::Node;
pub(crate) use script::{Call, Lua};
pub(crate) use url::{DEFAULT_URL, RedisUrl, Tls, Topology, apply_tls, redact, split_list};
