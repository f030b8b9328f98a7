//! The hand-off between the core task and a store's writer thread, written once for the
//! SQLite and the PostgreSQL store: the core task queues records under one lock (waiting
//! only while the queue is full), asks for flushes and stops the writer; the writer
//! waits for its turn, takes what is queued, and says when a turn is done or the store
//! failed. What is queued, and when a turn is due, is each store's own (`Q` and the
//! predicates passed in).

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// What the core task and the writer share, under [`Handoff`]'s lock.
#[derive(Debug)]
pub(crate) struct Front<Q> {
    /// The store's queue of records not yet taken by the writer.
    pub queue: Q,
    /// The sequence number of the next record committed.
    pub next_seq: u64,
    /// [`Handoff::flush`] calls made, and writer turns finished that took everything
    /// queued before them.
    flushes_asked: u64,
    flushes_done: u64,
    stop: bool,
    /// Why the store stopped working: every later commit and flush fails with it.
    failed: Option<String>,
    /// The flushes up to this one were answered by a turn that failed, and why (the
    /// store tries again: a later turn that succeeds clears it).
    unflushed: Option<(u64, String)>,
}

impl<Q> Front<Q> {
    /// Marks the store failed; the first reason stays.
    pub fn fail(&mut self, why: String) {
        self.failed.get_or_insert(why);
    }

    pub fn failed(&self) -> Option<&String> {
        self.failed.as_ref()
    }

    /// The writer was told to stop: this is its last turn.
    pub fn stopping(&self) -> bool {
        self.stop
    }

    /// The flushes that what the writer takes now answers, once its turn is done.
    pub fn flushes_asked(&self) -> u64 {
        self.flushes_asked
    }
}

/// The lock over [`Front`] and its two wake-ups.
#[derive(Debug)]
pub(crate) struct Handoff<Q> {
    front: Mutex<Front<Q>>,
    /// Wakes the writer early: records queued, a flush, the stop.
    wake: Condvar,
    /// The writer took the queue, finished a turn, or the store failed.
    progress: Condvar,
}

impl<Q> Handoff<Q> {
    pub fn new(queue: Q, next_seq: u64) -> Handoff<Q> {
        Handoff {
            front: Mutex::new(Front {
                queue,
                next_seq,
                flushes_asked: 0,
                flushes_done: 0,
                stop: false,
                failed: None,
                unflushed: None,
            }),
            wake: Condvar::new(),
            progress: Condvar::new(),
        }
    }

