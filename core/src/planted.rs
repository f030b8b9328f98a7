//! Bugs planted on purpose, to show that the simulator's checkers catch each kind:
//! compiled only with the test-only feature `planted-bugs` (never in a release build:
//! the crate refuses to compile it without debug assertions), and off until a test
//! harness picks one with [`plant`]. Each hook is a `cfg`-gated line beside the code it
//! breaks; `shell-sim/planted-bugs.sh` plants each in turn and runs the swarm.

use std::sync::atomic::{AtomicU8, Ordering};

/// The bugs there are to plant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Bug {
    /// A met bid scores 10 points too many for the first seat (`game/rules.rs`).
    WrongScore = 1,
    /// The third trick of a round completes without its `trick_completed` event.
    LostEvent = 2,
    /// A broadcast with a `trick_completed` event skips the second seat.
    MissedBroadcast = 3,
    /// The first seat's hand shows the next seat's first card as well.
    HandLeak = 4,
    /// Hidden bids show in every seat's view while bidding runs.
    HiddenBidLeak = 5,
    /// A `state` with events is marked replaceable (`Delivery::Newest`).
    EventsReplaceable = 6,
    /// A chat line skips the first connection of its lobby.
    ChatLost = 7,
    /// A killed process's store loses its last commit (the hook is in the simulator's
    /// store, `shell-sim/src/host/restart.rs`: the core only names it).
    LostCommit = 8,
}

impl Bug {
    pub const ALL: [Bug; 8] = [
        Bug::WrongScore,
        Bug::LostEvent,
        Bug::MissedBroadcast,
        Bug::HandLeak,
        Bug::HiddenBidLeak,
        Bug::EventsReplaceable,
        Bug::ChatLost,
        Bug::LostCommit,
    ];

    /// The name a harness selects it by.
    pub fn name(self) -> &'static str {
        match self {
            Bug::WrongScore => "wrong_score",
            Bug::LostEvent => "lost_event",
            Bug::MissedBroadcast => "missed_broadcast",
            Bug::HandLeak => "hand_leak",
            Bug::HiddenBidLeak => "hidden_bid_leak",
            Bug::EventsReplaceable => "events_replaceable",
            Bug::ChatLost => "chat_lost",
            Bug::LostCommit => "lost_commit",
        }
    }

    pub fn from_name(name: &str) -> Option<Bug> {
        Bug::ALL.into_iter().find(|b| b.name() == name)
    }
}

/// The planted bug (0: none), for the whole process: a harness plants one before its
/// runs, never while the core runs.
static PLANTED: AtomicU8 = AtomicU8::new(0);

/// Plants `bug` (`None`: none) for every later step of every server in the process.
pub fn plant(bug: Option<Bug>) {
    PLANTED.store(bug.map_or(0, |b| b as u8), Ordering::Relaxed);
}

/// Whether `bug` is planted.
pub fn planted(bug: Bug) -> bool {
    PLANTED.load(Ordering::Relaxed) == bug as u8
}

/// [`Bug::WrongScore`]: the first seat's met bid scores 10 more.
pub(crate) fn wrong_score(mut deltas: Vec<i32>, bids: &[u8], tricks: &[u8]) -> Vec<i32> {
    if planted(Bug::WrongScore)
        && bids.first() == tricks.first()
        && let Some(d) = deltas.first_mut()
    {
        *d += 10;
    }
    deltas
}

/// [`Bug::HandLeak`]: seat 0's hand with the next seat's first card added.
pub(crate) fn hand_leak(
    game: &crate::vocabulary::game::Game,
    seat: u8,
) -> Option<Vec<crate::vocabulary::game::Card>> {
    if !planted(Bug::HandLeak) || seat != 0 {
        return None;
    }
    let mut hand = game.hand(seat).to_vec();
    hand.extend(game.hand(1).first().copied());
    Some(hand)
}

/// [`Bug::MissedBroadcast`]: the broadcast carries a completed trick.
pub(crate) fn missed_broadcast(events: &[crate::vocabulary::game::Event]) -> bool {
    planted(Bug::MissedBroadcast)
        && events
            .iter()
            .any(|e| matches!(e, crate::vocabulary::game::Event::TrickCompleted { .. }))
}

/// [`Bug::LostEvent`]: the round's third trick loses its `trick_completed` event (the
/// last event pushed).
pub(crate) fn lost_event(events: &mut Vec<crate::vocabulary::game::Event>, tricks_won: &[u8]) {
    if planted(Bug::LostEvent) && tricks_won.iter().map(|&t| u32::from(t)).sum::<u32>() == 3 {
        events.pop();
    }
}

/// [`Bug::ChatLost`]: the first of a chat line's frames (pushed from `first` on) is
/// dropped.
pub(crate) fn chat_lost(out: &mut Vec<crate::vocabulary::io::Output>, first: usize) {
    if planted(Bug::ChatLost) && first < out.len() {
        out.remove(first);
    }
}
