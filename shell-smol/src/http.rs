//! One accepted TCP connection up to its websocket upgrade: read the request head under
//! a size and time limit, parse it with `httparse`, route it with the core's
//! [`wizard_core::upgrade`] policy, answer the plain HTTP routes and hand upgrades to
//! [`crate::conn`].
//!
//! Every response closes the connection (no keep-alive): the plain routes are health
//! checks, scrapes and one page load, and a closed connection cannot hold a slot.

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_channel::Sender;
use async_io::{Async, Timer};
use async_tungstenite::tungstenite::handshake::derive_accept_key;
use futures_lite::FutureExt;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use tracing::debug;
use wizard_core::config::Config;
use wizard_core::upgrade::{Reject, Route, UpgradeRequest, check_upgrade, route};

use crate::conn::{self, ConnParams};
use crate::core_task::{CoreMsg, Query};
use crate::limits::Admission;
use crate::metrics::{self, ShellStats};
use crate::outbox::Outbox;

/// Largest request head accepted (request line and headers).
pub const HEAD_BYTES_MAX: usize = 8 * 1024;
/// Headers parsed per request at most.
pub const HEADERS_MAX: usize = 32;
/// How long `/health` and `/metrics` wait for the core task's answer.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// What every connection task shares.
#[derive(Debug)]
pub struct Ctx {
    pub config: Arc<Config>,
    pub inbox: Sender<CoreMsg>,
    pub stats: Arc<ShellStats>,
    pub next_conn: AtomicU64,
}

/// A static file of the web client, embedded in the binary.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const INDEX: Asset = Asset {
    name: "index.html",
    content_type: "text/html; charset=utf-8",
    body: include_bytes!("../web/index.html"),
};

const JS: &str = "text/javascript; charset=utf-8";

const ASSETS: &[Asset] = &[
    INDEX,
    Asset {
        name: "style.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../web/style.css"),
    },
    Asset {
        name: "app.js",
        content_type: JS,
        body: include_bytes!("../web/app.js"),
    },
    Asset {
        name: "net.js",
        content_type: JS,
        body: include_bytes!("../web/net.js"),
    },
    Asset {
        name: "cards.js",
        content_type: JS,
        body: include_bytes!("../web/cards.js"),
    },
];

/// Why reading a request head stopped.
#[derive(Debug)]
enum HeadError {
    /// Nothing complete within `HANDSHAKE_TIMEOUT`.
    Timeout,
    /// More than [`HEAD_BYTES_MAX`].
    TooLarge,
    /// The peer went away or the socket failed.
    Gone,
}

/// Reads until the end of the request head; returns the bytes read (the head and
/// whatever followed it) and the head's length.
async fn read_head(tcp: &Async<TcpStream>, limit: Duration) -> Result<(Vec<u8>, usize), HeadError> {
    let read = async {
        let mut buf = vec![0u8; HEAD_BYTES_MAX];
        let mut filled = 0;
        let mut reader = tcp;
        loop {
            let Some(free) = buf.get_mut(filled..).filter(|b| !b.is_empty()) else {
                return Err(HeadError::TooLarge);
            };
            let n = reader.read(free).await.map_err(|_| HeadError::Gone)?;
            if n == 0 {
                return Err(HeadError::Gone);
            }
            let start = filled.saturating_sub(3);
            filled += n;
            let window = buf.get(start..filled).unwrap_or(&[]);
            if let Some(end) = window.windows(4).position(|w| w == b"\r\n\r\n") {
                buf.truncate(filled);
                return Ok((buf, start + end + 4));
            }
        }
    };
    let timeout = async {
        Timer::after(limit).await;
        Err(HeadError::Timeout)
    };
    read.or(timeout).await
}

/// A checked websocket upgrade, ready for its 101 response.
struct Upgrade {
    kind: wizard_core::io::ConnKind,
    ip: std::net::IpAddr,
    response: String,
    leftover: Vec<u8>,
}

