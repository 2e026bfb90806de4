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
    for sub in redlock.get_subcommands().filter(|s| !s.is_hide_set()) {
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

fn man(cmd: clap::Command) -> Vec<u8> {
    let mut buf = Vec::new();
    let page = clap_mangen::Man::new(cmd);
    // Writing into a Vec cannot fail.
    let _ = page.render(&mut buf);
    buf
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
