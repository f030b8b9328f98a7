//! Test helpers: a server on a free port, a raw HTTP client, a websocket client, and a
//! time bound for every test.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use async_io::{Async, Timer};
use async_tungstenite::WebSocketStream;
use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::client::IntoClientRequest;
use async_tungstenite::tungstenite::http::HeaderValue;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use futures_lite::{FutureExt, StreamExt};
use wizard_core::config::Config;
use wizard_core::rng::Seed;
use wizard_server::ShutdownHandle;

/// A server running on its own thread; shut down when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    handle: ShutdownHandle,
    done: async_channel::Receiver<()>,
}

impl TestServer {
    /// Starts a server with `pairs` on top of test defaults (no grace period).
    pub fn start(pairs: &[(&str, &str)]) -> TestServer {
        let mut all = vec![("SHUTDOWN_GRACE", "0"), ("BIND", "127.0.0.1:0")];
        all.extend_from_slice(pairs);
        let config = Config::from_pairs(all).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (handle, signal) = ShutdownHandle::new();
        let (finished, done) = async_channel::bounded(1);
        std::thread::spawn(move || {
            let result = wizard_server::run_on(config, listener, Seed::from_u64(7), signal);
            let _ = finished.try_send(());
            result
        });
        TestServer { addr, handle, done }
    }

    /// Starts the graceful shutdown, like SIGTERM.
    pub fn shutdown(&self) {
        self.handle.trigger();
    }

    /// Whether `run_on` returned within `secs` seconds.
    pub fn join(&self, secs: u64) -> bool {
        let wait = async { self.done.recv().await.is_ok() };
        smol::block_on(wait.or(async {
            Timer::after(Duration::from_secs(secs)).await;
            false
        }))
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.handle.trigger();
    }
}

/// Runs `f` to completion or fails the test after `secs` seconds.
pub fn bounded<T>(secs: u64, f: impl Future<Output = T>) -> T {
    smol::block_on(f.or(async {
        Timer::after(Duration::from_secs(secs)).await;
        panic!("test timed out after {secs} s");
    }))
}

/// Sends a raw HTTP request and returns the status and the body.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut tcp = Async::<TcpStream>::connect(addr).await.unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).await.unwrap();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

pub type Client = WebSocketStream<Async<TcpStream>>;

/// Opens a websocket; `Err(status)` when the server answered with a plain HTTP status.
pub async fn ws(
    addr: SocketAddr,
    path: &str,
    headers: &[(&'static str, &str)],
) -> Result<Client, u16> {
    let mut request = format!("ws://{addr}{path}").into_client_request().unwrap();
    for (name, value) in headers {
        request
            .headers_mut()
            .append(*name, HeaderValue::from_str(value).unwrap());
    }
    let tcp = Async::<TcpStream>::connect(addr).await.unwrap();
    match async_tungstenite::client_async(request, tcp).await {
        Ok((ws, _)) => Ok(ws),
        Err(async_tungstenite::tungstenite::Error::Http(response)) => {
            Err(response.status().as_u16())
        }
        Err(e) => panic!("handshake failed: {e}"),
    }
}

/// Reads until the server's close frame and returns its code (0 for a close without
/// one, or the end of the stream).
pub async fn close_code(ws: &mut Client) -> u16 {
    while let Some(message) = ws.next().await {
        match message {
            Ok(Message::Close(frame)) => return frame.map_or(0, |f| u16::from(f.code)),
            Ok(_) => {}
            Err(_) => return 0,
        }
    }
    0
}

/// The next text frame.
pub async fn next_text(ws: &mut Client) -> String {
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(text))) => return text.as_str().to_owned(),
            Some(Ok(_)) => {}
            other => panic!("expected a text frame, got {other:?}"),
        }
    }
}
