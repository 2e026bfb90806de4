//! The unit tests of `holder`: metadata read back, the recorded command line.

use super::command_line::shell_spans;
use super::*;

fn held(token: &str, pttl_ms: i64, items: &[(&str, &str)]) -> Held {
    Held {
        token: token.as_bytes().to_vec(),
        pttl_ms,
        meta: items
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect(),
    }
}

#[test]
fn metadata_of_another_token_is_ignored() {
    let meta = [("token", "t1"), ("host", "h"), ("pid", "7")];
    let known = Holder::from_held(&held("t1", 1500, &meta));
    assert_eq!(known.who.host.as_deref(), Some("h"));
    assert_eq!(known.who.pid, Some(7));
    assert_eq!(known.ttl_left, Some(Duration::from_millis(1500)));
    let foreign = Holder::from_held(&held("other", -1, &meta));
    assert!(!foreign.is_known());
    assert_eq!(foreign.ttl_left, None);
    assert!(foreign.describe(0).contains("unknown"));
}

#[test]
fn describe_names_host_pid_cmd_and_age() {
    let meta = [
        ("token", "t"),
        ("host", "web1"),
        ("pid", "42"),
        ("cmd", "./job.sh"),
        ("since_ms", "1000"),
    ];
    let h = Holder::from_held(&held("t", 10, &meta));
    assert_eq!(h.describe(193_000), "web1 pid 42 (./job.sh) for 3m 12s");
}

