//! The quick-play matchmaker: a pool of tickets (one per player) grouped into tables by
//! the table size each asked for and by rating, pure and clock-injected.
//!
//! A ticket waits in the bucket of its table size, ordered by rating. A group is `n`
//! tickets of one bucket (`n` its table size) whose ratings differ by no more than every
//! member accepts: [`SPREAD_BASE_MILLI`] at first, widening by
//! [`SPREAD_PER_SEC_MILLI`] for every second the member has waited. Only a ticket that
//! has waited `QUICK_PLAY_SETTLE` is grouped: a player who queues and walks away at
//! once (the connection's close takes the ticket out) never takes a seat from players
//! who stay. A pass over the buckets that could seat a table runs as each ticket
//! settles and every `QUICK_PLAY_INTERVAL`, grouping those whose spread has widened
//! enough; with no settling time a new ticket is tried at once against its neighbours
//! by rating. A ticket that has waited `QUICK_PLAY_WAIT` is seated with the closest
//! waiting tickets of its bucket whatever their ratings, and the caller fills the rest
//! of the table with AI seats: quick play never waits for ever.
//!
//! The same rule serves a pool kept elsewhere: [`form_groups`] runs it once over
//! tickets read from the shards' shared pool (PostgreSQL), and [`Matchmaker::hold`]
//! keeps a shard's own tickets without grouping them there.
//!
//! The machine knows nothing of sessions or lobbies: its keys are any ordered copyable
//! value (the server uses its session ids), its ratings plain numbers. It never reads a
//! clock; [`Matchmaker::next_wake`] says when [`Matchmaker::poll`] has work.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use crate::vocabulary::game::types::{PLAYERS_MAX, PLAYERS_MIN};
use crate::vocabulary::time::{Time, US_PER_SEC};

/// The rating spread (in thousandths of a rating point) every ticket accepts at once.
pub const SPREAD_BASE_MILLI: i64 = 2_000;
/// How much wider (in thousandths of a rating point) the accepted spread grows per
/// second waited.
pub const SPREAD_PER_SEC_MILLI: i64 = 500;
/// The table size a `quick_play` without `seats` asks for.
pub const SEATS_DEFAULT: u8 = 4;
/// The rating of a player without a profile: mu0 - 3 sigma0 = 25 - 3 * 25/3 = 0.
pub const RATING_DEFAULT: f64 = 0.0;

/// Buckets: one per table size from [`PLAYERS_MIN`] to [`PLAYERS_MAX`].
const BUCKETS: usize = (PLAYERS_MAX - PLAYERS_MIN + 1) as usize;

/// The matchmaker's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchConfig {
    /// `QUICK_PLAY_WAIT`: after this long a ticket is seated with AI filling the table.
    pub wait_us: u64,
    /// `QUICK_PLAY_INTERVAL`: between two passes that look for groups whose accepted
    /// spread has widened enough.
    pub interval_us: u64,
    /// `QUICK_PLAY_MAX`: tickets in the pool at once.
    pub tickets_max: usize,
    /// `QUICK_PLAY_SETTLE`: how long a ticket waits before it is grouped (0: at once).
    pub settle_us: u64,
}

/// One player waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket<K> {
    pub key: K,
    /// The table size asked for, 3 to 6.
    pub seats: u8,
    /// The rating in thousandths of a point (see [`rating_milli`]).
    pub rating_milli: i64,
    /// When it joined the pool.
    pub since: Time,
}

/// A table the pool can seat: its players, oldest ticket first, and its size; the
/// seats beyond `players` are for AI players.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group<K> {
    pub seats: u8,
    pub players: Vec<Ticket<K>>,
    /// Formed because its oldest ticket waited `QUICK_PLAY_WAIT` (AI may fill it).
    pub waited_out: bool,
}

impl<K> Group<K> {
    /// The seats AI players fill.
    pub fn ai_seats(&self) -> u8 {
        self.seats
            .saturating_sub(u8::try_from(self.players.len()).unwrap_or(u8::MAX))
    }
}

/// Why a ticket was not taken (the asker's fault, or capacity).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// A table size outside 3 to 6 (the client's fault).
    BadSeats,
    /// `QUICK_PLAY_MAX` tickets wait already (capacity).
    Full,
}

/// A rating as the pool orders it: thousandths of a point, rounded; a value that is not
/// a number counts as [`RATING_DEFAULT`].
#[allow(clippy::cast_possible_truncation)] // clamped to well within i64
pub fn rating_milli(rating: f64) -> i64 {
    if rating.is_finite() {
        (rating * 1000.0).round().clamp(-1e15, 1e15) as i64
    } else {
        0
    }
}

