//! The one integration test binary: real redis-server processes, real binaries.
//! Modules by area; `harness` starts and stops the servers.

mod harness;

mod basics;
mod docs;
mod lease_life;
mod quorum;
mod signals_exit;
mod topology;
mod verbs;
