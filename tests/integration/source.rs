//! Rules of the source that a test can hold (docs/hacking.md): a function reads as
//! named steps, so none runs over 60 lines unless it is a table (its doc comment says
//! "(Long because it is a table…" or "…data…").

use std::path::{Path, PathBuf};

/// Longer than this, a function is split into named steps.
const MOST_LINES: usize = 60;

/// Over the limit and left to a change of its own (none now).
const LEFT: &[&str] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Each function of `text` before its tests: (name, lines from `fn` to its closing
/// brace, its doc comment).
fn functions(text: &str) -> Vec<(String, usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .iter()
        .position(|l| l.starts_with("#[cfg(test)]"))
        .unwrap_or(lines.len());
    let mut out = Vec::new();
    for (i, line) in lines[..end].iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let rest = [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ]
        .iter()
        .fold(trimmed, |t, p| t.strip_prefix(p).unwrap_or(t));
        let Some(name) = rest.strip_prefix("fn ") else {
            continue;
        };
        if line.trim_end().ends_with(';') {
            continue;
        }
        let name: String = name
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{indent}}}");
        let Some(last) = (i..end).find(|&j| lines[j].trim_end() == close) else {
            continue;
        };
        let doc: Vec<&str> = lines[..i]
            .iter()
            .rev()
            .take_while(|l| l.trim_start().starts_with("///") || l.trim_start().starts_with("#["))
            .map(|l| l.trim_start().trim_start_matches("///").trim())
            .collect();
        let doc: Vec<&str> = doc.into_iter().rev().collect();
        out.push((name, last - i + 1, doc.join(" ")));
    }
    out
}

/// (issue 41, item 10) `config::RunConfig::from_args` (87 lines), `doctor::args_of`
/// (63) and `elect::one_term` (62) were long runs of code; they read as named steps.
#[test]
fn no_function_runs_over_60_lines_unless_it_is_a_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let mut long = Vec::new();
    for file in files {
        // A module's tests in a file of their own (`config/tests.rs`) are exempt as the
        // inline ones after `#[cfg(test)]` are.
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let at = file.strip_prefix(root).unwrap().display().to_string();
        for (name, lines, doc) in functions(&text) {
            let table = doc.contains("(Long because it is");
            let id = format!("{at}::{name}");
            if lines > MOST_LINES && !table && !LEFT.contains(&id.as_str()) {
                long.push(format!("{id}: {lines} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split into named steps (or say why it is a table):\n{}",
        long.join("\n")
    );
}

/// Issue 59: a Redis command is spelled only in the Redis layer (`src/redis/`) and in the
/// scripts' contracts (`src/scripts/`): the glance's pipelines and the share check were
/// built in `glance.rs` and `session.rs`.
#[test]
fn redis_commands_are_built_only_in_the_redis_layer() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel.starts_with("redis/") || rel.starts_with("scripts/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if ["redis::cmd(", "redis::pipe(", ".cmd(\""]
                .iter()
                .any(|p| line.contains(p))
            {
                found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "Redis commands built outside the Redis layer: {found:#?}"
    );
}