/// The spread a ticket that has waited `waited_us` accepts.
pub fn accepted_spread_milli(waited_us: u64) -> i64 {
    let secs = i64::try_from(waited_us / US_PER_SEC).unwrap_or(i64::MAX);
    SPREAD_BASE_MILLI.saturating_add(SPREAD_PER_SEC_MILLI.saturating_mul(secs))
}

/// The groups the pool's rule forms at `now` from `tickets` (a pass over every table
/// size, then a table for each ticket that has waited `QUICK_PLAY_WAIT`), for a pool
/// kept elsewhere: the shards' shared pool runs it over the tickets of every shard.
/// Tickets of a bad table size are left out; `config.tickets_max` is not applied.
pub fn form_groups<K: Ord + Copy>(
    config: MatchConfig,
    now: Time,
    tickets: impl IntoIterator<Item = Ticket<K>>,
) -> Vec<Group<K>> {
    let mut pool = Matchmaker::new(MatchConfig {
        tickets_max: usize::MAX,
        ..config
    });
    for t in tickets {
        let _ = pool.hold(t);
    }
    pool.next_pass = Some(now);
    let mut out = Vec::new();
    pool.poll(now, &mut out);
    out
}

/// An entry of a bucket: ordered by rating, then age, then key.
type Entry<K> = (i64, Time, K);

/// The pool. See the module documentation.
#[derive(Clone, Debug)]
pub struct Matchmaker<K: Ord + Copy> {
    config: MatchConfig,
    tickets: BTreeMap<K, Ticket<K>>,
    /// Per table size, the tickets by rating.
    buckets: [BTreeSet<Entry<K>>; BUCKETS],
    /// Every ticket by age, oldest first.
    by_age: BTreeSet<(Time, K)>,
    /// How many tickets joined the pool at each instant: finds the oldest ticket still
    /// settling in O(log n).
    arrivals: BTreeMap<Time, usize>,
    /// When the next pass over the buckets is due (None: no bucket could seat a table).
    next_pass: Option<Time>,
}

fn bucket_of(seats: u8) -> Option<usize> {
    (PLAYERS_MIN..=PLAYERS_MAX)
        .contains(&seats)
        .then(|| usize::from(seats - PLAYERS_MIN))
}

fn size_of(bucket: usize) -> u8 {
    PLAYERS_MIN + u8::try_from(bucket).unwrap_or(0)
}

impl<K: Ord + Copy> Matchmaker<K> {
    pub fn new(config: MatchConfig) -> Self {
        Matchmaker {
            config,
            tickets: BTreeMap::new(),
            buckets: Default::default(),
            by_age: BTreeSet::new(),
            arrivals: BTreeMap::new(),
            next_pass: None,
        }
    }

    pub fn config(&self) -> MatchConfig {
        self.config
    }

    /// Tickets waiting.
    pub fn len(&self) -> usize {
        self.tickets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tickets.is_empty()
    }

    /// The ticket of `key`, while it waits.
    pub fn ticket(&self, key: K) -> Option<&Ticket<K>> {
        self.tickets.get(&key)
    }

    /// Every ticket, by key.
    pub fn tickets(&self) -> impl Iterator<Item = &Ticket<K>> {
        self.tickets.values()
    }

    /// Puts `key` in the pool for a table of `seats` (a ticket it holds already is
    /// replaced, keeping its place in time), and appends the group it completes, if
    /// any, to `out`. Returns when the ticket joined the pool.
    pub fn enqueue(
        &mut self,
        now: Time,
        key: K,
        seats: u8,
        rating: f64,
        out: &mut Vec<Group<K>>,
    ) -> Result<Time, QueueError> {
        let bucket = bucket_of(seats).ok_or(QueueError::BadSeats)?;
        let since = match self.cancel(key) {
            Some(old) => old.since,
            None if self.tickets.len() >= self.config.tickets_max => {
                return Err(QueueError::Full);
            }
            None => now,
        };
        let ticket = Ticket {
            key,
            seats,
            rating_milli: rating_milli(rating),
            since,
        };
        self.insert(ticket, bucket);
        let entry = (ticket.rating_milli, since, key);
        if self.is_settled(now, since)
            && let Some(window) = self.best_window_around(now, bucket, entry)
        {
            out.push(self.take_group(seats, &window, false));
        }
        self.schedule_pass(now);
        Ok(since)
    }

    /// Keeps `ticket` in the pool as it is (its own `since`), without looking for a
    /// group: for a pool whose groups are formed elsewhere, from the tickets of every
    /// shard ([`form_groups`]). A ticket of the same key is replaced.
    pub fn hold(&mut self, ticket: Ticket<K>) -> Result<(), QueueError> {
        let bucket = bucket_of(ticket.seats).ok_or(QueueError::BadSeats)?;
        if self.cancel(ticket.key).is_none() && self.tickets.len() >= self.config.tickets_max {
            return Err(QueueError::Full);
        }
        self.insert(ticket, bucket);
        Ok(())
    }

