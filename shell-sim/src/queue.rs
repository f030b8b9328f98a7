//! The event queue: events ordered by (time, sequence number), so two events at the
//! same instant run in the order they were scheduled and every run is reproducible.

use std::collections::BTreeMap;

use wizard_core::Time;

/// A priority queue of events keyed by (time, insertion sequence).
#[derive(Debug)]
pub struct EventQueue<E> {
    events: BTreeMap<(Time, u64), E>,
    seq: u64,
    len_max: usize,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            events: BTreeMap::new(),
            seq: 0,
            len_max: 0,
        }
    }
}

impl<E> EventQueue<E> {
    /// Schedules `event` at `at`.
    pub fn push(&mut self, at: Time, event: E) {
        self.seq += 1;
        self.events.insert((at, self.seq), event);
        self.len_max = self.len_max.max(self.events.len());
    }

    /// The earliest event, removed.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.events.pop_first().map(|((t, _), e)| (t, e))
    }

    pub fn peek_time(&self) -> Option<Time> {
        self.events.keys().next().map(|(t, _)| *t)
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The most events that were ever waiting at once.
    pub fn len_max(&self) -> usize {
        self.len_max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_keeps_insertion_order() {
        let mut q = EventQueue::default();
        q.push(Time(5), "b");
        q.push(Time(1), "a");
        q.push(Time(5), "c");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ["a", "b", "c"]);
    }
}
