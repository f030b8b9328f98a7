//! The door: which accepted TCP sockets the shell may hold, decided before any HTTP work.
//!
//! Layer 1 of the load control. The shell asks [`Door::admit`] for every accepted
//! socket and tells it when the socket's request head was read ([`Door::head_read`])
//! and when it closed ([`Door::close`]); the door answers with the socket's [`Mode`] and,
//! when it had to make room, a victim the shell must cut at once. The rules:
//!
//! - Every client address ([`IpKey`]: IPv4, or the IPv6 /64) holds at most
//!   `sockets_per_ip_max` sockets. A new socket from an address at its share replaces
//!   that address's oldest socket still *waiting* for its head, so a storm of silent
//!   sockets from one address only churns its own share; with none waiting it is refused.
//! - `caps.cap` sockets are served fully. At the cap, the oldest waiting socket (of any
//!   address) is evicted for the new one: a silent socket holds its slot only until
//!   someone needs it, and an honest handshake (milliseconds) gets through a storm.
//! - Past the cap, up to `caps.hard_cap`, sockets are admitted in [`Mode::Reserve`]
//!   (only `/health`, `/metrics`, `/ready`); a waiting reserve socket is evicted the same
//!   way, so silent sockets can never hold the reserve against a health check.
//! - Eviction takes *slow* sockets first: a socket whose head came in part and stopped
//!   short of its end ([`Door::slow`]; an honest client sends its head whole, a
//!   slow-head storm a few bytes at a time), then silent sockets: a socket whose first
//!   bytes arrived ([`Door::spoke`]) goes only when no silent or slow one is left (a
//!   storm from many addresses reconnects as fast as it is cut, and would otherwise cut
//!   an honest request that was already on its way before the shell could read it).
//! - Among those, sockets from *marked* addresses go first: an address is marked for
//!   [`SILENT_MARK_US`] when one of its sockets is evicted while silent or slow; a socket
//!   waiting when its address is marked, or admitted while it is, keeps the mark. A
//!   storm that reconnects from the same addresses marks them at its first round of
//!   evictions, and from then on churns only its own sockets: an honest client whose
//!   request is slow to come (a starved or distant client) is no longer cut just
//!   because 40 reconnects outran it. The marks are a table of at most `IP_TABLE_MAX`
//!   addresses (the soonest to expire is forgotten first).
//! - A socket whose head was read is never evicted: it is being answered (a plain route,
//!   closed right after) or it became a websocket, which only the core's connection
//!   limits govern.
//! - Every address may open `SOCKET_RATE` new sockets a second (a token bucket with
//!   `SOCKET_BURST`); past it a new socket goes to the *probe lane* ([`Mode::Probe`]:
//!   only `/health`, `/metrics` and `/ready`, so that a monitor polling from one address
//!   is answered however often it asks), which holds at most
//!   [`PROBE_LANE_SOCKETS_MAX`] sockets, [`PROBE_LANE_SOCKETS_PER_IP_MAX`] of them per
//!   address. An address at its lane share is refused before anything else, so a
//!   connect flood from one address costs the server an accept and a close per socket
//!   past those few and evicts nobody (without the rate, each connect would evict the
//!   address's previous one, and a flood would churn the server's whole socket path).
//!   A full lane evicts its oldest waiting socket, in the order above.
//! - A socket from a `TRUSTED_PROXIES` address is not charged to any address at accept
//!   time (the proxy carries many clients); once its head is read the shell passes the
//!   forwarded client address ([`crate::shell::upgrade::client_ip`]) and that address's share
//!   is checked and charged instead.
//!
//! Time only orders sockets by age (ties broken by socket id); the door has no clock and
//! no timers: first-byte and handshake timeouts are the shell's, and end in `close`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;

use crate::machine::overload::connections::TcpCaps;
use crate::vocabulary::config::IpCidr;
use crate::vocabulary::limiter::{IpKey, KeyedRateLimiter, Rate};
use crate::vocabulary::time::Time;

/// How long an address stays marked after one of its sockets was evicted while silent:
/// its new sockets are evicted before unmarked ones.
pub const SILENT_MARK_US: u64 = 60_000_000;

/// Sockets admitted over `SOCKET_RATE` into the probe lane ([`Mode::Probe`]), in all.
pub const PROBE_LANE_SOCKETS_MAX: usize = 16;

