//! The lock-set checker (Jepsen's lock-set, adapted to a wrapper): reads the shared
//! O_APPEND log the critical sections write and judges it by log order only, never by
//! timestamps. Pure, so it is tested on synthetic logs below.
//!
//! The log, one line per `write(2)`:
//!
//! - `BEGIN <run> <token> <fence|-> <slot|->`: a section started. `slot` is the witness
//!   slot the child locked with `flock -n` before writing (see `workload`): a slot is
//!   free only once every process of the previous section on it is dead, so a section
//!   that never wrote END (its child was killed) is closed by the next BEGIN on its
//!   slot; `-` means every slot was taken, i.e. more than the limit were alive.
//! - `END <run> <token>`: the section ended.
//! - `ARRIVE <run>`: the run joined the queue (for FIFO checks; optional).
//! - `# ...`: a note (the nemesis writes its faults there), ignored.
//!
//! With a limit N (1 for a plain lock, N for a semaphore), a BEGIN is an overlap when
//! N sections are open at that point of the log, or when the child found no free slot.
//! A shared section (`--shared`) logs the slot `S`: it does not count against the
//! limit (shares exclude only the exclusive side, which the witness file's `flock -s`
//! and `flock -x` judge: a section that could not take it logs `-`, an overlap).

use std::collections::{HashMap, HashSet};

/// What the checker found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Exclusive sections that wrote END.
    pub sections: usize,
    /// Shared sections (`--shared`) that wrote END, and the most open at once.
    pub shared_sections: usize,
    pub most_shared: usize,
    /// Sections that began and never ended (their child was killed).
    pub unfinished: usize,
    /// BEGINs while `limit` sections were open, or without a free witness slot.
    pub overlaps: usize,
    /// The most sections open at once, this one included.
    pub max_holders: usize,
    /// Tokens seen in more than one BEGIN.
    pub duplicate_tokens: usize,
    /// BEGINs whose fencing number was not above the previous one's.
    pub fences_not_increasing: usize,
    /// BEGINs of a run while a run that arrived later had already begun.
    pub out_of_order: usize,
    /// ENDs without a matching open BEGIN (same run and token).
    pub stray_ends: usize,
}

struct Open<'a> {
    run: &'a str,
    token: &'a str,
    slot: &'a str,
}

impl Open<'_> {
    fn shared(&self) -> bool {
        self.slot == "S"
    }
}

/// Judges a log against a limit of `limit` holders at once.
pub fn check(log: &str, limit: usize) -> Verdict {
    assert!(limit >= 1, "a limit of at least one holder");
    let mut v = Verdict::default();
    let mut open: Vec<Open> = Vec::new();
    let mut tokens = HashSet::new();
    let mut last_fence: Option<u64> = None;
    let mut arrival: HashMap<&str, usize> = HashMap::new();
    let mut latest_arrival_begun: Option<usize> = None;
    for line in log.lines() {
        let mut words = line.split(' ');
        match words.next() {
            Some("BEGIN") => {
                let [run, token, fence, slot] = [(); 4].map(|_| {
                    words
                        .next()
                        .unwrap_or_else(|| panic!("garbled log line {line:?}"))
                });
                if slot != "-" && slot != "S" {
                    // The witness: whoever had this slot is dead; if it never wrote
                    // END, its section ends here.
                    if let Some(i) = open.iter().position(|o| o.slot == slot) {
                        open.remove(i);
                        v.unfinished += 1;
                    }
                }
                let exclusive = open.iter().filter(|o| !o.shared()).count();
                if slot == "-" || (slot != "S" && exclusive >= limit) {
                    v.overlaps += 1;
                }
                v.max_holders = v.max_holders.max(exclusive + 1);
                if slot == "S" {
                    let shared = open.iter().filter(|o| o.shared()).count();
                    v.most_shared = v.most_shared.max(shared + 1);
                }
                if !tokens.insert(token) {
                    v.duplicate_tokens += 1;
                }
                if let Ok(fence) = fence.parse::<u64>() {
                    if last_fence.is_some_and(|last| fence <= last) {
                        v.fences_not_increasing += 1;
                    }
                    last_fence = Some(fence);
                }
                if let Some(&arrived) = arrival.get(run) {
                    if latest_arrival_begun.is_some_and(|latest| latest > arrived) {
                        v.out_of_order += 1;
                    }
                    latest_arrival_begun = latest_arrival_begun.max(Some(arrived));
                }
                open.push(Open { run, token, slot });
            }
            Some("END") => {
                let (run, token) = (words.next(), words.next());
                match open
                    .iter()
                    .position(|o| Some(o.run) == run && Some(o.token) == token)
                {
                    Some(i) if open[i].shared() => {
                        open.remove(i);
                        v.shared_sections += 1;
                    }
                    Some(i) => {
                        open.remove(i);
                        v.sections += 1;
                    }
                    None => v.stray_ends += 1,
                }
            }
            Some("ARRIVE") => {
                let run = words.next().expect("ARRIVE run");
                let next = arrival.len();
                arrival.entry(run).or_insert(next);
            }
            // The run's exit status, written by its contender after the wrapper ended.
            Some("#") | Some("") | Some("EXIT") => {}
            _ => panic!("garbled log line {line:?}"),
        }
    }
    v.unfinished += open.iter().filter(|o| !o.shared()).count();
    v
}

