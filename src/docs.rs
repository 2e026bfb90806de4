//! Man pages and shell completions, generated from the clap definitions by the hidden
//! `redlock generate` verb (`redlock generate --man man --completions completions`). The
//! committed files are checked against [`render`] by a test, so they never go stale.

use std::io;
use std::path::Path;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, RunCli};
use crate::exit::Page;

/// Which directory a generated file goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Man,
    Completions,
}

impl Dir {
    /// The directory's name in the repository.
    pub fn name(self) -> &'static str {
        match self {
            Dir::Man => "man",
            Dir::Completions => "completions",
        }
    }
}

/// One generated file.
pub struct Generated {
    pub dir: Dir,
    /// File name inside the directory.
    pub name: String,
    pub contents: Vec<u8>,
}

impl Generated {
    fn new(dir: Dir, name: String, contents: Vec<u8>) -> Self {
        Generated {
            dir,
            name,
            contents,
        }
    }
}

/// Every generated file.
pub fn render() -> Vec<Generated> {
    let mut out = Vec::new();
    let run = RunCli::command();
    let redlock = Cli::command();
    out.push(Generated::new(
        Dir::Man,
        "redlock-run.1".into(),
        man(run.clone(), Page::Run),
    ));
    out.push(Generated::new(
        Dir::Man,
        "redlock.1".into(),
        man(redlock.clone(), Page::Redlock),
    ));
    // `redlock run` is documented by redlock-run(1), which has the same options.
    for sub in redlock
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "run")
    {
        // Every verb has its page (`exit::Page`); a test holds the two lists together.
        let Some(page_of) = Page::of(sub.get_name()) else {
            continue;
        };
        let name = page_of.man();
        let page = sub.clone().name(name.clone()).display_name(name.clone());
        out.push(Generated::new(
            Dir::Man,
            format!("{name}.1"),
            man(page, page_of),
        ));
    }
    for shell in [
        Shell::Bash,
        Shell::Zsh,
        Shell::Fish,
        Shell::Elvish,
        Shell::PowerShell,
    ] {
        for mut cmd in [without_hidden_verbs(&redlock), run.clone()] {
            let bin = cmd.get_name().to_string();
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut cmd, bin.clone(), &mut buf);
            if shell == Shell::Bash {
                buf.extend_from_slice(bash_after_dashdash(&bin).as_bytes());
            }
            let file = match shell {
                Shell::Bash => format!("{bin}.bash"),
                Shell::Zsh => format!("_{bin}"),
                Shell::Fish => format!("{bin}.fish"),
                Shell::Elvish => format!("{bin}.elv"),
                _ => format!("_{bin}.ps1"),
            };
            out.push(Generated::new(Dir::Completions, file, buf));
        }
    }
    out
}

/// clap's bash completion offers the wrapper's own flags even after `--`; this
/// wrapper completes a command name right after `--` and file names after that (the
/// zsh completion does the same through clap's `_cmdambivalent`).
fn bash_after_dashdash(bin: &str) -> String {
    let clap_fn = if bin == "redlock-run" {
        "_redlock__run"
    } else {
        "_redlock"
    };
    let ours = format!("_{}_after_dashdash", bin.replace('-', "_"));
    format!(
        r#"
# After `--` comes the command: complete command names, then file names.
{ours}() {{
    local i
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [[ "${{COMP_WORDS[i]}}" == "--" ]]; then
            if ((i + 1 == COMP_CWORD)); then
                COMPREPLY=( $(compgen -c -- "${{COMP_WORDS[COMP_CWORD]}}") )
            else
                COMPREPLY=( $(compgen -f -- "${{COMP_WORDS[COMP_CWORD]}}") )
            fi
            return 0
        fi
    done
    {clap_fn} "$@"
}}
complete -F {ours} -o bashdefault -o default {bin}
"#
    )
}

