//! The door against the real server: storms of silent sockets from one and from many
//! addresses, a slow-head storm, a monitor polling past `SOCKET_RATE`, the first-byte
//! timeout, malformed upgrades and heads, `/ready`, `HEAD`, and a client that never
//! reads.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_io::{Async, Timer};
use async_tungstenite::tungstenite::client::IntoClientRequest;
use futures_lite::FutureExt;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use wizard_core::vocabulary::wire::ClientMessage;

use crate::client::{
    Player, TestServer, View, bounded, client_frame, http, local, metric, metric_in, my_move,
    parse_response, raw_hello, tcp_from, ws_from,
};

/// Fast games with a small socket cap: `MAX_CONNECTIONS` 20 makes 36 full slots and 16
/// reserve slots; one address may hold 20 sockets.
const SMALL: &[(&str, &str)] = &[
    ("MAX_CONNECTIONS", "20"),
    ("AI_MOVE_DELAY", "0"),
    ("TRICK_PAUSE", "0"),
    ("HANDSHAKE_TIMEOUT", "30"),
    ("FIRST_BYTE_TIMEOUT", "30"),
];

/// Sends `request` from `from` and reads the whole response.
async fn raw_from(addr: SocketAddr, from: IpAddr, request: &[u8]) -> String {
    let mut tcp = tcp_from(addr, from);
    tcp.write_all(request).await.unwrap();
    let mut response = Vec::new();
    let _ = tcp.read_to_end(&mut response).await;
    String::from_utf8_lossy(&response).into_owned()
}

/// Opens `n` sockets that never send anything, from the addresses `from(k)`, and waits
/// until the server has accepted all of them (and what it accepted before).
async fn silent_sockets(
    addr: SocketAddr,
    n: usize,
    from: impl Fn(usize) -> IpAddr,
) -> Vec<Async<TcpStream>> {
    let before = metric(addr, "wizard_tcp_accepted_total").await as usize;
    let mut held = Vec::with_capacity(n);
    for k in 0..n {
        held.push(tcp_from(addr, from(k)));
        // In steps, so that the listen backlog (128) never overflows.
        if k % 50 == 49 {
            wait_accepted(addr, before + k + 1).await;
        }
    }
    wait_accepted(addr, before + n).await;
    held
}

/// Polls `/metrics` until at least `n` sockets were accepted (each poll adds one).
async fn wait_accepted(addr: SocketAddr, n: usize) {
    while (metric(addr, "wizard_tcp_accepted_total").await as usize) < n {}
}

/// Makes `moves` moves of `player`'s in its running game, from `view` on.
async fn play(player: &mut Player, mut view: View, moves: usize) {
    let mut made = 0;
    while made < moves {
        if let Some(action) = my_move(&view) {
            player.send(ClientMessage::Action { action }).await;
            made += 1;
        }
        view = player.next_state_no_error().await;
    }
}

/// A host from `from` alone with two AI seats, its game started.
async fn solo_game(addr: SocketAddr, from: IpAddr) -> (Player, View) {
    let (mut host, _) = Player::hello_on(ws_from(addr, from).await, None).await;
    host.create_lobby("Host").await;
    host.add_ai(2).await;
    host.add_ai(3).await;
    let view = host.start_game().await;
    (host, view)
}

