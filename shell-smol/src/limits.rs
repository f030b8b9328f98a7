//! The shell's half of the door: the core's pure [`Door`] behind a mutex, with a way to
//! cut the socket it evicts.
//!
//! Every accepted socket asks [`Gate::admit`] before any HTTP work. The door decides
//! (per-address share, eviction of the oldest socket still waiting for its request
//! head, reserve slots and the probe lane for `/health`, `/metrics` and `/ready`: see
//! [`wizard_core::shell::door`]); this module only keeps an [`AbortHandle`] per
//! socket, so that an evicted socket's task is dropped (and its socket closed) at once,
//! and gives each socket a [`TcpSlot`] guard that tells the door when it closed.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::future::{AbortHandle, AbortRegistration};
use wizard_core::shell::door::{Door, DoorRefusal, Mode};
use wizard_core::vocabulary::config::Config;

use crate::core_task::Clock;

/// How a newly accepted connection may be served.
pub type Admission = Mode;

#[derive(Debug)]
struct Inner {
    door: Door,
    /// One per open socket; removed when it closes or is evicted.
    aborts: HashMap<u64, AbortHandle>,
    next_id: u64,
}

/// The door and the abort handles of the sockets it holds.
#[derive(Debug)]
pub struct Gate {
    inner: Mutex<Inner>,
    clock: Clock,
    cap: usize,
    hard_cap: usize,
}

/// An admitted socket: its mode, its slot, and the registration its task must be
/// wrapped in (`futures_util::future::Abortable`) so that an eviction can cut it.
#[derive(Debug)]
pub struct Admitted {
    pub mode: Admission,
    pub slot: TcpSlot,
    pub abort: AbortRegistration,
    /// Whether another socket was evicted to make room (already cut).
    pub evicted: bool,
}

impl Gate {
    pub fn new(config: &Config, clock: Clock) -> Gate {
        let door = Door::for_config(config);
        let caps = door.caps();
        Gate {
            inner: Mutex::new(Inner {
                door,
                aborts: HashMap::new(),
                next_id: 1,
            }),
            clock,
            cap: caps.cap,
            hard_cap: caps.hard_cap,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves the tables consistent (every method
        // changes them in one step), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits a socket accepted from `peer`, cutting the victim the door chose, or
    /// refuses it (the caller closes it at once).
    pub fn admit(self: &Arc<Gate>, peer: IpAddr) -> Result<Admitted, DoorRefusal> {
        let now = self.clock.now();
        let mut inner = self.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        let admit = inner.door.admit(id, peer, now)?;
        let evicted = match admit.evicted {
            Some(victim) => {
                if let Some(handle) = inner.aborts.remove(&victim) {
                    handle.abort();
                }
                true
            }
            None => false,
        };
        let (handle, abort) = AbortHandle::new_pair();
        inner.aborts.insert(id, handle);
        let slot = TcpSlot {
            gate: Arc::clone(self),
            id,
        };
        Ok(Admitted {
            mode: admit.mode,
            slot,
            abort,
            evicted,
        })
    }

    /// Open sockets now.
    pub fn open(&self) -> usize {
        self.lock().door.open()
    }

    /// Sockets still waiting for their request head.
    pub fn waiting(&self) -> usize {
        self.lock().door.waiting()
    }

    /// Sockets served fully.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// `cap` plus the reserve.
    pub fn hard_cap(&self) -> usize {
        self.hard_cap
    }
}

/// One open socket's place in the door; dropping it frees the place.
#[derive(Debug)]
pub struct TcpSlot {
    gate: Arc<Gate>,
    id: u64,
}

impl TcpSlot {
    /// The request head was read: the socket can no longer be evicted. For a trusted
    /// proxy's socket, `client` (the forwarded address) is charged now, or refused.
    pub fn head_read(&self, client: IpAddr) -> Result<(), DoorRefusal> {
        self.gate.lock().door.head_read(self.id, client)
    }

    /// The first bytes of the request head arrived: the door evicts this socket only
    /// after every silent one.
    pub fn spoke(&self) {
        self.gate.lock().door.spoke(self.id);
    }

    /// A read of the request head ended short of its end: the door evicts this socket
    /// before every other waiting one.
    pub fn slow(&self) {
        self.gate.lock().door.slow(self.id);
    }
}

impl Drop for TcpSlot {
    fn drop(&mut self) {
        let mut inner = self.gate.lock();
        inner.door.close(self.id);
        inner.aborts.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn gate(pairs: &[(&str, &str)]) -> Arc<Gate> {
        let config = Config::from_pairs(pairs.iter().copied()).unwrap();
        Arc::new(Gate::new(&config, Clock::new(Instant::now())))
    }

    #[test]
    fn an_eviction_aborts_the_victim_and_a_closed_slot_is_forgotten() {
        let gate = gate(&[("MAX_CONNECTIONS_PER_IP", "1"), ("MAX_SOCKETS_PER_IP", "2")]);
        let peer: IpAddr = [127, 0, 0, 2].into();
        let a = gate.admit(peer).unwrap();
        let b = gate.admit(peer).unwrap();
        b.slot.head_read(peer).unwrap();
        let c = gate.admit(peer).unwrap();
        assert!(c.evicted, "a's place was given to c");
        assert_eq!(gate.open(), 2);
        // a's registration now reports the abort.
        let aborted = futures_util::future::Abortable::new(std::future::pending::<()>(), a.abort);
        assert!(smol::block_on(aborted).is_err());
        drop(a.slot); // the evicted socket's task ends: a no-op for the door
        assert_eq!(gate.open(), 2);
        c.slot.head_read(peer).unwrap();
        assert_eq!(gate.admit(peer).err(), Some(DoorRefusal::PerIp));
        drop(b.slot);
        assert_eq!((gate.open(), gate.waiting()), (1, 0));
        assert!(gate.admit(peer).is_ok());
    }
}