/// Probe-lane sockets one address may hold: a monitor's probes one after another (the
/// last one's socket may not be closed yet when the next comes) and a few at once.
pub const PROBE_LANE_SOCKETS_PER_IP_MAX: usize = 4;

/// The marks table's size when [`Door::new`] is not told otherwise (`IP_TABLE_MAX`'s
/// default).
const SILENT_MARKS_MAX_DEFAULT: usize = 10_000;

/// How an admitted socket may be served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// Anything: HTTP routes and websocket upgrades.
    Full,
    /// Only `/health`, `/metrics` and `/ready`; everything else gets HTTP 503.
    Reserve,
    /// Admitted over `SOCKET_RATE` into the probe lane: only `/health`, `/metrics` and
    /// `/ready`; everything else gets HTTP 503.
    Probe,
}

impl Mode {
    /// Whether a socket in this mode may only ask for `/health`, `/metrics` and `/ready`.
    pub fn probes_only(self) -> bool {
        self != Mode::Full
    }
}

/// Why a socket was refused (closed at once by the shell, or HTTP 503 after its head).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DoorRefusal {
    /// The address holds `sockets_per_ip_max` sockets, none of them waiting.
    PerIp,
    /// Every slot, reserve included, is held by a socket being served.
    Full,
    /// The address opened more than `SOCKET_RATE` sockets a second and holds its share
    /// of the probe lane (or the lane is full of sockets being served).
    Rate,
}

impl DoorRefusal {
    pub fn name(self) -> &'static str {
        match self {
            DoorRefusal::PerIp => "per_ip",
            DoorRefusal::Full => "full",
            DoorRefusal::Rate => "rate",
        }
    }
}

impl fmt::Display for DoorRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An admitted socket: its mode, and the socket evicted to make room for it (the shell
/// must cut that one; the door already forgot it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admit {
    pub mode: Mode,
    pub evicted: Option<u64>,
}

#[derive(Clone, Copy, Debug)]
struct Socket {
    /// The address charged; `None` for a trusted proxy's socket not yet charged.
    key: Option<IpKey>,
    mode: Mode,
    since: Time,
    /// No request head read yet: the socket may be evicted.
    waiting: bool,
    /// Bytes of its head arrived ([`Door::spoke`]): evicted only after every silent one.
    spoke: bool,
    /// Its head came in part and stopped short ([`Door::slow`]): evicted first.
    slow: bool,
    /// Its address was marked when it was admitted or while it waited: evicted before
    /// unmarked ones.
    marked: bool,
}

impl Socket {
    fn rank(&self, id: u64) -> Rank {
        (!self.slow, self.spoke, !self.marked, self.since, id)
    }
}

/// A waiting socket's place in an eviction order: slow sockets first, then silent
/// ones, then those that spoke; within each, the marked first, then the oldest.
type Rank = (bool, bool, bool, Time, u64);

/// The lowest rank, to start a range at.
const RANK_MIN: Rank = (false, false, false, Time(0), 0);

/// The socket table; every map is bounded by the open sockets (at most `hard_cap` plus
/// [`PROBE_LANE_SOCKETS_MAX`]).
#[derive(Clone, Debug)]
pub struct Door {
    caps: TcpCaps,
    sockets_per_ip_max: usize,
    trusted_proxies: Vec<IpCidr>,
    sockets: BTreeMap<u64, Socket>,
    /// Open sockets per mode, `[Full, Reserve, Probe]`.
    open: [usize; 3],
    /// Waiting sockets per mode, in eviction order ([`Rank`]).
    waiting: [BTreeSet<Rank>; 3],
    /// Waiting sockets per charged address, in the same order (the probe lane's not).
    waiting_by_key: BTreeSet<(IpKey, Rank)>,
    /// Sockets charged per address, the probe lane's not; an address is removed at zero.
    per_key: BTreeMap<IpKey, usize>,
    /// Probe-lane sockets per address; an address is removed at zero.
    lane_per_key: BTreeMap<IpKey, usize>,
    /// New sockets per address (`SOCKET_RATE`); `None`: unlimited. Bounded by its own
    /// `entries_max` (`IP_TABLE_MAX`).
    rate: Option<KeyedRateLimiter<IpKey>>,
    /// Marked addresses: a bucket of one token refilled every [`SILENT_MARK_US`], taken
    /// at a silent eviction; an empty bucket is a mark. Bounded by its `entries_max`.
    marks: KeyedRateLimiter<IpKey>,
}