    /// The lock (a panic while it was held leaves the data as it was: every change
    /// under it is made whole before anything that can panic).
    pub fn lock(&self) -> MutexGuard<'_, Front<Q>> {
        self.front.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The core task's lock for a commit: waits while `full` says the queue is full
    /// (waking the writer to take it), and fails once the store failed.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub fn lock_for_commit(
        &self,
        full: impl Fn(&Q) -> bool,
    ) -> Result<MutexGuard<'_, Front<Q>>, String> {
        let front = self.wait_progress(self.lock(), |f| full(&f.queue));
        match &front.failed {
            Some(e) => Err(e.clone()),
            None => Ok(front),
        }
    }

    /// Wakes the writer before its time (call it without holding the lock).
    pub fn wake_writer(&self) {
        self.wake.notify_one();
    }

    /// Has the writer take everything queued so far, and waits until that turn is
    /// done or the store failed.
    pub fn flush(&self) -> Result<(), String> {
        let mut front = self.lock();
        front.flushes_asked += 1;
        let asked = front.flushes_asked;
        let front = self.wait_progress(front, |f| f.flushes_done < asked);
        if let Some(e) = &front.failed {
            return Err(e.clone());
        }
        match &front.unflushed {
            Some((through, e)) if asked <= *through => Err(e.clone()),
            _ => Ok(()),
        }
    }

    /// Wakes the writer and waits for its progress while `pending` holds and the
    /// store has not failed.
    fn wait_progress<'a>(
        &self,
        mut front: MutexGuard<'a, Front<Q>>,
        pending: impl Fn(&Front<Q>) -> bool,
    ) -> MutexGuard<'a, Front<Q>> {
        while front.failed.is_none() && pending(&front) {
            self.wake.notify_one();
            front = self
                .progress
                .wait(front)
                .unwrap_or_else(PoisonError::into_inner);
        }
        front
    }

    /// Tells the writer to take what is queued one last time and stop.
    pub fn stop(&self) {
        self.lock().stop = true;
        self.wake.notify_one();
    }

    /// The writer's wait for its turn: until `until`, the stop, a flush asked, or
    /// `due` says the queue should be taken now. Returns the lock, for the writer to
    /// take the queue; then it calls [`Handoff::taken`].
    pub fn wait_turn(&self, until: Instant, due: impl Fn(&Q) -> bool) -> MutexGuard<'_, Front<Q>> {
        let mut front = self.lock();
        loop {
            let now = Instant::now();
            if front.stop
                || front.flushes_asked > front.flushes_done
                || due(&front.queue)
                || now >= until
            {
                return front;
            }
            front = self
                .wake
                .wait_timeout(front, until - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The writer took the queue: a commit waiting for room may go on.
    pub fn taken(&self) {
        self.progress.notify_all();
    }

    /// The writer's turn that answers the flushes up to `asked` is over, with `result`
    /// (an error fails the store for good).
    pub fn turn_done(&self, asked: u64, result: Result<(), String>) {
        let mut front = self.lock();
        match result {
            Err(e) => front.fail(e),
            Ok(()) => front.unflushed = None,
        }
        front.flushes_done = front.flushes_done.max(asked);
        drop(front);
        self.progress.notify_all();
    }

    /// The writer's turn that answers the flushes up to `asked` failed with `why`, and
    /// will be tried again: those flushes fail, the store goes on.
    pub fn turn_failed_for_now(&self, asked: u64, why: String) {
        let mut front = self.lock();
        front.unflushed = Some((asked, why));
        front.flushes_done = front.flushes_done.max(asked);
        drop(front);
        self.progress.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    /// A writer thread that takes a `Vec` queue whenever it is woken, like the stores'.
    fn writer(
        h: Arc<Handoff<Vec<u32>>>,
        fail_on: Option<u32>,
    ) -> std::thread::JoinHandle<Vec<u32>> {
        std::thread::spawn(move || {
            let mut written = Vec::new();
            loop {
                let far = Instant::now() + Duration::from_secs(3600);
                let mut front = h.wait_turn(far, |q| !q.is_empty());
                let taken = std::mem::take(&mut front.queue);
                let (asked, stop) = (front.flushes_asked(), front.stopping());
                drop(front);
                h.taken();
                let result = match fail_on {
                    Some(bad) if taken.contains(&bad) => Err(format!("cannot write {bad}")),
                    _ => Ok(()),
                };
                let failed = result.is_err();
                written.extend(taken);
                h.turn_done(asked, result);
                if stop || failed {
                    return written;
                }
            }
        })
    }

    fn commit(h: &Handoff<Vec<u32>>, x: u32) -> Result<(), String> {
        let mut front = h.lock_for_commit(|q| q.len() >= 2)?;
        front.queue.push(x);
        front.next_seq += 1;
        drop(front);
        h.wake_writer();
        Ok(())
    }

    #[test]
    fn a_flush_returns_once_everything_before_it_is_taken_and_the_stop_takes_the_rest() {
        let h = Arc::new(Handoff::new(Vec::new(), 1));
        let w = writer(Arc::clone(&h), None);
        for x in 0..50 {
            commit(&h, x).unwrap();
            if x % 10 == 9 {
                h.flush().unwrap();
                assert!(h.lock().queue.is_empty(), "flushed after {x}");
            }
        }
        commit(&h, 50).unwrap();
        h.stop();
        assert_eq!(w.join().unwrap(), (0..=50).collect::<Vec<_>>());
        assert_eq!(h.lock().next_seq, 52);
    }

    #[test]
    fn a_failed_turn_fails_every_later_commit_and_flush_with_its_first_reason() {
        let h = Arc::new(Handoff::new(Vec::new(), 1));
        let w = writer(Arc::clone(&h), Some(3));
        for x in 0..4 {
            commit(&h, x).unwrap();
        }
        assert_eq!(h.flush(), Err("cannot write 3".to_string()));
        w.join().unwrap();
        h.lock().fail("a later reason".to_string());
        assert_eq!(commit(&h, 9), Err("cannot write 3".to_string()));
        assert_eq!(h.flush(), Err("cannot write 3".to_string()));
    }
}
