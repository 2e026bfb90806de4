//! What one lock looks like across its nodes, read without changing anything, and how
//! that reads for people (`status`) and scripts (`--json`).

use std::collections::BTreeMap;

use redis::Value;
use serde::Serialize;

use super::JsonName;
use crate::error::{Error, Kind, Result};
use crate::history::RunRecord;
use crate::holder::{Holder, Who};
use crate::keys::LockKeys;
use crate::kinds::LockKind;
use crate::quorum::Nodes;
use crate::redis::command;
use crate::report::{human, printable, rfc3339};
use crate::scripts::inspect::{self, Inspected};

/// Held or free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Held,
    Free,
}

/// One lock across the nodes (the JSON of `status` and `list`).
#[derive(Debug, Serialize)]
pub struct LockState {
    #[serde(flatten)]
    names: JsonName,
    /// The name for people (one line, escaped).
    #[serde(skip)]
    pub name: String,
    pub state: State,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<Holder>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_left_ms: Option<u64>,
    /// Nodes on which the holder's token is the lock's value.
    pub nodes_present: usize,
    /// Those nodes' URLs (passwords redacted).
    pub present_on: Vec<String>,
    /// Nodes given (`--redis` × N), reachable or not.
    pub nodes: usize,
    /// Nodes given that did not answer (down at connect time or on this read).
    pub nodes_unreachable: usize,
    /// The last run recorded in the lock's history (`status` only; absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run: Option<RunRecord>,
    /// A semaphore (`--limit`): its number of slots; absent for a plain lock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// A semaphore: how many slots are held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<u32>,
    /// A semaphore: every slot, in order (`holder` null when free).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slots: Vec<SlotState>,
    /// A shared name held by shares (`--shared`): how many hold it, and each of them
    /// (oldest first; `holder` is the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_by: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shares: Vec<Holder>,
    /// A fair queue (`--fair`): its waiters, first in line first; where newest wins
    /// (`--supersede`), the one waiting run; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<Vec<Waiting>>,
    /// The flag that made the queue (`--fair`, `--supersede`), for the text.
    #[serde(skip)]
    pub queue_flag: &'static str,
    /// This host's local queue (`status` only; absent when no run of this host is in it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalWaiters>,
    /// How many runs wait in Redis (its waiters set, on the primary node), where no queue
    /// lists them (`status` only; absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<u64>,
}

/// The runs of this host in the lock's local queue (see `wait/local.rs`).
#[derive(Debug, Clone, Serialize)]
pub struct LocalWaiters {
    /// The local queue's directory.
    pub dir: String,
    /// The host's heads: the runs of this host that contend in Redis.
    pub heads: Vec<u32>,
    /// Runs waiting behind them in the kernel (no Redis connection).
    pub queued: u64,
}

/// A waiter in a fair queue, as it described itself when it joined.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Waiting {
    /// 1 is next.
    pub place: usize,
    #[serde(flatten)]
    pub who: Who,
    /// Since when it waits, Unix ms on its host's clock.
    pub since_ms: Option<u64>,
}

/// One slot of a semaphore.
#[derive(Debug, Serialize)]
pub struct SlotState {
    pub slot: u32,
    pub holder: Option<Holder>,
    pub ttl_left_ms: Option<u64>,
}

/// How many times a read that fell between two changes of a shared name is made again.
const READS: usize = 5;

/// Reads one lock on every node: a plain lock, or every slot of a semaphore (the
/// mode key says `limit L` while one is in use; its first slot's holder stands for it
/// where one holder is shown). The read takes several requests, and a shared name can
/// change between them (its mode key read before its first share came, its shares
/// after its last one left: the marker `shared` held by nobody); such a read is made
/// again, so that what is shown is one state (newcomer-6 P10).
pub async fn read(nodes: &Nodes, keys: &LockKeys) -> Result<LockState> {
    let mut state = read_once(nodes, keys).await?;
    for _ in 1..READS {
        if !state.between_changes() {
            break;
        }
        state = read_once(nodes, keys).await?;
    }
    Ok(state)
}

