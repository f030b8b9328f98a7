//! What the absent hold (ARCHITECTURE.md): idle lobbies, dormant games, the evictable
//! session index, the per-address caps on lobbies and games, and the per-address rates
//! for new connections and unknown join codes. One table-driven test per rule through
//! `Server::handle`, and a property test against a reference model of who is where.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Value, json};
use wizard_core::io::Note;
use wizard_core::wire::CloseCode;

use super::driver::{Driver, config};

/// Opens `conn` from `ip` and says hello (resuming `token` if given).
fn join(d: &mut Driver, conn: u64, ip: &str, token: Option<&str>) {
    d.open(conn, ip);
    d.hello(conn, token);
}

/// `conn` creates a lobby with two AI seats and starts its game; returns the code.
fn start_game(d: &mut Driver, conn: u64) -> String {
    d.send_json(
        conn,
        json!({"type": "create_lobby", "name": format!("H{conn}")}),
    );
    let code = d.lobby_code(conn).expect("a lobby");
    d.send_json(conn, json!({"type": "add_ai"}));
    d.send_json(conn, json!({"type": "add_ai"}));
    d.send_json(conn, json!({"type": "start_game"}));
    code
}

fn status(d: &Driver, conn: u64) -> Option<String> {
    d.state(conn)
        .and_then(|s| s["lobby"]["status"].as_str().map(str::to_string))
}

fn token(d: &Driver, conn: u64) -> String {
    d.seen[&conn].token.clone().expect("welcomed")
}

fn last_error(d: &Driver, conn: u64) -> Option<Value> {
    d.seen[&conn]
        .messages
        .iter()
        .rev()
        .find(|m| m["type"] == "error")
        .cloned()
}

fn moves(d: &Driver) -> usize {
    d.last_notes()
        .iter()
        .filter(|n| matches!(n, Note::MoveApplied { .. }))
        .count()
}

/// Row 3: at MAX_SESSIONS, a new player evicts the oldest disconnected session that
/// is not seated in a running game, however many older ones are (more than the old
/// scan's 64).
#[test]
fn eviction_finds_the_evictable_session_behind_any_number_of_seated_ones() {
    for (seated, waiting, admitted) in [(0, 1, true), (70, 1, true), (70, 0, false), (3, 2, true)] {
        let total = seated + waiting;
        let cfg = config(&[
            ("MAX_SESSIONS", &total.to_string()),
            ("MAX_LOBBIES", "500"),
            ("MAX_ACTIVE_GAMES", "500"),
            ("MAX_CONNECTIONS_PER_IP", "500"),
            ("MAX_LOBBIES_PER_IP", "500"),
            ("MAX_GAMES_PER_IP", "500"),
            ("RECONNECT_BURST", "1000"),
            ("LOBBY_CREATE_RATE", "1000"),
            ("AI_MOVE_DELAY", "600"),
        ]);
        let mut d = Driver::new(cfg, 3);
        let mut conn = 0;
        // The seated players leave first: they are the oldest disconnected sessions.
        for _ in 0..seated {
            conn += 1;
            join(&mut d, conn, "10.1.0.1", None);
            start_game(&mut d, conn);
            assert_eq!(status(&d, conn).as_deref(), Some("playing"));
            d.close(conn);
            d.advance_ms(1);
        }
        for _ in 0..waiting {
            conn += 1;
            join(&mut d, conn, "10.1.0.2", None);
            d.send_json(conn, json!({"type": "create_lobby", "name": "W"}));
            d.close(conn);
            d.advance_ms(1);
        }
        assert_eq!(d.server.gauges().sessions, total as u64);
        assert_eq!(d.server.gauges().evictable_sessions, waiting as u64);
        conn += 1;
        join(&mut d, conn, "10.1.0.3", None);
        let refused = d.seen[&conn].closed == Some(CloseCode::ConnectionLimit);
        assert_eq!(!refused, admitted, "{seated} seated, {waiting} waiting");
        d.server.check_absent().unwrap();
    }
}

