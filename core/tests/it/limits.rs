//! Limits and load control: token bucket, keyed limiter, connection limiter, load
//! levels and the AI circuit breaker, each checked with tables and against a reference.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;
use wizard_core::Time;
use wizard_core::machine::overload::breaker::{Admit, BreakerConfig, BreakerState, CircuitBreaker};
use wizard_core::machine::overload::connections::ConnectionLimiter;
use wizard_core::machine::overload::level::{
    LevelChange, LoadLevels, LoadThresholds, SampleClass, classify,
};
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::RefuseReason;
use wizard_core::vocabulary::limiter::{IpKey, KeyedRateLimiter, Rate, TokenBucket};
use wizard_core::vocabulary::load::LoadLevel;
use wizard_core::vocabulary::load::LoadSample;

// ---------------------------------------------------------------------------------
// Token bucket

/// A reference bucket in the "virtual scheduling" (GCRA) form: time is scaled by the
/// rate's token count, so one token is `period_us` scaled units and the state is just
/// the scaled instant at which the bucket will be full.
#[derive(Clone, Debug)]
struct RefBucket {
    tokens: u128,
    period: u128,
    burst: u128,
    full_at_scaled: u128,
}

impl RefBucket {
    fn new(rate: Rate, burst: u64, now: Time) -> RefBucket {
        RefBucket {
            tokens: u128::from(rate.tokens()),
            period: u128::from(rate.period_us()),
            burst: u128::from(burst),
            full_at_scaled: u128::from(now.0) * u128::from(rate.tokens()),
        }
    }

    fn is_full(&self, now: Time) -> bool {
        self.full_at_scaled <= u128::from(now.0) * self.tokens
    }

    fn take(&mut self, now: Time) -> bool {
        let t = u128::from(now.0) * self.tokens;
        let tat = self.full_at_scaled.max(t);
        // Missing units after this take must not exceed the capacity.
        if tat + self.period <= t + self.burst * self.period {
            self.full_at_scaled = tat + self.period;
            true
        } else {
            false
        }
    }
}

/// (rate, burst, [(at_us, allowed)])
type BucketRow = (Rate, u64, Vec<(u64, bool)>);

#[test]
fn token_bucket_table() {
    let rows: Vec<BucketRow> = vec![
        // Starts full: burst 3 at once, then refused.
        (
            Rate::per_second(1),
            3,
            vec![(0, true), (0, true), (0, true), (0, false)],
        ),
        // One token per second: a token exactly after 1 s, not a microsecond earlier.
        (
            Rate::per_second(1),
            1,
            vec![
                (0, true),
                (999_999, false),
                (1_000_000, true),
                (1_000_001, false),
            ],
        ),
        // 10 per second: 100 ms per token.
        (
            Rate::per_second(10),
            1,
            vec![(0, true), (99_999, false), (100_000, true), (200_000, true)],
        ),
        // 10 per minute (LOBBY_CREATE_RATE): 6 s per token, exactly.
        (
            Rate::per_minute(10),
            10,
            [
                vec![(0, true); 10],
                vec![
                    (0, false),
                    (5_999_999, false),
                    (6_000_000, true),
                    (6_000_000, false),
                ],
            ]
            .concat(),
        ),
        // Refill is capped at the burst.
        (
            Rate::per_second(1000),
            2,
            vec![
                (0, true),
                (0, true),
                (10_000_000, true),
                (10_000_000, true),
                (10_000_000, false),
            ],
        ),
        // A clock going backwards is clamped: no refill, no panic.
        (
            Rate::per_second(1),
            1,
            vec![
                (5_000_000, true),
                (1_000_000, false),
                (5_999_999, false),
                (6_000_000, true),
            ],
        ),
        // Burst 0 never admits; rate 0 never refills.
        (
            Rate::per_second(5),
            0,
            vec![(0, false), (10_000_000, false)],
        ),
        (Rate::new(0, 1), 1, vec![(0, true), (u64::MAX, false)]),
    ];
    for (i, (rate, burst, steps)) in rows.into_iter().enumerate() {
        let mut bucket = TokenBucket::new(rate, burst, Time::ZERO);
        for (j, (at, expected)) in steps.into_iter().enumerate() {
            assert_eq!(
                bucket.try_take(Time(at)),
                expected,
                "row {i} step {j} at {at}"
            );
        }
    }
}

