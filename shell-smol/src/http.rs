//! One accepted TCP connection up to its websocket upgrade: read the request head under
//! a size and time limit ([`crate::head`]), route it with the core's
//! [`wizard_core::shell::upgrade`] policy, answer the plain HTTP routes and hand upgrades to
//! [`crate::conn`].
//!
//! Every response closes the connection (no keep-alive): the plain routes are health
//! checks, scrapes and one page load, and a closed connection cannot hold a slot.
//! `/health`, `/ready` and `/metrics` answer from the core's published figures
//! ([`crate::snapshot`]), never through the core task's queue; `HEAD` gets the same
//! status and headers without the body. The web client's files are served by
//! [`crate::assets`] (ETag, `304`, gzip); every other answer is `no-store`.

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_channel::Sender;
use async_io::{Async, Timer};
use async_tungstenite::tungstenite::handshake::derive_accept_key;
use futures_lite::FutureExt;
use futures_lite::io::AsyncWriteExt;
use tracing::debug;
use wizard_core::shell::outqueue::OutQueue;
use wizard_core::shell::readiness::{NotReady, encode_ready, ready_status};
use wizard_core::shell::upgrade::{Reject, Route, UpgradeRequest, check_upgrade, client_ip, route};
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::limiter::{IpKey, KeyedRateLimiter};

use crate::assets::{self, Conditions};
use crate::conn::{self, ConnParams};
use crate::core_task::{Clock, CoreMsg};
use crate::head::{HEADERS_MAX, Head, HeadError, read_head};
use crate::limits::{Admission, Gate, TcpSlot};
use crate::metrics::{self, ShellStats};
use crate::outbox::Outbox;
use crate::priority::Priorities;
use crate::snapshot::Published;
use crate::store::history::{Query, ReadError, Reader};

pub use crate::head::HEAD_BYTES_MAX;

/// Seconds a client refused by the door is told to wait (`Retry-After`): a second
/// refills `SOCKET_RATE`, and a full server's waiting sockets turn over within it.
const BUSY_RETRY_AFTER_S: u32 = 1;

/// The whole answer to a socket the door refused at accept or cut to make room: short
/// enough for one non-blocking send into an empty socket buffer.
pub const BUSY_RESPONSE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
    Content-Type: text/plain\r\nContent-Length: 5\r\nCache-Control: no-store\r\n\
    Connection: close\r\nRetry-After: 1\r\n\r\nbusy\n";

/// Sends [`BUSY_RESPONSE`] on `tcp` without waiting: one non-blocking `send`, whatever
/// fits (all of it, into a socket nobody wrote to); the caller closes the socket.
pub fn busy_now(tcp: &TcpStream) {
    use rustix::net::{SendFlags, send};
    let _ = send(
        tcp,
        BUSY_RESPONSE,
        SendFlags::DONTWAIT | SendFlags::NOSIGNAL,
    );
}

/// What every connection task shares.
#[derive(Debug)]
pub struct Ctx {
    pub config: Arc<Config>,
    pub inbox: Sender<CoreMsg>,
    pub stats: Arc<ShellStats>,
    pub next_conn: AtomicU64,
    /// The core's figures, published after every batch.
    pub published: Arc<Published>,
    /// The door, for `/metrics`' open socket count.
    pub gate: Arc<Gate>,
    /// Where an upgraded websocket's task goes ([`Priorities::games`]).
    pub executors: Arc<Priorities>,
    /// The server's clock: the keepalive's grid is on it, so that every connection's
    /// looks share wake-ups.
    pub clock: Clock,
    /// Profile lookups in the store every shard shares (with the PostgreSQL store).
    pub directory: Option<Arc<crate::store::Directory>>,
    /// The store's history reader (`None` without a store that keeps history).
    pub history: Option<Arc<Reader>>,
    /// `GAMES_RATE` per client address (at most `IP_TABLE_MAX` addresses).
    pub games_rate: Mutex<KeyedRateLimiter<IpKey>>,
}

impl Ctx {
    /// Takes one `/games/<id>` request from `ip`'s budget.
    fn games_rate_allows(&self, ip: std::net::IpAddr) -> bool {
        let now = self.clock.now();
        self.games_rate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .try_take(&IpKey::new(ip), now)
    }
}

/// A checked websocket upgrade, ready for its 101 response.
struct Upgrade {
    kind: wizard_core::vocabulary::io::ConnKind,
    ip: std::net::IpAddr,
    response: String,
    leftover: Vec<u8>,
}

