//! The in-process link (`service::local`): typed requests through the same admission
//! machine and pool as the websocket, every request answered exactly once.

use std::collections::BTreeMap;
use std::time::Duration;

use async_io::Timer;
use futures_lite::FutureExt;
use wizard_ai::service::local::Local;
use wizard_ai::service::{REPLIES_QUEUED_MAX, ServiceOptions};
use wizard_core::vocabulary::config::{AiAgent, AiServiceConfig};
use wizard_core::vocabulary::game::Observation;
use wizard_core::vocabulary::wire::{AiErrorCode, AiReply, AiRequest};

use crate::search::{options, random_position};

fn link(agent: AiAgent, queue_max: usize) -> Local {
    let config = AiServiceConfig {
        workers: 1,
        queue_max,
        degrade_queue_min: 8,
        agent,
        ..AiServiceConfig::default()
    };
    Local::start(
        &config,
        &ServiceOptions {
            worker_nice: 0,
            seed: 3,
        },
    )
}

fn decide(request_id: u64, observation: &Observation, timeout: f64) -> AiRequest {
    AiRequest::Decide {
        request_id,
        observation: observation.clone(),
        timeout,
        level: Default::default(),
    }
}

/// The next reply a worker sends, or a failed test after 10 s.
fn next_reply(local: &Local) -> AiReply {
    smol::block_on(
        async {
            local
                .replies()
                .recv()
                .await
                .expect("the pool is running")
                .reply
        }
        .or(async {
            Timer::after(Duration::from_secs(10)).await;
            panic!("no reply within 10 s");
        }),
    )
}

fn position() -> Observation {
    let (game, seat) = random_position(4, options(0), 11, 9).expect("a seat to act");
    game.observation(seat)
}

/// The agent, the queue bound, the requests' timeouts (s); then how the replies must
/// look: how many decisions at least, `overloaded` at least, `expired` exactly.
type Row = (AiAgent, usize, &'static [f64], usize, usize, usize);

#[test]
fn every_request_gets_one_reply_decided_refused_or_expired() {
    let obs = position();
    let rows: [Row; 4] = [
        // One request with time: the primary decides.
        (AiAgent::Heuristic, 4, &[5.0], 1, 0, 0),
        // No time at all: answered `expired` without computing.
        (AiAgent::Heuristic, 4, &[0.0], 0, 0, 1),
        // 40 searches at once on one worker with room for one: the first is decided,
        // the ones submitted while it computes are refused at once.
        (AiAgent::Search, 1, &[5.0; 40], 1, 1, 0),
        // With room for all, all are decided (some by the heuristic as the queue grows).
        (AiAgent::Heuristic, 64, &[5.0; 40], 40, 0, 0),
    ];
    for (agent, queue_max, timeouts, decided_min, overloaded_min, expired) in rows {
        let local = link(agent, queue_max);
        let mut replies = BTreeMap::new();
        let mut queued = 0;
        for (id, timeout) in (1u64..).zip(timeouts) {
            match local.submit(decide(id, &obs, *timeout)) {
                None => queued += 1,
                Some(reply) => assert!(replies.insert(id, reply).is_none()),
            }
        }
        for _ in 0..queued {
            let reply = next_reply(&local);
            assert!(replies.insert(reply.request_id(), reply).is_none());
        }
        let row = format!("{agent:?}, queue {queue_max}, {} requests", timeouts.len());
        assert_eq!(replies.len(), timeouts.len(), "{row}: one reply each");
        let count = |code| {
            replies
                .values()
                .filter(|r| matches!(r, AiReply::Error { code: c, .. } if *c == code))
                .count()
        };
        let decided: Vec<_> = replies
            .values()
            .filter_map(|r| match r {
                AiReply::Decision { action, .. } => Some(*action),
                AiReply::Error { .. } => None,
            })
            .collect();
        assert!(
            decided.iter().all(|a| obs.legal_actions.contains(a)),
            "{row}"
        );
        assert!(decided.len() >= decided_min, "{row}: {replies:?}");
        assert!(count(AiErrorCode::Overloaded) >= overloaded_min, "{row}");
        assert_eq!(count(AiErrorCode::Expired), expired, "{row}");
        assert_eq!(count(AiErrorCode::Internal), 0, "{row}");
        assert_eq!(local.in_progress(), 0, "{row}: nothing left in progress");
    }
}

/// A request id still in progress is refused as `internal` (the server's bug), and the
/// first request is still answered.
#[test]
fn a_duplicate_request_id_is_refused_and_the_first_still_answered() {
    let obs = position();
    let local = link(AiAgent::Search, REPLIES_QUEUED_MAX + 8);
    // Requests with no time left, answered `expired` in turn: their replies fill the
    // reply queue (nobody reads it yet) and the last one holds the worker on the full
    // queue, so request 7, queued behind them, is still in progress when its duplicate
    // comes, however the threads are scheduled.
    let expired = REPLIES_QUEUED_MAX as u64 + 1;
    for id in 100..100 + expired {
        assert_eq!(local.submit(decide(id, &obs, 0.0)), None);
    }
    assert_eq!(local.submit(decide(7, &obs, 5.0)), None);
    let duplicate = local.submit(decide(7, &obs, 5.0));
    assert!(
        matches!(
            duplicate,
            Some(AiReply::Error {
                request_id: 7,
                code: AiErrorCode::Internal,
                ..
            })
        ),
        "{duplicate:?}"
    );
    for _ in 0..expired {
        let reply = next_reply(&local);
        assert!(
            matches!(
                reply,
                AiReply::Error {
                    code: AiErrorCode::Expired,
                    ..
                }
            ),
            "{reply:?}"
        );
    }
    let first = next_reply(&local);
    assert!(
        matches!(first, AiReply::Decision { request_id: 7, .. }),
        "{first:?}"
    );
    assert_eq!(local.in_progress(), 0);
}