    /// Puts `ticket` in every index (its key holds none).
    fn insert(&mut self, ticket: Ticket<K>, bucket: usize) {
        self.tickets.insert(ticket.key, ticket);
        self.by_age.insert((ticket.since, ticket.key));
        *self.arrivals.entry(ticket.since).or_default() += 1;
        if let Some(b) = self.buckets.get_mut(bucket) {
            b.insert((ticket.rating_milli, ticket.since, ticket.key));
        }
    }

    /// Whether a ticket that joined at `since` may be grouped at `now`.
    fn is_settled(&self, now: Time, since: Time) -> bool {
        since.plus_us(self.config.settle_us) <= now
    }

    /// When the oldest ticket still settling at `now` settles, if one is.
    fn next_settled(&self, now: Time) -> Option<Time> {
        if self.config.settle_us == 0 {
            return None;
        }
        let cutoff = Time(now.as_micros().saturating_sub(self.config.settle_us));
        self.arrivals
            .range((Bound::Excluded(cutoff), Bound::Unbounded))
            .next()
            .map(|(since, _)| since.plus_us(self.config.settle_us))
    }

    /// Takes `key`'s ticket out of the pool, returning it.
    pub fn cancel(&mut self, key: K) -> Option<Ticket<K>> {
        let ticket = self.tickets.remove(&key)?;
        self.by_age.remove(&(ticket.since, key));
        if let Some(n) = self.arrivals.get_mut(&ticket.since) {
            *n -= 1;
            if *n == 0 {
                self.arrivals.remove(&ticket.since);
            }
        }
        if let Some(b) = bucket_of(ticket.seats).and_then(|i| self.buckets.get_mut(i)) {
            b.remove(&(ticket.rating_milli, ticket.since, key));
        }
        if self.buckets_could_seat().is_none() {
            self.next_pass = None;
        }
        Some(ticket)
    }

