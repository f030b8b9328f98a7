//! Routing and the websocket upgrade policy: tables of requests and their verdicts.

use std::net::IpAddr;

use wizard_core::shell::upgrade::{
    Methods, PathPattern, ROUTES, Reject, Route, Singleton, UpgradeRequest, check_upgrade,
    client_ip, is_websocket_key, route,
};
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::io::ConnKind;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn config(pairs: &[(&str, &str)]) -> Config {
    Config::from_pairs(pairs.iter().copied()).unwrap()
}

#[test]
fn routes() {
    let cases: &[(&str, &str, Route<'_>)] = &[
        ("GET", "/", Route::Index),
        ("HEAD", "/", Route::Index),
        ("GET", "/index.html", Route::Index),
        ("GET", "/?x=1", Route::Index),
        ("GET", "/health", Route::Health),
        ("GET", "/health?verbose", Route::Health),
        ("HEAD", "/health", Route::Health),
        ("GET", "/metrics", Route::Metrics),
        ("GET", "/ready", Route::Ready),
        ("HEAD", "/ready", Route::Ready),
        ("POST", "/ready", Route::MethodNotAllowed),
        ("GET", "/ws", Route::PlayerWs),
        ("GET", "/ws?token=abc", Route::PlayerWs),
        ("GET", "/internal/ai", Route::AiWs),
        ("GET", "/app.js", Route::Asset("app.js")),
        ("GET", "/style-2.css", Route::Asset("style-2.css")),
        ("POST", "/health", Route::MethodNotAllowed),
        ("HEAD", "/ws", Route::MethodNotAllowed),
        ("POST", "/internal/ai", Route::MethodNotAllowed),
        ("DELETE", "/app.js", Route::NotFound),
        ("GET", "/.env", Route::NotFound),
        ("GET", "/../etc/passwd", Route::NotFound),
        ("GET", "/a/b.js", Route::NotFound),
        ("GET", "/ws/", Route::NotFound),
        // Shards (PROTOCOL.md 6.3): one segment after /ws/, checked by check_upgrade.
        ("GET", "/ws/A", Route::ShardWs("A")),
        ("GET", "/ws/A?x=1", Route::ShardWs("A")),
        ("GET", "/ws/abc", Route::ShardWs("abc")),
        ("HEAD", "/ws/A", Route::MethodNotAllowed),
        ("GET", "/ws/A/", Route::NotFound),
        ("GET", "/ws//", Route::NotFound),
        ("GET", "/internal/ai/x", Route::NotFound),
        ("GET", "/%2e%2e", Route::NotFound),
        ("GET", "", Route::NotFound),
        ("GET", "*", Route::NotFound),
        ("POST", "/nope", Route::NotFound),
    ];
    for (method, path, want) in cases {
        assert_eq!(route(method, path), *want, "{method} {path}");
    }
    let long = format!("/{}", "a".repeat(65));
    assert_eq!(route("GET", &long), Route::NotFound);
}

/// The route table, pinned: a route added or removed must also change the pages that
/// list them (`docs/OPERATIONS.md`, "Running it"; `docs/PROTOCOL.md`) and the proxy in
/// front (`deploy/Caddyfile`, whose test `shell-smol/tests/it/proxy/routes.rs` takes
/// its list from `ROUTES`). Each entry is reached by a path it matches, and only with
/// its methods.
#[test]
fn the_route_table() {
    let listed: Vec<String> = ROUTES.iter().map(|r| r.pattern.to_string()).collect();
    assert_eq!(
        listed,
        [
            "/",
            "/index.html",
            "/health",
            "/metrics",
            "/ready",
            "/ws",
            "/ws/{id}",
            "/internal/ai",
            "/leaderboard",
            "/profiles/{id}",
            "/games/{id}",
            "/{file}"
        ],
        "the routes changed: update the docs and this list"
    );
    for spec in ROUTES {
        let (path, param) = match spec.pattern {
            PathPattern::Exact(p) => (p.to_owned(), ""),
            PathPattern::Segment(prefix) => (format!("{prefix}A"), "A"),
            PathPattern::File => ("/some-file.js".to_owned(), "some-file.js"),
        };
        let want = (spec.to)(param);
        assert_ne!(want, Route::NotFound, "{}", spec.pattern);
        assert_eq!(route("GET", &path), want, "GET {path}");
        let head = match (spec.methods, spec.pattern) {
            (Methods::Read, _) => want,
            (Methods::Get, _) => Route::MethodNotAllowed,
        };
        assert_eq!(route("HEAD", &path), head, "HEAD {path}");
        let post = match spec.pattern {
            PathPattern::File => Route::NotFound,
            _ => Route::MethodNotAllowed,
        };
        assert_eq!(route("POST", &path), post, "POST {path}");
    }
}

/// A valid websocket handshake to `path` from `peer` with extra headers (which take the
/// place of the handshake's own of the same name).
fn handshake<'a>(path: &'a str, peer: &str, extra: &[(&'a str, &'a str)]) -> UpgradeRequest<'a> {
    let mut headers: Vec<(&str, &[u8])> = vec![
        ("Host", b"localhost".as_slice()),
        ("Upgrade", b"websocket".as_slice()),
        ("Connection", b"keep-alive, Upgrade".as_slice()),
        ("Sec-WebSocket-Key", b"dGhlIHNhbXBsZSBub25jZQ==".as_slice()),
        ("Sec-WebSocket-Version", b"13".as_slice()),
    ];
    headers.retain(|(name, _)| !extra.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)));
    headers.extend(extra.iter().map(|(n, v)| (*n, v.as_bytes())));
    UpgradeRequest::from_headers(path, ip(peer), headers)
}

