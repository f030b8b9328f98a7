//! One pass of a shell's core loop, written once for every shell.
//!
//! After a wake-up a shell's core loop runs one pass at one `now`:
//!
//! 1. [`Pass::begin`] takes the clock's reading once: every input of the pass is
//!    handled at [`Pass::now`].
//! 2. The wake-up's own input, if any, then each source of queued inputs through
//!    [`Pass::drain`], which takes at most [`BATCH_INPUTS_MAX`] from one source, so that
//!    a flood of inputs cannot delay every send indefinitely.
//! 3. [`Pass::timeout`]: one trailing [`Input::Timeout`] when the core's next deadline
//!    is due by `now`.
//! 4. The shell's own hooks: it takes the pass's records (`Server::take_records`) and
//!    commits them before it routes the pass's outputs, so that nothing is
//!    acknowledged that a restart would forget; then it routes the outputs, each
//!    connection's writer woken once per pass.
//! 5. [`next_wake`]: when to wake if no input comes first, on the [`WAKE_GRID_US`]
//!    grid: the fold of `Server::poll_timeout` with the first answer of the in-process
//!    AI the core will need ([`ReplyWait::next_look`]).
//!
//! The queue in front of the loop holds at most [`INBOX_CAPACITY`] inputs; a reader
//! whose input finds it full waits (backpressure on the readers, not unbounded
//! memory). What stays each shell's: how it waits, how it times or costs each
//! `Server::handle` (the `handle` hook of [`Pass::drain`]), what it observes, and how
//! it holds frames for a store that makes commits durable later.
//!
//! The pass takes the server's deadline as `Server::poll_timeout` returns it, so this
//! contract does not depend on the machine.

use crate::shell::reply_wait::ReplyWait;
use crate::vocabulary::io::{Input, WakeReason};
use crate::vocabulary::time::{Time, wake_at};

pub use crate::vocabulary::time::WAKE_GRID_US;

/// Inputs one source gives a pass at most before outputs are routed, so that a flood
/// of inputs cannot delay every send indefinitely.
pub const BATCH_INPUTS_MAX: usize = 1024;
/// Capacity of the core loop's inbox; readers wait when it is full.
pub const INBOX_CAPACITY: usize = 4096;

/// What `Server::poll_timeout` returns: the core's next deadline and why.
pub type Deadline = Option<(Time, WakeReason)>;

/// One pass of the core loop, at its one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    now: Time,
}

impl Pass {
    /// A pass at `now`, the instant all its inputs are handled at.
    pub fn begin(now: Time) -> Pass {
        Pass { now }
    }

    /// The pass's one instant.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Takes queued inputs from one source with `next` and handles each with `handle`
    /// at the pass's `now`, [`BATCH_INPUTS_MAX`] at most: `next` is not asked again
    /// once the bound is reached, so what is left stays queued for the next pass. Both
    /// get `shell` (the shell's state), so each may borrow it mutably in turn. Returns
    /// how many inputs were handled.
    pub fn drain<S: ?Sized, T>(
        &self,
        shell: &mut S,
        mut next: impl FnMut(&mut S) -> Option<T>,
        mut handle: impl FnMut(&mut S, Time, T),
    ) -> usize {
        let mut taken = 0;
        while taken < BATCH_INPUTS_MAX {
            let Some(input) = next(shell) else {
                break;
            };
            handle(shell, self.now, input);
            taken += 1;
        }
        taken
    }

    /// The pass's trailing [`Input::Timeout`], when `deadline` (the server's
    /// `poll_timeout` after the pass's other inputs) is due by the pass's `now`.
    pub fn timeout(&self, deadline: Deadline) -> Option<Input> {
        due(deadline, self.now).then_some(Input::Timeout)
    }
}

/// Whether `deadline` (the server's `poll_timeout`) is due at `now`.
pub fn due(deadline: Deadline, now: Time) -> bool {
    deadline.is_some_and(|(t, _)| t <= now)
}

/// When a shell should wake next, seen at `now`, if no input comes first: the core's
/// `deadline` (its `poll_timeout`) or the first answer of the in-process AI the core
/// will need (`replies`), whichever is first, on the [`WAKE_GRID_US`] grid. None when
/// neither is pending.
pub fn next_wake(deadline: Deadline, replies: &ReplyWait, now: Time) -> Option<Time> {
    first_wake(now, [deadline.map(|(t, _)| t), replies.next_look(now)])
}

/// The first of `deadlines` seen at `now`, on the grid ([`wake_at`]): one due already
/// is `now`. Rounding up to the grid keeps the order, so this is the first deadline,
/// rounded.
pub fn first_wake(now: Time, deadlines: impl IntoIterator<Item = Option<Time>>) -> Option<Time> {
    deadlines
        .into_iter()
        .flatten()
        .map(|d| wake_at(d, now))
        .min()
}
