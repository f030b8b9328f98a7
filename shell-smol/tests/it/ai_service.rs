//! The real AI service (`wizard_ai::service`) against a real server: it connects with
//! the secret and plays AI seats, reconnects after the server restarts, and is refused
//! with a clear reason when the secret is wrong.

use std::net::SocketAddr;
use std::time::Duration;

use async_io::Timer;
use wizard_ai::service::{self, Ended, ServiceOptions};
use wizard_core::vocabulary::config::{AiAgent, AiServiceConfig};

use crate::client::{Player, TestServer, bounded, http, metric, my_move};

fn ai_config(addr: SocketAddr, secret: &str) -> AiServiceConfig {
    AiServiceConfig {
        server_url: format!("ws://{addr}/internal/ai"),
        shared_secret: secret.to_owned(),
        agent: AiAgent::Search,
        ..AiServiceConfig::default()
    }
}

fn options() -> ServiceOptions {
    ServiceOptions {
        worker_nice: 0,
        seed: 7,
    }
}

/// Polls `/health` until the server has `n` AI connections.
async fn wait_for_ai(addr: SocketAddr, n: u64) {
    loop {
        let (_, body) = http(addr, "GET", "/health", &[]).await;
        let health = wizard_core::vocabulary::wire::decode_health(&body).unwrap();
        if health.ai.connections == n {
            return;
        }
        Timer::after(Duration::from_millis(20)).await;
    }
}

#[test]
fn the_service_plays_ai_seats_and_reconnects_after_a_restart() {
    let settings = [
        ("AI_SHARED_SECRET", "s3cret"),
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
    ];
    let server = TestServer::start(&settings);
    let addr = server.addr;
    let (_stop, _thread) = service::spawn(ai_config(addr, "s3cret"), options()).unwrap();
    bounded(60, async {
        wait_for_ai(addr, 1).await;
        let (mut ann, _) = Player::hello(addr, None).await;
        ann.create_lobby("Ann").await;
        ann.add_ai(2).await;
        ann.add_ai(3).await;
        let mut view = ann.start_game().await;
        // Play until the AI service has decided some moves.
        while metric(addr, "wizard_moves_total{by=\"ai\"}").await < 6.0 {
            if let Some(action) = my_move(&view) {
                ann.send(wizard_core::vocabulary::wire::ClientMessage::Action { action })
                    .await;
            }
            view = ann.next_state().await;
        }
    });
    assert_eq!(
        bounded(10, metric(addr, "wizard_fallbacks_total")),
        0.0,
        "every AI move came from the service"
    );
    // Restart the server on the same address: the service finds it again.
    server.shutdown();
    assert!(server.join(15), "the server stops");
    drop(server);
    let restarted = TestServer::start_on(addr, &settings);
    bounded(30, wait_for_ai(restarted.addr, 1));
}

#[test]
fn a_wrong_secret_is_refused_with_a_clear_reason() {
    let server = TestServer::start(&[("AI_SHARED_SECRET", "right")]);
    let refused = bounded(10, service::connect(&ai_config(server.addr, "wrong")));
    assert_eq!(refused.err(), Some(Ended::Refused(403)));
    assert!(service::refusal_message(403).contains("AI_SHARED_SECRET"));
    // Refused again on every attempt, and the server stays healthy meanwhile.
    let again = bounded(10, service::connect(&ai_config(server.addr, "wrong")));
    assert_eq!(again.err(), Some(Ended::Refused(403)));
    let (status, body) = bounded(10, http(server.addr, "GET", "/health", &[]));
    assert_eq!(status, 200);
    assert_eq!(
        wizard_core::vocabulary::wire::decode_health(&body)
            .unwrap()
            .ai
            .connections,
        0
    );
}
