//! The entry points of both binaries: arguments in, exit status out. Clap's own errors
//! are folded onto one line and exit with the usage code (64), not clap's 2, which
//! would collide with a command's own status. Every error is printed here, once, as one
//! line; its kind decides the status.

use std::ffi::OsString;

use clap::Parser;
use clap::error::ErrorKind;

use crate::cli::{Cli, Command, RunArgs, RunCli};
use crate::config::{
    AcquireConfig, Conn, DoctorConfig, ExtendConfig, ForgetConfig, HistoryConfig, LeaderConfig,
    ListConfig, PreemptConfig, ReleaseConfig, RunConfig, StatusConfig, WaitConfig,
};
use crate::error::{Error, Result};
use crate::exit::Code;
use crate::report::Reporter;
use crate::verbs::{self, Verb};

/// `redlock-run`.
pub fn redlock_run(args: impl IntoIterator<Item = OsString>) -> u8 {
    match RunCli::try_parse_from(args) {
        Ok(cli) => wrapper("redlock-run", cli.run),
        Err(e) => clap_exit("redlock-run", e),
    }
}

/// `redlock`.
pub fn redlock(args: impl IntoIterator<Item = OsString>) -> u8 {
    let cli = match Cli::try_parse_from(verb_first(args.into_iter().collect())) {
        Ok(cli) => cli,
        Err(e) => return clap_exit("redlock", e),
    };
    let verb = match cli.command {
        Command::Run(args) => return wrapper("redlock", *args),
        Command::Generate(args) => return generate(&args),
        Command::Status(args) => StatusConfig::from_args(args).map(Verb::Status),
        Command::List(args) => ListConfig::from_args(args).map(Verb::List),
        Command::Release(args) => ReleaseConfig::from_args(args).map(Verb::Release),
        Command::Acquire(args) => AcquireConfig::from_args(args).map(Verb::Acquire),
        Command::Extend(args) => ExtendConfig::from_args(args).map(Verb::Extend),
        Command::Wait(args) => WaitConfig::from_args(args).map(Verb::Wait),
        Command::History(args) => HistoryConfig::from_args(args).map(Verb::History),
        Command::Forget(args) => ForgetConfig::from_args(args).map(Verb::Forget),
        Command::Preempt(args) => PreemptConfig::from_args(args).map(Verb::Preempt),
        Command::Leader(args) => LeaderConfig::from_args(args).map(Verb::Leader),
        Command::Doctor(args) => DoctorConfig::from_args(args).map(Verb::Doctor),
        Command::Top(args) => crate::config::TopConfig::from_args(args).map(Verb::Top),
    };
    let report = Reporter::new("redlock", false, false);
    let result = verb.and_then(|verb| {
        warn_about_connection(&report, verb.conn());
        block_on(verbs::run(verb, &report))
    });
    finish(&report, result)
}

/// The wrapper, as `redlock-run` or `redlock run`.
fn wrapper(program: &'static str, args: RunArgs) -> u8 {
    let mut report = Reporter::new(program, args.quiet, args.verbose);
    let result = RunConfig::from_args(args).and_then(|config| {
        warn_about_connection(&report, &config.conn);
        if let Some(path) = &config.events {
            let sink = crate::events::EventSink::open(path).map_err(|e| {
                Error::usage(format!("--events {}: cannot open it: {e}", path.display()))
            })?;
            report.events = Some(sink);
        }
        report.metrics = config.metrics.clone().map(|path| {
            let name = config.keys.display_name();
            std::sync::Arc::new(crate::metrics::Metrics::new(path, name))
        });
        block_on(crate::run::run(config, &report))
    });
    let failed = result.is_err();
    let code = finish(&report, result);
    if let Some(metrics) = &report.metrics
        && let Err(e) = metrics.finish(code, failed)
    {
        report.metrics_failed(metrics, &e);
    }
    if let Some(sink) = &report.events {
        sink.close();
    }
    code
}

/// `redlock generate`: man pages and completions.
fn generate(args: &crate::cli::GenerateArgs) -> u8 {
    match crate::docs::generate(&args.man, &args.completions) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("redlock: {e}");
            Code::Internal.value()
        }
    }
}

/// The connection flags, which every verb takes (`ConnArgs`): with a value, and alone.
const CONN_FLAGS: [&str; 7] = [
    "--redis",
    "--redis-url-file",
    "--prefix",
    "--node-timeout",
    "--tls-ca",
    "--tls-cert",
    "--tls-key",
];
const CONN_SWITCHES: [&str; 1] = ["--tls-insecure-skip-verify"];

