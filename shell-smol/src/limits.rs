//! The hard cap on open TCP connections, applied before any HTTP or websocket work.
//!
//! The core's connection limiter counts upgraded player connections by IP; this one only
//! bounds what the process holds at all, so that a connection storm cannot exhaust
//! memory with half-open handshakes. Above `MAX_CONNECTIONS` plus headroom a connection
//! is served in "reserve" mode: `/health` and `/metrics` still answer (an orchestrator
//! that cannot reach health would restart a server that was coping), everything else
//! gets HTTP 503. Past the reserve the socket is closed at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use wizard_core::overload::connections::TcpCaps;

/// How a newly accepted connection may be served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Anything: HTTP routes and websocket upgrades.
    Full,
    /// Only `/health` and `/metrics`; everything else gets 503.
    Reserve,
}

/// Counts open TCP connections against the cap.
#[derive(Debug)]
pub struct TcpLimit {
    open: AtomicUsize,
    /// Connections served fully.
    cap: usize,
    /// `cap` plus [`wizard_core::overload::connections::TCP_RESERVE_SLOTS`].
    hard_cap: usize,
}

impl TcpLimit {
    /// The caps of [`TcpCaps::for_conns_max`] (shared with the simulator).
    pub fn new(conns_max: usize) -> TcpLimit {
        let caps = TcpCaps::for_conns_max(conns_max);
        TcpLimit {
            open: AtomicUsize::new(0),
            cap: caps.cap,
            hard_cap: caps.hard_cap,
        }
    }

    /// Takes a slot, or `None` when even the reserve is used up. The slot is given back
    /// when the returned guard is dropped.
    pub fn try_acquire(self: &Arc<TcpLimit>) -> Option<(Admission, TcpSlot)> {
        let before = self.open.fetch_add(1, Ordering::AcqRel);
        let slot = TcpSlot {
            limit: Arc::clone(self),
        };
        if before >= self.hard_cap {
            return None; // dropping `slot` gives the count back
        }
        let admission = if before >= self.cap {
            Admission::Reserve
        } else {
            Admission::Full
        };
        Some((admission, slot))
    }

    /// Open TCP connections now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    pub fn hard_cap(&self) -> usize {
        self.hard_cap
    }
}

/// One open TCP connection's slot; dropping it frees the slot.
#[derive(Debug)]
pub struct TcpSlot {
    limit: Arc<TcpLimit>,
}

impl Drop for TcpSlot {
    fn drop(&mut self) {
        self.limit.open.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_then_reserve_then_refused() {
        let limit = Arc::new(TcpLimit::new(4));
        let cap = limit.cap();
        let mut held = Vec::new();
        for _ in 0..cap {
            let (admission, slot) = limit.try_acquire().unwrap();
            assert_eq!(admission, Admission::Full);
            held.push(slot);
        }
        for _ in 0..wizard_core::overload::connections::TCP_RESERVE_SLOTS {
            let (admission, slot) = limit.try_acquire().unwrap();
            assert_eq!(admission, Admission::Reserve);
            held.push(slot);
        }
        assert!(limit.try_acquire().is_none());
        assert_eq!(limit.open(), limit.hard_cap());
        held.pop();
        assert_eq!(
            limit.try_acquire().map(|(a, _)| a),
            Some(Admission::Reserve)
        );
        held.clear();
        assert_eq!(limit.open(), 0);
    }
}
