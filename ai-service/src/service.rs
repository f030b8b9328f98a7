//! The AI service: a websocket client of the server's `/internal/ai` that answers
//! `decide` requests on a bounded pool of worker threads, through the admission machine.
//!
//! One connection at a time: the client connects with `Authorization: Bearer
//! AI_SHARED_SECRET`, reconnects with jittered exponential backoff when the connection
//! fails or is refused, and gives each connection its own admission machine and worker
//! pool (the server fails every request of a lost connection anyway, so nothing carries
//! over). Replies go out in whatever order they are computed.
//!
//! The transport ends where a decoded [`AiRequest`] meets [`admit`] and a reply leaves
//! the pool's queue: the websocket here and the server's in-process link ([`local`])
//! share that seam, so admission, deadlines and degradation are written once.

pub mod local;
mod pool;

use std::net::ToSocketAddrs;
use std::time::{Duration, Instant};

use async_io::{Async, Timer};
use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::client::IntoClientRequest;
use async_tungstenite::tungstenite::http::HeaderValue;
use futures_lite::{FutureExt, StreamExt};
use rand::{Rng, RngExt};
use rand_chacha::ChaCha12Rng;
use tracing::{info, warn};
use wizard_core::vocabulary::config::AiServiceConfig;
use wizard_core::vocabulary::wire::{self, AiErrorCode, AiReply, AiRequest};

use crate::admission::{AdmissionConfig, Submit};
use crate::agent::AgentSpec;
pub use pool::Pool;

/// First pause before reconnecting; doubles up to [`RECONNECT_DELAY_MAX`].
pub const RECONNECT_DELAY_MIN: Duration = Duration::from_millis(250);
/// Longest pause between connection attempts.
pub const RECONNECT_DELAY_MAX: Duration = Duration::from_secs(10);
/// Replies waiting to be written on one connection (each request gets exactly one).
pub const REPLIES_QUEUED_MAX: usize = 1024;

/// A reply and when it was made: the in-process link's reader may take it later
/// (`wizard_core::shell::reply_wait`), and its round trip ends here.
#[derive(Clone, Debug)]
pub struct Answered {
    pub reply: AiReply,
    pub at: Instant,
}

/// How the service runs besides its configuration.
#[derive(Clone, Debug)]
pub struct ServiceOptions {
    /// Niceness added to each worker thread (embedded mode runs the workers below the
    /// server's event loop).
    pub worker_nice: i32,
    /// Seed of the agents' randomness.
    pub seed: u64,
}

/// Why a connection could not be made or ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The server refused the handshake with this HTTP status.
    Refused(u16),
    /// The connection could not be made or broke.
    Failed(String),
    /// The server closed it.
    Closed,
}

/// The log line for a refused connection: a 403 names the likely cause.
pub fn refusal_message(status: u16) -> String {
    if status == 403 {
        "The server refused the AI connection (HTTP 403): check AI_SHARED_SECRET, and that no proxy is in between".to_owned()
    } else {
        format!("The server refused the AI connection (HTTP {status})")
    }
}

/// The pause before reconnect attempt `attempt` (0-based): exponential, capped, with
/// jitter between half and the full delay so that many clients do not retry in step.
pub fn reconnect_delay(attempt: u32, rng: &mut impl Rng) -> Duration {
    let doubled = RECONNECT_DELAY_MIN.saturating_mul(1u32 << attempt.min(16));
    let capped = doubled.min(RECONNECT_DELAY_MAX);
    capped.mul_f64(rng.random_range(0.5..=1.0))
}

/// Runs the service until `shutdown` resolves: connects, serves, reconnects.
pub async fn run(
    config: AiServiceConfig,
    options: ServiceOptions,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let serve = async {
        let mut rng: ChaCha12Rng = rand::SeedableRng::seed_from_u64(options.seed);
        let mut attempt = 0u32;
        loop {
            let started = Instant::now();
            let ended = match connect(&config).await {
                Ok(ws) => {
                    info!(url = %config.server_url, workers = config.workers, "Connected to the server");
                    serve_connection(ws, &config, &options).await
                }
                Err(e) => e,
            };
            match ended {
                Ended::Refused(status) => {
                    warn!(url = %config.server_url, status, "{}", refusal_message(status));
                }
                Ended::Failed(e) => {
                    warn!(url = %config.server_url, error = %e, "AI connection failed")
                }
                Ended::Closed => info!("The server closed the AI connection"),
            }
            // A connection that lived a while resets the backoff.
            if started.elapsed() > RECONNECT_DELAY_MAX {
                attempt = 0;
            }
            let delay = reconnect_delay(attempt, &mut rng);
            attempt = attempt.saturating_add(1);
            Timer::after(delay).await;
        }
    };
    serve.or(shutdown).await;
}

/// `ws://host:port/path` split into the address to dial and the URL to request.
fn target(url: &str) -> Result<std::net::SocketAddr, String> {
    let rest = url
        .strip_prefix("ws://")
        .ok_or_else(|| format!("{url:?} is not a ws:// URL (TLS is the proxy's job)"))?;
    let authority = rest.split('/').next().unwrap_or(rest);
    let with_port = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {authority}: {e}"))?
        .next()
        .ok_or_else(|| format!("{authority} has no address"))
}

/// The websocket to the server's `/internal/ai`.
pub type Connection = async_tungstenite::WebSocketStream<Async<std::net::TcpStream>>;

