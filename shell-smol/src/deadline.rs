//! A deadline kept by one task across its loop: one async-io timer, moved only when the
//! deadline moves. Registering an async-io timer wakes the reactor through its eventfd
//! (a write, then a read and a re-arm), so a new timer at every turn of a loop costs
//! system calls on every wake-up; the core task and every connection's writer keep one
//! of these instead.

use std::time::Instant;

use async_io::Timer;

#[derive(Debug)]
pub struct Deadline {
    timer: Timer,
    /// The instant the timer is set for (`None`: unset, or it fired).
    at: Option<Instant>,
}

impl Default for Deadline {
    fn default() -> Deadline {
        Deadline {
            timer: Timer::never(),
            at: None,
        }
    }
}

impl Deadline {
    /// Sets the deadline to `at` (`None`: no deadline). Nothing happens when it is set
    /// for `at` already.
    pub fn set(&mut self, at: Option<Instant>) {
        if at == self.at {
            return;
        }
        self.at = at;
        match at {
            Some(at) => self.timer.set_at(at),
            None => self.timer = Timer::never(),
        }
    }

    /// Whether a deadline is set and has not fired yet.
    pub fn is_set(&self) -> bool {
        self.at.is_some()
    }

    /// Resolves once the deadline has passed; pending forever while there is none. A
    /// timer fires once, so afterwards the deadline counts as unset and the next
    /// [`Deadline::set`] arms it again, even for the same instant.
    pub async fn passed(&mut self) {
        (&mut self.timer).await;
        self.at = None;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures_lite::FutureExt;

    use super::*;

    /// Whether `d` passes before `limit` does (a hang would be a failure, not a wait).
    async fn passes_within(d: &mut Deadline, limit: Duration) -> bool {
        async {
            d.passed().await;
            true
        }
        .or(async {
            Timer::after(limit).await;
            false
        })
        .await
    }

    #[test]
    fn fires_moves_rearms_and_unsets() {
        smol::block_on(async {
            let long = Duration::from_secs(5);
            let mut d = Deadline::default();
            let start = Instant::now();
            d.set(Some(start + Duration::from_millis(20)));
            assert!(passes_within(&mut d, long).await);
            assert!(start.elapsed() >= Duration::from_millis(20));

            // Moved later before it fires: it fires at the later instant.
            let start = Instant::now();
            d.set(Some(start + Duration::from_millis(5)));
            d.set(Some(start + Duration::from_millis(30)));
            assert!(passes_within(&mut d, long).await);
            assert!(start.elapsed() >= Duration::from_millis(30));

            // A fired deadline set again for the same (past) instant fires again.
            let past = Instant::now();
            d.set(Some(past));
            assert!(passes_within(&mut d, long).await);
            d.set(Some(past));
            assert!(passes_within(&mut d, long).await, "not armed again");

            // Unset: it does not fire.
            d.set(Some(Instant::now() + Duration::from_millis(5)));
            d.set(None);
            assert!(
                !passes_within(&mut d, Duration::from_millis(40)).await,
                "an unset deadline fired"
            );
        });
    }
}
