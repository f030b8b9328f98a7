//! The door (socket admission before any HTTP work): scenario tables for storms of
//! silent and slow sockets and for the probe lane, and random operation sequences
//! against a reference model that scans a plain list.

use std::net::IpAddr;

use proptest::prelude::*;
use wizard_core::Time;
use wizard_core::machine::overload::connections::TcpCaps;
use wizard_core::shell::door::{
    Admit, Door, DoorRefusal, Mode, PROBE_LANE_SOCKETS_MAX, PROBE_LANE_SOCKETS_PER_IP_MAX,
    SILENT_MARK_US,
};
use wizard_core::vocabulary::config::IpCidr;
use wizard_core::vocabulary::limiter::{IpKey, Rate};

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn caps(cap: usize, reserve: usize) -> TcpCaps {
    TcpCaps {
        cap,
        hard_cap: cap + reserve,
    }
}

fn proxy() -> Vec<IpCidr> {
    vec![IpCidr::new(ip("10.0.0.1"), 32).unwrap()]
}

#[test]
fn a_silent_storm_from_one_address_churns_its_own_share() {
    let mut door = Door::new(caps(100, 4), 20, Vec::new());
    let mut victims = 0;
    for id in 0..660u64 {
        let admit = door.admit(id, ip("127.0.0.2"), Time(id)).unwrap();
        assert_eq!(admit.mode, Mode::Full);
        victims += usize::from(admit.evicted.is_some());
        if let Some(v) = admit.evicted {
            // Always its own oldest waiting socket.
            assert_eq!(v, id - 20);
        }
    }
    assert_eq!((victims, door.open_for(ip("127.0.0.2"))), (640, 20));
    // Another address is served fully, without evicting anyone.
    let honest = door.admit(1000, ip("127.0.0.3"), Time(700)).unwrap();
    assert_eq!(
        honest,
        Admit {
            mode: Mode::Full,
            evicted: None
        }
    );
}

#[test]
fn a_storm_from_many_addresses_evicts_the_oldest_waiting_socket() {
    let mut door = Door::new(caps(10, 2), 2, Vec::new());
    // Two players upgraded, then silent sockets from many addresses fill every slot.
    for id in 0..2u64 {
        door.admit(id, ip(&format!("192.0.2.{id}")), Time(0))
            .unwrap();
        door.head_read(id, ip("192.0.2.1")).unwrap();
    }
    for id in 2..10u64 {
        let admit = door
            .admit(id, ip(&format!("198.51.100.{id}")), Time(id))
            .unwrap();
        assert_eq!(admit.evicted, None);
    }
    for id in 10..200u64 {
        let admit = door
            .admit(id, ip(&format!("203.0.113.{}", id % 250)), Time(id))
            .unwrap();
        assert_eq!(admit.mode, Mode::Full);
        let victim = admit.evicted.expect("the cap is full: someone is evicted");
        assert!(victim >= 2, "an upgraded socket was evicted");
    }
    // The upgraded sockets are still there; the reserve was never needed.
    assert_eq!(door.mode_of(0), Some(Mode::Full));
    assert_eq!(door.mode_of(1), Some(Mode::Full));
    assert_eq!(door.open_in(Mode::Reserve), 0);
}

#[test]
fn a_socket_whose_request_is_on_its_way_outlives_a_storm_of_silent_ones() {
    // The health check (socket 0, first bytes in) and a slow honest client (socket 1,
    // silent yet) are older than every attacker; the storm from many addresses must
    // take its own sockets and the silent client, never the health check.
    let mut door = Door::new(caps(4, 0), 2, Vec::new());
    door.admit(0, ip("192.0.2.1"), Time(0)).unwrap();
    door.spoke(0);
    door.admit(1, ip("192.0.2.2"), Time(1)).unwrap();
    let mut evicted = Vec::new();
    for id in 2..100u64 {
        let admit = door
            .admit(id, ip(&format!("203.0.113.{id}")), Time(id))
            .unwrap();
        evicted.extend(admit.evicted);
    }
    assert_eq!(
        evicted.first(),
        Some(&1),
        "the oldest silent socket goes first"
    );
    assert!(
        !evicted.contains(&0),
        "the speaking socket was evicted: {evicted:?}"
    );
    assert!(door.is_waiting(0));
    // With only speaking sockets left, the oldest of them goes.
    for id in 96..100u64 {
        door.spoke(id);
    }
    let admit = door.admit(100, ip("198.51.100.1"), Time(100)).unwrap();
    assert_eq!(admit.evicted, Some(0));
    // The same order within an address's share.
    let mut door = Door::new(caps(10, 0), 2, Vec::new());
    door.admit(0, ip("192.0.2.1"), Time(0)).unwrap();
    door.spoke(0);
    door.admit(1, ip("192.0.2.1"), Time(1)).unwrap();
    let admit = door.admit(2, ip("192.0.2.1"), Time(2)).unwrap();
    assert_eq!(admit.evicted, Some(1));
}

