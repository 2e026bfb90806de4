//! The entry points of both binaries: arguments in, exit status out. Clap's own errors
//! are folded onto one line and exit with the usage code (64), not clap's 2, which
//! would collide with a command's own status.

use std::ffi::OsString;

use clap::Parser;
use clap::error::ErrorKind;

use crate::cli::{Cli, Command, RunCli};
use crate::config::RunConfig;
use crate::exit::Code;
use crate::report::Reporter;

/// `redlock-run`.
pub fn redlock_run(args: impl IntoIterator<Item = OsString>) -> u8 {
    let cli = match RunCli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return clap_exit("redlock-run", e),
    };
    let report = Reporter::new("redlock-run", cli.run.quiet, cli.run.verbose);
    match RunConfig::from_args(cli.run) {
        Ok(config) => block_on(&report, crate::run::run(config, &report)),
        Err(e) => {
            report.error(&e.message);
            e.code.value()
        }
    }
}

/// `redlock`.
pub fn redlock(args: impl IntoIterator<Item = OsString>) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return clap_exit("redlock", e),
    };
    match cli.command {
        Command::Run(args) => {
            let report = Reporter::new("redlock", args.quiet, args.verbose);
            match RunConfig::from_args(args) {
                Ok(config) => block_on(&report, crate::run::run(config, &report)),
                Err(e) => {
                    report.error(&e.message);
                    e.code.value()
                }
            }
        }
        Command::Generate(args) => match crate::docs::generate(&args.man, &args.completions) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("redlock: {e}");
                Code::Internal.value()
            }
        },
        other => {
            let report = Reporter::new("redlock", false, false);
            block_on(&report, crate::inspect::dispatch(other, &report))
        }
    }
}

/// Runs a future on a single-threaded runtime on this (the main) thread, so the
/// command is forked by a thread that lives as long as the wrapper.
fn block_on(report: &Reporter, fut: impl Future<Output = u8>) -> u8 {
    // rediss:// needs a process-wide crypto provider; ring is the one compiled in.
    let _ = rustls::crypto::ring::default_provider().install_default();
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(fut),
        Err(e) => {
            report.error(&format!("cannot start the runtime: {e}"));
            Code::Internal.value()
        }
    }
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
            eprintln!("{program}: {}; see --help", clap_message(&e));
            Code::Usage.value()
        }
    }
}