/// Serves one accepted connection, at the games' priority: the request head, the
/// answer or the upgrade, and the websocket's life (the caller keeps a handle on `tcp`
/// to answer `busy` should the door cut it before its head). The request is parsed in
/// [`answer_request`], a future of its own on the heap whose state (head, header array,
/// answer) is gone before a websocket's long life begins, so an idle connection does
/// not carry it. `slot` is the socket's
/// place in the door. Returns an ended websocket's socket, for the caller to linger on
/// and close at the door's priority (see `priority`).
pub async fn serve(
    tcp: Arc<Async<TcpStream>>,
    peer: SocketAddr,
    admission: Admission,
    slot: &TcpSlot,
    ctx: Arc<Ctx>,
) -> Option<Arc<Async<TcpStream>>> {
    // Boxed: a future is as large as its largest state, and the request's (head reader,
    // header array, answer) would otherwise stay in every websocket's task for its life.
    let upgrade = Box::pin(answer_request(&tcp, peer, admission, slot, &ctx)).await?;
    websocket(tcp, upgrade, ctx).await
}

/// One response: its status, content type and body; `head_only` for `HEAD`.
struct Reply<'a> {
    tcp: &'a Async<TcpStream>,
    ctx: &'a Ctx,
    head_only: bool,
}

impl Reply<'_> {
    async fn send(&self, status: u16, content_type: &str, body: &[u8]) {
        let sent = if self.head_only { None } else { Some(body) };
        respond(self.tcp, self.ctx, status, content_type, body.len(), sent).await
    }

    /// The door's refusal after the head was read: 503, `Retry-After`, `busy: <why>`.
    async fn busy(&self, why: &str) {
        ShellStats::bump(&self.ctx.stats.http_unavailable);
        let body = format!("busy: {why}\n");
        self.send(503, "text/plain", body.as_bytes()).await
    }
}

/// Reads and answers a request; returns the upgrade when it is a websocket the policy
/// admits (its 101 is written later, after the core knows the connection).
async fn answer_request(
    tcp: &Async<TcpStream>,
    peer: SocketAddr,
    admission: Admission,
    slot: &TcpSlot,
    ctx: &Ctx,
) -> Option<Upgrade> {
    let head = read_request_head(tcp, peer, slot, ctx).await?;
    let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut request = httparse::Request::new(&mut headers);
    // `read_head` found a complete head, so this parse succeeds; refuse anyway if not.
    let Ok(httparse::Status::Complete(_)) = request.parse(head.bytes()) else {
        let body = b"bad request\n";
        respond(tcp, ctx, 400, "text/plain", body.len(), Some(body)).await;
        return None;
    };
    let (method, path) = (request.method.unwrap_or(""), request.path.unwrap_or(""));
    let reply = Reply {
        tcp,
        ctx,
        head_only: method == "HEAD",
    };
    let target = route(method, path);
    let pairs = request.headers.iter().map(|h| (h.name, h.value));
    let mut upgrade = UpgradeRequest::from_headers(path, peer.ip(), pairs);
    upgrade.http_1_0 = request.version == Some(0);
    let client = client_ip(&ctx.config, peer.ip(), &upgrade.x_forwarded_for);
    if let Some(why) = door_refusal(slot, admission, client, &target) {
        reply.busy(why).await;
        return None;
    }
    let asked = Asked {
        headers: request.headers,
        upgrade: &upgrade,
        head: &head,
        peer,
        client,
    };
    answer_route(&reply, target, &asked).await
}

/// Reads the request head under `FIRST_BYTE_TIMEOUT` and `HANDSHAKE_TIMEOUT`; a head
/// that does not come, or comes malformed, is counted and answered (when it has an
/// answer) here, and gives `None`.
async fn read_request_head(
    tcp: &Async<TcpStream>,
    peer: SocketAddr,
    slot: &TcpSlot,
    ctx: &Ctx,
) -> Option<Head> {
    let config = &ctx.config;
    let first_byte = Duration::from_micros(config.shell.first_byte_timeout_us);
    let whole = Duration::from_micros(config.shell.handshake_timeout_us);
    let e = match read_head(tcp, first_byte, whole, || slot.slow()).await {
        Ok(head) => return Some(head),
        Err(e) => e,
    };
    match e {
        HeadError::FirstByteTimeout => ShellStats::bump(&ctx.stats.first_byte_timeouts),
        HeadError::Timeout => ShellStats::bump(&ctx.stats.handshake_timeouts),
        _ => {}
    }
    debug!(%peer, error = ?e, "no request head");
    if let Some((status, body)) = e.response() {
        ShellStats::bump(&ctx.stats.bad_requests);
        respond(
            tcp,
            ctx,
            status,
            "text/plain",
            body.len(),
            Some(body.as_bytes()),
        )
        .await;
    }
    None
}

