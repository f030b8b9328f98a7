//! What the absent hold (ARCHITECTURE.md): idle lobbies, dormant games, the evictable
//! session index, the per-address caps on lobbies and games, and the per-address rates
//! for new connections and unknown join codes. One table-driven test per rule through
//! `Server::handle`, and a property test against a reference model of who is where.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Value, json};
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{Note, RefuseReason};
use wizard_core::vocabulary::stats::RequestRefusal;
use wizard_core::vocabulary::wire::CloseCode;

use super::driver::{Driver, config};

/// Opens `conn` from `ip` and says hello (resuming `token` if given).
fn join(d: &mut Driver, conn: ConnId, ip: &str, token: Option<&str>) {
    d.open(conn, ip);
    d.hello(conn, token);
}

/// `conn` creates a lobby with two AI seats and starts its game; returns the code.
fn start_game(d: &mut Driver, conn: ConnId) -> String {
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

fn status(d: &Driver, conn: ConnId) -> Option<String> {
    d.state(conn)
        .and_then(|s| s["lobby"]["status"].as_str().map(str::to_string))
}

fn token(d: &Driver, conn: ConnId) -> String {
    d.seen[&conn].token.clone().expect("welcomed")
}

fn last_error(d: &Driver, conn: ConnId) -> Option<Value> {
    d.seen[&conn]
        .messages
        .iter()
        .rev()
        .find(|m| m["type"] == "error")
        .cloned()
}

/// Row 3: at MAX_SESSIONS, a new player evicts a disconnected session found through
/// the index, however many unevictable ones are older (more than the old scan's 64).
/// Sessions outside running games go first, then those of running games whose humans
/// are all gone; a game that one of its humans still plays keeps every seat.
#[test]
fn eviction_finds_the_evictable_session_behind_any_number_of_seated_ones() {
    // (games with a present second human, waiting lobbies, abandoned games, admitted,
    // which kind went: 'w' a waiting lobby's session, 'g' an abandoned game's)
    let cases = [
        (0, 1, 0, true, 'w'),
        (70, 1, 0, true, 'w'),
        (70, 0, 0, false, '-'),
        (70, 0, 1, true, 'g'),
        (3, 2, 2, true, 'w'),
        (0, 0, 3, true, 'g'),
    ];
    for (held, waiting, abandoned, admitted, kind) in cases {
        let total = 2 * held + waiting + abandoned;
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
        let mut conn = ConnId(0);
        // The held games' hosts leave first: they are the oldest disconnected
        // sessions, and their guests stay.
        for _ in 0..held {
            let (host, guest) = (conn.next(), conn.next().next());
            conn = guest;
            join(&mut d, host, "10.1.0.1", None);
            d.send_json(
                host,
                json!({"type": "create_lobby", "name": format!("H{host}")}),
            );
            let code = d.lobby_code(host).expect("a lobby");
            join(&mut d, guest, "10.1.0.4", None);
            d.send_json(
                guest,
                json!({"type": "join_lobby", "code": code, "name": format!("G{guest}")}),
            );
            d.send_json(host, json!({"type": "add_ai"}));
            d.send_json(host, json!({"type": "start_game"}));
            assert_eq!(status(&d, guest).as_deref(), Some("playing"));
            d.close(host);
            d.advance_ms(1);
        }
        let mut gone = BTreeMap::new();
        for _ in 0..abandoned {
            conn = conn.next();
            join(&mut d, conn, "10.1.0.5", None);
            start_game(&mut d, conn);
            gone.insert(token(&d, conn), 'g');
            d.close(conn);
            d.advance_ms(1);
        }
        for _ in 0..waiting {
            conn = conn.next();
            join(&mut d, conn, "10.1.0.2", None);
            d.send_json(conn, json!({"type": "create_lobby", "name": "W"}));
            gone.insert(token(&d, conn), 'w');
            d.close(conn);
            d.advance_ms(1);
        }
        let case = format!("{held} held, {waiting} waiting, {abandoned} abandoned");
        assert_eq!(d.server.gauges().sessions, total as u64, "{case}");
        assert_eq!(
            d.server.gauges().evictable_sessions,
            (waiting + abandoned) as u64,
            "{case}"
        );
        conn = conn.next();
        join(&mut d, conn, "10.1.0.3", None);
        let refused = d.seen[&conn].closed == Some(CloseCode::ConnectionLimit);
        assert_eq!(!refused, admitted, "{case}");
        // The evicted session's token names a new session when it comes back.
        let evicted: Vec<char> = gone
            .iter()
            .enumerate()
            .filter_map(|(i, (tok, kind))| {
                let c = ConnId(1000 + i as u64);
                join(&mut d, c, "10.1.0.6", Some(tok));
                let resumed = d.seen[&c].token.as_deref() == Some(tok.as_str());
                d.close(c);
                (!resumed).then_some(*kind)
            })
            .collect();
        if admitted {
            assert_eq!(evicted.first(), Some(&kind), "{case}: evicted {evicted:?}");
        }
        d.server.check_absent().unwrap();
    }
}

/// Row 5: a waiting lobby whose humans are all gone is deleted after LOBBY_IDLE_TTL
/// (not before), with their sessions.
#[test]
fn an_idle_lobby_goes_after_lobby_idle_ttl() {
    let cfg = config(&[("MAX_LOBBIES", "5"), ("LOBBY_IDLE_TTL", "10")]);
    let mut d = Driver::new(cfg, 5);
    join(&mut d, ConnId(1), "10.0.0.1", None);
    d.send_json(ConnId(1), json!({"type": "create_lobby", "name": "Ann"}));
    let code = d.lobby_code(ConnId(1)).unwrap();
    let ann = token(&d, ConnId(1));
    d.close(ConnId(1));
    assert_eq!(d.server.gauges().idle_lobbies, 1);
    for (at_ms, gone) in [(9_999, false), (10_000, true)] {
        d.run_until(wizard_core::Time::from_millis(at_ms));
        assert_eq!(d.server.gauges().lobbies == 0, gone, "at {at_ms} ms");
    }
    assert_eq!(d.server.counters().lobbies_idle_deleted, 1);
    join(&mut d, ConnId(2), "10.0.0.2", None);
    d.send_json(
        ConnId(2),
        json!({"type": "join_lobby", "code": code, "name": "Bob"}),
    );
    assert_eq!(d.last_errors(ConnId(2)), vec!["not_found"]);
    // Ann's session went with her lobby.
    join(&mut d, ConnId(3), "10.0.0.1", Some(&ann));
    assert_ne!(
        d.seen[&ConnId(3)].token.as_deref(),
        Some(ann.as_str()),
        "a new session"
    );
    d.server.check_absent().unwrap();
}

/// Row 5: at MAX_LOBBIES, a new lobby takes the place of the idle lobby (no running
/// game, every human gone) idle longest; a lobby with a human connected, or a running
/// game, is never taken. `accepting_games` agrees with `create_lobby` at every step.
#[test]
fn at_max_lobbies_a_new_lobby_replaces_the_one_idle_longest() {
    let cfg = config(&[
        ("MAX_LOBBIES", "3"),
        ("LOBBY_IDLE_TTL", "600"),
        ("AI_MOVE_DELAY", "600"),
    ]);
    let mut d = Driver::new(cfg, 6);
    // Ann's lobby (idle from 1 s), Bob's (idle from 2 s), Cat's game (all gone).
    let mut codes = Vec::new();
    for (conn, name) in [(ConnId(1), "Ann"), (ConnId(2), "Bob")] {
        join(&mut d, conn, &format!("10.0.0.{conn}"), None);
        d.send_json(conn, json!({"type": "create_lobby", "name": name}));
        codes.push(d.lobby_code(conn).unwrap());
    }
    join(&mut d, ConnId(3), "10.0.0.3", None);
    start_game(&mut d, ConnId(3));
    assert!(!d.server.health().accepting_games, "MAX_LOBBIES is full");
    join(&mut d, ConnId(9), "10.0.0.9", None);
    d.send_json(ConnId(9), json!({"type": "create_lobby", "name": "Guy"}));
    assert_eq!(
        d.last_errors(ConnId(9)),
        vec!["busy"],
        "nothing idle: refused"
    );
    d.run_until(wizard_core::Time::from_millis(1_000));
    d.close(ConnId(3));
    assert!(
        !d.server.health().accepting_games,
        "a running game is not idle"
    );
    d.close(ConnId(1));
    assert!(
        d.server.health().accepting_games,
        "an idle lobby makes room"
    );
    d.run_until(wizard_core::Time::from_millis(2_000));
    d.close(ConnId(2));
    assert_eq!(d.server.gauges().idle_lobbies, 2);
    let pushed = |d: &Driver, conn: ConnId| {
        d.seen[&conn]
            .messages
            .iter()
            .any(|m| m["type"] == "server_status" && m["accepting_games"] == true)
    };
    // Dan replaces Ann's lobby (idle longest), Eve Bob's; Fay finds no room.
    for (n, name, gone, accepting) in [(4, "Dan", 0, true), (5, "Eve", 1, false)] {
        let (conn, zed) = (ConnId(n), ConnId(10 + n));
        join(&mut d, conn, &format!("10.0.1.{conn}"), None);
        d.send_json(conn, json!({"type": "create_lobby", "name": name}));
        assert!(d.lobby_code(conn).is_some(), "{name} has no lobby");
        join(&mut d, zed, "10.0.2.1", None);
        let code = codes[gone].clone();
        d.send_json(
            zed,
            json!({"type": "join_lobby", "code": code, "name": "Zed"}),
        );
        assert_eq!(d.last_errors(zed), vec!["not_found"], "{name}");
        d.close(zed);
        assert_eq!(d.server.health().accepting_games, accepting, "after {name}");
    }
    assert!(
        pushed(&d, ConnId(4)),
        "Dan was not told that games are accepted"
    );
    join(&mut d, ConnId(6), "10.0.1.6", None);
    d.send_json(ConnId(6), json!({"type": "create_lobby", "name": "Fay"}));
    assert_eq!(d.last_errors(ConnId(6)), vec!["busy"]);
    let c = d.server.counters();
    assert_eq!((c.lobbies_evicted, c.lobbies_idle_deleted), (2, 0));
    assert_eq!(d.server.gauges().lobbies, 3);
    d.server.check_absent().unwrap();
}

/// At MAX_SESSIONS, the sessions of games whose humans are all gone are evictable,
/// dormant or not: the newcomer takes the place of one of them, and a game left
/// without a human is deleted (which frees its MAX_ACTIVE_GAMES slot). Dormant games'
/// seats count as free, so theirs go first even when another session has been gone
/// longer; within a class, the one gone longest goes first.
#[test]
fn an_abandoned_games_session_gives_way_to_a_new_player_at_max_sessions() {
    let cfg = config(&[
        ("MAX_SESSIONS", "4"),
        ("ABANDONED_GAME_TTL", "5"),
        ("AI_MOVE_DELAY", "600"),
        ("RECONNECT_BURST", "100"),
    ]);
    let mut d = Driver::new(cfg, 4);
    // Game X: Ann (gone at once) and Bob (gone at 4 s). Game Y: Cat alone, gone at 1 s.
    join(&mut d, ConnId(1), "10.2.0.1", None);
    d.send_json(ConnId(1), json!({"type": "create_lobby", "name": "Ann"}));
    let code = d.lobby_code(ConnId(1)).expect("a lobby");
    join(&mut d, ConnId(2), "10.2.0.2", None);
    d.send_json(
        ConnId(2),
        json!({"type": "join_lobby", "code": code, "name": "Bob"}),
    );
    d.send_json(ConnId(1), json!({"type": "add_ai"}));
    d.send_json(ConnId(1), json!({"type": "start_game"}));
    assert_eq!(status(&d, ConnId(2)).as_deref(), Some("playing"));
    let ann = token(&d, ConnId(1));
    d.close(ConnId(1));
    d.run_until(wizard_core::Time::from_millis(1_000));
    join(&mut d, ConnId(3), "10.2.0.3", None);
    start_game(&mut d, ConnId(3));
    d.close(ConnId(3));
    d.run_until(wizard_core::Time::from_millis(4_000));
    d.close(ConnId(2));
    // At 7 s, Y has been abandoned for 6 s (dormant), X for 3 s (awake).
    d.run_until(wizard_core::Time::from_millis(7_000));
    let g = d.server.gauges();
    assert_eq!(
        (
            g.sessions,
            g.evictable_sessions,
            g.active_games,
            g.dormant_games
        ),
        (3, 3, 1, 1)
    );
    join(&mut d, ConnId(10), "10.2.1.1", None);
    assert_eq!(
        d.server.counters().sessions_evicted,
        0,
        "room without evicting"
    );
    // Cat goes first (Y is deleted), although Ann has been gone longer; then Ann
    // (X keeps Bob's seat); then Bob, and X goes too.
    for (n, lobbies, dormant) in [(11, 1, 0), (12, 1, 0), (13, 0, 0)] {
        let conn = ConnId(n);
        join(&mut d, conn, &format!("10.2.1.{conn}"), None);
        assert_eq!(d.seen[&conn].closed, None, "newcomer {conn} refused");
        let g = d.server.gauges();
        assert_eq!(
            (g.lobbies, g.dormant_games),
            (lobbies, dormant),
            "newcomer {conn}"
        );
        if n == 11 {
            assert_eq!(g.active_games, 1, "X still runs");
            d.server.check_absent().expect("bookkeeping");
        }
    }
    assert_eq!(d.server.counters().sessions_evicted, 3);
    join(&mut d, ConnId(20), "10.2.0.1", Some(&ann));
    assert_eq!(
        d.seen[&ConnId(20)].closed,
        Some(CloseCode::ConnectionLimit),
        "Ann's seat is gone"
    );
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
    join(&mut d, ConnId(1), "10.0.0.1", None);
    start_game(&mut d, ConnId(1));
    let ann = token(&d, ConnId(1));
    d.close(ConnId(1));
    join(&mut d, ConnId(2), "10.0.0.2", None);
    d.send_json(ConnId(2), json!({"type": "create_lobby", "name": "Bob"}));
    assert_eq!(
        d.last_errors(ConnId(2)),
        vec!["busy"],
        "MAX_ACTIVE_GAMES is full"
    );
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
        quiet += d.moves_applied();
    }
    assert_eq!(quiet, 0, "a dormant game moved");
    assert!(
        d.seen[&ConnId(2)]
            .messages
            .iter()
            .any(|m| m["type"] == "server_status" && m["accepting_games"] == true),
        "Bob was not told that games are accepted again"
    );
    start_game(&mut d, ConnId(2));
    assert_eq!(status(&d, ConnId(2)).as_deref(), Some("playing"));
    // Ann comes back: her game runs again although MAX_ACTIVE_GAMES is taken.
    join(&mut d, ConnId(3), "10.0.0.1", Some(&ann));
    assert_eq!(status(&d, ConnId(3)).as_deref(), Some("playing"));
    let g = d.server.gauges();
    assert_eq!((g.active_games, g.dormant_games), (2, 0));
    // It goes on: Ann plays her turns, the AI seats theirs.
    let mut after = 0;
    for _ in 0..20 {
        if let Some(action) = d.legal(ConnId(3)).first().cloned() {
            d.send_json(ConnId(3), json!({"type": "action", "action": action}));
            after += d.moves_applied();
        }
        d.advance_ms(1_000);
        after += d.moves_applied();
    }
    assert!(after > 3, "the woken game does not move ({after} moves)");
    d.server.check_absent().unwrap();
}