/// A man page: clap's sections (the wrapper's synopsis written out, so that it shows
/// `-- COMMAND`), then EXIT STATUS (this page's rows only), ENVIRONMENT, EXAMPLES and
/// SEE ALSO as real sections.
fn man(cmd: clap::Command, page_of: Page) -> Vec<u8> {
    // `redlock help` is clap's, and has no page of its own to point to.
    let cmd = cmd.disable_help_subcommand(true);
    let mut buf = Vec::new();
    let has_subcommands = cmd.has_subcommands();
    let has_version = cmd.get_version().is_some();
    let name = cmd.get_name().to_string();
    let mut cmd_for_synopsis = cmd.clone();
    cmd_for_synopsis.build();
    let page = clap_mangen::Man::new(cmd);
    // Writing into a Vec cannot fail.
    let _ = page.render_title(&mut buf);
    let _ = page.render_name_section(&mut buf);
    if page_of == Page::Run {
        buf.extend_from_slice(
            format!(
                ".SH SYNOPSIS\n\\fB{}\\fR [\\fIOPTIONS\\fR] \\fB\\-\\-key\\fR \\fINAME\\fR \\fB\\-\\-\\fR \\fICOMMAND\\fR [\\fIARGS\\fR...]\n",
                escape(&name)
            )
            .as_bytes(),
        );
    } else if let Some(verb) = page_of.man().strip_prefix("redlock-") {
        buf.extend_from_slice(verb_synopsis(&cmd_for_synopsis, verb).as_bytes());
    } else {
        let _ = page.render_synopsis_section(&mut buf);
    }
    let _ = page.render_description_section(&mut buf);
    let _ = page.render_options_section(&mut buf);
    if has_subcommands {
        let _ = page.render_subcommands_section(&mut buf);
    }
    buf.extend_from_slice(roff_sections(page_of).as_bytes());
    if has_version {
        let _ = page.render_version_section(&mut buf);
    }
    buf
}

/// A verb's SYNOPSIS as it is typed: `redlock top [--redis URL] ... [PATTERN]` (clap's
/// would name the page, `redlock-top`, which is no command, and drop the values).
fn verb_synopsis(cmd: &clap::Command, verb: &str) -> String {
    let mut line = format!(
        ".SH SYNOPSIS\n\\fB{}\\fR",
        escape(&format!("redlock {verb}"))
    );
    let (options, positionals): (Vec<&clap::Arg>, Vec<&clap::Arg>) = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .partition(|a| !a.is_positional());
    for arg in options {
        let mut names = Vec::new();
        if let Some(short) = arg.get_short() {
            names.push(format!("\\fB\\-{short}\\fR"));
        }
        if let Some(long) = arg.get_long() {
            names.push(format!("\\fB\\-\\-{}\\fR", escape(long)));
        }
        let mut shown = names.join("|");
        if arg.get_action().takes_values() {
            shown.push_str(&format!(" \\fI{}\\fR", value_name(arg)));
        }
        if matches!(arg.get_action(), clap::ArgAction::Append) {
            shown.push_str("...");
        }
        line.push_str(&bracketed(&shown, arg.is_required_set()));
    }
    for arg in positionals {
        let mut shown = format!("\\fI{}\\fR", value_name(arg));
        if arg.get_num_args().is_some_and(|n| n.max_values() > 1) {
            shown.push_str("...");
        }
        line.push_str(&bracketed(&shown, arg.is_required_set()));
    }
    line.push('\n');
    line
}

/// An argument's value as the synopsis shows it: its value name, or its id in capitals.
fn value_name(arg: &clap::Arg) -> String {
    match arg.get_value_names() {
        Some(names) if !names.is_empty() => escape(names[0].as_str()),
        _ => escape(&arg.get_id().as_str().to_uppercase()),
    }
}

/// ` WORD` when required, ` [WORD]` when not.
fn bracketed(shown: &str, required: bool) -> String {
    if required {
        format!(" {shown}")
    } else {
        format!(" [{shown}]")
    }
}

