//! The outbound queue's rule (`outqueue::OutQueue`), as both shells queue frames:
//! replaceable states coalesce, other frames keep their order, limits in frames and
//! bytes overflow the queue, and nothing is queued after a close or an overflow.

use wizard_core::outqueue::{OutQueue, Pushed};
use wizard_core::wire::CloseCode;

/// One step of a script: push (text, replaceable) or close.
enum Step {
    Push(&'static str, bool, Pushed),
    Close(CloseCode),
}
use Step::*;

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
                    let got = q.push((*text).to_owned(), *replaceable, k);
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
        q.push(text.to_owned(), false, k);
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