/// Why the door turns the request away now that its head is read, if it does: too
/// many sockets from `client` (the forwarded client behind a trusted proxy), or a
/// server that takes only probes from this socket.
fn door_refusal(
    slot: &TcpSlot,
    admission: Admission,
    client: std::net::IpAddr,
    target: &Route<'_>,
) -> Option<&'static str> {
    if slot.head_read(client).is_err() {
        return Some("too many connections from your address");
    }
    if admission.probes_only() && !target.is_probe() {
        return Some(match admission {
            Admission::Probe => "too many new connections from your address",
            Admission::Full | Admission::Reserve => "server full",
        });
    }
    None
}

/// What a routed request brings besides its route: its headers, its upgrade fields,
/// the head read (for the bytes past it) and who asks.
struct Asked<'a> {
    headers: &'a [httparse::Header<'a>],
    upgrade: &'a UpgradeRequest<'a>,
    head: &'a Head,
    peer: SocketAddr,
    /// The client's address (the forwarded one behind a trusted proxy).
    client: std::net::IpAddr,
}

/// Answers `target`, the route the door let through; returns the upgrade of a
/// websocket the policy admits.
async fn answer_route(reply: &Reply<'_>, target: Route<'_>, asked: &Asked<'_>) -> Option<Upgrade> {
    let ctx = reply.ctx;
    match target {
        Route::Index => send_asset(reply, "index.html", asked.headers).await,
        Route::Asset(name) => send_asset(reply, name, asked.headers).await,
        Route::Health => {
            let snapshot = ctx.published.load();
            reply
                .send(200, "application/json", snapshot.health_json.as_bytes())
                .await
        }
        Route::Ready => answer_ready(reply).await,
        Route::Metrics => {
            let body = ctx.published.render_metrics(&ctx.stats, ctx.gate.open());
            reply
                .send(200, metrics::CONTENT_TYPE, body.as_bytes())
                .await
        }
        Route::PlayerWs | Route::ShardWs(_) | Route::AiWs => {
            return answer_upgrade(reply, asked).await;
        }
        // Public and cheap: a lookup in what the core task published (each socket is
        // one request, so the door's SOCKET_RATE bounds them per address).
        Route::Leaderboard => {
            let body = ctx.published.leaderboard();
            reply.send(200, "application/json", body.as_bytes()).await
        }
        Route::Profile(id) => answer_profile(reply, id).await,
        Route::Game(id) => answer_game_limited(reply, asked.client, id).await,
        Route::MethodNotAllowed => reply.send(405, "text/plain", b"method not allowed\n").await,
        Route::NotFound => reply.send(404, "text/plain", b"not found\n").await,
    }
    None
}

/// `GET /ready`: ready, or why not; a store that cannot commit comes first (nothing
/// new is acknowledged).
async fn answer_ready(reply: &Reply<'_>) {
    let published = &reply.ctx.published;
    let ready = match published.store_unavailable() {
        Some(_) => Err(NotReady::Store),
        None => published.load().ready,
    };
    let body = encode_ready(ready);
    reply
        .send(ready_status(ready), "application/json", body.as_bytes())
        .await
}

/// A websocket route: the upgrade when the policy admits it, else its refusal
/// answered here.
async fn answer_upgrade(reply: &Reply<'_>, asked: &Asked<'_>) -> Option<Upgrade> {
    let ctx = reply.ctx;
    let upgrade = asked.upgrade;
    match check_upgrade(&ctx.config, upgrade) {
        Ok((kind, ip)) => {
            let key = upgrade.websocket_key.unwrap_or("");
            Some(accepted(kind, ip, key, asked.head))
        }
        Err(Reject { status, reason }) => {
            ShellStats::bump(&ctx.stats.upgrades_refused);
            let (peer, path) = (asked.peer, upgrade.path);
            debug!(%peer, path, status, reason, "upgrade refused");
            let body = format!("{reason}\n");
            reply.send(status, "text/plain", body.as_bytes()).await;
            None
        }
    }
}

/// `GET /profiles/<id>`: the published profile with its recent games, `404` for one
/// the core does not know.
async fn answer_profile(reply: &Reply<'_>, id: &str) {
    let ctx = reply.ctx;
    match ctx.published.profile(id) {
        Some(body) => {
            let body = with_recent_games(ctx, id, &body).await;
            reply.send(200, "application/json", body.as_bytes()).await
        }
        None => reply.send(404, "application/json", NOT_FOUND_JSON).await,
    }
}