/// Updates lost to an overlap, from the counter the sections read, increment and write:
/// every section that ended wrote it once; one killed before its END may have.
pub fn lost_updates(v: &Verdict, counter: u64) -> u64 {
    (v.sections as u64).saturating_sub(counter)
}

/// Increments nobody can account for (the counter above every possible writer).
pub fn phantom_updates(v: &Verdict, counter: u64) -> u64 {
    counter.saturating_sub((v.sections + v.unfinished) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(lines: &[&str]) -> String {
        lines.join("\n") + "\n"
    }

    #[test]
    fn checker_sequential_sections_are_clean() {
        let v = check(
            &log(&[
                "BEGIN r1 t1 1 0",
                "END r1 t1",
                "# inject F4",
                "BEGIN r2 t2 2 0",
                "END r2 t2",
            ]),
            1,
        );
        assert_eq!(
            v,
            Verdict {
                sections: 2,
                max_holders: 1,
                ..Verdict::default()
            }
        );
        assert_eq!(lost_updates(&v, 2), 0);
        assert_eq!(phantom_updates(&v, 2), 0);
    }

    #[test]
    fn checker_shared_sections_overlap_each_other_never_an_exclusive_one() {
        let v = check(
            &log(&[
                "BEGIN r1 t1 1 S",
                "BEGIN r2 t2 2 S",
                "END r1 t1",
                "END r2 t2",
                "BEGIN w1 t3 3 0",
                "END w1 t3",
                "BEGIN r3 t4 4 S",
                "BEGIN w2 t5 5 -",
                "END w2 t5",
                "END r3 t4",
            ]),
            1,
        );
        assert_eq!((v.shared_sections, v.most_shared, v.sections), (3, 2, 2));
        assert_eq!(v.overlaps, 1, "w2 found the witness held: {v:?}");
        assert_eq!(lost_updates(&v, 2), 0);
    }

    #[test]
    fn checker_a_begin_before_the_previous_end_is_an_overlap() {
        let v = check(
            &log(&[
                "BEGIN r1 t1 1 0",
                "BEGIN r2 t2 2 1",
                "END r1 t1",
                "END r2 t2",
            ]),
            1,
        );
        assert_eq!(v.overlaps, 1);
        assert_eq!(v.max_holders, 2);
        assert_eq!(v.sections, 2);
        // Both read 0 and wrote 1: one update lost.
        assert_eq!(lost_updates(&v, 1), 1);
    }

    #[test]
    fn checker_no_free_witness_slot_is_an_overlap_even_if_the_log_looks_clean() {
        // r1 was killed before END but was still alive (its slot taken) when r2 began.
        let v = check(
            &log(&["BEGIN r1 t1 1 0", "BEGIN r2 t2 2 -", "END r2 t2"]),
            1,
        );
        assert_eq!(v.overlaps, 1);
    }

    #[test]
    fn checker_a_killed_section_ends_at_the_next_begin_on_its_slot() {
        let v = check(
            &log(&[
                "BEGIN r1 t1 1 0",
                "BEGIN r2 t2 2 0",
                "END r2 t2",
                "BEGIN r3 t3 3 0",
            ]),
            1,
        );
        assert_eq!(v.overlaps, 0);
        assert_eq!(v.sections, 1);
        assert_eq!(v.unfinished, 2, "r1 killed, r3 still open at the end");
        // r1 may or may not have written the counter before it was killed.
        assert_eq!(lost_updates(&v, 1), 0);
        assert_eq!(lost_updates(&v, 2), 0);
        assert_eq!(phantom_updates(&v, 4), 1);
    }

    #[test]
    fn checker_duplicate_tokens_and_fences_going_back() {
        let v = check(
            &log(&[
                "BEGIN r1 t1 5 0",
                "END r1 t1",
                "BEGIN r2 t1 5 0",
                "END r2 t1",
                "BEGIN r3 t3 - 0",
                "END r3 t3",
                "BEGIN r4 t4 6 0",
                "END r4 t4",
            ]),
            1,
        );
        assert_eq!(v.duplicate_tokens, 1);
        assert_eq!(v.fences_not_increasing, 1, "5 after 5; `-` is skipped");
        assert_eq!(v.overlaps, 0);
    }

    #[test]
    fn checker_an_end_of_someone_else_is_stray() {
        let v = check(&log(&["BEGIN r1 t1 1 0", "END r2 t1", "END r1 t1"]), 1);
        assert_eq!(v.stray_ends, 1);
        assert_eq!(v.sections, 1);
    }

    #[test]
    fn checker_a_limit_of_n_counts_holders() {
        let three_at_once = log(&[
            "BEGIN r1 t1 - 0",
            "BEGIN r2 t2 - 1",
            "BEGIN r3 t3 - 2",
            "END r2 t2",
            "BEGIN r4 t4 - 1",
            "END r1 t1",
            "END r3 t3",
            "END r4 t4",
        ]);
        let v = check(&three_at_once, 3);
        assert_eq!((v.overlaps, v.max_holders, v.sections), (0, 3, 4));
        let v = check(&three_at_once, 2);
        assert_eq!(v.overlaps, 2, "r3 and r4 each began with two open");
    }

    #[test]
    fn checker_fifo_order_against_arrivals() {
        let fair = log(&[
            "ARRIVE r1",
            "ARRIVE r2",
            "ARRIVE r3",
            "BEGIN r1 t1 1 0",
            "END r1 t1",
            "BEGIN r2 t2 2 0",
            "END r2 t2",
            "BEGIN r3 t3 3 0",
            "END r3 t3",
        ]);
        assert_eq!(check(&fair, 1).out_of_order, 0);
        let unfair = log(&[
            "ARRIVE r1",
            "ARRIVE r2",
            "ARRIVE r3",
            "BEGIN r3 t3 1 0",
            "END r3 t3",
            "BEGIN r1 t1 2 0",
            "END r1 t1",
            "BEGIN r2 t2 3 0",
            "END r2 t2",
        ]);
        assert_eq!(check(&unfair, 1).out_of_order, 2, "r1 and r2 overtaken");
        // Runs without an arrival record are not judged.
        let unrecorded = log(&[
            "ARRIVE r2",
            "BEGIN r1 t1 1 0",
            "END r1 t1",
            "BEGIN r2 t2 2 0",
        ]);
        assert_eq!(check(&unrecorded, 1).out_of_order, 0);
    }

    #[test]
    #[should_panic(expected = "garbled")]
    fn checker_refuses_a_garbled_line() {
        check("BEGIN r1 t1\n", 1);
    }
}