/// One read of [`read`].
async fn read_once(nodes: &Nodes, keys: &LockKeys) -> Result<LockState> {
    let kind = mode_of(nodes, keys).await;
    let rules = kind.rules();
    if let Some(set) = rules.holders_set(keys) {
        let mut state = read_one(nodes, keys).await?;
        if state
            .holder
            .as_ref()
            .is_some_and(|h| h.token == crate::keys::SHARED)
        {
            state.shares = shares(nodes, keys, &set).await;
            state.shared_by = Some(state.shares.len() as u32);
            state.holder = state.shares.first().cloned().or(state.holder);
        }
        return Ok(state);
    }
    if let Some(flag) = rules.queue_flag() {
        let mut state = read_one(nodes, keys).await?;
        state.queue = Some(queue(nodes, keys).await);
        state.queue_flag = flag;
        return Ok(state);
    }
    let limit = rules.slots();
    if limit < 2 {
        return read_one(nodes, keys).await;
    }
    let mut slots = Vec::new();
    let mut first: Option<LockState> = None;
    for slot in 1..=limit {
        let state = read_one(nodes, &keys.for_slot(slot)).await?;
        slots.push(SlotState {
            slot,
            holder: state.holder.clone(),
            ttl_left_ms: state.ttl_left_ms,
        });
        if first.as_ref().is_none_or(|f| f.holder.is_none()) {
            first = Some(state);
        }
    }
    let mut state = match first {
        Some(state) => state,
        None => read_one(nodes, keys).await?,
    };
    state.names = JsonName::of(keys);
    state.limit = Some(limit);
    state.held = Some(slots.iter().filter(|s| s.holder.is_some()).count() as u32);
    state.slots = slots;
    Ok(state)
}

/// What mode the name is in use as (plain when no mode key says otherwise).
pub async fn mode_of(nodes: &Nodes, keys: &LockKeys) -> LockKind {
    mode(nodes, keys)
        .await
        .as_deref()
        .and_then(LockKind::parse)
        .unwrap_or_default()
}

/// The kind a holder's token holds the name as, for a verb given the token (`extend`,
/// `release --token`): the name's kind, but on a shared name a token holds a share only
/// while its readers hold the lock key; else it is the name's exclusive (plain) holder.
pub async fn kind_of_token(nodes: &Nodes, keys: &LockKeys) -> LockKind {
    let kind = mode_of(nodes, keys).await;
    if kind.rules().holders_set(keys).is_none() {
        return kind;
    }
    let cmd = command::get(&keys.lock);
    let results = nodes.each(|n| n.query::<Option<String>>(&cmd)).await;
    let value = results.into_iter().flatten().flatten().next();
    match value.as_deref() {
        Some(crate::keys::SHARED) => kind,
        _ => LockKind::default(),
    }
}

/// Who holds one lock key (a plain lock, or one slot of a semaphore), if anyone.
pub async fn holder(nodes: &Nodes, keys: &LockKeys) -> Result<Option<Holder>> {
    Ok(read_one(nodes, keys).await?.holder)
}

/// What kind of lock the name is in use as (the mode key: `limit L`, `fair`), if any.
async fn mode(nodes: &Nodes, keys: &LockKeys) -> Option<String> {
    let cmd = command::get(&keys.mode);
    let results = nodes.each(|n| n.query::<Option<String>>(&cmd)).await;
    results.into_iter().flatten().flatten().next()
}

/// How many runs wait in Redis: the waiters set on the primary node, where releases
/// wake them (0 when it cannot be read: the count only adds to what is shown).
pub async fn waiters(nodes: &Nodes, keys: &LockKeys) -> u64 {
    let Some(node) = nodes.primary() else {
        return 0;
    };
    let cmd = command::scard(&keys.waiters);
    node.query::<u64>(&cmd).await.unwrap_or(0)
}

