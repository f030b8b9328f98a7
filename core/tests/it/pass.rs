//! One pass of the core loop (`wizard_core::shell::pass`): the bound on inputs per
//! source, the one `now`, the trailing `Timeout` and the next wake-up on the grid, from
//! tables of cases.

use std::collections::VecDeque;

use wizard_core::Time;
use wizard_core::shell::pass::{
    BATCH_INPUTS_MAX, Deadline, Pass, WAKE_GRID_US, due, first_wake, next_wake,
};
use wizard_core::shell::reply_wait::ReplyWait;
use wizard_core::vocabulary::io::{Input, WakeReason};

const G: u64 = WAKE_GRID_US;

#[test]
fn a_source_gives_a_pass_at_most_the_bound_and_keeps_the_rest_queued() {
    // (queued, handled, left queued)
    let cases = [
        (0, 0, 0),
        (1, 1, 0),
        (BATCH_INPUTS_MAX - 1, BATCH_INPUTS_MAX - 1, 0),
        (BATCH_INPUTS_MAX, BATCH_INPUTS_MAX, 0),
        (BATCH_INPUTS_MAX + 1, BATCH_INPUTS_MAX, 1),
        (
            3 * BATCH_INPUTS_MAX + 7,
            BATCH_INPUTS_MAX,
            2 * BATCH_INPUTS_MAX + 7,
        ),
    ];
    for (queued, handled, left) in cases {
        let mut queue: VecDeque<usize> = (0..queued).collect();
        let mut asked = 0;
        let mut seen: Vec<(Time, usize)> = Vec::new();
        let pass = Pass::begin(Time(77));
        let n = pass.drain(
            &mut queue,
            |q| {
                asked += 1;
                q.pop_front()
            },
            |_, now, input| seen.push((now, input)),
        );
        assert_eq!(n, handled, "queued {queued}");
        assert_eq!(queue.len(), left, "queued {queued}");
        // In order, all at the pass's one instant.
        let expected: Vec<(Time, usize)> = (0..handled).map(|i| (Time(77), i)).collect();
        assert_eq!(seen, expected, "queued {queued}");
        // The source is asked once more only when it ran dry before the bound.
        let extra = usize::from(handled < BATCH_INPUTS_MAX);
        assert_eq!(asked, handled + extra, "queued {queued}");
        assert_eq!(
            queue.front().copied(),
            (left > 0).then_some(handled),
            "queued {queued}"
        );
    }
}

#[test]
fn two_sources_each_get_their_own_bound_at_the_same_now() {
    let mut inbox: VecDeque<u32> = (0..(BATCH_INPUTS_MAX as u32 + 5)).collect();
    let mut answers: VecDeque<u32> = (0..3).collect();
    let pass = Pass::begin(Time(9));
    let mut at = Vec::new();
    let a = pass.drain(&mut inbox, VecDeque::pop_front, |_, now, _| at.push(now));
    let b = pass.drain(&mut answers, VecDeque::pop_front, |_, now, _| at.push(now));
    assert_eq!((a, b), (BATCH_INPUTS_MAX, 3));
    assert_eq!((inbox.len(), answers.len()), (5, 0));
    assert!(at.iter().all(|t| *t == pass.now()));
    assert_eq!(at.len(), BATCH_INPUTS_MAX + 3);
}

#[test]
fn the_trailing_timeout_comes_exactly_when_the_deadline_is_due() {
    // (deadline, now, due)
    let cases: [(Option<u64>, u64, bool); 6] = [
        (None, 0, false),
        (None, 1_000, false),
        (Some(1_000), 999, false),
        (Some(1_000), 1_000, true),
        (Some(1_000), 1_001, true),
        (Some(0), 0, true),
    ];
    for (deadline, now, expected) in cases {
        let deadline: Deadline = deadline.map(|t| (Time(t), WakeReason::Turn));
        let pass = Pass::begin(Time(now));
        assert_eq!(due(deadline, Time(now)), expected, "{deadline:?} at {now}");
        let timeout = pass.timeout(deadline);
        assert_eq!(
            matches!(timeout, Some(Input::Timeout)),
            expected,
            "{deadline:?} at {now}"
        );
        assert_eq!(timeout.is_some(), expected, "{deadline:?} at {now}");
    }
}

#[test]
fn the_next_wake_is_the_first_deadline_rounded_up_to_the_grid() {
    // (now, deadlines, wake)
    let cases: [(u64, [Option<u64>; 2], Option<u64>); 9] = [
        (0, [None, None], None),
        (0, [Some(1), None], Some(G)),
        (0, [None, Some(G)], Some(G)),
        (0, [Some(G + 1), Some(3 * G)], Some(2 * G)),
        (0, [Some(3 * G), Some(G + 1)], Some(2 * G)),
        // Due already: at once, not on the grid.
        (G + 7, [Some(G), Some(5 * G)], Some(G + 7)),
        (G + 7, [Some(9 * G), Some(G + 7)], Some(G + 7)),
        // Both in the same step of the grid: one wake-up.
        (0, [Some(2 * G - 3), Some(2 * G - 1)], Some(2 * G)),
        (10 * G, [Some(10 * G + 1), None], Some(11 * G)),
    ];
    for (now, deadlines, wake) in cases {
        let got = first_wake(Time(now), deadlines.map(|d| d.map(Time)));
        assert_eq!(got, wake.map(Time), "{deadlines:?} at {now}");
        // Rounding each then taking the first is rounding the first.
        let first = deadlines.iter().flatten().min().copied();
        let rounded_first = first_wake(Time(now), [first.map(Time)]);
        assert_eq!(got, rounded_first, "{deadlines:?} at {now}");
    }
}

#[test]
fn the_next_wake_folds_the_core_deadline_with_the_answer_needed_first() {
    // (now, core deadline, requests asked (id, needed_at), wake)
    type Case<'a> = (u64, Option<u64>, &'a [(u64, u64)], Option<u64>);
    let cases: [Case; 6] = [
        (0, None, &[], None),
        (0, Some(3 * G + 1), &[], Some(4 * G)),
        (0, None, &[(1, G + 2)], Some(2 * G)),
        (0, Some(3 * G + 1), &[(1, G + 2), (2, 9 * G)], Some(2 * G)),
        (0, Some(G - 1), &[(1, G + 2)], Some(G)),
        // An answer needed already wakes the core when it comes: no look is planned.
        (5 * G, Some(8 * G), &[(1, 4 * G)], Some(8 * G)),
    ];
    for (now, deadline, asked, wake) in cases {
        let mut replies = ReplyWait::default();
        for (id, needed_at) in asked {
            replies.asked(*id, Time(*needed_at));
        }
        let deadline: Deadline = deadline.map(|t| (Time(t), WakeReason::Sweep));
        assert_eq!(
            next_wake(deadline, &replies, Time(now)),
            wake.map(Time),
            "{deadline:?} {asked:?} at {now}"
        );
    }
}