/// Row 4b: at MAX_LOBBIES a dormant game counts as idle: a new lobby takes the place
/// of the one whose humans have been gone longest, deleted with their sessions; a game
/// whose human is connected, and a running one, never go.
#[test]
fn at_max_lobbies_a_new_lobby_takes_the_place_of_a_dormant_game() {
    let cfg = config(&[
        ("MAX_LOBBIES", "2"),
        ("ABANDONED_GAME_TTL", "5"),
        ("AI_MOVE_DELAY", "0.5"),
        ("TRICK_PAUSE", "0"),
    ]);
    let mut d = Driver::new(cfg, 9);
    join(&mut d, ConnId(1), "10.0.0.1", None);
    start_game(&mut d, ConnId(1));
    let ann = token(&d, ConnId(1));
    join(&mut d, ConnId(2), "10.0.0.2", None);
    start_game(&mut d, ConnId(2));
    d.close(ConnId(1));
    let closed = d.now;
    join(&mut d, ConnId(3), "10.0.0.3", None);
    // Ann's game still plays (before ABANDONED_GAME_TTL): no room.
    d.send_json(ConnId(3), json!({"type": "create_lobby", "name": "Cat"}));
    assert_eq!(
        d.last_errors(ConnId(3)),
        vec!["busy"],
        "a running game stays"
    );
    d.run_until(closed.plus_us(5_000_000));
    assert_eq!(d.server.gauges().dormant_games, 1);
    d.send_json(ConnId(3), json!({"type": "create_lobby", "name": "Cat"}));
    assert!(d.last_errors(ConnId(3)).is_empty(), "room made");
    assert!(d.lobby_code(ConnId(3)).is_some());
    let notes = d.last_notes();
    assert!(
        notes
            .iter()
            .any(|n| matches!(n, Note::LobbyIdle { sessions: 1, .. })),
        "the dormant game went with Ann's session: {notes:?}"
    );
    let g = d.server.gauges();
    assert_eq!((g.active_games, g.dormant_games, g.lobbies), (1, 0, 2));
    assert_eq!(
        status(&d, ConnId(2)).as_deref(),
        Some("playing"),
        "Bob's game stays"
    );
    // Ann's token now names nobody: she starts afresh, in no lobby.
    join(&mut d, ConnId(4), "10.0.0.1", Some(&ann));
    assert!(d.state(ConnId(4)).is_some_and(|s| s["lobby"].is_null()));
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
        let conn = ConnId(conn);
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
    assert_eq!(
        counters.requests_refused.get(RequestRefusal::LobbiesPerIp),
        2
    );
    assert_eq!(counters.requests_refused.get(RequestRefusal::GamesPerIp), 1);
}

