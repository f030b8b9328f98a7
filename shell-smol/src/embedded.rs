//! Embedded mode (`EMBEDDED_AI=1`): the AI service runs inside the server process, on
//! its own thread and executor, connected to the server's own `/internal/ai` over
//! loopback with a secret generated at start-up, so a single command gives real AI
//! players. Its worker threads run at a lower priority than the event loop, and their
//! CPU counts in the load probe like any other (the probe reads the process's CPU), so
//! a busy AI makes the server refuse new games and degrade to the heuristic, never slow
//! running games down.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};

use tracing::info;
use wizard_ai::service::{self, ServiceOptions};
use wizard_core::config::{AiServiceConfig, Config};

/// Niceness of the embedded AI's worker threads (the event loop stays at 0).
pub const AI_WORKER_NICE: i32 = 10;

/// The running embedded service; dropping it stops the service.
#[derive(Debug)]
pub struct Embedded {
    _stop: async_channel::Sender<()>,
}

/// Where the embedded service should connect: the listener's port on loopback when the
/// server listens on every address.
pub fn loopback_url(local: SocketAddr) -> String {
    let ip = match local.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        other => other,
    };
    format!("ws://{}/internal/ai", SocketAddr::new(ip, local.port()))
}

/// Starts the embedded AI service. When `AI_SHARED_SECRET` is empty a random secret is
/// generated and set in `config`, so `/internal/ai` stays authenticated.
pub fn start(
    config: &mut Config,
    mut ai: AiServiceConfig,
    listener: &TcpListener,
) -> std::io::Result<Embedded> {
    if config.ai_shared_secret.is_empty() {
        let mut bytes = [0u8; 24];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        config.ai_shared_secret = bytes.iter().map(|b| format!("{b:02x}")).collect();
    }
    ai.shared_secret = config.ai_shared_secret.clone();
    ai.server_url = loopback_url(listener.local_addr()?);
    let mut seed = [0u8; 8];
    getrandom::fill(&mut seed).map_err(|e| std::io::Error::other(e.to_string()))?;
    info!(
        workers = ai.workers,
        agent = ai.agent.name(),
        "Starting the embedded AI service"
    );
    let options = ServiceOptions {
        worker_nice: AI_WORKER_NICE,
        seed: u64::from_le_bytes(seed),
    };
    let (stop, _thread) = service::spawn(ai, options)?;
    Ok(Embedded { _stop: stop })
}
