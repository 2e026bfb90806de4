//! Runs of several names (`--key A --key B …`, issue 43) in the workload, and the check
//! that no run holds a name while it waits for another.
//!
//! - [`Sets`]: a small pool of names (mutexes, perhaps one `--limit NAME=N` pool or one
//!   name the readers hold `--shared NAME`); each run of a contender holds a random 2–3
//!   of them, in a random command-line order ([`Sets::pick`]). Its section takes each
//!   name's witness (as `workload`'s section does for one name) and writes, per name,
//!   `BEGIN <run> <token> <fence> <slot> <name>` and `END <run> <token> <name>` into the
//!   one shared log; [`Sets::judge`] splits the log by name and judges each with
//!   `checker` and its own limit. The checker reads four words after BEGIN and two after
//!   END, so the name at the end is ignored there, and the runs the nemesis picks by
//!   their BEGIN lines are found as for one name.
//! - [`HoldSampler`]: while the trial runs, reads every holder of the pool's names in one
//!   server-side snapshot every [`SAMPLE_EVERY`]; a wrapper (by pid) that holds some of
//!   its names and not the others it says it holds them with (`with`) is a partial
//!   hold. A pass over the names makes one for a round trip; one seen with the same
//!   tokens across samples more than [`PARTIAL_AT_MOST`] apart, none of them taken
//!   while a fault was in the air or just after ([`Disturbed`]), is a name held while
//!   its run waited ([`partial_holds`], pure, tested below).
//!
//! Not here: which draws hold sets and the invariants' wording (`generated.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Scratch;
use super::checker::{self, Verdict};
use super::nemesis::Fault;

/// How often the sampler reads the holders.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// The longest a partial hold may be seen (first to last sample, every sample between
/// undisturbed): a pass over three names takes a few round trips; a run that kept a
/// name while it waited (BLPOP) keeps it until the other is released or its ttl ends.
pub const PARTIAL_AT_MOST: Duration = Duration::from_millis(600);

/// One name of the pool and how the runs hold it.
#[derive(Debug, Clone, PartialEq)]
pub struct SetName {
    pub name: String,
    /// 1: a mutex; N > 1: a pool (`--limit NAME=N`).
    pub limit: usize,
    /// The readers (the workload's first `readers` contenders) hold it `--shared NAME`,
    /// the others exclusively.
    pub read_shared: bool,
}

impl SetName {
    /// Whether its sections count (read, pause, write a counter of their own): its
    /// exclusive sections when it is not a pool.
    fn counts(&self) -> bool {
        self.limit == 1
    }

    /// The variable that holds its fencing number in the command's environment, as the
    /// README says it is named: `REDLOCK_FENCE_` and the name in upper case, each
    /// character other than A-Z and 0-9 as `_`.
    fn fence_var(&self) -> String {
        let upper: String = self
            .name
            .chars()
            .map(|c| match c.to_ascii_uppercase() {
                c @ ('A'..='Z' | '0'..='9') => c,
                _ => '_',
            })
            .collect();
        format!("REDLOCK_FENCE_{upper}")
    }
}

/// The names runs of several names draw from (see the module header).
#[derive(Debug, Clone)]
pub struct Sets {
    pub names: Vec<SetName>,
    /// Half the runs do their section in a nested `redlock-run --wait 0` of a subset of
    /// their names (issue 50): it must run at once, never wait for its own holder.
    pub nest: bool,
}

/// What one run holds: its `--key`, `--limit NAME=N` and `--shared NAME` arguments, and
/// the section's environment (`H<i>=1` for each name `i` of the pool it holds); and
/// the arguments of the nested run of a subset of them, if it nests.
pub struct Picked {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub nested: Option<Vec<String>>,
}

/// What the judge found of one name.
#[derive(Debug)]
pub struct NameVerdict {
    pub name: String,
    pub verdict: Verdict,
    /// Updates lost to an overlap, and increments nobody can account for (names that
    /// count: not a pool).
    pub lost_updates: u64,
    pub phantom_updates: u64,
}

