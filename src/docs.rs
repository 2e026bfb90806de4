//! Man pages and shell completions, generated from the clap definitions by the hidden
//! `redlock generate` verb (`redlock generate --man man --completions completions`). The
//! committed files are checked against [`render`] by a test, so they never go stale.

use std::io;
use std::path::Path;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, RunCli};

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
        man(run.clone()),
    ));
    out.push(Generated::new(
        Dir::Man,
        "redlock.1".into(),
        man(redlock.clone()),
    ));
    // `redlock run` is documented by redlock-run(1), which has the same options.
    for sub in redlock
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "run")
    {
        let name = format!("redlock-{}", sub.get_name());
        let page = sub.clone().name(name.clone()).display_name(name.clone());
        out.push(Generated::new(Dir::Man, format!("{name}.1"), man(page)));
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
            out.push(Generated::new(Dir::Completions, file, buf));
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
    for row in crate::exit::table() {
        out.push_str(&format!(
            ".TP\n{}\n{}\n",
            escape(&row.status),
            escape(row.meaning)
        ));
    }
    out.push_str(&format!(
        ".TP\n0 / {} (status)\n{}\n",
        crate::exit::STATUS_FREE,
        escape(&format!(
            "redlock status: 0 when every named lock is held, {} when one is free",
            crate::exit::STATUS_FREE
        ))
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
    for file in render() {
        let base = match file.dir {
            Dir::Man => man_dir,
            Dir::Completions => completions_dir,
        };
        std::fs::write(base.join(&file.name), &file.contents)?;
    }
    Ok(())
}
