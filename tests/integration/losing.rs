//! What a losing try costs Redis, held as counts (never a time): at a fleet's minute
//! almost every try loses, so a command more per losing try is a command more per host.
//! Counted from `INFO commandstats` (the commands inside scripts included) around one
//! try; the range a `--once-per` skip reads of the history, from `MONITOR`.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::harness::*;

/// Every command Redis ran since the last `CONFIG RESETSTAT`, by name (those inside
/// scripts included), less the test's own INFO and CONFIG RESETSTAT.
fn commands_since_reset(redis: &Redis) -> Vec<(String, u64)> {
    let info: String = redis.cmd(&["INFO", "commandstats"]);
    let mut run: Vec<(String, u64)> = info
        .lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let calls = rest
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            Some((name.to_string(), calls))
        })
        .filter(|(name, _)| name != "info" && name != "config|resetstat")
        .collect();
    run.sort();
    run
}

/// One try of `args` (`-- true`), its exit status and stderr, with the commands it cost
/// Redis.
fn counted_try(redis: &Redis, args: &[String]) -> (i32, String, Vec<(String, u64)>) {
    let _: String = redis.cmd(&["CONFIG", "RESETSTAT"]);
    let out = output(redlock_run().args(args).args(["--", "true"]));
    (code(&out), stderr(&out), commands_since_reset(redis))
}

fn total(run: &[(String, u64)]) -> u64 {
    run.iter().map(|(_, n)| n).sum()
}

/// A busy try (the lock held by another, no `--wait`) costs Redis 4 commands, no script:
/// GET of the mode key and of the lock, PTTL, HGETALL of the metadata (7 before: an
/// EVALSHA and, inside it, GET of the mode, SET NX PX, GET, TYPE, HGETALL, PTTL). It
/// still names the holder and when its lock expires.
#[test]
fn a_busy_try_is_four_commands_and_names_the_holder() {
    let redis = Redis::start();
    let held = output(redlock().args(["acquire", "fleet", "--ttl", "2h", "--redis", &redis.url()]));
    assert_eq!(code(&held), 0, "{}", stderr(&held));
    let (code, err, run) = counted_try(&redis, &lock_args(&redis, "fleet"));
    assert_eq!(code, codes::BUSY, "{err}");
    assert!(err.contains("held by") && err.contains("pid "), "{err}");
    assert!(err.contains("expires in"), "{err}");
    assert_eq!(total(&run), 4, "{run:?}");
    assert!(run.iter().all(|(name, _)| name != "evalsha"), "{run:?}");
}

/// The `--once-per` skip reads what its answer needs, whatever `--history` keeps: TIME,
/// the history's 4 newest records, GET of the lock (4 before: an EVALSHA and, inside it,
/// TIME, TYPE and LRANGE of the whole history, decoded in Lua), at a history of 20
/// records and of 1,000 alike; and it still says which run of the slot it skipped for.
#[test]
fn a_skip_is_three_commands_whatever_the_history_keeps() {
    let redis = Redis::start();
    let mut read = Vec::new();
    for (name, size) in [("skip20", 20), ("skip1000", 1000)] {
        let mut args = lock_args(&redis, name);
        args.extend(["--history".into(), size.to_string()]);
        let mut once = args.clone();
        once.extend(["--once-per".into(), "7d".into(), "--verbose".into()]);
        let ran = output(redlock_run().args(&once).args(["--", "true"]));
        assert_eq!(code(&ran), 0, "{}", stderr(&ran));
        fill_history(&redis, name, size);
        let monitor = Monitor::start(&redis);
        let (code, err, run) = counted_try(&redis, &once);
        assert_eq!(code, codes::BUSY, "{err}");
        assert!(err.contains("already ran"), "{err}");
        assert_eq!(total(&run), 3, "history of {size}: {run:?}");
        assert!(run.iter().all(|(name, _)| name != "evalsha"), "{run:?}");
        read.push(monitor.lranges(&redis));
    }
    assert_eq!(read[0], read[1], "the skips read different ranges");
    assert_eq!(read[0], vec!["\"0\" \"3\"".to_string()]);
}