impl Sets {
    /// Draws the names of one run: 2 or 3 (never more than the pool), in a random
    /// order; a reader holds the read-shared name `--shared`.
    pub fn pick(&self, reader: bool) -> Picked {
        let mut order: Vec<usize> = (0..self.names.len()).collect();
        fastrand::shuffle(&mut order);
        order.truncate(fastrand::usize(2..=3).min(self.names.len()));
        let args = self.args_of(&order, reader);
        let nested = (self.nest && fastrand::bool()).then(|| {
            let mut subset = order.clone();
            fastrand::shuffle(&mut subset);
            subset.truncate(fastrand::usize(1..=order.len()));
            self.args_of(&subset, reader)
        });
        let env = (0..self.names.len())
            .map(|i| {
                let held = if order.contains(&i) { "1" } else { "0" };
                (format!("H{i}"), held.to_string())
            })
            .collect();
        Picked { args, env, nested }
    }

    /// The `--key`, `--limit NAME=N` and `--shared NAME` arguments of the names
    /// `order` (indexes into the pool), in that order; a reader holds the read-shared
    /// name `--shared`.
    fn args_of(&self, order: &[usize], reader: bool) -> Vec<String> {
        let mut args = Vec::new();
        for &i in order {
            args.extend(["--key".to_string(), self.names[i].name.clone()]);
        }
        for &i in order {
            let n = &self.names[i];
            if n.limit > 1 {
                args.extend(["--limit".to_string(), format!("{}={}", n.name, n.limit)]);
            }
            if n.read_shared && reader {
                args.extend(["--shared".to_string(), n.name.clone()]);
            }
        }
        args
    }

    /// The counter files the section reads, one per name (a pool's is never written).
    pub fn prepare(&self, scratch: &Scratch) {
        for i in 0..self.names.len() {
            std::fs::write(counter(scratch, i), "0").expect("a name's counter");
        }
    }

    /// The section of a run of several names: per name it holds, its witness (slots,
    /// or the read-shared file), a BEGIN line and its counter read; one pause; per name,
    /// its counter written and an END line. `$RUN`, `$PAUSE`, `$SHARE` and `$H<i>` come
    /// from the contender; name `i` uses fd `3 + i`.
    pub fn section_script(&self, scratch: &Scratch, ignore_term: bool) -> String {
        let log = scratch.path("log");
        let log = log.display();
        let mut s = String::from(if ignore_term { "trap '' TERM\n" } else { "" });
        // A run that nests does its section in `redlock-run $NESTED --wait 0` (a subset
        // of its names, see [`Sets::pick`]), which must run at once: its status goes
        // to the log as `NESTED <run> <status>`.
        s.push_str(&format!(
            "if [ -n \"$NESTED\" ]; then\n  \
             n=$NESTED; NESTED=; export NESTED\n  \
             \"$RUN_BIN\" $n --wait 0 -- \"$0\"; rc=$?\n  \
             echo \"NESTED $RUN $rc\" >> '{log}'\n  \
             exit 0\n\
             fi\n"
        ));
        for (i, n) in self.names.iter().enumerate() {
            let fd = 3 + i;
            let witness = if n.read_shared {
                let file = scratch.path(&format!("witness{i}"));
                format!(
                    "exec {fd}>>'{w}'\n  \
                     if [ \"$SHARE\" = 1 ]; then flock -n -s {fd} && s=S\n  \
                     else flock -n -x {fd} && s=0; fi\n",
                    w = file.display()
                )
            } else {
                let slots = scratch.path(&format!("slot{i}-"));
                format!(
                    "i=0; while [ $i -lt {limit} ]; do\n    \
                     exec {fd}>>'{slots}'$i\n    \
                     if flock -n {fd}; then s=$i; break; fi\n    \
                     exec {fd}>&-; i=$((i + 1))\n  \
                     done\n",
                    limit = n.limit,
                    slots = slots.display()
                )
            };
            s.push_str(&format!(
                "if [ \"$H{i}\" = 1 ]; then\n  s=-\n  {witness}  \
                 echo \"BEGIN $RUN $REDLOCK_TOKEN ${{{var}:--}} $s {name}\" >> '{log}'\n  \
                 read c{i} < '{counter}'\n\
                 fi\n",
                var = n.fence_var(),
                name = n.name,
                counter = counter(scratch, i).display(),
            ));
        }
        s.push_str("[ \"$PAUSE\" = 0 ] || sleep \"$PAUSE\"\n");
        for (i, n) in self.names.iter().enumerate() {
            if !n.counts() {
                continue;
            }
            let reader = if n.read_shared {
                " && [ \"$SHARE\" != 1 ]"
            } else {
                ""
            };
            s.push_str(&format!(
                "if [ \"$H{i}\" = 1 ]{reader}; then echo $((c{i} + 1)) > '{c}'.$$ && mv '{c}'.$$ '{c}'; fi\n",
                c = counter(scratch, i).display(),
            ));
        }
        for (i, n) in self.names.iter().enumerate() {
            s.push_str(&format!(
                "[ \"$H{i}\" = 1 ] && echo \"END $RUN $REDLOCK_TOKEN {name}\" >> '{log}'\n",
                name = n.name
            ));
        }
        s.push_str("exit 0");
        s
    }

