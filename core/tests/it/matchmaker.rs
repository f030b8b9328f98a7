//! The quick-play matchmaker on its own: grouping by table size and rating, the spread
//! widening with the wait, the wait running out with AI seats, the bound, cancelling.

use wizard_core::Time;
use wizard_core::machine::matchmaker::{
    Group, MatchConfig, Matchmaker, QueueError, Ticket, form_groups,
};

const SEC: u64 = 1_000_000;

fn pool(max: usize) -> Matchmaker<u32> {
    Matchmaker::new(MatchConfig {
        wait_us: 30 * SEC,
        interval_us: SEC,
        tickets_max: max,
        settle_us: 0,
    })
}

fn keys(g: &Group<u32>) -> Vec<u32> {
    g.players.iter().map(|t| t.key).collect()
}

#[test]
fn a_table_of_equal_ratings_forms_when_its_last_player_comes() {
    let mut m = pool(100);
    let mut out = Vec::new();
    for k in 0..3 {
        m.enqueue(Time(k * 10), k as u32, 4, 0.0, &mut out).unwrap();
        assert!(out.is_empty(), "no table of 4 with {} players", k + 1);
    }
    // Another size does not complete it.
    m.enqueue(Time(40), 9, 3, 0.0, &mut out).unwrap();
    assert!(out.is_empty());
    m.enqueue(Time(50), 3, 4, 0.0, &mut out).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(keys(&out[0]), vec![0, 1, 2, 3], "oldest first");
    assert_eq!(out[0].seats, 4);
    assert_eq!(out[0].ai_seats(), 0);
    assert!(!out[0].waited_out);
    assert_eq!(m.len(), 1, "the table of 3's ticket still waits");
    m.check().unwrap();
}

#[test]
fn distant_ratings_wait_until_the_spread_has_widened() {
    let mut m = pool(100);
    let mut out = Vec::new();
    m.enqueue(Time(0), 1, 3, 0.0, &mut out).unwrap();
    m.enqueue(Time(0), 2, 3, 5.0, &mut out).unwrap();
    m.enqueue(Time(0), 3, 3, 10.0, &mut out).unwrap();
    assert!(out.is_empty(), "a spread of 10 points is too wide at first");
    // 2 + 0.5 per second: 10 points after 16 seconds, not before.
    let mut now = Time(0);
    while let Some(at) = m.next_wake() {
        now = at;
        m.poll(now, &mut out);
        if !out.is_empty() {
            break;
        }
    }
    assert_eq!(out.len(), 1);
    assert_eq!(now, Time(16 * SEC), "seated at the first pass that fits");
    assert_eq!(keys(&out[0]), vec![1, 2, 3]);
    assert!(!out[0].waited_out);
    assert!(m.is_empty());
}

#[test]
fn close_ratings_are_grouped_together_first() {
    let mut m = pool(100);
    let mut out = Vec::new();
    for (k, r) in [(1, 0.0), (2, 30.0), (3, 0.5), (4, 31.0), (5, 30.5)] {
        m.enqueue(Time(0), k, 3, r, &mut out).unwrap();
    }
    assert_eq!(out.len(), 1);
    assert_eq!(keys(&out[0]), vec![2, 4, 5]);
    assert_eq!(m.len(), 2);
}

