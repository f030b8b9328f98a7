//! wizard-server: the production shell that carries wizard-core's [`Server`] over smol,
//! HTTP and websockets.
//!
//! One task owns the core ([`core_task`]); each accepted TCP connection gets a task that
//! reads its request head ([`http`]) and, after an upgrade, drives the websocket
//! ([`conn`]); a load probe ([`probe`]) reports lag, CPU and throttling; a hard cap on TCP
//! connections ([`limits`]) bounds everything before any HTTP work; [`metrics`] renders
//! `/metrics`. The shell carries out the core's outputs and reports facts; it decides
//! nothing about shedding, retrying or falling back.
//!
//! [`run_on`] is the entry point for the binary and the tests: it takes a bound
//! listener and a shutdown future, and returns once the core finished after shutdown.

pub mod conn;
pub mod core_task;
pub mod deadline;
pub mod embedded;
pub mod http;
pub mod limits;
pub mod metrics;
pub mod outbox;
pub mod probe;

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use async_io::{Async, Timer};
use smol::Executor;
use tracing::{info, warn};
use wizard_core::Server;
use wizard_core::config::Config;
use wizard_core::rng::Seed;

use crate::core_task::{Clock, CoreTask, INBOX_CAPACITY};
use crate::http::Ctx;
use crate::limits::TcpLimit;
use crate::metrics::{Metrics, ShellStats};

/// Why the server could not run.
#[derive(Debug)]
pub enum RunError {
    /// The listener could not be made non-blocking or registered.
    Listener(std::io::Error),
    /// An executor thread could not be started.
    Thread(std::io::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Listener(e) => write!(f, "listener: {e}"),
            RunError::Thread(e) => write!(f, "executor thread: {e}"),
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

/// Runs the server on `listener` until the core finished after `shutdown` resolved.
/// Blocks the calling thread, which becomes one of the executor's threads.
pub fn run_on(
    config: Config,
    listener: TcpListener,
    seed: Seed,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let cgroup = probe::Cgroup::discover();
    let quota = cgroup.as_ref().and_then(probe::Cgroup::quota_cores);
    let threads = probe::threads_for(quota);
    info!(threads, quota_cores = quota, bind = %config.bind, "Starting");
    let ex = Arc::new(Executor::new());
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
        config,
        listener,
        seed,
        shutdown,
        cgroup,
    )));
    drop(stop);
    for worker in workers {
        let _ = worker.join();
    }
    result
}

async fn serve(
    ex: Arc<Executor<'static>>,
    config: Config,
    listener: TcpListener,
    seed: Seed,
    shutdown: impl Future<Output = ()> + Send + 'static,
    cgroup: Option<probe::Cgroup>,
) -> Result<(), RunError> {
    let listener = Async::new(listener).map_err(RunError::Listener)?;
    if config.ai_shared_secret.is_empty() {
        warn!(
            "AI_SHARED_SECRET is empty: /internal/ai accepts any local connection (development only)"
        );
    }
    let clock = Clock::new(Instant::now());
    let config = Arc::new(config);
    let server = Server::new((*config).clone(), seed, clock.now());
    let (inbox, inbox_rx) = async_channel::bounded(INBOX_CAPACITY);
    let (shutdown_tx, shutdown_rx) = async_channel::bounded(1);
    ex.spawn(async move {
        shutdown.await;
        let _ = shutdown_tx.send(()).await;
    })
    .detach();
    let stats = Arc::new(ShellStats::default());
    let tcp = Arc::new(TcpLimit::new(config.conns_max));
    let interval = Duration::from_micros(config.load_sample_interval_us);
    ex.spawn(probe::run(inbox.clone(), interval, cgroup))
        .detach();
    let ctx = Arc::new(Ctx {
        config,
        inbox,
        stats: Arc::clone(&stats),
        next_conn: AtomicU64::new(1),
    });
    let core = CoreTask {
        server,
        clock,
        inbox: inbox_rx,
        shutdown: shutdown_rx,
        metrics: Metrics::new(),
        stats,
        tcp: Arc::clone(&tcp),
    };
    // Its own task: raced against the core task in one future, every wake-up of the
    // core polled the listener too (an `accept4` that fails with EAGAIN each time).
    let accept = ex.spawn(accept_loop(Arc::clone(&ex), listener, tcp, ctx));
    core.run().await;
    accept.cancel().await;
    info!("Stopped");
    Ok(())
}

async fn accept_loop(
    ex: Arc<Executor<'static>>,
    listener: Async<TcpListener>,
    tcp: Arc<TcpLimit>,
    ctx: Arc<Ctx>,
) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                warn!(error = %e, "accept failed");
                Timer::after(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        ShellStats::bump(&ctx.stats.tcp_accepted);
        let Some((admission, slot)) = tcp.try_acquire() else {
            ShellStats::bump(&ctx.stats.tcp_refused);
            drop(stream);
            continue;
        };
        let _ = stream.get_ref().set_nodelay(true);
        let ctx = Arc::clone(&ctx);
        ex.spawn(async move {
            let _slot = slot;
            http::serve(stream, peer, admission, ctx).await;
        })
        .detach();
    }
}