type Verdict = Result<(ConnKind, &'static str), u16>;

/// One row: name, config, path, extra headers, verdict.
type Case<'a> = (
    &'a str,
    &'a Config,
    &'a str,
    &'a [(&'a str, &'a str)],
    Verdict,
);

fn verdict(config: &Config, request: &UpgradeRequest<'_>) -> Result<(ConnKind, IpAddr), u16> {
    check_upgrade(config, request).map_err(|Reject { status, .. }| status)
}

#[test]
fn upgrade_policy() {
    let open = config(&[]);
    let secret = config(&[("AI_SHARED_SECRET", "s3cret")]);
    let origins = config(&[(
        "ALLOWED_ORIGINS",
        "https://game.example.com, http://localhost:5173/",
    )]);
    let proxied = config(&[("TRUSTED_PROXIES", "10.0.0.0/8, fd00::/8")]);
    let shard_b = config(&[("SHARD_ID", "B")]);
    let peer = "192.0.2.7";
    use ConnKind::{Ai, Player};
    #[rustfmt::skip]
    let cases: &[Case<'_>] = &[
        // Routes and handshake shape.
        ("player plain", &open, "/ws", &[], Ok((Player, peer))),
        ("unknown path", &open, "/nope", &[], Err(404)),
        ("http route", &open, "/health", &[], Err(404)),
        ("wrong version", &open, "/ws", &[("Sec-WebSocket-Version", "8")], Err(426)),
        // Shard routes: its own id is /ws, another shard's is misdirected (421).
        ("shard own", &shard_b, "/ws/B", &[], Ok((Player, peer))),
        ("shard plain ws", &shard_b, "/ws", &[], Ok((Player, peer))),
        ("shard other", &shard_b, "/ws/A", &[], Err(421)),
        ("shard other digit", &shard_b, "/ws/9", &[], Err(421)),
        ("shard lower case", &shard_b, "/ws/b", &[], Err(404)),
        ("shard not an id", &shard_b, "/ws/O", &[], Err(404)),
        ("shard two chars", &shard_b, "/ws/BB", &[], Err(404)),
        ("shard path unsharded", &open, "/ws/B", &[], Err(404)),
        ("shard checked before handshake", &shard_b, "/ws/A", &[("Sec-WebSocket-Version", "8")], Err(421)),
        // AI route: forwarding headers and the secret.
        ("ai no secret configured", &open, "/internal/ai", &[], Ok((Ai, peer))),
        ("ai xff", &open, "/internal/ai", &[("X-Forwarded-For", "1.2.3.4")], Err(403)),
        ("ai forwarded", &open, "/internal/ai", &[("Forwarded", "for=1.2.3.4")], Err(403)),
        ("ai via", &open, "/internal/ai", &[("Via", "1.1 caddy")], Err(403)),
        ("ai xff lowercase", &open, "/internal/ai", &[("x-forwarded-for", "")], Err(403)),
        ("ai right secret", &secret, "/internal/ai", &[("Authorization", "Bearer s3cret")], Ok((Ai, peer))),
        ("ai scheme any case", &secret, "/internal/ai", &[("authorization", "bearer s3cret")], Ok((Ai, peer))),
        ("ai wrong secret", &secret, "/internal/ai", &[("Authorization", "Bearer s3creT")], Err(403)),
        ("ai longer secret", &secret, "/internal/ai", &[("Authorization", "Bearer s3cret2")], Err(403)),
        ("ai prefix secret", &secret, "/internal/ai", &[("Authorization", "Bearer s3cre")], Err(403)),
        ("ai no auth", &secret, "/internal/ai", &[], Err(403)),
        ("ai basic", &secret, "/internal/ai", &[("Authorization", "Basic s3cret")], Err(403)),
        ("ai bare secret", &secret, "/internal/ai", &[("Authorization", "s3cret")], Err(403)),
        ("ai right secret but forwarded", &secret, "/internal/ai",
            &[("Authorization", "Bearer s3cret"), ("Via", "1.1 proxy")], Err(403)),
        ("ai xff ignored for trust", &proxied, "/internal/ai", &[("X-Forwarded-For", "1.2.3.4")], Err(403)),
        // Player route: origins.
        ("origin any", &open, "/ws", &[("Origin", "https://evil.example")], Ok((Player, peer))),
        ("origin listed", &origins, "/ws", &[("Origin", "https://game.example.com")], Ok((Player, peer))),
        ("origin case", &origins, "/ws", &[("Origin", "HTTPS://Game.Example.com")], Ok((Player, peer))),
        ("origin slash listed", &origins, "/ws", &[("Origin", "http://localhost:5173")], Ok((Player, peer))),
        ("origin other", &origins, "/ws", &[("Origin", "https://evil.example")], Err(403)),
        ("origin other port", &origins, "/ws", &[("Origin", "https://game.example.com:8443")], Err(403)),
        ("origin null", &origins, "/ws", &[("Origin", "null")], Err(403)),
        ("origin missing", &origins, "/ws", &[], Ok((Player, peer))),
        // Player route: the client address.
        ("xff from untrusted peer", &open, "/ws", &[("X-Forwarded-For", "1.2.3.4")], Ok((Player, peer))),
        ("xff untrusted with proxies", &proxied, "/ws", &[("X-Forwarded-For", "1.2.3.4")], Ok((Player, peer))),
    ];
    for (name, config, path, extra, want) in cases {
        let request = handshake(path, peer, extra);
        let want = want.map(|(kind, addr)| (kind, ip(addr)));
        assert_eq!(verdict(config, &request), want, "{name}");
    }
}

