//! Memory per idle websocket: opens `conns` player websockets to a running server
//! (spread over 127.0.0.x addresses), says hello on each, lets them idle, and reports
//! the growth of the server's VmRSS (`/proc/<pid>/status`) per connection, both overall
//! and as the slope between the first and the second half. Used by
//! `scripts/idle_memory.sh`.
//!
//! ```text
//! idle_conns --addr 127.0.0.1:8000 --pid PID [--conns 2000] [--per-ip 100]
//! ```

#![allow(clippy::print_stderr, clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;

use async_io::{Async, Timer};
use async_tungstenite::WebSocketStream;
use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::client::IntoClientRequest;
use futures_lite::StreamExt;

type Ws = WebSocketStream<Async<TcpStream>>;

fn tcp_from(addr: SocketAddr, from: IpAddr) -> std::io::Result<Async<TcpStream>> {
    use rustix::net::{AddressFamily, SocketType, bind, connect, socket};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None)?;
    bind(&fd, &SocketAddr::new(from, 0))?;
    connect(&fd, &addr)?;
    Async::new(TcpStream::from(fd))
}

/// Connects, says hello and reads `welcome`, `server_status` and `state`.
async fn open(addr: SocketAddr, from: IpAddr) -> Ws {
    let request = format!("ws://{addr}/ws").into_client_request().unwrap();
    let (mut ws, _) = async_tungstenite::client_async(request, tcp_from(addr, from).unwrap())
        .await
        .expect("handshake");
    ws.send(Message::text(r#"{"type":"hello","token":null}"#))
        .await
        .unwrap();
    let mut texts = 0;
    while texts < 3 {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => {
                assert!(!t.as_str().contains(r#""type":"error""#), "{t}");
                texts += 1;
            }
            Some(Ok(_)) => {}
            other => panic!("connection lost: {other:?}"),
        }
    }
    ws
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let (mut addr, mut pid, mut conns, mut per_ip) = (None, None, 2000usize, 100usize);
    for pair in raw.chunks(2) {
        match (pair[0].as_str(), pair.get(1)) {
            ("--addr", Some(v)) => addr = Some(v.parse::<SocketAddr>().expect("--addr")),
            ("--pid", Some(v)) => pid = Some(v.parse::<u32>().expect("--pid")),
            ("--conns", Some(v)) => conns = v.parse().expect("--conns"),
            ("--per-ip", Some(v)) => per_ip = v.parse().expect("--per-ip"),
            (other, _) => panic!("unknown argument {other}"),
        }
    }
    let (addr, pid) = (addr.expect("--addr"), pid.expect("--pid"));
    smol::block_on(async {
        let settle = || Timer::after(Duration::from_secs(2));
        settle().await;
        let before = rss_kib(pid);
        let mut held = Vec::with_capacity(conns);
        let mut half = 0;
        for i in 0..conns {
            let ip = IpAddr::from([127, 0, 1, u8::try_from(1 + i / per_ip).unwrap()]);
            held.push(open(addr, ip).await);
            if i + 1 == conns / 2 {
                settle().await;
                half = rss_kib(pid);
            }
        }
        settle().await;
        let after = rss_kib(pid);
        let n = conns as f64;
        println!(
            "server VmRSS {before} KiB idle, {half} KiB with {} connections, {after} KiB with \
             {conns}: {:.2} KiB per idle connection overall, {:.2} KiB per connection \
             between {} and {conns}",
            conns / 2,
            (after - before) as f64 / n,
            (after - half) as f64 / (n - (conns / 2) as f64),
            conns / 2
        );
        drop(held);
    });
}
