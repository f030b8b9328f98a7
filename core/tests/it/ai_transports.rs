//! The AI service over a websocket (`ConnKind::Ai`, JSON frames) and in process
//! (`ConnKind::AiInProcess`, request and reply values): the same script of answers
//! gives the same game, notes and fallbacks on both; only the form of the requests
//! differs.

use serde_json::json;
use wizard_core::vocabulary::io::{
    ConnId, ConnKind, FallbackReason, Input, MoveSource, Note, Output,
};
use wizard_core::vocabulary::wire::{self, AiErrorCode, AiReply, AiRequest};

use super::driver::{Driver, config};

const HUMAN: ConnId = ConnId(1);
const AI: ConnId = ConnId(100);

/// How the script answers the AI requests, in order; after the last one the service
/// goes away with a request still pending.
#[derive(Clone, Copy, Debug)]
enum Answer {
    Decide,
    Error(AiErrorCode),
    Illegal,
}

const SCRIPT: [Answer; 8] = [
    Answer::Decide,
    Answer::Decide,
    Answer::Error(AiErrorCode::Overloaded),
    Answer::Decide,
    Answer::Error(AiErrorCode::Expired),
    Answer::Decide,
    Answer::Illegal,
    Answer::Decide,
];

/// What the human and the logs see: the human's frames and the notes, in order.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    frames: Vec<String>,
    notes: Vec<String>,
    requests: usize,
}

impl Seen {
    /// Records the last input's outputs; returns the AI requests among them, checking
    /// each came in the form `kind` takes.
    fn record(&mut self, d: &Driver, kind: ConnKind) -> Vec<AiRequest> {
        let mut requests = Vec::new();
        for o in &d.last {
            match o {
                Output::Send { conn, text, .. } if *conn == HUMAN => self.frames.push(text.clone()),
                Output::Send { conn, text, .. } if *conn == AI => {
                    assert_eq!(kind, ConnKind::Ai, "a frame to the in-process AI: {text}");
                    requests.push(wire::decode_ai_request(text).expect("a decide request"));
                }
                Output::AiRequest { conn, request, .. } => {
                    assert_eq!((*conn, kind), (AI, ConnKind::AiInProcess), "{request:?}");
                    requests.push(AiRequest::clone(request));
                }
                Output::Note(n) => self.notes.push(format!("{n:?}")),
                _ => {}
            }
        }
        self.requests += requests.len();
        requests
    }
}

fn reply(kind: ConnKind, d: &mut Driver, reply: AiReply) {
    match kind {
        ConnKind::AiInProcess => {
            d.input(Input::AiMessage {
                conn: AI,
                reply: Ok(reply),
                request_id: None,
                arrived: None,
            });
        }
        _ => {
            d.ai_send(AI, &wire::encode_ai_reply(&reply));
        }
    }
}

/// Plays one game with an AI service of `kind` answering by [`SCRIPT`], then closes the
/// service with a request pending.
fn play(kind: ConnKind) -> Seen {
    let mut d = Driver::new(
        config(&[
            ("AI_MOVE_DELAY", "0"),
            ("TRICK_PAUSE", "0"),
            ("AI_DECISION_TIMEOUT", "2"),
        ]),
        5,
    );
    let mut seen = Seen::default();
    d.open_ai_as(AI, kind);
    seen.record(&d, kind);
    d.start_with_two_ai(HUMAN);
    let mut pending = seen.record(&d, kind);
    let mut script = SCRIPT.iter();
    for _ in 0..1000 {
        if !d.legal(HUMAN).is_empty() {
            let action = d.legal(HUMAN)[0].clone();
            d.send_json(HUMAN, json!({"type": "action", "action": action}));
        } else if let Some(AiRequest::Decide {
            request_id,
            observation,
            ..
        }) = pending.pop()
        {
            let Some(answer) = script.next() else {
                pending.push(AiRequest::Decide {
                    request_id,
                    observation,
                    timeout: 2.0,
                    level: Default::default(),
                });
                break;
            };
            let request_id_ = request_id;
            let decision = |action| AiReply::Decision {
                request_id: request_id_,
                action,
                agent: "test".into(),
            };
            let answer = match *answer {
                Answer::Decide => decision(observation.legal_actions[0]),
                Answer::Illegal => decision(wizard_core::vocabulary::game::Action::Bid { bid: 99 }),
                Answer::Error(code) => AiReply::Error {
                    request_id,
                    code,
                    message: "scripted".into(),
                },
            };
            reply(kind, &mut d, answer);
        } else {
            let (t, _) = d
                .server
                .poll_timeout()
                .expect("the game waits for something");
            d.now = d.now.max(t);
            d.input(Input::Timeout);
        }
        pending.extend(seen.record(&d, kind));
    }
    assert_eq!(pending.len(), 1, "{kind:?}: one request left for the close");
    d.close(AI);
    seen.record(&d, kind);
    seen
}

#[test]
fn both_transports_play_the_same_game_with_the_same_fallbacks() {
    let websocket = play(ConnKind::Ai);
    let in_process = play(ConnKind::AiInProcess);
    assert_eq!(websocket, in_process);
    let has = |needle: &str| in_process.notes.iter().any(|n| n.contains(needle));
    assert!(
        in_process.requests > SCRIPT.len(),
        "{}",
        in_process.requests
    );
    for reason in [
        FallbackReason::Overloaded,
        FallbackReason::Expired,
        FallbackReason::Illegal,
        FallbackReason::Disconnected,
    ] {
        assert!(
            has(&format!("reason: {reason:?}")),
            "no {reason:?} fallback"
        );
    }
    assert!(has(&format!("{:?}", MoveSource::Ai)), "no AI move");
    assert!(has("AiAnswered"), "no round trip noted");
    assert!(has("AiConnected"), "the in-process AI counts as connected");
    assert!(
        in_process.notes.iter().any(|n| n
            == &format!(
                "{:?}",
                Note::AiDisconnected {
                    conn: AI,
                    pending: 1
                }
            )),
        "the close failed the pending request"
    );
    assert!(
        !has("BreakerOpened"),
        "one failure does not open the breaker"
    );
}
