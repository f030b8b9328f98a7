//! Websocket connections from chosen loopback source addresses.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};

use async_io::Async;
use async_tungstenite::WebSocketStream;
use async_tungstenite::tungstenite::client::IntoClientRequest;

pub type Ws = WebSocketStream<Async<TcpStream>>;

/// The source address of connection group `k` in range `range` (0: players, 1:
/// attackers, 2: the honest side's probes and newcomers): 127.a.b.c with c in 1..=254,
/// spread over 127.0.0.0/8 so per-IP limits see many clients. Only used when the server
/// is on loopback.
pub fn source_ip(range: u8, k: usize) -> IpAddr {
    let c = 1 + (k % 254) as u8;
    let x = k / 254;
    let b = (x % 256) as u8;
    // Players use 127.1.0.0 to 127.127.255.255, attackers 127.200.0.0 to
    // 127.249.255.255, probes and newcomers from 127.250.0.0.
    let a = match range {
        0 => 1 + (x / 256) as u8 % 127,
        1 => 200 + (x / 256) as u8 % 50,
        _ => 250 + (x / 256) as u8 % 5,
    };
    IpAddr::V4(Ipv4Addr::new(127, a, b, c))
}

/// Opens a websocket to `addr` from `from` (when `addr` is loopback; otherwise from any
/// address). `Err(Some(status))` when the server answered with a plain HTTP status.
pub async fn connect(addr: SocketAddr, path: &str, from: IpAddr) -> Result<Ws, Option<u16>> {
    let request = format!("ws://{addr}{path}")
        .into_client_request()
        .map_err(|_| None)?;
    let tcp = if addr.ip().is_loopback() {
        tcp_from(addr, from).await.map_err(|_| None)?
    } else {
        Async::<TcpStream>::connect(addr).await.map_err(|_| None)?
    };
    // As browsers do for websockets: a move is sent at once, not held back by Nagle's
    // algorithm until the server acknowledges what went before.
    let _ = tcp.get_ref().set_nodelay(true);
    match async_tungstenite::client_async(request, tcp).await {
        Ok((ws, _)) => Ok(ws),
        Err(async_tungstenite::tungstenite::Error::Http(response)) => {
            Err(Some(response.status().as_u16()))
        }
        Err(_) => Err(None),
    }
}

/// A non-blocking TCP connect from the local address `from`.
pub(super) async fn tcp_from(addr: SocketAddr, from: IpAddr) -> std::io::Result<Async<TcpStream>> {
    tcp_from_with(addr, from, None).await
}

/// [`tcp_from`] with the receive buffer fixed to `recv_bytes` before connecting (set
/// later, the window the kernel already offered would stay).
pub(super) async fn tcp_from_with(
    addr: SocketAddr,
    from: IpAddr,
    recv_bytes: Option<usize>,
) -> std::io::Result<Async<TcpStream>> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType, bind, connect, socket_with};
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let fd = socket_with(
        family,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    if let Some(bytes) = recv_bytes {
        rustix::net::sockopt::set_socket_recv_buffer_size(&fd, bytes)?;
    }
    if addr.is_ipv4() {
        bind(&fd, &SocketAddr::new(from, 0))?;
    }
    match connect(&fd, &addr) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::INPROGRESS => {}
        Err(e) => return Err(e.into()),
    }
    let stream = Async::new(TcpStream::from(fd))?;
    stream.writable().await?;
    if let Some(e) = stream.get_ref().take_error()? {
        return Err(e);
    }
    Ok(stream)
}

/// Raises the soft open-files limit to the hard one (10 000 connections need it).
pub fn raise_nofile_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let raised = rustix::process::Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    let _ = setrlimit(Resource::Nofile, raised);
}
