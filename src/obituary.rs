//! What a run's files say once its wrapper is gone: the `--metrics` file's
//! `redlock_running` and `redlock_leader` samples of the run's name turned from 1 to 0
//! (a dead run neither runs nor leads), as a byte-for-byte edit of the file as it was.
//! Pure and allocation-free, so that the group guard (a forked child of a threaded
//! process, which may only make async-signal-safe calls) can apply it when the wrapper
//! is killed, and a standby starting after such a death can apply it too.

/// The sample prefixes of the series a dead run must not leave at 1, for a name as the
/// text format escapes it (`name="…"`).
pub fn prefixes(escaped_name: &str) -> Vec<Vec<u8>> {
    ["redlock_running", "redlock_leader"]
        .iter()
        .map(|metric| format!("{metric}{{name=\"{escaped_name}\"").into_bytes())
        .collect()
}

/// Copies `text` into `out` with every sample line that starts with one of `prefixes`
/// (followed by `}` or `,`: the name is whole) and ends in ` 1` ending in ` 0` instead;
/// the length written and whether anything changed, or `None` when `out` is too small.
pub fn settle(text: &[u8], prefixes: &[&[u8]], out: &mut [u8]) -> Option<(usize, bool)> {
    if out.len() < text.len() {
        return None;
    }
    out[..text.len()].copy_from_slice(text);
    let mut changed = false;
    let mut start = 0;
    while start < text.len() {
        let end = text[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |p| start + p);
        let line = &text[start..end];
        let ours = prefixes.iter().any(|p| {
            !p.is_empty()
                && line.starts_with(p)
                && matches!(line.get(p.len()), Some(b'}') | Some(b','))
        });
        if ours && line.ends_with(b" 1") {
            out[end - 1] = b'0';
            changed = true;
        }
        start = end + 1;
    }
    Some((text.len(), changed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settled(text: &str, name: &str) -> (String, bool) {
        let prefixes = prefixes(name);
        let refs: Vec<&[u8]> = prefixes.iter().map(Vec::as_slice).collect();
        let mut out = vec![0u8; text.len()];
        let (n, changed) = settle(text.as_bytes(), &refs, &mut out).unwrap();
        (String::from_utf8(out[..n].to_vec()).unwrap(), changed)
    }

    #[test]
    fn running_and_leader_of_this_name_only() {
        let text = "# HELP redlock_running 1 while …\n\
                    redlock_running{name=\"web\"} 1\n\
                    redlock_running{name=\"web2\"} 1\n\
                    redlock_leader{name=\"web\"} 1\n\
                    redlock_leader_terms{name=\"web\"} 1\n\
                    redlock_running{name=\"web\",slot=\"2\"} 1\n\
                    redlock_fence{name=\"web\"} 11\n\
                    redlock_last_run_exit_status{name=\"web\"} 1";
        let (out, changed) = settled(text, "web");
        assert!(changed);
        assert_eq!(
            out,
            "# HELP redlock_running 1 while …\n\
             redlock_running{name=\"web\"} 0\n\
             redlock_running{name=\"web2\"} 1\n\
             redlock_leader{name=\"web\"} 0\n\
             redlock_leader_terms{name=\"web\"} 1\n\
             redlock_running{name=\"web\",slot=\"2\"} 0\n\
             redlock_fence{name=\"web\"} 11\n\
             redlock_last_run_exit_status{name=\"web\"} 1"
        );
    }

    #[test]
    fn nothing_to_settle_and_too_small_a_buffer() {
        let text = "redlock_running{name=\"web\"} 0\nredlock_leader{name=\"web\"} 0\n";
        assert_eq!(settled(text, "web"), (text.to_string(), false));
        assert_eq!(settle(b"abc", &[], &mut [0u8; 2]), None);
        // An empty prefix (the guard's unused slot) matches nothing.
        let mut out = [0u8; 6];
        assert_eq!(settle(b"}x 1\n", &[b""], &mut out), Some((5, false)));
        assert_eq!(settled("", "web"), (String::new(), false));
    }
}