/// Connects to `AI_SERVER_URL` with the bearer secret.
pub async fn connect(config: &AiServiceConfig) -> Result<Connection, Ended> {
    let url = config.server_url.clone();
    let addr = smol::unblock(move || target(&url))
        .await
        .map_err(Ended::Failed)?;
    let mut request = config
        .server_url
        .as_str()
        .into_client_request()
        .map_err(|e| Ended::Failed(e.to_string()))?;
    if !config.shared_secret.is_empty() {
        let bearer = format!("Bearer {}", config.shared_secret);
        let value = HeaderValue::from_str(&bearer)
            .map_err(|e| Ended::Failed(format!("AI_SHARED_SECRET is not a valid header: {e}")))?;
        request.headers_mut().insert("authorization", value);
    }
    let tcp = Async::<std::net::TcpStream>::connect(addr)
        .await
        .map_err(|e| Ended::Failed(e.to_string()))?;
    let _ = tcp.get_ref().set_nodelay(true);
    match async_tungstenite::client_async(request, tcp).await {
        Ok((ws, _)) => Ok(ws),
        Err(async_tungstenite::tungstenite::Error::Http(response)) => {
            Err(Ended::Refused(response.status().as_u16()))
        }
        Err(e) => Err(Ended::Failed(e.to_string())),
    }
}

async fn serve_connection<S>(
    ws: async_tungstenite::WebSocketStream<S>,
    config: &AiServiceConfig,
    options: &ServiceOptions,
) -> Ended
where
    S: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin + Send + 'static,
{
    let (replies_tx, replies_rx) = async_channel::bounded::<Answered>(REPLIES_QUEUED_MAX);
    let pool = start_pool(config, options, replies_tx.clone());
    let mut ws = ws;
    let ended = loop {
        let event = async { Event::Frame(ws.next().await) }
            .or(async { Event::Reply(replies_rx.recv().await.ok()) })
            .await;
        let text = match event {
            Event::Reply(Some(Answered { reply, .. })) => {
                let text = wire::encode_ai_reply(&reply);
                if let Err(e) = ws.send(Message::text(text)).await {
                    break Ended::Failed(e.to_string());
                }
                continue;
            }
            Event::Reply(None) => break Ended::Closed,
            Event::Frame(None) | Event::Frame(Some(Ok(Message::Close(_)))) => break Ended::Closed,
            Event::Frame(Some(Err(e))) => break Ended::Failed(e.to_string()),
            Event::Frame(Some(Ok(Message::Text(text)))) => text,
            Event::Frame(Some(Ok(_))) => continue,
        };
        let Ok(request) = wire::decode_ai_request(text.as_str()) else {
            warn!("Ignoring a message from the server that is not a decide request");
            continue;
        };
        let Some(reply) = admit(&pool, request) else {
            continue;
        };
        // The reply goes through the same queue as the workers' so writes stay in one
        // place; the queue holds at most one reply per request in progress.
        let at = Instant::now();
        if replies_tx.try_send(Answered { reply, at }).is_err() {
            break Ended::Failed("reply queue full".into());
        }
    };
    pool.stop();
    ended
}

enum Event {
    Frame(Option<Result<Message, async_tungstenite::tungstenite::Error>>),
    Reply(Option<Answered>),
}

/// The pool of one connection (or of the in-process link): `AI_WORKERS` threads
/// deciding with `AI_AGENT`, their replies queued on `replies`.
fn start_pool(
    config: &AiServiceConfig,
    options: &ServiceOptions,
    replies: async_channel::Sender<Answered>,
) -> Pool {
    Pool::start(
        AdmissionConfig::from_service(config),
        AgentSpec::from(config.agent).build(),
        replies,
        options.worker_nice,
        options.seed,
    )
}

/// Hands a decoded request to the admission machine: `None` when it was queued (a
/// worker will reply), or the reply to send at once (`overloaded`, or `internal` for a
/// duplicate id). Every transport admits through here.
pub fn admit(pool: &Pool, request: AiRequest) -> Option<AiReply> {
    let AiRequest::Decide {
        request_id,
        observation,
        timeout,
        level,
    } = request;
    match pool.submit(request_id, observation, level, timeout) {
        Submit::Queued => None,
        Submit::Overloaded => {
            let in_progress = pool.in_progress();
            warn!(
                in_progress,
                "Overloaded: {in_progress} requests in progress"
            );
            Some(error(
                request_id,
                AiErrorCode::Overloaded,
                "too many requests in progress",
            ))
        }
        Submit::Duplicate => Some(error(
            request_id,
            AiErrorCode::Internal,
            "duplicate request id",
        )),
    }
}

fn error(request_id: u64, code: AiErrorCode, message: &str) -> AiReply {
    AiReply::Error {
        request_id,
        code,
        message: message.to_owned(),
    }
}

/// Starts the service on its own thread with its own executor (the server's embedded
/// mode); it stops when the returned sender is dropped or sent to.
pub fn spawn(
    config: AiServiceConfig,
    options: ServiceOptions,
) -> std::io::Result<(async_channel::Sender<()>, std::thread::JoinHandle<()>)> {
    let (stop_tx, stop_rx) = async_channel::bounded::<()>(1);
    let handle = std::thread::Builder::new()
        .name("wizard-ai".into())
        .spawn(move || {
            let stop = async move {
                let _ = stop_rx.recv().await;
            };
            smol::block_on(run(config, options, stop));
        })?;
    Ok((stop_tx, handle))
}