/// Row 5: a waiting lobby whose humans are all gone is deleted after LOBBY_IDLE_TTL
/// (not before), with their sessions; MAX_LOBBIES frees up and accepting_games says so.
#[test]
fn an_idle_lobby_goes_after_lobby_idle_ttl_and_health_agrees_with_create_lobby() {
    let cfg = config(&[("MAX_LOBBIES", "1"), ("LOBBY_IDLE_TTL", "10")]);
    let mut d = Driver::new(cfg, 5);
    join(&mut d, 1, "10.0.0.1", None);
    d.send_json(1, json!({"type": "create_lobby", "name": "Ann"}));
    let code = d.lobby_code(1).unwrap();
    let ann = token(&d, 1);
    assert!(!d.server.health().accepting_games, "MAX_LOBBIES is full");
    d.close(1);
    join(&mut d, 2, "10.0.0.2", None);
    d.send_json(2, json!({"type": "create_lobby", "name": "Bob"}));
    assert_eq!(d.last_errors(2), vec!["busy"]);
    for (at_ms, gone) in [(9_999, false), (10_000, true)] {
        d.run_until(wizard_core::Time::from_millis(at_ms));
        assert_eq!(d.server.gauges().lobbies == 0, gone, "at {at_ms} ms");
        assert_eq!(d.server.health().accepting_games, gone, "at {at_ms} ms");
    }
    // Bob was told, and now creates his lobby; Ann's session went with hers.
    let pushed = d.seen[&2]
        .messages
        .iter()
        .any(|m| m["type"] == "server_status" && m["accepting_games"] == true);
    assert!(pushed, "no server_status accepting_games true");
    d.send_json(
        2,
        json!({"type": "join_lobby", "code": code, "name": "Bob"}),
    );
    assert_eq!(d.last_errors(2), vec!["not_found"]);
    d.send_json(2, json!({"type": "create_lobby", "name": "Bob"}));
    assert!(d.lobby_code(2).is_some());
    join(&mut d, 3, "10.0.0.1", Some(&ann));
    assert_ne!(
        d.seen[&3].token.as_deref(),
        Some(ann.as_str()),
        "a new session"
    );
    d.server.check_absent().unwrap();
}

/// At MAX_SESSIONS, the sessions of dormant games are evictable too (their players
/// have all been gone for ABANDONED_GAME_TTL): the newcomer takes the place of the one
/// gone longest, and that game, left without a human, is deleted. Before the games are
/// dormant, the newcomer is refused.
#[test]
fn a_dormant_games_session_gives_way_to_a_new_player_at_max_sessions() {
    let cfg = config(&[
        ("MAX_SESSIONS", "3"),
        ("ABANDONED_GAME_TTL", "5"),
        ("AI_MOVE_DELAY", "600"),
        ("RECONNECT_BURST", "100"),
    ]);
    let mut d = Driver::new(cfg, 4);
    for conn in 1..=3 {
        join(&mut d, conn, &format!("10.2.0.{conn}"), None);
        start_game(&mut d, conn);
        d.close(conn);
        d.advance_ms(10);
    }
    let g = d.server.gauges();
    assert_eq!(
        (g.sessions, g.evictable_sessions, g.active_games),
        (3, 0, 3)
    );
    join(&mut d, 10, "10.2.1.1", None);
    assert_eq!(
        d.seen[&10].closed,
        Some(CloseCode::ConnectionLimit),
        "nothing is evictable yet"
    );
    d.close(10);
    d.run_until(wizard_core::Time::from_millis(6_000));
    let g = d.server.gauges();
    assert_eq!((g.dormant_games, g.evictable_sessions), (3, 3));
    join(&mut d, 11, "10.2.1.2", None);
    assert!(d.seen[&11].player_id.is_some(), "the newcomer was welcomed");
    assert_eq!(d.seen[&11].closed, None);
    let g = d.server.gauges();
    assert_eq!(
        (g.sessions, g.lobbies, g.dormant_games),
        (3, 2, 2),
        "the oldest game went"
    );
    assert_eq!(d.server.counters().sessions_evicted, 1);
    d.server.check_absent().expect("bookkeeping");
}

