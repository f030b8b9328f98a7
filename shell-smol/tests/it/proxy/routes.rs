//! Every route of the server through Caddy with the deployment's own `deploy/Caddyfile`,
//! compared with what the server answers directly. The routes are not listed here: they
//! come from the server's route table (`wizard_core::shell::upgrade::ROUTES`) and its embedded
//! web files and their aliases (`wizard_server::assets`), so a file or an alias the proxy
//! does not serve fails the Caddy test, and a route this file does not say how the proxy
//! should answer fails [`every_route_of_the_server_is_covered`] (no Caddy needed).

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use wizard_core::shell::upgrade::{Methods, PathPattern, ROUTES};
use wizard_server::assets::{ALIASES, ASSETS};

use super::{Proxy, Server, caddy};

/// What a route of the server answers through the proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Through {
    /// What the server answers: the status of `GET` (and of `HEAD`, or of a websocket
    /// upgrade for a websocket route); for a `200`, the content type and the body (for
    /// JSON, whose figures are live, its keys).
    Same,
    /// The proxy's own refusal with this status, whatever the server would answer.
    Refused(u16),
}

/// What each route of `ROUTES` (by its pattern) answers through `deploy/Caddyfile`.
const THROUGH_PROXY: &[(&str, Through)] = &[
    ("/", Through::Same),
    ("/index.html", Through::Same),
    // Every file of the web client, and every alias (`/rules`).
    ("/{file}", Through::Same),
    ("/health", Through::Same),
    // Load balancers in front of the proxy may ask it.
    ("/ready", Through::Same),
    // Not public: Prometheus scrapes the server on the internal network.
    ("/metrics", Through::Refused(404)),
    ("/ws", Through::Same),
    ("/ws/{id}", Through::Same),
    // The AI service's route is never reachable from outside.
    ("/internal/ai", Through::Refused(403)),
    ("/leaderboard", Through::Same),
    ("/profiles/{id}", Through::Same),
    ("/games/{id}", Through::Same),
];

/// Pages the server is to serve, not routes yet: the Caddyfile passes them on already,
/// so through it they get the server's own answer (its `404` with a body today, where
/// Caddy's file server would answer an empty `404`).
const PASSED_AHEAD: &[&str] = &[];

/// The server's shard id for this test, so that `/ws/{id}` has a route that upgrades.
const SHARD: &str = "A";
const AI_SECRET: &str = "s3cret";

fn expectation(pattern: &str) -> Option<Through> {
    THROUGH_PROXY
        .iter()
        .find(|(p, _)| *p == pattern)
        .map(|(_, t)| *t)
}

#[test]
fn every_route_of_the_server_is_covered() {
    for spec in ROUTES {
        let pattern = spec.pattern.to_string();
        assert!(
            expectation(&pattern).is_some(),
            "the server serves {pattern} (core/src/shell/upgrade.rs ROUTES), but the proxy test \
             does not say what it answers through deploy/Caddyfile: pass it in the \
             Caddyfile (or refuse it there) and add it to THROUGH_PROXY in {}",
            file!()
        );
    }
    for (pattern, _) in THROUGH_PROXY {
        assert!(
            ROUTES.iter().any(|s| s.pattern.to_string() == *pattern),
            "THROUGH_PROXY names {pattern}, which the server no longer serves"
        );
    }
}

/// The paths that exercise one route: its own path, a few parameters (this shard's id,
/// another shard's, one that is no id), or every file and alias and a missing file.
fn paths(pattern: PathPattern) -> Vec<String> {
    match pattern {
        PathPattern::Exact(p) => vec![p.to_owned()],
        PathPattern::Segment(prefix) => [SHARD, "B", "zz"]
            .iter()
            .map(|id| format!("{prefix}{id}"))
            .collect(),
        PathPattern::File => ASSETS
            .iter()
            .map(|a| a.name)
            .chain(ALIASES.iter().map(|(alias, _)| *alias))
            .chain(["no-such-file.js"])
            .map(|name| format!("/{name}"))
            .collect(),
    }
}

/// A response: status, `Content-Type` and body.
#[derive(Debug, PartialEq)]
struct Answer {
    status: u16,
    content_type: Option<String>,
    body: Vec<u8>,
}

/// What a client sends to a route: a plain request with this method, or a websocket
/// upgrade (`GET` with the upgrade's headers).
#[derive(Clone, Copy, Debug)]
enum Ask {
    Plain(&'static str),
    Upgrade,
}

/// Sends `ask` for `path` and reads the answer within 5 seconds: a plain request (with
/// `Connection: close`) to the end of its body, a `101` or a `HEAD` to the end of the
/// head.
fn fetch(addr: SocketAddr, ask: Ask, path: &str) -> Answer {
    let mut tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let (method, extra) = match ask {
        Ask::Plain(method) => (method, "Connection: close\r\n".to_owned()),
        Ask::Upgrade => ("GET", upgrade_headers()),
    };
    write!(
        tcp,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n"
    )
    .unwrap();
    let mut bytes = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let end = loop {
        if let Some(end) = complete(&bytes, method) {
            break end;
        }
        match tcp.read(&mut buf) {
            Ok(0) | Err(_) => break bytes.len(),
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
        }
    };
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let Ok(httparse::Status::Complete(n)) = response.parse(&bytes) else {
        panic!("{method} {path} to {addr}: no complete response head");
    };
    let header = |name: &str| {
        response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).into_owned())
    };
    let chunked = header("transfer-encoding").is_some_and(|v| v.contains("chunked"));
    let raw = &bytes[n..end.max(n)];
    Answer {
        status: response.code.unwrap_or(0),
        content_type: header("content-type"),
        body: if chunked { dechunk(raw) } else { raw.to_vec() },
    }
}

