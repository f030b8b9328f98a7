//! Caddy in front of the real `wizard-server` binary on loopback, with the deployment's own
//! `deploy/Caddyfile` (plain HTTP on a free port instead of TLS, the server on another
//! free port): a game played through the proxy, `/internal/ai` refused by the proxy, and
//! the per-IP limits counting the client address that Caddy forwards only when the proxy
//! is in `TRUSTED_PROXIES`.
//!
//! Every route of the server through the proxy, against its direct answer: `routes`.
//!
//! Needs `caddy` on the PATH (or `CADDY`); without it each test says so and passes,
//! unless `WIZARD_REQUIRE_CADDY=1` (set by `deploy/validate.sh`, which installs Caddy).

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use async_tungstenite::tungstenite::client::IntoClientRequest;
use async_tungstenite::tungstenite::http::HeaderValue;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode, ServerMessage, decode_server};

mod routes;

use crate::client::{
    Client, Player, View, bounded, close_code, local, my_move, next_text, parse_response, tcp_from,
    ws,
};

/// The `caddy` binary, or `None` (and a message) when the tests must be skipped.
fn caddy() -> Option<PathBuf> {
    let found = std::env::var_os("CADDY").map(PathBuf::from).or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|dir| dir.join("caddy"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        let required = std::env::var("WIZARD_REQUIRE_CADDY").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "WIZARD_REQUIRE_CADDY=1 but caddy is not on the PATH"
        );
        println!(
            "SKIPPED: caddy is not installed (apt-get install caddy, or run deploy/validate.sh)"
        );
    }
    found
}

pub(super) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// A scratch directory for one child process's files and log.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "proxy-{name}-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `GET path` with `Connection: close` (Caddy keeps connections alive otherwise), read
/// to the end within 5 seconds: the status and the body.
pub(super) fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let attempt = || -> std::io::Result<String> {
        let mut tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
        tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
        tcp.set_write_timeout(Some(Duration::from_secs(5)))?;
        write!(
            tcp,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )?;
        let mut response = String::new();
        tcp.read_to_string(&mut response)?;
        Ok(response)
    };
    parse_response(&attempt().unwrap_or_default())
}

/// Polls `addr`'s `path` until it answers 200 (true), for at most `secs` seconds, or
/// until `gone` says the process behind it has exited (false).
pub(super) fn poll_200(
    addr: SocketAddr,
    path: &str,
    secs: u64,
    gone: &mut dyn FnMut() -> bool,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline && !gone() {
        if get(addr, path).0 == 200 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Polls `addr`'s `path` until it answers 200, for at most `secs` seconds.
fn wait_for_200(addr: SocketAddr, path: &str, secs: u64, what: &str, log: &Path) {
    if !poll_200(addr, path, secs, &mut || false) {
        let log = std::fs::read_to_string(log).unwrap_or_default();
        panic!("{what} did not answer 200 on {path} within {secs} s; its log:\n{log}");
    }
}

/// A child process, killed (by its pid, through its handle) when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The real `wizard-server` binary on a free loopback port.
struct Server {
    addr: SocketAddr,
    _proc: Proc,
}

impl Server {
    fn start(pairs: &[(&str, &str)]) -> Server {
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let dir = scratch("server");
        let log = dir.join("server.log");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_wizard-server"));
        cmd.env_clear()
            .env("BIND", addr.to_string())
            .env("SHUTDOWN_GRACE", "0")
            .env("STORE", "memory")
            .env("LOG_LEVEL", "info")
            .envs(pairs.iter().copied())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(dir.join("server.err")).unwrap());
        let proc = Proc(cmd.spawn().unwrap());
        wait_for_200(addr, "/health", 20, "wizard-server", &log);
        Server { addr, _proc: proc }
    }
}

/// Caddy with `deploy/Caddyfile` on a free port, plain HTTP, in front of `upstream`.
struct Proxy {
    addr: SocketAddr,
    _proc: Proc,
}

impl Proxy {
    /// Starts Caddy, on other free ports when one it was given was taken in between
    /// (the other tests open loopback sockets all the time), at most three times.
    fn start(caddy: &Path, upstream: SocketAddr) -> Proxy {
        for _ in 0..2 {
            if let Some(proxy) = Proxy::try_start(caddy, upstream, true) {
                return proxy;
            }
        }
        Proxy::try_start(caddy, upstream, false).expect("caddy started")
    }

    /// `None` when Caddy could not bind its ports and `may_retry`.
    fn try_start(caddy: &Path, upstream: SocketAddr, may_retry: bool) -> Option<Proxy> {
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let health = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let dir = scratch("caddy");
        let log = dir.join("caddy.log");
        let root = repo_root();
        let mut cmd = Command::new(caddy);
        cmd.args(["run", "--adapter", "caddyfile", "--config"])
            .arg(root.join("deploy/Caddyfile"))
            .env_clear()
            .env("HOME", &dir)
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            // The deployment's Caddyfile, with plain HTTP on loopback ports.
            .env("SITE_ADDRESS", format!("http://:{}", addr.port()))
            .env("WIZARD_UPSTREAM", upstream.to_string())
            .env("WEB_ROOT", root.join("shell-smol/web"))
            .env("PROXY_HEALTH_PORT", health.port().to_string())
            .env("CADDY_ADMIN", "off")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("access.log")).unwrap())
            .stderr(std::fs::File::create(&log).unwrap());
        let mut proc = Proc(cmd.spawn().unwrap());
        let mut exited = || matches!(proc.0.try_wait(), Ok(Some(_)));
        if !poll_200(health, "/health", 20, &mut exited) {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if may_retry && text.contains("address already in use") {
                return None;
            }
            panic!("caddy did not answer 200 on /health within 20 s; its log:\n{text}");
        }
        // Ready when the whole chain answers.
        wait_for_200(addr, "/health", 20, "caddy -> wizard-server", &log);
        Some(Proxy { addr, _proc: proc })
    }
}