    /// When [`Matchmaker::poll`] has work: the next pass, or the oldest ticket's
    /// `QUICK_PLAY_WAIT` running out.
    pub fn next_wake(&self) -> Option<Time> {
        let expiry = self
            .by_age
            .first()
            .map(|(since, _)| since.plus_us(self.config.wait_us));
        match (self.next_pass, expiry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Forms every group due at `now`: a pass over the buckets if one is due, then a
    /// table for each ticket that has waited `QUICK_PLAY_WAIT` (with the closest
    /// tickets of its bucket, AI seats for the rest).
    pub fn poll(&mut self, now: Time, out: &mut Vec<Group<K>>) {
        if self.next_pass.is_some_and(|t| t <= now) {
            self.next_pass = None;
            for bucket in 0..BUCKETS {
                self.pass(now, bucket, out);
            }
        }
        while let Some(&(since, key)) = self.by_age.first() {
            if since.plus_us(self.config.wait_us) > now {
                break;
            }
            let Some(ticket) = self.tickets.get(&key).copied() else {
                self.by_age.remove(&(since, key));
                continue;
            };
            let window = self.closest(now, ticket);
            out.push(self.take_group(ticket.seats, &window, true));
        }
        self.schedule_pass(now);
    }

    /// The first bucket holding at least a table's worth of tickets.
    fn buckets_could_seat(&self) -> Option<usize> {
        (0..BUCKETS).find(|&i| {
            self.buckets
                .get(i)
                .is_some_and(|b| b.len() >= usize::from(size_of(i)))
        })
    }

    /// Sets the next pass while a bucket could seat a table: one interval ahead, or
    /// sooner when a ticket settles.
    fn schedule_pass(&mut self, now: Time) {
        if self.buckets_could_seat().is_none() {
            self.next_pass = None;
            return;
        }
        let regular = self
            .next_pass
            .unwrap_or_else(|| now.plus_us(self.config.interval_us.max(1)));
        self.next_pass = Some(match self.next_settled(now) {
            Some(settles) => settles.min(regular),
            None => regular,
        });
    }

    /// Whether `window` (entries of one bucket in rating order) is a table every member
    /// accepts at `now`.
    fn fits(&self, now: Time, window: &[Entry<K>]) -> bool {
        let (Some(first), Some(last)) = (window.first(), window.last()) else {
            return false;
        };
        let spread = last.0.saturating_sub(first.0);
        window
            .iter()
            .all(|(_, since, _)| spread <= accepted_spread_milli(now.since_us(*since)))
    }

    /// The tightest table around `entry` (just put in `bucket`) that fits, if any.
    fn best_window_around(
        &self,
        now: Time,
        bucket: usize,
        entry: Entry<K>,
    ) -> Option<Vec<Entry<K>>> {
        let b = self.buckets.get(bucket)?;
        let n = usize::from(size_of(bucket));
        if b.len() < n {
            return None;
        }
        let mut around: Vec<Entry<K>> = b.range(..entry).rev().take(n - 1).copied().collect();
        around.reverse();
        let at = around.len();
        around.push(entry);
        around.extend(
            b.range((std::ops::Bound::Excluded(entry), std::ops::Bound::Unbounded))
                .take(n - 1)
                .copied(),
        );
        let first_start = (at + 1).saturating_sub(n);
        (first_start..=at)
            .filter(|&s| s + n <= around.len())
            .filter_map(|s| around.get(s..s + n))
            .filter(|w| self.fits(now, w))
            .min_by_key(|w| w.last().map_or(0, |l| l.0) - w.first().map_or(0, |f| f.0))
            .map(<[Entry<K>]>::to_vec)
    }

    /// One pass over a bucket in rating order: each run of a table's worth that fits
    /// is seated.
    fn pass(&mut self, now: Time, bucket: usize, out: &mut Vec<Group<K>>) {
        let n = usize::from(size_of(bucket));
        let Some(b) = self.buckets.get(bucket) else {
            return;
        };
        if b.len() < n {
            return;
        }
        let entries: Vec<Entry<K>> = b
            .iter()
            .filter(|(_, since, _)| self.is_settled(now, *since))
            .copied()
            .collect();
        let mut windows = Vec::new();
        let mut i = 0;
        while let Some(w) = entries.get(i..i + n) {
            if self.fits(now, w) {
                windows.push(w.to_vec());
                i += n;
            } else {
                i += 1;
            }
        }
        for w in windows {
            out.push(self.take_group(size_of(bucket), &w, false));
        }
    }

    /// `ticket` and the settled tickets of its bucket closest to it in rating, up to a
    /// table.
    fn closest(&self, now: Time, ticket: Ticket<K>) -> Vec<Entry<K>> {
        let entry = (ticket.rating_milli, ticket.since, ticket.key);
        let mut chosen = vec![entry];
        let Some(b) = bucket_of(ticket.seats).and_then(|i| self.buckets.get(i)) else {
            return chosen;
        };
        let settled = |e: &&Entry<K>| self.is_settled(now, e.1);
        let mut below = b.range(..entry).rev().filter(settled).peekable();
        let mut above = b
            .range((Bound::Excluded(entry), Bound::Unbounded))
            .filter(settled)
            .peekable();
        while chosen.len() < usize::from(ticket.seats) {
            let next = match (below.peek(), above.peek()) {
                (Some(l), Some(h)) => {
                    if entry.0.saturating_sub(l.0) <= h.0.saturating_sub(entry.0) {
                        below.next()
                    } else {
                        above.next()
                    }
                }
                (Some(_), None) => below.next(),
                (None, Some(_)) => above.next(),
                (None, None) => None,
            };
            match next {
                Some(e) => chosen.push(*e),
                None => break,
            }
        }
        chosen
    }

    /// Takes the tickets of `window` out of the pool as a group, oldest first.
    fn take_group(&mut self, seats: u8, window: &[Entry<K>], waited_out: bool) -> Group<K> {
        let mut players: Vec<Ticket<K>> = window
            .iter()
            .filter_map(|(_, _, key)| self.cancel(*key))
            .collect();
        players.sort_by_key(|t| (t.since, t.key));
        Group {
            seats,
            players,
            waited_out,
        }
    }

    /// Checks the pool's indexes against its tickets (for tests): every ticket once in
    /// its bucket and in the age index, nothing else there, and the bound held.
    pub fn check(&self) -> Result<(), String> {
        if self.tickets.len() > self.config.tickets_max {
            return Err(format!(
                "{} tickets over QUICK_PLAY_MAX {}",
                self.tickets.len(),
                self.config.tickets_max
            ));
        }
        let in_buckets: usize = self.buckets.iter().map(BTreeSet::len).sum();
        if in_buckets != self.tickets.len() || self.by_age.len() != self.tickets.len() {
            return Err(format!(
                "{} tickets, {in_buckets} in buckets, {} by age",
                self.tickets.len(),
                self.by_age.len()
            ));
        }
        for t in self.tickets.values() {
            let in_bucket = bucket_of(t.seats)
                .and_then(|i| self.buckets.get(i))
                .is_some_and(|b| b.contains(&(t.rating_milli, t.since, t.key)));
            if !in_bucket || !self.by_age.contains(&(t.since, t.key)) {
                return Err("a ticket missing from an index".to_owned());
            }
        }
        let mut arrivals: BTreeMap<Time, usize> = BTreeMap::new();
        for t in self.tickets.values() {
            *arrivals.entry(t.since).or_default() += 1;
        }
        if arrivals != self.arrivals {
            return Err("the arrivals index is stale".to_owned());
        }
        Ok(())
    }
}