#[test]
fn token_bucket_wait_and_full_at() {
    let mut bucket = TokenBucket::new(Rate::per_second(10), 2, Time(1_000));
    assert!(bucket.is_full(Time(1_000)));
    assert_eq!(bucket.wait_us(Time(1_000)), 0);
    assert!(bucket.try_take(Time(1_000)));
    assert!(bucket.try_take(Time(1_000)));
    assert_eq!(bucket.available(Time(1_000)), 0);
    assert_eq!(bucket.wait_us(Time(1_000)), 100_000);
    assert_eq!(bucket.full_at(), Time(201_000));
    assert!(!bucket.is_full(Time(200_999)));
    assert!(bucket.is_full(Time(201_000)));
    assert_eq!(bucket.available(Time(150_000)), 1);
    assert_eq!(
        TokenBucket::new(Rate::per_second(1), 0, Time::ZERO).wait_us(Time::ZERO),
        u64::MAX
    );
}

fn arb_rate() -> impl Strategy<Value = Rate> {
    (
        1u64..50,
        prop_oneof![Just(1_000_000u64), Just(60_000_000), 1u64..5_000_000],
    )
        .prop_map(|(tokens, period)| Rate::new(tokens, period))
}

proptest! {
    /// Over every window [t1, t2], accepted <= burst + rate x (t2 - t1), and every
    /// decision equals the reference's.
    #[test]
    fn token_bucket_conforms(
        rate in arb_rate(),
        burst in 0u64..20,
        steps in prop::collection::vec((0u64..400_000, 1usize..6), 1..80),
    ) {
        let mut bucket = TokenBucket::new(rate, burst, Time::ZERO);
        let mut reference = RefBucket::new(rate, burst, Time::ZERO);
        let mut accepted_at: Vec<u64> = Vec::new();
        let mut now = 0u64;
        for (dt, attempts) in steps {
            now += dt;
            for _ in 0..attempts {
                let got = bucket.try_take(Time(now));
                prop_assert_eq!(got, reference.take(Time(now)));
                if got {
                    accepted_at.push(now);
                }
            }
        }
        for (i, &t1) in accepted_at.iter().enumerate() {
            for (k, &t2) in accepted_at.iter().enumerate().skip(i) {
                let accepted = (k - i + 1) as u128;
                let refill = u128::from(rate.tokens()) * u128::from(t2 - t1) / u128::from(rate.period_us());
                prop_assert!(accepted <= u128::from(burst) + refill, "{} accepted in [{}, {}]", accepted, t1, t2);
            }
        }
    }

    /// A sender that never exceeds the rate (after an initial burst that leaves at
    /// least one token) is never refused.
    #[test]
    fn steady_sender_below_rate_never_refused(
        rate in arb_rate(),
        burst in 1u64..20,
        initial in 0u64..20,
        slack in prop::collection::vec(0u64..50_000, 1..100),
    ) {
        let mut bucket = TokenBucket::new(rate, burst, Time(7));
        for _ in 0..initial.min(burst - 1) {
            prop_assert!(bucket.try_take(Time(7)));
        }
        let interval_us = rate.period_us().div_ceil(rate.tokens());
        let mut now = 7u64;
        for extra in slack {
            now += interval_us + extra;
            prop_assert!(bucket.try_take(Time(now)), "refused at {}", now);
        }
    }
}

// ---------------------------------------------------------------------------------
// IP keys