#[test]
fn after_the_wait_whoever_waits_is_seated_with_ai() {
    let mut m = pool(100);
    let mut out = Vec::new();
    m.enqueue(Time(0), 1, 5, 0.0, &mut out).unwrap();
    m.enqueue(Time(2 * SEC), 2, 5, 40.0, &mut out).unwrap();
    assert_eq!(m.next_wake(), Some(Time(30 * SEC)));
    m.poll(Time(30 * SEC - 1), &mut out);
    assert!(out.is_empty(), "not before QUICK_PLAY_WAIT");
    m.poll(Time(30 * SEC), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(
        keys(&out[0]),
        vec![1, 2],
        "seated with whoever waits, whatever the rating"
    );
    assert_eq!(out[0].ai_seats(), 3);
    assert!(out[0].waited_out);
    assert!(m.is_empty());
    assert_eq!(m.next_wake(), None);
}

#[test]
fn alone_after_the_wait_is_a_table_of_ai() {
    let mut m = pool(100);
    let mut out = Vec::new();
    m.enqueue(Time(7), 1, 6, 0.0, &mut out).unwrap();
    m.poll(Time(7 + 30 * SEC), &mut out);
    assert_eq!(keys(&out[0]), vec![1]);
    assert_eq!(out[0].ai_seats(), 5);
}

#[test]
fn one_ticket_per_key_and_the_pool_is_bounded() {
    let mut m = pool(2);
    let mut out = Vec::new();
    assert_eq!(m.enqueue(Time(0), 1, 4, 0.0, &mut out), Ok(Time(0)));
    // Again: replaced, keeping its place in time.
    assert_eq!(m.enqueue(Time(5), 1, 3, 0.0, &mut out), Ok(Time(0)));
    assert_eq!(m.len(), 1);
    assert_eq!(m.ticket(1).unwrap().seats, 3);
    m.enqueue(Time(6), 2, 4, 0.0, &mut out).unwrap();
    assert_eq!(
        m.enqueue(Time(7), 3, 4, 0.0, &mut out),
        Err(QueueError::Full)
    );
    assert_eq!(
        m.enqueue(Time(7), 4, 7, 0.0, &mut out),
        Err(QueueError::BadSeats)
    );
    assert_eq!(
        m.enqueue(Time(7), 4, 2, 0.0, &mut out),
        Err(QueueError::BadSeats)
    );
    assert!(m.cancel(2).is_some());
    assert!(m.cancel(2).is_none());
    m.enqueue(Time(8), 3, 4, 0.0, &mut out).unwrap();
    assert_eq!(m.len(), 2);
    m.check().unwrap();
}

#[test]
fn a_cancelled_ticket_is_never_seated() {
    let mut m = pool(100);
    let mut out = Vec::new();
    m.enqueue(Time(0), 1, 3, 0.0, &mut out).unwrap();
    m.enqueue(Time(0), 2, 3, 0.0, &mut out).unwrap();
    m.cancel(1);
    m.enqueue(Time(1), 3, 3, 0.0, &mut out).unwrap();
    assert!(out.is_empty());
    m.poll(Time(30 * SEC), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(keys(&out[0]), vec![2, 3]);
}

/// Random traffic: nobody is seated twice, nobody waits past the wait plus an
/// interval when polled at its wake-ups, and the indexes stay in line.
#[test]
fn random_traffic_keeps_the_promises() {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut m = pool(500);
    let mut seated = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    let mut now = Time(0);
    for k in 0..5000u32 {
        now = now.plus_us(rng.random_range(0..200_000));
        while let Some(at) = m.next_wake().filter(|&t| t <= now) {
            m.poll(at, &mut out);
        }
        if rng.random_bool(0.2) {
            let victim = rng.random_range(0..=k);
            m.cancel(victim);
        }
        let rating = rng.random_range(0.0..40.0);
        let _ = m.enqueue(now, k, rng.random_range(3..=6), rating, &mut out);
        for g in out.drain(..) {
            assert!(g.players.len() <= usize::from(g.seats));
            for t in &g.players {
                assert!(seated.insert(t.key), "{} seated twice", t.key);
                assert!(
                    t.since.plus_us(31 * SEC) >= now,
                    "{} waited too long",
                    t.key
                );
            }
        }
        m.check().unwrap();
    }
}

fn ticket(key: u32, seats: u8, rating_milli: i64, since_s: u64) -> Ticket<u32> {
    Ticket {
        key,
        seats,
        rating_milli,
        since: Time(since_s * SEC),
    }
}

/// The rule over a pool kept elsewhere (the shards' shared pool) forms what the pool's
/// own passes form from the same tickets: close ratings together, the far one waiting
/// until its spread has widened or its wait runs out.
#[test]
fn form_groups_applies_the_pool_s_rule_to_tickets_held_elsewhere() {
    let config = pool(100).config();
    let tickets = [
        ticket(1, 3, 0, 0),
        ticket(2, 3, 1_000, 1),
        ticket(3, 3, 40_000, 2),
        ticket(4, 3, 500, 3),
        ticket(5, 4, 0, 3),
    ];
    let groups = form_groups(config, Time(4 * SEC), tickets);
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(keys(&groups[0]), vec![1, 2, 4], "oldest first");
    assert!(!groups[0].waited_out);
    // The same tickets held in a pool and polled at a pass give the same table.
    let mut m = pool(100);
    for t in tickets {
        m.hold(t).unwrap();
    }
    let mut out = Vec::new();
    assert!(m.next_wake().is_some());
    m.poll(Time(31 * SEC), &mut out);
    assert!(out.iter().any(|g| keys(g) == vec![1, 2, 4]), "{out:?}");
    // After the wait the far ticket and the lone table of 4 are seated with AI.
    let late = form_groups(config, Time(40 * SEC), [tickets[2], tickets[4]]);
    assert_eq!(late.len(), 2);
    assert!(late.iter().all(|g| g.waited_out && g.players.len() == 1));
    assert_eq!(late.iter().map(Group::ai_seats).sum::<u8>(), 2 + 3);
}

/// `hold` keeps tickets without grouping them, under the same bound, replacing a
/// key's own ticket.
#[test]
fn hold_keeps_tickets_without_grouping_them() {
    let mut m = pool(3);
    for k in 0..3 {
        m.hold(ticket(k, 3, 0, u64::from(k))).unwrap();
    }
    assert_eq!(m.len(), 3, "a table's worth, not grouped");
    assert_eq!(m.hold(ticket(9, 3, 0, 5)), Err(QueueError::Full));
    m.hold(ticket(1, 4, 0, 7)).unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(m.ticket(1).map(|t| t.seats), Some(4));
    assert_eq!(m.hold(ticket(8, 7, 0, 0)), Err(QueueError::BadSeats));
    m.check().unwrap();
}

/// With a settling time a ticket is grouped only once it has waited that long; the pool
/// wakes as each one settles (not a whole interval later), and one taken out before
/// then was never in a table.
#[test]
fn tickets_are_grouped_as_they_settle_and_one_gone_before_never_was() {
    let settle = SEC / 4;
    let mut m = Matchmaker::new(MatchConfig {
        wait_us: 30 * SEC,
        interval_us: SEC,
        tickets_max: 100,
        settle_us: settle,
    });
    let mut out = Vec::new();
    // (arrival in ms, key); key 9 walks away 10 ms after queueing.
    for (ms, key) in [(0, 1), (5, 9), (100, 2), (600, 3)] {
        m.enqueue(Time(ms * 1000), key, 3, 0.0, &mut out).unwrap();
    }
    m.cancel(9).unwrap();
    assert!(out.is_empty(), "nothing grouped on arrival");
    let mut formed = Vec::new();
    while let Some(at) = m.next_wake().filter(|t| t.0 < 30 * SEC) {
        m.poll(at, &mut out);
        for g in out.drain(..) {
            formed.push((at.0 / 1000, keys(&g)));
        }
    }
    assert_eq!(
        formed,
        vec![(850, vec![1, 2, 3])],
        "when the last ticket settled"
    );
    m.check().unwrap();
}