#[test]
fn a_storm_that_reconnects_from_its_addresses_churns_only_its_own_sockets() {
    // Attack row 2 from many addresses: 60 addresses hold 60 silent sockets at a cap
    // of 40 and reconnect each as soon as it is cut. A slow honest client (its request
    // not come yet) must outlive any number of reconnects once the storm's addresses
    // are marked; from fresh addresses every time, it goes after one round, as before.
    let storm = |id: u64, fresh: bool| {
        let n = if fresh { id } else { id % 60 };
        ip(&format!(
            "10.{}.{}.{}",
            n >> 16 & 255,
            n >> 8 & 255,
            n & 255
        ))
    };
    for (fresh, survives) in [(false, true), (true, false)] {
        let mut door = Door::new(caps(40, 0), 2, Vec::new());
        for id in 0..200u64 {
            door.admit(id, storm(id, fresh), Time(id)).unwrap();
        }
        // The first socket was cut silent: its address is marked (fresh ones never
        // come back to use it).
        assert!(door.marked(storm(0, fresh), Time(200)));
        let honest = ip("192.0.2.7");
        door.admit(1000, honest, Time(200)).unwrap();
        let mut cut_after = None;
        for id in 200..2200u64 {
            let admit = door.admit(id, storm(id, fresh), Time(id + 1)).unwrap();
            if admit.evicted == Some(1000) {
                cut_after = Some(id - 199);
                break;
            }
        }
        match (survives, cut_after) {
            (true, None) => assert!(door.is_waiting(1000) && !door.marked(honest, Time(2201))),
            (false, Some(n)) => assert!(n <= 40, "cut after {n} reconnects"),
            (_, cut) => panic!("fresh addresses {fresh}: the slow client cut after {cut:?}"),
        }
    }
    // A mark lasts SILENT_MARK_US from the eviction that set it.
    let mut door = Door::new(caps(1, 0), 2, Vec::new());
    door.admit(0, ip("10.0.0.1"), Time(0)).unwrap();
    door.admit(1, ip("10.0.0.2"), Time(5)).unwrap();
    assert!(door.marked(ip("10.0.0.1"), Time(5)));
    assert!(door.marked(ip("10.0.0.1"), Time(5 + SILENT_MARK_US - 1)));
    assert!(!door.marked(ip("10.0.0.1"), Time(5 + SILENT_MARK_US)));
    // A socket cut after it spoke marks nobody.
    door.spoke(1);
    door.admit(2, ip("10.0.0.3"), Time(6)).unwrap();
    assert!(!door.marked(ip("10.0.0.2"), Time(6)));
}

