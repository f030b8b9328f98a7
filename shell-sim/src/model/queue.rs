//! The event queue: events ordered by (time, sequence number), so two events at the
//! same instant run in the order they were scheduled and every run is reproducible.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use wizard_core::Time;

/// A priority queue of events keyed by (time, insertion sequence). A binary heap: the
/// keys are unique, so the order is total and the same in every run, and a push or pop
/// moves a few entries instead of rebalancing tree nodes.
#[derive(Debug)]
pub struct EventQueue<E> {
    events: BinaryHeap<Reverse<Entry<E>>>,
    seq: u64,
    len_max: usize,
}

/// One scheduled event; ordered by its key alone.
#[derive(Debug)]
struct Entry<E> {
    at: Time,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            events: BinaryHeap::new(),
            seq: 0,
            len_max: 0,
        }
    }
}

impl<E> EventQueue<E> {
    /// Schedules `event` at `at`.
    pub fn push(&mut self, at: Time, event: E) {
        self.seq += 1;
        self.events.push(Reverse(Entry {
            at,
            seq: self.seq,
            event,
        }));
        self.len_max = self.len_max.max(self.events.len());
    }

    /// The earliest event, removed.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.events.pop().map(|Reverse(e)| (e.at, e.event))
    }

    /// Keeps only the events `keep` says yes to (a process killed: what it would still
    /// have done never happens). Rebuilds the heap: for rare, whole-world changes.
    pub fn retain(&mut self, mut keep: impl FnMut(Time, &E) -> bool) {
        let events = std::mem::take(&mut self.events);
        self.events = events
            .into_iter()
            .filter(|Reverse(e)| keep(e.at, &e.event))
            .collect();
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

    #[test]
    fn retain_keeps_the_order_of_what_stays() {
        let mut q = EventQueue::default();
        for (at, e) in [(5, "b"), (1, "a"), (5, "x"), (5, "c"), (2, "y")] {
            q.push(Time(at), e);
        }
        q.retain(|_, e| !matches!(*e, "x" | "y"));
        q.push(Time(5), "d");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ["a", "b", "c", "d"]);
    }
}
