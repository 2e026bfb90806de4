//! `redlock acquire NAME`: take a lock for a script that cannot wrap one command, and
//! print its token (or, with `--json`, name, key, token and ttl). The lock is recorded
//! as the calling script's (its pid), and expires unless extended or released.

use super::{HeldJson, print_json, print_line};
use crate::config::AcquireConfig;
use crate::error::{Error, Result};
use crate::exit;
use crate::holder::{Meta, PidFrom};
use crate::lease::{Lease, new_token};
use crate::policy::Mode;
use crate::report::Reporter;
use crate::wait::{self, Connected, Patience, Waited, busy_note};

pub async fn run(config: AcquireConfig, report: &Reporter) -> Result<u8> {
    let mut signals = crate::signals::listen()
        .map_err(|e| Error::internal(format!("cannot install signal handlers: {e}")))?;
    let report = Reporter {
        quiet: config.quiet,
        ..report.clone()
    };
    let patience = Patience::new(config.wait);
    let timeout = config.conn.timeout_for(config.ttl);
    let nodes =
        match wait::connect(&config.conn.urls, timeout, &patience, &mut signals, &report).await? {
            Connected::Up(nodes) => nodes,
            Connected::Interrupted(sig) => return Ok(exit::from_signal(sig as i32)),
        };
    let mode = match config.shared {
        true => Mode::Shared,
        false => Mode::Plain,
    };
    let lease = Lease::new(nodes, config.keys.clone(), config.ttl, new_token())
        .retain(config.retain)
        .mode(mode);
    let meta = callers_meta(&config, &lease);
    let chatty = config.busy_code != 0;
    match wait::acquire(
        &lease,
        &meta,
        &patience,
        wait::WaitAs::saying(chatty),
        &mut signals,
        &report,
        || (),
    )
    .await?
    {
        Waited::Acquired { .. } if config.json => {
            print_json(&HeldJson::of(&lease))?;
            Ok(0)
        }
        Waited::Acquired { .. } => {
            print_line(lease.token());
            Ok(0)
        }
        Waited::Busy(holder) => {
            let waited = patience.allows_waiting().then(|| patience.waited());
            busy_note(
                &lease.keys().display_name(),
                lease.limit(),
                &holder,
                (config.busy_code, waited),
                &report,
            );
            Ok(config.busy_code)
        }
        Waited::Interrupted(sig) => Ok(exit::from_signal(sig as i32)),
        // `redlock acquire` has no --once-per.
        Waited::Skipped(_) => Err(crate::error::Error::internal(
            "acquire found a --once-per slot it did not ask about",
        )),
    }
}

/// The metadata of a lock that belongs to the script that called us, not to this
/// short-lived process (nor to a subshell or `timeout` between the two). With
/// `--holder-pid` the script says which process uses the lock; without, the caller is a
/// guess from the process tree (shown by `status`, never proof for `release --if-dead`).
fn callers_meta(config: &AcquireConfig, lease: &Lease) -> Meta {
    let (caller, from) = match config.holder_pid {
        Some(pid) => (pid, PidFrom::Given),
        None => (crate::holder::lasting_caller(), PidFrom::Guessed),
    };
    Meta::local(lease.token(), "redlock acquire", config.ttl).on_behalf_of(caller, from)
}