    /// Each name's lines of the log, judged against its limit, with its counter.
    pub fn judge(&self, log: &str, scratch: &Scratch) -> Vec<NameVerdict> {
        self.names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let verdict = checker::check(&lines_of(log, &n.name), n.limit);
                let counted: u64 = std::fs::read_to_string(counter(scratch, i))
                    .unwrap_or_default()
                    .trim()
                    .parse()
                    .unwrap_or(0);
                let (lost_updates, phantom_updates) = if n.counts() {
                    (
                        checker::lost_updates(&verdict, counted),
                        checker::phantom_updates(&verdict, counted),
                    )
                } else {
                    (0, 0)
                };
                NameVerdict {
                    name: n.name.clone(),
                    verdict,
                    lost_updates,
                    phantom_updates,
                }
            })
            .collect()
    }

    /// The names that are plain mutexes: their fences must increase in log order (a
    /// pool's and a shared name's are drawn in the order taken, not logged).
    pub fn is_mutex(&self, name: &str) -> bool {
        self.names
            .iter()
            .any(|n| n.name == name && n.limit == 1 && !n.read_shared)
    }
}

/// The runs whose nested run (of names they held) found a name busy (75) though the
/// run kept its names to its end (it exited 0): a nested run that waited for its own
/// holder. From the log's `NESTED <run> <status>` and `EXIT <run> <status>` lines.
pub fn nested_busy(log: &str) -> (usize, Vec<String>) {
    let mut nested = BTreeMap::new();
    let mut exits = BTreeMap::new();
    for line in log.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["NESTED", run, code] => {
                nested.insert(run.to_string(), code.to_string());
            }
            ["EXIT", run, code] => {
                exits.insert(run.to_string(), code.to_string());
            }
            _ => {}
        }
    }
    let busy = nested
        .iter()
        .filter(|(run, code)| *code == "75" && exits.get(*run).is_some_and(|c| c == "0"))
        .map(|(run, _)| run.clone())
        .collect();
    (nested.len(), busy)
}

/// The counter file of name `i`.
fn counter(scratch: &Scratch, i: usize) -> std::path::PathBuf {
    scratch.path(&format!("counter{i}"))
}