/// Row 8: new connections per address; over the rate a connection is held until its
/// hello and refused with `busy`, `retry_after_ms` and 1013, unless it resumes a seat
/// in a running game.
#[test]
fn reconnects_are_rate_limited_except_for_players_of_running_games() {
    let cfg = config(&[("RECONNECT_RATE", "6"), ("RECONNECT_BURST", "2")]);
    let mut d = Driver::new(cfg, 13);
    join(&mut d, ConnId(1), "10.0.0.1", None);
    start_game(&mut d, ConnId(1));
    let ann = token(&d, ConnId(1));
    d.close(ConnId(1));
    join(&mut d, ConnId(2), "10.0.0.1", None);
    assert!(d.seen[&ConnId(2)].token.is_some());
    // The bucket is empty: a new player is refused with a time to retry...
    join(&mut d, ConnId(3), "10.0.0.1", None);
    assert_eq!(d.seen[&ConnId(3)].closed, Some(CloseCode::ConnectionLimit));
    let error = last_error(&d, ConnId(3)).unwrap();
    assert_eq!(error["code"], "busy");
    assert!(
        error["retry_after_ms"]
            .as_u64()
            .is_some_and(|ms| ms > 0 && ms <= 10_000)
    );
    // ...other addresses are not...
    join(&mut d, ConnId(4), "10.0.0.9", None);
    assert!(d.seen[&ConnId(4)].token.is_some());
    // ...and Ann, back to her running game, is let in.
    join(&mut d, ConnId(5), "10.0.0.1", Some(&ann));
    assert_eq!(d.seen[&ConnId(5)].closed, None);
    assert_eq!(status(&d, ConnId(5)).as_deref(), Some("playing"));
    // After 10 s (one token at 6 per minute) a new player gets in again.
    d.advance_ms(10_000);
    join(&mut d, ConnId(6), "10.0.0.1", None);
    assert!(d.seen[&ConnId(6)].token.is_some());
    let refused = d
        .server
        .counters()
        .connections_refused
        .get(RefuseReason::Reconnects);
    assert_eq!(refused, 1);
}