/// Row 4: a running game whose humans are all gone goes dormant after
/// ABANDONED_GAME_TTL: no moves, no MAX_ACTIVE_GAMES slot; its human coming back wakes
/// it even past the cap, where it stood.
#[test]
fn an_abandoned_game_goes_dormant_and_its_player_wakes_it_past_the_cap() {
    let cfg = config(&[
        ("MAX_ACTIVE_GAMES", "1"),
        ("ABANDONED_GAME_TTL", "5"),
        ("AI_MOVE_DELAY", "0.5"),
        ("TRICK_PAUSE", "0"),
    ]);
    let mut d = Driver::new(cfg, 9);
    join(&mut d, 1, "10.0.0.1", None);
    start_game(&mut d, 1);
    let ann = token(&d, 1);
    d.close(1);
    join(&mut d, 2, "10.0.0.2", None);
    d.send_json(2, json!({"type": "create_lobby", "name": "Bob"}));
    assert_eq!(d.last_errors(2), vec!["busy"], "MAX_ACTIVE_GAMES is full");
    // Until the TTL the abandoned game plays on (AI seats and autoplay alike).
    d.run_until(wizard_core::Time::from_millis(4_900));
    assert_eq!(d.server.gauges().active_games, 1);
    d.run_until(wizard_core::Time::from_millis(5_000));
    let g = d.server.gauges();
    assert_eq!((g.active_games, g.dormant_games), (0, 1));
    // Dormant: nothing is due for it any more, so time passes without a move.
    let mut quiet = 0;
    for _ in 0..20 {
        d.advance_ms(1_000);
        quiet += moves(&d);
    }
    assert_eq!(quiet, 0, "a dormant game moved");
    assert!(
        d.seen[&2]
            .messages
            .iter()
            .any(|m| m["type"] == "server_status" && m["accepting_games"] == true),
        "Bob was not told that games are accepted again"
    );
    start_game(&mut d, 2);
    assert_eq!(status(&d, 2).as_deref(), Some("playing"));
    // Ann comes back: her game runs again although MAX_ACTIVE_GAMES is taken.
    join(&mut d, 3, "10.0.0.1", Some(&ann));
    assert_eq!(status(&d, 3).as_deref(), Some("playing"));
    let g = d.server.gauges();
    assert_eq!((g.active_games, g.dormant_games), (2, 0));
    // It goes on: Ann plays her turns, the AI seats theirs.
    let mut after = 0;
    for _ in 0..20 {
        if let Some(action) = d.legal(3).first().cloned() {
            d.send_json(3, json!({"type": "action", "action": action}));
            after += moves(&d);
        }
        d.advance_ms(1_000);
        after += moves(&d);
    }
    assert!(after > 3, "the woken game does not move ({after} moves)");
    d.server.check_absent().unwrap();
}

/// Row 5: per-address caps on lobbies and started games, charged to the creator's
/// address; other addresses are unaffected.
#[test]
fn lobbies_and_games_are_capped_per_address() {
    let cfg = config(&[
        ("MAX_LOBBIES_PER_IP", "2"),
        ("MAX_GAMES_PER_IP", "1"),
        ("LOBBY_CREATE_RATE", "100"),
    ]);
    let mut d = Driver::new(cfg, 11);
    // (conn, address, message, expected error or None)
    let rows: &[(u64, &str, &str, Option<&str>)] = &[
        (1, "10.0.0.1", "create", None),
        (2, "10.0.0.1", "create", None),
        (3, "10.0.0.1", "create", Some("busy")),
        // The same /64 is the same address.
        (4, "2001:db8::1", "create", None),
        (5, "2001:db8::2", "create", None),
        (6, "2001:db8::3", "create", Some("busy")),
        (7, "10.0.0.2", "create", None),
        (1, "", "start", None),
        (2, "", "start", Some("busy")),
        (7, "", "start", None),
    ];
    for &(conn, ip, what, expected) in rows {
        if !ip.is_empty() {
            join(&mut d, conn, ip, None);
        }
        match what {
            "create" => {
                d.send_json(conn, json!({"type": "create_lobby", "name": "P"}));
                if expected.is_none() {
                    d.send_json(conn, json!({"type": "add_ai"}));
                    d.send_json(conn, json!({"type": "add_ai"}));
                }
            }
            _ => {
                d.send_json(conn, json!({"type": "start_game"}));
            }
        }
        let errors = d.last_errors(conn);
        assert_eq!(
            errors.first().map(String::as_str),
            expected,
            "conn {conn} {what}"
        );
        d.server.check_absent().unwrap();
    }
    let counters = d.server.counters();
    assert_eq!(counters.requests_refused.get("lobbies_per_ip"), Some(&2));
    assert_eq!(counters.requests_refused.get("games_per_ip"), Some(&1));
}

