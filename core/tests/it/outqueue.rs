//! The outbound queue's rule (`outqueue::OutQueue`), as both shells queue frames:
//! replaceable states coalesce, chat lines give way for a `chat_gap` note, other
//! frames keep their order, limits in frames and bytes overflow the queue, and nothing
//! is queued after a close or an overflow.

use wizard_core::shell::outqueue::{Delivery, OutQueue, Pushed};
use wizard_core::vocabulary::wire::{CloseCode, ServerMessage, decode_server};

/// One step of a script: push (text, replaceable) or close.
enum Step {
    Push(&'static str, bool, Pushed),
    Close(CloseCode),
}
use Step::*;

/// The delivery of a scripted push: a replaceable state or a frame kept.
fn delivery(replaceable: bool) -> Delivery {
    if replaceable {
        Delivery::Newest
    } else {
        Delivery::Every
    }
}

/// (limits in frames and bytes, steps with the expected result of each push, frames
/// left in order, overflowed, close asked for)
type Case = (
    (usize, usize),
    &'static [Step],
    &'static [&'static str],
    bool,
    Option<CloseCode>,
);

const S1: &str = r#"{"type":"state","n":1,"events":[]}"#;
const S2: &str = r#"{"type":"state","n":2,"events":[]}"#;
const S3: &str = r#"{"type":"state","n":3,"events":[]}"#;
const WITH_EVENTS: &str = r#"{"type":"state","events":[{}]}"#;

const CASES: &[Case] = &[
    // A replaceable state replaces the one before it; everything else keeps its place.
    (
        (10, 1000),
        &[
            Push(S1, true, Pushed::Queued { frames: 1 }),
            Push("e1", false, Pushed::Queued { frames: 2 }),
            Push(S2, true, Pushed::Replaced { frames: 2 }),
            Push("e2", false, Pushed::Queued { frames: 3 }),
            // The core never marks a state with events replaceable.
            Push(WITH_EVENTS, false, Pushed::Queued { frames: 4 }),
            Push(S3, true, Pushed::Replaced { frames: 4 }),
        ],
        &["e1", "e2", WITH_EVENTS, S3],
        false,
        None,
    ),
    // Past the frame limit: overflowed, emptied, and nothing more is queued.
    (
        (2, 1000),
        &[
            Push("e0", false, Pushed::Queued { frames: 1 }),
            Push("e1", false, Pushed::Queued { frames: 2 }),
            Push("e2", false, Pushed::Overflowed { frames: 3 }),
            Push("e3", false, Pushed::Refused),
        ],
        &[],
        true,
        None,
    ),
    // Past the byte limit; a replacement counts only the newer frame's bytes.
    (
        (100, 40),
        &[
            Push(S1, true, Pushed::Queued { frames: 1 }),
            Push(S2, true, Pushed::Replaced { frames: 1 }),
            Push("0123456789", false, Pushed::Overflowed { frames: 2 }),
        ],
        &[],
        true,
        None,
    ),
    // A close keeps what was queued, refuses what comes after, and the first code stays.
    (
        (10, 1000),
        &[
            Push("a", false, Pushed::Queued { frames: 1 }),
            Close(CloseCode::ShuttingDown),
            Push("b", false, Pushed::Refused),
            Close(CloseCode::MessageFlood),
        ],
        &["a"],
        false,
        Some(CloseCode::ShuttingDown),
    ),
];

#[test]
fn frames_are_queued_by_one_rule() {
    for (i, ((frames_max, bytes_max), steps, left, overflowed, close)) in CASES.iter().enumerate() {
        let mut q = OutQueue::new(*frames_max, *bytes_max);
        for (k, step) in steps.iter().enumerate() {
            match step {
                Push(text, replaceable, want) => {
                    let got = q.push((*text).to_owned(), delivery(*replaceable), k);
                    assert_eq!(got, *want, "case {i}, step {k}");
                    assert!(q.within_caps(), "case {i}, step {k}");
                }
                Close(code) => q.close(*code),
            }
        }
        assert_eq!(q.overflowed(), *overflowed, "case {i}");
        assert_eq!(q.close_code(), *close, "case {i}");
        let bytes: usize = left.iter().map(|t| t.len()).sum();
        assert_eq!(q.len(), (left.len(), bytes), "case {i}");
        let texts: Vec<String> = q.take_all().into_iter().map(|f| f.text).collect();
        assert_eq!(texts, *left, "case {i}");
        assert_eq!(q.len(), (0, 0), "case {i}: taken");
    }
}

