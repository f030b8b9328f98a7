//! When an answer of the in-process AI may wake the core (`wizard_core::shell::reply_wait`),
//! and the instant the core says it needs each answer (`Output::AiRequest::needed_at`),
//! through their public APIs.

use serde_json::json;
use wizard_core::Time;
use wizard_core::machine::turns::AI_MOVE_SPREAD_US_MAX;
use wizard_core::shell::reply_wait::{REPLY_WAITS_MAX, ReplyWait};
use wizard_core::vocabulary::game::Action;
use wizard_core::vocabulary::io::{ConnId, ConnKind, Input, Output};
use wizard_core::vocabulary::wire::{AiReply, AiRequest};

use super::driver::{Driver, config};

#[derive(Clone, Copy, Debug)]
enum Step {
    Asked(u64, u64),
    Answered(u64),
    Clear,
    /// At `now`: (wakes on an answer, next look).
    Expect(u64, bool, Option<u64>),
}

#[test]
fn an_answer_wakes_the_core_only_once_one_is_needed() {
    use Step::*;
    let steps = [
        Expect(0, false, None),
        Asked(1, 800),
        Asked(2, 500),
        // Nothing needed yet: answers wait; the shell looks at the first need.
        Expect(0, false, Some(500)),
        Expect(499, false, Some(500)),
        // Request 2's answer is needed: any answer now wakes the core.
        Expect(500, true, None),
        Expect(900, true, None),
        Answered(2),
        Expect(500, false, Some(800)),
        Expect(800, true, None),
        // An answer to a request asked with no delay is needed at once.
        Asked(3, 100),
        Expect(100, true, None),
        Answered(3),
        Answered(1),
        Expect(10_000, false, None),
        // An answer read twice or never asked for changes nothing.
        Answered(1),
        Answered(77),
        Expect(10_000, false, None),
        // The link closed: nothing is awaited.
        Asked(4, 50),
        Clear,
        Expect(100, false, None),
    ];
    let mut w = ReplyWait::default();
    for (i, step) in steps.into_iter().enumerate() {
        match step {
            Asked(id, at) => w.asked(id, Time(at)),
            Answered(id) => w.answered(id),
            Clear => w.clear(),
            Expect(now, wake, look) => {
                let got = (
                    w.wake_on_answer(Time(now)),
                    w.next_look(Time(now)).map(|t| t.0),
                );
                assert_eq!(got, (wake, look), "step {i}: {step:?}");
            }
        }
    }
    assert!(w.is_empty());
}

#[test]
fn beyond_its_bound_the_first_needed_is_forgotten_and_answers_wake_the_core() {
    let mut w = ReplyWait::default();
    let n = REPLY_WAITS_MAX as u64;
    for id in 0..n {
        w.asked(id, Time(1_000 + id));
    }
    assert_eq!(
        (w.len(), w.wake_on_answer(Time(0))),
        (REPLY_WAITS_MAX, false)
    );
    // One more: the entry needed first (id 0) is forgotten, so its answer, whenever it
    // comes, must wake the core.
    w.asked(n, Time(5_000_000));
    assert_eq!(w.len(), REPLY_WAITS_MAX + 1);
    assert!(w.wake_on_answer(Time(0)));
    assert_eq!(w.next_look(Time(0)), None);
    w.answered(0);
    assert!(!w.wake_on_answer(Time(0)));
    assert_eq!(w.next_look(Time(0)), Some(Time(1_001)));
    assert_eq!(w.len(), REPLY_WAITS_MAX);
}

const HUMAN: ConnId = ConnId(1);
const AI: ConnId = ConnId(100);

/// A started game of one human and two AI seats under `settings`, the AI service in
/// process.
fn started(settings: &[(&str, &str)]) -> Driver {
    let mut d = Driver::new(config(settings), 11);
    d.open_ai_as(AI, ConnKind::AiInProcess);
    d.start_with_two_ai(HUMAN);
    d
}

/// The in-process service's decision `action` for `request_id`, made at
/// `arrived` (None: when read).
fn decide(d: &mut Driver, request_id: u64, action: Action, arrived: Option<Time>) {
    d.input(Input::AiMessage {
        conn: AI,
        reply: Ok(AiReply::Decision {
            request_id,
            action,
            agent: "test".into(),
        }),
        request_id: None,
        arrived,
    });
}