/// The `redlock` command that completion offers: its visible verbs only (clap's
/// completions would offer the hidden maintainer verb `generate` too).
fn without_hidden_verbs(cmd: &clap::Command) -> clap::Command {
    let mut bare = clap::Command::new(cmd.get_name().to_string());
    if let Some(about) = cmd.get_about() {
        bare = bare.about(about.clone());
    }
    if let Some(version) = cmd.get_version() {
        bare = bare.version(version.to_string());
    }
    if let Some(after) = cmd.get_after_long_help() {
        bare = bare.after_long_help(after.clone());
    }
    bare.subcommands(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned())
}

/// Text for roff: backslashes and hyphens escaped.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('-', "\\-")
}

/// EXIT STATUS (from `exit.rs`), ENVIRONMENT, EXAMPLES and SEE ALSO, in roff.
fn roff_sections(page_of: Page) -> String {
    let mut out = String::from(".SH \"EXIT STATUS\"\n");
    let rows = crate::exit::verb_table(page_of);
    for row in rows {
        out.push_str(&format!(
            ".TP\n{}\n{}\n",
            escape(&row.status),
            escape(row.meaning)
        ));
    }
    if page_of == Page::Redlock {
        out.push_str(&format!(
            ".TP\n0 / {} (status)\n{}\n",
            crate::exit::STATUS_FREE,
            escape(&format!(
                "redlock status: 0 when every named lock is held, {} when one is free; see each verb's page",
                crate::exit::STATUS_FREE
            ))
        ));
    }
    out.push_str(".SH ENVIRONMENT\n");
    for (var, meaning) in crate::cli::ENVIRONMENT {
        out.push_str(&format!(".TP\n{}\n{}\n", escape(var), escape(meaning)));
    }
    out.push_str(".SH EXAMPLES\n");
    for (what, command) in examples(page_of) {
        out.push_str(&format!(
            ".PP\n{}\n.PP\n.RS 4\n.nf\n{}\n.fi\n.RE\n",
            escape(what),
            escape(command)
        ));
    }
    out.push_str(".SH \"SEE ALSO\"\n");
    let pages: Vec<String> = Page::ALL
        .iter()
        .filter(|p| **p != page_of)
        .map(|p| format!("\\fB{}\\fR(1)", escape(&p.man())))
        .chain([
            "\\fBflock\\fR(1)".to_string(),
            "\\fBredis\\-server\\fR(1)".to_string(),
        ])
        .collect();
    out.push_str(&pages.join(", "));
    out.push('\n');
    out
}