/// Serves one accepted connection. The request is parsed in [`answer_request`], whose
/// buffers (head, header array) are gone before a websocket's long life begins, so an
/// idle connection does not carry them.
pub async fn serve(tcp: Async<TcpStream>, peer: SocketAddr, admission: Admission, ctx: Arc<Ctx>) {
    if let Some(upgrade) = answer_request(&tcp, peer, admission, &ctx).await {
        websocket(tcp, upgrade, ctx).await;
    }
}

/// Reads and answers a request; returns the upgrade when it is a websocket the policy
/// admits (its 101 is written later, after the core knows the connection).
async fn answer_request(
    tcp: &Async<TcpStream>,
    peer: SocketAddr,
    admission: Admission,
    ctx: &Ctx,
) -> Option<Upgrade> {
    let handshake = Duration::from_micros(ctx.config.handshake_timeout_us);
    let (buf, head_len) = match read_head(tcp, handshake).await {
        Ok(head) => head,
        Err(HeadError::Timeout) => {
            ShellStats::bump(&ctx.stats.handshake_timeouts);
            debug!(%peer, "handshake timeout");
            return None;
        }
        Err(HeadError::TooLarge) => {
            respond(tcp, ctx, 431, "text/plain", b"request head too large\n").await;
            return None;
        }
        Err(HeadError::Gone) => return None,
    };
    let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut request = httparse::Request::new(&mut headers);
    let (method, path) = match request.parse(buf.get(..head_len).unwrap_or(&[])) {
        Ok(httparse::Status::Complete(_)) => {
            (request.method.unwrap_or(""), request.path.unwrap_or(""))
        }
        Err(httparse::Error::TooManyHeaders) => {
            respond(tcp, ctx, 431, "text/plain", b"too many headers\n").await;
            return None;
        }
        _ => {
            respond(tcp, ctx, 400, "text/plain", b"bad request\n").await;
            return None;
        }
    };
    let target = route(method, path);
    if admission == Admission::Reserve && !matches!(target, Route::Health | Route::Metrics) {
        ShellStats::bump(&ctx.stats.http_unavailable);
        respond(
            tcp,
            ctx,
            503,
            "text/plain",
            b"server full, try again later\n",
        )
        .await;
        return None;
    }
    match target {
        Route::Index => send_asset(tcp, ctx, "index.html").await,
        Route::Asset(name) => send_asset(tcp, ctx, name).await,
        Route::Health => answer_query(tcp, ctx, Query::Health, "application/json").await,
        Route::Metrics => answer_query(tcp, ctx, Query::Metrics, metrics::CONTENT_TYPE).await,
        Route::PlayerWs | Route::AiWs => {
            let pairs = request.headers.iter().map(|h| (h.name, h.value));
            let upgrade = UpgradeRequest::from_headers(path, peer.ip(), pairs);
            match check_upgrade(&ctx.config, &upgrade) {
                Ok((kind, ip)) => {
                    let key = upgrade.websocket_key.unwrap_or("");
                    let accept = derive_accept_key(key.as_bytes());
                    let leftover = buf.get(head_len..).unwrap_or(&[]).to_vec();
                    let response = format!(
                        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
                         Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
                    );
                    return Some(Upgrade {
                        kind,
                        ip,
                        response,
                        leftover,
                    });
                }
                Err(Reject { status, reason }) => {
                    ShellStats::bump(&ctx.stats.upgrades_refused);
                    debug!(%peer, path, status, reason, "upgrade refused");
                    let body = format!("{reason}\n");
                    respond(tcp, ctx, status, "text/plain", body.as_bytes()).await;
                }
            }
        }
        Route::MethodNotAllowed => {
            respond(tcp, ctx, 405, "text/plain", b"method not allowed\n").await
        }
        Route::NotFound => respond(tcp, ctx, 404, "text/plain", b"not found\n").await,
    }
    None
}