#[test]
fn recorded_command_hides_secrets() {
    let argv: Vec<String> = [
        "mysql",
        "-phunter2",
        "--password=hunter2",
        "API_TOKEN=hunter2",
        "redis://u:hunter2@h",
        "--verbose",
        "file",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let line = recorded_command(&argv, false);
    assert!(!line.contains("hunter2"), "{line}");
    assert!(
        line.starts_with("mysql '-p***' '--password=***' 'API_TOKEN=***'"),
        "{line}"
    );
    assert!(line.ends_with("--verbose file"));
    assert_eq!(recorded_command(&argv, true), "mysql");
    let long = vec!["x".repeat(1000)];
    assert_eq!(recorded_command(&long, false).chars().count(), 256);
}

/// (issue 60, item 6) A command line cut to 256 characters says it was cut: cut bare,
/// `status` showed a semaphore's slot as `(sh -c '… - $t)/1000000 ))`, its text cut
/// mid-way and the slot's closing parenthesis read as the command's.
#[test]
fn a_command_line_cut_says_so() {
    let script = format!(
        "{}; echo $(( ($(date +%s%N) - $t)/1000000 ))",
        "sleep 1; ".repeat(40)
    );
    let argv = ["sh".to_string(), "-c".to_string(), script];
    let line = recorded_command(&argv, false);
    assert_eq!(line.chars().count(), 256);
    assert!(line.ends_with('…'), "{line}");
    let short = ["sh".to_string(), "-c".to_string(), "sleep 1".to_string()];
    assert_eq!(recorded_command(&short, false), "sh -c 'sleep 1'");
}

/// Each line: the command as typed, and as recorded.
#[test]
fn recorded_command_masks_secrets_and_nothing_else() {
    let table = [
        (
            "redis-cli -a S3cretPw -p 27002 ping",
            "redis-cli -a '***' -p 27002 ping",
        ),
        (
            "/usr/bin/redis-cli -p 6379 ping",
            "/usr/bin/redis-cli -p 6379 ping",
        ),
        (
            "curl -u admin:hunter2 https://x/",
            "curl -u 'admin:***' https://x/",
        ),
        (
            "curl --user admin:hunter2 https://x/",
            "curl --user 'admin:***' https://x/",
        ),
        (
            "curl -uadmin:hunter2 https://x/",
            "curl '-uadmin:***' https://x/",
        ),
        ("mysql -u app -phunter2 shop", "mysql -u app '-p***' shop"),
        ("mysqldump -p shop", "mysqldump -p shop"),
        ("sshpass -p hunter2 ssh host", "sshpass -p '***' ssh host"),
        ("ssh -p 2222 host", "ssh -p 2222 host"),
        ("psql -p 5432 -U app db", "psql -p 5432 -U app db"),
        (
            "docker run -p 80:80 -u 1000:1000 img",
            "docker run -p 80:80 -u 1000:1000 img",
        ),
        (
            "deploy --token hunter2 --env prod",
            "deploy --token '***' --env prod",
        ),
        ("deploy --api-key hunter2", "deploy --api-key '***'"),
        ("deploy --password=hunter2", "deploy '--password=***'"),
        ("env PGPASSWORD=hunter2 psql", "env 'PGPASSWORD=***' psql"),
        (
            "env GITHUB_TOKEN=hunter2 AWS_SECRET_ACCESS_KEY=hunter2 x",
            "env 'GITHUB_TOKEN=***' 'AWS_SECRET_ACCESS_KEY=***' x",
        ),
        ("job https://u:hunter2@h/p", "job 'https://u:***@h/p'"),
        ("rsync -av src/ dst/", "rsync -av src/ dst/"),
        ("pg_dump -U app db", "pg_dump -U app db"),
        ("make -j4 deploy", "make -j4 deploy"),
        (
            "env KEYBOARD=us MONKEY=1 AUTHOR=me PASSAGE=x ./x",
            "env 'KEYBOARD=us' 'MONKEY=1' 'AUTHOR=me' 'PASSAGE=x' ./x",
        ),
        ("tar -a -cf out.tgz dir", "tar -a -cf out.tgz dir"),
        ("sudo -u deploy ./x", "sudo -u deploy ./x"),
        (
            "timeout 60 redis-cli -a S3cretPw info",
            "timeout 60 redis-cli -a '***' info",
        ),
    ];
    for (typed, recorded) in table {
        let argv: Vec<String> = typed.split(' ').map(str::to_string).collect();
        assert_eq!(recorded_command(&argv, false), recorded, "{typed}");
    }
    // A command line given as one word to a shell.
    let argv: Vec<String> = ["sh", "-c", "redis-cli -a S3cretPw -p 6380 info"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        recorded_command(&argv, false),
        "sh -c 'redis-cli -a *** -p 6380 info'"
    );
}

/// (issue 41, item 4) A shell line with its secret masked is recorded as typed:
/// it was split, masked and every word re-quoted (`'2;'`, `'\''***'\''`).
#[test]
fn a_shell_line_keeps_its_text_with_only_the_secret_masked() {
    let record = |line: &str| {
        let argv = ["sh".to_string(), "-c".to_string(), line.to_string()];
        recorded_command(&argv, false)
    };
    assert_eq!(
        record("sleep 2; redis-cli -a S3cretPw -p 6380 info | grep -c role"),
        "sh -c 'sleep 2; redis-cli -a *** -p 6380 info | grep -c role'"
    );
    // A quoted secret goes with its quotes; the rest keeps its own.
    assert_eq!(
        record(r#"redis-cli -a "S3 cret" -p 6380 ping && echo 'done, ok'"#),
        r#"sh -c 'redis-cli -a *** -p 6380 ping && echo '\''done, ok'\'''"#
    );
    assert_eq!(
        record("curl -u admin:hunter2 https://x/ # nightly"),
        "sh -c 'curl -u admin:*** https://x/ # nightly'"
    );
    // Nothing to mask: as typed.
    assert_eq!(record("sleep 2; echo hi"), "sh -c 'sleep 2; echo hi'");
}

#[test]
fn shell_spans_split_as_shell_words_does() {
    for line in [
        "a b  c",
        r#"a 'b c' "d \" e" f\ g"#,
        "x=1 y='2 3' # comment",
        "sleep 2; redis-cli -a pw",
    ] {
        let spans = shell_spans(line).unwrap();
        let values: Vec<&str> = spans.iter().map(|s| s.value.as_str()).collect();
        assert_eq!(values, shell_words::split(line).unwrap(), "{line}");
        for s in &spans {
            assert!(!line[s.start..s.end].starts_with(' '), "{line}: {s:?}");
            assert!(!line[s.start..s.end].ends_with(' '), "{line}: {s:?}");
        }
    }
    assert_eq!(shell_spans("a 'b"), None);
}

#[test]
fn process_start_identifies_this_process() {
    let me = process_start(std::process::id()).expect("this process");
    assert_eq!(process_start(std::process::id()), Some(me.clone()));
    assert_ne!(process_start(1), Some(me));
    assert_eq!(process_start(u32::MAX), None);
}

#[test]
fn recorded_command_keeps_quoting_and_hides_more_shapes() {
    let argv: Vec<String> = [
        "curl",
        "-H",
        "Authorization: Bearer hunter2",
        "https://api/x?token=hunter2&page=1",
        "--header=authorization: Basic hunter2",
        "-H",
        "Authorization:",
        "Bearer",
        "hunter2",
        "sh -c",
        "a'b",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let line = recorded_command(&argv, false);
    assert!(!line.contains("hunter2"), "{line}");
    assert!(line.contains("'Authorization: Bearer ***'"), "{line}");
    assert!(line.contains("token=***&page=1"), "{line}");
    assert!(line.contains("'sh -c'"), "{line}");
    assert_eq!(
        shell_words::split(&line)
            .unwrap()
            .last()
            .map(String::as_str),
        Some("a'b")
    );
}

/// (issue 60, item 2) Only what parses as a URL with credentials has its password
/// masked; a `:` before an `@` elsewhere is ordinary text (`date -d @0` in a script
/// after `echo "at: …"`, rsync's and scp's `user@host:path`), a file named by a
/// `--token-file` is no secret, and `KEY=$REDLOCK_KEY` names a variable, not a value.
/// Each was recorded as `***` up to the `@` or after the `=`.
#[test]
fn ordinary_text_with_a_colon_and_an_at_is_not_a_secret() {
    let record = |words: &[&str]| {
        let argv: Vec<String> = words.iter().map(|s| s.to_string()).collect();
        recorded_command(&argv, false)
    };
    let kept = [
        &["sh", "-c", r#"echo "at: $(date -d @0)""#][..],
        &["rsync", "-a", "/data/", "backup@nas:/srv/backup/"],
        &["scp", "f", "ops@host:/srv/"],
        &["deploy", "--token-file=/etc/t"],
        &["deploy", "--password-file", "/etc/pw"],
        &["sh", "-c", "KEY=$REDLOCK_KEY; echo $KEY"],
        &["redlock-run", "--key", "nightly", "--", "./x"],
        &["git", "clone", "git@github.com:o/r.git"],
    ];
    for words in kept {
        let line = record(words);
        assert!(!line.contains("***"), "{words:?} recorded as {line}");
        assert_eq!(shell_words::split(&line).unwrap(), words, "{line}");
    }
    // Secrets still go, in a script too, the rest of its text kept.
    assert_eq!(
        record(&[
            "sh",
            "-c",
            r#"echo "at: $(date)"; curl https://u:hunter2@h/x"#
        ]),
        r#"sh -c 'echo "at: $(date)"; curl https://u:***@h/x'"#
    );
    assert_eq!(
        record(&["job", "redis://:hunter2@h:6379/0", "--api-key=hunter2"]),
        "job 'redis://:***@h:6379/0' '--api-key=***'"
    );
    assert_eq!(
        record(&["deploy", "--token", "hunter2"]),
        "deploy --token '***'"
    );
    assert_eq!(
        record(&["env", "API_KEY=hunter2", "SECRET=hunter2", "x"]),
        "env 'API_KEY=***' 'SECRET=***' x"
    );
}
