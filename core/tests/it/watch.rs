//! Spectators and table chat against abuse (PROTOCOL.md 6.4, "What one address can do"):
//! a `spectate` with an unknown code is a failed guess like a `join_lobby`, spectating
//! and chat are budgeted per address and per lobby, the history replay is bounded, and
//! a player the host removed stays out for a while.

use serde_json::{Value, json};
use wizard_core::vocabulary::io::ConnId;
use wizard_core::vocabulary::stats::RequestRefusal;

use crate::driver::{Driver, config};

const HOST: ConnId = ConnId(1);

/// A driver whose host (10.0.0.1) opened a lobby; its code.
fn with_lobby(pairs: &[(&str, &str)]) -> (Driver, String) {
    let mut all = vec![("MESSAGE_RATE", "1000"), ("MESSAGE_BURST", "1000")];
    all.extend_from_slice(pairs);
    let mut d = Driver::new(config(&all), 7);
    d.open(HOST, "10.0.0.1");
    d.hello(HOST, None);
    d.send_json(HOST, json!({"type": "create_lobby", "name": "Ann"}));
    let code = d.lobby_code(HOST).expect("a lobby");
    (d, code)
}

/// Opens `conn` from `ip` and says hello.
fn arrive(d: &mut Driver, conn: ConnId, ip: &str) {
    d.open(conn, ip);
    d.hello(conn, None);
}

/// The messages of the last input to `conn`.
fn last_to(d: &Driver, conn: ConnId) -> Vec<Value> {
    d.last
        .iter()
        .filter_map(|o| match o {
            wizard_core::vocabulary::io::Output::Send { conn: c, text, .. } if *c == conn => {
                serde_json::from_str(text).ok()
            }
            _ => None,
        })
        .collect()
}

/// The `error` of the last input to `conn`: (code, retry_after_ms).
fn error_of(d: &Driver, conn: ConnId) -> Option<(String, Option<u64>)> {
    last_to(d, conn).into_iter().find_map(|m| {
        (m["type"] == "error").then(|| {
            (
                m["code"].as_str().unwrap_or("").to_string(),
                m["retry_after_ms"].as_u64(),
            )
        })
    })
}

fn spectate(d: &mut Driver, conn: ConnId, code: &str) -> Option<(String, Option<u64>)> {
    d.send_json(
        conn,
        json!({"type": "spectate", "code": code, "name": "Zoe"}),
    );
    error_of(d, conn)
}

fn chat(d: &mut Driver, conn: ConnId, text: &str) -> Option<(String, Option<u64>)> {
    d.send_json(conn, json!({"type": "chat", "text": text}));
    error_of(d, conn)
}

/// The texts of the `chat` frames `conn` received, in order.
fn chat_texts(d: &Driver, conn: ConnId) -> Vec<String> {
    d.seen[&conn]
        .messages
        .iter()
        .filter(|m| m["type"] == "chat")
        .map(|m| m["text"].as_str().unwrap_or("").to_string())
        .collect()
}

fn refused(d: &Driver, why: RequestRefusal) -> u64 {
    d.server.counters().requests_refused.get(why)
}

#[test]
fn a_failed_spectate_is_a_failed_guess_like_a_join() {
    let (mut d, code) = with_lobby(&[("JOIN_FAIL_BURST", "3"), ("JOIN_FAIL_RATE", "1")]);
    let guesser = ConnId(9);
    arrive(&mut d, guesser, "10.0.0.9");
    for guess in ["ZZZZZ2", "ZZZZZ3", "ZZZZZ4"] {
        assert_ne!(guess, code);
        let e = spectate(&mut d, guesser, guess);
        assert_eq!(e, Some(("not_found".into(), None)), "{guess}");
    }
    // Out of guesses: the real code says nothing more than a wrong one.
    let (why, wait) = spectate(&mut d, guesser, &code).expect("refused");
    assert_eq!(why, "rate_limited");
    assert!(wait.is_some_and(|ms| ms > 0), "{wait:?}");
    assert!(d.state(guesser).is_some_and(|s| s["lobby"].is_null()));
    // One budget for both messages.
    d.send_json(
        guesser,
        json!({"type": "join_lobby", "code": code, "name": "Zoe"}),
    );
    assert_eq!(
        error_of(&d, guesser).map(|e| e.0),
        Some("rate_limited".into())
    );
    assert_eq!(refused(&d, RequestRefusal::JoinFailRate), 2);
    // Another address still watches.
    let other = ConnId(10);
    arrive(&mut d, other, "10.0.0.10");
    assert_eq!(spectate(&mut d, other, &code), None);
    assert_eq!(
        d.state(other).unwrap()["lobby"]["spectators"],
        json!(["Zoe"])
    );
}

