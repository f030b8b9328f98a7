//! Public tables and quick play through the server machine (PROTOCOL.md 7.2): the
//! listing, tickets in and out, tables formed with their games started, AI filling a
//! table after the wait, admission.

use serde_json::{Value, json};
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{Note, Output};

use crate::driver::{Driver, config};

/// A server whose pool groups tickets at once (`QUICK_PLAY_SETTLE` 0) unless `pairs`
/// say otherwise.
fn driver(pairs: &[(&str, &str)]) -> Driver {
    let mut all = vec![
        ("MESSAGE_RATE", "1000"),
        ("MESSAGE_BURST", "1000"),
        ("QUICK_PLAY_SETTLE", "0"),
    ];
    all.extend_from_slice(pairs);
    Driver::new(config(&all), 11)
}

fn arrive(d: &mut Driver, conn: u64) -> ConnId {
    let c = ConnId(conn);
    d.open(c, &format!("10.0.{}.{}", conn / 200, conn % 200 + 1));
    d.hello(c, None);
    c
}

/// The messages of `type_name` the last input sent to `conn`.
fn last_of(d: &Driver, conn: ConnId, type_name: &str) -> Vec<Value> {
    d.last
        .iter()
        .filter_map(|o| match o {
            Output::Send { conn: c, text, .. } if *c == conn => {
                let v: Value = serde_json::from_str(text).ok()?;
                (v["type"] == type_name).then_some(v)
            }
            _ => None,
        })
        .collect()
}

fn tables(d: &mut Driver, conn: ConnId, running: bool) -> Vec<Value> {
    d.send_json(conn, json!({"type": "list_tables", "running": running}));
    let answers = last_of(d, conn, "tables");
    assert_eq!(answers.len(), 1, "one tables answer");
    answers[0]["tables"].as_array().cloned().unwrap_or_default()
}

