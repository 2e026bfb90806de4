//! `redlock history NAME [--limit N] [--json]`: the lock's last runs, newest first, as
//! recorded by the wrapper's release (see [`crate::history`]). Exit 0, also when no run
//! is recorded.

use serde::Serialize;

use std::os::unix::ffi::OsStrExt;

use super::{JsonName, list, open, print_json, print_line, timeline};
use crate::config::{DEFAULT_TTL, HistoryConfig, Window};
use crate::error::{Error, Kind, Result};
use crate::history::{RunRecord, merge};
use crate::keys::LockKeys;
use crate::quorum::Nodes;
use crate::report::printable;

/// The JSON of `redlock history`.
#[derive(Serialize)]
struct HistoryJson<'a> {
    #[serde(flatten)]
    names: JsonName,
    runs: &'a [RunRecord],
}

pub async fn run(config: HistoryConfig) -> Result<u8> {
    let nodes = open(&config.conn, DEFAULT_TTL).await?;
    if let Some(window) = config.timeline {
        return draw(&nodes, &config, window).await;
    }
    let runs = read_with_holder(&nodes, &config.keys, config.limit).await?;
    if config.json {
        print_json(&HistoryJson {
            names: JsonName::of(&config.keys),
            runs: &runs,
        })?;
    } else if runs.is_empty() {
        print_line(&format!("{}: no runs recorded", config.keys.display_name()));
    } else {
        print_line(&format!(
            "{}: last {} run{}, newest first",
            config.keys.display_name(),
            runs.len(),
            if runs.len() == 1 { "" } else { "s" }
        ));
        for run in &runs {
            print_line(&format!("  {}", run.describe()));
        }
    }
    Ok(0)
}

/// `--timeline`: the picture of each name's runs in `window` (without `--since`, each
/// name's own runs fit theirs), then a legend.
async fn draw(nodes: &Nodes, config: &HistoryConfig, window: Window) -> Result<u8> {
    let names = match &config.pattern {
        None => vec![config.keys.clone()],
        Some(pattern) => list::names_by(nodes, &config.conn.prefix, pattern, &[b":history"])
            .await?
            .iter()
            .map(|n| {
                config
                    .conn
                    .keys(&std::ffi::OsStr::from_bytes(n).to_os_string())
            })
            .collect::<Result<Vec<_>>>()?,
    };
    let style = timeline::style();
    let to_ms = crate::clock::wall_ms();
    if names.is_empty() {
        print_line("no lock matches with a run history");
        return Ok(0);
    }
    let mut out = String::new();
    for keys in &names {
        let runs = read_with_holder(nodes, keys, config.limit).await?;
        let from_ms = match window {
            Window::Last(since) => to_ms.saturating_sub(since.as_millis() as u64),
            Window::Fit => timeline::fitted_from(&runs, to_ms, style),
        };
        out.push_str(&timeline::render(
            &keys.display_name(),
            &runs,
            from_ms,
            to_ms,
            style,
        ));
    }
    out.push_str(&timeline::legend(style.color, style.width));
    print!("{out}");
    Ok(0)
}

/// The lock's last `limit` runs across its nodes, newest first. Elements that are not
/// records (written by someone else) are skipped; a history key of another type is an
/// error naming it. Over several nodes, what the answering nodes hold.
pub async fn read(nodes: &Nodes, keys: &LockKeys, limit: usize) -> Result<Vec<RunRecord>> {
    let last = i64::try_from(limit).unwrap_or(i64::MAX).saturating_sub(1);
    let cmd = crate::redis::command::lrange_head(&keys.history, last);
    let results = nodes.each(|n| n.query::<Vec<Vec<u8>>>(&cmd)).await;
    let mut per_node = Vec::new();
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(raw) => per_node.push(raw.iter().filter_map(|r| RunRecord::parse(r)).collect()),
            Err(e) if e.kind() == Kind::NotALock => {
                return Err(Error::new(
                    Kind::NotALock,
                    format!(
                        "key {} is not a list: not redlock's run history; choose another --key or --prefix",
                        printable(&keys.history)
                    ),
                ));
            }
            Err(e) => errors.push(e),
        }
    }
    if per_node.is_empty()
        && let Some(e) = errors.into_iter().next()
    {
        return Err(e);
    }
    Ok(merge(per_node, limit))
}

/// [`read`], judged (see `history::judged`) with the lock's holder of now among the
/// runs: what `history` and its timeline show.
async fn read_with_holder(nodes: &Nodes, keys: &LockKeys, limit: usize) -> Result<Vec<RunRecord>> {
    let runs = read(nodes, keys, limit).await?;
    let holder = super::state::holder(nodes, keys).await.ok().flatten();
    let mut runs = crate::history::judged(runs, holder.as_ref());
    runs.truncate(limit.max(1));
    Ok(runs)
}

/// The last run that is over (ended or vanished; never the run in progress) of the lock
/// held by `holder` now: what `status` and `top` say as its last run.
pub async fn last_run(
    nodes: &Nodes,
    keys: &LockKeys,
    holder: Option<&crate::holder::Holder>,
) -> Option<RunRecord> {
    // The run in progress may have a start mark, and a semaphore several: a few more.
    let runs = read(nodes, keys, 4).await.ok()?;
    crate::history::last_over(&crate::history::judged(runs, holder)).cloned()
}