#[test]
fn frames_leave_one_by_one_in_order_with_their_tags() {
    let mut q = OutQueue::new(10, 1000);
    for (k, text) in ["a", "bb", "ccc"].into_iter().enumerate() {
        q.push(text.to_owned(), Delivery::Every, k);
    }
    assert_eq!(q.front().map(|f| f.tag), Some(0));
    let mut out = Vec::new();
    while let Some(f) = q.pop_front() {
        out.push((f.text, f.tag, q.len()));
    }
    assert_eq!(
        out,
        [
            ("a".to_owned(), 0, (2, 5)),
            ("bb".to_owned(), 1, (1, 3)),
            ("ccc".to_owned(), 2, (0, 0)),
        ]
    );
}

/// A chat line of `bytes` bytes (not JSON: the queue never reads a frame's text).
fn line(i: usize, bytes: usize) -> String {
    format!("c{i:03}{}", "x".repeat(bytes.saturating_sub(4)))
}

/// The `missed` of a `chat_gap` note, `None` for any other frame.
fn gap(text: &str) -> Option<u32> {
    match decode_server(text) {
        Ok(ServerMessage::ChatGap { missed }) => Some(missed),
        _ => None,
    }
}

#[test]
fn chat_lines_past_their_share_give_way_to_one_gap_note_before_the_rest() {
    let mut q = OutQueue::new(100, 100_000).with_chat_messages_max(3);
    q.push("welcome".to_owned(), Delivery::Every, 0);
    for i in 0..10 {
        q.push(line(i, 20), Delivery::Chat, 0);
        if i == 4 {
            q.push("move".to_owned(), Delivery::Every, 0);
        }
    }
    assert!(q.within_caps());
    let frames: Vec<_> = q.take_all().into_iter().collect();
    let texts: Vec<&str> = frames.iter().map(|f| f.text.as_str()).collect();
    // Seven lines dropped, oldest first: the note took c000's place and counts them
    // all; the frame kept stays; the three newest lines follow in order.
    assert_eq!(gap(texts[1]), Some(7), "{texts:?}");
    assert_eq!(frames[1].missed, 7);
    assert_eq!(
        frames[1].delivery,
        Delivery::Every,
        "the note itself never goes"
    );
    assert_eq!(texts[0], "welcome");
    assert_eq!(texts[2], "move");
    assert_eq!(&texts[3..], [line(7, 20), line(8, 20), line(9, 20)]);
}

#[test]
fn a_chat_burst_to_a_slow_reader_never_overflows_its_queue() {
    // The frame limit: without chat giving way, the 11th frame would overflow it.
    let mut q = OutQueue::new(10, 100_000).with_chat_messages_max(100);
    q.push("state".to_owned(), Delivery::Every, 0);
    let mut pushed = 0;
    for i in 0..400 {
        let got = q.push(line(i, 800), Delivery::Chat, 0);
        assert!(matches!(got, Pushed::Queued { .. }), "line {i}: {got:?}");
        pushed += 1;
        assert!(q.within_caps(), "line {i}");
    }
    q.push("move".to_owned(), Delivery::Every, 0);
    assert!(!q.overflowed());
    let frames: Vec<_> = q.take_all().into_iter().collect();
    let lines = frames
        .iter()
        .filter(|f| f.delivery == Delivery::Chat)
        .count();
    let missed: u32 = frames.iter().filter_map(|f| gap(&f.text)).sum();
    assert_eq!(
        lines + missed as usize,
        pushed,
        "every line arrives or is counted"
    );
    assert_eq!(frames.len(), 10);
    assert_eq!(frames.last().map(|f| f.text.as_str()), Some("move"));

    // The byte limit: 4 lines of 800 bytes at most beside 1000 bytes kept.
    let mut q = OutQueue::new(100, 4_300).with_chat_messages_max(100);
    q.push("k".repeat(1000), Delivery::Every, 0);
    for i in 0..50 {
        q.push(line(i, 800), Delivery::Chat, 0);
        assert!(q.within_caps(), "line {i}");
    }
    assert!(!q.overflowed());
    let (frames, bytes) = q.len();
    assert!(
        bytes <= 4_300 && frames <= 6,
        "{frames} frames, {bytes} bytes"
    );
}

#[test]
fn frames_kept_still_overflow_once_no_chat_line_is_left() {
    let mut q = OutQueue::new(3, 100_000).with_chat_messages_max(10);
    q.push(line(0, 10), Delivery::Chat, 0);
    assert_eq!(
        q.push("a".to_owned(), Delivery::Every, 0),
        Pushed::Queued { frames: 2 }
    );
    assert_eq!(
        q.push("b".to_owned(), Delivery::Every, 0),
        Pushed::Queued { frames: 3 }
    );
    // The line becomes the note: still three frames, and no line left to drop.
    assert_eq!(
        q.push("c".to_owned(), Delivery::Every, 0),
        Pushed::Overflowed { frames: 4 }
    );
    assert!(q.overflowed());
    assert_eq!(q.len(), (0, 0));
}

