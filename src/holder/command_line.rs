//! The command line a holder is recorded with (`cmd` in the metadata, the run history
//! and a fair queue's waiters): quoted as a shell would need it, its secrets masked
//! (see [`recorded_command`]). Text only: nothing here reads a process or Redis.

/// The command line recorded in metadata, quoted as a shell would need it, with the
/// values of secrets replaced by `***`, cut to 256 characters (the last one `…`). With `program_only`,
/// just the program name.
///
/// What is masked (and nothing else, so that the line still says what runs):
/// - the value after a long option that names a secret (`--password X`, `--token X`,
///   `--api-key X`; see [`secret_name`]), and after `Bearer` / `Basic`;
/// - `name=value` pairs whose name names a secret (`--password=X`, `API_TOKEN=X`,
///   `PGPASSWORD=X`, `?token=X&`), and an `Authorization:` header's credentials;
/// - the password of a URL (`redis://user:pass@host`);
/// - short options that carry a password only for the programs where they do:
///   `-a X` for redis-cli (valkey-cli, keydb-cli); a glued `-pX` for mysql, mariadb,
///   mysqldump, mysqladmin (their `-p X` prompts, X being a database); `-p X` for
///   sshpass; `-u user:X`, `--user user:X` and a glued `-uuser:X` for curl (the user
///   is kept). `-p` of ssh, redis-cli, psql or docker is a port and stays.
pub fn recorded_command(argv: &[String], program_only: bool) -> String {
    if program_only {
        return argv.first().cloned().unwrap_or_default();
    }
    let line = crate::error::one_line(&shell_words::join(redact_words(argv)));
    if line.chars().count() <= 256 {
        return line;
    }
    // Cut, and said to be: a line cut bare reads as whole, and in `status`'s `(cmd)` of
    // a semaphore's slot its last `)` passed for the command's own (issue 60).
    let mut cut: String = line.chars().take(255).collect();
    cut.push('…');
    cut
}

/// The words of a command line with their secrets masked. A word naming a program
/// whose short options carry secrets (`timeout 60 redis-cli -a X`, `env A=B curl -u
/// …`) brings its rules into force for the words after it; a word that is itself a
/// command line (`sh -c 'redis-cli -a X'`) keeps its text, with only the masked words
/// replaced in place.
fn redact_words(words: &[String]) -> Vec<String> {
    let mut rules = ShortSecrets::default();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut next = Next::Plain;
    for arg in words {
        out.push(match next {
            Next::Secret => "***".to_string(),
            Next::UserPass => mask_after_colon(arg),
            Next::Plain => redact_arg(arg, rules),
        });
        next = Next::Plain;
        if let Some(program) = known_program(arg) {
            rules = program;
        } else {
            next = what_follows(arg, rules);
        }
    }
    out
}

/// The secret-carrying short options of the program `word` names, if it names one.
fn known_program(word: &str) -> Option<ShortSecrets> {
    let name = word.rsplit('/').next().unwrap_or(word).to_ascii_lowercase();
    short_secret_options(&name)
}

/// How the argument after this one is recorded.
#[derive(Clone, Copy)]
enum Next {
    Plain,
    Secret,
    /// `user:password`: the part after the first colon is masked.
    UserPass,
}

/// The short options that carry a secret for one program.
#[derive(Clone, Copy, Default)]
struct ShortSecrets {
    /// Options whose next argument is a secret (`-a` of redis-cli).
    separate: &'static [&'static str],
    /// Options whose glued value is a secret (`-pX` of mysql).
    glued: &'static [&'static str],
    /// Options whose value is `user:password` (curl's `-u`, `--user`).
    user_pass: &'static [&'static str],
}

fn short_secret_options(program: &str) -> Option<ShortSecrets> {
    Some(match program {
        "redis-cli" | "valkey-cli" | "keydb-cli" => ShortSecrets {
            separate: &["-a"],
            glued: &[],
            user_pass: &[],
        },
        "mysql" | "mariadb" | "mysqldump" | "mariadb-dump" | "mysqladmin" => ShortSecrets {
            separate: &[],
            glued: &["-p"],
            user_pass: &[],
        },
        "sshpass" => ShortSecrets {
            separate: &["-p"],
            glued: &["-p"],
            user_pass: &[],
        },
        "curl" => ShortSecrets {
            separate: &[],
            glued: &[],
            user_pass: &["-u", "--user", "-U", "--proxy-user"],
        },
        _ => return None,
    })
}