/// A try of a slot whose run is in progress (its start mark, its token holding the
/// lock) is skipped from the same 3 reads, and says whose run it is (5 before: the
/// script's EVALSHA, TIME, TYPE, LRANGE of the history and GET of the lock).
#[test]
fn a_skip_behind_the_slots_run_in_progress_is_three_commands() {
    let redis = Redis::start();
    let mut args = lock_args(&redis, "inprogress");
    args.extend(["--once-per".into(), "7d".into()]);
    let holding = Holding::start(&args);
    args.push("--verbose".into());
    let (code, err, run) = counted_try(&redis, &args);
    assert_eq!(code, codes::BUSY, "{err}");
    assert!(err.contains("in progress"), "{err}");
    assert_eq!(total(&run), 3, "{run:?}");
    assert!(run.iter().all(|(name, _)| name != "evalsha"), "{run:?}");
    let (code, err) = holding.finish();
    assert_eq!(code, 0, "{err}");
}

/// With `--splay` (the slot pinned, the server's time read first on a connection of
/// its own), a skip is that TIME and the same 3 reads (5 before: TIME, then the script's
/// EVALSHA, TIME, TYPE and LRANGE of the whole history).
#[test]
fn a_splayed_skip_is_four_commands() {
    let redis = Redis::start();
    let mut args = lock_args(&redis, "splayed");
    args.extend(["--once-per".into(), "7d".into()]);
    let ran = output(redlock_run().args(&args).args(["--", "true"]));
    assert_eq!(code(&ran), 0, "{}", stderr(&ran));
    args.extend(["--splay".into(), "50ms".into(), "--verbose".into()]);
    let (code, err, run) = counted_try(&redis, &args);
    assert_eq!(code, codes::BUSY, "{err}");
    assert!(err.contains("already ran"), "{err}");
    assert_eq!(total(&run), 4, "{run:?}");
    assert!(run.iter().all(|(name, _)| name != "evalsha"), "{run:?}");
}

/// Pushes plain runs' records (copies of the newest, each with a token of its own) until
/// the history of `name` holds `size`: all of them in the slot, newer than its run.
fn fill_history(redis: &Redis, name: &str, size: usize) {
    let key = format!("redlock:{{{name}}}:history");
    let newest: String = redis.cmd(&["LINDEX", &key, "0"]);
    let mut conn = redis.conn();
    let mut pipe = redis::pipe();
    for i in 1..size {
        let token = format!("{i:08}-0000-4000-8000-000000000000");
        let record = format!(
            "{{\"token\":\"{token}\"{}",
            &newest[newest.find(',').unwrap()..]
        );
        pipe.cmd("LPUSH").arg(&key).arg(record).ignore();
    }
    let () = pipe.query(&mut conn).expect("fill the history");
    let len: usize = redis.cmd(&["LLEN", &key]);
    assert_eq!(len, size);
}

/// A `MONITOR` connection: the commands the server ran meanwhile, scripts' included.
struct Monitor {
    stream: BufReader<TcpStream>,
}

impl Monitor {
    fn start(redis: &Redis) -> Monitor {
        let address = redis.url().trim_start_matches("redis://").to_string();
        let mut stream = TcpStream::connect(address).expect("connect");
        stream.write_all(b"MONITOR\r\n").unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut stream = BufReader::new(stream);
        let mut ok = String::new();
        stream.read_line(&mut ok).unwrap();
        assert_eq!(ok.trim_end(), "+OK");
        Monitor { stream }
    }

    /// The ranges (`"start" "stop"`) of the LRANGE commands run until now.
    fn lranges(mut self, redis: &Redis) -> Vec<String> {
        let _: String = redis.cmd(&["ECHO", "monitor-end"]);
        let mut ranges = Vec::new();
        let mut line = String::new();
        while !line.contains("\"monitor-end\"") {
            line.clear();
            assert!(
                self.stream.read_line(&mut line).unwrap() > 0,
                "MONITOR ended"
            );
            if let Some(at) = line.find("\"LRANGE\"").or_else(|| line.find("\"lrange\"")) {
                let args: Vec<&str> = line[at..].trim_end().rsplitn(3, ' ').collect();
                ranges.push(format!("{} {}", args[1], args[0]));
            }
        }
        ranges
    }
}
