//! The unit tests of `redis::url`: parsing, identity and redaction.

use super::*;

#[test]
fn one_server_spelled_several_ways_has_one_identity() {
    let id = |u: &str| RedisUrl::parse(u).unwrap().server_identity();
    let want = "redis://127.0.0.1:7001/0";
    for u in [
        "redis://127.0.0.1:7001",
        "redis://127.0.0.1:7001/0",
        "redis://localhost:7001",
        "redis://LOCALHOST:7001/",
        "redis://127.0.0.1:7001?x=1",
        "redis://user:pw@127.0.0.1:7001",
    ] {
        assert_eq!(id(u), want, "{u}");
    }
    assert_eq!(id("redis://h"), "redis://h:6379/0");
    assert_ne!(id("redis://127.0.0.1:7001/1"), want);
    assert_ne!(id("redis://127.0.0.1:7002"), want);
    assert!(!id("redis://u:sekrit@h:1").contains("sekrit"));
}

#[test]
fn good_urls() {
    for raw in [
        "redis://127.0.0.1:6379",
        "redis://localhost",
        "redis://:pw@host:1/2",
        "redis://user:pw@host:6380/0",
        "rediss://host:6380",
        "valkey://host:6379/1",
        "valkeys://host:6380#insecure",
        "redis://[::1]:6379",
        "unix:///tmp/redis.sock",
        "redis+unix:///tmp/redis.sock?db=1",
        "rediss://host:6380#insecure",
        "redis+cluster://h1:7000,h2:7001,[::1]:7002",
        "redis+cluster://u:p@h1",
        "rediss+cluster://h1:7000/0",
        "redis+sentinel://h1:26379,h2/mymaster",
        "redis+sentinel://:pw@h1/mymaster/3?sentinel_password=x",
        "rediss+sentinel://h1:26380/m#insecure",
    ] {
        assert!(RedisUrl::parse(raw).is_ok(), "{raw}");
    }
}

#[test]
fn bad_urls_are_usage_errors_and_redacted() {
    for raw in [
        "",
        "http://h:1",
        "REDIS-x://h",
        "redis:/x",
        "redis://:sekrit@:0",
        "redis://:sekrit@h:65536",
        "redis://:sekrit@h:0",
        "garbage",
        "unix://",
        "redis://:sekrit@host/notanumber",
        "redis://:sekrit@host#insecure",
        "redis+cluster://:sekrit@",
        "redis+cluster://:sekrit@h1:1,,h2:2",
        "redis+cluster://:sekrit@h1:1,h2:0",
        "redis+cluster://:sekrit@h1:1,h2:2/3",
        "redis+cluster://:sekrit@h1:1?x=1",
        "redis+sentinel://:sekrit@h1:1,h2:2",
        "redis+sentinel://:sekrit@h1:1/m/x",
        "redis+sentinel://:sekrit@h1:1/m?sentinel_password=sekrit&bogus=1",
        "redis+cluster://:sekrit@h1:1#insecure",
    ] {
        let err = RedisUrl::parse(raw).expect_err(raw);
        assert_eq!(err.kind(), crate::error::Kind::Usage, "{raw}");
        let message = err.to_string();
        assert!(!message.contains("sekrit"), "{message}");
        assert!(!message.contains('\n'));
    }
}

#[test]
fn display_redacts() {
    let url = RedisUrl::parse("redis://alice:s3cret@h:1/0").unwrap();
    assert_eq!(url.to_string(), "redis://alice:***@h:1/0");
    assert!(!format!("{url:?}").contains("s3cret"));
    assert_eq!(url.secret(), "redis://alice:s3cret@h:1/0");
    assert_eq!(
        redact("unix:///s.sock?pass=zz&db=1"),
        "unix:///s.sock?pass=***&db=1"
    );
    assert_eq!(redact("redis://a:b@c@host"), "redis://a:***@host");
    assert_eq!(redact("redis://:pw@host:99999"), "redis://***@host:99999");
    assert_eq!(
        redact("redis+cluster://u:pw@h1:1,h2:2"),
        "redis+cluster://u:***@h1:1,h2:2"
    );
    assert_eq!(
        redact("redis+sentinel://:pw@h1,h2/m?sentinel_password=zz"),
        "redis+sentinel://***@h1,h2/m?sentinel_password=***"
    );
    assert_eq!(
        redact("redis+sentinel://h1/m?sentinel_password=zz"),
        "redis+sentinel://h1/m?sentinel_password=***"
    );
}