/// The BEGIN and END lines of `name` (the last word of each), the rest of the log
/// dropped.
fn lines_of(log: &str, name: &str) -> String {
    let mut out = String::new();
    for line in log.lines() {
        let mut words = line.split(' ');
        let kind = words.next();
        if matches!(kind, Some("BEGIN") | Some("END")) && words.next_back() == Some(name) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The verdicts of several names as one (sums; the most holders of any name; fences
/// only of the names `mutex` says are mutexes).
pub fn merged(names: &[NameVerdict], mutex: impl Fn(&str) -> bool) -> Verdict {
    let mut all = Verdict::default();
    for n in names {
        let v = &n.verdict;
        all.sections += v.sections;
        all.shared_sections += v.shared_sections;
        all.most_shared = all.most_shared.max(v.most_shared);
        all.unfinished += v.unfinished;
        all.overlaps += v.overlaps;
        all.max_holders = all.max_holders.max(v.max_holders);
        all.duplicate_tokens += v.duplicate_tokens;
        if mutex(&n.name) {
            all.fences_not_increasing += v.fences_not_increasing;
        }
        all.out_of_order += v.out_of_order;
        all.stray_ends += v.stray_ends;
    }
    all
}

// Faults in the air -----------------------------------------------------------------

/// Whether a fault is in the air, or was healed less than a grace ago: a fault may
/// leave a name behind that its run gave back in vain (a release lost to a dropped
/// reply, a killed connection, a stopped wrapper) until its ttl ends.
#[derive(Clone, Default)]
pub struct Disturbed(Arc<Mutex<(usize, Option<Instant>)>>);

impl Disturbed {
    /// Wraps each fault's step so that it marks the time it is in the air, plus
    /// `grace` after it healed.
    pub fn watch(&self, faults: &mut [Fault], grace: Duration) {
        for fault in faults {
            let mut step = std::mem::replace(&mut fault.step, Box::new(|_| {}));
            let marks = self.clone();
            fault.step = Box::new(move |u| {
                marks.begin();
                step(u);
                marks.end(grace);
            });
        }
    }

    fn begin(&self) {
        self.0.lock().unwrap().0 += 1;
    }

    fn end(&self, grace: Duration) {
        let mut state = self.0.lock().unwrap();
        state.0 -= 1;
        let calm_from = Instant::now() + grace;
        state.1 = Some(state.1.map_or(calm_from, |c| c.max(calm_from)));
    }

    /// No fault in the air and none healed within its grace.
    pub fn calm(&self) -> bool {
        let state = self.0.lock().unwrap();
        state.0 == 0 && state.1.is_none_or(|c| Instant::now() >= c)
    }
}

// The sampler -----------------------------------------------------------------------

/// One holder of a name as the snapshot saw it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seen {
    pub name: String,
    pub token: String,
    pub pid: String,
    /// The other names its run holds with it.
    pub with: Vec<String>,
}

/// One snapshot: when (ms from the sampler's start), whether no fault was in the air
/// from before it was asked to after it answered, and every holder seen (`None`: the
/// server did not answer).
#[derive(Debug, Clone)]
pub struct Sample {
    pub at_ms: u64,
    pub calm: bool,
    pub seen: Option<Vec<Seen>>,
}

/// Every holder of the given names, at one instant (a script runs alone): the lock key
/// and each pool slot whose value is the token of its metadata hash, and each share
/// whose deadline is ahead. ARGV: the prefix, then name and slots pairs.
const SNAPSHOT: &str = r"
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
local function seen(name, token, meta)
  local f = redis.call('HMGET', meta, 'token', 'pid', 'with')
  if f[1] == token then
    table.insert(out, {name, token, f[2] or '', f[3] or '[]'})
  end
end
local function plain(name, key, meta)
  if redis.call('TYPE', key).ok == 'string' then
    seen(name, redis.call('GET', key), meta)
  end
end
for i = 2, #ARGV, 2 do
  local name, slots = ARGV[i], tonumber(ARGV[i + 1])
  local lock = ARGV[1] .. '{' .. name .. '}'
  plain(name, lock, lock .. ':meta')
  for s = 2, slots do
    plain(name, lock .. ':slot:' .. s, lock .. ':slot:' .. s .. ':meta')
  end
  if redis.call('TYPE', lock .. ':shares').ok == 'zset' then
    for _, token in ipairs(redis.call('ZRANGEBYSCORE', lock .. ':shares', '(' .. now_ms, '+inf')) do
      seen(name, token, lock .. ':meta:' .. token)
    end
  end
end
return out
";

/// Reads the holders of a pool's names every [`SAMPLE_EVERY`] until stopped.
pub struct HoldSampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Sample>>,
}

impl HoldSampler {
    /// Starts sampling the names of `sets` on the server at `port`.
    pub fn start(port: u16, sets: &Sets, disturbed: Disturbed) -> HoldSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let mut argv = vec!["redlock:".to_string()];
        for n in &sets.names {
            argv.extend([n.name.clone(), n.limit.to_string()]);
        }
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let script = redis::Script::new(SNAPSHOT);
            let mut conn = None;
            let mut samples = Vec::new();
            while !stopping.load(Ordering::SeqCst) {
                let calm_before = disturbed.calm();
                let seen = snapshot(port, &mut conn, &script, &argv);
                samples.push(Sample {
                    at_ms: started.elapsed().as_millis() as u64,
                    calm: calm_before && disturbed.calm(),
                    seen,
                });
                std::thread::sleep(SAMPLE_EVERY);
            }
            samples
        });
        HoldSampler { stop, thread }
    }

    /// Stops sampling; every sample taken.
    pub fn finish(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().expect("hold sampler")
    }
}

