//! Token bucket, client-IP keys and the keyed rate limiter with a hard table cap.
//!
//! Layer 2 of the load control (abuse limits): `MESSAGE_RATE`/`MESSAGE_BURST` use one
//! [`TokenBucket`] per connection, `LOBBY_CREATE_RATE` one bucket per client IP through
//! [`KeyedRateLimiter`]. All arithmetic is integer, so a decision depends only on the
//! inputs and never on float rounding.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::vocabulary::time::{Time, US_PER_SEC};

/// A refill rate: `tokens` new tokens every `period_us` microseconds.
///
/// A rational rate keeps both "10 per second" and "10 per minute" exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    tokens: u64,
    period_us: u64,
}

impl Rate {
    /// `tokens` every `period_us`. A zero period is read as one microsecond.
    pub fn new(tokens: u64, period_us: u64) -> Rate {
        Rate {
            tokens,
            period_us: period_us.max(1),
        }
    }

    pub fn per_second(tokens: u64) -> Rate {
        Rate::new(tokens, US_PER_SEC)
    }

    pub fn per_minute(tokens: u64) -> Rate {
        Rate::new(tokens, 60 * US_PER_SEC)
    }

    pub fn tokens(self) -> u64 {
        self.tokens
    }

    pub fn period_us(self) -> u64 {
        self.period_us
    }
}

/// The classic token bucket: holds at most `burst` tokens, refills at `rate`, each
/// action takes one token. It starts full.
///
/// The fill level is kept in units of 1/`period_us` token, so that every microsecond
/// adds exactly `rate.tokens` units: refill is one multiplication, with no rounding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    rate: Rate,
    burst: u64,
    /// Fill level in units; one token is `rate.period_us` units.
    level: u128,
    /// The instant `level` was computed for; `now` before it is clamped to it.
    last: Time,
}

impl TokenBucket {
    /// A full bucket at `now`.
    pub fn new(rate: Rate, burst: u64, now: Time) -> TokenBucket {
        let mut bucket = TokenBucket {
            rate,
            burst,
            level: 0,
            last: now,
        };
        bucket.level = bucket.capacity();
        bucket
    }

    pub fn rate(&self) -> Rate {
        self.rate
    }

    pub fn burst(&self) -> u64 {
        self.burst
    }

    fn capacity(&self) -> u128 {
        u128::from(self.burst) * u128::from(self.rate.period_us)
    }

    fn unit(&self) -> u128 {
        u128::from(self.rate.period_us)
    }

    /// Brings the level forward to `now` (clamped to the last instant seen).
    fn refill(&mut self, now: Time) {
        if now <= self.last {
            return;
        }
        let elapsed_us = u128::from(now.since_us(self.last));
        let added = elapsed_us.saturating_mul(u128::from(self.rate.tokens));
        self.level = self.level.saturating_add(added).min(self.capacity());
        self.last = now;
    }

    /// Takes one token if there is one. Returns whether the action is allowed.
    pub fn try_take(&mut self, now: Time) -> bool {
        self.refill(now);
        let unit = self.unit();
        if self.level >= unit {
            self.level -= unit;
            true
        } else {
            false
        }
    }

    /// Whole tokens available at `now` (does not change the bucket's clock).
    pub fn available(&self, now: Time) -> u64 {
        let mut copy = self.clone();
        copy.refill(now);
        u64::try_from(copy.level / copy.unit()).unwrap_or(u64::MAX)
    }

    /// Whether the bucket is full at `now`: then it is equivalent to a fresh one.
    pub fn is_full(&self, now: Time) -> bool {
        self.full_at() <= now.max(self.last)
    }

    /// The first instant at which the bucket is full again if nothing is taken;
    /// [`Time::MAX`] when it never refills.
    pub fn full_at(&self) -> Time {
        let missing = self.capacity().saturating_sub(self.level);
        self.after_units(missing)
    }

    /// Microseconds from `now` until one token is available (0 if one is now).
    /// `u64::MAX` when it never will be.
    pub fn wait_us(&self, now: Time) -> u64 {
        let missing = self.unit().saturating_sub(self.level);
        if self.unit() > self.capacity() {
            return u64::MAX; // burst 0: never a token
        }
        let ready = self.after_units(missing);
        if ready == Time::MAX {
            u64::MAX
        } else {
            ready.since_us(now)
        }
    }

    /// `self.last` plus the time to gain `units`, rounded up.
    fn after_units(&self, units: u128) -> Time {
        if units == 0 {
            return self.last;
        }
        let per_us = u128::from(self.rate.tokens);
        if per_us == 0 {
            return Time::MAX;
        }
        let us = units.div_ceil(per_us);
        self.last.plus_us(u64::try_from(us).unwrap_or(u64::MAX))
    }
}

/// The key of a client address for per-IP limits.
///
/// IPv4 counts as is; an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is the IPv4 address
/// it carries; any other IPv6 address is reduced to its /64 prefix, because one
/// subscriber usually gets a whole /64 and could otherwise rotate through 2^64 keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpKey {
    V4(Ipv4Addr),
    /// An IPv6 address with its low 64 bits zeroed.
    V6Prefix(Ipv6Addr),
}

impl IpKey {
    /// The address this key stands for (an IPv6 prefix as its first address), so that
    /// `IpKey::new(key.addr()) == key`.
    pub fn addr(self) -> IpAddr {
        match self {
            IpKey::V4(v4) => IpAddr::V4(v4),
            IpKey::V6Prefix(v6) => IpAddr::V6(v6),
        }
    }

