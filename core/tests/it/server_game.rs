//! Whole games through the server machine: two humans and an AI seat played to the
//! end, scores checked against the events, views checked for leaks.

use serde_json::{Value, json};
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{Note, Output};

use wizard_core::vocabulary::wire::held::{HeldState, Taken};

use super::driver::{Driver, check_no_hand_leaks, config};

/// No delays, and a message rate the scripted players cannot exceed (they do not wait).
const FAST: &[(&str, &str)] = &[
    ("AI_MOVE_DELAY", "0"),
    ("TRICK_PAUSE", "0"),
    ("MESSAGE_RATE", "1000"),
    ("MESSAGE_BURST", "1000"),
];

/// Plays until the game is over: each human whose view lists legal actions sends the
/// first one. Returns every event the first human received.
fn play_to_end(d: &mut Driver, humans: &[ConnId]) -> Vec<Value> {
    let mut events = Vec::new();
    for _ in 0..5000 {
        for o in &d.last {
            if let Output::Send { conn, text, .. } = o
                && *conn == humans[0]
                && text.starts_with(r#"{"type":"state""#)
            {
                let v: Value = serde_json::from_str(text).unwrap();
                events.extend(v["events"].as_array().cloned().unwrap_or_default());
            }
        }
        if events.iter().any(|e| e["type"] == "game_finished") {
            return events;
        }
        let mover = humans.iter().copied().find(|&c| !d.legal(c).is_empty());
        match mover {
            Some(conn) => {
                let action = d.legal(conn)[0].clone();
                let outputs = d
                    .send_json(conn, json!({"type": "action", "action": action}))
                    .to_vec();
                check_no_hand_leaks(&outputs);
                check_states_match_the_wire_types(&outputs);
                assert!(d.last_errors(conn).is_empty(), "{:?}", d.last_errors(conn));
            }
            // Nothing for the humans to do: the AI seat's move is due at a deadline.
            None => {
                let (t, _) = d
                    .server
                    .poll_timeout()
                    .expect("a running game waits for something");
                d.now = d.now.max(t);
                d.input(wizard_core::vocabulary::io::Input::Timeout);
            }
        }
    }
    panic!("the game did not finish");
}

/// The server assembles `state` text from pre-encoded parts; it must be exactly what
/// the wire types encode.
fn check_states_match_the_wire_types(outputs: &[Output]) {
    for o in outputs {
        if let Output::Send { text, .. } = o
            && text.starts_with(r#"{"type":"state""#)
        {
            let message = wizard_core::vocabulary::wire::decode_server(text).unwrap();
            assert_eq!(&wizard_core::vocabulary::wire::encode(&message), text);
        }
    }
}

fn setup(d: &mut Driver) -> (ConnId, ConnId) {
    d.open(ConnId(1), "10.0.0.1");
    d.open(ConnId(2), "10.0.0.2");
    d.hello(ConnId(1), None);
    d.hello(ConnId(2), None);
    d.send_json(ConnId(1), json!({"type": "create_lobby", "name": "Ann"}));
    let code = d.lobby_code(ConnId(1)).unwrap();
    d.send_json(
        ConnId(2),
        json!({"type": "join_lobby", "code": code.to_lowercase(), "name": "Bob"}),
    );
    d.send_json(ConnId(1), json!({"type": "add_ai"}));
    let players = d.state(ConnId(2)).unwrap()["lobby"]["players"].clone();
    assert_eq!(players.as_array().unwrap().len(), 3);
    assert_eq!(players[2]["is_ai"], true);
    assert_eq!(players[2]["name"], "Merlin");
    d.send_json(ConnId(1), json!({"type": "start_game"}));
    assert!(d.last_errors(ConnId(1)).is_empty());
    (ConnId(1), ConnId(2))
}

#[test]
fn two_humans_and_an_ai_seat_play_twenty_rounds() {
    let mut d = Driver::new(config(FAST), 5);
    let (a, b) = setup(&mut d);
    let events = play_to_end(&mut d, &[a, b]);
    let rounds: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "round_finished")
        .collect();
    assert_eq!(rounds.len(), 20, "3 players play 20 rounds");
    let mut totals = [0i64; 3];
    for r in &rounds {
        for (i, total) in totals.iter_mut().enumerate() {
            let (bid, took) = (
                r["bids"][i].as_i64().unwrap(),
                r["tricks"][i].as_i64().unwrap(),
            );
            let delta = if bid == took {
                20 + 10 * took
            } else {
                -10 * (took - bid).abs()
            };
            assert_eq!(r["deltas"][i].as_i64().unwrap(), delta);
            *total += delta;
        }
    }
    let finished = events
        .iter()
        .find(|e| e["type"] == "game_finished")
        .unwrap();
    let scores: Vec<i64> = finished["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(scores, totals.to_vec());
    let view = d.state(b).unwrap();
    assert_eq!(view["lobby"]["status"], "finished");
    assert_eq!(view["game"]["observation"]["phase"], "finished");
    assert_eq!(d.server.gauges().active_games, 0);
    // The host returns to the lobby; the seats stay.
    d.send_json(a, json!({"type": "return_to_lobby"}));
    assert_eq!(d.state(b).unwrap()["lobby"]["status"], "waiting");
    assert!(d.state(b).unwrap()["game"].is_null());
}

/// Plays a game of humans `a` and `b` (each its first legal action at once) against
/// the fallback, waking exactly at each deadline, and returns how long each of the
/// first `count` AI moves came after its turn began (when the move before it was
/// applied).
fn ai_move_gaps(d: &mut Driver, a: ConnId, b: ConnId, count: usize) -> Vec<u64> {
    let mut gaps = Vec::new();
    let mut turn_started = d.now;
    for _ in 0..2000 {
        if let Some(conn) = [a, b].into_iter().find(|&c| !d.legal(c).is_empty()) {
            let action = d.legal(conn)[0].clone();
            d.send_json(conn, json!({"type": "action", "action": action}));
            turn_started = d.now;
            continue;
        }
        let (t, _) = d.server.poll_timeout().unwrap();
        d.now = d.now.max(t);
        d.input(wizard_core::vocabulary::io::Input::Timeout);
        if d.last_notes()
            .iter()
            .any(|n| matches!(n, Note::MoveApplied { .. }))
        {
            gaps.push(d.now.since_us(turn_started));
            turn_started = d.now;
        }
        if gaps.len() >= count {
            break;
        }
    }
    gaps
}

fn paced(delay: &'static str, pause: &'static str) -> Driver {
    let settings = [
        ("AI_MOVE_DELAY", delay),
        ("TRICK_PAUSE", pause),
        ("MESSAGE_RATE", "1000"),
        ("MESSAGE_BURST", "1000"),
    ];
    Driver::new(config(&settings), 9)
}

#[test]
fn ai_moves_wait_for_the_move_delay_and_the_trick_pause() {
    let mut d = paced("0.8", "1.8");
    let (a, b) = setup(&mut d);
    // Without an AI service the fallback decides at once, but the move waits for its
    // delay: the next AI move lands no earlier than 0.8 s after its turn began.
    let applied_at = ai_move_gaps(&mut d, a, b, 10);
    assert_eq!(applied_at.len(), 10);
    assert!(applied_at.iter().all(|&us| us >= 800_000), "{applied_at:?}");
    assert!(
        applied_at.iter().any(|&us| us >= 1_800_000),
        "a trick pause was seen: {applied_at:?}"
    );
}

#[test]
fn delayed_ai_moves_are_spread_over_two_wake_grid_steps() {
    use wizard_core::machine::turns::AI_MOVE_SPREAD_US_MAX;
    use wizard_core::vocabulary::time::WAKE_GRID_US;
    let mut d = paced("0.8", "0");
    let (a, b) = setup(&mut d);
    // Each AI move is due its delay plus its turn's spread after the turn began.
    let gaps = ai_move_gaps(&mut d, a, b, 40);
    assert_eq!(gaps.len(), 40);
    assert!(gaps.iter().all(|&us| us >= 800_000), "{gaps:?}");
    let spreads: Vec<u64> = gaps.iter().map(|us| us - 800_000).collect();
    assert!(
        spreads.iter().all(|&s| s <= AI_MOVE_SPREAD_US_MAX),
        "{spreads:?}"
    );
    // Spread over the range, not one fixed lag: moves of games in step land in
    // different steps of the wake grid.
    let steps: std::collections::BTreeSet<u64> = spreads.iter().map(|s| s / WAKE_GRID_US).collect();
    assert!(steps.len() >= 2, "{spreads:?}");
    let distinct: std::collections::BTreeSet<u64> = spreads.iter().copied().collect();
    assert!(distinct.len() >= 30, "{spreads:?}");
}

#[test]
fn the_same_seed_and_inputs_give_the_same_outputs() {
    let run = || {
        let mut d = Driver::new(config(FAST), 77);
        let (a, b) = setup(&mut d);
        play_to_end(&mut d, &[a, b]);
        d.transcript.join("\n")
    };
    let (first, second) = (run(), run());
    assert!(first.len() > 10_000);
    assert!(first == second, "outputs differ between two identical runs");
    let mut d = Driver::new(config(FAST), 78);
    let (a, b) = setup(&mut d);
    play_to_end(&mut d, &[a, b]);
    assert!(
        d.transcript.join("\n") != first,
        "another seed gives another game"
    );
}

/// Four humans of `conns` (hello already said) sit at one table and start.
fn seat_four(d: &mut Driver, conns: [ConnId; 4]) {
    d.send_json(conns[0], json!({"type": "create_lobby", "name": "Ann"}));
    let code = last_lobby_code(d, conns[0]);
    for (i, &c) in conns.iter().enumerate().skip(1) {
        d.send_json(
            c,
            json!({"type": "join_lobby", "code": code, "name": format!("P{i}")}),
        );
    }
    d.send_json(conns[0], json!({"type": "start_game"}));
    assert!(d.last_errors(conns[0]).is_empty());
}

/// The lobby code in the last frame `conn` got (a full state, numbered or not).
fn last_lobby_code(d: &Driver, conn: ConnId) -> String {
    d.last
        .iter()
        .find_map(|o| match o {
            Output::Send { conn: c, text, .. } if *c == conn => {
                let v: Value = serde_json::from_str(text).ok()?;
                v["lobby"]["code"].as_str().map(str::to_string)
            }
            _ => None,
        })
        .expect("a state with the lobby")
}

/// Plays four humans to the end, each its first legal action, and returns the `state`
/// and `delta` frames each received, with the index of the first one after the game's
/// start. With `deltas` the clients hold their views from deltas ([`HeldState`]).
pub(super) fn four_humans_frames(deltas: bool) -> [(Vec<String>, usize); 4] {
    let mut d = Driver::new(config(FAST), 11);
    let conns = [ConnId(1), ConnId(2), ConnId(3), ConnId(4)];
    for c in conns {
        d.open(c, &format!("10.0.0.{}", c.0));
        d.send_json(c, json!({"type": "hello", "token": null, "deltas": deltas}));
    }
    let mut held: Vec<HeldState> = vec![HeldState::default(); 4];
    let mut frames: [Vec<String>; 4] = Default::default();
    let feed = |d: &Driver, held: &mut Vec<HeldState>, frames: &mut [Vec<String>; 4]| {
        for o in &d.last {
            if let Output::Send { conn, text, .. } = o
                && let Some(i) = conns.iter().position(|c| c == conn)
                && matches!(held[i].take(text), Ok(Taken::Full | Taken::Delta))
            {
                frames[i].push(text.clone());
            }
        }
    };
    seat_four(&mut d, conns);
    feed(&d, &mut held, &mut frames);
    let started = frames.each_ref().map(Vec::len);
    for _ in 0..5000 {
        let mover = (0..4).find_map(|i| {
            let v: Value = serde_json::from_str(held[i].text()).ok()?;
            let a = v["game"]["observation"]["legal_actions"].get(0)?.clone();
            Some((i, a))
        });
        let Some((i, action)) = mover else {
            let v: Value = serde_json::from_str(held[0].text()).unwrap();
            assert_eq!(v["game"]["observation"]["phase"], "finished");
            let mut i = 0;
            return frames.map(|f| {
                i += 1;
                (f, started[i - 1])
            });
        };
        let outputs = d
            .send_json(conns[i], json!({"type": "action", "action": action}))
            .to_vec();
        check_no_hand_leaks(&outputs);
        feed(&d, &mut held, &mut frames);
    }
    panic!("the game did not finish");
}

fn four_humans_bytes(deltas: bool) -> [usize; 4] {
    four_humans_frames(deltas).map(|(f, started)| f[started..].iter().map(String::len).sum())
}

#[test]
fn four_humans_receive_a_fraction_of_the_bytes_with_deltas() {
    let plain = four_humans_bytes(false);
    let lean = four_humans_bytes(true);
    for (p, l) in plain.iter().zip(&lean) {
        eprintln!("state bytes per seat: {p} full, {l} with deltas");
        assert!(l * 3 < *p, "{l} bytes with deltas, {p} without");
    }
}

/// A client that missed a delta (a gap) sends one `resync` and gets one full `state`,
/// after which the deltas apply again.
#[test]
fn a_dropped_delta_costs_one_resync_and_one_full_state() {
    let mut d = Driver::new(config(FAST), 12);
    let conns = [ConnId(1), ConnId(2), ConnId(3), ConnId(4)];
    for c in conns {
        d.open(c, &format!("10.0.0.{}", c.0));
        d.send_json(c, json!({"type": "hello", "token": null, "deltas": true}));
    }
    seat_four(&mut d, conns);
    let mut held: Vec<HeldState> = vec![HeldState::default(); 4];
    for o in &d.last {
        if let Output::Send { conn, text, .. } = o {
            held[conns.iter().position(|c| c == conn).unwrap()]
                .take(text)
                .unwrap();
        }
    }
    let (mut dropped, mut gaps, mut resyncs, mut deltas_after) = (false, 0, 0, 0);
    for step in 0..60 {
        let (i, action) = (0..4)
            .find_map(|i| {
                let v: Value = serde_json::from_str(held[i].text()).ok()?;
                Some((i, v["game"]["observation"]["legal_actions"].get(0)?.clone()))
            })
            .expect("someone to move");
        let outputs = d
            .send_json(conns[i], json!({"type": "action", "action": action}))
            .to_vec();
        for o in &outputs {
            let Output::Send { conn, text, .. } = o else {
                continue;
            };
            let k = conns.iter().position(|c| c == conn).unwrap();
            if k == 1 && step == 10 && !dropped && text.starts_with(r#"{"type":"delta""#) {
                dropped = true; // lost on its way
                continue;
            }
            match held[k].take(text).unwrap() {
                Taken::Gap => {
                    assert_eq!(k, 1);
                    gaps += 1;
                    resyncs += 1;
                    let answer = d.send_json(conns[1], json!({"type": "resync"})).to_vec();
                    let frames: Vec<&String> = answer
                        .iter()
                        .filter_map(|o| match o {
                            Output::Send { conn, text, .. } if *conn == conns[1] => Some(text),
                            _ => None,
                        })
                        .collect();
                    assert_eq!(frames.len(), 1, "{frames:?}");
                    assert!(frames[0].starts_with(r#"{"type":"state","seq":"#));
                    assert_eq!(held[1].take(frames[0]), Ok(Taken::Full));
                }
                Taken::Delta if k == 1 && resyncs > 0 => deltas_after += 1,
                _ => {}
            }
        }
    }
    assert!(dropped);
    assert_eq!((gaps, resyncs), (1, 1));
    assert!(deltas_after > 10, "{deltas_after} deltas after the resync");
}
