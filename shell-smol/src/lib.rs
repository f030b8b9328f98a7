//! wizard-server: the production shell that carries wizard-core's [`Server`] over smol,
//! HTTP and websockets.
//!
//! One task owns the core ([`core_task`]); each accepted TCP connection gets a task that
//! reads its request head ([`head`], [`http`]) and, after an upgrade, drives the
//! websocket ([`conn`]); a load probe ([`probe`]) reports lag, CPU and throttling; the
//! door ([`limits`], over the core's `overload::door`) bounds sockets in total and per
//! address before any HTTP work, evicting silent ones; [`snapshot`] holds the figures
//! `/health`, `/ready` and [`metrics`] answer from; [`log_limit`] keeps attackers from
//! filling the log. The shell carries out the core's outputs and reports facts; it decides
//! nothing about shedding, retrying or falling back.
//!
//! [`run_on`] is the entry point for the binary and the tests: it takes a bound
//! listener and a shutdown future, and returns once the core finished after shutdown;
//! [`run_with`] also starts the embedded AI service ([`embedded`]).

pub mod assets;
pub mod conn;
pub mod core_task;
pub mod deadline;
pub mod embedded;
pub mod head;
pub mod http;
pub mod limits;
pub mod log_limit;
pub mod metrics;
pub mod note_log;
pub mod outbox;
pub mod priority;
pub mod probe;
pub mod process;
pub mod snapshot;
pub mod store;

// The store's files under their earlier paths, for one release.
pub use store::journal;
#[cfg(feature = "postgres")]
pub use store::postgres as pg_store;

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use async_io::{Async, Timer};
use tracing::{error, info, warn};
use wizard_core::Server;
use wizard_core::shell::door::DoorRefusal;
use wizard_core::vocabulary::config::{AiServiceConfig, Config, StoreSpec};
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::limiter::{IpKey, KeyedRateLimiter, rate_from};
use wizard_core::vocabulary::rng::Seed;
use wizard_core::vocabulary::time::US_PER_SEC;

use crate::core_task::{Clock, CoreTask, INBOX_CAPACITY};
use crate::http::Ctx;
use crate::limits::Gate;
use crate::log_limit::{LineKind, LogLimiter};
use crate::metrics::ShellStats;
use crate::priority::Priorities;
use crate::snapshot::Published;

