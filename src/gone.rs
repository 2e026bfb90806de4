//! Positive proof that a lock's holder is gone, for `redlock release --if-dead`.
//!
//! The rule (the README's invariant): `--if-dead` removes a lock only when it can prove
//! that nothing can still use it. Proof is all of: the holder is a process the lock
//! records exactly (a wrapper's own pid, or `redlock acquire --holder-pid`; never a
//! caller guessed from the process tree), on this machine (same host name and same boot
//! id, read from the `started` the holder recorded), in this PID namespace (recorded
//! and equal), and that process is gone: `kill(pid, 0)` says `ESRCH`, or the pid is a
//! zombie, or it belongs to a process that started at another time (the pid was
//! reused). A lock kept on purpose by `--hold-min` is not a dead holder. Everything
//! else is a refusal that says what could not be checked: no metadata, another host,
//! another boot (a twin machine with the same name, or before a reboot), another or an
//! unrecorded namespace, a pid that exists but that this user cannot inspect (`EPERM`,
//! `hidepid=2`, `ProtectProc=invisible`), or a process that is alive (stopped counts as
//! alive).
//!
//! The judgement is a pure function of the holder's metadata, what this machine is
//! ([`Here`]) and what a probe says of the pid ([`Probe`]), so that every case is
//! table-tested without a second machine.

use crate::holder::{Holder, PidFrom};
use crate::report::human;

/// What this machine is, as the holder's metadata would record it.
#[derive(Debug, Clone, Default)]
pub struct Here {
    pub host: Option<String>,
    /// `/proc/sys/kernel/random/boot_id`.
    pub boot: Option<String>,
    /// `readlink /proc/self/ns/pid`.
    pub pidns: Option<String>,
}

impl Here {
    /// This machine, now.
    pub fn now() -> Self {
        Here {
            host: nix::unistd::gethostname()
                .ok()
                .map(|h| h.to_string_lossy().into_owned()),
            boot: crate::holder::boot_id(),
            pidns: crate::holder::pid_namespace(),
        }
    }
}

/// What the system says of a pid in this namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// `kill(pid, 0)` failed with `ESRCH`: no such process.
    Gone,
    /// A zombie: it has exited and only waits to be reaped.
    Zombie,
    /// It exists and its start time (clock ticks since boot) was read.
    Runs { start: String },
    /// It exists (`EPERM`, or its `/proc` entry cannot be read): it cannot be inspected.
    Hidden,
}

/// Asks the system about `pid`: `kill(pid, 0)` first (it sees every process of the
/// namespace, whatever `/proc` hides), then `/proc/PID/stat` for its state and start.
pub fn probe(pid: u32) -> Probe {
    use nix::errno::Errno;
    let Ok(raw) = i32::try_from(pid) else {
        return Probe::Hidden;
    };
    if raw <= 0 {
        return Probe::Hidden;
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Err(Errno::ESRCH) => return Probe::Gone,
        Ok(()) | Err(Errno::EPERM) => {}
        Err(_) => return Probe::Hidden,
    }
    match crate::holder::state_and_start(pid) {
        Some((state, _)) if state == "Z" => Probe::Zombie,
        Some((_, start)) => Probe::Runs { start },
        None => Probe::Hidden,
    }
}

/// The verdict on one holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Proved gone; why (for the message).
    Gone(String),
    /// Not proved: what could not be checked, and what to do.
    Refused(String),
    /// Not gone: the recorded process is alive, here (so it renews its lock).
    Alive(String),
}

/// Judges whether `holder` is proved gone (see the module's rule). `now_ms`: this
/// machine's wall clock, for the `--hold-min` message.
pub fn judge(holder: &Holder, here: &Here, probe: impl Fn(u32) -> Probe, now_ms: u64) -> Verdict {
    let refuse = |why: String| Verdict::Refused(why);
    if let Some(keep) = &holder.kept {
        return refuse(kept(keep.until_ms, now_ms));
    }
    let (Some(_), Some(pid)) = (&holder.who.host, holder.who.pid) else {
        return refuse("a holder without redlock metadata, whose process cannot be checked".into());
    };
    if holder.pid_from() == PidFrom::Guessed {
        return refuse(format!(
            "taken by `redlock acquire` for pid {pid}, a caller found by walking the process tree: \
             that the lock's user is gone cannot be proved (give `redlock acquire --holder-pid PID` to record it exactly)"
        ));
    }
    // The machine's own name (the holder may show another: REDLOCK_HOST).
    if here.host.as_deref() != holder.machine() {
        return refuse(format!(
            "on another host; --if-dead checks processes on this host ({}) only",
            here.host.as_deref().unwrap_or("?")
        ));
    }
    let Some((boot, start)) = holder.started.as_deref().and_then(|s| s.split_once('/')) else {
        return refuse(format!(
            "and the metadata does not say which process {pid} was (no start time recorded)"
        ));
    };
    if here.boot.as_deref() != Some(boot) {
        return refuse(format!(
            "recorded on another boot ({}): another machine with the same host name, or this one before a reboot, whose process cannot be checked from here",
            crate::report::shown(boot)
        ));
    }
    match (&holder.pidns, &here.pidns) {
        (Some(theirs), Some(ours)) if theirs == ours => {}
        (Some(theirs), Some(ours)) => {
            return refuse(format!(
                "in another PID namespace ({}; this is {ours}), whose pid {pid} cannot be checked from here",
                crate::report::shown(theirs)
            ));
        }
        _ => {
            return refuse(format!(
                "and its PID namespace is not recorded (or not readable here), so pid {pid} cannot be checked"
            ));
        }
    }
    match probe(pid) {
        Probe::Gone => Verdict::Gone(format!("no process {pid} runs")),
        Probe::Zombie => Verdict::Gone(format!("process {pid} has exited (a zombie)")),
        Probe::Runs { start: now } if now != start => Verdict::Gone(format!(
            "process {pid} is another process (the pid was reused)"
        )),
        Probe::Runs { .. } => Verdict::Alive("which is alive".into()),
        Probe::Hidden => refuse(format!(
            "and process {pid} exists but cannot be inspected by this user (another user's process, or /proc mounted with hidepid)"
        )),
    }
}