#[test]
fn not_a_handshake() {
    let open = config(&[]);
    let peer = ip("127.0.0.1");
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("nothing", &[]),
        (
            "no key",
            &[
                ("Upgrade", "websocket"),
                ("Connection", "Upgrade"),
                ("Sec-WebSocket-Version", "13"),
            ],
        ),
        (
            "no connection upgrade",
            &[
                ("Upgrade", "websocket"),
                ("Connection", "keep-alive"),
                ("Sec-WebSocket-Key", "x"),
                ("Sec-WebSocket-Version", "13"),
            ],
        ),
        (
            "upgrade to something else",
            &[
                ("Upgrade", "h2c"),
                ("Connection", "Upgrade"),
                ("Sec-WebSocket-Key", "x"),
                ("Sec-WebSocket-Version", "13"),
            ],
        ),
    ];
    for (name, headers) in cases {
        let request = UpgradeRequest::from_headers(
            "/ws",
            peer,
            headers.iter().map(|(n, v)| (*n, v.as_bytes())),
        );
        assert_eq!(verdict(&open, &request), Err(400), "{name}");
    }
}

#[test]
fn non_utf8_headers_fail_closed() {
    let origins = config(&[("ALLOWED_ORIGINS", "https://a.example")]);
    let secret = config(&[("AI_SHARED_SECRET", "s")]);
    let base: Vec<(&str, &[u8])> = vec![
        ("Upgrade", b"websocket"),
        ("Connection", b"upgrade"),
        ("Sec-WebSocket-Key", b"dGhlIHNhbXBsZSBub25jZQ=="),
        ("Sec-WebSocket-Version", b"13"),
    ];
    let peer = ip("127.0.0.1");
    let mut with_origin = base.clone();
    with_origin.push(("Origin", b"https://a.example\xff"));
    let request = UpgradeRequest::from_headers("/ws", peer, with_origin);
    assert_eq!(verdict(&origins, &request), Err(403));
    let mut with_auth = base.clone();
    with_auth.push(("Authorization", b"Bearer s\xff"));
    let request = UpgradeRequest::from_headers("/internal/ai", peer, with_auth);
    assert_eq!(verdict(&secret, &request), Err(403));
    let mut with_xff = base;
    with_xff.push(("X-Forwarded-For", b"\xff"));
    let request = UpgradeRequest::from_headers("/internal/ai", peer, with_xff);
    assert_eq!(verdict(&config(&[]), &request), Err(403));
}

