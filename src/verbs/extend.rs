//! `redlock extend NAME --token T`: renew a lock taken with `redlock acquire`; 79 when
//! the token no longer holds it. With `--json`, prints the lock as `acquire` does.

use super::{HeldJson, open, print_json};
use crate::config::ExtendConfig;
use crate::error::{Error, Kind, Result};
use crate::lease::{Lease, Renew};

pub async fn run(config: ExtendConfig) -> Result<u8> {
    let nodes = open(&config.conn, config.ttl).await?;
    // The name's kind renews the token its way (a share renews its entry).
    let kind = super::state::kind_of_token(&nodes, &config.keys).await;
    let lease = Lease::new(nodes, config.keys, config.ttl, config.token).of_kind(kind);
    match lease.renew().await {
        Renew::Renewed { .. } | Renew::Preempt { .. } if config.json => {
            print_json(&HeldJson::of(&lease))?;
            Ok(0)
        }
        Renew::Renewed { .. } | Renew::Preempt { .. } => Ok(0),
        Renew::Lost(_) => Err(Error::new(
            Kind::Lost,
            format!(
                "{} is not held by that token (expired, released or taken by another holder)",
                lease.keys().display_name()
            ),
        )),
        Renew::Unknown(err) => Err(err),
    }
}