#[test]
fn malformed_urls_are_redacted_too() {
    for raw in [
        "redis:/:sekrit@127.0.0.1:6379",
        "redis:://:sekrit@127.0.0.1:6379",
        "redis::/user:sekrit@127.0.0.1:6379",
        "redis//:sekrit@127.0.0.1:6379",
        ":sekrit@127.0.0.1:6379",
        "sekrit@host",
        "redis://sekrit@host",
        "redis://:sek/rit@host",
        "redis://:sek?rit@host",
        "redis://:sek#rit@host",
        "redis://127.0.0.1:6379/0?pass=sekrit&bogus#frag",
        "redis://h?password=sek%72it",
        "unix://?pass=sekrit",
        "redis+cluster://:sekrit@h1:1,,h2:2?password=sekrit",
    ] {
        let shown = redact(raw);
        assert!(!shown.contains("sekrit"), "{raw} -> {shown}");
        assert!(!shown.contains("sek"), "{raw} -> {shown}");
    }
    assert_eq!(redact("redis:/:pw@h:1"), "redis:/***@h:1");
    assert_eq!(redact("redis://h:1/0"), "redis://h:1/0");
    assert_eq!(redact("garbage"), "garbage");
}

/// Random URL-shaped strings with a known password as the user info's password, as
/// a `*pass*` option's value or after a `#`, with stray `#?@:/&=,` anywhere around
/// it: neither the redacted URL nor a parse error ever shows it.
#[test]
fn the_redactor_never_shows_a_password_fuzzed() {
    const SECRET: &str = "Zq9SECRETq9Z";
    let schemes = [
        "redis://",
        "rediss://",
        "unix:",
        "unix://",
        "unix:///",
        "redis:/",
        "redis:",
        "redis+cluster://",
        "redis+sentinel://",
        "valkey://",
        "",
        "redis+unix://",
    ];
    let words = [
        "h",
        "host",
        "127.0.0.1",
        ":6379",
        "1",
        "/tmp/s.sock",
        "s",
        "/0",
        "m",
        "db=1",
        "insecure",
        "u",
        "x",
        "h1:1,h2:2",
    ];
    let noise = ["#", "?", "@", ":", "/", "&", "=", ",", "//", "#/", "?#", ""];
    let secrets = [
        format!(":{SECRET}@"),
        format!("u:{SECRET}@"),
        format!("?pass={SECRET}"),
        format!("?db=1&password={SECRET}"),
        format!("?sentinel_password={SECRET}"),
        format!("#{SECRET}"),
        format!("#?pass={SECRET}"),
        format!("#//s/?pass={SECRET}"),
    ];
    let mut rng = fastrand::Rng::with_seed(11);
    for _ in 0..20_000 {
        let mut parts: Vec<String> = vec![schemes[rng.usize(..schemes.len())].to_string()];
        for _ in 0..rng.usize(0..5) {
            parts.push(words[rng.usize(..words.len())].to_string());
            parts.push(noise[rng.usize(..noise.len())].to_string());
        }
        let at = rng.usize(1..=parts.len());
        parts.insert(at, secrets[rng.usize(..secrets.len())].clone());
        for _ in 0..rng.usize(0..3) {
            let at = rng.usize(1..=parts.len());
            if !parts[at - 1].contains(SECRET) {
                parts.insert(at, noise[rng.usize(..noise.len())].to_string());
            }
        }
        let raw = parts.concat();
        let shown = redact(&raw);
        assert!(!shown.contains(SECRET), "{raw:?} -> {shown:?}");
        let said = match RedisUrl::parse(&raw) {
            Ok(url) => format!("{url} {url:?}"),
            Err(e) => e.to_string(),
        };
        assert!(!said.contains(SECRET), "{raw:?} -> {said:?}");
    }
}