#[test]
fn silent_sockets_from_one_address_lock_nobody_out() {
    let server = TestServer::start(SMALL);
    let addr = server.addr;
    bounded(60, async {
        let (ann, _) = solo_game(addr, local(4)).await;
        let Player { ws, token, id } = ann;
        drop(ws);
        // 300 silent sockets from 127.0.0.2: ten times the whole socket cap.
        let storm_began = std::time::Instant::now();
        let storm = silent_sockets(addr, 300, |_| local(2)).await;
        for _ in 0..20 {
            let (status, body) = http(addr, "GET", "/health", &[]).await;
            assert_eq!(status, 200, "{body}");
        }
        // A new player from another address connects and plays.
        let (mut bob, view) = solo_game(addr, local(3)).await;
        play(&mut bob, view, 1).await;
        // A returning player gets back into its running game.
        let (ann, view) = Player::hello_on(ws_from(addr, local(4)).await, Some(&token)).await;
        assert_eq!(ann.id, id);
        assert!(view.game.is_some(), "the game view is restored");
        // The storm only churned its own share of sockets (MAX_SOCKETS_PER_IP's
        // default) and held its share of the probe lane; past SOCKET_BURST and the lane
        // its sockets were closed at once.
        let share = wizard_core::vocabulary::config::default_sockets_per_ip(10) as f64;
        let lane = wizard_core::shell::door::PROBE_LANE_SOCKETS_PER_IP_MAX as f64;
        let evicted = metric(addr, "wizard_tcp_evicted_total").await;
        let rate_limited = metric(addr, "wizard_tcp_rate_limited_total").await;
        // SOCKET_BURST (40) at once, then SOCKET_RATE (20) a second while the storm
        // lasted (long on a loaded machine).
        let refilled = 20.0 * storm_began.elapsed().as_secs_f64().ceil();
        assert!(
            rate_limited >= 300.0 - 40.0 - refilled,
            "{rate_limited} refused for SOCKET_RATE"
        );
        assert!(
            evicted + rate_limited >= 300.0 - share - lane,
            "{evicted} evicted"
        );
        assert!(metric(addr, "wizard_tcp_probe_lane_total").await >= lane);
        drop(storm);
    });
}

#[test]
fn silent_sockets_from_many_addresses_are_evicted_for_health_and_players() {
    let server = TestServer::start(SMALL);
    let addr = server.addr;
    bounded(60, async {
        let (ann, _) = solo_game(addr, local(4)).await;
        let Player { ws, token, id } = ann;
        drop(ws);
        // 200 addresses, one silent socket each: more than every slot (52).
        let storm = silent_sockets(addr, 200, |k| {
            IpAddr::V4(Ipv4Addr::new(
                127,
                0,
                1 + (k / 250) as u8,
                1 + (k % 250) as u8,
            ))
        })
        .await;
        let (status, _) = http(addr, "GET", "/health", &[]).await;
        assert_eq!(status, 200);
        let (ann, view) = Player::hello_on(ws_from(addr, local(4)).await, Some(&token)).await;
        assert_eq!(ann.id, id);
        assert!(view.game.is_some(), "the game view is restored");
        let (mut bob, view) = solo_game(addr, local(3)).await;
        play(&mut bob, view, 1).await;
        assert!(metric(addr, "wizard_tcp_evicted_total").await >= 148.0);
        drop(storm);
    });
}

#[test]
fn a_silent_socket_is_closed_at_the_first_byte_timeout() {
    let server = TestServer::start(&[("FIRST_BYTE_TIMEOUT", "0.2"), ("HANDSHAKE_TIMEOUT", "30")]);
    bounded(10, async {
        let mut tcp = Async::<TcpStream>::connect(server.addr).await.unwrap();
        let mut rest = Vec::new();
        // Closed without a response long before HANDSHAKE_TIMEOUT (the bound is 10 s).
        assert_eq!(tcp.read_to_end(&mut rest).await.unwrap_or(0), 0);
        let timeouts = metric(server.addr, "wizard_first_byte_timeouts_total").await;
        assert_eq!(timeouts, 1.0);
        // One byte in time, the rest later: only HANDSHAKE_TIMEOUT applies then.
        let mut tcp = Async::<TcpStream>::connect(server.addr).await.unwrap();
        tcp.write_all(b"G").await.unwrap();
        let mut tcp2 = Async::<TcpStream>::connect(server.addr).await.unwrap();
        assert_eq!(tcp2.read_to_end(&mut rest).await.unwrap_or(0), 0);
        tcp.write_all(b"ET /health HTTP/1.1\r\n\r\n").await.unwrap();
        let mut response = String::new();
        tcp.read_to_string(&mut response).await.unwrap();
        assert_eq!(parse_response(&response).0, 200, "{response}");
    });
}

/// The status, the `Retry-After` header and the body of a raw response.
fn busy_parts(response: &str) -> (u16, Option<&str>, &str) {
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((response, ""));
    let retry = head.lines().find_map(|l| l.strip_prefix("Retry-After: "));
    (parse_response(response).0, retry, body)
}

