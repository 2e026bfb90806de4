//! Man pages and shell completions, generated from the clap definitions by the hidden
//! `redlock generate` verb (`redlock generate --man man --completions completions`). The
//! committed files are checked against [`render`] by a test, so they never go stale.

use std::io;
use std::path::Path;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, RunCli};

/// Every generated file as (relative path under its directory, contents); the first
/// element says which directory ("man" or "completions").
pub fn render() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out = Vec::new();
    let run = RunCli::command();
    let redlock = Cli::command();
    out.push(("man", "redlock-run.1".to_string(), man(run.clone())));
    out.push(("man", "redlock.1".to_string(), man(redlock.clone())));
    // `redlock run` is documented by redlock-run(1), which has the same options.
    for sub in redlock
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "run")
    {
        let name = format!("redlock-{}", sub.get_name());
        let page = sub.clone().name(name.clone()).display_name(name.clone());
        out.push(("man", format!("{name}.1"), man(page)));
    }
    for shell in [
        Shell::Bash,
        Shell::Zsh,
        Shell::Fish,
        Shell::Elvish,
        Shell::PowerShell,
    ] {
        for mut cmd in [redlock.clone(), run.clone()] {
            let bin = cmd.get_name().to_string();
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut cmd, bin.clone(), &mut buf);
            let file = match shell {
                Shell::Bash => format!("{bin}.bash"),
                Shell::Zsh => format!("_{bin}"),
                Shell::Fish => format!("{bin}.fish"),
                Shell::Elvish => format!("{bin}.elv"),
                _ => format!("_{bin}.ps1"),
            };
            out.push(("completions", file, buf));
        }
    }
    out
}

/// A man page: clap's sections, then EXIT STATUS and ENVIRONMENT as real sections
/// (instead of the help text's closing paragraphs).
fn man(cmd: clap::Command) -> Vec<u8> {
    let mut buf = Vec::new();
    let has_subcommands = cmd.has_subcommands();
    let has_version = cmd.get_version().is_some();
    let page = clap_mangen::Man::new(cmd);
    // Writing into a Vec cannot fail.
    let _ = page.render_title(&mut buf);
    let _ = page.render_name_section(&mut buf);
    let _ = page.render_synopsis_section(&mut buf);
    let _ = page.render_description_section(&mut buf);
    let _ = page.render_options_section(&mut buf);
    if has_subcommands {
        let _ = page.render_subcommands_section(&mut buf);
    }
    buf.extend_from_slice(roff_sections().as_bytes());
    if has_version {
        let _ = page.render_version_section(&mut buf);
    }
    buf
}

/// EXIT STATUS (from the one table in `exit.rs`) and ENVIRONMENT, in roff.
fn roff_sections() -> String {
    let escape = |s: &str| s.replace('\\', "\\\\").replace('-', "\\-");
    let mut out = String::from(".SH \"EXIT STATUS\"\n");
    for row in crate::exit::TABLE {
        out.push_str(&format!(
            ".TP\n{}\n{}\n",
            escape(row.status),
            escape(row.meaning)
        ));
    }
    out.push_str(&format!(
        ".TP\n0 / 1 (status)\n{}\n",
        escape("redlock status: 0 when every named lock is held, 1 when one is free")
    ));
    out.push_str(".SH ENVIRONMENT\n");
    for (name, meaning) in crate::cli::ENVIRONMENT {
        out.push_str(&format!(".TP\n{}\n{}\n", escape(name), escape(meaning)));
    }
    out
}

/// Writes every generated file.
pub fn generate(man_dir: &Path, completions_dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(man_dir)?;
    std::fs::create_dir_all(completions_dir)?;
    for (dir, name, contents) in render() {
        let base = if dir == "man" {
            man_dir
        } else {
            completions_dir
        };
        std::fs::write(base.join(name), contents)?;
    }
    Ok(())
}