/// The gaps `needed_at - now` of the first in-process AI requests of a game of one
/// human and two AI seats under `settings`, answering each request at once.
fn needed_gaps(settings: &[(&str, &str)], requests: usize) -> Vec<u64> {
    let mut d = started(settings);
    let mut gaps = Vec::new();
    for _ in 0..2000 {
        let asked: Vec<(AiRequest, Time)> = d
            .last
            .iter()
            .filter_map(|o| match o {
                Output::AiRequest {
                    request, needed_at, ..
                } => Some((AiRequest::clone(request), *needed_at)),
                _ => None,
            })
            .collect();
        if let Some((
            AiRequest::Decide {
                request_id,
                observation,
                ..
            },
            needed_at,
        )) = asked.into_iter().next()
        {
            gaps.push(needed_at.since_us(d.now));
            if gaps.len() >= requests {
                return gaps;
            }
            decide(&mut d, request_id, observation.legal_actions[0], None);
        } else if !d.legal(HUMAN).is_empty() {
            let action = d.legal(HUMAN)[0].clone();
            d.send_json(HUMAN, json!({"type": "action", "action": action}));
        } else {
            let (t, _) = d.server.poll_timeout().expect("a move is due");
            d.now = d.now.max(t);
            d.input(Input::Timeout);
        }
    }
    gaps
}

#[test]
fn the_core_needs_an_answer_when_the_move_may_be_applied_and_never_after_its_deadline() {
    let open = [("MESSAGE_RATE", "1000"), ("MESSAGE_BURST", "1000")];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut s = open.to_vec();
        s.extend_from_slice(extra);
        s
    };
    // The move delay, plus the turn's spread.
    let delayed = needed_gaps(&with(&[("AI_MOVE_DELAY", "0.8"), ("TRICK_PAUSE", "0")]), 12);
    assert_eq!(delayed.len(), 12);
    assert!(
        delayed
            .iter()
            .all(|&g| (800_000..=800_000 + AI_MOVE_SPREAD_US_MAX).contains(&g)),
        "{delayed:?}"
    );
    // No delay and no pause: needed at once (and not spread).
    let at_once = needed_gaps(&with(&[("AI_MOVE_DELAY", "0"), ("TRICK_PAUSE", "0")]), 12);
    assert_eq!(at_once, vec![0; 12]);
    // A deadline sooner than the delay: needed by the deadline.
    let capped = needed_gaps(
        &with(&[
            ("AI_MOVE_DELAY", "3"),
            ("TRICK_PAUSE", "0"),
            ("AI_DECISION_TIMEOUT", "0.5"),
        ]),
        6,
    );
    assert_eq!(capped, vec![500_000; 6]);
}

#[test]
fn a_round_trip_ends_when_the_answer_arrived_not_when_the_core_read_it() {
    use wizard_core::vocabulary::io::Note;
    // (arrival after the request, in us, or None: read at once; the round trip noted)
    let cases: [(Option<u64>, u64); 3] = [
        (Some(3_000), 3_000),
        (None, 800_000),
        // An arrival after the pass that reads it cannot be: the pass's time counts.
        (Some(900_000), 800_000),
    ];
    for (arrived_after_us, want_us) in cases {
        let mut d = started(&[("AI_MOVE_DELAY", "0.8"), ("TRICK_PAUSE", "0")]);
        let mut asked = None;
        for _ in 0..50 {
            asked = d.last.iter().find_map(|o| match o {
                Output::AiRequest { request, .. } => Some(AiRequest::clone(request)),
                _ => None,
            });
            if asked.is_some() {
                break;
            }
            let action = d.legal(HUMAN)[0].clone();
            d.send_json(HUMAN, json!({"type": "action", "action": action}));
        }
        let Some(AiRequest::Decide {
            request_id,
            observation,
            ..
        }) = asked
        else {
            panic!("no AI request");
        };
        let sent = d.now;
        d.now = sent.plus_us(800_000);
        let arrived = arrived_after_us.map(|us| sent.plus_us(us));
        decide(&mut d, request_id, observation.legal_actions[0], arrived);
        let round_trips: Vec<u64> = d
            .last_notes()
            .iter()
            .filter_map(|n| match n {
                Note::AiAnswered { round_trip_us } => Some(*round_trip_us),
                _ => None,
            })
            .collect();
        assert_eq!(round_trips, vec![want_us], "arrived {arrived_after_us:?}");
    }
}