#[test]
fn a_monitor_asking_back_to_back_past_socket_rate_is_always_answered() {
    // One new socket a second per address: every probe after the first is over it.
    let server = TestServer::start(&[("SOCKET_RATE", "1"), ("SOCKET_BURST", "1")]);
    let addr = server.addr;
    bounded(60, async {
        for k in 0..300 {
            let path = ["/health", "/ready", "/metrics"][k % 3];
            let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
            let response = raw_from(addr, local(2), request.as_bytes()).await;
            assert_eq!(
                parse_response(&response).0,
                200,
                "{path}, probe {k}: {response}"
            );
        }
        // Over its rate, anything but a probe is told to come back later.
        let good = "dGhlIHNhbXBsZSBub25jZQ==";
        let response = raw_from(
            addr,
            local(2),
            upgrade("HTTP/1.1", Some(good), "13").as_bytes(),
        )
        .await;
        let (status, retry, body) = busy_parts(&response);
        assert_eq!((status, retry), (503, Some("1")), "{response}");
        assert!(body.starts_with("busy"), "{response}");
        // An address holding its share of the probe lane with silent sockets is refused
        // at once, and told so.
        let held: Vec<_> = (0..wizard_core::shell::door::PROBE_LANE_SOCKETS_PER_IP_MAX)
            .map(|_| tcp_from(addr, local(2)))
            .collect();
        let response = raw_from(addr, local(2), b"GET /health HTTP/1.1\r\n\r\n").await;
        let (status, retry, body) = busy_parts(&response);
        assert_eq!(
            (status, retry, body),
            (503, Some("1"), "busy\n"),
            "{response}"
        );
        drop(held);
        assert!(metric(addr, "wizard_tcp_probe_lane_total").await >= 299.0);
        assert!(metric(addr, "wizard_tcp_rate_limited_total").await >= 1.0);
    });
}

/// What the slow-head storm's sockets heard when the server closed them.
#[derive(Default)]
struct Heard {
    busy: AtomicU64,
    other: AtomicU64,
}

/// One attacker address of a slow-head storm: a socket that sends the start of a head
/// and nothing more, again as soon as the server closes it. Never ends.
async fn slow_head_socket(addr: SocketAddr, from: IpAddr, heard: &Heard) {
    loop {
        let mut tcp = tcp_from(addr, from);
        let _ = tcp.write_all(b"GET /ws HTTP/1.1\r\nHost: x\r\n").await;
        let mut answer = Vec::new();
        let _ = tcp.read_to_end(&mut answer).await;
        let answer = String::from_utf8_lossy(&answer);
        let (status, retry, body) = busy_parts(&answer);
        let told = status == 503 && retry == Some("1") && body.starts_with("busy");
        let count = if told { &heard.busy } else { &heard.other };
        count.fetch_add(1, Ordering::Relaxed);
    }
}

/// A player from `from` whose request comes `rtt` after its connection (a client far
/// away: its socket is silent at the server meanwhile), said hello and welcomed.
async fn distant_player(addr: SocketAddr, from: IpAddr, rtt: Duration) -> Player {
    let tcp = tcp_from(addr, from);
    Timer::after(rtt).await;
    let request = format!("ws://{addr}/ws").into_client_request().unwrap();
    let (ws, _) = async_tungstenite::client_async(request, tcp)
        .await
        .expect("the upgrade went through");
    Player::hello_on(ws, None).await.0
}