#[test]
fn client_address_behind_trusted_proxies() {
    let proxied = config(&[("TRUSTED_PROXIES", "10.0.0.0/8, 172.16.0.1, fd00::/8")]);
    #[rustfmt::skip]
    let cases: &[(&str, &str, &[&str], &str)] = &[
        ("untrusted peer ignores xff", "192.0.2.1", &["1.2.3.4"], "192.0.2.1"),
        ("trusted peer, no xff", "10.0.0.2", &[], "10.0.0.2"),
        ("trusted peer, one entry", "10.0.0.2", &["1.2.3.4"], "1.2.3.4"),
        ("right-most untrusted entry", "10.0.0.2", &["6.6.6.6, 1.2.3.4"], "1.2.3.4"),
        ("skips trusted hops", "10.0.0.2", &["6.6.6.6, 1.2.3.4, 10.1.1.1, 172.16.0.1"], "1.2.3.4"),
        ("several headers form one list", "10.0.0.2", &["6.6.6.6", "1.2.3.4, 10.9.9.9"], "1.2.3.4"),
        ("spoofed left part ignored", "10.0.0.2", &["10.0.0.1, 1.2.3.4"], "1.2.3.4"),
        ("all trusted: left-most", "10.0.0.2", &["10.0.0.5, 10.0.0.6"], "10.0.0.5"),
        ("garbage right-most: last trusted", "10.0.0.2", &["1.2.3.4, unknown"], "10.0.0.2"),
        ("garbage behind trusted hop", "10.0.0.2", &["junk, 10.0.0.9"], "10.0.0.9"),
        ("empty value", "10.0.0.2", &[""], "10.0.0.2"),
        ("entry with port", "10.0.0.2", &["1.2.3.4:5678"], "1.2.3.4"),
        ("ipv6 entry with port", "10.0.0.2", &["[2001:db8::1]:443"], "2001:db8::1"),
        ("bracketed ipv6 entry", "10.0.0.2", &["[2001:db8::1]"], "2001:db8::1"),
        ("ipv6 proxy", "fd00::1", &["2001:db8::2"], "2001:db8::2"),
        ("mapped peer is trusted v4", "::ffff:10.0.0.2", &["1.2.3.4"], "1.2.3.4"),
        ("mapped peer made canonical", "::ffff:192.0.2.1", &[], "192.0.2.1"),
        ("mapped entry made canonical", "10.0.0.2", &["::ffff:1.2.3.4"], "1.2.3.4"),
    ];
    for (name, peer, xff, want) in cases {
        assert_eq!(client_ip(&proxied, ip(peer), xff), ip(want), "{name}");
    }
}

#[test]
fn player_ip_through_check_upgrade() {
    let proxied = config(&[("TRUSTED_PROXIES", "127.0.0.1")]);
    let request = handshake("/ws", "127.0.0.1", &[("X-Forwarded-For", "203.0.113.9")]);
    assert_eq!(
        check_upgrade(&proxied, &request),
        Ok((ConnKind::Player, ip("203.0.113.9")))
    );
}

/// RFC 6455 section 4.1: the key is 16 bytes in base64; the request is HTTP/1.1. Both
/// are refused with 400, before the version (426) and the security rules (403).
#[test]
fn malformed_handshakes_get_400() {
    let open = config(&[]);
    let secret = config(&[("AI_SHARED_SECRET", "s3cret")]);
    #[rustfmt::skip]
    let keys: &[(&str, &str)] = &[
        ("short", "dGhlIHNhbXBsZQ=="),
        ("long", "dGhlIHNhbXBsZSBub25jZXg="),
        ("no padding", "dGhlIHNhbXBsZSBub25jZQ"),
        ("one pad", "dGhlIHNhbXBsZSBub25jZQA="),
        ("not base64", "dGhlIHNhbXBsZSBub25jZ!=="),
        ("stray data bits", "dGhlIHNhbXBsZSBub25jZR=="),
        ("url alphabet", "dGhlIHNhbXBsZSBub25jZ-=="),
        ("spaces inside", "dGhlIHNhbXBs ZSBub25jZQ=="),
        ("x", "x"),
    ];
    for (name, key) in keys {
        assert!(!is_websocket_key(key), "{name}");
        let request = handshake("/ws", "192.0.2.7", &[("Sec-WebSocket-Key", key)]);
        assert_eq!(request.websocket_key, Some(*key), "{name}");
        assert_eq!(verdict(&open, &request), Err(400), "{name}");
        let request = handshake("/internal/ai", "192.0.2.7", &[("Sec-WebSocket-Key", key)]);
        assert_eq!(verdict(&secret, &request), Err(400), "ai {name}");
    }
    for key in [
        "dGhlIHNhbXBsZSBub25jZQ==",
        "AAAAAAAAAAAAAAAAAAAAAA==",
        "/////////////////////w==",
    ] {
        assert!(is_websocket_key(key), "{key}");
    }
    let mut old = handshake("/ws", "192.0.2.7", &[]);
    assert!(verdict(&open, &old).is_ok());
    old.http_1_0 = true;
    assert_eq!(verdict(&open, &old), Err(400));
    // A bad key with a bad version is a bad handshake first.
    let both = handshake(
        "/ws",
        "192.0.2.7",
        &[("Sec-WebSocket-Key", "x"), ("Sec-WebSocket-Version", "8")],
    );
    assert_eq!(verdict(&open, &both), Err(400));
}