#[test]
fn a_note_already_taken_is_not_added_to_a_new_one_starts() {
    let mut q = OutQueue::new(100, 100_000).with_chat_messages_max(1);
    q.push(line(0, 10), Delivery::Chat, 0);
    q.push(line(1, 10), Delivery::Chat, 0);
    let first: Vec<_> = q.take_all().into_iter().map(|f| f.text).collect();
    assert_eq!(gap(&first[0]), Some(1));
    assert_eq!(first[1], line(1, 10));
    q.push(line(2, 10), Delivery::Chat, 0);
    q.push(line(3, 10), Delivery::Chat, 0);
    q.push(line(4, 10), Delivery::Chat, 0);
    let second: Vec<_> = q.take_all().into_iter().map(|f| f.text).collect();
    assert_eq!(gap(&second[0]), Some(2));
    assert_eq!(second[1..], [line(4, 10)]);
    // One by one: popping a line frees its place in the chat share.
    q.push(line(5, 10), Delivery::Chat, 0);
    assert_eq!(q.pop_front().map(|f| f.text), Some(line(5, 10)));
    q.push(line(6, 10), Delivery::Chat, 0);
    assert_eq!(q.take_all().len(), 1, "no gap: the share was free again");
}

mod deltas {
    //! A slow reader's queue of a connection that takes deltas (PROTOCOL.md 7.5):
    //! whatever is replaced, the client never meets a gap, ends holding the newest
    //! state, and receives every event, in order.

    use proptest::prelude::*;
    use wizard_core::shell::outqueue::{Delivery, OutQueue, Pushed};
    use wizard_core::vocabulary::wire::held::{self, HeldState, Taken};

    /// One change: the game's fields (`a` may become null: a full state) and whether
    /// it carries an event.
    type Change = (Option<u8>, u8, u8, bool);

    fn state(c: &Change, event: u32) -> String {
        let a = c.0.map_or("null".to_string(), |a| a.to_string());
        let events = if c.3 {
            format!("[{event}]")
        } else {
            "[]".into()
        };
        format!(
            r#"{{"type":"state","lobby":null,"game":{{"a":{a},"b":[{}],"c":{{"d":{}}}}},"events":{events}}}"#,
            c.1, c.2
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn replaced_deltas_merge_and_the_client_never_meets_a_gap(
            changes in prop::collection::vec(
                ((prop::option::weighted(0.9, 0..3u8), 0..3u8, 0..3u8, prop::bool::weighted(0.3)), 0..3usize),
                1..60,
            ),
        ) {
            let mut q: OutQueue<()> = OutQueue::new(10_000, 10_000_000);
            let mut client = HeldState::default();
            let (mut last, mut seq) = (None::<String>, 0u64);
            let (mut sent_events, mut got_events) = (Vec::new(), Vec::new());
            let take = |frame: &str, client: &mut HeldState, got: &mut Vec<u32>| {
                let taken = client.take(frame).unwrap();
                assert!(matches!(taken, Taken::Full | Taken::Delta), "{taken:?}: {frame}");
                let v: serde_json::Value = serde_json::from_str(client.text()).unwrap();
                got.extend(v["events"].as_array().unwrap().iter().map(|e| e.as_u64().unwrap() as u32));
            };
            for (i, (change, drain)) in changes.iter().enumerate() {
                let text = state(change, i as u32);
                if change.3 {
                    sent_events.push(i as u32);
                }
                seq += 1;
                let mut frame = String::new();
                let ok = last
                    .as_deref()
                    .is_some_and(|l| held::delta_frame(l, &text, seq, &mut frame).is_ok());
                if !ok {
                    frame = held::numbered_state(&text, seq);
                }
                last = Some(text);
                let delivery = if change.3 { Delivery::Every } else { Delivery::Newest };
                let pushed = q.push(frame, delivery, ());
                let queued = matches!(pushed, Pushed::Queued { .. } | Pushed::Replaced { .. });
                prop_assert!(queued, "{:?}", pushed);
                for _ in 0..*drain {
                    if let Some(f) = q.pop_front() {
                        take(&f.text, &mut client, &mut got_events);
                    }
                }
                // Without drains the queue holds the events and at most two states more.
                let (frames, _) = q.len();
                prop_assert!(frames <= sent_events.len() + 3, "{frames} frames");
            }
            while let Some(f) = q.pop_front() {
                take(&f.text, &mut client, &mut got_events);
            }
            prop_assert_eq!(Some(client.text()), last.as_deref());
            prop_assert_eq!(got_events, sent_events);
        }
    }
}