/// A shared name's holders, oldest first: each share's metadata and time left, read on
/// the primary node (`--shared` is refused over several nodes; empty when it cannot be
/// read: the lock's state is the answer, its holders a detail).
pub async fn shares(nodes: &Nodes, keys: &LockKeys, set: &[u8]) -> Vec<Holder> {
    let Some(node) = nodes.primary() else {
        return Vec::new();
    };
    let Ok(tokens) = node.query::<Vec<Vec<u8>>>(&command::zrange_all(set)).await else {
        return Vec::new();
    };
    let mut holders = Vec::new();
    for token in tokens {
        let meta = keys.share_meta(&String::from_utf8_lossy(&token));
        let pairs = node
            .query(&command::hgetall(&meta))
            .await
            .unwrap_or_default();
        let pttl_ms = node.query(&command::pttl(&meta)).await.unwrap_or(-2);
        if pttl_ms >= 0 {
            let held = crate::redis::reply::Held {
                token,
                pttl_ms,
                meta: pairs,
            };
            holders.push(Holder::from_held(&held));
        }
    }
    holders
}

/// A fair queue's waiters in order (what the primary node holds; empty when it cannot
/// be read: the lock's state is the answer, the queue a detail).
async fn queue(nodes: &Nodes, keys: &LockKeys) -> Vec<Waiting> {
    let Some(node) = nodes.primary() else {
        return Vec::new();
    };
    let order = command::zrange_all(&keys.queue);
    let Ok(tokens) = node.query::<Vec<Vec<u8>>>(&order).await else {
        return Vec::new();
    };
    if tokens.is_empty() {
        return Vec::new();
    }
    let who = command::hmget(&keys.queue_info, &tokens);
    let infos: Vec<Option<Vec<u8>>> = node.query(&who).await.unwrap_or_default();
    tokens
        .iter()
        .enumerate()
        .map(|(i, _)| {
            let info = infos.get(i).cloned().flatten().unwrap_or_default();
            Waiting {
                place: i + 1,
                ..serde_json::from_slice(&info).unwrap_or_default()
            }
        })
        .collect()
}