#[test]
fn a_failed_join_spends_the_spectate_guesses_too() {
    let (mut d, _code) = with_lobby(&[("JOIN_FAIL_BURST", "2"), ("JOIN_FAIL_RATE", "1")]);
    let guesser = ConnId(9);
    arrive(&mut d, guesser, "10.0.0.9");
    for guess in ["ZZZZZ2", "ZZZZZ3"] {
        d.send_json(
            guesser,
            json!({"type": "join_lobby", "code": guess, "name": "Zoe"}),
        );
        assert_eq!(error_of(&d, guesser).map(|e| e.0), Some("not_found".into()));
    }
    let e = spectate(&mut d, guesser, "ZZZZZ4");
    assert_eq!(e.map(|e| e.0), Some("rate_limited".into()));
}

#[test]
fn chat_is_budgeted_per_address_whatever_its_sessions() {
    let (mut d, code) = with_lobby(&[
        ("CHAT_RATE", "5"),
        ("CHAT_IP_BURST", "8"),
        ("CHAT_IP_RATE", "1"),
        ("CHAT_LOBBY_BURST", "1000"),
    ]);
    // Three sessions in a row from one address, each spending its own CHAT_RATE.
    let (mut sent, mut refused_lines) = (0, 0);
    for k in 0..3u64 {
        let conn = ConnId(20 + k);
        arrive(&mut d, conn, "10.0.0.9");
        assert_eq!(spectate(&mut d, conn, &code), None);
        for i in 0..5 {
            match chat(&mut d, conn, &format!("s{k} l{i}")) {
                None => sent += 1,
                Some((why, wait)) => {
                    assert_eq!(why, "rate_limited");
                    assert!(wait.is_some_and(|ms| ms > 0));
                    refused_lines += 1;
                }
            }
        }
        d.close(conn);
    }
    assert_eq!((sent, refused_lines), (8, 7));
    assert_eq!(chat_texts(&d, HOST).len(), 8, "the lobby saw 8 lines");
    // Each session was within its own CHAT_RATE: every refusal was the address's.
    assert_eq!(refused(&d, RequestRefusal::ChatIpRate), 7);
    // Another address is not held back, and the address's budget refills.
    let other = ConnId(30);
    arrive(&mut d, other, "10.0.0.10");
    spectate(&mut d, other, &code);
    assert_eq!(chat(&mut d, other, "hello"), None);
    d.advance_ms(60_000);
    let again = ConnId(31);
    arrive(&mut d, again, "10.0.0.9");
    spectate(&mut d, again, &code);
    assert_eq!(chat(&mut d, again, "one more"), None);
    assert!(chat(&mut d, again, "and another").is_some());
}

#[test]
fn spectators_chat_is_budgeted_per_lobby_and_the_seats_are_not() {
    let (mut d, code) = with_lobby(&[
        ("CHAT_RATE", "100"),
        ("CHAT_IP_BURST", "100"),
        ("CHAT_LOBBY_BURST", "4"),
        ("CHAT_LOBBY_RATE", "1"),
    ]);
    let mut sent = 0;
    for k in 0..3u8 {
        let conn = ConnId(20 + u64::from(k));
        arrive(&mut d, conn, &format!("10.0.1.{k}"));
        assert_eq!(spectate(&mut d, conn, &code), None);
        for i in 0..3 {
            if chat(&mut d, conn, &format!("w{k} l{i}")).is_none() {
                sent += 1;
            }
        }
    }
    assert_eq!(sent, 4, "the lobby's spectators share CHAT_LOBBY_BURST");
    assert_eq!(refused(&d, RequestRefusal::ChatLobbyRate), 5);
    // The host is seated: its lines do not depend on the spectators' budget.
    for i in 0..5 {
        assert_eq!(chat(&mut d, HOST, &format!("host {i}")), None);
    }
    assert_eq!(chat_texts(&d, HOST).len(), 9);
}