/// (what it does, the command) for a page's EXAMPLES. (Long because it is data: the
/// examples of every page.)
fn examples(page_of: Page) -> &'static [(&'static str, &'static str)] {
    match page_of {
        Page::Run | Page::Redlock => &[
            (
                "In the crontab of several hosts: the job runs once a minute (of the Redis server's clock), on one host; the other hosts skip that minute without a word.",
                "* * * * * redlock-run --key close-order --once-per 1m -- /opt/jobs/close_orders.sh",
            ),
            (
                "In CI: wait up to 30 minutes for the previous deploy, the password out of the command line.",
                "REDLOCK_REDIS_URL=rediss://ci:PASSWORD@redis:6380 redlock-run --key deploy-production --wait 30m --ttl 1m -- ./deploy.sh",
            ),
            (
                "Once a day (UTC, by the Redis server's clock) whichever host tries first; a failed run is retried by the next try, and so is a run whose host died mid-run (at most 3 starts a day).",
                "*/10 * * * * redlock-run --key nightly-report --once-per 1d --if-vanished rerun -- /opt/jobs/report.sh",
            ),
            (
                "Once a night in Berlin's calendar (a day from local midnight, 23 or 25 hours when the clocks change), whatever the hosts' zones and clocks.",
                "*/10 2-5 * * * redlock-run --key nightly-backup --once-per day --tz Europe/Berlin --if-vanished rerun -- /opt/jobs/backup.sh",
            ),
            (
                "CI, newest wins: a newer pipeline stops the deploy in progress gracefully (SIGINT, 2 minutes to clean up) and replaces any waiting one; an older pipeline retried late exits 73 without deploying.",
                "redlock-run --key deploy-production --supersede running --order-key \"$CI_PIPELINE_IID\" --preempt-signal INT --kill-after 2m --ttl 5m --wait 1h -- ./deploy.sh",
            ),
            (
                "Shared and exclusive: every job of the fleet shares the name; maintenance, without --shared, waits for the jobs in progress while new ones wait behind it.",
                "redlock-run --key fleet --shared --wait 10m -- ./job.sh; redlock-run --key fleet --wait 1h -- ./upgrade.sh",
            ),
            (
                "Several names at once: the environment alone and one of 3 deploy slots; the run waits holding neither, and gets each name's fence as REDLOCK_FENCE_<NAME>.",
                "redlock-run --key \"env-$ENVIRONMENT\" --key deployers --limit deployers=3 --wait 30m -- ./deploy.sh",
            ),
            (
                "Redlock over three independent masters.",
                "redlock-run --key nightly --redis redis://a:6379 --redis redis://b:6379 --redis redis://c:6379 -- ./nightly.sh",
            ),
            (
                "Every host's outcome for node_exporter's textfile collector: the alert is on the newest success over the hosts; a host that did not get the lock reports busy, never a failure.",
                "*/10 * * * * redlock-run --key nightly-report --once-per 1d --busy-exit-code 0 --metrics /var/lib/prometheus/node-exporter/redlock-nightly-report.prom -- /opt/jobs/report.sh",
            ),
            (
                "A CI runner whose jobs run as several users: one local queue for all of them (a directory they can all write), so the runner is one Redis contender however many jobs wait.",
                "REDLOCK_LOCAL_DIR=/run/redlock-ci redlock-run --key deploy-production --wait 30m -- ./deploy.sh",
            ),
        ],
        Page::Status => &[
            (
                "Who holds a lock, for people and for scripts.",
                "redlock status close-order\nredlock status close-order --json | jq .holder.host",
            ),
            (
                "Fail a script step while a lock is held.",
                "redlock status deploy-production || echo free",
            ),
            (
                "The runs of this host waiting for the lock: the one contending in Redis, and those queued behind it.",
                "redlock status deploy-production --json | jq .local",
            ),
        ],
        Page::Top => &[
            (
                "Watch every lock under the prefix, refreshed every second; q quits.",
                "redlock top",
            ),
            (
                "One frame of the deploy locks, for a script or a log.",
                "redlock top 'deploy-*' --once",
            ),
        ],
        Page::List => &[
            (
                "Every held lock, or those whose names start with deploy-.",
                "redlock list\nredlock list 'deploy-*'",
            ),
            (
                "The holders' hosts (the second tab-separated field starts with the host).",
                "redlock list | cut -f2 | cut -d' ' -f1",
            ),
        ],
        Page::Release => &[
            (
                "Clear a stuck lock whoever holds it; it says whose it was.",
                "redlock release close-order --force",
            ),
            (
                "Release only a lock taken with redlock acquire.",
                "redlock release nightly --token \"$token\"",
            ),
        ],
        Page::Acquire => &[(
            "Hold a lock across several steps of a shell script.",
            "token=$(redlock acquire nightly --ttl 10m --wait 1m) || exit\ntrap 'redlock release nightly --token \"$token\"' EXIT\nstep_one\nredlock extend nightly --token \"$token\" --ttl 10m\nstep_two",
        )],
        Page::History => &[
            (
                "Did last night's job run, where, and how did it end?",
                "redlock history nightly-report --limit 5",
            ),
            (
                "The exit status of the last run, for a monitoring check.",
                "redlock history nightly-report --limit 1 --json | jq '.runs[0].status'",
            ),
            (
                "Who ran the nightly jobs in the last week, on which host, and how each run ended.",
                "redlock history --timeline --since 7d 'nightly-*'",
            ),
        ],
        Page::Extend => &[(
            "Keep a lock taken with redlock acquire for ten more minutes; exit 79 if it was lost.",
            "redlock extend nightly --token \"$token\" --ttl 10m",
        )],
        Page::Doctor => &[
            (
                "Check the Redis a cron lock uses before relying on it: exit 1 on a warning, 2 on an error.",
                "redlock doctor --redis redis://redis:6379 --key close-order --ttl 30s",
            ),
            (
                "Check that the lock user's ACL allows every command redlock sends; only the errors, for a script.",
                "REDLOCK_REDIS_URL_FILE=/etc/redlock/url redlock doctor --json | jq '.findings[] | select(.severity == \"error\")'",
            ),
        ],
        Page::Wait => &[
            (
                "Start a dependent step only once the deploy lock is free, without taking it; give up after ten minutes.",
                "redlock wait deploy-production --timeout 10m && ./smoke_test.sh",
            ),
            (
                "In a script: wait for a lock taken elsewhere with redlock acquire.",
                "redlock wait nightly --timeout 1h || echo 'still running after an hour'",
            ),
        ],
        Page::Preempt => &[
            (
                "A CI cancel hook: stop the deploy that holds the lock, gracefully, wherever it runs, and wait until it has released.",
                "redlock preempt deploy-prod --wait 2m",
            ),
            (
                "Terraform stops cleanly on SIGINT: send that instead of the holder's --preempt-signal.",
                "redlock preempt tf-state --signal INT",
            ),
        ],
        Page::Leader => &[
            (
                "Who runs the singleton consumer now, and since when.",
                "redlock leader orders-consumer",
            ),
            (
                "A readiness probe: ready only on the host that leads.",
                "redlock leader orders-consumer --is-me",
            ),
            (
                "Follow the hand-overs during a rollout, one JSON line per change.",
                "redlock leader orders-consumer --watch --json",
            ),
        ],
        Page::Forget => &[
            (
                "A CI branch's lock is gone for good: delete its history and fence counter now instead of 30 days after its last run.",
                "redlock forget \"deploy-$CI_COMMIT_REF_SLUG\"",
            ),
            (
                "Keep one-off names for a day only, set where every run reads it.",
                "REDLOCK_RETAIN=1d redlock-run --key \"build-$BRANCH\" -- make",
            ),
        ],
    }
}

