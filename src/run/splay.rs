//! `--splay D`: a `--once-per` try first fixes its slot from the Redis server's `TIME`,
//! then waits its offset into the slot (`timing::splay_offset`: the same for this host
//! and name every slot, spread over hosts), then tries for that slot only (the lease's
//! slot pin, see `scripts::completion`): a fleet's tries spread over the first D of the
//! slot, and none runs on behalf of the next slot (past its end the try is skipped,
//! silently). A host that fires late in the slot tries at once, for that slot.

use super::{End, Run, Step};
use crate::holder::Meta;
use crate::lease::Lease;

/// Fixes this try's slot and waits its offset into it; a signal that ends a wait ends
/// the run (nothing was taken).
pub(super) async fn splay(run: &mut Run<'_>, lease: &Lease, meta: &Meta) -> Step<()> {
    let completion = lease.completion_policy();
    let (Some(splay), Some(period)) = (completion.splay, completion.once_per) else {
        return Ok(());
    };
    let Some(node) = lease.nodes().primary() else {
        return Ok(());
    };
    let (secs, micros) = node
        .query::<(u64, u64)>(&crate::redis::command::time())
        .await
        .map_err(|e| End::from(e.context("reading the server's time for --splay")))?;
    let now_ms = secs * 1000 + micros / 1000;
    let period_ms = (period.as_millis() as u64).max(1);
    let slot = now_ms - now_ms % period_ms;
    lease.pin_slot(slot);
    let seed = [meta.host.as_bytes(), b"\0", &lease.keys().lock].concat();
    let at = slot + crate::timing::splay_offset(&seed, splay).as_millis() as u64;
    let Some(nap) = at.checked_sub(now_ms).filter(|n| *n > 0) else {
        return Ok(());
    };
    run.report
        .verbose(|| format!("--splay: trying {nap} ms into the slot's window"));
    let sleep = tokio::time::sleep(std::time::Duration::from_millis(nap));
    tokio::pin!(sleep);
    loop {
        tokio::select! {
            _ = &mut sleep => return Ok(()),
            Some(sig) = run.signals.recv() => {
                if crate::signals::ends_wait(sig) {
                    return Err(run.interrupted_while_waiting(sig));
                }
            }
        }
    }
}
