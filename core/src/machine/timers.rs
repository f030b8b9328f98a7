//! A set of named deadlines: the server folds every sub-machine's deadline into one
//! ordered set so `poll_timeout` is O(log n) however many lobbies and requests wait.

use std::collections::{BTreeMap, BTreeSet};

use crate::vocabulary::time::Time;

/// The grid, in microseconds since the server's start, on which the shells wake for
/// the core's deadlines: deadlines that fall close together (the delayed moves of many
/// AI seats, each after its own `AI_MOVE_DELAY`) share one wake-up instead of one each.
/// A deadline fires up to this much late, which every deadline of the core tolerates:
/// each is re-checked when the `Timeout` comes, and they are pauses for players' eyes
/// (`AI_MOVE_DELAY`, `TRICK_PAUSE`), limits of seconds (AI decisions, handshakes,
/// turns, sessions) or housekeeping. A delay set to 0 is due at once and not moved.
pub const WAKE_GRID_US: u64 = 5_000;

/// When a shell should wake for the core's `deadline`, seen at `now`: at once when it
/// is due, else at the first point of [`WAKE_GRID_US`]'s grid at or after it.
pub fn wake_at(deadline: Time, now: Time) -> Time {
    if deadline <= now {
        return now;
    }
    Time(
        deadline
            .0
            .div_ceil(WAKE_GRID_US)
            .saturating_mul(WAKE_GRID_US),
    )
}

/// Deadlines keyed by `K`; each key has at most one deadline.
#[derive(Clone, Debug)]
pub struct Timers<K: Ord + Clone> {
    by_key: BTreeMap<K, Time>,
    by_time: BTreeSet<(Time, K)>,
}

impl<K: Ord + Clone> Default for Timers<K> {
    fn default() -> Self {
        Timers {
            by_key: BTreeMap::new(),
            by_time: BTreeSet::new(),
        }
    }
}

impl<K: Ord + Clone> Timers<K> {
    /// Sets (or moves) the deadline of `key`.
    pub fn set(&mut self, key: K, at: Time) {
        if let Some(old) = self.by_key.insert(key.clone(), at) {
            self.by_time.remove(&(old, key.clone()));
        }
        self.by_time.insert((at, key));
    }

    /// Removes the deadline of `key`, if any.
    pub fn cancel(&mut self, key: &K) {
        if let Some(old) = self.by_key.remove(key) {
            self.by_time.remove(&(old, key.clone()));
        }
    }

    /// The deadline of `key`, if it has one.
    pub fn at(&self, key: &K) -> Option<Time> {
        self.by_key.get(key).copied()
    }

    /// Every deadline in time order, earliest first.
    pub fn iter(&self) -> impl Iterator<Item = (Time, &K)> {
        self.by_time.iter().map(|(t, k)| (*t, k))
    }

    /// The earliest deadline and its key.
    pub fn next(&self) -> Option<(Time, &K)> {
        self.by_time.first().map(|(t, k)| (*t, k))
    }

    /// Removes and returns the earliest key whose deadline is at or before `now`.
    pub fn pop_due(&mut self, now: Time) -> Option<K> {
        let (at, _) = self.by_time.first()?;
        if *at > now {
            return None;
        }
        let (_, key) = self.by_time.pop_first()?;
        self.by_key.remove(&key);
        Some(key)
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}