#[test]
fn spectate_churn_from_one_address_is_budgeted() {
    let (mut d, code) = with_lobby(&[
        ("SPECTATE_BURST", "3"),
        ("SPECTATE_RATE", "1"),
        ("SPECTATORS_STATE_INTERVAL", "0"),
    ]);
    let states_before = d.seen[&HOST]
        .messages
        .iter()
        .filter(|m| m["type"] == "state")
        .count();
    let churner = ConnId(9);
    arrive(&mut d, churner, "10.0.0.9");
    let mut watched = 0;
    for _ in 0..10 {
        match spectate(&mut d, churner, &code) {
            None => {
                watched += 1;
                d.send_json(churner, json!({"type": "leave_lobby"}));
            }
            Some((why, wait)) => {
                assert_eq!(why, "rate_limited");
                assert!(wait.is_some_and(|ms| ms > 0));
            }
        }
    }
    assert_eq!(watched, 3);
    assert_eq!(refused(&d, RequestRefusal::SpectateRate), 7);
    let states = d.seen[&HOST]
        .messages
        .iter()
        .filter(|m| m["type"] == "state")
        .count();
    assert_eq!(
        states - states_before,
        6,
        "one state per spectate and per leave"
    );
}

#[test]
fn the_history_replay_is_bounded_in_bytes_and_per_address() {
    let (mut d, code) = with_lobby(&[
        ("CHAT_RATE", "100"),
        ("CHAT_IP_BURST", "100"),
        ("CHAT_HISTORY_BYTES", "4096"),
        ("CHAT_REPLAY_BURST", "2"),
        ("CHAT_REPLAY_RATE", "1"),
        ("SPECTATE_BURST", "10"),
    ]);
    let long = "x".repeat(190);
    for i in 0..50 {
        assert_eq!(chat(&mut d, HOST, &format!("{i:02} {long}")), None);
    }
    let watcher = ConnId(9);
    arrive(&mut d, watcher, "10.0.0.9");
    for round in 0..3 {
        assert_eq!(spectate(&mut d, watcher, &code), None);
        let got = last_to(&d, watcher);
        let gap: Vec<u64> = got
            .iter()
            .filter(|m| m["type"] == "chat_gap")
            .filter_map(|m| m["missed"].as_u64())
            .collect();
        let lines: Vec<String> = got
            .iter()
            .filter(|m| m["type"] == "chat")
            .map(|m| m.to_string())
            .collect();
        let bytes: usize = lines.iter().map(String::len).sum();
        if round < 2 {
            assert!(bytes <= 4096 && !lines.is_empty(), "{bytes} bytes");
            assert_eq!(gap, [50 - lines.len() as u64], "round {round}");
            let newest = got.iter().rev().find(|m| m["type"] == "chat").unwrap();
            assert!(newest["text"].as_str().unwrap().starts_with("49 "));
        } else {
            // Past CHAT_REPLAY_BURST: only the note.
            assert!(lines.is_empty(), "round {round}: {} lines", lines.len());
            assert_eq!(gap, [50]);
        }
        d.send_json(watcher, json!({"type": "leave_lobby"}));
    }
}