fn slot(mode: Mode) -> usize {
    match mode {
        Mode::Full => 0,
        Mode::Reserve => 1,
        Mode::Probe => 2,
    }
}

impl Door {
    pub fn new(caps: TcpCaps, sockets_per_ip_max: usize, trusted_proxies: Vec<IpCidr>) -> Door {
        Door {
            caps,
            sockets_per_ip_max,
            trusted_proxies,
            sockets: BTreeMap::new(),
            open: [0, 0, 0],
            waiting: [BTreeSet::new(), BTreeSet::new(), BTreeSet::new()],
            waiting_by_key: BTreeSet::new(),
            per_key: BTreeMap::new(),
            lane_per_key: BTreeMap::new(),
            rate: None,
            marks: marks_table(SILENT_MARKS_MAX_DEFAULT),
        }
    }

    /// Remembers the marks of at most `entries_max` addresses.
    pub fn with_marks_max(mut self, entries_max: usize) -> Door {
        self.marks = marks_table(entries_max);
        self
    }

    /// Limits each address to `rate` new sockets (with `burst`), in a table of at most
    /// `entries_max` addresses.
    pub fn with_socket_rate(mut self, rate: Rate, burst: u64, entries_max: usize) -> Door {
        self.rate = Some(KeyedRateLimiter::new(rate, burst, entries_max));
        self
    }

    /// The door for `config`: [`TcpCaps::for_conns_max`], `MAX_SOCKETS_PER_IP`,
    /// `TRUSTED_PROXIES`, `SOCKET_RATE` and `SOCKET_BURST` (in an `IP_TABLE_MAX` table),
    /// and the marks in another `IP_TABLE_MAX` table.
    pub fn for_config(config: &crate::vocabulary::config::Config) -> Door {
        Door::new(
            TcpCaps::for_conns_max(config.conns_max),
            config.sockets_per_ip_max,
            config.trusted_proxies.clone(),
        )
        .with_socket_rate(
            crate::machine::server::rate_from(config.socket_rate_per_sec, 1_000_000),
            u64::from(config.socket_burst.max(1)),
            config.ip_table_entries_max,
        )
        .with_marks_max(config.ip_table_entries_max)
    }

    /// Admits socket `id` accepted from `peer` at `now`, or refuses it. An id that is
    /// already open keeps its slot and mode.
    pub fn admit(&mut self, id: u64, peer: IpAddr, now: Time) -> Result<Admit, DoorRefusal> {
        if let Some(s) = self.sockets.get(&id) {
            let mode = s.mode;
            return Ok(Admit {
                mode,
                evicted: None,
            });
        }
        let peer = peer.to_canonical();
        let key = (!self.is_trusted(peer)).then(|| IpKey::new(peer));
        if let (Some(key), Some(rate)) = (key, self.rate.as_mut())
            && !rate.try_take(&key, now)
        {
            return self.admit_probe(id, key, now);
        }
        if let Some(key) = key.filter(|k| self.open_for_key(*k) >= self.sockets_per_ip_max) {
            // The address's own oldest waiting socket makes room, in its mode.
            let (_, (_, _, _, _, victim)) = *self
                .waiting_by_key
                .range((key, RANK_MIN)..)
                .next()
                .filter(|(k, _)| *k == key)
                .ok_or(DoorRefusal::PerIp)?;
            let mode = self.sockets.get(&victim).map_or(Mode::Full, |s| s.mode);
            self.evict(victim, now);
            self.insert(id, Some(key), mode, now);
            return Ok(Admit {
                mode,
                evicted: Some(victim),
            });
        }
        let reserve = self.caps.hard_cap.saturating_sub(self.caps.cap);
        let limits = [(Mode::Full, self.caps.cap), (Mode::Reserve, reserve)];
        for (mode, limit) in limits {
            if self.open[slot(mode)] < limit {
                self.insert(id, key, mode, now);
                return Ok(Admit {
                    mode,
                    evicted: None,
                });
            }
            if let Some(&(_, _, _, _, victim)) = self.waiting[slot(mode)].first() {
                self.evict(victim, now);
                self.insert(id, key, mode, now);
                return Ok(Admit {
                    mode,
                    evicted: Some(victim),
                });
            }
        }
        Err(DoorRefusal::Full)
    }