#[test]
fn ip_key_table() {
    let rows = [
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
        ("::1", "::/64"),
        // IPv4-compatible (not mapped) addresses are plain IPv6.
        ("::192.0.2.7", "::/64"),
    ];
    for (ip, shown) in rows {
        let ip: IpAddr = ip.parse().unwrap();
        assert_eq!(IpKey::new(ip).to_string(), shown, "{ip}");
    }
    let a: IpAddr = "2001:db8::1".parse().unwrap();
    let b: IpAddr = "2001:db8::2:1".parse().unwrap();
    let c: IpAddr = "2001:db8:0:1::1".parse().unwrap();
    assert_eq!(IpKey::from(a), IpKey::from(b));
    assert_ne!(IpKey::from(a), IpKey::from(c));
    let v4: IpAddr = "10.0.0.1".parse().unwrap();
    let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
    assert_eq!(IpKey::from(v4), IpKey::from(mapped));
}

// ---------------------------------------------------------------------------------
// Keyed rate limiter

#[test]
fn keyed_limiter_evicts_the_soonest_full() {
    // 1 token/s, burst 2, room for two keys.
    let mut limiter = KeyedRateLimiter::new(Rate::per_second(1), 2, 2);
    assert!(limiter.try_take(&1u32, Time(0))); // key 1 full again at 1 s
    assert!(limiter.try_take(&2u32, Time(0)));
    assert!(limiter.try_take(&2u32, Time(0))); // key 2 full again at 2 s
    assert_eq!(limiter.len(), 2);
    // Key 3 at the cap evicts key 1 (full soonest, and already full at 1.5 s).
    assert!(limiter.try_take(&3u32, Time(1_500_000)));
    assert!(!limiter.contains(&1));
    assert!(limiter.contains(&2) && limiter.contains(&3));
    assert_eq!(limiter.evicted_unfull_total(), 0);
    // Key 4 evicts key 2 (full at 2 s) although it is not full yet.
    assert!(limiter.try_take(&4u32, Time(1_600_000)));
    assert!(!limiter.contains(&2));
    assert_eq!(limiter.evicted_unfull_total(), 1);
    assert_eq!(limiter.len(), 2);
    // Sweep drops what is full: key 3 full at 2.5 s, key 4 at 2.6 s.
    assert_eq!(limiter.sweep(Time(2_550_000)), 1);
    assert!(limiter.contains(&4));
    assert_eq!(limiter.sweep(Time(2_600_000)), 1);
    assert!(limiter.is_empty());
    // Time going backwards is clamped.
    assert!(limiter.try_take(&5u32, Time(0)));
    assert_eq!(limiter.wait_us(&5, Time(0)), 0);
    assert_eq!(limiter.available(&5, Time(0)), 1);
}

