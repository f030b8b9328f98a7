//! Connection limiter: open connections in total and per client IP, with hard caps.
//!
//! Layer 2 of the load control (`MAX_CONNECTIONS`, `MAX_CONNECTIONS_PER_IP`). The
//! limiter remembers which IP each open connection id holds, so closing is idempotent:
//! a double close or an unknown id changes nothing, and a slot can neither leak nor go
//! negative. It has no clock: connections are counted, not timed.

use crate::vocabulary::io::{ConnId, RefuseReason};
use crate::vocabulary::limiter::IpKey;
use std::collections::BTreeMap;

/// Slots kept for `/health`, `/metrics` and `/ready` above the socket cap (see `door.rs`).
pub const TCP_RESERVE_SLOTS: usize = 16;

/// The shell's cap on open sockets, before any HTTP or websocket work: `cap` sockets
/// are served fully (`conns_max` players plus headroom for handshakes in flight, AI
/// connections, the players the core refuses with 1013, who must reach it to be told
/// `busy`, or holds until their `hello`, and players of running games it admits past
/// `conns_max` when they come back); up to `hard_cap` only `/health`, `/metrics` and
/// `/ready` answer and anything else gets HTTP 503; past it a socket is closed at once
/// (told `busy`). Sockets over `SOCKET_RATE` go to the door's probe lane instead, which
/// is bounded apart ([`crate::shell::door::PROBE_LANE_SOCKETS_MAX`]). The simulator applies the
/// same caps, so the core never sees more connections than `cap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpCaps {
    pub cap: usize,
    pub hard_cap: usize,
}

impl TcpCaps {
    pub fn for_conns_max(conns_max: usize) -> TcpCaps {
        let headroom = (conns_max / 4).max(16);
        let cap = conns_max.saturating_add(headroom);
        TcpCaps {
            cap,
            hard_cap: cap.saturating_add(TCP_RESERVE_SLOTS),
        }
    }
}

/// Counts open connections in total and per [`IpKey`].
#[derive(Clone, Debug)]
pub struct ConnectionLimiter {
    conns_max: usize,
    conns_per_ip_max: usize,
    /// Every open connection and the IP it counts against.
    open: BTreeMap<ConnId, IpKey>,
    /// Open connections per IP; an IP is removed when its count reaches zero, so the
    /// table never holds more entries than there are open connections.
    per_ip: BTreeMap<IpKey, usize>,
}

impl ConnectionLimiter {
    pub fn new(conns_max: usize, conns_per_ip_max: usize) -> ConnectionLimiter {
        ConnectionLimiter {
            conns_max,
            conns_per_ip_max,
            open: BTreeMap::new(),
            per_ip: BTreeMap::new(),
        }
    }

    /// Counts connection `conn_id` from `ip` as open, unless a cap is reached. The total
    /// cap is checked first.
    ///
    /// An id that is already open keeps its slot (and its original IP) and is not
    /// counted twice; the call returns `Ok(())`.
    pub fn try_open(&mut self, conn_id: ConnId, ip: IpKey) -> Result<(), RefuseReason> {
        self.open_checked(conn_id, ip, true)
    }

    /// Counts `conn_id` past the total cap: a player of a running game coming back may
    /// always have its seat's connection (the shell's socket cap still bounds how many
    /// connections exist). Only the per-IP cap applies.
    pub fn try_open_past_total(&mut self, conn_id: ConnId, ip: IpKey) -> Result<(), RefuseReason> {
        self.open_checked(conn_id, ip, false)
    }

    /// Whether `ip` holds `conns_per_ip_max` connections.
    pub fn ip_full(&self, ip: IpKey) -> bool {
        self.per_ip.get(&ip).copied().unwrap_or(0) >= self.conns_per_ip_max
    }

    fn open_checked(
        &mut self,
        conn_id: ConnId,
        ip: IpKey,
        total: bool,
    ) -> Result<(), RefuseReason> {
        if self.open.contains_key(&conn_id) {
            return Ok(());
        }
        if total && self.open.len() >= self.conns_max {
            return Err(RefuseReason::Total);
        }
        let for_ip = self.per_ip.entry(ip).or_insert(0);
        if *for_ip >= self.conns_per_ip_max {
            if *for_ip == 0 {
                self.per_ip.remove(&ip);
            }
            return Err(RefuseReason::PerIp);
        }
        *for_ip += 1;
        self.open.insert(conn_id, ip);
        Ok(())
    }

    /// Releases `conn_id`'s slot. Unknown or already closed ids are a no-op.
    /// Returns whether a slot was released.
    pub fn close(&mut self, conn_id: ConnId) -> bool {
        let Some(ip) = self.open.remove(&conn_id) else {
            return false;
        };
        if let Some(for_ip) = self.per_ip.get_mut(&ip) {
            *for_ip = for_ip.saturating_sub(1);
            if *for_ip == 0 {
                self.per_ip.remove(&ip);
            }
        }
        true
    }

    /// Open connections in total.
    pub fn open(&self) -> usize {
        self.open.len()
    }

    /// Open connections from `ip`.
    pub fn open_for(&self, ip: IpKey) -> usize {
        self.per_ip.get(&ip).copied().unwrap_or(0)
    }

    /// Distinct IPs with at least one open connection.
    pub fn ips(&self) -> usize {
        self.per_ip.len()
    }

    pub fn conns_max(&self) -> usize {
        self.conns_max
    }

    pub fn conns_per_ip_max(&self) -> usize {
        self.conns_per_ip_max
    }
}
