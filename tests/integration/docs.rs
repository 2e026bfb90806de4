//! Generated files stay in step with the code: man pages and completions are what
//! `redlock generate` writes now, and the README carries the exit-code table.

use std::path::Path;

#[test]
fn man_pages_and_completions_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stale = Vec::new();
    for file in redlock::docs::render() {
        let dir = file.dir.name();
        let path = root.join(dir).join(&file.name);
        if std::fs::read(&path).ok().as_deref() != Some(file.contents.as_slice()) {
            // Leave what the code generates beside the build output, for a diff.
            let fresh = root.join("target").join("generated").join(dir);
            let _ = std::fs::create_dir_all(&fresh);
            let _ = std::fs::write(fresh.join(&file.name), &file.contents);
            stale.push(format!("{dir}/{}", file.name));
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files {stale:?}; run: cargo run --bin redlock -- generate"
    );
}

#[test]
fn readme_carries_the_exit_code_table() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let table = redlock::exit::table_markdown();
    assert!(
        readme.contains(&table),
        "README.md must contain the exit-code table exactly as src/exit.rs renders it:\n{table}"
    );
}

#[test]
fn clap_definitions_are_consistent() {
    use clap::CommandFactory;
    redlock::cli::Cli::command().debug_assert();
    redlock::cli::RunCli::command().debug_assert();
}

#[test]
fn man_page_documents_exit_statuses_and_environment() {
    let pages = redlock::docs::render();
    let run = pages
        .iter()
        .find(|file| file.name == "redlock-run.1")
        .expect("redlock-run.1");
    let text = String::from_utf8_lossy(&run.contents);
    for needle in ["EXIT STATUS", "REDLOCK_REDIS_URL", "79", "REDLOCK_TOKEN"] {
        assert!(text.contains(needle), "redlock-run.1 lacks {needle}");
    }
}