#[test]
fn public_lobbies_are_listed_private_ones_are_not() {
    let mut d = driver(&[]);
    let ann = arrive(&mut d, 1);
    let bob = arrive(&mut d, 2);
    let cat = arrive(&mut d, 3);
    d.send_json(
        ann,
        json!({"type": "create_lobby", "name": "Ann", "public": true}),
    );
    assert_eq!(d.state(ann).unwrap()["lobby"]["public"], true);
    d.send_json(bob, json!({"type": "create_lobby", "name": "Bob"}));
    assert_eq!(
        d.state(bob).unwrap()["lobby"].get("public"),
        None,
        "left out when false"
    );
    let listed = tables(&mut d, cat, false);
    assert_eq!(listed.len(), 1);
    let t = &listed[0];
    assert_eq!(t["code"].as_str(), d.lobby_code(ann).as_deref());
    assert_eq!(t["host"], "Ann");
    assert_eq!(t["seats"], 1);
    assert_eq!(t["max_seats"], 6);
    assert_eq!(t["rated"], false);
    assert_eq!(t["rating"], Value::Null);
    assert_eq!(t["options"]["hidden_bids"], false);
    // Bob makes his public; Ann's private again.
    d.send_json(bob, json!({"type": "set_options", "public": true}));
    d.send_json(ann, json!({"type": "set_options", "public": false}));
    let listed = tables(&mut d, cat, false);
    let codes: Vec<_> = listed
        .iter()
        .map(|t| t["code"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(codes, vec![d.lobby_code(bob).unwrap()]);
    d.server.check_quick_play().unwrap();
}

#[test]
fn full_and_running_tables_leave_the_open_list_running_ones_are_watchable() {
    let mut d = driver(&[]);
    let ann = arrive(&mut d, 1);
    let cat = arrive(&mut d, 3);
    d.send_json(
        ann,
        json!({"type": "create_lobby", "name": "Ann", "public": true}),
    );
    d.send_json(ann, json!({"type": "add_ai"}));
    d.send_json(ann, json!({"type": "add_ai"}));
    assert_eq!(tables(&mut d, cat, false)[0]["seats"], 3);
    d.send_json(ann, json!({"type": "start_game"}));
    assert!(
        tables(&mut d, cat, false).is_empty(),
        "a running game is no open table"
    );
    let running = tables(&mut d, cat, true);
    assert_eq!(running.len(), 1);
    assert_eq!(running[0]["status"], "playing");
    // Watching it needs only the listed code.
    let code = running[0]["code"].as_str().unwrap().to_owned();
    d.send_json(
        cat,
        json!({"type": "spectate", "code": code, "name": "Cat"}),
    );
    assert_eq!(
        d.state(cat).unwrap()["lobby"]["code"].as_str(),
        Some(code.as_str())
    );
    // Ann leaves: the lobby (no human left) is gone from the list.
    d.send_json(ann, json!({"type": "leave_lobby"}));
    assert!(tables(&mut d, cat, true).is_empty());
    d.server.check_quick_play().unwrap();
}

#[test]
fn the_list_is_bounded_and_rate_limited() {
    let mut d = driver(&[
        ("LIST_TABLES_BURST", "3"),
        ("LIST_TABLES_RATE", "1"),
        ("MAX_LOBBIES_PER_IP", "100"),
        ("LOBBY_CREATE_RATE", "1000"),
    ]);
    for n in 0..60 {
        let c = arrive(&mut d, 100 + n);
        d.send_json(
            c,
            json!({"type": "create_lobby", "name": "Host", "public": true}),
        );
    }
    let cat = arrive(&mut d, 3);
    assert_eq!(tables(&mut d, cat, false).len(), 50);
    tables(&mut d, cat, false);
    tables(&mut d, cat, false);
    d.send_json(cat, json!({"type": "list_tables"}));
    assert_eq!(d.last_errors(cat), vec!["rate_limited"]);
    assert!(last_of(&d, cat, "tables").is_empty());
}

#[test]
fn four_players_queueing_are_seated_together_and_their_game_starts() {
    let mut d = driver(&[]);
    let players: Vec<ConnId> = (1..=4).map(|n| arrive(&mut d, n)).collect();
    for (i, &p) in players.iter().enumerate() {
        d.advance_ms(100);
        d.send_json(
            p,
            json!({"type": "quick_play", "name": format!("P{i}"), "seats": 4}),
        );
        if i < 3 {
            let queued = last_of(&d, p, "queued");
            assert_eq!(queued.len(), 1);
            assert_eq!(queued[0]["since_ms"], 100 * (i as u64 + 1));
            assert!(d.state(p).unwrap()["lobby"].is_null());
        }
    }
    let code = d.lobby_code(players[0]).expect("seated");
    for &p in &players {
        let s = d.state(p).unwrap();
        assert_eq!(s["lobby"]["code"].as_str(), Some(code.as_str()));
        assert_eq!(s["lobby"]["status"], "playing");
        assert_eq!(s["lobby"]["public"], true);
        assert_eq!(s["lobby"]["players"].as_array().unwrap().len(), 4);
        assert!(s["game"]["you"].is_u64());
    }
    assert!(
        d.last_notes().iter().any(|n| matches!(
            n,
            Note::QuickPlaySeated {
                humans: 4,
                ai: 0,
                ..
            }
        )),
        "a note of the seated table"
    );
    assert_eq!(d.server.gauges().quick_play_tickets, 0);
    assert_eq!(d.server.counters().quick_play_groups[1][0], 1);
    d.server.check_quick_play().unwrap();
}

#[test]
fn alone_after_the_wait_the_table_fills_with_normal_ai() {
    let mut d = driver(&[("QUICK_PLAY_WAIT", "30")]);
    let ann = arrive(&mut d, 1);
    let bob = arrive(&mut d, 2);
    d.send_json(
        ann,
        json!({"type": "quick_play", "name": "Ann", "seats": 5}),
    );
    d.advance_ms(1000);
    d.send_json(
        bob,
        json!({"type": "quick_play", "name": "Bob", "seats": 5}),
    );
    d.run_until(wizard_core::Time::from_millis(29_999));
    assert!(
        d.state(ann).unwrap()["lobby"].is_null(),
        "not before QUICK_PLAY_WAIT"
    );
    d.run_until(wizard_core::Time::from_millis(30_000));
    let s = d.state(ann).unwrap().clone();
    assert_eq!(s["lobby"]["status"], "playing");
    let seats = s["lobby"]["players"].as_array().unwrap();
    assert_eq!(seats.len(), 5);
    assert_eq!(seats[0]["name"], "Ann", "the oldest ticket hosts");
    assert_eq!(seats[1]["name"], "Bob");
    for ai in &seats[2..] {
        assert_eq!(ai["is_ai"], true);
        assert_eq!(ai["level"], "normal");
    }
    assert_eq!(d.lobby_code(bob), d.lobby_code(ann));
    d.server.check_quick_play().unwrap();
}

#[test]
fn a_ticket_goes_with_cancel_leave_another_lobby_and_the_connection() {
    let mut d = driver(&[]);
    let ann = arrive(&mut d, 1);
    let bob = arrive(&mut d, 2);
    let cat = arrive(&mut d, 3);
    let dan = arrive(&mut d, 4);
    for (c, how) in [
        (ann, "cancel"),
        (bob, "leave"),
        (cat, "create"),
        (dan, "close"),
    ] {
        d.send_json(c, json!({"type": "quick_play", "name": "X", "seats": 3}));
        assert_eq!(d.server.gauges().quick_play_tickets, 1);
        match how {
            "cancel" => d.send_json(c, json!({"type": "cancel_quick_play"})),
            "leave" => d.send_json(c, json!({"type": "leave_lobby"})),
            "create" => d.send_json(c, json!({"type": "create_lobby", "name": "Cat"})),
            _ => {
                d.close(c);
                &[]
            }
        };
        assert_eq!(d.server.gauges().quick_play_tickets, 0, "{how}");
        d.server.check_quick_play().unwrap();
    }
    // Nobody was seated by the tickets that went.
    d.run_until(wizard_core::Time::from_secs(120));
    assert!(d.state(ann).unwrap()["lobby"].is_null());
    assert!(d.state(bob).unwrap()["lobby"].is_null());
}

#[test]
fn a_session_resumed_elsewhere_loses_its_ticket_and_queues_again() {
    let mut d = driver(&[]);
    let ann = arrive(&mut d, 1);
    d.send_json(ann, json!({"type": "quick_play", "name": "Ann"}));
    assert_eq!(d.server.gauges().quick_play_tickets, 1);
    let token = d.seen[&ann].token.clone();
    let again = ConnId(9);
    d.open(again, "10.0.0.2");
    d.hello(again, token.as_deref());
    assert_eq!(d.server.gauges().quick_play_tickets, 0);
    d.send_json(again, json!({"type": "quick_play", "name": "Ann"}));
    assert_eq!(d.server.gauges().quick_play_tickets, 1);
    d.server.check_quick_play().unwrap();
}

#[test]
fn one_ticket_per_session_and_the_pool_is_bounded() {
    let mut d = driver(&[("QUICK_PLAY_MAX", "2")]);
    let ann = arrive(&mut d, 1);
    let bob = arrive(&mut d, 2);
    let cat = arrive(&mut d, 3);
    d.send_json(
        ann,
        json!({"type": "quick_play", "name": "Ann", "seats": 6}),
    );
    d.advance_ms(500);
    d.send_json(
        ann,
        json!({"type": "quick_play", "name": "Ann", "seats": 5}),
    );
    assert_eq!(
        last_of(&d, ann, "queued")[0]["since_ms"],
        0,
        "the same ticket"
    );
    assert_eq!(d.server.gauges().quick_play_tickets, 1);
    d.send_json(
        bob,
        json!({"type": "quick_play", "name": "Bob", "seats": 6}),
    );
    d.send_json(
        cat,
        json!({"type": "quick_play", "name": "Cat", "seats": 6}),
    );
    assert_eq!(d.last_errors(cat), vec!["busy"]);
    let busy = &d.seen[&cat].messages.last().unwrap().clone();
    assert!(busy["retry_after_ms"].as_u64().unwrap() > 0);
    assert_eq!(d.server.gauges().quick_play_tickets, 2);
    d.send_json(
        cat,
        json!({"type": "quick_play", "name": "Cat", "seats": 7}),
    );
    assert_eq!(d.last_errors(cat), vec!["invalid"]);
}

#[test]
fn not_accepting_games_is_busy_and_keeps_no_ticket() {
    let mut d = driver(&[("MAX_ACTIVE_GAMES", "1")]);
    d.start_with_two_ai(ConnId(50));
    let ann = arrive(&mut d, 1);
    d.send_json(ann, json!({"type": "quick_play", "name": "Ann"}));
    assert_eq!(d.last_errors(ann), vec!["busy"]);
    assert!(last_of(&d, ann, "queued").is_empty());
    assert_eq!(d.server.gauges().quick_play_tickets, 0);
    // A quick-play game counts against MAX_ACTIVE_GAMES like any other.
    d.send_json(ConnId(50), json!({"type": "leave_lobby"}));
    d.send_json(
        ann,
        json!({"type": "quick_play", "name": "Ann", "seats": 3}),
    );
    assert_eq!(last_of(&d, ann, "queued").len(), 1);
    d.run_until(wizard_core::Time::from_secs(40));
    assert_eq!(d.state(ann).unwrap()["lobby"]["status"], "playing");
    let bob = arrive(&mut d, 2);
    d.send_json(bob, json!({"type": "quick_play", "name": "Bob"}));
    assert_eq!(d.last_errors(bob), vec!["busy"]);
}

#[test]
fn a_seated_player_who_queues_leaves_the_old_lobby() {
    let mut d = driver(&[]);
    let ann = arrive(&mut d, 1);
    let bob = arrive(&mut d, 2);
    d.send_json(
        ann,
        json!({"type": "create_lobby", "name": "Ann", "public": true}),
    );
    let code = d.lobby_code(ann).unwrap();
    d.send_json(
        bob,
        json!({"type": "join_lobby", "code": code, "name": "Bob"}),
    );
    d.send_json(bob, json!({"type": "quick_play", "name": "Bob"}));
    assert!(d.state(bob).unwrap()["lobby"].is_null());
    assert_eq!(
        d.state(ann).unwrap()["lobby"]["players"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    d.server.check_quick_play().unwrap();
}

/// Players who queue and walk away must not hold a game slot or the AI's time: a table
/// the matchmaker seated sleeps as soon as its last human is gone (a lobby someone
/// made waits `ABANDONED_GAME_TTL`), and wakes when one comes back.
#[test]
fn a_quick_play_table_sleeps_once_its_players_are_gone_and_wakes_when_one_returns() {
    let mut d = driver(&[
        ("MAX_ACTIVE_GAMES", "1"),
        ("ABANDONED_GAME_TTL", "90"),
        ("AI_MOVE_DELAY", "0.5"),
        ("TRICK_PAUSE", "0"),
    ]);
    let players: Vec<ConnId> = (1..=3).map(|n| arrive(&mut d, n)).collect();
    for &p in &players {
        d.send_json(p, json!({"type": "quick_play", "name": "W", "seats": 3}));
    }
    assert_eq!(d.state(players[0]).unwrap()["lobby"]["status"], "playing");
    let ann = d.seen[&players[0]].token.clone().expect("welcomed");
    // While one of them is connected the game runs.
    d.close(players[1]);
    d.close(players[2]);
    d.advance_ms(1);
    assert_eq!(d.server.gauges().active_games, 1);
    d.close(players[0]);
    d.advance_ms(1);
    let g = d.server.gauges();
    assert_eq!((g.active_games, g.dormant_games), (0, 1), "asleep at once");
    assert_eq!(d.server.counters().games_dormant, 1);
    let mut quiet = 0;
    for _ in 0..10 {
        d.advance_ms(1_000);
        quiet += d.moves_applied();
    }
    assert_eq!(quiet, 0, "a sleeping table moved");
    // Its slot is free for a game someone makes.
    let eve = arrive(&mut d, 9);
    d.send_json(eve, json!({"type": "create_lobby", "name": "Eve"}));
    d.send_json(eve, json!({"type": "add_ai"}));
    d.send_json(eve, json!({"type": "add_ai"}));
    d.send_json(eve, json!({"type": "start_game"}));
    assert_eq!(d.state(eve).unwrap()["lobby"]["status"], "playing");
    // Ann comes back: her table plays on where it stood.
    let back = ConnId(20);
    d.open(back, "10.0.0.2");
    d.hello(back, Some(&ann));
    assert_eq!(d.state(back).unwrap()["lobby"]["status"], "playing");
    let g = d.server.gauges();
    assert_eq!((g.active_games, g.dormant_games), (2, 0), "woken");
    d.server.check_absent().unwrap();
    d.server.check_quick_play().unwrap();
}

/// Ann and Cat play every turn they have; returns the turns played for an absent
/// human by the fallback (`turn_seconds` ran out or the player is away) meanwhile.
fn play_for(d: &mut Driver, present: &[ConnId], ms: u64) -> u64 {
    use wizard_core::vocabulary::io::FallbackReason;
    let before = d
        .server
        .counters()
        .fallbacks
        .get(FallbackReason::TurnTimeout);
    for _ in 0..ms / 100 {
        for &p in present {
            if let Some(action) = d.legal(p).first().cloned() {
                d.send_json(p, json!({"type": "action", "action": action}));
            }
        }
        d.advance_ms(100);
    }
    d.server
        .counters()
        .fallbacks
        .get(FallbackReason::TurnTimeout)
        - before
}

/// Strangers do not wait for a player who walked away: at a quick-play table the turns
/// of a player disconnected for `QUICK_PLAY_AWAY` are played for them, each at an AI
/// seat's pace; back, they play their own turns again. A lobby someone made waits.
#[test]
fn at_a_quick_play_table_the_turns_of_a_player_who_walked_away_are_played_for_them() {
    for quick in [true, false] {
        let mut d = driver(&[
            ("QUICK_PLAY_AWAY", "5"),
            ("AI_MOVE_DELAY", "0.5"),
            ("TRICK_PAUSE", "0"),
        ]);
        let [ann, bob, cat] = [1, 2, 3].map(|n| arrive(&mut d, n));
        if quick {
            for p in [ann, bob, cat] {
                d.send_json(p, json!({"type": "quick_play", "name": "P", "seats": 3}));
            }
        } else {
            d.send_json(ann, json!({"type": "create_lobby", "name": "Ann"}));
            let code = d.lobby_code(ann).unwrap();
            for p in [bob, cat] {
                d.send_json(p, json!({"type": "join_lobby", "code": code, "name": "P"}));
            }
            d.send_json(ann, json!({"type": "start_game"}));
        }
        assert_eq!(d.state(bob).unwrap()["lobby"]["status"], "playing");
        let bob_token = d.seen[&bob].token.clone().unwrap();
        d.close(bob);
        assert_eq!(
            play_for(&mut d, &[ann, cat], 4_900),
            0,
            "before QUICK_PLAY_AWAY"
        );
        let played = play_for(&mut d, &[ann, cat], 20_000);
        if !quick {
            assert_eq!(played, 0, "a lobby someone made waits for its player");
            continue;
        }
        // A round has up to 2 turns of Bob's; at an AI's pace many rounds pass.
        assert!(played >= 4, "Bob's turns played for him: {played}");
        let back = ConnId(20);
        d.open(back, "10.0.9.9");
        d.hello(back, Some(&bob_token));
        assert_eq!(d.state(back).unwrap()["lobby"]["status"], "playing");
        assert_eq!(
            play_for(&mut d, &[ann, cat], 20_000),
            0,
            "back, Bob's turns wait for him"
        );
        d.server.check_absent().unwrap();
    }
}

/// Queueing and walking away at once takes nobody's seat: a ticket is grouped only once
/// it has waited `QUICK_PLAY_SETTLE`, and a walker's close takes it out before then.
#[test]
fn a_player_who_queues_and_walks_away_at_once_takes_no_seat() {
    let mut d = driver(&[("QUICK_PLAY_SETTLE", "0.25")]);
    let [ann, bob, cat] = [1, 2, 3].map(|n| arrive(&mut d, n));
    let walkers: Vec<ConnId> = (10..14).map(|n| arrive(&mut d, n)).collect();
    let start = d.now;
    for (i, &p) in [
        ann, walkers[0], walkers[1], bob, walkers[2], cat, walkers[3],
    ]
    .iter()
    .enumerate()
    {
        d.send_json(p, json!({"type": "quick_play", "name": "P", "seats": 3}));
        assert_eq!(last_of(&d, p, "queued").len(), 1, "ticket {i} queued");
        if walkers.contains(&p) {
            d.advance_ms(10);
            d.close(p);
        }
    }
    d.run_until(start.plus_us(249_000));
    assert!(
        d.state(ann).unwrap()["lobby"].is_null(),
        "not before the settling time"
    );
    d.run_until(start.plus_us(400_000));
    let code = d.lobby_code(ann).expect("Ann seated");
    assert_eq!(d.lobby_code(bob).as_deref(), Some(code.as_str()));
    assert_eq!(d.lobby_code(cat).as_deref(), Some(code.as_str()));
    let seats = d.state(ann).unwrap()["lobby"]["players"].clone();
    let names: Vec<&str> = seats
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| {
            s["is_ai"]
                .as_bool()
                .filter(|ai| !ai)
                .and(s["name"].as_str())
        })
        .collect();
    assert_eq!(names.len(), 3, "three humans, no walker: {seats}");
    assert_eq!(
        d.server.counters().lobbies_created,
        1,
        "no table for the walkers"
    );
    assert_eq!(d.server.gauges().quick_play_tickets, 0);
    d.server.check_quick_play().unwrap();
}
