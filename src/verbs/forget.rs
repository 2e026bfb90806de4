//! `redlock forget NAME…`: delete each free lock's run history, fence counter and
//! newest-wins order mark now, instead of `--retain` after its last use. A name in use (held, or a semaphore's
//! slot held, or a fair queue waited for) is left as it is: 75.

use super::open;
use crate::config::{DEFAULT_TTL, ForgetConfig};
use crate::error::{Error, Kind, Result};
use crate::scripts::forget;

pub async fn run(config: ForgetConfig) -> Result<u8> {
    let nodes = open(&config.conn, DEFAULT_TTL).await?;
    let mut in_use = Vec::new();
    for keys in &config.keys {
        let call = forget::call(keys);
        let results = nodes.each(|n| n.run::<redis::Value>(&call)).await;
        if let Some(e) = results.iter().find_map(|r| r.as_ref().err()) {
            return Err(e.clone());
        }
        for reply in results.into_iter().flatten() {
            match forget::decode(reply) {
                forget::Forgot::InUse => in_use.push(keys.display_name()),
                forget::Forgot::Foreign { role, kind } => {
                    return Err(crate::lease::not_ours(
                        &role_key(keys, &role),
                        role_of(&role),
                        &kind,
                    ));
                }
                forget::Forgot::Deleted => {}
            }
        }
    }
    if in_use.is_empty() {
        return Ok(0);
    }
    Err(Error::new(
        Kind::HeldByLive,
        format!(
            "{} in use (held, or waited for); forget it once it is free",
            in_use.join(", ")
        ),
    ))
}

/// The key that plays `role` in a forget's refusal.
fn role_key(keys: &crate::keys::LockKeys, role: &str) -> Vec<u8> {
    match role {
        "fence" => keys.fence.clone(),
        "order" => keys.order.clone(),
        _ => keys.history.clone(),
    }
}

fn role_of(role: &str) -> crate::scripts::Key {
    match role {
        "fence" => crate::scripts::Key::Fence,
        "order" => crate::scripts::Key::Order,
        _ => crate::scripts::Key::History,
    }
}