#[test]
fn a_slow_head_storm_from_many_addresses_gives_way_to_honest_sockets() {
    // Every slot is held by a socket that sent part of its head and stopped (a
    // slowloris from one address each), and each one cut reconnects from its address at
    // once and sends its first bytes. An honest socket, silent until its request comes,
    // must outlive the storm however long its request takes, and so must one whose
    // request came whole but was not read yet.
    let storm = |n: u64| ip(&format!("10.0.{}.{}", n / 250, n % 250));
    let mut door = Door::new(caps(40, 0), 2, Vec::new());
    for id in 0..40u64 {
        door.admit(id, storm(id), Time(id)).unwrap();
        door.slow(id);
    }
    let honest = door.admit(1000, ip("192.0.2.7"), Time(50)).unwrap();
    assert_eq!(honest.evicted, Some(0), "the oldest slow socket made room");
    let spoke = door.admit(1001, ip("192.0.2.8"), Time(51)).unwrap();
    door.spoke(1001);
    assert_eq!(spoke.evicted, Some(1));
    for round in 0..50u64 {
        // Everyone the storm lost reconnects and sends the start of a head.
        let id = 2000 + round;
        let admit = door
            .admit(id, storm(round % 40), Time(100 + round))
            .unwrap();
        let victim = admit.evicted.expect("the cap is full");
        assert!(
            !(1000..2000).contains(&victim),
            "round {round}: {victim} cut"
        );
        door.slow(id);
    }
    assert!(door.is_waiting(1000) && door.is_waiting(1001));
    // A slow socket's eviction marks its address (its next sockets go before unmarked
    // ones while they are silent too); the honest ones are not marked.
    assert!(door.marked(storm(0), Time(200)));
    assert!(!door.marked(ip("192.0.2.7"), Time(200)));
    assert!(!door.marked(ip("192.0.2.8"), Time(200)));
    // Slow goes before silent: with the storm gone, an honest silent socket is cut
    // only when no slow one is left.
    let mut door = Door::new(caps(2, 0), 2, Vec::new());
    door.admit(0, ip("192.0.2.1"), Time(0)).unwrap();
    door.admit(1, ip("198.51.100.1"), Time(1)).unwrap();
    door.slow(1);
    assert_eq!(
        door.admit(2, ip("198.51.100.2"), Time(2)).unwrap().evicted,
        Some(1)
    );
    assert_eq!(
        door.admit(3, ip("198.51.100.3"), Time(3)).unwrap().evicted,
        Some(0)
    );
}

#[test]
fn sockets_over_the_socket_rate_get_the_probe_lane() {
    // One new socket a second per address, a burst of one.
    let mut door =
        Door::new(caps(100, 4), 20, Vec::new()).with_socket_rate(Rate::new(1, 1_000_000), 1, 100);
    let monitor = ip("192.0.2.9");
    let first = door.admit(0, monitor, Time(0)).unwrap();
    assert_eq!(first.mode, Mode::Full);
    // Over the rate: probe-lane sockets, up to the address's lane share.
    for id in 1..=PROBE_LANE_SOCKETS_PER_IP_MAX as u64 {
        let admit = door.admit(id, monitor, Time(id)).unwrap();
        assert_eq!((admit.mode, admit.evicted), (Mode::Probe, None));
    }
    assert_eq!(door.lane_for(monitor), PROBE_LANE_SOCKETS_PER_IP_MAX);
    assert_eq!(
        door.open_for(monitor),
        1,
        "the lane is not charged to the share"
    );
    // At its share the address is refused, evicting nobody, even its own silent ones.
    assert_eq!(door.admit(10, monitor, Time(10)), Err(DoorRefusal::Rate));
    assert_eq!(door.open(), 1 + PROBE_LANE_SOCKETS_PER_IP_MAX);
    // Probes answered and closed give their places back; a monitor asking back to back,
    // each socket closed only after the next one came, is let in every time.
    for id in 1..=PROBE_LANE_SOCKETS_PER_IP_MAX as u64 {
        door.head_read(id, monitor).unwrap();
        assert!(door.close(id));
    }
    let mut previous = None;
    for id in 11..200u64 {
        let admit = door.admit(id, monitor, Time(20 + id)).unwrap();
        assert_eq!(admit.mode, Mode::Probe, "probe {id}");
        door.head_read(id, monitor).unwrap();
        if let Some(before) = previous.replace(id) {
            assert!(door.close(before));
        }
    }
    // Other addresses over their rate fill the lane; a full lane evicts its first
    // waiting socket, and refuses when each of its sockets is being served.
    let mut door =
        Door::new(caps(100, 4), 20, Vec::new()).with_socket_rate(Rate::new(1, 1_000_000), 1, 100);
    let addr = |n: usize| ip(&format!("198.51.100.{n}"));
    let mut id = 0u64;
    for n in 0..PROBE_LANE_SOCKETS_MAX {
        door.admit(id, addr(n), Time(0)).unwrap();
        let admit = door.admit(id + 1, addr(n), Time(0)).unwrap();
        assert_eq!((admit.mode, admit.evicted), (Mode::Probe, None));
        id += 2;
    }
    assert_eq!(door.open_in(Mode::Probe), PROBE_LANE_SOCKETS_MAX);
    door.admit(id, monitor, Time(1)).unwrap();
    let admit = door.admit(id + 1, monitor, Time(1)).unwrap();
    assert_eq!((admit.mode, admit.evicted), (Mode::Probe, Some(1)));
    for lane in (3..2 * PROBE_LANE_SOCKETS_MAX as u64).step_by(2) {
        door.head_read(lane, ip("198.51.100.1")).unwrap();
    }
    door.head_read(id + 1, monitor).unwrap();
    assert_eq!(
        door.admit(id + 2, addr(99), Time(2)).unwrap().mode,
        Mode::Full
    );
    assert_eq!(
        door.admit(id + 3, addr(99), Time(2)),
        Err(DoorRefusal::Rate)
    );
}

