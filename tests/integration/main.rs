//! The one integration test binary: real redis-server processes, real binaries.
//! Modules by area; `harness` starts and stops the servers.

mod harness;

mod alerts;
mod basics;
mod calendar;
mod capacity;
mod cron;
mod docs;
mod doctor;
mod elect;
mod every_name;
mod exclusion;
mod exit_status;
mod generated;
mod history;
mod if_dead;
mod lease_life;
mod lifecycle;
mod local_queue;
mod losing;
mod metrics;
mod nemesis;
mod nested;
mod nesting;
mod operators;
mod paused;
mod preempt_soon;
mod quorum;
mod review;
mod scripts;
mod sets;
mod shared;
mod shared_scripts;
mod signals;
mod source;
mod splay;
mod state;
mod supersede;
mod top;
mod topology;
mod untrusted_text;
mod user_errors;
mod vanished;
mod verbs;
mod waiting;