/// Row 8: new connections per address; over the rate a connection is held until its
/// hello and refused with `busy`, `retry_after_ms` and 1013, unless it resumes a seat
/// in a running game.
#[test]
fn reconnects_are_rate_limited_except_for_players_of_running_games() {
    let cfg = config(&[("RECONNECT_RATE", "6"), ("RECONNECT_BURST", "2")]);
    let mut d = Driver::new(cfg, 13);
    join(&mut d, 1, "10.0.0.1", None);
    start_game(&mut d, 1);
    let ann = token(&d, 1);
    d.close(1);
    join(&mut d, 2, "10.0.0.1", None);
    assert!(d.seen[&2].token.is_some());
    // The bucket is empty: a new player is refused with a time to retry...
    join(&mut d, 3, "10.0.0.1", None);
    assert_eq!(d.seen[&3].closed, Some(CloseCode::ConnectionLimit));
    let error = last_error(&d, 3).unwrap();
    assert_eq!(error["code"], "busy");
    assert!(
        error["retry_after_ms"]
            .as_u64()
            .is_some_and(|ms| ms > 0 && ms <= 10_000)
    );
    // ...other addresses are not...
    join(&mut d, 4, "10.0.0.9", None);
    assert!(d.seen[&4].token.is_some());
    // ...and Ann, back to her running game, is let in.
    join(&mut d, 5, "10.0.0.1", Some(&ann));
    assert_eq!(d.seen[&5].closed, None);
    assert_eq!(status(&d, 5).as_deref(), Some("playing"));
    // After 10 s (one token at 6 per minute) a new player gets in again.
    d.advance_ms(10_000);
    join(&mut d, 6, "10.0.0.1", None);
    assert!(d.seen[&6].token.is_some());
    let refused = d
        .server
        .counters()
        .connections_refused
        .get("reconnect_rate");
    assert_eq!(refused, Some(&1));
}

/// Row 9: unknown join codes per address; once spent, every join_lobby from the
/// address is `rate_limited` with `retry_after_ms`, even with a good code.
#[test]
fn failed_join_codes_are_rate_limited_per_address() {
    let cfg = config(&[("JOIN_FAIL_RATE", "6"), ("JOIN_FAIL_BURST", "3")]);
    let mut d = Driver::new(cfg, 17);
    join(&mut d, 1, "10.0.0.1", None);
    d.send_json(1, json!({"type": "create_lobby", "name": "Ann"}));
    let code = d.lobby_code(1).unwrap();
    join(&mut d, 2, "10.0.0.2", None);
    let join_as = |d: &mut Driver, conn, code: &str| {
        d.send_json(
            conn,
            json!({"type": "join_lobby", "code": code, "name": "G"}),
        );
        d.last_errors(conn)
    };
    for _ in 0..3 {
        assert_eq!(join_as(&mut d, 2, "ZZZZZZ"), vec!["not_found"]);
    }
    assert_eq!(join_as(&mut d, 2, "ZZZZZZ"), vec!["rate_limited"]);
    assert_eq!(
        join_as(&mut d, 2, &code),
        vec!["rate_limited"],
        "tells nothing"
    );
    let ms = last_error(&d, 2).unwrap()["retry_after_ms"]
        .as_u64()
        .unwrap();
    assert!(ms > 0 && ms <= 10_000, "{ms}");
    // Another address still joins.
    join(&mut d, 3, "10.0.0.3", None);
    assert!(join_as(&mut d, 3, &code).is_empty());
    d.advance_ms(ms);
    assert!(join_as(&mut d, 2, &code).is_empty(), "joins after the wait");
}