    /// Admits socket `id` from `key`, which is over `SOCKET_RATE`, into the probe lane:
    /// refused when the address holds its lane share; a full lane evicts its first
    /// waiting socket, or refuses when every lane socket is being served.
    fn admit_probe(&mut self, id: u64, key: IpKey, now: Time) -> Result<Admit, DoorRefusal> {
        let held = self.lane_per_key.get(&key).copied().unwrap_or(0);
        if held >= PROBE_LANE_SOCKETS_PER_IP_MAX {
            return Err(DoorRefusal::Rate);
        }
        let mut evicted = None;
        if self.open[slot(Mode::Probe)] >= PROBE_LANE_SOCKETS_MAX {
            let &(_, _, _, _, victim) = self.waiting[slot(Mode::Probe)]
                .first()
                .ok_or(DoorRefusal::Rate)?;
            self.evict(victim, now);
            evicted = Some(victim);
        }
        self.insert(id, Some(key), Mode::Probe, now);
        Ok(Admit {
            mode: Mode::Probe,
            evicted,
        })
    }

    /// Socket `id` had its request head read: it can no longer be evicted. For a
    /// trusted proxy's socket, `client` (the forwarded address) is charged now, or the
    /// request is refused with [`DoorRefusal::PerIp`] (the socket stays open, uncharged,
    /// until its refusal was answered and it is closed). Unknown ids (evicted, closed)
    /// are a no-op.
    pub fn head_read(&mut self, id: u64, client: IpAddr) -> Result<(), DoorRefusal> {
        let Some(s) = self.sockets.get(&id).copied() else {
            return Ok(());
        };
        self.unrank(id, &s);
        let charged = match s.key {
            Some(key) => Some(key),
            None => {
                let key = IpKey::new(client.to_canonical());
                if self.open_for_key(key) >= self.sockets_per_ip_max {
                    None
                } else {
                    *self.per_key.entry(key).or_insert(0) += 1;
                    Some(key)
                }
            }
        };
        if let Some(socket) = self.sockets.get_mut(&id) {
            socket.waiting = false;
            socket.key = charged;
        }
        match charged {
            Some(_) => Ok(()),
            None => Err(DoorRefusal::PerIp),
        }
    }

    /// Closes waiting socket `id` to make room; a silent or slow one marks its address.
    fn evict(&mut self, id: u64, now: Time) {
        if let Some(Socket {
            key: Some(key),
            spoke,
            slow,
            ..
        }) = self.sockets.get(&id).copied()
            && (!spoke || slow)
            && self.marks.try_take(&key, now)
        {
            // A new mark: the address's waiting sockets carry it too.
            let marking: Vec<u64> = self
                .waiting_by_key
                .range((key, RANK_MIN)..)
                .take_while(|(k, _)| *k == key)
                .map(|(_, (_, _, _, _, id))| *id)
                .collect();
            for id in marking {
                if let Some(s) = self.sockets.get(&id).copied() {
                    self.unrank(id, &s);
                    let marked = Socket { marked: true, ..s };
                    self.rank(id, &marked);
                    self.sockets.insert(id, marked);
                }
            }
        }
        self.close(id);
    }