/// A case of a repeated header: its name, the two headers, the one reported.
type Twice<'a> = (&'a str, [(&'a str, &'a str); 2], Singleton);

/// RFC 6455 section 11.3 (and RFC 9110 for `Host`): a header that may appear once and
/// comes twice is a bad handshake (400), on every websocket route and before every
/// other check but the path's, even when both values are good or equal. Lists
/// (`Upgrade`, `Connection`, `X-Forwarded-For`) may be split over several lines.
#[test]
fn a_header_that_may_appear_once_and_comes_twice_gets_400() {
    let open = config(&[("ALLOWED_ORIGINS", "https://a.example")]);
    let secret = config(&[("AI_SHARED_SECRET", "s3cret")]);
    let key = "dGhlIHNhbXBsZSBub25jZQ==";
    #[rustfmt::skip]
    let twice: &[Twice] = &[
        ("key", [("Sec-WebSocket-Key", key), ("sec-websocket-key", "AAAAAAAAAAAAAAAAAAAAAA==")], Singleton::WebSocketKey),
        ("same key", [("Sec-WebSocket-Key", key), ("Sec-WebSocket-Key", key)], Singleton::WebSocketKey),
        ("version", [("Sec-WebSocket-Version", "13"), ("Sec-WebSocket-Version", "13")], Singleton::WebSocketVersion),
        ("origin", [("Origin", "https://evil.example"), ("Origin", "https://a.example")], Singleton::Origin),
        ("host", [("Host", "localhost"), ("HOST", "elsewhere")], Singleton::Host),
        ("authorization", [("Authorization", "Bearer s3cret"), ("Authorization", "Bearer s3cret")], Singleton::Authorization),
    ];
    for (name, headers, which) in twice {
        let request = handshake("/ws", "192.0.2.7", headers);
        assert_eq!(request.duplicate, Some(*which), "{name}");
        let refused = check_upgrade(&open, &request).unwrap_err();
        assert_eq!(refused.status, 400, "{name}");
        assert!(
            refused.reason.starts_with("more than one "),
            "{name}: {refused}"
        );
        let request = handshake("/internal/ai", "192.0.2.7", headers);
        assert_eq!(verdict(&secret, &request), Err(400), "ai {name}");
        // The path is checked first.
        let request = handshake("/nowhere", "192.0.2.7", headers);
        assert_eq!(verdict(&open, &request), Err(404), "{name}");
    }
    // Once each is a good handshake; lists over several lines are one list.
    #[rustfmt::skip]
    let lists: &[(&str, &str)] = &[
        ("Origin", "https://a.example"),
        ("Upgrade", "websocket"), ("Upgrade", "websocket"),
        ("Connection", "keep-alive"), ("Connection", "Upgrade"),
        ("X-Forwarded-For", "192.0.2.1"), ("X-Forwarded-For", "192.0.2.2"),
    ];
    let request = handshake("/ws", "192.0.2.7", lists);
    assert_eq!(request.duplicate, None);
    assert!(verdict(&open, &request).is_ok());
}

proptest::proptest! {
    /// Exactly the encodings of 16 bytes are keys.
    #[test]
    fn keys_are_the_base64_of_16_bytes(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..24), junk in "[ -~]{0,30}") {
        let encoded = base64_encode(&bytes);
        proptest::prop_assert_eq!(is_websocket_key(&encoded), bytes.len() == 16);
        if junk.len() != 24 || !junk.ends_with("==") {
            proptest::prop_assert!(!is_websocket_key(&junk));
        }
    }
}

/// Standard base64 with padding (the reference for the property above).
fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