#[test]
fn a_fragment_is_never_echoed() {
    for raw in ["unix?:#//s/?pass=SECRET", "unix:#///tmp/x?pass=SECRET"] {
        let err = RedisUrl::parse(raw).unwrap_err().to_string();
        assert!(!err.contains("SECRET"), "{err}");
    }
    assert_eq!(redact("rediss://h#insecure"), "rediss://h#insecure");
    assert_eq!(redact("redis://h#x?pass=1"), "redis://h#***");
}

#[test]
fn messages_quoting_a_url_are_scrubbed() {
    let raw = "redis://u:p%40ss@h/x?password=q1";
    assert_eq!(
        scrub("bad u:p%40ss and p@ss and q1", raw),
        "bad u:*** and *** and ***"
    );
}

#[test]
fn cluster_seeds_and_sentinel_targets() {
    let url = RedisUrl::parse("redis+cluster://u:p%40w@h1:7000,[::1]:7001,h3").unwrap();
    let Topology::Cluster { seeds } = url.topology() else {
        panic!("not a cluster")
    };
    assert_eq!(
        seeds,
        &[
            "redis://u:p%40w@h1:7000",
            "redis://u:p%40w@[::1]:7001",
            "redis://u:p%40w@h3:6379"
        ]
    );
    assert!(url.is_cluster() && !url.is_tls());
    let url = RedisUrl::parse(
        "rediss+sentinel://u:pw@s1,s2:5000/my%20master/2?sentinel_password=a%26b#insecure",
    )
    .unwrap();
    let Topology::Sentinel(t) = url.topology() else {
        panic!("not sentinel")
    };
    assert_eq!(t.master_name, "my master");
    assert_eq!(
        t.sentinels,
        [
            "rediss://:a&b@s1:26379#insecure",
            "rediss://:a&b@s2:5000#insecure"
        ]
    );
    assert_eq!(
        t.master_url("10.0.0.1", 6380),
        "rediss://u:pw@10.0.0.1:6380/2#insecure"
    );
    assert_eq!(
        t.master_url("::1", 6380),
        "rediss://u:pw@[::1]:6380/2#insecure"
    );
    assert!(url.is_tls() && url.insecure());
    assert!(!url.to_string().contains("pw") && !url.to_string().contains("a%26b"));
}

#[test]
fn lists_split_only_where_a_url_starts() {
    assert_eq!(
        split_list("redis://a:1, redis://b:2,,rediss://c"),
        ["redis://a:1", "redis://b:2", "rediss://c"]
    );
    assert_eq!(
        split_list("redis+cluster://h1:1,h2:2,[::1]:3,redis://x"),
        ["redis+cluster://h1:1,h2:2,[::1]:3", "redis://x"]
    );
    assert_eq!(
        split_list("redis+sentinel://s1,s2:5/m"),
        ["redis+sentinel://s1,s2:5/m"]
    );
    assert!(split_list(" ").is_empty());
}

#[test]
fn tls_options_need_a_tls_url() {
    let tls = Tls {
        insecure: true,
        ..Tls::default()
    };
    let mut plain = vec![RedisUrl::parse("redis://h:1").unwrap()];
    let err = apply_tls(&mut plain, tls.clone()).unwrap_err();
    assert_eq!(err.kind(), crate::error::Kind::Usage);
    let mut mixed = vec![
        RedisUrl::parse("redis://h:1").unwrap(),
        RedisUrl::parse("rediss://h:2").unwrap(),
    ];
    apply_tls(&mut mixed, tls).unwrap();
    assert!(!mixed[0].insecure() && mixed[1].insecure());
    assert!(apply_tls(&mut plain, Tls::default()).is_ok());
}
