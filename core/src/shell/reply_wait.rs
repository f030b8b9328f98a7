//! When an answer of the in-process AI service may wake the core task: only once the
//! core can use it.
//!
//! An AI seat's request goes out when its turn starts, but its move is applied no
//! earlier than `AI_MOVE_DELAY` later (or the end of a trick's `TRICK_PAUSE`, and never
//! after the request's deadline): that instant is the request's `needed_at`
//! ([`crate::vocabulary::io::Output::AiRequest`]). An answer that comes sooner, as nearly all do,
//! waits in the link's queue and is read at the core's next pass, which comes by
//! `needed_at` at the latest, because the shell looks at the link then
//! ([`ReplyWait::next_look`]). Only while some answer is needed already (no delay, or
//! the service is late) does an arriving answer wake the core
//! ([`ReplyWait::wake_on_answer`]). So the embedded AI costs the core task no wake-up of
//! its own per decision, and its workers are not preempted once per answer.
//!
//! The moves are applied when they would have been: an answer read later, but before
//! `needed_at`, changes nothing a player sees.
//!
//! Bounded: one entry per request waiting for its answer, at most [`REPLY_WAITS_MAX`];
//! beyond that the entry needed first is forgotten, and its answer then wakes the core
//! as every answer did before this rule.

use std::collections::{BTreeMap, BTreeSet};

use crate::vocabulary::time::Time;

/// Requests remembered at most (the bridge's `AI_MAX_INFLIGHT` bounds them first).
pub const REPLY_WAITS_MAX: usize = 1 << 16;

/// The requests of the in-process link that wait for their answer, by when it is needed.
#[derive(Clone, Debug, Default)]
pub struct ReplyWait {
    by_id: BTreeMap<u64, Time>,
    by_time: BTreeSet<(Time, u64)>,
    /// Entries forgotten at [`REPLY_WAITS_MAX`]: their answers wake the core.
    forgotten: usize,
}

impl ReplyWait {
    /// Request `request_id` went to the link; its answer is needed at `needed_at`.
    pub fn asked(&mut self, request_id: u64, needed_at: Time) {
        if self.by_id.len() >= REPLY_WAITS_MAX
            && let Some((_, id)) = self.by_time.pop_first()
        {
            self.by_id.remove(&id);
            self.forgotten += 1;
        }
        self.by_id.insert(request_id, needed_at);
        self.by_time.insert((needed_at, request_id));
    }

    /// The answer to `request_id` was read from the link (every answer read must be to
    /// a request [`ReplyWait::asked`] since the last [`ReplyWait::clear`]).
    pub fn answered(&mut self, request_id: u64) {
        if let Some(t) = self.by_id.remove(&request_id) {
            self.by_time.remove(&(t, request_id));
        } else if self.forgotten > 0 {
            self.forgotten -= 1;
        }
    }

    /// Forgets every request (the link is gone).
    pub fn clear(&mut self) {
        *self = ReplyWait::default();
    }

    /// Whether an answer arriving at `now` should wake the core: one is needed by now
    /// (or was forgotten).
    pub fn wake_on_answer(&self, now: Time) -> bool {
        self.forgotten > 0 || self.by_time.first().is_some_and(|(t, _)| *t <= now)
    }

    /// When the shell should read the link if nothing else wakes the core before: the
    /// first `needed_at` still ahead of `now` (None when none is, or when answers wake
    /// the core anyway).
    pub fn next_look(&self, now: Time) -> Option<Time> {
        if self.wake_on_answer(now) {
            return None;
        }
        self.by_time.first().map(|(t, _)| *t)
    }

    /// Requests waiting for their answer.
    pub fn len(&self) -> usize {
        self.by_id.len() + self.forgotten
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
