//! redlock: run commands under a distributed lock held in Redis, and inspect or clear
//! such locks.
//!
//! Module map, top down (each layer imports only from below it):
//! - [`entry`]: the entry points both binaries call: arguments in, exit status out;
//! - `run/`: the wrapper end to end, as named stages (one term: take, run, release);
//!   `verbs/`: status, list, release, acquire, extend, wait, history, doctor (with
//!   `doctor/judge` and `doctor/needs`); [`docs`]: man pages and completions;
//! - `supervise`: the one supervisor loop; `wait/`: waiting for a busy lock (woken
//!   by the release, one waiter per release) and showing it;
//!   `child`: starting the command and its process group; `guard`: the group guard
//!   for a wrapper killed, stopped or starved; `signals`: the signal rule;
//! - `lease`: a session with a kind of lock (one acquire round, the release); `glance`:
//!   a first try's reads, which answer a losing try without the acquire script;
//!   `kinds/`: the kinds of lock (plain, slots, fair, newest, shared), one enum with
//!   one table of their facts, two of them choices (`kinds/waiters`: a set or a queue;
//!   `kinds/holders`: by the key or by a share), a file for what only one kind does; `session`: what every kind shares (token, nodes,
//!   vote and tally, renew, fence, release of the token); `history`: a run's record beside the lock and how it reads;
//!   `quorum`: the nodes of a lock and the majority that decides (Redlock); `holder`:
//!   holder metadata and the command line it records (`holder/command_line`, secrets
//!   masked); `gone`: positive proof that a holder is gone (`release
//!   --if-dead`), a pure judgement over the metadata, this machine and a probe;
//! - [`scripts`]: each Lua script's whole contract, one file per family (the text,
//!   the typed call, the reply's decoder, the commands it calls); [`policy`]: what a
//!   run asks for, decided once from its flags (the kind of lock it asks for;
//!   completion) and the one table of refused combinations; [`keys`]: key layout and
//!   hash tags;
//! - `redis/`: the Redis layer (URLs, connecting, one node, errors, replies);
//! - [`config`]: raw arguments to checked configuration (`config/run`: the run's,
//!   `config/verbs`: each verb's); [`cli`]: clap definitions;
//! - the floor: [`exit`]: THE exit-code table; `outcome`: THE outcome table (how
//!   each way a run ends reads in events, metrics, history and the timeline);
//!   `lifecycle`: a run's life (granted, started, ended, vanished) and THE judge of a
//!   recorded run; `error`: typed errors whose kind decides
//!   the exit code; `timing`: pure timing math; `period`: `--once-per`'s period and its slots (calendar slots in a zone); `obituary`: what a dead run's metrics say; `clock`: the suspend-aware clock; `hash`: a stable hash of names;
//!   `report`: messages for people; `events`: lifecycle events for machines
//!   (`--events`).
//!
//! Public are only what the binaries and the tests use: [`entry`], [`cli`], [`docs`],
//! [`exit`], the scripts with the keys and mode they take (the tests check their SHA1s
//! against a server's script cache and call a script on its own), and the refusal
//! table (the generated test family asks it).

mod child;
pub mod cli;
mod clock;
mod config;
pub mod docs;
pub mod entry;
mod error;
mod events;
pub mod exit;
mod glance;
mod gone;
mod guard;
mod hash;
mod history;
mod holder;
pub mod keys;
mod kinds;
mod lease;
mod lifecycle;
mod metrics;
mod obituary;
pub mod outcome;
pub mod period;
pub mod policy;
mod quorum;
mod ready;
mod redis;
mod report;
mod run;
pub mod scripts;
mod session;
mod signals;
mod supervise;
mod timing;
mod verbs;
mod wait;
