//! Quick-play players in a run: the scenario's `quick_play` groups become clients
//! ([`Role::Quick`]) with their plans drawn from a stream of their own, and the swarm's
//! draw of them, also from its own stream, so that every other draw of a seed stays
//! as it was.

use std::net::{IpAddr, Ipv4Addr};

use rand::RngExt;
use wizard_core::Time;
use wizard_core::vocabulary::game::types::{PLAYERS_MAX, PLAYERS_MIN};

use crate::actors::client::Role;
use crate::actors::quick::{Leave, QuickPlan};
use crate::model::dist::{Dist, fork, secs_to_us};
use crate::runs::driver::Sim;
use crate::runs::scenario::{Pace, QuickPlay, Retry, Scenario};

/// The random stream of the quick-play players' plans.
const PLANS_STREAM: u64 = 0x901C;
/// The swarm's random stream for its quick-play draw.
const SWARM_STREAM: u64 = 0x901D;

/// The address of quick-play player `n` of group `group`: `10.151.x.y` to
/// `10.200.x.y`, apart from the table players', the spectators' and the prober's.
fn quick_ip(group: usize, n: u32, ips: u32) -> IpAddr {
    let k = if ips == 0 { n } else { n % ips };
    IpAddr::V4(Ipv4Addr::new(
        10,
        u8::try_from(151 + group % 50).unwrap_or(151),
        u8::try_from((k >> 8) & 0xff).unwrap_or(0),
        u8::try_from(k & 0xff).unwrap_or(0),
    ))
}

impl Sim {
    /// Creates the scenario's quick-play players, each at its arrival time.
    pub(crate) fn populate_quick(&mut self) {
        let mut rng = fork(self.seed, PLANS_STREAM);
        let groups = self.scenario.quick_play.clone();
        for (g, spec) in groups.iter().enumerate() {
            let lo = spec.seats_min.clamp(PLAYERS_MIN, PLAYERS_MAX);
            let hi = spec.seats_max.clamp(lo, PLAYERS_MAX);
            for n in 0..spec.count {
                let spread = spec.spread_s * f64::from(n) / f64::from(spec.count.max(1));
                let at =
                    Time(secs_to_us(spec.from_s.max(0.0) + spread) + rng.random_range(0..10_000));
                let leave_after_us = secs_to_us(spec.leave_after_s.max(0.1));
                let roll = rng.random::<f64>();
                let leave = if roll < spec.cancel {
                    Some(Leave::Cancel)
                } else if roll < spec.cancel + spec.walk_away {
                    Some(Leave::WalkAway)
                } else {
                    None
                };
                let plan = QuickPlan {
                    seats: rng.random_range(lo..=hi),
                    leave: leave
                        .map(|l| (l, rng.random_range(100_000..=leave_after_us.max(100_000)))),
                    requeue_us: rng
                        .random_range(100_000..=secs_to_us(spec.requeue_s.max(0.1)).max(100_000)),
                    queued_at: None,
                };
                let id = self.new_client(Role::Quick, quick_ip(g, n, spec.ips), at);
                let c = &mut self.clients[id];
                c.pace = spec.pace;
                c.think = spec.think_ms.unwrap_or(Dist::Const(500.0));
                c.retry = spec.retry;
                c.seats = plan.seats;
                if spec.attempts_max > 0 {
                    c.attempts_max = spec.attempts_max;
                }
                c.quick = Some(plan);
            }
        }
    }
}

/// The swarm's quick-play players, drawn last from a stream of their own: in two
/// scenarios of five, a group of 3 to 40 players queueing for tables of 3 to 6 seats,
/// within a second (a storm) or over the fault phase, a share of them cancelling or
/// walking away, with a `QUICK_PLAY_WAIT` of 2 to 8 s so that waited-out tickets are
/// seated with AI seats within the run, and a small `QUICK_PLAY_MAX` at times so that
/// the pool fills. Not under the tight caps (`MAX_CONNECTIONS`, `MAX_SESSIONS` sized
/// for the table players).
pub fn swarm_draw(seed: u64, s: &mut Scenario) {
    let mut r = fork(seed, SWARM_STREAM);
    if !r.random_bool(0.4)
        || s.env.contains_key("MAX_CONNECTIONS")
        || s.env.contains_key("MAX_SESSIONS")
    {
        return;
    }
    let end = s.duration_s.max(1.0);
    let storm = r.random_bool(0.5);
    let from_s = r.random_range(0.0..end / 2.0);
    let count = r.random_range(3..41u32);
    let seats_min = r.random_range(PLAYERS_MIN..=PLAYERS_MAX);
    s.quick_play.push(QuickPlay {
        count,
        from_s,
        spread_s: if storm { 1.0 } else { end - from_s },
        seats_min,
        seats_max: r.random_range(seats_min..=PLAYERS_MAX),
        pace: if r.random_bool(0.5) {
            Pace::Full
        } else {
            Pace::Human
        },
        think_ms: Some(Dist::Lognormal([r.random_range(200.0..2000.0), 0.5])),
        retry: if r.random_bool(0.7) {
            Retry::Backoff
        } else {
            Retry::Naive
        },
        attempts_max: 8,
        cancel: r.random_range(0.0..0.4),
        walk_away: r.random_range(0.0..0.3),
        leave_after_s: r.random_range(0.5..4.0),
        requeue_s: r.random_range(0.5..3.0),
        ips: 0,
    });
    s.env.insert(
        "QUICK_PLAY_WAIT".into(),
        r.random_range(2..9u32).to_string(),
    );
    if r.random_bool(0.25) {
        s.env
            .insert("QUICK_PLAY_MAX".into(), r.random_range(1..6u32).to_string());
    }
    // A walk-away may cross its seat on the wire: the player is seated in a game it
    // has left, which waits on it until SESSION_TTL gives its seat to the AI. A TTL of
    // a few seconds, as the walkers' draw has, lets that game move again within the
    // liveness phase (seeds 594, 794, 1464, 1584: no move at the verdict).
    if !s.env.contains_key("SESSION_TTL") {
        s.env
            .insert("SESSION_TTL".into(), r.random_range(3..8u32).to_string());
    }
}