/// Row 9: unknown join codes per address; once spent, every join_lobby from the
/// address is `rate_limited` with `retry_after_ms`, even with a good code.
#[test]
fn failed_join_codes_are_rate_limited_per_address() {
    let cfg = config(&[("JOIN_FAIL_RATE", "6"), ("JOIN_FAIL_BURST", "3")]);
    let mut d = Driver::new(cfg, 17);
    join(&mut d, ConnId(1), "10.0.0.1", None);
    d.send_json(ConnId(1), json!({"type": "create_lobby", "name": "Ann"}));
    let code = d.lobby_code(ConnId(1)).unwrap();
    join(&mut d, ConnId(2), "10.0.0.2", None);
    let join_as = |d: &mut Driver, conn: ConnId, code: &str| {
        d.send_json(
            conn,
            json!({"type": "join_lobby", "code": code, "name": "G"}),
        );
        d.last_errors(conn)
    };
    for _ in 0..3 {
        assert_eq!(join_as(&mut d, ConnId(2), "ZZZZZZ"), vec!["not_found"]);
    }
    assert_eq!(join_as(&mut d, ConnId(2), "ZZZZZZ"), vec!["rate_limited"]);
    assert_eq!(
        join_as(&mut d, ConnId(2), &code),
        vec!["rate_limited"],
        "tells nothing"
    );
    let ms = last_error(&d, ConnId(2)).unwrap()["retry_after_ms"]
        .as_u64()
        .unwrap();
    assert!(ms > 0 && ms <= 10_000, "{ms}");
    // Another address still joins.
    join(&mut d, ConnId(3), "10.0.0.3", None);
    assert!(join_as(&mut d, ConnId(3), &code).is_empty());
    d.advance_ms(ms);
    assert!(
        join_as(&mut d, ConnId(2), &code).is_empty(),
        "joins after the wait"
    );
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
    open: Vec<(ConnId, u8)>,
    tokens: Vec<String>,
    codes: BTreeMap<String, u8>,
}