/// `redlock --redis URL status NAME`: connection flags given before the verb are moved
/// after it, where every verb takes them (etcdctl, redis-cli and kubectl users type
/// them first). Anything else before the verb is left for clap to judge.
fn verb_first(args: Vec<OsString>) -> Vec<OsString> {
    let mut i = 1;
    while let Some(arg) = args.get(i).and_then(|a| a.to_str()) {
        let with_value = CONN_FLAGS.contains(&arg);
        let joined = CONN_FLAGS.iter().any(|f| {
            arg.strip_prefix(f)
                .is_some_and(|rest| rest.starts_with('='))
        });
        if with_value && i + 1 < args.len() {
            i += 2;
        } else if joined || CONN_SWITCHES.contains(&arg) {
            i += 1;
        } else {
            break;
        }
    }
    let verb_here = args
        .get(i)
        .and_then(|a| a.to_str())
        .is_some_and(|a| !a.starts_with('-'));
    if i == 1 || !verb_here {
        return args;
    }
    let mut out = vec![args[0].clone(), args[i].clone()];
    out.extend_from_slice(&args[1..i]);
    out.extend_from_slice(&args[i + 1..]);
    out
}

/// The exit status of a result; an error is printed as its one line.
fn finish(report: &Reporter, result: Result<u8>) -> u8 {
    match result {
        Ok(code) => code,
        Err(e) => {
            report.error(&e.to_string());
            e.code().value()
        }
    }
}

/// The loud warning for `--tls-insecure-skip-verify` / `#insecure`, once per URL; and
/// one for a URL file with a password that others may read.
fn warn_about_connection(report: &Reporter, conn: &Conn) {
    for url in conn.urls.iter().filter(|u| u.insecure()) {
        report.warn(&format!(
            "TLS certificate verification is OFF for {url} (--tls-insecure-skip-verify): anyone on the network path can read the traffic, the password included, and impersonate the server"
        ));
    }
    if let Some(file) = &conn.exposed_file {
        report.warn(&format!(
            "{} holds a Redis password and every user of this machine may read it; chmod 600 it (or 640 for a group)",
            file.display()
        ));
    }
}

/// Runs a future on a single-threaded runtime on this (the main) thread, so the
/// command is forked by a thread that lives as long as the wrapper.
fn block_on(fut: impl Future<Output = Result<u8>>) -> Result<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::internal(format!("cannot start the runtime: {e}")))?;
    let result = runtime.block_on(fut);
    // The process exits next: tearing the runtime down (its connections' tasks, the
    // blocking pool) would only delay the exit status.
    std::mem::forget(runtime);
    result
}

/// Clap's message without its usage block and tips, on one line.
fn clap_message(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let head: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty() && !l.starts_with("Usage:"))
        .collect();
    let line = crate::error::one_line(&head.join(" "));
    let line = line.trim_start_matches("error: ").to_string();
    if line.is_empty() {
        "invalid arguments".to_string()
    } else {
        line
    }
}

/// What to do about a clap error: a stray word that is not a flag is most often a
/// command given without `--`.
fn clap_hint(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    // Clap's own suggestion ("a similar argument exists"), kept on the one line.
    for kind in [ContextKind::SuggestedArg, ContextKind::SuggestedSubcommand] {
        let suggested = match e.get(kind) {
            Some(ContextValue::String(s)) => Some(s.clone()),
            Some(ContextValue::Strings(v)) => v.first().cloned(),
            _ => None,
        };
        if let Some(suggested) = suggested {
            return format!("did you mean {suggested}? see --help");
        }
    }
    let stray_word = e.kind() == ErrorKind::UnknownArgument
        && e.get(ContextKind::InvalidArg)
            .is_some_and(|arg| !arg.to_string().starts_with('-'));
    if stray_word {
        "put the command after --, e.g. redlock-run --key job -- ./job.sh".to_string()
    } else {
        "see --help".to_string()
    }
}

fn clap_exit(program: &str, e: clap::Error) -> u8 {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            0
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprint!("{}", e.render());
            Code::Usage.value()
        }
        _ => {
            eprintln!("{program}: {}; {}", clap_message(&e), clap_hint(&e));
            Code::Usage.value()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::verb_first;

    fn v(args: &[&str]) -> Vec<std::ffi::OsString> {
        args.iter().map(|a| a.into()).collect()
    }

    #[test]
    fn connection_flags_before_the_verb_go_after_it() {
        assert_eq!(
            verb_first(v(&["redlock", "--redis", "redis://h", "status", "x"])),
            v(&["redlock", "status", "--redis", "redis://h", "x"])
        );
        assert_eq!(
            verb_first(v(&[
                "redlock",
                "--prefix=p:",
                "--tls-insecure-skip-verify",
                "list"
            ])),
            v(&[
                "redlock",
                "list",
                "--prefix=p:",
                "--tls-insecure-skip-verify"
            ])
        );
        for same in [
            v(&["redlock", "status", "--redis", "u", "x"]),
            v(&["redlock", "--redis", "u"]),
            v(&["redlock", "--version"]),
            v(&["redlock", "--redis", "u", "--help"]),
            v(&["redlock", "--wait", "1s", "status"]),
        ] {
            assert_eq!(verb_first(same.clone()), same);
        }
    }
}