#[test]
fn keyed_limiter_stays_within_cap_under_thousands_of_keys() {
    let entries_max = 64;
    let mut limiter = KeyedRateLimiter::new(Rate::per_minute(10), 10, entries_max);
    for i in 0..20_000u32 {
        let ip = IpAddr::from([10, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
        let now = Time(u64::from(i) * 100);
        assert!(limiter.try_take(&IpKey::from(ip), now));
        assert!(limiter.len() <= entries_max);
        if i % 1000 == 0 {
            limiter.sweep(now);
            assert!(limiter.len() <= entries_max);
        }
    }
    assert_eq!(limiter.len(), entries_max);
    // One minute later everything has refilled and the sweep empties the table.
    assert_eq!(limiter.sweep(Time(2_000_000 + 60_000_000)), entries_max);
    assert!(limiter.is_empty());
}

#[derive(Clone, Debug)]
enum KeyedOp {
    Take { key: u8, dt_us: u64 },
    Sweep { dt_us: u64 },
}

fn arb_keyed_op() -> impl Strategy<Value = KeyedOp> {
    prop_oneof![
        8 => (0u8..24, 0u64..300_000).prop_map(|(key, dt_us)| KeyedOp::Take { key, dt_us }),
        1 => (0u64..300_000).prop_map(|dt_us| KeyedOp::Sweep { dt_us }),
    ]
}

proptest! {
    /// Never above entries_max; every key whose bucket was never evicted while not
    /// full decides exactly like an unbounded table of reference buckets.
    #[test]
    fn keyed_limiter_matches_unbounded_reference(
        rate in arb_rate(),
        burst in 1u64..6,
        entries_max in 0usize..30,
        ops in prop::collection::vec(arb_keyed_op(), 1..300),
    ) {
        let mut limiter = KeyedRateLimiter::new(rate, burst, entries_max);
        let mut reference: BTreeMap<u8, RefBucket> = BTreeMap::new();
        let mut tainted: BTreeSet<u8> = BTreeSet::new();
        let mut detected_evictions = 0u64;
        let mut now = 0u64;
        for op in ops {
            match op {
                KeyedOp::Take { key, dt_us } => {
                    now += dt_us;
                    let t = Time(now);
                    let forgotten_unfull = !limiter.contains(&key)
                        && reference.get(&key).is_some_and(|r| !r.is_full(t));
                    if forgotten_unfull {
                        tainted.insert(key);
                        detected_evictions += 1;
                    }
                    let expected = reference
                        .entry(key)
                        .or_insert_with(|| RefBucket::new(rate, burst, t))
                        .take(t);
                    let got = limiter.try_take(&key, t);
                    if !tainted.contains(&key) {
                        prop_assert_eq!(got, expected, "key {} at {}", key, now);
                    }
                }
                KeyedOp::Sweep { dt_us } => {
                    now += dt_us;
                    limiter.sweep(Time(now));
                    for key in reference.keys() {
                        if limiter.contains(key) {
                            prop_assert!(!reference[key].is_full(Time(now)) || tainted.contains(key));
                        }
                    }
                }
            }
            prop_assert!(limiter.len() <= entries_max);
        }
        prop_assert!(detected_evictions <= limiter.evicted_unfull_total());
        if entries_max >= 24 {
            prop_assert!(tainted.is_empty());
        }
    }
}

// ---------------------------------------------------------------------------------
// Connection limiter

#[test]
fn connection_limiter_table() {
    let ip = |s: &str| IpKey::from(s.parse::<IpAddr>().unwrap());
    let a = ip("192.0.2.1");
    let b = ip("192.0.2.2");
    let mut limiter = ConnectionLimiter::new(3, 2);
    assert_eq!(limiter.try_open(ConnId(1), a), Ok(()));
    assert_eq!(limiter.try_open(ConnId(2), a), Ok(()));
    assert_eq!(limiter.try_open(ConnId(3), a), Err(RefuseReason::PerIp));
    assert_eq!(
        limiter.try_open(ConnId(1), a),
        Ok(()),
        "an open id keeps its slot"
    );
    assert_eq!(limiter.open_for(a), 2);
    assert_eq!(limiter.try_open(ConnId(4), b), Ok(()));
    assert_eq!(limiter.try_open(ConnId(5), b), Err(RefuseReason::Total));
    assert_eq!(limiter.open(), 3);
    // Past the total (a player of a running game coming back) only the per-IP cap holds.
    assert!(limiter.ip_full(a) && !limiter.ip_full(b));
    assert_eq!(
        limiter.try_open_past_total(ConnId(6), a),
        Err(RefuseReason::PerIp)
    );
    assert_eq!(limiter.try_open_past_total(ConnId(6), b), Ok(()));
    assert_eq!(limiter.open(), 4);
    assert!(limiter.ip_full(b));
    assert!(limiter.close(ConnId(6)));
    assert!(limiter.close(ConnId(1)));
    assert!(!limiter.close(ConnId(1)), "double close is a no-op");
    assert!(!limiter.close(ConnId(99)), "unknown id is a no-op");
    assert_eq!(limiter.open(), 2);
    assert_eq!(limiter.open_for(a), 1);
    assert!(limiter.close(ConnId(2)));
    assert_eq!(limiter.open_for(a), 0);
    assert_eq!(limiter.ips(), 1, "per-IP entries are removed at zero");
    assert_eq!(RefuseReason::PerIp.to_string(), "per_ip");
}

#[derive(Clone, Debug)]
enum ConnOp {
    Open { id: u64, ip: u8 },
    Close { id: u64 },
}

proptest! {
    #[test]
    fn connection_limiter_matches_reference(
        conns_max in 0usize..12,
        conns_per_ip_max in 0usize..5,
        ops in prop::collection::vec(prop_oneof![
            (0u64..20, 0u8..5).prop_map(|(id, ip)| ConnOp::Open { id, ip }),
            (0u64..24).prop_map(|id| ConnOp::Close { id }),
        ], 1..200),
    ) {
        let key = |ip: u8| IpKey::from(IpAddr::from([198, 51, 100, ip]));
        let mut limiter = ConnectionLimiter::new(conns_max, conns_per_ip_max);
        let mut model: Vec<(u64, u8)> = Vec::new();
        for op in ops {
            match op {
                ConnOp::Open { id, ip } => {
                    let expected = if model.iter().any(|&(i, _)| i == id) {
                        Ok(())
                    } else if model.len() >= conns_max {
                        Err(RefuseReason::Total)
                    } else if model.iter().filter(|&&(_, p)| p == ip).count() >= conns_per_ip_max {
                        Err(RefuseReason::PerIp)
                    } else {
                        model.push((id, ip));
                        Ok(())
                    };
                    prop_assert_eq!(limiter.try_open(ConnId(id), key(ip)), expected);
                }
                ConnOp::Close { id } => {
                    let before = model.len();
                    model.retain(|&(i, _)| i != id);
                    prop_assert_eq!(limiter.close(ConnId(id)), model.len() < before);
                }
            }
            prop_assert_eq!(limiter.open(), model.len());
            prop_assert!(limiter.open() <= conns_max);
            for ip in 0u8..5 {
                let count = model.iter().filter(|&&(_, p)| p == ip).count();
                prop_assert_eq!(limiter.open_for(key(ip)), count);
                prop_assert!(count <= conns_per_ip_max);
            }
            let distinct: BTreeSet<u8> = model.iter().map(|&(_, p)| p).collect();
            prop_assert_eq!(limiter.ips(), distinct.len());
        }
    }
}

// ---------------------------------------------------------------------------------
// Load levels

fn sample(lag_p99_ms: u64, lag_max_ms: u64, cpu: f64, throttled: f64) -> LoadSample {
    LoadSample {
        lag_us_max: lag_max_ms * 1000,
        lag_us_p99: lag_p99_ms * 1000,
        cpu_share: cpu,
        throttled_share: throttled,
    }
}

#[test]
fn classify_table() {
    use SampleClass::*;
    let t = LoadThresholds::default();
    let rows = [
        (sample(0, 0, 0.0, 0.0), Normal),
        (sample(99, 99, 0.69, 0.49), Normal),
        // A single hiccup (max) below the severe threshold does not count.
        (sample(5, 900, 0.1, 0.0), Normal),
        (sample(100, 100, 0.0, 0.0), Busy),
        (sample(0, 0, 0.7, 0.0), Busy),
        (sample(249, 249, 0.89, 0.0), Busy),
        (sample(250, 250, 0.0, 0.0), Overload),
        (sample(0, 0, 0.9, 0.0), Overload),
        (sample(0, 0, 0.0, 0.5), Overload),
        (sample(0, 0, 1.0, 1.0), Overload),
        (sample(0, 1000, 0.0, 0.0), Severe),
        (sample(999, 999, 1.0, 1.0), Overload),
        (sample(0, 5000, 0.0, 0.0), Severe),
        (sample(0, 0, f64::NAN, f64::NAN), Normal),
    ];
    for (i, (s, expected)) in rows.iter().enumerate() {
        assert_eq!(classify(&t, s), *expected, "row {i}: {s:?}");
    }
}

#[test]
fn load_levels_follow_the_seed_scenario() {
    use LoadLevel::*;
    use SampleClass as C;
    // (class, level after it, change reported)
    let n = C::Normal;
    let rows: Vec<(SampleClass, LoadLevel, bool)> = [
        vec![
            (n, Normal, false),
            (C::Busy, Busy, true),
            (C::Overload, Busy, false),
            (C::Overload, Busy, false),
        ],
        vec![(C::Overload, Overloaded, true)],
        // Nine calm samples are not enough; a busy one among ten means busy.
        vec![(C::Busy, Overloaded, false)],
        vec![(n, Overloaded, false); 8],
        vec![(n, Busy, true)],
        // The normal run that began while overloaded continues: nine normals so far.
        vec![(n, Normal, true)],
        // One severe sample enters overloaded at once.
        vec![(C::Severe, Overloaded, true)],
        vec![(n, Overloaded, false); 9],
        vec![(n, Normal, true)],
    ]
    .concat();
    let mut levels = LoadLevels::new(LoadThresholds::default());
    for (i, (class, level, changed)) in rows.into_iter().enumerate() {
        let from = levels.level();
        let change = levels.observe_class(class);
        assert_eq!(levels.level(), level, "step {i}");
        let expected = changed.then_some(LevelChange {
            from,
            to: level,
            class,
        });
        assert_eq!(change, expected, "step {i}");
    }
}

#[test]
fn forced_level_pins_and_releases() {
    let mut levels = LoadLevels::new(LoadThresholds::default());
    assert_eq!(
        levels.force(Some(LoadLevel::Overloaded)),
        Some((LoadLevel::Normal, LoadLevel::Overloaded))
    );
    assert_eq!(levels.observe(&sample(0, 0, 0.0, 0.0)), None);
    assert_eq!(levels.observe(&sample(300, 300, 0.0, 0.0)), None);
    assert_eq!(levels.level(), LoadLevel::Overloaded);
    assert_eq!(levels.state().level, LoadLevel::Busy);
    assert_eq!(
        levels.force(None),
        Some((LoadLevel::Overloaded, LoadLevel::Busy))
    );
    assert_eq!(levels.force(None), None);
}

/// An independent reading of the rule table: windows over the class history.
fn reference_level(t: &LoadThresholds, prev: LoadLevel, history: &[SampleClass]) -> LoadLevel {
    let last_n = |n: u32, pred: &dyn Fn(SampleClass) -> bool| {
        let n = n.max(1) as usize;
        history.len() >= n && history[history.len() - n..].iter().all(|&c| pred(c))
    };
    let latest = *history.last().unwrap();
    let overload = |c: SampleClass| c == SampleClass::Overload || c == SampleClass::Severe;
    let enters = latest == SampleClass::Severe || last_n(t.overload_samples, &overload);
    let all_normal = last_n(t.recover_samples, &|c| c == SampleClass::Normal);
    let all_calm = last_n(t.recover_samples, &|c| !overload(c));
    match prev {
        LoadLevel::Normal | LoadLevel::Busy if enters => LoadLevel::Overloaded,
        LoadLevel::Normal if latest != SampleClass::Normal => LoadLevel::Busy,
        LoadLevel::Normal => LoadLevel::Normal,
        LoadLevel::Busy if all_normal => LoadLevel::Normal,
        LoadLevel::Busy => LoadLevel::Busy,
        LoadLevel::Overloaded if all_normal => LoadLevel::Normal,
        LoadLevel::Overloaded if all_calm => LoadLevel::Busy,
        LoadLevel::Overloaded => LoadLevel::Overloaded,
    }
}

#[derive(Clone, Debug)]
enum LevelOp {
    Sample(SampleClass),
    Force(Option<LoadLevel>),
}

fn arb_level_op() -> impl Strategy<Value = LevelOp> {
    let class = prop_oneof![
        6 => Just(SampleClass::Normal),
        3 => Just(SampleClass::Busy),
        3 => Just(SampleClass::Overload),
        1 => Just(SampleClass::Severe),
    ];
    let level = prop_oneof![
        3 => Just(None),
        1 => Just(Some(LoadLevel::Normal)),
        1 => Just(Some(LoadLevel::Busy)),
        1 => Just(Some(LoadLevel::Overloaded)),
    ];
    prop_oneof![
        30 => class.prop_map(LevelOp::Sample),
        1 => level.prop_map(LevelOp::Force),
    ]
}

proptest! {
    #[test]
    fn load_levels_match_reference(
        overload_samples in 0u32..5,
        recover_samples in 0u32..12,
        ops in prop::collection::vec(arb_level_op(), 1..300),
    ) {
        let t = LoadThresholds { overload_samples, recover_samples, ..LoadThresholds::default() };
        let mut levels = LoadLevels::new(t);
        let mut history: Vec<SampleClass> = Vec::new();
        let mut underlying = LoadLevel::Normal;
        let mut forced: Option<LoadLevel> = None;
        for op in ops {
            match op {
                LevelOp::Sample(class) => {
                    history.push(class);
                    let next = reference_level(&t, underlying, &history);
                    let expected = (forced.is_none() && next != underlying)
                        .then_some(LevelChange { from: underlying, to: next, class });
                    prop_assert_eq!(levels.observe_class(class), expected);
                    underlying = next;
                }
                LevelOp::Force(level) => {
                    let from = forced.unwrap_or(underlying);
                    forced = level;
                    let to = forced.unwrap_or(underlying);
                    prop_assert_eq!(levels.force(level), (from != to).then_some((from, to)));
                }
            }
            prop_assert_eq!(levels.level(), forced.unwrap_or(underlying));
            prop_assert_eq!(levels.state().level, underlying);
        }
    }
}

// ---------------------------------------------------------------------------------
// Circuit breaker

fn breaker(failures_max: u32, cooldown_us: u64, seed: u64) -> CircuitBreaker {
    CircuitBreaker::new(
        BreakerConfig {
            failures_max,
            cooldown_us,
        },
        ChaCha12Rng::seed_from_u64(seed),
    )
}

#[test]
fn breaker_opens_after_failures_and_probes_once() {
    let mut b = breaker(3, 30_000_000, 1);
    assert_eq!(b.state().name(), "closed");
    b.on_failure(Time(1));
    b.on_failure(Time(2));
    b.on_shed(Time(3)); // neither a failure nor a reset
    assert_eq!(
        b.state(),
        BreakerState::Closed {
            consecutive_failures: 2
        }
    );
    assert_eq!(b.admit(Time(3)), Admit::Allowed);
    b.on_failure(Time(4));
    assert_eq!(b.state().name(), "open");
    assert_eq!(b.opened_total(), 1);
    let until = b.poll_timeout().unwrap();
    assert!(
        until >= Time(4 + 24_000_000) && until <= Time(4 + 36_000_000),
        "{until}"
    );
    assert_eq!(b.admit(Time(5)), Admit::Refused);
    b.on_failure(Time(6)); // late failure while open: ignored, cooldown unchanged
    assert_eq!(b.poll_timeout(), Some(until));
    assert!(!b.tick(Time(until.0 - 1)));
    assert!(b.tick(until));
    assert_eq!(b.state().name(), "half_open");
    assert_eq!(b.poll_timeout(), None);
    assert_eq!(b.admit(until), Admit::Probe);
    assert_eq!(b.admit(until), Admit::Refused);
    // The failed probe re-opens.
    b.on_failure(until);
    assert_eq!(b.opened_total(), 2);
    let until2 = b.poll_timeout().unwrap();
    // The next probe is shed: the service is alive, the breaker closes.
    assert_eq!(b.admit(until2), Admit::Probe);
    b.on_shed(until2);
    assert_eq!(
        b.state(),
        BreakerState::Closed {
            consecutive_failures: 0
        }
    );
    // A success resets the count.
    b.on_failure(until2);
    b.on_failure(until2);
    b.on_success(until2);
    b.on_failure(until2);
    assert_eq!(
        b.state(),
        BreakerState::Closed {
            consecutive_failures: 1
        }
    );
    // Clock going backwards is clamped.
    assert_eq!(b.admit(Time(0)), Admit::Allowed);
}

#[test]
fn breaker_jitter_spans_the_range_and_is_deterministic() {
    let cooldowns = |seed: u64| {
        let mut b = breaker(1, 1_000_000, seed);
        let mut out = Vec::new();
        let mut now = Time(0);
        for _ in 0..200 {
            b.on_failure(now);
            let until = b.poll_timeout().unwrap();
            out.push(until.since_us(now));
            now = until;
            assert_eq!(b.admit(now), Admit::Probe);
        }
        out
    };
    let a = cooldowns(42);
    assert_eq!(a, cooldowns(42));
    assert_ne!(a, cooldowns(43));
    assert!(a.iter().all(|&c| (800_000..=1_200_000).contains(&c)));
    assert!(a.iter().any(|&c| c < 900_000) && a.iter().any(|&c| c > 1_100_000));
}

#[derive(Clone, Debug)]
enum BreakerOp {
    Admit,
    Success,
    Failure,
    Shed,
    Advance(u64),
    Tick,
}

/// The reference: the same rules, written in their plainest form.
#[derive(Clone, Copy, Debug, PartialEq)]
enum RefState {
    Closed(u32),
    Open(Time),
    HalfOpen(bool),
}

proptest! {
    #[test]
    fn breaker_matches_reference(
        failures_max in 1u32..6,
        cooldown_us in 0u64..1_000_000,
        seed in any::<u64>(),
        ops in prop::collection::vec(prop_oneof![
            4 => Just(BreakerOp::Admit),
            2 => Just(BreakerOp::Success),
            3 => Just(BreakerOp::Failure),
            2 => Just(BreakerOp::Shed),
            2 => (0u64..600_000).prop_map(BreakerOp::Advance),
            1 => Just(BreakerOp::Tick),
        ], 1..300),
    ) {
        let mut b = breaker(failures_max, cooldown_us, seed);
        let mut model = RefState::Closed(0);
        let mut opened = 0u64;
        let mut now = Time(0);
        for op in ops {
            // Every operation but a pure clock advance first turns an open breaker
            // whose cooldown has passed half-open.
            let due = matches!(model, RefState::Open(until) if now >= until)
                && !matches!(op, BreakerOp::Advance(_));
            if due {
                model = RefState::HalfOpen(false);
            }
            let opened_before = b.opened_total();
            match op {
                BreakerOp::Admit => {
                    let expected = match model {
                        RefState::Closed(_) => Admit::Allowed,
                        RefState::Open(_) | RefState::HalfOpen(true) => Admit::Refused,
                        RefState::HalfOpen(false) => {
                            model = RefState::HalfOpen(true);
                            Admit::Probe
                        }
                    };
                    prop_assert_eq!(b.admit(now), expected);
                }
                BreakerOp::Success => {
                    b.on_success(now);
                    if matches!(model, RefState::Closed(_) | RefState::HalfOpen(_)) {
                        model = RefState::Closed(0);
                    }
                }
                BreakerOp::Shed => {
                    b.on_shed(now);
                    if matches!(model, RefState::HalfOpen(_)) {
                        model = RefState::Closed(0);
                    }
                    prop_assert_eq!(b.opened_total(), opened_before, "shed never opens");
                    prop_assert!(b.state().name() != "open" || matches!(model, RefState::Open(_)));
                }
                BreakerOp::Failure => {
                    b.on_failure(now);
                    let opens = match model {
                        RefState::Closed(n) if n + 1 >= failures_max => true,
                        RefState::Closed(n) => {
                            model = RefState::Closed(n + 1);
                            false
                        }
                        RefState::HalfOpen(_) => true,
                        RefState::Open(_) => false,
                    };
                    if opens {
                        let until = b.poll_timeout().unwrap();
                        let drawn = until.since_us(now);
                        prop_assert!(u128::from(drawn) * 5 >= u128::from(cooldown_us) * 4);
                        prop_assert!(u128::from(drawn) * 5 <= u128::from(cooldown_us) * 6);
                        model = RefState::Open(until);
                        opened += 1;
                    }
                }
                BreakerOp::Advance(dt) => now = now.plus_us(dt),
                BreakerOp::Tick => {
                    prop_assert_eq!(b.tick(now), due);
                }
            }
            let expected = match model {
                RefState::Closed(n) => BreakerState::Closed { consecutive_failures: n },
                RefState::Open(until) => BreakerState::Open { until },
                RefState::HalfOpen(p) => BreakerState::HalfOpen { probe_in_flight: p },
            };
            prop_assert_eq!(b.state(), expected);
            prop_assert_eq!(b.opened_total(), opened);
            if let RefState::Closed(n) = model {
                prop_assert!(n < failures_max);
            }
        }
    }
}