/// The refusal for a lock kept by `--hold-min` (the holder's description already
/// says until when and when the run ended).
fn kept(until_ms: u64, now_ms: u64) -> String {
    format!(
        "which is no dead holder: --hold-min keeps the lock {} more so that no other host runs the job again, and it expires by itself",
        human(std::time::Duration::from_millis(
            until_ms.saturating_sub(now_ms)
        ))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::holder::{Kept, Who};

    const BOOT: &str = "e24d70bc-0120-4d73-a489-400318d118c7";
    const NS: &str = "pid:[4026531836]";

    fn here() -> Here {
        Here {
            host: Some("web1".into()),
            boot: Some(BOOT.into()),
            pidns: Some(NS.into()),
        }
    }

    fn holder() -> Holder {
        Holder {
            token: "t".into(),
            who: Who {
                host: Some("web1".into()),
                pid: Some(4242),
                user: Some("deploy".into()),
                cmd: Some("./job.sh".into()),
            },
            started: Some(format!("{BOOT}/1000")),
            pidns: Some(NS.into()),
            ..Holder::default()
        }
    }

    fn gone(h: &Holder, p: Probe) -> bool {
        matches!(judge(h, &here(), |_| p.clone(), 0), Verdict::Gone(_))
    }

    fn refusal(h: &Holder, p: Probe) -> String {
        match judge(h, &here(), |_| p.clone(), 0) {
            Verdict::Refused(why) | Verdict::Alive(why) => why,
            Verdict::Gone(why) => panic!("removed: {why}"),
        }
    }

    #[test]
    fn a_recorded_process_that_is_gone_or_reused_is_proof() {
        assert!(gone(&holder(), Probe::Gone));
        assert!(gone(&holder(), Probe::Zombie));
        assert!(gone(
            &holder(),
            Probe::Runs {
                start: "999".into()
            }
        ));
        let given = Holder {
            pid_from: Some(PidFrom::Given),
            ..holder()
        };
        assert!(gone(&given, Probe::Gone));
    }

    #[test]
    fn alive_hidden_or_uninspectable_is_a_refusal() {
        let same = Probe::Runs {
            start: "1000".into(),
        };
        assert_eq!(refusal(&holder(), same.clone()), "which is alive");
        assert!(matches!(
            judge(&holder(), &here(), |_| same.clone(), 0),
            Verdict::Alive(_)
        ));
        assert!(refusal(&holder(), Probe::Hidden).contains("cannot be inspected"));
    }

    #[test]
    fn what_is_not_this_machine_and_namespace_is_a_refusal() {
        let twin = Holder {
            started: Some("0b7c1f4e-1111-2222-3333-444455556666/123456".into()),
            ..holder()
        };
        assert!(refusal(&twin, Probe::Gone).contains("another boot"));
        let elsewhere = Holder {
            who: Who {
                host: Some("web2".into()),
                ..holder().who
            },
            ..holder()
        };
        assert!(refusal(&elsewhere, Probe::Gone).contains("another host"));
        let other_ns = Holder {
            pidns: Some("pid:[4026532000]".into()),
            ..holder()
        };
        assert!(refusal(&other_ns, Probe::Gone).contains("another PID namespace"));
        let no_ns = Holder {
            pidns: None,
            ..holder()
        };
        assert!(refusal(&no_ns, Probe::Gone).contains("not recorded"));
        let no_start = Holder {
            started: None,
            ..holder()
        };
        assert!(refusal(&no_start, Probe::Gone).contains("no start time"));
        let foreign = Holder {
            who: Who::default(),
            ..holder()
        };
        assert!(refusal(&foreign, Probe::Gone).contains("without redlock metadata"));
    }

    #[test]
    fn a_guessed_caller_and_a_hold_min_keep_are_refusals() {
        let guessed = Holder {
            pid_from: Some(PidFrom::Guessed),
            ..holder()
        };
        assert!(refusal(&guessed, Probe::Gone).contains("--holder-pid"));
        // Metadata written by an acquire before the field existed.
        let old_acquire = Holder {
            who: Who {
                cmd: Some("redlock acquire".into()),
                ..holder().who
            },
            ..holder()
        };
        assert!(refusal(&old_acquire, Probe::Gone).contains("--holder-pid"));
        let kept = Holder {
            kept: Some(Box::new(Kept {
                until_ms: 60_000,
                ended_ms: Some(10_000),
            })),
            ..holder()
        };
        let why = refusal(&kept, Probe::Gone);
        assert!(why.contains("--hold-min keeps the lock 1m more"), "{why}");
        assert_eq!(
            kept.kept_note(),
            ", kept by --hold-min until 1970-01-01T00:01:00Z (the run ended at 1970-01-01T00:00:10Z)"
        );
    }
}