/// Reads one lock key on every node. The holder is the token present on the most nodes.
async fn read_one(nodes: &Nodes, keys: &LockKeys) -> Result<LockState> {
    let call = inspect::call(keys);
    let results = nodes.each(|n| n.run::<Value>(&call)).await;
    // (node URL, holder there), for the nodes where the key is a lock.
    let mut holders: Vec<(String, Holder)> = Vec::new();
    let mut errors = Vec::new();
    for (node, result) in nodes.iter().zip(results) {
        let value = match result {
            Ok(value) => value,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        match inspect::decode(value) {
            Some(Inspected::Free) => {}
            Some(Inspected::Held(held)) => {
                holders.push((node.url().to_string(), Holder::from_held(&held)));
            }
            Some(Inspected::NotALock(kind)) => {
                return Err(Error::new(
                    Kind::NotALock,
                    format!("key {} holds a {kind}, not a lock", printable(&keys.lock)),
                ));
            }
            None => {
                return Err(Error::new(
                    Kind::BadReply,
                    "unexpected reply from the inspect script",
                ));
            }
        }
    }
    let unreachable = nodes.missing() + errors.len();
    if nodes.given() - unreachable < nodes.quorum() {
        // Too few answers to tell a held lock from a free one.
        return Err(errors.remove(0));
    }
    Ok(LockState::from_holders(
        keys,
        holders,
        nodes.given(),
        unreachable,
    ))
}

impl LockState {
    /// The state from each answering node's holder: the token on the most nodes wins.
    fn from_holders(
        keys: &LockKeys,
        holders: Vec<(String, Holder)>,
        given: usize,
        unreachable: usize,
    ) -> Self {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, h) in &holders {
            *counts.entry(h.token.as_str()).or_default() += 1;
        }
        let best = counts
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(t, _)| t.to_string());
        let present_on: Vec<String> = holders
            .iter()
            .filter(|(_, h)| Some(&h.token) == best.as_ref())
            .map(|(url, _)| url.clone())
            .collect();
        let holder = holders
            .into_iter()
            .map(|(_, h)| h)
            .find(|h| Some(&h.token) == best.as_ref());
        LockState {
            names: JsonName::of(keys),
            name: keys.display_name(),
            state: if holder.is_some() {
                State::Held
            } else {
                State::Free
            },
            ttl_left_ms: holder
                .as_ref()
                .and_then(|h| h.ttl_left)
                .map(|t| t.as_millis() as u64),
            holder,
            nodes_present: present_on.len(),
            present_on,
            nodes: given,
            nodes_unreachable: unreachable,
            last_run: None,
            limit: None,
            held: None,
            slots: Vec::new(),
            shared_by: None,
            shares: Vec::new(),
            queue: None,
            queue_flag: "",
            local: None,
            waiting: None,
        }
    }

    /// Whether the read fell between two changes of a shared name: its marker seen
    /// with no share behind it.
    fn between_changes(&self) -> bool {
        self.shares.is_empty()
            && self
                .holder
                .as_ref()
                .is_some_and(|h| h.token == crate::keys::SHARED)
    }

    /// "2 of 3 nodes (1 unreachable)".
    pub fn spread(&self) -> String {
        of_nodes(self.nodes_present, self.nodes, self.nodes_unreachable)
    }

    /// Human lines for `status`.
    pub fn describe(&self, now_ms: u64) -> String {
        let mut out = self.describe_holder(now_ms);
        if let Some(queue) = &self.queue {
            out.push_str(&format!(
                "\n  queue:   {} waiting ({})",
                queue.len(),
                self.queue_flag
            ));
            for w in queue {
                out.push_str(&format!(
                    "\n    #{} {} ({}){}",
                    w.place,
                    w.who.host_pid_user(),
                    w.who.cmd_text(),
                    w.since_ms
                        .map(|s| format!(
                            ", waiting for {}",
                            human(std::time::Duration::from_millis(now_ms.saturating_sub(s)))
                        ))
                        .unwrap_or_default()
                ));
            }
        }
        if let Some(n) = self.waiting.filter(|n| *n > 0) {
            // A plain lock's waiters are tokens in a set: who they are is recorded only
            // in a queue (`--fair`) and, for this host's runs, in its local queue.
            let runs = if n == 1 { "run waits" } else { "runs wait" };
            let hosts = match &self.local {
                Some(local) if !local.heads.is_empty() => format!(
                    "{} of them from this host (below); the others' hosts are not recorded",
                    local.heads.len()
                ),
                _ => "their hosts are not recorded (a --fair queue records them)".to_string(),
            };
            out.push_str(&format!("\n  waiting: {n} {runs} in Redis; {hosts}"));
        }
        if let Some(local) = &self.local {
            let pids: Vec<String> = local.heads.iter().map(|p| p.to_string()).collect();
            out.push_str(&format!(
                "\n  this host: {} contending in Redis (pid {}), {} queued behind (local queue in {})",
                local.heads.len(),
                pids.join(", "),
                local.queued,
                local.dir
            ));
        }
        if let Some(run) = &self.last_run {
            out.push_str(&format!("\n  last run: {}", run.describe()));
            if let Some(slot) = run.slot_words() {
                out.push_str(&format!("\n  its slot: {slot}"));
            }
        }
        out
    }

    /// Who holds the lock, or that it is free; for a semaphore, every slot.
    fn describe_holder(&self, now_ms: u64) -> String {
        if let (Some(limit), Some(held)) = (self.limit, self.held) {
            return self.describe_slots(limit, held, now_ms);
        }
        if let Some(n) = self.shared_by {
            return self.describe_shares(n, now_ms);
        }
        let Some(h) = &self.holder else {
            return format!("{}: free", self.name);
        };
        let mut out = if h.is_known() {
            format!(
                "{}: held by {}\n  command: {}",
                self.name,
                h.who.host_pid_user(),
                h.who.cmd_text(),
            )
        } else {
            format!(
                "{}: held by an unknown holder (no redlock metadata)",
                self.name
            )
        };
        if let (Some(since), Some(held)) = (h.since_ms, h.held_for(now_ms)) {
            out.push_str(&format!(
                "\n  since:   {} (for {})",
                rfc3339(since),
                human(held)
            ));
        }
        if let Some(kept) = &h.kept {
            let ended = kept
                .ended_ms
                .map(|e| format!(" (the run ended at {})", rfc3339(e)))
                .unwrap_or_default();
            out.push_str(&format!(
                "\n  kept:    by --hold-min until {}{ended}: the lock keeps other hosts from running the job again",
                rfc3339(kept.until_ms)
            ));
        }
        out.push_str(&format!(
            "\n  ttl:     {}\n  token:   {}…",
            h.ttl_left.map_or("none (never expires)".into(), human),
            h.token_prefix()
        ));
        if let Some(fence) = h.fence {
            out.push_str(&format!("\n  fence:   {fence}"));
        }
        out.push_str(&newest_lines(h));
        if self.nodes > 1 {
            out.push_str(&format!(
                "\n  nodes:   present on {}: {}",
                self.spread(),
                self.present_on.join(", ")
            ));
        }
        out
    }

    /// A semaphore's slots, one line each.
    fn describe_slots(&self, limit: u32, held: u32, now_ms: u64) -> String {
        let mut out = format!("{}: {held} of {limit} slots held", self.name);
        for slot in &self.slots {
            out.push_str(&format!("\n  slot {}: ", slot.slot));
            match &slot.holder {
                Some(h) => out.push_str(&one_of_many(h, now_ms)),
                None => out.push_str("free"),
            }
        }
        out
    }

    /// A shared name's holders, one line each (`--shared`).
    fn describe_shares(&self, n: u32, now_ms: u64) -> String {
        let runs = if n == 1 { "run" } else { "runs" };
        let mut out = format!("{}: shared by {n} {runs} (--shared)", self.name);
        for (i, h) in self.shares.iter().enumerate() {
            out.push_str(&format!("\n  #{}: {}", i + 1, one_of_many(h, now_ms)));
        }
        out
    }

    /// What `list` and `top` say of who holds the name: every slot's or share's holder,
    /// else the one holder (`None`: free).
    pub fn holders_text(&self, now_ms: u64) -> Option<String> {
        let h = self.holder.as_ref()?;
        let each = |holders: Vec<String>| holders.join("; ");
        Some(match (self.limit, self.held, self.shared_by) {
            (Some(limit), Some(held), _) => {
                let slots = self.slots.iter().filter_map(|s| {
                    Some(format!(
                        "slot {}: {}",
                        s.slot,
                        s.holder.as_ref()?.describe(now_ms)
                    ))
                });
                format!("{held} of {limit} slots held: {}", each(slots.collect()))
            }
            (_, _, Some(n)) => {
                let shares = self.shares.iter().map(|h| h.describe(now_ms));
                format!("shared by {n}: {}", each(shares.collect()))
            }
            _ => h.describe(now_ms),
        })
    }
}