#[test]
fn served_sockets_fill_the_cap_then_the_reserve_then_refuse() {
    let mut door = Door::new(caps(3, 2), 10, Vec::new());
    for id in 0..3u64 {
        assert_eq!(
            door.admit(id, ip("192.0.2.1"), Time(0)).unwrap().mode,
            Mode::Full
        );
        door.head_read(id, ip("192.0.2.1")).unwrap();
    }
    // Reserve sockets, silent: a health check evicts the oldest of them.
    for id in 3..5u64 {
        let admit = door.admit(id, ip("192.0.2.2"), Time(id)).unwrap();
        assert_eq!((admit.mode, admit.evicted), (Mode::Reserve, None));
    }
    let health = door.admit(5, ip("192.0.2.3"), Time(9)).unwrap();
    assert_eq!((health.mode, health.evicted), (Mode::Reserve, Some(3)));
    door.head_read(4, ip("192.0.2.2")).unwrap();
    door.head_read(5, ip("192.0.2.3")).unwrap();
    assert_eq!(
        door.admit(6, ip("192.0.2.4"), Time(10)),
        Err(DoorRefusal::Full)
    );
    assert!(door.close(0));
    assert!(!door.close(0), "a double close changes nothing");
    assert_eq!(
        door.admit(6, ip("192.0.2.4"), Time(11)).unwrap().mode,
        Mode::Full
    );
}

#[test]
fn an_address_at_its_share_with_nothing_waiting_is_refused() {
    let mut door = Door::new(caps(100, 4), 2, Vec::new());
    for id in 0..2u64 {
        door.admit(id, ip("2001:db8::1"), Time(0)).unwrap();
        door.head_read(id, ip("2001:db8::1")).unwrap();
    }
    // The same /64 is the same address.
    assert_eq!(
        door.admit(2, ip("2001:db8::ffff"), Time(1)),
        Err(DoorRefusal::PerIp)
    );
    assert!(door.admit(3, ip("2001:db8:0:1::1"), Time(1)).is_ok());
}

#[test]
fn a_trusted_proxy_is_charged_per_forwarded_client() {
    let mut door = Door::new(caps(100, 4), 2, proxy());
    for id in 0..10u64 {
        assert!(
            door.admit(id, ip("10.0.0.1"), Time(id))
                .unwrap()
                .evicted
                .is_none()
        );
    }
    assert_eq!(door.open_for(ip("10.0.0.1")), 0);
    assert_eq!(door.head_read(0, ip("203.0.113.1")), Ok(()));
    assert_eq!(door.head_read(1, ip("203.0.113.1")), Ok(()));
    assert_eq!(
        door.head_read(2, ip("203.0.113.1")),
        Err(DoorRefusal::PerIp)
    );
    assert_eq!(door.head_read(3, ip("203.0.113.2")), Ok(()));
    assert_eq!(door.open_for(ip("203.0.113.1")), 2);
    // The refused one holds no share; closing it frees nothing of 203.0.113.1's.
    door.close(2);
    assert_eq!(door.open_for(ip("203.0.113.1")), 2);
    door.close(0);
    assert_eq!(door.open_for(ip("203.0.113.1")), 1);
    // A direct connection from the client's address counts in the same share.
    door.admit(20, ip("203.0.113.1"), Time(50)).unwrap();
    assert_eq!(door.open_for(ip("203.0.113.1")), 2);
}

// ---------------------------------------------------------------------------------
// Reference model