#[test]
fn a_slow_head_storm_from_many_addresses_lets_new_players_in_and_tells_the_cut_busy() {
    // 52 slots (SMALL), 80 attacker addresses with one slow head each, reconnecting as
    // soon as they are cut: every slot is always taken by a slow head or about to be.
    let server = TestServer::start(SMALL);
    let addr = server.addr;
    let heard = Heard::default();
    bounded(60, async {
        let storm = futures_util::future::join_all(
            (0..80u8).map(|k| slow_head_socket(addr, IpAddr::from([127, 0, 2, 1 + k]), &heard)),
        );
        let honest = async {
            // The storm holds every slot before the first player comes. A poll cut in
            // its first round (every socket new and silent: the oldest goes) is told
            // busy and asks again.
            loop {
                let r = raw_from(addr, local(1), b"GET /metrics HTTP/1.1\r\n\r\n").await;
                match busy_parts(&r) {
                    (200, _, body) if metric_in(body, "wizard_tcp_evicted_total") >= 40.0 => break,
                    (200, _, _) => {}
                    (_, retry, body) => assert!(retry == Some("1") && body == "busy\n", "{r}"),
                }
            }
            for k in 0..5u8 {
                let player = distant_player(addr, local(20 + k), Duration::from_millis(50)).await;
                assert!(!player.token.is_empty(), "player {k} welcomed");
            }
        };
        honest
            .or(async {
                storm.await;
            })
            .await;
    });
    let (busy, other) = (
        heard.busy.load(Ordering::Relaxed),
        heard.other.load(Ordering::Relaxed),
    );
    assert!(busy >= 40, "only {busy} cut sockets were told busy");
    assert_eq!(
        other, 0,
        "{other} sockets closed without busy ({busy} with)"
    );
}

#[test]
fn a_head_of_blank_lines_is_answered_400_at_once() {
    let server = TestServer::start(&[("HANDSHAKE_TIMEOUT", "30"), ("FIRST_BYTE_TIMEOUT", "30")]);
    let addr = server.addr;
    // Bounded far below HANDSHAKE_TIMEOUT: an answer that waited for it fails the test.
    bounded(10, async {
        for blank in [&b"\r\n\r\n"[..], b"\n\n", b"\r\n\r\n\r\n\r\n"] {
            let response = raw_from(addr, local(1), blank).await;
            assert_eq!(parse_response(&response).0, 400, "{blank:?}: {response}");
        }
        // One blank line before the request line is allowed (RFC 9112 section 2.2).
        let one = raw_from(addr, local(1), b"\r\nGET /health HTTP/1.1\r\n\r\n").await;
        assert_eq!(parse_response(&one).0, 200, "{one}");
    });
}