/// What the argument after `arg` is: a secret (a long option naming one, a listed short
/// option, `Bearer`/`Basic`), a `user:password`, or plain.
fn what_follows(arg: &str, rules: ShortSecrets) -> Next {
    if rules.user_pass.contains(&arg) {
        return Next::UserPass;
    }
    let long = arg.starts_with("--") && !arg.contains('=') && secret_name(&arg[2..]);
    let short = rules.separate.contains(&arg);
    let scheme = arg.eq_ignore_ascii_case("bearer") || arg.eq_ignore_ascii_case("basic");
    if long || short || scheme {
        Next::Secret
    } else {
        Next::Plain
    }
}

/// `user:secret` -> `user:***` (unchanged without a colon).
fn mask_after_colon(arg: &str) -> String {
    match arg.split_once(':') {
        Some((user, pass)) if !pass.is_empty() => format!("{user}:***"),
        _ => arg.to_string(),
    }
}

/// Whether a name (of an option, a variable, a query parameter) names a secret: one of
/// its words (split on `_`, `-`, `.`) is `pass`, `pwd`, `key`, `auth` or `credentials`,
/// or ends in `password`, `passwd`, `secret`, `token`, `apikey` or `credential`
/// (`API_KEY`, `SECRET_KEY`, `PGPASSWORD`, `GITHUB_TOKEN`, `apiKey`), case aside.
/// `KEYBOARD`, `MONKEY`, `AUTHOR` and `PASSAGE` are not secrets.
///
/// Two names that say secret are not (issue 60): `key` alone (`--key NAME` of a nested
/// `redlock-run`, a cache or sort key, `KEY=$REDLOCK_KEY`: a name, not a credential; a
/// compound still is: `--api-key`, `SECRET_KEY`), and a name whose last word is `file`,
/// `path` or `dir` (`--token-file=/etc/t`, `--password-file`, `SSH_KEY_PATH`): its value
/// names where the secret is kept, which is what an operator needs to read, and holds
/// no secret itself.
fn secret_name(name: &str) -> bool {
    let words: Vec<String> = name
        .split(['_', '-', '.'])
        .map(str::to_ascii_lowercase)
        .collect();
    let names_a_place = words
        .last()
        .is_some_and(|w| matches!(w.as_str(), "file" | "path" | "dir"));
    if names_a_place || words == ["key"] {
        return false;
    }
    words.iter().any(|w| {
        matches!(w.as_str(), "pass" | "pwd" | "key" | "auth" | "credentials")
            || [
                "password",
                "passwd",
                "secret",
                "token",
                "apikey",
                "credential",
            ]
            .iter()
            .any(|end| w.ends_with(end))
    })
}

/// One argument with its secrets hidden: URL passwords, the value of every
/// `name=value` whose name names a secret (`--password=…`, `API_TOKEN=…`, `?token=…&`),
/// the credentials of an `Authorization:` header, a glued short option's secret (`-pX`
/// of mysql, `-uuser:X` of curl), and the secrets of a command line given as one word.
fn redact_arg(arg: &str, rules: ShortSecrets) -> String {
    if let Some(flag) = rules.glued.iter().find(|f| glued(arg, f)) {
        return format!("{flag}***");
    }
    if let Some(flag) = rules
        .user_pass
        .iter()
        .find(|f| f.len() == 2 && glued(arg, f))
    {
        return format!("{flag}{}", mask_after_colon(&arg[2..]));
    }
    if arg.contains(char::is_whitespace)
        && let Some(words) = shell_spans(arg)
        && words.iter().any(|w| known_program(&w.value).is_some())
    {
        let values: Vec<String> = words.iter().map(|w| w.value.clone()).collect();
        let masked = redact_words(&values);
        if masked != values {
            return masked_in_place(arg, &words, &masked);
        }
    }
    let arg = redact_urls(arg);
    let arg = redact_authorization(&arg);
    redact_pairs(&arg)
}