// ---------------------------------------------------------------------------------
// Property test against a reference model

#[derive(Clone, Debug)]
enum Op {
    Connect { ip: u8, resume: Option<u8> },
    Create { conn: u8 },
    Start { conn: u8 },
    Join { conn: u8, code: u8, bogus: bool },
    Close { conn: u8 },
    Advance { ms: u32 },
}

fn op() -> impl Strategy<Value = Op> {
    let c = 0..8u8;
    prop_oneof![
        3 => (0..4u8, prop::option::of(0..8u8)).prop_map(|(ip, resume)| Op::Connect { ip, resume }),
        2 => c.clone().prop_map(|conn| Op::Create { conn }),
        2 => c.clone().prop_map(|conn| Op::Start { conn }),
        2 => (c.clone(), 0..4u8, any::<bool>()).prop_map(|(conn, code, bogus)| Op::Join { conn, code, bogus }),
        2 => c.prop_map(|conn| Op::Close { conn }),
        3 => (0..8_000u32).prop_map(|ms| Op::Advance { ms }),
    ]
}

/// The model: which connection is open (and from which address), the tokens handed
/// out, and every lobby code with the address that created it.
#[derive(Default)]
struct Model {
    next: u64,
    open: Vec<(u64, u8)>,
    tokens: Vec<String>,
    codes: BTreeMap<String, u8>,
}

fn step(d: &mut Driver, m: &mut Model, op: &Op) -> Result<(), TestCaseError> {
    let pick =
        |m: &Model, i: u8| (!m.open.is_empty()).then(|| m.open[usize::from(i) % m.open.len()]);
    match *op {
        Op::Connect { ip, resume } => {
            m.next += 1;
            let conn = m.next;
            let token = resume.and_then(|i| {
                (!m.tokens.is_empty()).then(|| m.tokens[usize::from(i) % m.tokens.len()].clone())
            });
            let evictable = d.server.gauges().evictable_sessions;
            let full = d.server.gauges().sessions >= d.server.config().sessions_max as u64;
            join(d, conn, &format!("10.0.0.{ip}"), token.as_deref());
            let refused = d.seen[&conn].closed.is_some();
            let reasons: Vec<_> = d
                .last_notes()
                .into_iter()
                .filter_map(|n| match n {
                    Note::ConnectionRefused { reason, .. } => Some(reason.name()),
                    _ => None,
                })
                .collect();
            if reasons == ["sessions"] {
                prop_assert!(
                    full && evictable == 0,
                    "refused with {} evictable",
                    evictable
                );
            }
            if refused {
                d.close(conn);
            } else {
                m.open.push((conn, ip));
                if let Some(t) = d.seen[&conn].token.clone()
                    && !m.tokens.contains(&t)
                {
                    m.tokens.push(t);
                }
            }
        }
        Op::Create { conn } => {
            if let Some((c, ip)) = pick(m, conn) {
                d.send_json(c, json!({"type": "create_lobby", "name": format!("P{c}")}));
                if let Some(code) = d.lobby_code(c).filter(|_| d.last_errors(c).is_empty()) {
                    m.codes.insert(code, ip);
                    d.send_json(c, json!({"type": "add_ai"}));
                    d.send_json(c, json!({"type": "add_ai"}));
                }
            }
        }
        Op::Start { conn } => {
            if let Some((c, _)) = pick(m, conn) {
                d.send_json(c, json!({"type": "start_game"}));
            }
        }
        Op::Join { conn, code, bogus } => {
            if let Some((c, _)) = pick(m, conn) {
                let codes: Vec<&String> = m.codes.keys().collect();
                let code = match (bogus, codes.is_empty()) {
                    (false, false) => codes[usize::from(code) % codes.len()].clone(),
                    _ => "QQQQQQ".to_string(),
                };
                d.send_json(c, json!({"type": "join_lobby", "code": code, "name": "J"}));
            }
        }
        Op::Close { conn } => {
            if let Some((c, _)) = pick(m, conn) {
                d.close(c);
                m.open.retain(|(x, _)| *x != c);
            }
        }
        Op::Advance { ms } => d.advance_ms(u64::from(ms)),
    }
    // Connections the server closed (a session opened elsewhere, a flood) are gone,
    // as a shell would report.
    let closed: Vec<u64> = m
        .open
        .iter()
        .map(|(c, _)| *c)
        .filter(|c| d.seen.get(c).is_some_and(|s| s.closed.is_some()))
        .collect();
    for c in closed {
        d.close(c);
        m.open.retain(|(x, _)| *x != c);
    }
    check(d, m)
}

