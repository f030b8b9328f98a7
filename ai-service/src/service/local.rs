//! The in-process link to the AI service (the server's `EMBEDDED_AI=1`): decide
//! requests arrive as [`AiRequest`] values and go straight to [`super::admit`] and the
//! worker pool; replies come back as [`AiReply`] values, with the instant each was
//! made ([`Answered`]), on a bounded channel. No socket,
//! no JSON, no event loop of its own: the caller's task submits and receives.

use async_channel::Receiver;
use wizard_core::vocabulary::config::AiServiceConfig;
use wizard_core::vocabulary::wire::{AiReply, AiRequest};

use super::{Answered, Pool, REPLIES_QUEUED_MAX, ServiceOptions};

/// The service's admission machine and workers, driven in process. Dropping it stops
/// the workers after their current decision.
#[derive(Debug)]
pub struct Local {
    pool: Option<Pool>,
    replies: Receiver<Answered>,
}

impl Local {
    /// Starts `config.workers` worker threads; replies wait on a queue of at most
    /// [`REPLIES_QUEUED_MAX`] (a full queue holds the workers back).
    pub fn start(config: &AiServiceConfig, options: &ServiceOptions) -> Local {
        let (replies_tx, replies) = async_channel::bounded::<Answered>(REPLIES_QUEUED_MAX);
        let pool = super::start_pool(config, options, replies_tx);
        Local {
            pool: Some(pool),
            replies,
        }
    }

    /// Admits `request` as the websocket path does: `None` when a worker will reply on
    /// [`Local::replies`], or the reply due at once (`overloaded`, or `internal` for a
    /// duplicate request id).
    pub fn submit(&self, request: AiRequest) -> Option<AiReply> {
        let pool = self.pool.as_ref()?;
        super::admit(pool, request)
    }

    /// Where the workers' replies arrive, in the order they were computed.
    pub fn replies(&self) -> &Receiver<Answered> {
        &self.replies
    }

    /// Requests waiting or computing.
    pub fn in_progress(&self) -> usize {
        self.pool.as_ref().map_or(0, Pool::in_progress)
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        // A worker blocked on a full reply queue returns once the queue is closed; only
        // then can the pool wait for its workers.
        self.replies.close();
        if let Some(pool) = self.pool.take() {
            pool.stop();
        }
    }
}
