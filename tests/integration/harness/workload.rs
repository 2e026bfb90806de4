//! The mutual-exclusion workload and its checker.

use std::time::Duration;

use super::{Scratch, output_within, redlock_run, stderr};

/// The result of a contention run (see [`contend`]).
#[derive(Debug)]
pub struct Contention {
    /// Critical sections that wrote END.
    pub sections: usize,
    /// Pairs of sections that overlapped in the shared log.
    pub overlaps: usize,
    /// The counter's final value (must equal `sections`).
    pub counter: usize,
    /// Tokens seen more than once.
    pub duplicate_tokens: usize,
    /// Sections whose fencing number was not larger than the previous section's.
    pub fences_not_increasing: usize,
    /// Exit codes of the wrappers other than 0.
    pub failures: Vec<i32>,
}

/// The mutual-exclusion workload (Jepsen "lock-set" adapted to a wrapper): `procs`
/// processes each run `rounds` times `redlock-run --wait forever <args> -- child`, where
/// the child appends `BEGIN token fence` to a shared O_APPEND log, reads a counter file,
/// writes it back plus one, and appends `END token`. The log order is the real order
/// of those writes, so a second BEGIN before an END is an overlap; a lost update shows
/// in the counter even where the log missed it.
pub fn contend(args: &[String], procs: usize, rounds: usize) -> Contention {
    let scratch = Scratch::new();
    let log = scratch.path("log");
    let counter = scratch.path("counter");
    std::fs::write(&counter, "0").unwrap();
    let child = scratch.script(
        "section",
        &format!(
            "echo \"BEGIN $REDLOCK_TOKEN $REDLOCK_FENCE\" >> '{log}'\n\
             n=$(cat '{counter}')\n\
             echo $((n + 1)) > '{counter}'\n\
             echo \"END $REDLOCK_TOKEN\" >> '{log}'",
            log = log.display(),
            counter = counter.display()
        ),
    );
    let workers: Vec<_> = (0..procs)
        .map(|_| {
            let args = args.to_vec();
            let child = child.clone();
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                for _ in 0..rounds {
                    let out = output_within(
                        redlock_run()
                            .args(&args)
                            .args(["--wait", "forever", "--"])
                            .arg(&child),
                        Duration::from_secs(120),
                    );
                    let code = out.status.code().unwrap_or(-1);
                    if code != 0 {
                        eprintln!("wrapper exit {code}: {}", stderr(&out));
                        failures.push(code);
                    }
                }
                failures
            })
        })
        .collect();
    let failures: Vec<i32> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("worker"))
        .collect();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let mut open: Option<&str> = None;
    let mut overlaps = 0;
    let mut sections = 0;
    let mut seen = std::collections::HashSet::new();
    let mut duplicate_tokens = 0;
    let mut last_fence = 0u64;
    let mut fences_not_increasing = 0;
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("BEGIN", rest)) => {
                let (token, fence) = rest.split_once(' ').expect("BEGIN token fence");
                let fence: u64 = fence.parse().expect("a fencing number");
                if fence <= last_fence {
                    fences_not_increasing += 1;
                }
                last_fence = fence;
                if open.is_some() {
                    overlaps += 1;
                }
                if !seen.insert(token.to_string()) {
                    duplicate_tokens += 1;
                }
                open = Some(token);
            }
            Some(("END", token)) => {
                if open != Some(token) {
                    overlaps += 1;
                }
                open = None;
                sections += 1;
            }
            _ => panic!("garbled log line {line:?}"),
        }
    }
    let counter = std::fs::read_to_string(&counter)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    Contention {
        sections,
        overlaps,
        counter,
        duplicate_tokens,
        fences_not_increasing,
        failures,
    }
}