async fn websocket(tcp: Async<TcpStream>, upgrade: Upgrade, ctx: Arc<Ctx>) {
    let Upgrade {
        kind,
        ip,
        response,
        leftover,
    } = upgrade;
    let conn = ctx.next_conn.fetch_add(1, Ordering::Relaxed);
    let config = &ctx.config;
    let (outbox, woken) = Outbox::new(
        config.outbound_queue_messages_max,
        config.outbound_queue_bytes_max,
    );
    let opened = CoreMsg::Opened {
        conn,
        kind,
        ip,
        outbox: Arc::clone(&outbox),
    };
    // The core learns of the connection before the client sees the 101, so admission
    // (connection limits) follows the order of completed handshakes.
    if ctx.inbox.send(opened).await.is_err() {
        return;
    }
    if !write_all(&tcp, &ctx, response.as_bytes()).await {
        let _ = ctx
            .inbox
            .send(CoreMsg::Input(wizard_core::io::Input::Closed { conn }))
            .await;
        return;
    }
    let params = ConnParams::new(config, conn, kind);
    let tcp = Arc::new(tcp);
    let stats = Arc::clone(&ctx.stats);
    let end = conn::run(
        tcp,
        leftover,
        outbox,
        woken,
        ctx.inbox.clone(),
        stats,
        params,
    )
    .await;
    debug!(conn, ?end, "connection ended");
}

async fn send_asset(tcp: &Async<TcpStream>, ctx: &Ctx, name: &str) {
    match ASSETS.iter().find(|a| a.name == name) {
        Some(asset) => respond(tcp, ctx, 200, asset.content_type, asset.body).await,
        None => respond(tcp, ctx, 404, "text/plain", b"not found\n").await,
    }
}

async fn answer_query(tcp: &Async<TcpStream>, ctx: &Ctx, query: Query, content_type: &str) {
    let (reply, answer) = async_channel::bounded(1);
    let ask = async {
        ctx.inbox.send(CoreMsg::Query(query, reply)).await.ok()?;
        answer.recv().await.ok()
    };
    let timeout = async {
        Timer::after(QUERY_TIMEOUT).await;
        None
    };
    match ask.or(timeout).await {
        Some(body) => respond(tcp, ctx, 200, content_type, body.as_bytes()).await,
        None => respond(tcp, ctx, 503, "text/plain", b"core not answering\n").await,
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        426 => "Upgrade Required",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// Writes a complete response and closes.
async fn respond(tcp: &Async<TcpStream>, ctx: &Ctx, status: u16, content_type: &str, body: &[u8]) {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n",
        reason_phrase(status),
        body.len()
    );
    if status == 426 {
        head.push_str("Sec-WebSocket-Version: 13\r\n");
    }
    head.push_str("\r\n");
    let mut response = head.into_bytes();
    response.extend_from_slice(body);
    if write_all(tcp, ctx, &response).await {
        let _ = tcp.get_ref().shutdown(std::net::Shutdown::Write);
    }
}

/// Writes `bytes` within `WRITE_TIMEOUT`; false when that failed.
async fn write_all(tcp: &Async<TcpStream>, ctx: &Ctx, bytes: &[u8]) -> bool {
    let limit = Duration::from_micros(ctx.config.write_timeout_us);
    let write = async {
        let mut writer = tcp;
        writer.write_all(bytes).await.is_ok() && writer.flush().await.is_ok()
    };
    let timeout = async {
        Timer::after(limit).await;
        false
    };
    write.or(timeout).await
}

#[cfg(test)]
mod tests {
    use super::ASSETS;

    /// A file added to `web/` but not to [`ASSETS`] would be a 404 in production.
    #[test]
    fn every_web_file_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            assert!(
                ASSETS.iter().any(|a| a.name == name),
                "web/{name} is not embedded in http.rs ASSETS"
            );
        }
        for asset in ASSETS {
            assert!(!asset.body.is_empty(), "{} is empty", asset.name);
        }
    }
}
