//! Embedded mode (`EMBEDDED_AI=1`): the AI service's admission machine and worker pool
//! run inside the server process, linked to the core task in process
//! ([`wizard_ai::service::local`]). The core sees an AI connection of kind
//! [`ConnKind::AiInProcess`](wizard_core::vocabulary::io::ConnKind::AiInProcess): its decide
//! requests reach the pool as values and the workers' replies come back on a bounded
//! queue the core task drains every pass, and waits on only once an answer is needed
//! ([`wizard_core::shell::reply_wait`]), so there is no socket, no JSON and no event loop
//! besides the core task's. The workers run at a lower priority than the event loop,
//! and their CPU counts in the load probe like any other (the probe reads the process's
//! CPU), so a busy AI makes the server refuse new games and degrade to the heuristic,
//! never slow running games down.

use tracing::info;
use wizard_ai::service::ServiceOptions;
use wizard_ai::service::local::Local;
use wizard_core::vocabulary::config::{AiServiceConfig, Config};
use wizard_core::vocabulary::io::ConnId;

/// Niceness of the embedded AI's worker threads (the event loop stays at 0).
pub const AI_WORKER_NICE: i32 = 10;

/// The running embedded service and the connection the core knows it by; dropping it
/// stops the workers.
#[derive(Debug)]
pub struct Embedded {
    pub conn: ConnId,
    pub link: Local,
}

/// Keeps `/internal/ai` authenticated when the service runs embedded: with an empty
/// `AI_SHARED_SECRET` a random secret nobody knows is set, so no outside service can
/// connect unless the operator sets one.
pub fn lock_ai_route(config: &mut Config) -> std::io::Result<()> {
    if config.ai_shared_secret.is_empty() {
        let mut bytes = [0u8; 24];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        config.ai_shared_secret = bytes.iter().map(|b| format!("{b:02x}")).collect();
    }
    Ok(())
}

/// Starts the embedded AI service's workers for connection `conn`, the agents seeded
/// from OS entropy.
pub fn start(ai: &AiServiceConfig, conn: ConnId) -> std::io::Result<Embedded> {
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
    Ok(Embedded {
        conn,
        link: Local::start(ai, &options),
    })
}
