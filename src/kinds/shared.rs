//! A shared lock (`--shared`): any number of shared holders at once; a run on the name
//! without `--shared` is its exclusive side (a plain run) and never runs beside any
//! holder. While shares are held the lock key holds the marker `shared`, so a plain
//! run's (or another client's) `SET key token NX PX` fails there as anywhere; each
//! share has its own token, lease (an entry of `…:shares`), metadata (`…:meta:<token>`)
//! and fencing number, drawn from the name's one counter. Writer-preferring: once a
//! plain run waits on the name (`…:writers`), new shares wait behind it; the last
//! share's release wakes one waiter, each admitted share the next (see
//! `scripts::shared`). Shared runs do not queue behind each other on one host.

use crate::redis::Call;
use crate::scripts::{acquire, shared};

/// The acquire call of a share: the shared acquire script, with the plain lock's
/// request (see `scripts::shared`).
pub(super) fn acquire_call(r: &acquire::Request) -> Call {
    shared::share(
        r.keys,
        r.token,
        r.ttl_ms,
        r.heartbeat_ms,
        r.known_holder,
        r.retain_ms,
        r.meta,
    )
}
