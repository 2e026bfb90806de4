//! `redlock acquire NAME`: take a lock for a script that cannot wrap one command, and
//! print its token (or, with `--json`, name, key, token and ttl). The lock is recorded
//! as the calling script's (its pid), and expires unless extended or released.

use serde::Serialize;

use super::{open, print_json, print_line};
use crate::config::AcquireConfig;
use crate::error::{Error, Result};
use crate::exit;
use crate::holder::{Meta, wall_ms};
use crate::lease::{Lease, new_token};
use crate::report::{Reporter, printable};
use crate::wait::{self, Waited};

/// What `--json` prints.
#[derive(Debug, Serialize)]
struct Acquired<'a> {
    name: String,
    key: String,
    token: &'a str,
    ttl_ms: u64,
}

pub async fn run(config: AcquireConfig, report: &Reporter) -> Result<u8> {
    let nodes = open(&config.conn, config.ttl).await?;
    let lease = Lease::new(nodes, config.keys, config.ttl, new_token());
    let mut meta = Meta::local(lease.token(), "redlock acquire", config.ttl);
    // The lock belongs to the script that called us, not to this short-lived process.
    meta.pid = nix::unistd::getppid().as_raw() as u32;
    let mut signals = crate::signals::listen()
        .map_err(|e| Error::internal(format!("cannot install signal handlers: {e}")))?;
    let report = Reporter {
        quiet: config.quiet,
        ..report.clone()
    };
    match wait::acquire(&lease, &meta, config.wait, &mut signals, &report).await? {
        Waited::Acquired { .. } if config.json => {
            print_json(&Acquired {
                name: lease.keys().display_name(),
                key: printable(&lease.keys().lock),
                token: lease.token(),
                ttl_ms: config.ttl.as_millis() as u64,
            })?;
            Ok(0)
        }
        Waited::Acquired { .. } => {
            print_line(lease.token());
            Ok(0)
        }
        Waited::Busy(holder) => {
            report.note(&format!(
                "lock {} is busy: held by {}",
                lease.keys().display_name(),
                holder.describe(wall_ms())
            ));
            Ok(config.busy_code)
        }
        Waited::Interrupted(sig) => Ok(exit::from_signal(sig as i32)),
    }
}
