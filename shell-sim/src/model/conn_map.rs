//! A table keyed by connection id. The simulator hands out ids in order from 1, so a
//! slot per id beats a search tree on the hot path (several lookups per routed frame).
//! Iteration is in id order, as a `BTreeMap`'s would be, so runs stay reproducible.
//! Slots of ids below the oldest live connection are dropped, so the table holds the
//! span of ids between the oldest and the newest open connection.

use std::collections::VecDeque;

use wizard_core::vocabulary::io::ConnId;

#[derive(Clone, Debug)]
pub struct ConnMap<T> {
    /// The number of the id of `slots[0]` (a slot's index is an offset from it).
    base: u64,
    slots: VecDeque<Option<T>>,
    len: usize,
}

impl<T> Default for ConnMap<T> {
    fn default() -> Self {
        ConnMap {
            base: 0,
            slots: VecDeque::new(),
            len: 0,
        }
    }
}

impl<T> ConnMap<T> {
    fn index(&self, conn: ConnId) -> Option<usize> {
        usize::try_from(conn.0.checked_sub(self.base)?).ok()
    }

    pub fn get(&self, conn: &ConnId) -> Option<&T> {
        self.slots.get(self.index(*conn)?)?.as_ref()
    }

    pub fn get_mut(&mut self, conn: &ConnId) -> Option<&mut T> {
        let i = self.index(*conn)?;
        self.slots.get_mut(i)?.as_mut()
    }

    pub fn contains_key(&self, conn: &ConnId) -> bool {
        self.get(conn).is_some()
    }

    /// Puts `value` at `conn`; returns what was there.
    pub fn insert(&mut self, conn: ConnId, value: T) -> Option<T> {
        if self.len == 0 {
            self.slots.clear();
            self.base = conn.0;
        }
        while conn.0 < self.base {
            self.slots.push_front(None);
            self.base -= 1;
        }
        let i = self.index(conn).unwrap_or(usize::MAX);
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        let old = self.slots[i].replace(value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub fn remove(&mut self, conn: &ConnId) -> Option<T> {
        let i = self.index(*conn)?;
        let old = self.slots.get_mut(i)?.take();
        if old.is_some() {
            self.len -= 1;
            while matches!(self.slots.front(), Some(None)) {
                self.slots.pop_front();
                self.base += 1;
            }
            while matches!(self.slots.back(), Some(None)) {
                self.slots.pop_back();
            }
        }
        old
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries in id order.
    pub fn iter(&self) -> impl Iterator<Item = (ConnId, &T)> {
        let base = self.base;
        self.slots
            .iter()
            .enumerate()
            .filter_map(move |(i, s)| Some((ConnId(base + i as u64), s.as_ref()?)))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The same operations on a `ConnMap` and a `BTreeMap` give the same answers.
        #[test]
        fn behaves_as_a_btreemap(ops in prop::collection::vec((0u8..3, 1u64..40), 0..200)) {
            let mut m = ConnMap::default();
            let mut b = BTreeMap::new();
            for (i, (op, conn)) in ops.into_iter().enumerate() {
                let conn = ConnId(conn);
                match op {
                    0 => prop_assert_eq!(m.insert(conn, i), b.insert(conn, i)),
                    1 => prop_assert_eq!(m.remove(&conn), b.remove(&conn)),
                    _ => prop_assert_eq!(m.get(&conn), b.get(&conn)),
                }
                prop_assert_eq!(m.len(), b.len());
                let listed: Vec<_> = m.iter().map(|(k, v)| (k, *v)).collect();
                let expected: Vec<_> = b.iter().map(|(k, v)| (*k, *v)).collect();
                prop_assert_eq!(listed, expected);
            }
        }
    }
}