/// One snapshot over `conn` (opened again when it failed); `None` when the server did
/// not answer within 300 ms.
fn snapshot(
    port: u16,
    conn: &mut Option<redis::Connection>,
    script: &redis::Script,
    argv: &[String],
) -> Option<Vec<Seen>> {
    if conn.is_none() {
        let opened = redis::Client::open(format!("redis://127.0.0.1:{port}"))
            .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
            .ok()?;
        let _ = opened.set_read_timeout(Some(Duration::from_millis(300)));
        *conn = Some(opened);
    }
    let rows: Result<Vec<(String, String, String, String)>, _> =
        script.arg(argv).invoke(conn.as_mut()?);
    let Ok(rows) = rows else {
        *conn = None;
        return None;
    };
    Some(
        rows.into_iter()
            .map(|(name, token, pid, with)| Seen {
                name,
                token,
                pid,
                with: serde_json::from_str(&with).unwrap_or_default(),
            })
            .collect(),
    )
}

/// A run (by pid) that holds some of its names and not all, as one sample saw it:
/// its pid and the names it held with their tokens, and the names it lacked.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Partial {
    pid: String,
    held: BTreeSet<(String, String)>,
    lacking: BTreeSet<String>,
}

/// The partial holds of one sample.
fn partials(seen: &[Seen]) -> BTreeSet<Partial> {
    let mut by_pid: BTreeMap<&str, Vec<&Seen>> = BTreeMap::new();
    for s in seen.iter().filter(|s| !s.pid.is_empty()) {
        by_pid.entry(&s.pid).or_default().push(s);
    }
    let mut out = BTreeSet::new();
    for (pid, held) in by_pid {
        let names: BTreeSet<&str> = held.iter().map(|s| s.name.as_str()).collect();
        let lacking: BTreeSet<String> = held
            .iter()
            .flat_map(|s| s.with.iter())
            .filter(|n| !names.contains(n.as_str()))
            .cloned()
            .collect();
        if !lacking.is_empty() {
            out.insert(Partial {
                pid: pid.to_string(),
                held: held
                    .iter()
                    .map(|s| (s.name.clone(), s.token.clone()))
                    .collect(),
                lacking,
            });
        }
    }
    out
}

/// What the samples show of partial holds: how many samples were taken and were calm, how many
/// partial holds were seen in calm samples (a pass in progress), the longest one seen
/// across calm samples (ms), and those seen for longer than `at_most`: the same pid
/// holding the same names with the same tokens and lacking others, in every calm
/// sample from the first to the last (a sample that is not calm, or that the server
/// did not answer, ends what was being followed).
#[derive(Debug, Default, PartialEq)]
pub struct PartialHolds {
    pub samples: usize,
    pub calm_samples: usize,
    pub seen: usize,
    pub longest_ms: u64,
    pub too_long: Vec<String>,
}