#[derive(Clone, Debug)]
struct RefSocket {
    id: u64,
    key: Option<IpKey>,
    mode: Mode,
    since: Time,
    waiting: bool,
    spoke: bool,
    slow: bool,
    marked: bool,
}

#[derive(Debug)]
struct RefDoor {
    cap: usize,
    reserve: usize,
    share: usize,
    sockets: Vec<RefSocket>,
    /// Per address, when its mark was set (a mark lasts `SILENT_MARK_US` and is not
    /// renewed while it lasts).
    marks: Vec<(IpKey, Time)>,
}

impl RefDoor {
    fn marked(&self, key: IpKey, now: Time) -> bool {
        self.marks
            .iter()
            .any(|(k, at)| *k == key && now < at.plus_us(SILENT_MARK_US))
    }

    /// Closes a socket to make room; a silent or slow one marks its address.
    fn evict(&mut self, id: u64, now: Time) {
        let s = self.sockets.iter().find(|s| s.id == id).unwrap().clone();
        if let (Some(k), true) = (s.key, !s.spoke || s.slow)
            && !self.marked(k, now)
        {
            self.marks.retain(|(m, _)| *m != k);
            self.marks.push((k, now));
            for s in self.sockets.iter_mut().filter(|s| s.key == Some(k)) {
                s.marked = true;
            }
        }
        self.close(id);
    }

    fn count_key(&self, key: IpKey) -> usize {
        self.sockets.iter().filter(|s| s.key == Some(key)).count()
    }

    fn oldest_waiting(&self, pick: impl Fn(&RefSocket) -> bool) -> Option<u64> {
        let waiting = self.sockets.iter().filter(|s| s.waiting && pick(s));
        waiting
            .min_by_key(|s| (!s.slow, s.spoke, !s.marked, s.since, s.id))
            .map(|s| s.id)
    }

    fn admit(
        &mut self,
        id: u64,
        peer: IpAddr,
        trusted: bool,
        now: Time,
    ) -> Result<Admit, DoorRefusal> {
        if let Some(s) = self.sockets.iter().find(|s| s.id == id) {
            return Ok(Admit {
                mode: s.mode,
                evicted: None,
            });
        }
        let key = (!trusted).then(|| IpKey::new(peer));
        let add = |me: &mut RefDoor, mode| {
            let marked = key.is_some_and(|k| me.marked(k, now));
            me.sockets.push(RefSocket {
                id,
                key,
                mode,
                since: now,
                waiting: true,
                spoke: false,
                slow: false,
                marked,
            });
        };
        if let Some(k) = key.filter(|k| self.count_key(*k) >= self.share) {
            let victim = self
                .oldest_waiting(|s| s.key == Some(k))
                .ok_or(DoorRefusal::PerIp)?;
            let mode = self.sockets.iter().find(|s| s.id == victim).unwrap().mode;
            self.evict(victim, now);
            add(self, mode);
            return Ok(Admit {
                mode,
                evicted: Some(victim),
            });
        }
        for (mode, limit) in [(Mode::Full, self.cap), (Mode::Reserve, self.reserve)] {
            if self.sockets.iter().filter(|s| s.mode == mode).count() < limit {
                add(self, mode);
                return Ok(Admit {
                    mode,
                    evicted: None,
                });
            }
            if let Some(victim) = self.oldest_waiting(|s| s.mode == mode) {
                self.evict(victim, now);
                add(self, mode);
                return Ok(Admit {
                    mode,
                    evicted: Some(victim),
                });
            }
        }
        Err(DoorRefusal::Full)
    }

    fn head_read(&mut self, id: u64, client: IpAddr) -> Result<(), DoorRefusal> {
        let Some(at) = self.sockets.iter().position(|s| s.id == id) else {
            return Ok(());
        };
        self.sockets[at].waiting = false;
        if self.sockets[at].key.is_some() {
            return Ok(());
        }
        let k = IpKey::new(client);
        if self.count_key(k) >= self.share {
            return Err(DoorRefusal::PerIp);
        }
        self.sockets[at].key = Some(k);
        Ok(())
    }

    fn spoke(&mut self, id: u64) {
        if let Some(s) = self.sockets.iter_mut().find(|s| s.id == id) {
            s.spoke = true;
        }
    }

    fn slow(&mut self, id: u64) {
        if let Some(s) = self.sockets.iter_mut().find(|s| s.id == id && s.waiting) {
            s.spoke = true;
            s.slow = true;
        }
    }