fn step(d: &mut Driver, m: &mut Model, op: &Op) -> Result<(), TestCaseError> {
    let pick =
        |m: &Model, i: u8| (!m.open.is_empty()).then(|| m.open[usize::from(i) % m.open.len()]);
    match *op {
        Op::Connect { ip, resume } => {
            m.next += 1;
            let conn = ConnId(m.next);
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
                let idle = d.server.gauges().idle_lobbies;
                let refused_before = d
                    .server
                    .counters()
                    .requests_refused
                    .get(RequestRefusal::MaxLobbies);
                d.send_json(c, json!({"type": "create_lobby", "name": format!("P{c}")}));
                let refused_after = d
                    .server
                    .counters()
                    .requests_refused
                    .get(RequestRefusal::MaxLobbies);
                if refused_after != refused_before {
                    prop_assert!(idle == 0, "MAX_LOBBIES refused with {} idle", idle);
                }
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
    let closed: Vec<ConnId> = m
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

/// Shutting down, the server waits `SHUTDOWN_GRACE` only for running games: with none
/// it stops at once (players in lobbies are closed with 1001 then), and a running game
/// gets its grace period.
#[test]
fn an_idle_server_shuts_down_without_waiting_out_the_grace() {
    use wizard_core::vocabulary::io::Input;
    let grace = [("SHUTDOWN_GRACE", "10"), ("AI_MOVE_DELAY", "600")];
    // Nobody connected: finished with the shutdown input itself.
    let mut d = Driver::new(config(&grace), 5);
    d.input(Input::Shutdown);
    assert!(d.server.is_finished(), "idle: stops at once");
    // A player in a lobby, no game running: closed with 1001 at once.
    let mut d = Driver::new(config(&grace), 5);
    join(&mut d, ConnId(1), "10.3.0.1", None);
    d.send_json(ConnId(1), json!({"type": "create_lobby", "name": "Ann"}));
    assert!(d.lobby_code(ConnId(1)).is_some(), "a lobby");
    let closed = d.input(Input::Shutdown).iter().any(|o| {
        matches!(
            o,
            wizard_core::vocabulary::io::Output::Close {
                conn: ConnId(1),
                code: wizard_core::vocabulary::wire::CloseCode::ShuttingDown
            }
        )
    });
    assert!(closed, "the lobby's player is closed with 1001 at once");
    assert!(d.server.is_finished(), "no running game: stops at once");
    // A running game with its player gone still holds the grace period.
    let mut d = Driver::new(config(&grace), 5);
    join(&mut d, ConnId(1), "10.3.0.1", None);
    start_game(&mut d, ConnId(1));
    d.close(ConnId(1));
    d.input(Input::Shutdown);
    assert!(
        !d.server.is_finished(),
        "a running game gets the grace period"
    );
    d.run_until(wizard_core::Time::from_millis(20_000));
    assert!(d.server.is_finished(), "stopped after the grace period");
}