/// One of a semaphore's or a shared name's holders: who, ttl and fence.
fn one_of_many(h: &Holder, now_ms: u64) -> String {
    let mut out = h.describe(now_ms);
    if let Some(ttl) = h.ttl_left {
        out.push_str(&format!(", ttl {}", human(ttl)));
    }
    if let Some(fence) = h.fence {
        out.push_str(&format!(", fence {fence}"));
    }
    out
}

/// What `status` says of a holder where newest wins (or that may be preempted), and
/// what it announces (`--announce`): its order key, whether it refuses to be stopped, a request to stop it, and how many
/// waiting runs newer ones superseded while it held.
fn newest_lines(h: &Holder) -> String {
    let s = &h.stopping;
    let mut out = String::new();
    if !s.with.is_empty() {
        out.push_str(&format!(
            "\n  held with: {} (one run holds them together)",
            s.with.join(", ")
        ));
    }
    if let Some(value) = &s.announce {
        out.push_str(&format!("\n  announce: {}", crate::report::shown(value)));
    }
    if let Some(key) = s.order_key {
        out.push_str(&format!("\n  order key: {key}"));
    }
    if s.uninterruptible {
        out.push_str("\n  uninterruptible: a newer run waits for it (--uninterruptible)");
    }
    if s.preempt.is_some() {
        out.push_str(&format!(
            "\n  stopping:{}",
            h.stop_note().trim_start_matches(',')
        ));
    }
    if s.superseded > 0 {
        out.push_str(&format!(
            "\n  superseded: {} waiting runs while it held (--supersede)",
            s.superseded
        ));
    }
    out
}

/// "2 of 3 nodes (1 unreachable)".
pub fn of_nodes(present: usize, given: usize, unreachable: usize) -> String {
    let mut out = format!("{present} of {given} nodes");
    if unreachable > 0 {
        out.push_str(&format!(" ({unreachable} unreachable)"));
    }
    out
}