    pub fn new(ip: IpAddr) -> IpKey {
        match ip {
            IpAddr::V4(v4) => IpKey::V4(v4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpKey::V4(v4),
                None => IpKey::V6Prefix(Ipv6Addr::from(
                    u128::from(v6) & 0xffff_ffff_ffff_ffff_0000_0000_0000_0000,
                )),
            },
        }
    }
}

impl From<IpAddr> for IpKey {
    fn from(ip: IpAddr) -> IpKey {
        IpKey::new(ip)
    }
}

impl fmt::Display for IpKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpKey::V4(v4) => write!(f, "{v4}"),
            IpKey::V6Prefix(v6) => write!(f, "{v6}/64"),
        }
    }
}

/// One [`TokenBucket`] per key (e.g. per [`IpKey`]) in a table of at most `entries_max`
/// buckets.
///
/// A bucket that has refilled completely is equivalent to a fresh one, so it may be
/// forgotten: [`sweep`](Self::sweep) drops all of them. The table can never exceed
/// `entries_max` entries, whatever the number of distinct keys: when a new key arrives
/// at the cap, the bucket that is full, or will soonest be full, is evicted first. An
/// index ordered by that instant makes this O(log n), with no scan. Evicting a bucket
/// that is not yet full forgets part of that key's history (it starts fresh next time);
/// [`evicted_unfull_total`](Self::evicted_unfull_total) counts how often that happened,
/// which only an attacker cycling through more keys than the cap can cause.
/// With `entries_max` 0 nothing is remembered and every key sees a fresh bucket.
#[derive(Clone, Debug)]
pub struct KeyedRateLimiter<K: Ord + Clone> {
    rate: Rate,
    burst: u64,
    entries_max: usize,
    buckets: BTreeMap<K, TokenBucket>,
    /// `(bucket.full_at(), key)` for every bucket in `buckets`.
    by_full_at: BTreeSet<(Time, K)>,
    /// The latest `now` seen; earlier inputs are clamped to it.
    last: Time,
    evicted_unfull_total: u64,
}

impl<K: Ord + Clone> KeyedRateLimiter<K> {
    pub fn new(rate: Rate, burst: u64, entries_max: usize) -> Self {
        KeyedRateLimiter {
            rate,
            burst,
            entries_max,
            buckets: BTreeMap::new(),
            by_full_at: BTreeSet::new(),
            last: Time::ZERO,
            evicted_unfull_total: 0,
        }
    }

    fn clamp(&mut self, now: Time) -> Time {
        self.last = self.last.max(now);
        self.last
    }

    /// Takes one token from `key`'s bucket; returns whether the action is allowed.
    pub fn try_take(&mut self, key: &K, now: Time) -> bool {
        let now = self.clamp(now);
        if let Some(bucket) = self.buckets.get_mut(key) {
            self.by_full_at.remove(&(bucket.full_at(), key.clone()));
            let allowed = bucket.try_take(now);
            self.by_full_at.insert((bucket.full_at(), key.clone()));
            return allowed;
        }
        let mut bucket = TokenBucket::new(self.rate, self.burst, now);
        let allowed = bucket.try_take(now);
        if bucket.is_full(now) {
            // Nothing to remember: the bucket is still equivalent to a fresh one.
            return allowed;
        }
        if self.entries_max == 0 {
            // No room at all: the bucket is forgotten at once.
            self.evicted_unfull_total = self.evicted_unfull_total.saturating_add(1);
            return allowed;
        }
        if self.buckets.len() >= self.entries_max {
            self.evict_first(now);
        }
        self.by_full_at.insert((bucket.full_at(), key.clone()));
        self.buckets.insert(key.clone(), bucket);
        allowed
    }

    /// Evicts the bucket that is full or will be full soonest.
    fn evict_first(&mut self, now: Time) {
        if let Some((full_at, key)) = self.by_full_at.pop_first() {
            if full_at > now {
                self.evicted_unfull_total = self.evicted_unfull_total.saturating_add(1);
            }
            self.buckets.remove(&key);
        }
    }

    /// Drops every bucket that is full at `now`; returns how many were dropped.
    pub fn sweep(&mut self, now: Time) -> usize {
        let now = self.clamp(now);
        let mut dropped = 0;
        while let Some((full_at, _)) = self.by_full_at.first() {
            if *full_at > now {
                break;
            }
            if let Some((_, key)) = self.by_full_at.pop_first() {
                self.buckets.remove(&key);
                dropped += 1;
            }
        }
        dropped
    }

    /// Whether `key` currently has a remembered (not fresh) bucket.
    pub fn contains(&self, key: &K) -> bool {
        self.buckets.contains_key(key)
    }

    /// Whole tokens `key` has at `now` (a forgotten key has a full bucket).
    pub fn available(&self, key: &K, now: Time) -> u64 {
        let now = now.max(self.last);
        match self.buckets.get(key) {
            Some(bucket) => bucket.available(now),
            None => self.burst,
        }
    }

    /// Microseconds until `key` has a token again (0 if it has one now).
    pub fn wait_us(&self, key: &K, now: Time) -> u64 {
        let now = now.max(self.last);
        match self.buckets.get(key) {
            Some(bucket) => bucket.wait_us(now),
            None => TokenBucket::new(self.rate, self.burst, now).wait_us(now),
        }
    }

    /// Buckets in the table; never more than `entries_max`.
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    pub fn entries_max(&self) -> usize {
        self.entries_max
    }

    /// Buckets evicted at the cap before they had refilled (with `entries_max` 0: every
    /// bucket that was not full after its take).
    pub fn evicted_unfull_total(&self) -> u64 {
        self.evicted_unfull_total
    }
}