/// `GET /games/<id>` within `client`'s `GAMES_RATE` (each answer may read the store
/// and replay a game), off the core task; `429` beyond it.
async fn answer_game_limited(reply: &Reply<'_>, client: std::net::IpAddr, id: &str) {
    let ctx = reply.ctx;
    if ctx.games_rate_allows(client) {
        answer_game(reply, ctx, id).await;
    } else {
        ShellStats::bump(&ctx.stats.http_rate_limited);
        let body = b"{\"error\":\"rate_limited\"}";
        reply.send(429, "application/json", body).await;
    }
}

/// The JSON body of a `404` on the JSON routes.
const NOT_FOUND_JSON: &[u8] = b"{\"error\":\"not_found\"}";

/// Whether `id` has the shape of a game id (hex, at most 64 characters): anything
/// else is not looked up.
fn is_game_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The profile page `body` with its `recent_games` from the store's history (left
/// empty when there is no history, or its reader is busy).
async fn with_recent_games(ctx: &Ctx, id: &str, body: &str) -> String {
    const EMPTY: &str = "\"recent_games\":[]";
    let Some(reader) = &ctx.history else {
        return body.to_owned();
    };
    match reader.ask(Query::Recent(id.to_owned())).await {
        Ok(Some(lines)) if body.contains(EMPTY) => {
            body.replacen(EMPTY, &format!("\"recent_games\":{lines}"), 1)
        }
        _ => body.to_owned(),
    }
}

/// `GET /games/<id>`: the finished game's body from the history reader, `404` for
/// a game that is not finished (running, unknown, or past `HISTORY_DAYS`).
async fn answer_game(reply: &Reply<'_>, ctx: &Ctx, id: &str) {
    let answer = match &ctx.history {
        Some(reader) if is_game_id(id) => reader.ask(Query::Game(id.to_owned())).await,
        _ => Ok(None),
    };
    match answer {
        Ok(Some(body)) => reply.send(200, "application/json", body.as_bytes()).await,
        Ok(None) => reply.send(404, "application/json", NOT_FOUND_JSON).await,
        Err(ReadError::Busy) => reply.busy("history reader busy").await,
        Err(ReadError::Failed) => {
            let body = b"{\"error\":\"unavailable\"}";
            reply.send(503, "application/json", body).await
        }
    }
}

/// The upgrade the policy admitted, with its 101 response.
fn accepted(
    kind: wizard_core::vocabulary::io::ConnKind,
    ip: std::net::IpAddr,
    key: &str,
    head: &Head,
) -> Upgrade {
    let accept = derive_accept_key(key.as_bytes());
    let response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    Upgrade {
        kind,
        ip,
        response,
        leftover: head.rest().to_vec(),
    }
}

/// Runs an upgraded websocket; returns its socket when it still needs its linger
/// (`None`: it ended before the 101 went out).
async fn websocket(
    tcp: Arc<Async<TcpStream>>,
    upgrade: Upgrade,
    ctx: Arc<Ctx>,
) -> Option<Arc<Async<TcpStream>>> {
    let Upgrade {
        kind,
        ip,
        response,
        leftover,
    } = upgrade;
    let conn = ConnId(ctx.next_conn.fetch_add(1, Ordering::Relaxed));
    let config = &ctx.config;
    let (outbox, woken) = Outbox::with_queue(
        OutQueue::new(
            config.shell.outbound_queue_messages_max,
            config.shell.outbound_queue_bytes_max,
        )
        .with_chat_messages_max(config.shell.outbound_queue_chat_messages_max),
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
        return None;
    }
    let sent = write_all(&tcp, &ctx, response.as_bytes()).await;
    // A local lives as long as the future: not the 101's bytes.
    drop(response);
    if !sent {
        let _ = ctx
            .inbox
            .send(CoreMsg::Input(wizard_core::vocabulary::io::Input::Closed {
                conn,
            }))
            .await;
        return None;
    }
    let mut params = ConnParams::new(config, ctx.clock, conn, kind);
    params.set_directory(ctx.directory.clone());
    // From now on the core task writes the frames it routes here itself when it can.
    outbox.attach(Arc::clone(&tcp));
    let stats = Arc::clone(&ctx.stats);
    let end = conn::run(
        Arc::clone(&tcp),
        leftover,
        outbox,
        woken,
        ctx.inbox.clone(),
        stats,
        params,
    )
    .await;
    debug!(conn = conn.0, ?end, "connection ended");
    Some(tcp)
}