#[test]
fn ready_names_max_lobbies_when_every_lobby_is_held() {
    let server = TestServer::start(&[("MAX_LOBBIES", "1")]);
    let addr = server.addr;
    bounded(20, async {
        let (status, _) = http(addr, "GET", "/ready", &[]).await;
        assert_eq!(status, 200);
        // A lobby with its host connected is not idle: nobody may create another.
        let (mut ann, _) = Player::hello(addr, None).await;
        ann.create_lobby("Ann").await;
        loop {
            let (status, body) = http(addr, "GET", "/ready", &[]).await;
            if status == 503 {
                assert_eq!(body, r#"{"ready":false,"reason":"max_lobbies"}"#);
                break;
            }
            assert_eq!((status, body.as_str()), (200, r#"{"ready":true}"#));
        }
        drop(ann);
    });
}

fn upgrade(version: &str, key: Option<&str>, ws_version: &str) -> String {
    let key = key.map_or(String::new(), |k| format!("Sec-WebSocket-Key: {k}\r\n"));
    format!(
        "GET /ws {version}\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         {key}Sec-WebSocket-Version: {ws_version}\r\n\r\n"
    )
}

#[test]
fn malformed_upgrades_get_400_and_no_upgrade() {
    let server = TestServer::start(&[("HANDSHAKE_TIMEOUT", "30")]);
    let addr = server.addr;
    let good = "dGhlIHNhbXBsZSBub25jZQ==";
    bounded(10, async {
        let cases = [
            ("bad key", upgrade("HTTP/1.1", Some("x"), "13"), 400),
            (
                "short key",
                upgrade("HTTP/1.1", Some("dGhlIHNhbXBsZQ=="), "13"),
                400,
            ),
            ("no key", upgrade("HTTP/1.1", None, "13"), 400),
            ("http/1.0", upgrade("HTTP/1.0", Some(good), "13"), 400),
            ("version 8", upgrade("HTTP/1.1", Some(good), "8"), 426),
            (
                "two keys",
                upgrade("HTTP/1.1", Some(good), "13").replace(
                    "Sec-WebSocket-Version",
                    "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\nSec-WebSocket-Version",
                ),
                400,
            ),
            (
                "the same key twice",
                upgrade("HTTP/1.1", Some(good), "13").replace(
                    "Sec-WebSocket-Version",
                    &format!("Sec-WebSocket-Key: {good}\r\nSec-WebSocket-Version"),
                ),
                400,
            ),
            (
                "two versions",
                upgrade("HTTP/1.1", Some(good), "13")
                    .replace("\r\n\r\n", "\r\nSec-WebSocket-Version: 13\r\n\r\n"),
                400,
            ),
            (
                "two hosts",
                upgrade("HTTP/1.1", Some(good), "13")
                    .replace("\r\n\r\n", "\r\nHost: elsewhere\r\n\r\n"),
                400,
            ),
            ("good", upgrade("HTTP/1.1", Some(good), "13"), 101),
        ];
        for (name, request, want) in cases {
            let mut tcp = tcp_from(addr, local(1));
            tcp.write_all(request.as_bytes()).await.unwrap();
            let mut head = [0u8; 12];
            tcp.read_exact(&mut head).await.unwrap();
            let text = String::from_utf8_lossy(&head).into_owned();
            assert_eq!(parse_response(&text).0, want, "{name}: {text}");
        }
    });
}

#[test]
fn heads_with_bare_line_feeds_or_garbage_are_answered_at_once() {
    let server = TestServer::start(&[("HANDSHAKE_TIMEOUT", "30"), ("FIRST_BYTE_TIMEOUT", "30")]);
    let addr = server.addr;
    // Bounded far below HANDSHAKE_TIMEOUT: an answer that waited for it fails the test.
    bounded(10, async {
        let lf = raw_from(addr, local(1), b"GET /health HTTP/1.1\nHost: x\n\n").await;
        assert_eq!(parse_response(&lf).0, 200, "{lf}");
        let tls = raw_from(
            addr,
            local(1),
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
        )
        .await;
        assert_eq!(parse_response(&tls).0, 400, "{tls}");
        let junk = raw_from(
            addr,
            local(1),
            b"GET /health HTTP/1.1\r\nBad Header\r\n\r\n",
        )
        .await;
        assert_eq!(parse_response(&junk).0, 400, "{junk}");
    });
}

#[test]
fn ready_answers_and_says_shutting_down_after_the_trigger() {
    let server = TestServer::start(&[("SHUTDOWN_GRACE", "5")]);
    let addr = server.addr;
    bounded(20, async {
        let (status, body) = http(addr, "GET", "/ready", &[]).await;
        assert_eq!((status, body.as_str()), (200, r#"{"ready":true}"#));
        // A running game keeps the server up during the grace period.
        let (mut player, _) = Player::hello(addr, None).await;
        player.create_lobby("Ann").await;
        player.add_ai(2).await;
        player.add_ai(3).await;
        player.start_game().await;
        server.shutdown();
        loop {
            let (status, body) = http(addr, "GET", "/ready", &[]).await;
            if status == 503 {
                assert_eq!(body, r#"{"ready":false,"reason":"shutting_down"}"#);
                break;
            }
            assert_eq!(status, 200, "{body}");
        }
        let (status, _) = http(addr, "GET", "/health", &[]).await;
        assert_eq!(status, 200, "alive while shutting down");
    });
}

#[test]
fn head_requests_get_headers_and_no_body() {
    let server = TestServer::start(&[]);
    let addr = server.addr;
    bounded(10, async {
        for path in ["/health", "/ready", "/metrics", "/"] {
            let request = format!("HEAD {path} HTTP/1.1\r\nHost: x\r\n\r\n");
            let response = raw_from(addr, local(1), request.as_bytes()).await;
            let (head, body) = response.split_once("\r\n\r\n").unwrap();
            assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
            assert_eq!(body, "", "{path}");
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|n| n.parse::<usize>().ok());
            assert!(length.is_some_and(|n| n > 0), "{path}: {head}");
        }
    });
}

/// The bytes the kernel holds unsent on the server's end of the connection whose
/// client end is `client` (`/proc/net/tcp`'s `tx_queue`).
fn server_send_queue(server: SocketAddr, client: SocketAddr) -> Option<u64> {
    let hex = |a: SocketAddr| match a.ip() {
        IpAddr::V4(v4) => format!("{:08X}:{:04X}", u32::from_le_bytes(v4.octets()), a.port()),
        IpAddr::V6(_) => String::new(),
    };
    let (local, remote) = (hex(server), hex(client));
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    table.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let queues = (f.get(1) == Some(&local.as_str()) && f.get(2) == Some(&remote.as_str()))
            .then(|| f.get(4))??;
        u64::from_str_radix(queues.split(':').next()?, 16).ok()
    })
}

/// A connection from `from` whose receive buffer is fixed small, so that what it does
/// not read piles up on the server's side at once (the kernel would otherwise grow it).
fn tcp_with_small_receive_buffer(addr: SocketAddr, from: IpAddr) -> Async<TcpStream> {
    use rustix::net::{AddressFamily, SocketType, bind, connect, socket, sockopt};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    sockopt::set_socket_recv_buffer_size(&fd, 4096).unwrap();
    bind(&fd, &SocketAddr::new(from, 0)).unwrap();
    connect(&fd, &addr).unwrap();
    Async::new(TcpStream::from(fd)).unwrap()
}

#[test]
fn a_client_that_never_reads_is_cut_within_write_timeout_with_bounded_kernel_memory() {
    let server = TestServer::start(&[
        ("WRITE_TIMEOUT", "1"),
        ("SOCKET_SEND_BUFFER_BYTES", "65536"),
        ("MESSAGE_RATE", "1000000"),
        ("MESSAGE_BURST", "1000000"),
        ("MAX_RATE_VIOLATIONS", "1000000"),
        ("OUTBOUND_QUEUE_BYTES", "268435456"),
        ("OUTBOUND_QUEUE_MESSAGES", "10000000"),
    ]);
    let addr = server.addr;
    bounded(60, async {
        let mut tcp = raw_player(addr, local(5)).await;
        let me = tcp.get_ref().local_addr().unwrap();
        tcp.write_all(&client_frame(r#"{"type":"create_lobby","name":"Slow"}"#))
            .await
            .unwrap();
        // Every toggle is answered with a `state` of the lobby; none is read.
        let toggles: Vec<u8> = (0..200)
            .flat_map(|i| {
                client_frame(&format!(
                    r#"{{"type":"set_options","hidden_bids":{}}}"#,
                    i % 2 == 0
                ))
            })
            .collect();
        let started = Instant::now();
        let mut queued_max = 0;
        let mut full_since: Option<Instant> = None;
        while tcp.write_all(&toggles).await.is_ok() {
            let queued = server_send_queue(addr, me).unwrap_or(0);
            queued_max = queued_max.max(queued);
            // The send buffer is full once it stops growing at its bound.
            if queued >= 64 * 1024 {
                full_since.get_or_insert_with(Instant::now);
            }
            if let Some(since) = full_since {
                assert!(
                    since.elapsed() < Duration::from_secs(20),
                    "not cut 20 s after its buffer filled"
                );
            }
        }
        let cut_after = full_since.map(|t| t.elapsed());
        println!(
            "at most {queued_max} bytes queued in the kernel, cut {cut_after:?} after, {:?} in all",
            started.elapsed()
        );
        assert!(
            full_since.is_some(),
            "the send buffer never filled (max {queued_max} bytes)"
        );
        // Linux doubles SO_SNDBUF for its bookkeeping, and may queue one more segment
        // (64 KiB) past it.
        assert!(
            queued_max <= 3 * 65536,
            "{queued_max} bytes queued in the kernel"
        );
        assert_eq!(metric(addr, "wizard_slow_readers_total").await, 1.0);
    });
}

/// A raw websocket from `from`, upgraded and past its `hello` (nothing of the answer
/// read), with the receive buffer fixed small.
async fn raw_player(addr: SocketAddr, from: IpAddr) -> Async<TcpStream> {
    let mut tcp = tcp_with_small_receive_buffer(addr, from);
    raw_hello(&mut tcp).await;
    tcp
}

/// Reads one server frame (unmasked, unfragmented): its opcode and payload.
async fn server_frame(tcp: &mut Async<TcpStream>) -> (u8, Vec<u8>) {
    let mut head = [0u8; 2];
    tcp.read_exact(&mut head).await.unwrap();
    assert_eq!(head[0] & 0x80, 0x80, "a fragment or a cut frame: {head:?}");
    assert_eq!(head[1] & 0x80, 0, "a masked server frame");
    let len = match head[1] & 0x7f {
        126 => {
            let mut b = [0u8; 2];
            tcp.read_exact(&mut b).await.unwrap();
            u64::from(u16::from_be_bytes(b))
        }
        127 => {
            let mut b = [0u8; 8];
            tcp.read_exact(&mut b).await.unwrap();
            u64::from_be_bytes(b)
        }
        n => u64::from(n),
    };
    let mut payload = vec![0u8; usize::try_from(len).unwrap()];
    tcp.read_exact(&mut payload).await.unwrap();
    (head[0] & 0x0f, payload)
}

#[test]
fn a_slow_reader_gets_every_frame_whole_after_partial_writes() {
    // The socket's buffers are small and the reader reads nothing until it asked for
    // everything, so the core task's direct writes stop part-way through a frame and
    // the connection's writer has to finish them. The queue's bounds are
    // high: this reader is slow, not too slow.
    let server = TestServer::start(&[
        ("SOCKET_SEND_BUFFER_BYTES", "4096"),
        ("WRITE_TIMEOUT", "60"),
        ("MESSAGE_RATE", "1000000"),
        ("MESSAGE_BURST", "1000000"),
        ("MAX_RATE_VIOLATIONS", "1000000"),
        ("OUTBOUND_QUEUE_BYTES", "268435456"),
        ("OUTBOUND_QUEUE_MESSAGES", "10000000"),
    ]);
    let addr = server.addr;
    bounded(60, async {
        let mut tcp = raw_player(addr, local(6)).await;
        // Each is answered with an `error` (not in a lobby), none of them replaceable:
        // about 200 KB in all, far more than the two buffers hold. The reader reads
        // half as many frames as it asks for each round, so room in the socket comes
        // and goes while the writer has bytes to finish.
        const ASKED: usize = 3000;
        const ROUND: usize = 60;
        let starts = client_frame(r#"{"type":"start_game"}"#).repeat(ROUND);
        let mut errors = 0;
        for round in 1..=ASKED / ROUND {
            tcp.write_all(&starts).await.unwrap();
            let read_until = if round == ASKED / ROUND {
                ASKED
            } else {
                round * ROUND / 2
            };
            while errors < read_until {
                let (opcode, payload) = server_frame(&mut tcp).await;
                assert_eq!(opcode, 1, "not a text frame");
                let text = String::from_utf8(payload).expect("a text frame cut or spliced");
                match wizard_core::vocabulary::wire::decode_server(&text) {
                    Ok(wizard_core::vocabulary::wire::ServerMessage::Error { .. }) => errors += 1,
                    Ok(_) => {}
                    Err(e) => panic!("{e:?}: {text}"),
                }
            }
        }
        // The writer took over at least once: the resumed writes were exercised.
        assert!(metric(addr, "wizard_write_handoffs_total").await >= 1.0);
        assert_eq!(metric(addr, "wizard_slow_readers_total").await, 0.0);
    });
}

#[test]
fn a_reader_behind_by_its_queue_bound_is_cut_before_write_timeout() {
    let server = TestServer::start(&[
        ("SOCKET_SEND_BUFFER_BYTES", "4096"),
        ("WRITE_TIMEOUT", "600"),
        ("MESSAGE_RATE", "1000000"),
        ("MESSAGE_BURST", "1000000"),
        ("MAX_RATE_VIOLATIONS", "1000000"),
        ("OUTBOUND_QUEUE_MESSAGES", "16"),
    ]);
    let addr = server.addr;
    bounded(60, async {
        let mut tcp = raw_player(addr, local(7)).await;
        // Never read: once the socket is full, each answer waits in the queue, and the
        // 17th overflows it. Only the queue's bound can cut it here (WRITE_TIMEOUT is
        // ten minutes); the cut shows as a failed write.
        let starts = client_frame(r#"{"type":"start_game"}"#).repeat(200);
        while tcp.write_all(&starts).await.is_ok() {}
        assert_eq!(metric(addr, "wizard_slow_readers_total").await, 1.0);
        let (_, health) = http(addr, "GET", "/health", &[]).await;
        assert!(health.contains(r#""connections":0"#), "{health}");
    });
}
