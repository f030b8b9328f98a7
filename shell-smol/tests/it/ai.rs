//! `/internal/ai` end to end: a fake AI service with the right secret receives `decide`
//! requests for AI seats and its answers become moves.

use async_tungstenite::tungstenite::Message;
use futures_lite::future::or;
use wizard_core::vocabulary::game::{Event, Phase};
use wizard_core::vocabulary::wire::{AiReply, AiRequest, decode_ai_request, encode_ai_reply};

use crate::client::{Client, Player, TestServer, bounded, metric, next_text, ws};

/// Answers every `decide` with its first legal action; returns after `answers` replies.
async fn fake_ai(ai: &mut Client, answers: usize, seen: &mut Vec<AiRequest>) {
    for _ in 0..answers {
        let request = decode_ai_request(&next_text(ai).await).unwrap();
        let AiRequest::Decide {
            request_id,
            observation,
            timeout,
            ..
        } = &request;
        assert!(*timeout > 0.0);
        assert!(observation.to_act.is_some());
        let action = observation.legal_actions[0];
        let reply = AiReply::Decision {
            request_id: *request_id,
            action,
            agent: "test".into(),
        };
        ai.send(Message::text(encode_ai_reply(&reply)))
            .await
            .unwrap();
        seen.push(request);
    }
}

#[test]
fn decide_requests_reach_an_ai_service_with_the_secret_and_its_moves_are_applied() {
    let server = TestServer::start(&[
        ("AI_SHARED_SECRET", "s3cret"),
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
    ]);
    let addr = server.addr;
    bounded(20, async {
        let mut ai = ws(addr, "/internal/ai", &[("Authorization", "Bearer s3cret")])
            .await
            .unwrap();
        let (mut human, _) = Player::hello(addr, None).await;
        let mut view = human.create_lobby_view("Ann").await;
        // The AI connection may reach the core after the lobby was created: then a
        // state follows when it connects.
        while !view.lobby.as_ref().is_some_and(|l| l.ai_available) {
            view = human.next_state().await;
        }
        human.add_ai(2).await;
        human.add_ai(3).await;
        let first = human.start_game().await;
        let mut seen = Vec::new();
        // Round 1: the human's seat 0 deals; seats 1 and 2 (AI) may be first to bid.
        // Answer two requests while the human plays its own turns.
        let play = async {
            let mut view = first;
            let mut ai_bids = 0;
            loop {
                ai_bids += view
                    .events
                    .iter()
                    .filter(|e| matches!(e, Event::BidMade { player, .. } if *player != 0))
                    .count();
                if ai_bids >= 2 {
                    return view;
                }
                if let Some(action) = crate::client::my_move(&view) {
                    human
                        .send(wizard_core::vocabulary::wire::ClientMessage::Action { action })
                        .await;
                }
                view = human.next_state().await;
            }
        };
        let answered = async {
            fake_ai(&mut ai, 2, &mut seen).await;
            std::future::pending().await
        };
        let view = or(play, answered).await;
        assert_eq!(seen.len(), 2, "two decide requests were answered");
        for request in &seen {
            let AiRequest::Decide { observation, .. } = request;
            assert_eq!(observation.phase, Phase::Bidding);
            assert_ne!(observation.to_act, Some(0), "never asked for the human");
        }
        let obs = &view.game.unwrap().observation;
        assert!(obs.has_bid.iter().filter(|b| **b).count() >= 2);
        assert_eq!(metric(addr, "wizard_moves_total{by=\"ai\"}").await, 2.0);
        assert_eq!(metric(addr, "wizard_ai_requests_total").await, 2.0);
        assert_eq!(metric(addr, "wizard_fallbacks_total").await, 0.0);
        // The fake service names an agent this build does not know.
        assert_eq!(
            metric(addr, "wizard_ai_decisions_total{agent=\"other\"}").await,
            2.0
        );
        assert_eq!(
            metric(addr, "wizard_ai_decisions_total{agent=\"search\"}").await,
            0.0
        );
    });
}