/// Each URL with credentials in `arg` (`scheme://user:password@host`, anywhere in it:
/// a script given as one word holds several) with its password masked (`user:***@`),
/// or its user info whole when it is one word (`https://TOKEN@host`). Nothing else:
/// a `:` and an `@` that are no URL's user info (`echo "at: $(date -d @0)"`, rsync's
/// and scp's `user@host:path`, `git@host:repo`) are ordinary text (issue 60).
fn redact_urls(arg: &str) -> String {
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg;
    while let Some(sep) = rest.find("://") {
        let scheme = rest[..sep]
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-')))
            .next()
            .unwrap_or("");
        let after = &rest[sep + 3..];
        // The URL's text ends at a blank or a quote; its user info at its last `@`.
        let word = after
            .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`'))
            .map_or(after, |end| &after[..end]);
        let userinfo = word.rfind('@').map(|at| &word[..at]);
        out.push_str(&rest[..sep + 3]);
        rest = after;
        let Some(userinfo) = userinfo.filter(|u| !u.is_empty()) else {
            continue;
        };
        if !scheme.starts_with(|c: char| c.is_ascii_alphabetic()) {
            continue;
        }
        match userinfo.split_once(':') {
            Some((user, _)) => out.push_str(&format!("{user}:***")),
            None if userinfo.contains('/') => continue,
            None => out.push_str("***"),
        }
        rest = &after[userinfo.len()..];
    }
    out.push_str(rest);
    out
}

/// One word of a command line given as one argument (`sh -c '…'`): where it is typed
/// (`start..end`, quotes included) and what the shell makes of it.
#[derive(Debug, PartialEq)]
pub(super) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) value: String,
}

/// The words of `line` as a POSIX shell splits them (blanks; `'…'`, `"…"` and `\`
/// quoting; a `#` starting a word comments out the rest), each with where it is
/// typed; `None` for an unterminated quote or a trailing `\`: what
/// `shell_words::split` gives, plus the places.
pub(super) fn shell_spans(line: &str) -> Option<Vec<Span>> {
    let mut words = Vec::new();
    let mut chars = line.char_indices().peekable();
    let mut word: Option<Span> = None;
    while let Some((at, c)) = chars.next() {
        if c.is_whitespace() {
            words.extend(word.take());
            continue;
        }
        if word.is_none() && c == '#' {
            break;
        }
        let w = word.get_or_insert(Span {
            start: at,
            end: at,
            value: String::new(),
        });
        match c {
            '\'' => loop {
                match chars.next()? {
                    (_, '\'') => break,
                    (_, c) => w.value.push(c),
                }
            },
            '"' => loop {
                match chars.next()? {
                    (_, '"') => break,
                    (_, '\\') => match chars.next()? {
                        (_, c @ ('$' | '`' | '"' | '\\')) => w.value.push(c),
                        (_, '\n') => {}
                        (_, c) => {
                            w.value.push('\\');
                            w.value.push(c);
                        }
                    },
                    (_, c) => w.value.push(c),
                }
            },
            '\\' => match chars.next()? {
                (_, '\n') => {}
                (_, c) => w.value.push(c),
            },
            c => w.value.push(c),
        }
        w.end = chars.peek().map_or(line.len(), |(at, _)| *at);
    }
    words.extend(word);
    Some(words)
}

/// `line` as typed, with each word whose masked form differs replaced by that form:
/// `sleep 2; redis-cli -a S3cret` -> `sleep 2; redis-cli -a ***`, rather than every
/// word re-quoted (`sleep '2;' …`; issue 41).
fn masked_in_place(line: &str, words: &[Span], masked: &[String]) -> String {
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for (word, new) in words.iter().zip(masked) {
        if *new != word.value {
            out.push_str(&line[at..word.start]);
            out.push_str(new);
            at = word.end;
        }
    }
    out.push_str(&line[at..]);
    out
}

/// Whether `arg` is the short option `flag` with a value glued to it (`-pX`).
fn glued(arg: &str, flag: &str) -> bool {
    arg.len() > flag.len() && arg.starts_with(flag)
}

/// `Authorization: Bearer abc` -> `Authorization: Bearer ***` (any case, any scheme).
fn redact_authorization(arg: &str) -> String {
    let lower = arg.to_ascii_lowercase();
    let Some(at) = lower.find("authorization:") else {
        return arg.to_string();
    };
    let after = at + "authorization:".len();
    let rest = arg[after..].trim_start();
    match rest.split_once(char::is_whitespace) {
        Some((scheme, _)) => format!("{} {scheme} ***", &arg[..after]),
        None if rest.is_empty() => arg.to_string(),
        None => format!("{} ***", &arg[..after]),
    }
}

/// Hides the value of every `name=value` whose name looks secret; values end at `&`,
/// `;`, whitespace or the end.
fn redact_pairs(arg: &str) -> String {
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg;
    while let Some(eq) = rest.find('=') {
        let (before, after) = rest.split_at(eq);
        let name_start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
            .map_or(0, |i| i + 1);
        out.push_str(before);
        out.push('=');
        let after = &after[1..];
        let end = after
            .find(|c: char| matches!(c, '&' | ';') || c.is_whitespace())
            .unwrap_or(after.len());
        if secret_name(before[name_start..].trim_start_matches('-'))
            && !after[..end].is_empty()
            && &after[..end] != "***"
        {
            out.push_str("***");
        } else {
            out.push_str(&after[..end]);
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}