/// Judges the samples (see [`PartialHolds`]).
pub fn partial_holds(samples: &[Sample], at_most: Duration) -> PartialHolds {
    let at_most = at_most.as_millis() as u64;
    let mut found = PartialHolds {
        samples: samples.len(),
        ..PartialHolds::default()
    };
    // Each partial hold followed: since when, and whether it was reported (once).
    let mut open: BTreeMap<Partial, (u64, bool)> = BTreeMap::new();
    for sample in samples {
        let seen = match (&sample.seen, sample.calm) {
            (Some(seen), true) => seen,
            _ => {
                open.clear();
                continue;
            }
        };
        found.calm_samples += 1;
        let now = partials(seen);
        found.seen += now.len();
        open.retain(|p, _| now.contains(p));
        for p in now {
            let (since, reported) = open.entry(p.clone()).or_insert((sample.at_ms, false));
            let lasted = sample.at_ms - *since;
            found.longest_ms = found.longest_ms.max(lasted);
            if lasted > at_most && !*reported {
                *reported = true;
                found.too_long.push(format!(
                    "pid {} held {:?} without {:?} from {since} ms to {} ms",
                    p.pid,
                    p.held.iter().map(|(n, _)| n).collect::<Vec<_>>(),
                    p.lacking,
                    sample.at_ms
                ));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(name: &str, token: &str, pid: &str, with: &[&str]) -> Seen {
        Seen {
            name: name.into(),
            token: token.into(),
            pid: pid.into(),
            with: with.iter().map(|w| w.to_string()).collect(),
        }
    }

    fn sample(at_ms: u64, calm: bool, seen: Vec<Seen>) -> Sample {
        Sample {
            at_ms,
            calm,
            seen: Some(seen),
        }
    }

    #[test]
    fn sets_a_whole_hold_is_no_partial_one() {
        let whole = vec![seen("a", "t1", "7", &["b"]), seen("b", "t2", "7", &["a"])];
        let samples: Vec<Sample> = (0..20)
            .map(|i| sample(i * 100, true, whole.clone()))
            .collect();
        let found = partial_holds(&samples, Duration::from_millis(600));
        assert_eq!((found.calm_samples, found.seen), (20, 0));
        assert!(found.too_long.is_empty());
    }

    #[test]
    fn sets_a_name_held_while_waiting_is_found_and_a_pass_is_not() {
        let waiting = vec![seen("a", "t1", "7", &["b"]), seen("b", "t9", "8", &[])];
        // A pass: one sample.
        let mut samples = vec![sample(0, true, waiting.clone()), sample(100, true, vec![])];
        assert!(
            partial_holds(&samples, Duration::from_millis(600))
                .too_long
                .is_empty()
        );
        // Kept across 800 ms of calm samples.
        samples.extend((2..=10).map(|i| sample(i * 100, true, waiting.clone())));
        let found = partial_holds(&samples, Duration::from_millis(600));
        assert_eq!(found.longest_ms, 800);
        assert_eq!(found.too_long.len(), 1, "{found:?}");
        assert!(found.too_long[0].contains("pid 7"), "{found:?}");
    }

    #[test]
    fn sets_a_partial_hold_across_a_fault_or_a_new_token_is_not_followed() {
        let waiting = vec![seen("a", "t1", "7", &["b", "c"]), seen("b", "t2", "7", &[])];
        let mut samples: Vec<Sample> = (0..5)
            .map(|i| sample(i * 100, true, waiting.clone()))
            .collect();
        samples.push(sample(500, false, waiting.clone()));
        samples.extend((6..11).map(|i| sample(i * 100, true, waiting.clone())));
        samples.push(Sample {
            at_ms: 1100,
            calm: true,
            seen: None,
        });
        samples.extend((12..17).map(|i| sample(i * 100, true, waiting.clone())));
        // The same pid with another token of `a`: another try.
        let again = vec![seen("a", "t3", "7", &["b", "c"])];
        samples.extend((17..22).map(|i| sample(i * 100, true, again.clone())));
        let found = partial_holds(&samples, Duration::from_millis(600));
        assert!(found.too_long.is_empty(), "{found:?}");
        assert_eq!(found.longest_ms, 400);
    }

    #[test]
    fn sets_log_lines_are_split_by_name() {
        let log = "BEGIN r1 t1 5 0 a\nBEGIN r1 t1 6 0 b\n# inject x\nEND r1 t1 a\nEND r1 t1 b\nEXIT r1 0\n";
        assert_eq!(lines_of(log, "a"), "BEGIN r1 t1 5 0 a\nEND r1 t1 a\n");
        assert_eq!(lines_of(log, "b"), "BEGIN r1 t1 6 0 b\nEND r1 t1 b\n");
    }
}