/// A player websocket to `addr` from the local address `from`, with extra headers.
async fn ws_via(addr: SocketAddr, from: IpAddr, headers: &[(&'static str, &str)]) -> Client {
    let mut request = format!("ws://{addr}/ws").into_client_request().unwrap();
    for (name, value) in headers {
        request
            .headers_mut()
            .append(*name, HeaderValue::from_str(value).unwrap());
    }
    let (ws, _) = async_tungstenite::client_async(request, tcp_from(addr, from))
        .await
        .unwrap();
    ws
}

/// A connection the server admitted: it said hello and got its state.
async fn admitted(addr: SocketAddr, from: IpAddr, headers: &[(&'static str, &str)]) -> Player {
    Player::hello_on(ws_via(addr, from, headers).await, None)
        .await
        .0
}

/// Whether the server refused the connection at the per-IP limit: `busy`, then 1013.
async fn refused(addr: SocketAddr, from: IpAddr, headers: &[(&'static str, &str)]) -> bool {
    let mut ws = ws_via(addr, from, headers).await;
    let first = next_text(&mut ws).await;
    let busy = matches!(
        decode_server(&first),
        Ok(ServerMessage::Error {
            code: ErrorCode::Busy,
            ..
        })
    );
    busy && close_code(&mut ws).await == 1013
}

/// Sends a websocket upgrade request for `path` and returns the status line's code.
async fn upgrade_status(addr: SocketAddr, path: &str, secret: &str) -> u16 {
    let mut tcp = async_io::Async::<TcpStream>::connect(addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Authorization: Bearer {secret}\r\n\r\n"
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 512];
    while !head.windows(2).any(|w| w == b"\r\n") {
        let n = tcp.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&head)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

const FAST: &[(&str, &str)] = &[("AI_MOVE_DELAY", "0"), ("TRICK_PAUSE", "0")];

#[test]
fn a_game_is_played_through_caddy() {
    let Some(caddy) = caddy() else { return };
    let mut pairs = FAST.to_vec();
    pairs.push(("TRUSTED_PROXIES", "127.0.0.1"));
    let server = Server::start(&pairs);
    let proxy = Proxy::start(&caddy, server.addr);
    bounded(60, async {
        // The web client comes from Caddy's file server (WEB_ROOT), /health from the server.
        let (status, body) = get(proxy.addr, "/");
        assert_eq!(status, 200);
        assert!(body.contains("<html") || body.contains("<!doctype") || body.contains("<!DOCTYPE"));
        let (status, body) = get(proxy.addr, "/app.js");
        assert_eq!(status, 200);
        assert!(!body.is_empty());
        let (status, body) = get(proxy.addr, "/health");
        assert_eq!(status, 200);
        assert!(body.contains(r#""status":"ok""#), "{body}");
        // Only /ws and /health reach the server: /metrics is not public.
        assert_eq!(get(proxy.addr, "/metrics").0, 404);
        assert_eq!(get(server.addr, "/metrics").0, 200);

        let (mut host, view) = Player::hello(proxy.addr, None).await;
        assert!(view.lobby.is_none());
        host.create_lobby("Ann").await;
        host.add_ai(2).await;
        host.add_ai(3).await;
        let mut view: View = host.start_game().await;
        let mut moves = 0;
        while moves < 4 {
            if let Some(action) = my_move(&view) {
                host.send(ClientMessage::Action { action }).await;
                moves += 1;
            }
            view = host.next_state_no_error().await;
        }
        let game = view.game.expect("the game goes on");
        assert!(game.observation.round >= 1);
    });
}

#[test]
fn internal_ai_is_refused_by_caddy() {
    let Some(caddy) = caddy() else { return };
    let server = Server::start(&[("AI_SHARED_SECRET", "s3cret")]);
    let proxy = Proxy::start(&caddy, server.addr);
    bounded(30, async {
        // The request itself is acceptable: the server upgrades it when asked directly.
        assert_eq!(
            upgrade_status(server.addr, "/internal/ai", "s3cret").await,
            101
        );
        let right = ("Authorization", "Bearer s3cret");
        assert!(ws(server.addr, "/internal/ai", &[right]).await.is_ok());
        // Through the proxy: refused by Caddy itself (its 403 "Forbidden"; the server would
        // answer a plain GET of /internal/ai with 400), whatever the spelling.
        assert_eq!(
            get(proxy.addr, "/internal/ai"),
            (403, "Forbidden".to_owned())
        );
        assert_eq!(get(server.addr, "/internal/ai").0, 400);
        assert_eq!(
            ws(proxy.addr, "/internal/ai", &[right]).await.err(),
            Some(403)
        );
        for path in [
            "/internal/ai",
            "/INTERNAL/AI",
            "/internal/ai/",
            "/internal/ai?x=1",
            "/internal",
            "/internal/",
            "//internal/ai",
            "/./internal/ai",
            "/ws/../internal/ai",
            "/%69nternal/ai",
            "/internal%2Fai",
        ] {
            let status = upgrade_status(proxy.addr, path, "s3cret").await;
            assert!(
                matches!(status, 400 | 403 | 404),
                "{path} through the proxy answered {status}"
            );
        }
    });
}

#[test]
fn per_ip_limits_see_the_forwarded_client_only_behind_a_trusted_proxy() {
    let Some(caddy) = caddy() else { return };
    // Clients connect from 127.0.0.2 and 127.0.0.3; Caddy connects to the server from
    // 127.0.0.1 and forwards the client's address in X-Forwarded-For.
    let limit = [("MAX_CONNECTIONS_PER_IP", "2")];
    let trusted = Server::start(&[limit[0], ("TRUSTED_PROXIES", "127.0.0.1")]);
    let untrusted = Server::start(&limit);
    let via_trusted = Proxy::start(&caddy, trusted.addr);
    let via_untrusted = Proxy::start(&caddy, untrusted.addr);
    let spoof = |n: u8| format!("203.0.113.{n}");
    bounded(60, async {
        // Trusted proxy: the server counts the client's own address.
        let p = via_trusted.addr;
        let _a1 = admitted(p, local(2), &[]).await;
        let _a2 = admitted(p, local(2), &[]).await;
        // The third from 127.0.0.2 is refused even though it claims another address:
        // Caddy replaced the client's X-Forwarded-For with the address it saw.
        assert!(
            refused(p, local(2), &[("X-Forwarded-For", &spoof(1))]).await,
            "a spoofed X-Forwarded-For got past the proxy"
        );
        // Another client behind the same proxy is admitted: had the server counted the
        // proxy's own address (127.0.0.1, three connections open), it would be refused.
        let _b1 = admitted(p, local(3), &[]).await;
        // A client that bypasses the proxy is not trusted: its header is ignored and it
        // is counted on its own address, 127.0.0.4.
        let s = trusted.addr;
        let _d1 = admitted(s, local(4), &[("X-Forwarded-For", &spoof(2))]).await;
        let _d2 = admitted(s, local(4), &[("X-Forwarded-For", &spoof(3))]).await;
        assert!(
            refused(s, local(4), &[("X-Forwarded-For", &spoof(4))]).await,
            "an untrusted peer chose its own address with X-Forwarded-For"
        );

        // Proxy not trusted: every client behind it counts as the proxy, 127.0.0.1, so
        // the second client address gets nothing once two connections are open.
        let p = via_untrusted.addr;
        let _e1 = admitted(p, local(2), &[]).await;
        let _e2 = admitted(p, local(2), &[]).await;
        assert!(
            refused(p, local(3), &[]).await,
            "an untrusted proxy's X-Forwarded-For was believed"
        );
        // While the server behind the trusted proxy still admits a third address.
        let _c1 = admitted(via_trusted.addr, local(5), &[]).await;
    });
}

/// The server container's health check (`wizard-healthcheck`, no Caddy needed): exit 0
/// when `/health` on `BIND`'s port answers 200, 1 when nothing listens or nothing answers
/// within its 2 s.
#[test]
fn the_container_health_check_asks_health() {
    let check = |bind: &str| {
        let started = Instant::now();
        let status = Command::new(env!("CARGO_BIN_EXE_wizard-healthcheck"))
            .env_clear()
            .env("BIND", bind)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        (status.success(), started.elapsed())
    };
    let server = Server::start(&[]);
    let (healthy, _) = check(&format!("0.0.0.0:{}", server.addr.port()));
    assert!(
        healthy,
        "wizard-healthcheck failed against a running server"
    );
    let (healthy, _) = check(&format!("127.0.0.1:{}", free_port()));
    assert!(!healthy, "wizard-healthcheck passed with nothing listening");
    // A listener that never answers: the check gives up after its 2 s.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let (healthy, took) = check(&silent.local_addr().unwrap().to_string());
    assert!(!healthy, "wizard-healthcheck passed without an answer");
    assert!(took < Duration::from_secs(4), "took {took:?}");
}