#[test]
fn a_removed_player_is_kept_out_for_a_while_by_id_and_address() {
    let (mut d, code) = with_lobby(&[("REMOVED_PLAYER_TTL", "60")]);
    let bo = ConnId(2);
    arrive(&mut d, bo, "10.0.0.2");
    d.send_json(
        bo,
        json!({"type": "join_lobby", "code": code, "name": "Bo"}),
    );
    let bo_id = d.seen[&bo].player_id.clone().unwrap();
    d.send_json(HOST, json!({"type": "remove_player", "player_id": bo_id}));
    assert_eq!(error_of(&d, bo).map(|e| e.0), Some("removed".into()));

    let join = json!({"type": "join_lobby", "code": code, "name": "Bo"});
    d.send_json(bo, join.clone());
    assert_eq!(error_of(&d, bo).map(|e| e.0), Some("not_allowed".into()));
    assert_eq!(
        spectate(&mut d, bo, &code).map(|e| e.0),
        Some("not_allowed".into())
    );
    // A new session from the same address is kept out too.
    let again = ConnId(3);
    arrive(&mut d, again, "10.0.0.2");
    d.send_json(again, join.clone());
    assert_eq!(error_of(&d, again).map(|e| e.0), Some("not_allowed".into()));
    // Anyone else joins.
    let cy = ConnId(4);
    arrive(&mut d, cy, "10.0.0.4");
    d.send_json(
        cy,
        json!({"type": "join_lobby", "code": code, "name": "Cy"}),
    );
    assert_eq!(error_of(&d, cy), None);
    d.server.check_audiences().unwrap();

    d.advance_ms(61_000);
    d.send_json(bo, join);
    assert_eq!(error_of(&d, bo), None, "back after REMOVED_PLAYER_TTL");
    let players = &d.state(bo).unwrap()["lobby"]["players"];
    assert!(players.as_array().unwrap().iter().any(|p| p["id"] == bo_id));
}

#[test]
fn removed_players_go_with_their_lobby() {
    let (mut d, code) = with_lobby(&[("REMOVED_PLAYER_TTL", "600")]);
    let bo = ConnId(2);
    arrive(&mut d, bo, "10.0.0.2");
    d.send_json(
        bo,
        json!({"type": "join_lobby", "code": code, "name": "Bo"}),
    );
    let bo_id = d.seen[&bo].player_id.clone().unwrap();
    d.send_json(HOST, json!({"type": "remove_player", "player_id": bo_id}));
    d.send_json(HOST, json!({"type": "leave_lobby"}));
    // The lobby is gone, and what its host decided with it.
    d.server.check_audiences().unwrap();
}

/// States the host received so far.
fn host_states(d: &Driver) -> Vec<Value> {
    d.seen[&HOST]
        .messages
        .iter()
        .filter(|m| m["type"] == "state")
        .cloned()
        .collect()
}

#[test]
fn spectators_coming_and_going_reach_the_members_at_most_once_an_interval() {
    let (mut d, code) = with_lobby(&[("SPECTATORS_STATE_INTERVAL", "0.5")]);
    let before = host_states(&d).len();
    // Twenty addresses watch and leave, two of them stay: all within 100 ms.
    for k in 0..20u8 {
        let conn = ConnId(100 + u64::from(k));
        arrive(&mut d, conn, &format!("10.0.2.{k}"));
        assert_eq!(spectate(&mut d, conn, &code), None);
        // The spectator sees itself listed at once, whatever the members see.
        let own = d.state(conn).unwrap()["lobby"]["spectators"].clone();
        assert!(own.as_array().is_some_and(|l| !l.is_empty()), "{own}");
        if k >= 2 {
            d.send_json(conn, json!({"type": "leave_lobby"}));
        }
        d.advance_ms(5);
    }
    // The first change went out at once; the rest wait for the interval's end.
    assert_eq!(host_states(&d).len() - before, 1);
    d.run_until(d.now.plus_us(500_000));
    let states = host_states(&d);
    assert_eq!(
        states.len() - before,
        2,
        "one more state for all the changes"
    );
    let shown = &states.last().unwrap()["lobby"]["spectators"];
    assert_eq!(*shown, json!(["Zoe", "Zoe (2)"]), "the list as it is now");
    // A lone change long after goes out at once again.
    d.advance_ms(2_000);
    d.send_json(ConnId(100), json!({"type": "leave_lobby"}));
    let states = host_states(&d);
    assert_eq!(states.len() - before, 3);
    assert_eq!(
        states.last().unwrap()["lobby"]["spectators"],
        json!(["Zoe (2)"])
    );
    d.server.check_audiences().unwrap();
}