/// Where the answer in `bytes` ends, when it is all there without waiting for the end
/// of the stream: a `101` or an answer to `HEAD` at the end of its head, another answer
/// once its `Content-Length` has arrived.
fn complete(bytes: &[u8], method: &str) -> Option<usize> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let Ok(httparse::Status::Complete(n)) = response.parse(bytes) else {
        return None;
    };
    if response.code == Some(101) || method == "HEAD" {
        return Some(n);
    }
    let length: usize = response
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())?;
    (bytes.len() >= n + length).then_some(n + length)
}

/// The body of a chunked transfer.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(line_end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&raw[..line_end]);
        let size_hex = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16).unwrap();
        if size == 0 {
            break;
        }
        let start = line_end + 2;
        body.extend_from_slice(&raw[start..start + size]);
        raw = &raw[start + size + 2..];
    }
    body
}

/// A websocket upgrade request's extra headers (with the AI service's secret, so that
/// the server upgrades `/internal/ai` when asked directly).
fn upgrade_headers() -> String {
    format!(
        "Upgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Authorization: Bearer {AI_SECRET}\r\n"
    )
}

/// The keys of a JSON object, sorted.
fn json_keys(body: &[u8]) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_slice(body).unwrap();
    let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

/// Whether the proxied answer is the direct one, as [`Through::Same`] says; `None` when
/// it is, else what differs.
fn differs(direct: &Answer, proxied: &Answer) -> Option<String> {
    if direct.status != proxied.status {
        return Some(format!(
            "status {} directly, {} through the proxy",
            direct.status, proxied.status
        ));
    }
    if direct.status != 200 {
        return None;
    }
    if direct.content_type != proxied.content_type {
        return Some(format!(
            "Content-Type {:?} directly, {:?} through the proxy",
            direct.content_type, proxied.content_type
        ));
    }
    let json = direct
        .content_type
        .as_deref()
        .is_some_and(|t| t.starts_with("application/json"));
    // (An answer to HEAD has no body to parse.)
    let same_body = if json && !direct.body.is_empty() && !proxied.body.is_empty() {
        json_keys(&direct.body) == json_keys(&proxied.body)
    } else {
        direct.body == proxied.body
    };
    (!same_body).then(|| {
        format!(
            "bodies differ ({} bytes directly, {} through the proxy)",
            direct.body.len(),
            proxied.body.len()
        )
    })
}

#[test]
fn every_route_answers_through_caddy_as_it_does_directly() {
    let Some(caddy) = caddy() else { return };
    let server = Server::start(&[
        ("SHARD_ID", SHARD),
        ("AI_SHARED_SECRET", AI_SECRET),
        ("TRUSTED_PROXIES", "127.0.0.1"),
    ]);
    let proxy = Proxy::start(&caddy, server.addr);
    let (s, p) = (server.addr, proxy.addr);
    let mut wrong = Vec::new();
    let mut checked = 0;
    for spec in ROUTES {
        let pattern = spec.pattern.to_string();
        let through = expectation(&pattern).unwrap_or_else(|| {
            panic!("{pattern} is not in THROUGH_PROXY (every_route_of_the_server_is_covered)")
        });
        // What a client sends to this route: GET, and HEAD or a websocket upgrade.
        let asks = match spec.methods {
            Methods::Read => [Ask::Plain("GET"), Ask::Plain("HEAD")],
            Methods::Get => [Ask::Plain("GET"), Ask::Upgrade],
        };
        for path in paths(spec.pattern) {
            for ask in asks {
                let what = match ask {
                    Ask::Plain(method) => method,
                    Ask::Upgrade => "upgrade",
                };
                let direct = fetch(s, ask, &path);
                let proxied = fetch(p, ask, &path);
                checked += 1;
                println!(
                    "{what} {path}: {} directly, {} through the proxy",
                    direct.status, proxied.status
                );
                let problem = match through {
                    Through::Same => differs(&direct, &proxied),
                    Through::Refused(status) if proxied.status != status => Some(format!(
                        "{} through the proxy, expected its refusal {status}",
                        proxied.status
                    )),
                    // The refusal must be the proxy's, not an answer of the server.
                    Through::Refused(status) if direct.status == status => Some(format!(
                        "the server itself answers {status}: the test shows nothing"
                    )),
                    Through::Refused(_) => None,
                };
                if let Some(problem) = problem {
                    wrong.push(format!("{what} {path} ({pattern}): {problem}"));
                }
            }
        }
    }
    for path in PASSED_AHEAD {
        let direct = fetch(s, Ask::Plain("GET"), path);
        let proxied = fetch(p, Ask::Plain("GET"), path);
        checked += 1;
        assert!(
            !direct.body.is_empty(),
            "the server's answer to {path} has no body: the check cannot tell it from Caddy's"
        );
        if direct != proxied {
            wrong.push(format!(
                "GET {path} (a page to come): {} {:?} directly, {} {:?} through the proxy \
                 (not passed to the server?)",
                direct.status,
                String::from_utf8_lossy(&direct.body),
                proxied.status,
                String::from_utf8_lossy(&proxied.body)
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {checked} requests answer otherwise through deploy/Caddyfile:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