fn check(d: &Driver, m: &Model) -> Result<(), TestCaseError> {
    d.server.check_absent().map_err(TestCaseError::fail)?;
    let g = d.server.gauges();
    let c = d.server.config();
    prop_assert!(g.sessions <= c.sessions_max as u64);
    prop_assert!(g.lobbies <= c.lobbies_max as u64);
    prop_assert!(g.ip_table_entries <= c.ip_table_entries_max as u64);
    // A game some open connection plays in is never dormant: every game whose player
    // is here counts against MAX_ACTIVE_GAMES.
    let mut present: Vec<&Value> = Vec::new();
    for (conn, _) in &m.open {
        if let Some(code) = d
            .state(*conn)
            .filter(|v| v["lobby"]["status"] == "playing")
            .map(|v| &v["lobby"]["code"])
            && !present.contains(&code)
        {
            present.push(code);
        }
    }
    prop_assert!(
        g.active_games as usize >= present.len(),
        "{} active, {} present",
        g.active_games,
        present.len()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn nothing_is_held_by_the_absent_for_long(ops in prop::collection::vec(op(), 1..120), seed in any::<u64>()) {
        let cfg = config(&[
            ("MAX_SESSIONS", "6"), ("MAX_LOBBIES", "4"), ("MAX_ACTIVE_GAMES", "2"),
            ("MAX_LOBBIES_PER_IP", "2"), ("MAX_GAMES_PER_IP", "1"),
            ("LOBBY_IDLE_TTL", "6"), ("ABANDONED_GAME_TTL", "4"), ("SESSION_TTL", "20"),
            ("RECONNECT_RATE", "12"), ("RECONNECT_BURST", "4"),
            ("JOIN_FAIL_RATE", "12"), ("JOIN_FAIL_BURST", "2"),
            ("IP_TABLE_MAX", "3"), ("AI_MOVE_DELAY", "0.5"), ("TRICK_PAUSE", "0"),
            ("LOBBY_CREATE_RATE", "30"),
        ]);
        let mut d = Driver::new(cfg, seed);
        let mut m = Model::default();
        for op in &ops {
            step(&mut d, &mut m, op)?;
        }
    }
}

/// Shutting down, the server waits `SHUTDOWN_GRACE` only for someone: with no player
/// connected and no game running it stops at once, and it stops as soon as the last
/// player of a game-less server is gone; a running game gets its grace period.
#[test]
fn an_idle_server_shuts_down_without_waiting_out_the_grace() {
    use wizard_core::io::Input;
    let grace = [("SHUTDOWN_GRACE", "10"), ("AI_MOVE_DELAY", "600")];
    // Nobody connected: finished with the shutdown input itself.
    let mut d = Driver::new(config(&grace), 5);
    d.input(Input::Shutdown);
    assert!(d.server.is_finished(), "idle: stops at once");
    // A player without a game keeps it up until they leave.
    let mut d = Driver::new(config(&grace), 5);
    join(&mut d, 1, "10.3.0.1", None);
    d.input(Input::Shutdown);
    assert!(
        !d.server.is_finished(),
        "a connected player gets the grace period"
    );
    d.advance_ms(1_000);
    d.close(1);
    assert!(d.server.is_finished(), "the last player left");
    // A running game with its player gone still holds the grace period.
    let mut d = Driver::new(config(&grace), 5);
    join(&mut d, 1, "10.3.0.1", None);
    start_game(&mut d, 1);
    d.close(1);
    d.input(Input::Shutdown);
    assert!(
        !d.server.is_finished(),
        "a running game gets the grace period"
    );
    d.run_until(wizard_core::Time::from_millis(20_000));
    assert!(d.server.is_finished(), "stopped after the grace period");
}