/// Writes every generated file.
pub fn generate(man_dir: &Path, completions_dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(man_dir)?;
    std::fs::create_dir_all(completions_dir)?;
    for file in render() {
        let base = match file.dir {
            Dir::Man => man_dir,
            Dir::Completions => completions_dir,
        };
        std::fs::write(base.join(&file.name), &file.contents)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every verb has a page, every page's SEE ALSO names every other page, and every
    /// EXAMPLES section has examples.
    #[test]
    fn every_page_names_the_others_and_has_examples() {
        for sub in Cli::command()
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
        {
            assert!(Page::of(sub.get_name()).is_some(), "{}", sub.get_name());
        }
        let pages: Vec<Generated> = render().into_iter().filter(|f| f.dir == Dir::Man).collect();
        assert_eq!(pages.len(), Page::ALL.len());
        for page in &pages {
            let text = String::from_utf8_lossy(&page.contents);
            let see_also = text.split(".SH \"SEE ALSO\"").nth(1).expect("SEE ALSO");
            for other in Page::ALL {
                let named = format!("\\fB{}\\fR(1)", escape(&other.man()));
                if format!("{}.1", other.man()) != page.name {
                    assert!(see_also.contains(&named), "{}: {named}", page.name);
                }
            }
            let examples = text.split(".SH EXAMPLES").nth(1).expect("EXAMPLES");
            let examples = examples.split(".SH ").next().unwrap();
            assert!(examples.contains(".nf"), "{}: no example", page.name);
        }
    }
}