    fn close(&mut self, id: u64) -> bool {
        let before = self.sockets.len();
        self.sockets.retain(|s| s.id != id);
        before != self.sockets.len()
    }
}

#[derive(Clone, Debug)]
enum Op {
    Admit { peer: u8 },
    HeadRead { pick: usize, client: u8 },
    Spoke { pick: usize },
    Slow { pick: usize },
    Close { pick: usize },
    Wait { us: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u8..6).prop_map(|peer| Op::Admit { peer }),
        2 => (any::<usize>(), 0u8..6).prop_map(|(pick, client)| Op::HeadRead { pick, client }),
        2 => any::<usize>().prop_map(|pick| Op::Spoke { pick }),
        1 => any::<usize>().prop_map(|pick| Op::Slow { pick }),
        2 => any::<usize>().prop_map(|pick| Op::Close { pick }),
        1 => (0u64..3).prop_map(|us| Op::Wait { us }),
        // Past a mark's end, or just before it.
        1 => prop_oneof![Just(SILENT_MARK_US), Just(SILENT_MARK_US - 1)].prop_map(|us| Op::Wait { us }),
    ]
}

/// Address 0 is the trusted proxy; 1..=5 are clients.
fn addr(n: u8) -> IpAddr {
    IpAddr::from([10, 0, 0, n])
}

proptest! {
    #[test]
    fn the_door_matches_the_reference(
        cap in 1usize..8,
        reserve in 0usize..3,
        share in 1usize..5,
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let trusted = vec![IpCidr::new(addr(0), 32).unwrap()];
        let mut door = Door::new(caps(cap, reserve), share, trusted);
        let mut model = RefDoor { cap, reserve, share, sockets: Vec::new(), marks: Vec::new() };
        let (mut now, mut next_id) = (Time(0), 0u64);
        for op in ops {
            match op {
                Op::Admit { peer } => {
                    let got = door.admit(next_id, addr(peer), now);
                    let want = model.admit(next_id, addr(peer), peer == 0, now);
                    prop_assert_eq!(got, want);
                    if let Ok(Admit { evicted: Some(v), .. }) = got {
                        prop_assert!(!door.is_waiting(v) && door.mode_of(v).is_none());
                    }
                    next_id += 1;
                }
                Op::HeadRead { pick, client } if !model.sockets.is_empty() => {
                    let id = model.sockets[pick % model.sockets.len()].id;
                    prop_assert_eq!(door.head_read(id, addr(client)), model.head_read(id, addr(client)));
                    prop_assert!(!door.is_waiting(id));
                }
                Op::Spoke { pick } if !model.sockets.is_empty() => {
                    let id = model.sockets[pick % model.sockets.len()].id;
                    let waiting = door.is_waiting(id);
                    door.spoke(id);
                    model.spoke(id);
                    prop_assert_eq!(door.is_waiting(id), waiting);
                }
                Op::Slow { pick } if !model.sockets.is_empty() => {
                    let id = model.sockets[pick % model.sockets.len()].id;
                    let waiting = door.is_waiting(id);
                    door.slow(id);
                    model.slow(id);
                    prop_assert_eq!(door.is_waiting(id), waiting);
                }
                Op::Close { pick } => {
                    let id = if model.sockets.is_empty() { next_id } else {
                        model.sockets[pick % model.sockets.len()].id
                    };
                    prop_assert_eq!(door.close(id), model.close(id));
                }
                Op::Wait { us } => now = now.plus_us(us),
                Op::HeadRead { .. } | Op::Spoke { .. } | Op::Slow { .. } => {}
            }
            // The bounds hold after every step.
            prop_assert_eq!(door.open(), model.sockets.len());
            prop_assert!(door.open_in(Mode::Full) <= cap);
            prop_assert!(door.open_in(Mode::Reserve) <= reserve);
            for n in 1..6 {
                prop_assert!(door.open_for(addr(n)) <= share);
            }
            let waiting = model.sockets.iter().filter(|s| s.waiting).count();
            prop_assert_eq!(door.waiting(), waiting);
            for n in 1..6 {
                prop_assert_eq!(door.marked(addr(n), now), model.marked(IpKey::new(addr(n)), now));
            }
        }
    }
}
