//! The latency histograms over real sockets: `wizard_frame_answer_seconds` counts one
//! answer per player frame that the core answered in the pass that handled it, and
//! `wizard_ai_round_trip_seconds` one round trip per answer of the AI service.

use std::net::SocketAddr;

use async_tungstenite::tungstenite::Message;
use wizard_ai::service::{self, ServiceOptions};
use wizard_core::vocabulary::config::{AiAgent, AiServiceConfig};
use wizard_core::vocabulary::wire::ClientMessage;

use crate::client::{Player, TestServer, bounded, http, metric, my_move};

const ANSWERS: &str = "wizard_frame_answer_seconds_count";
const ROUND_TRIPS: &str = "wizard_ai_round_trip_seconds_count";

/// Reads `/metrics` until `series` reaches `at_least` (the writer observes an answer
/// just after its first byte went out, so the client may see the answer first); the
/// test's time bound ends a wait that never succeeds.
async fn reaches(addr: SocketAddr, series: &str, at_least: f64) -> f64 {
    loop {
        let value = metric(addr, series).await;
        if value >= at_least {
            return value;
        }
    }
}

/// Every `+Inf` bucket equals its count, and the sum is positive.
async fn consistent(addr: SocketAddr, name: &str) {
    let (_, body) = http(addr, "GET", "/metrics", &[]).await;
    let sample = |series: &str| -> f64 {
        body.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in {body}"))
    };
    let count = sample(&format!("{name}_count"));
    assert_eq!(sample(&format!("{name}_bucket{{le=\"+Inf\"}}")), count);
    assert!(sample(&format!("{name}_sum")) > 0.0, "{body}");
    assert!(
        body.contains(&format!("{name}_bucket{{le=\"0.00005\"}}")),
        "sub-millisecond buckets: {body}"
    );
}

#[test]
fn a_move_is_timed_from_its_frame_to_its_answer() {
    // No AI service: the fallback plays the AI seats, in passes of their own.
    let server = TestServer::start(&[("AI_MOVE_DELAY", "0"), ("TRICK_PAUSE", "0")]);
    let addr = server.addr;
    bounded(20, async {
        assert_eq!(metric(addr, ANSWERS).await, 0.0);
        // hello, create_lobby, two add_ai and start_game: five frames, five answers.
        let (mut ann, _) = Player::hello(addr, None).await;
        ann.create_lobby("Ann").await;
        ann.add_ai(2).await;
        ann.add_ai(3).await;
        let mut view = ann.start_game().await;
        assert_eq!(reaches(addr, ANSWERS, 5.0).await, 5.0);
        let action = loop {
            if let Some(action) = my_move(&view) {
                break action;
            }
            view = ann.next_state().await;
        };
        // The AI seats' moves reached Ann in passes that handled none of her frames:
        // not counted.
        assert_eq!(metric(addr, ANSWERS).await, 5.0);
        ann.send(ClientMessage::Action { action }).await;
        ann.next_state().await;
        assert_eq!(reaches(addr, ANSWERS, 6.0).await, 6.0);
        // A frame the core answers with an error is answered too.
        ann.ws.send(Message::text("{")).await.unwrap();
        ann.next_error().await;
        assert_eq!(reaches(addr, ANSWERS, 7.0).await, 7.0);
        consistent(addr, "wizard_frame_answer_seconds").await;
    });
}

#[test]
fn ai_decisions_are_timed_from_request_to_answer() {
    let settings = [
        ("AI_SHARED_SECRET", "s3cret"),
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
    ];
    let server = TestServer::start(&settings);
    let addr = server.addr;
    let config = AiServiceConfig {
        server_url: format!("ws://{addr}/internal/ai"),
        shared_secret: "s3cret".to_owned(),
        agent: AiAgent::Heuristic,
        ..AiServiceConfig::default()
    };
    let options = ServiceOptions {
        worker_nice: 0,
        seed: 7,
    };
    let (_stop, _thread) = service::spawn(config, options).unwrap();
    bounded(60, async {
        assert_eq!(metric(addr, ROUND_TRIPS).await, 0.0);
        while metric(addr, "wizard_ai_connections").await < 1.0 {}
        let (mut ann, _) = Player::hello(addr, None).await;
        ann.create_lobby("Ann").await;
        ann.add_ai(2).await;
        ann.add_ai(3).await;
        let mut view = ann.start_game().await;
        while metric(addr, "wizard_moves_total{by=\"ai\"}").await < 4.0 {
            if let Some(action) = my_move(&view) {
                ann.send(ClientMessage::Action { action }).await;
            }
            view = ann.next_state().await;
        }
        // Each AI move came from an answer, observed before the move's state went out.
        assert!(metric(addr, ROUND_TRIPS).await >= 4.0);
        assert_eq!(metric(addr, "wizard_fallbacks_total").await, 0.0);
        consistent(addr, "wizard_ai_round_trip_seconds").await;
    });
}
