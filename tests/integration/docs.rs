//! The documentation stays in step with the code: man pages and completions are what
//! `redlock generate` writes now; the README carries the exit-code table and
//! `docs/design/model.md` the refusal table, as the code renders them.

use std::path::Path;

use crate::harness::*;

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

/// The page `page` holds `table` exactly as `source` renders it.
fn assert_page_carries(page: &str, what: &str, source: &str, table: String) {
    assert!(
        doc(page).contains(&table),
        "{page} must contain the {what} exactly as {source} renders it:\n{table}"
    );
}

#[test]
fn readme_carries_the_exit_code_table() {
    assert_page_carries(
        "README.md",
        "exit-code table",
        "src/exit.rs",
        redlock::exit::table_markdown(),
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

/// The README's silent cron line (`cron-silent`), run literally (only the job's path is
/// ours) the way cron runs it: `sh -c`, a bare environment, all output captured. On the
/// host that loses the race it must print nothing at all (cron mails any output) and
/// exit 0.
#[test]
fn the_readme_cron_line_is_silent_on_the_losing_host() {
    let example = example("cron-silent");
    let line = example
        .lines()
        .find(|l| l.starts_with("* * * * * redlock-run") && l.contains("--busy-exit-code 0"))
        .expect("the cron example");
    let command = line.splitn(6, ' ').nth(5).unwrap();
    let redis = Redis::start();
    let scratch = Scratch::new();
    let job = scratch.script("close_orders.sh", "exit 0");
    let command = command.replace("/opt/jobs/close_orders.sh", &job.display().to_string());
    let url_file = scratch.path("url");
    std::fs::write(&url_file, redis.url()).unwrap();
    let bin_dir = Path::new(RUN).parent().unwrap();
    let holding = Holding::start(&lock_args(&redis, "close-order"));
    let out = output(
        std::process::Command::new("sh")
            .args(["-c", &command])
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
            .env("REDLOCK_REDIS_URL_FILE", &url_file),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "cron would mail this");
    assert_eq!(stderr(&out), "", "cron would mail this");
    let (code, err) = holding.finish();
    assert_eq!(code, 0, "{err}");
}

/// The script of docs/guide/scripts.md (`script-steps`) run by `sh` as written, its two
/// steps ours: the lock is held through both steps (extended between them) and the
/// `trap` releases it when the script exits.
#[test]
fn the_script_example_holds_the_lock_through_its_steps_and_releases_it() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let seen = scratch.path("seen");
    let seen = seen.display();
    let steps = format!(
        "step_one() {{ redlock status nightly > {seen}; }}\n\
         step_two() {{ redlock status nightly >> {seen}; }}\n"
    );
    let script = format!("{steps}{}", example("script-steps"));
    let bin_dir = Path::new(REDLOCK).parent().unwrap();
    let out = output(
        std::process::Command::new("sh")
            .args(["-c", &script])
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
            .env("REDLOCK_REDIS_URL", redis.url()),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let seen = std::fs::read_to_string(scratch.path("seen")).unwrap();
    let held = seen
        .lines()
        .filter(|l| l.starts_with("nightly: held by"))
        .count();
    assert_eq!(held, 2, "held through both steps:\n{seen}");
    assert_eq!(
        get(&redis, &lock_key("nightly")),
        None,
        "released by the trap"
    );
}

#[test]
fn the_model_page_carries_the_refusal_table() {
    let table = redlock::policy::refused::markdown();
    let source = "src/policy/refused.rs";
    assert_page_carries("docs/design/model.md", "refusal table", source, table);
}

#[test]
fn the_exit_status_page_carries_the_outcome_table() {
    let table = redlock::outcome::markdown();
    let source = "src/outcome.rs";
    assert_page_carries(
        "docs/reference/exit-status.md",
        "outcome table",
        source,
        table,
    );
}

/// Every page a man page points to exists, and every `REDLOCK_*` variable the code reads
/// is in the pages' ENVIRONMENT (newcomer-4 P13).
#[test]
fn man_pages_point_only_to_pages_that_exist() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let mut pages = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        pages.push(entry.file_name().to_string_lossy().into_owned());
    }
    for page in &pages {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        for part in text.split("redlock\\-").skip(1) {
            let Some((verb, _)) = part.split_once("(1)") else {
                continue;
            };
            if verb
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '\\' || c == '-')
            {
                let name = format!("redlock-{}.1", verb.replace("\\-", "-"));
                assert!(
                    pages.contains(&name),
                    "{page} points to {name}, which does not exist"
                );
            }
        }
        let run = std::fs::read_to_string(dir.join("redlock-run.1")).unwrap();
        for var in [
            "REDLOCK_METRICS",
            "REDLOCK_LOCAL_DIR",
            "REDLOCK_NO_LOCAL_QUEUE",
        ] {
            assert!(run.contains(var), "redlock-run(1) ENVIRONMENT lacks {var}");
        }
    }
}