/// A static file of the web client, with its `ETag`, caching and encoding
/// ([`assets::respond`]).
async fn send_asset(reply: &Reply<'_>, name: &str, headers: &[httparse::Header<'_>]) {
    match assets::respond(name, Conditions::from_headers(headers)) {
        Some(r) => {
            let body = if reply.head_only { None } else { r.body };
            write_response(reply.tcp, reply.ctx, r.head, body).await
        }
        None => reply.send(404, "text/plain", b"not found\n").await,
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        421 => "Misdirected Request",
        426 => "Upgrade Required",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// Writes a complete response and closes: `body` is `None` for `HEAD`, which still
/// says the `content_length` a `GET` would get.
async fn respond(
    tcp: &Async<TcpStream>,
    ctx: &Ctx,
    status: u16,
    content_type: &str,
    content_length: usize,
    body: Option<&[u8]>,
) {
    let head = head_of(status, content_type, content_length);
    write_response(tcp, ctx, head, body).await
}

/// A response's head, with its blank line: a 426 names the websocket version wanted, a
/// 503 says when to retry.
fn head_of(status: u16, content_type: &str, content_length: usize) -> String {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: \
         {content_length}\r\nCache-Control: no-store\r\nConnection: close\r\n",
        reason_phrase(status),
    );
    match status {
        426 => head.push_str("Sec-WebSocket-Version: 13\r\n"),
        503 => head.push_str(&format!("Retry-After: {BUSY_RETRY_AFTER_S}\r\n")),
        _ => {}
    }
    head.push_str("\r\n");
    head
}

/// Writes a response's `head` (ending in its blank line) and `body`, then closes.
async fn write_response(tcp: &Async<TcpStream>, ctx: &Ctx, head: String, body: Option<&[u8]>) {
    let mut response = head.into_bytes();
    response.extend_from_slice(body.unwrap_or(&[]));
    if write_all(tcp, ctx, &response).await {
        let _ = tcp.get_ref().shutdown(std::net::Shutdown::Write);
    }
}

/// Writes `bytes` within `WRITE_TIMEOUT`; false when that failed.
async fn write_all(tcp: &Async<TcpStream>, ctx: &Ctx, bytes: &[u8]) -> bool {
    let limit = Duration::from_micros(ctx.config.shell.write_timeout_us);
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
    use super::*;

    #[test]
    fn a_served_connection_carries_no_request_state_for_its_life() {
        // The task of every open socket is this future; an upgraded one keeps it for
        // its whole life. The request's state (head reader, header array, answer) is
        // boxed and gone once answered, so an idle websocket pays for its own state
        // only: with the request's state inline the future was 4.3 KiB.
        use std::time::Instant;
        use wizard_core::Server;
        use wizard_core::vocabulary::rng::Seed;
        let config = Config::from_pairs(Vec::<(&str, &str)>::new()).unwrap();
        let clock = Clock::new(Instant::now());
        let stats = Arc::new(ShellStats::default());
        let server = Server::new(config.clone(), Seed::from_u64(1), clock.now());
        let gate = Arc::new(Gate::new(&config, clock));
        let (inbox, _rx) = async_channel::bounded(1);
        let ctx = Arc::new(Ctx {
            config: Arc::new(config),
            inbox,
            stats: Arc::clone(&stats),
            next_conn: AtomicU64::new(2),
            published: Arc::new(Published::new(&server, &stats.core)),
            gate: Arc::clone(&gate),
            executors: Arc::new(Priorities::default()),
            clock,
            directory: None,
            history: None,
            games_rate: Mutex::new(KeyedRateLimiter::new(
                wizard_core::vocabulary::limiter::Rate::per_minute(60),
                60,
                16,
            )),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let peer = listener.local_addr().unwrap();
        let tcp = Arc::new(Async::new(TcpStream::connect(peer).unwrap()).unwrap());
        let admitted = gate.admit(peer.ip()).unwrap();
        let task = serve(tcp, peer, admitted.mode, &admitted.slot, ctx);
        let size = std::mem::size_of_val(&task);
        assert!(size <= 1600, "a connection's task grew to {size} bytes");
    }

    #[test]
    fn the_busy_response_is_a_503_head_with_retry_after_and_its_body() {
        let whole = head_of(503, "text/plain", 5) + "busy\n";
        assert_eq!(std::str::from_utf8(BUSY_RESPONSE), Ok(whole.as_str()));
        assert!(whole.contains(&format!("Retry-After: {BUSY_RETRY_AFTER_S}\r\n")));
    }
}