/// Why the server could not run.
#[derive(Debug)]
pub enum RunError {
    /// The listener could not be made non-blocking or registered.
    Listener(std::io::Error),
    /// An executor thread could not be started.
    Thread(std::io::Error),
    /// `STORE` cannot be opened or restored.
    Store(String),
    /// The store failed while serving (a commit failed, or the PostgreSQL connection
    /// and with it the shard's lock was lost): nothing more was acknowledged.
    StoreFailed(String),
    /// The embedded AI service could not start (no OS entropy for its seed).
    EmbeddedAi(std::io::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Listener(e) => write!(f, "listener: {e}"),
            RunError::Thread(e) => write!(f, "executor thread: {e}"),
            RunError::Store(e) => write!(f, "STORE: {e}"),
            RunError::StoreFailed(e) => write!(f, "STORE failed while serving: {e}"),
            RunError::EmbeddedAi(e) => write!(f, "embedded AI service: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

/// A shutdown trigger for [`run_on`] (tests; the binary uses signals). Dropping every
/// handle also shuts the server down.
#[derive(Clone, Debug)]
pub struct ShutdownHandle(async_channel::Sender<()>);

impl ShutdownHandle {
    /// A handle and the future [`run_on`] waits on.
    pub fn new() -> (ShutdownHandle, impl Future<Output = ()> + Send + 'static) {
        let (tx, rx) = async_channel::bounded(1);
        let signal = async move {
            let _ = rx.recv().await;
        };
        (ShutdownHandle(tx), signal)
    }

    /// Starts the graceful shutdown (like SIGTERM).
    pub fn trigger(&self) {
        let _ = self.0.try_send(());
    }
}

/// Pause after a failed `accept` (e.g. out of file descriptors) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Runs the server on `listener` until the core finished after `shutdown` resolved,
/// without an embedded AI service (whatever `EMBEDDED_AI` says). Blocks the calling
/// thread, which becomes one of the executor's threads.
pub fn run_on(
    config: Config,
    listener: TcpListener,
    seed: Seed,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    run_with(config, None, listener, seed, shutdown)
}

/// [`run_on`], with the AI service embedded in process when `embedded_ai` gives its
/// settings (the binary passes them when `EMBEDDED_AI=1`).
pub fn run_with(
    config: Config,
    embedded_ai: Option<AiServiceConfig>,
    listener: TcpListener,
    seed: Seed,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let opened = open_store(&config, seed)?;
    run_opened(opened, config, embedded_ai, listener, shutdown)
}

/// A server restored from its store (and the store, which this process now owns),
/// not listening yet.
#[derive(Debug)]
pub struct Opened {
    store: Option<store::Backend>,
    server: Server,
    clock: Clock,
}

/// [`run_with`] for a server [`open_store`] restored: the binary opens the store
/// before it listens, so that a standby waiting for its shard's lock answers nothing.
pub fn run_opened(
    opened: Opened,
    config: Config,
    embedded_ai: Option<AiServiceConfig>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let cgroup = probe::Cgroup::discover();
    let quota = cgroup.as_ref().and_then(probe::Cgroup::quota_cores);
    let threads = match config.shell.executor_threads {
        0 => probe::threads_for(quota),
        n => n,
    };
    info!(threads, quota_cores = quota, bind = %config.shell.bind, "Starting");
    let ex = Arc::new(Priorities::default());
    let (stop, stopped) = async_channel::bounded::<()>(1);
    let mut workers = Vec::new();
    for i in 1..threads {
        let (ex, stopped) = (Arc::clone(&ex), stopped.clone());
        let worker = std::thread::Builder::new()
            .name(format!("wizard-exec-{i}"))
            .spawn(move || smol::block_on(ex.run(stopped.recv())))
            .map_err(RunError::Thread)?;
        workers.push(worker);
    }
    let result = smol::block_on(ex.run(serve(
        Arc::clone(&ex),
        opened,
        config,
        embedded_ai,
        listener,
        shutdown,
        cgroup,
    )));
    drop(stop);
    for worker in workers {
        let _ = worker.join();
    }
    result
}

/// Serves until the core task finished after `shutdown`: listens, starts the probe, the
/// shared pool and the accept loop around the restored server, and runs the core task.
async fn serve(
    ex: Arc<Priorities>,
    opened: Opened,
    config: Config,
    embedded_ai: Option<AiServiceConfig>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    cgroup: Option<probe::Cgroup>,
) -> Result<(), RunError> {
    let listener = listen(listener, &config)?;
    let Opened {
        store,
        mut server,
        clock,
    } = opened;
    let config = Arc::new(config);
    let (inbox, inbox_rx) = async_channel::bounded(INBOX_CAPACITY);
    let shutdown_rx = shutdown_channel(&ex, shutdown);
    // The embedded service is connection 1; sockets are numbered after it.
    let ai = embedded_ai
        .map(|ai| embedded::start(&ai, ConnId(1)))
        .transpose()
        .map_err(RunError::EmbeddedAi)?;
    let stats = Arc::new(ShellStats::default());
    watch_store(&stats, store.as_ref(), &server);
    let gate = Arc::new(Gate::new(&config, clock));
    server.watch_profiles();
    let published = Arc::new(Published::new(&server, &stats.core));
    published.publish_profiles(&mut server);
    let interval = Duration::from_micros(config.load_sample_interval_us);
    ex.games
        .spawn(probe::run(inbox.clone(), interval, cgroup))
        .detach();
    // The static files' digests and gzip bodies, before the first page load.
    assets::prepare();
    let directory = start_directory(&config)?;
    let ctx = Arc::new(Ctx {
        history: history_reader(store.as_ref()),
        games_rate: std::sync::Mutex::new(games_rate(&config)),
        config,
        inbox,
        stats: Arc::clone(&stats),
        next_conn: AtomicU64::new(2),
        published: Arc::clone(&published),
        gate: Arc::clone(&gate),
        executors: Arc::clone(&ex),
        clock,
        directory,
    });
    #[cfg(feature = "postgres")]
    let pool = start_pool(&ctx, &mut server)?;
    let core = CoreTask {
        server,
        clock,
        inbox: inbox_rx,
        shutdown: shutdown_rx,
        stats,
        published,
        logs: LogLimiter::default(),
        store,
        ai,
        #[cfg(feature = "postgres")]
        pool,
    };
    // Its own task: raced against the core task in one future, every wake-up of the
    // core polled the listener too (an `accept4` that fails with EAGAIN each time).
    let accept = ex
        .door
        .spawn(accept_loop(Arc::clone(&ex), listener, gate, ctx, clock));
    let result = core.run().await;
    accept.cancel().await;
    info!("Stopped");
    result
}

/// `listener` registered with the reactor and listening, its queue `LISTEN_BACKLOG`
/// long (with a warning when `AI_SHARED_SECRET` is empty).
fn listen(listener: TcpListener, config: &Config) -> Result<Async<TcpListener>, RunError> {
    let listener = Async::new(listener).map_err(RunError::Listener)?;
    if config.ai_shared_secret.is_empty() {
        warn!(
            "AI_SHARED_SECRET is empty: /internal/ai accepts any local connection (development only)"
        );
    }
    // Listening only now: the binary opens its store (a standby waits there for its
    // shard's lock), then binds without listening, so until the process serves a proxy
    // finds connections refused and sends players to the process that does. Listening
    // on a listening socket only sets the queue's length (Linux): the default 128 would
    // drop an honest client's SYN under a connect flood that outruns the accept loop for
    // a moment (its retry comes 1 s later).
    let backlog = i32::try_from(config.shell.listen_backlog_max).unwrap_or(i32::MAX);
    rustix::net::listen(listener.get_ref(), backlog).map_err(|e| RunError::Listener(e.into()))?;
    info!(bind = %config.shell.bind, embedded_ai = config.shell.embedded_ai, "Listening");
    Ok(listener)
}

/// The channel the core task hears `shutdown` on: a task of its own waits for it.
fn shutdown_channel(
    ex: &Priorities,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> async_channel::Receiver<()> {
    let (shutdown_tx, shutdown_rx) = async_channel::bounded(1);
    ex.games
        .spawn(async move {
            shutdown.await;
            let _ = shutdown_tx.send(()).await;
        })
        .detach();
    shutdown_rx
}

/// Hands `/metrics` the SQLite store's counters, path and the games set aside at the
/// restore (the PostgreSQL store has no series of its own there).
fn watch_store(stats: &ShellStats, store: Option<&store::Backend>, server: &Server) {
    if let Some(store::Backend::Sqlite(sqlite)) = store {
        let _ = stats.store.set(store::metrics::StoreSource {
            counters: Arc::clone(sqlite.counters()),
            path: sqlite.path().to_path_buf(),
            games_set_aside: server.set_aside().len() as u64,
        });
    }
}

/// The reader of the store's finished games, for `/games/<id>` and the profiles'
/// recent games (`None` without a store).
fn history_reader(store: Option<&store::Backend>) -> Option<Arc<store::history::Reader>> {
    match store {
        Some(store::Backend::Sqlite(sqlite)) => {
            Some(Arc::new(store::history::Reader::sqlite(sqlite.path())))
        }
        #[cfg(feature = "postgres")]
        Some(store::Backend::Postgres(pg)) => pg.history_reader().map(Arc::new),
        None => None,
    }
}

/// `GAMES_RATE` per client address, over at most `IP_TABLE_MAX` addresses.
fn games_rate(config: &Config) -> KeyedRateLimiter<IpKey> {
    KeyedRateLimiter::new(
        rate_from(config.shell.games_rate_per_min, 60 * US_PER_SEC),
        (config.shell.games_rate_per_min.ceil().max(1.0)) as u64,
        config.ip_table_entries_max,
    )
}

/// The shards' shared quick-play pool, for a shard on the PostgreSQL store (the core
/// told to share its quick play); `None` otherwise.
#[cfg(feature = "postgres")]
fn start_pool(ctx: &Ctx, server: &mut Server) -> Result<Option<store::pool::SharedPool>, RunError> {
    match (&ctx.config.shell.store, ctx.config.shard) {
        (StoreSpec::Postgres(url), Some(shard)) => {
            server.share_quick_play();
            let pool = store::pool::SharedPool::start(url, shard, &ctx.config, ctx.inbox.clone())
                .map_err(RunError::Thread)?;
            info!(shard = %shard, "Quick play: the shards' shared pool in PostgreSQL");
            Ok(Some(pool))
        }
        _ => Ok(None),
    }
}

/// Opens `STORE` and restores the server from it, or starts an empty server for
/// `memory`. With PostgreSQL this waits until this process owns its shard (a
/// standby waits here).
pub fn open_store(config: &Config, seed: Seed) -> Result<Opened, RunError> {
    let failed = |e: store::StoreError| RunError::Store(e.to_string());
    let (store, records) = match &config.shell.store {
        StoreSpec::Memory => {
            let clock = Clock::new(Instant::now());
            let mut server = Server::new(config.clone(), seed, clock.now());
            set_wall_clock(&mut server, clock);
            return Ok(Opened {
                store: None,
                server,
                clock,
            });
        }
        StoreSpec::Sqlite(path) => {
            let options = store::SqliteOptions {
                init: config.shell.store_init,
                history: history_options(config),
                busy_timeout: Duration::from_micros(config.shell.store_busy_timeout_us),
                ..store::SqliteOptions::new(Duration::from_micros(
                    config.shell.store_sync_interval_us,
                ))
            };
            let (store, records) =
                store::Store::open_sqlite_with(std::path::Path::new(path), options)
                    .map_err(failed)?;
            (store::Backend::Sqlite(store), records)
        }
        StoreSpec::Postgres(url) => open_postgres(url, config.shard, history_options(config))?,
    };
    // The clock starts at the restore: timers and session lifetimes count from it.
    let clock = Clock::new(Instant::now());
    let started = Instant::now();
    let count = records.len();
    let mut server = Server::restore(config.clone(), seed, clock.now(), records)
        .map_err(|e| RunError::Store(e.to_string()))?;
    set_wall_clock(&mut server, clock);
    for lost in server.set_aside() {
        error!(
            lobby = lost.lobby.0,
            code = %lost.code,
            players = lost.sessions.len(),
            reason = %lost.reason,
            "A game could not be restored and is set aside: its records stay in the store, its players are told at their next hello"
        );
    }
    let g = server.gauges();
    info!(
        records = count,
        lobbies = g.lobbies,
        games = g.active_games,
        sessions = g.sessions,
        restore_ms = started.elapsed().as_millis() as u64,
        "Restored"
    );
    Ok(Opened {
        store: Some(store),
        server,
        clock,
    })
}

/// Profile lookups in the store every shard shares: with the PostgreSQL store only.
#[cfg(feature = "postgres")]
fn start_directory(config: &Config) -> Result<Option<Arc<store::Directory>>, RunError> {
    match &config.shell.store {
        wizard_core::vocabulary::config::StoreSpec::Postgres(url) => {
            let directory = store::Directory::start(url, config.shard).map_err(RunError::Thread)?;
            Ok(Some(Arc::new(directory)))
        }
        _ => Ok(None),
    }
}

/// Without PostgreSQL nothing is shared between shards.
#[cfg(not(feature = "postgres"))]
fn start_directory(_: &Config) -> Result<Option<Arc<store::Directory>>, RunError> {
    Ok(None)
}

/// Tells the core the wall clock at its time zero (history's dates).
fn set_wall_clock(server: &mut Server, clock: Clock) {
    let since_zero_ms = clock.now().as_micros() / 1000;
    server.set_wall_clock(store::history::wall_ms().saturating_sub(since_zero_ms));
}

/// `HISTORY_DAYS` and its purge, as the stores take them.
fn history_options(config: &Config) -> store::history::HistoryOptions {
    store::history::HistoryOptions {
        days: config.history_days,
        purge_interval: Duration::from_micros(config.shell.history_purge_interval_us),
        purge_rows_max: config.shell.history_purge_rows_max,
    }
}

/// The PostgreSQL store at `url` for `shard`, and what it holds.
#[cfg(feature = "postgres")]
fn open_postgres(
    url: &str,
    shard: Option<wizard_core::vocabulary::shard::ShardId>,
    history: store::history::HistoryOptions,
) -> Result<(store::Backend, Vec<wizard_core::machine::records::Record>), RunError> {
    let (store, records) =
        store::postgres::PgStore::open_with(url, shard, store::COMPACT_ROWS_MIN, history)
            .map_err(|e| RunError::Store(e.to_string()))?;
    Ok((store::Backend::Postgres(store), records))
}

/// A build without the `postgres` feature cannot open a PostgreSQL store.
#[cfg(not(feature = "postgres"))]
fn open_postgres(
    _url: &str,
    _shard: Option<wizard_core::vocabulary::shard::ShardId>,
    _history: store::history::HistoryOptions,
) -> Result<(store::Backend, Vec<wizard_core::machine::records::Record>), RunError> {
    Err(RunError::Store(
        "STORE names PostgreSQL, but this build has no PostgreSQL store: build wizard-server with its `postgres` feature (the default)".into(),
    ))
}

async fn accept_loop(
    ex: Arc<Priorities>,
    listener: Async<TcpListener>,
    gate: Arc<Gate>,
    ctx: Arc<Ctx>,
    clock: Clock,
) {
    let mut logs = LogLimiter::default();
    loop {
        // Accepted on the plain listener and asked at the door before the socket is
        // registered with the reactor: a refused socket (a connect flood) costs an
        // accept and a close, nothing more. Every ready socket is taken per wake-up.
        if let Err(e) = listener.readable().await {
            accept_failed(&mut logs, clock, &e).await;
            continue;
        }
        for _ in 0..ACCEPT_BATCH_MAX {
            match listener.get_ref().accept() {
                // An eviction ends the batch: the sockets admitted so far get their
                // tasks' first turn (their heads may be on the way) before the next
                // accept can evict one of them.
                Ok((stream, peer)) => {
                    if admit(&ex, &gate, &ctx, stream, peer) {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    accept_failed(&mut logs, clock, &e).await;
                    break;
                }
            }
        }
        // A flood keeps the listener ready: let the connections' tasks run between
        // batches.
        futures_lite::future::yield_now().await;
    }
}

/// Sockets accepted per wake-up of the accept loop before it yields.
const ACCEPT_BATCH_MAX: usize = 64;

/// Logs a failed `accept` (rate limited) and pauses (e.g. out of file descriptors).
async fn accept_failed(logs: &mut LogLimiter, clock: Clock, e: &std::io::Error) {
    let now_us = clock.now().0;
    logs.summaries(now_us, note_log::log_suppressed);
    if logs.allow(LineKind::AcceptFailed, now_us) {
        warn!(error = %e, "accept failed");
    }
    Timer::after(ACCEPT_BACKOFF).await;
}

/// Asks the door about one accepted socket; an admitted one gets its task. Returns
/// whether another socket was evicted to make room.
fn admit(
    ex: &Arc<Priorities>,
    gate: &Arc<Gate>,
    ctx: &Arc<Ctx>,
    stream: std::net::TcpStream,
    peer: std::net::SocketAddr,
) -> bool {
    ShellStats::bump(&ctx.stats.tcp_accepted);
    let admitted = match gate.admit(peer.ip()) {
        Ok(admitted) => admitted,
        Err(refusal) => {
            ShellStats::bump(&ctx.stats.tcp_refused);
            if refusal == DoorRefusal::Rate {
                ShellStats::bump(&ctx.stats.tcp_rate_limited);
            }
            http::busy_now(&stream);
            return false; // dropping `stream` closes it
        }
    };
    let evicted = admitted.evicted;
    if evicted {
        ShellStats::bump(&ctx.stats.tcp_evicted);
    }
    if admitted.mode == limits::Admission::Probe {
        ShellStats::bump(&ctx.stats.tcp_probe_lane);
    }
    // A request already in the kernel's queue marks the socket as speaking before the
    // next accept can evict it (see `Door::spoke`): one non-blocking peek.
    if stream.set_nonblocking(true).is_ok() && stream.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0) {
        admitted.slot.spoke();
    }
    let _ = stream.set_nodelay(true);
    set_buffers(&stream, &ctx.config);
    let Ok(stream) = Async::new(stream) else {
        return evicted; // not registered: dropping the slot and the socket closes both
    };
    let stream = Arc::new(stream);
    let cut = Arc::clone(&stream);
    let ctx = Arc::clone(ctx);
    let limits::Admitted {
        mode, slot, abort, ..
    } = admitted;
    let door = Arc::clone(ex);
    let serve = async move {
        let ended = http::serve(stream, peer, mode, &slot, ctx).await;
        // An ended websocket's linger and close at the door's priority; the slot is
        // held until the socket is closed.
        if let Some(tcp) = ended {
            door.door
                .spawn(async move {
                    conn::linger(&tcp).await;
                    drop(tcp);
                    drop(slot);
                })
                .detach();
        }
    };
    // The request head and the answer at the games' priority, so that `/health` does
    // not wait behind a burst of closes. The door may evict this socket while it waits
    // for its head: the abort drops the serving future (and its slot), the socket is
    // told `busy` without waiting, and closed.
    ex.games
        .spawn(async move {
            if futures_util::future::Abortable::new(serve, abort)
                .await
                .is_err()
            {
                http::busy_now(cut.get_ref());
            }
        })
        .detach();
    evicted
}

/// Bounds the kernel's buffers for `tcp` (Linux doubles each value for its bookkeeping
/// and turns off autotuning for the socket), both charged to the server's memory cgroup:
/// - the send buffer (`SO_SNDBUF`), so that a client that does not read fills it quickly
///   and `WRITE_TIMEOUT` starts: without it the buffer grows to `net.ipv4.tcp_wmem`'s
///   maximum (4 MB here);
/// - the receive buffer (`SO_RCVBUF`), so that a client writing faster than its reader
///   is allowed to (a ping or message flood) is held back by TCP's own window instead of
///   parking up to `net.ipv4.tcp_rmem`'s maximum (32 MB here) in the kernel. Closing a
///   socket frees what is queued in it, in the closing call: the ping flood's full
///   receive queues made `close` a fifth of the server's CPU, in bursts that delayed the
///   games' moves by 10-15 ms.
fn set_buffers(tcp: &std::net::TcpStream, config: &Config) {
    use rustix::net::sockopt;
    if let Err(e) = sockopt::set_socket_send_buffer_size(tcp, config.shell.socket_send_buffer_bytes)
    {
        tracing::debug!(error = %e, "SO_SNDBUF not set");
    }
    if let Err(e) = sockopt::set_socket_recv_buffer_size(tcp, config.shell.socket_recv_buffer_bytes)
    {
        tracing::debug!(error = %e, "SO_RCVBUF not set");
    }
}