    /// Forgets socket `id`. Unknown or already closed ids are a no-op; returns whether a
    /// socket was removed.
    pub fn close(&mut self, id: u64) -> bool {
        let Some(s) = self.sockets.remove(&id) else {
            return false;
        };
        self.open[slot(s.mode)] = self.open[slot(s.mode)].saturating_sub(1);
        self.unrank(id, &s);
        if let Some(key) = s.key {
            let counts = match s.mode {
                Mode::Probe => &mut self.lane_per_key,
                Mode::Full | Mode::Reserve => &mut self.per_key,
            };
            if let Some(n) = counts.get_mut(&key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    counts.remove(&key);
                }
            }
        }
        true
    }

    /// The first bytes of socket `id`'s head arrived (its head is not complete yet): it
    /// is evicted only after every silent socket, so that an honest client whose
    /// request is already on its way is not cut by a storm of silent sockets in the
    /// moment before the shell reads it. Unknown ids and sockets past their head are a
    /// no-op.
    pub fn spoke(&mut self, id: u64) {
        let Some(s) = self.sockets.get(&id).copied() else {
            return;
        };
        if !s.waiting || s.spoke {
            return;
        }
        self.unrank(id, &s);
        let spoke = Socket { spoke: true, ..s };
        self.rank(id, &spoke);
        self.sockets.insert(id, spoke);
    }

    /// Socket `id` sent part of its head and a read of it ended short of the end: it is
    /// evicted before every other waiting socket, and its eviction marks its address
    /// (an honest client sends its head whole; a slow-head storm holds its sockets with
    /// a few bytes at a time). Unknown ids and sockets past their head are a no-op.
    pub fn slow(&mut self, id: u64) {
        let Some(s) = self.sockets.get(&id).copied() else {
            return;
        };
        if !s.waiting || s.slow {
            return;
        }
        self.unrank(id, &s);
        let slow = Socket {
            spoke: true,
            slow: true,
            ..s
        };
        self.rank(id, &slow);
        self.sockets.insert(id, slow);
    }

    /// Puts waiting socket `id` into the eviction orders.
    fn rank(&mut self, id: u64, s: &Socket) {
        if !s.waiting {
            return;
        }
        let rank = s.rank(id);
        self.waiting[slot(s.mode)].insert(rank);
        if let Some(key) = s.key.filter(|_| s.mode != Mode::Probe) {
            self.waiting_by_key.insert((key, rank));
        }
    }

    /// Takes socket `id` out of the eviction orders.
    fn unrank(&mut self, id: u64, s: &Socket) {
        if !s.waiting {
            return;
        }
        let rank = s.rank(id);
        self.waiting[slot(s.mode)].remove(&rank);
        if let Some(key) = s.key.filter(|_| s.mode != Mode::Probe) {
            self.waiting_by_key.remove(&(key, rank));
        }
    }

    fn is_trusted(&self, ip: IpAddr) -> bool {
        self.trusted_proxies.iter().any(|c| c.contains(ip))
    }

    fn insert(&mut self, id: u64, key: Option<IpKey>, mode: Mode, now: Time) {
        if let Some(key) = key {
            let counts = match mode {
                Mode::Probe => &mut self.lane_per_key,
                Mode::Full | Mode::Reserve => &mut self.per_key,
            };
            *counts.entry(key).or_insert(0) += 1;
        }
        self.open[slot(mode)] += 1;
        let socket = Socket {
            key,
            mode,
            since: now,
            waiting: true,
            spoke: false,
            slow: false,
            marked: key.is_some_and(|k| self.is_marked(k, now)),
        };
        self.rank(id, &socket);
        self.sockets.insert(id, socket);
    }

    fn is_marked(&self, key: IpKey, now: Time) -> bool {
        self.marks.available(&key, now) == 0
    }

    /// Whether `ip`'s address is marked at `now` (one of its sockets was evicted while
    /// silent less than [`SILENT_MARK_US`] ago, as far as the table remembers).
    pub fn marked(&self, ip: IpAddr, now: Time) -> bool {
        self.is_marked(IpKey::new(ip.to_canonical()), now)
    }

    fn open_for_key(&self, key: IpKey) -> usize {
        self.per_key.get(&key).copied().unwrap_or(0)
    }

    /// Open sockets in total.
    pub fn open(&self) -> usize {
        self.sockets.len()
    }

    /// Open sockets in `mode`.
    pub fn open_in(&self, mode: Mode) -> usize {
        self.open[slot(mode)]
    }

    /// Sockets still waiting for their request head.
    pub fn waiting(&self) -> usize {
        self.waiting.iter().map(BTreeSet::len).sum()
    }

    /// Sockets charged to `ip`'s address (the probe lane's not).
    pub fn open_for(&self, ip: IpAddr) -> usize {
        self.open_for_key(IpKey::new(ip.to_canonical()))
    }

    /// Probe-lane sockets `ip`'s address holds.
    pub fn lane_for(&self, ip: IpAddr) -> usize {
        let key = IpKey::new(ip.to_canonical());
        self.lane_per_key.get(&key).copied().unwrap_or(0)
    }

    /// The mode of open socket `id`.
    pub fn mode_of(&self, id: u64) -> Option<Mode> {
        self.sockets.get(&id).map(|s| s.mode)
    }

    /// Whether socket `id` is open and still waiting for its head.
    pub fn is_waiting(&self, id: u64) -> bool {
        self.sockets.get(&id).is_some_and(|s| s.waiting)
    }

    pub fn caps(&self) -> TcpCaps {
        self.caps
    }

    pub fn sockets_per_ip_max(&self) -> usize {
        self.sockets_per_ip_max
    }
}

fn marks_table(entries_max: usize) -> KeyedRateLimiter<IpKey> {
    KeyedRateLimiter::new(Rate::new(1, SILENT_MARK_US), 1, entries_max)
}
