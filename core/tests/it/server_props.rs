//! Model-based property test of the server machine: random sequences of connections
//! from several addresses, hellos and resumes, lobby messages, moves, garbage, floods,
//! closes, AI connections with good and bad answers, load samples and time advances,
//! with the server's promises checked after every step.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Value, json};
use wizard_core::machine::overload::level::{LevelState, LoadThresholds, classify, next_level};
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{Note, Output};
use wizard_core::vocabulary::load::LoadLevel;
use wizard_core::vocabulary::load::LoadSample;
use wizard_core::vocabulary::wire::CloseCode;

use super::driver::{Driver, check_no_hand_leaks, config};

#[derive(Clone, Debug)]
enum Op {
    Connect { ip: u8 },
    Hello { conn: u8, resume: Option<u8> },
    Create { conn: u8 },
    Join { conn: u8, code: u8 },
    Leave { conn: u8 },
    AddAi { conn: u8 },
    Start { conn: u8 },
    Move { conn: u8, pick: u8 },
    Junk { conn: u8, kind: u8 },
    Flood { conn: u8, n: u8 },
    Close { conn: u8 },
    AiConnect,
    AiReply { kind: u8, pick: u8 },
    AiClose,
    Sample { lag_ms: u16, cpu: u8, throttled: u8 },
    Advance { ms: u16 },
    // Spectators and chat, appended so the earlier weights keep their meaning:
    Spectate { conn: u8, code: u8 },
    Chat { conn: u8, long: bool },
}

fn op() -> impl Strategy<Value = Op> {
    let c = 0..8u8;
    prop_oneof![
        2 => (0..5u8).prop_map(|ip| Op::Connect { ip }),
        2 => (c.clone(), prop::option::of(0..6u8)).prop_map(|(conn, resume)| Op::Hello { conn, resume }),
        2 => c.clone().prop_map(|conn| Op::Create { conn }),
        2 => (c.clone(), 0..4u8).prop_map(|(conn, code)| Op::Join { conn, code }),
        1 => c.clone().prop_map(|conn| Op::Leave { conn }),
        2 => c.clone().prop_map(|conn| Op::AddAi { conn }),
        2 => c.clone().prop_map(|conn| Op::Start { conn }),
        8 => (c.clone(), any::<u8>()).prop_map(|(conn, pick)| Op::Move { conn, pick }),
        1 => (c.clone(), 0..6u8).prop_map(|(conn, kind)| Op::Junk { conn, kind }),
        1 => (c.clone(), 1..40u8).prop_map(|(conn, n)| Op::Flood { conn, n }),
        1 => c.clone().prop_map(|conn| Op::Close { conn }),
        1 => Just(Op::AiConnect),
        4 => (0..6u8, any::<u8>()).prop_map(|(kind, pick)| Op::AiReply { kind, pick }),
        1 => Just(Op::AiClose),
        2 => (0..1500u16, 0..120u8, 0..100u8).prop_map(|(lag_ms, cpu, throttled)| Op::Sample { lag_ms, cpu, throttled }),
        4 => (0..4000u16).prop_map(|ms| Op::Advance { ms }),
        2 => (c.clone(), 0..4u8).prop_map(|(conn, code)| Op::Spectate { conn, code }),
        1 => (c.clone(), any::<bool>()).prop_map(|(conn, long)| Op::Chat { conn, long }),
    ]
}

const CONNS_MAX: u64 = 8;
const CONNS_PER_IP_MAX: usize = 3;
const IP_TABLE_MAX: u64 = 2;

/// The test's model of the world around the server.
#[derive(Default)]
struct World {
    next_conn: u64,
    /// Open player connections (accepted, not closed) and their address.
    players: Vec<(ConnId, u8)>,
    ai: Vec<ConnId>,
    tokens: Vec<String>,
    codes: Vec<String>,
    /// Decide requests not yet answered: (request id, AI conn, legal actions).
    decides: Vec<(u64, ConnId, Vec<Value>)>,
    level: LevelState,
    /// Players of running games admitted past `CONNS_MAX` when they came back.
    past_cap: u64,
    /// The last lobby status each connection saw, by lobby code.
    statuses: BTreeMap<(ConnId, String), String>,
}

fn pick<T: Clone>(items: &[T], i: u8) -> Option<T> {
    (!items.is_empty()).then(|| items[usize::from(i) % items.len()].clone())
}

fn step(d: &mut Driver, w: &mut World, op: &Op) -> Result<(), TestCaseError> {
    let conn_of = |w: &World, i: u8| pick(&w.players, i).map(|(c, _)| c);
    match *op {
        Op::Connect { ip } => {
            w.next_conn += 1;
            let conn = ConnId(w.next_conn);
            let before = d.server.gauges().player_connections;
            d.open(conn, &format!("10.0.0.{ip}"));
            let refused = |d: &Driver| {
                d.seen.get(&conn).and_then(|s| s.closed) == Some(CloseCode::ConnectionLimit)
            };
            if refused(d) {
                prop_assert_eq!(d.last_errors(conn), vec!["busy".to_string()]);
                d.close(conn);
            } else if d.server.gauges().player_connections == before {
                // Held over MAX_CONNECTIONS until its hello: a player of a running game
                // coming back is admitted past the cap, anyone else refused.
                let token = pick(&w.tokens, ip);
                d.hello(conn, token.as_deref());
                if refused(d) {
                    prop_assert_eq!(d.last_errors(conn), vec!["busy".to_string()]);
                    d.close(conn);
                } else {
                    let status = d.state(conn).map(|v| v["lobby"]["status"].clone());
                    prop_assert_eq!(status, Some(json!("playing")), "admitted past the cap");
                    w.past_cap += 1;
                    w.players.push((conn, ip));
                }
            } else {
                w.players.push((conn, ip));
            }
        }
        Op::Hello { conn, resume } => {
            if let Some(c) = conn_of(w, conn) {
                let token = resume.and_then(|i| pick(&w.tokens, i));
                d.hello(c, token.as_deref());
                if let Some(t) = d.seen.get(&c).and_then(|s| s.token.clone())
                    && !w.tokens.contains(&t)
                {
                    w.tokens.push(t);
                }
            }
        }
        Op::Create { conn } => {
            if let Some(c) = conn_of(w, conn) {
                d.send_json(c, json!({"type": "create_lobby", "name": format!("P{c}")}));
                if let Some(code) = d.lobby_code(c)
                    && !w.codes.contains(&code)
                {
                    w.codes.push(code);
                }
            }
        }
        Op::Join { conn, code } => {
            if let (Some(c), Some(code)) = (conn_of(w, conn), pick(&w.codes, code)) {
                d.send_json(
                    c,
                    json!({"type": "join_lobby", "code": code, "name": format!("P{c}")}),
                );
                prop_assert!(
                    !d.last_errors(c).contains(&"busy".to_string()),
                    "join refused for load"
                );
            }
        }
        Op::Leave { conn } => {
            if let Some(c) = conn_of(w, conn) {
                d.send_json(c, json!({"type": "leave_lobby"}));
                prop_assert!(!d.last_errors(c).contains(&"busy".to_string()));
            }
        }
        Op::AddAi { conn } => {
            if let Some(c) = conn_of(w, conn) {
                d.send_json(c, json!({"type": "add_ai"}));
            }
        }
        Op::Start { conn } => {
            if let Some(c) = conn_of(w, conn) {
                d.send_json(c, json!({"type": "start_game"}));
            }
        }
        Op::Move { conn, pick: p } => {
            if let Some(c) = conn_of(w, conn) {
                let legal = d.legal(c);
                match pick(&legal, p) {
                    Some(action) => {
                        d.send_json(c, json!({"type": "action", "action": action}));
                        let errors = d.last_errors(c);
                        prop_assert!(
                            !errors.contains(&"busy".to_string()),
                            "a move refused for load"
                        );
                        let applied = d.last_notes().iter().any(|n| {
                            matches!(
                                n,
                                Note::MoveApplied {
                                    by: wizard_core::vocabulary::io::MoveSource::Human,
                                    ..
                                }
                            )
                        });
                        if applied {
                            check_move_reached_everyone(d, c)?;
                        }
                    }
                    None => {
                        d.send_json(
                            c,
                            json!({"type": "action", "action": {"kind": "bid", "bid": 99}}),
                        );
                    }
                }
            }
        }
        Op::Junk { conn, kind } => {
            if let Some(c) = conn_of(w, conn) {
                let text = [
                    "{",
                    "[]",
                    r#"{"type":"nope"}"#,
                    r#"{"type":"join_lobby"}"#,
                    "\u{0}",
                    r#"{"type":"action","action":{"kind":"play","card":"h99"}}"#,
                ];
                d.send_text(c, text[usize::from(kind) % text.len()]);
            }
        }
        Op::Flood { conn, n } => {
            if let Some(c) = conn_of(w, conn) {
                for _ in 0..n {
                    d.send_json(c, json!({"type": "add_ai"}));
                }
            }
        }
        Op::Close { conn } => {
            if let Some(c) = conn_of(w, conn) {
                d.close(c);
                w.players.retain(|(x, _)| *x != c);
            }
        }
        Op::AiConnect => {
            w.next_conn += 1;
            let conn = ConnId(w.next_conn);
            d.open_ai(conn);
            w.ai.push(conn);
        }
        Op::AiReply { kind, pick: p } => {
            if let Some((id, conn, legal)) = pick(&w.decides, p) {
                w.decides.retain(|(x, _, _)| *x != id);
                let text = match kind {
                    0 | 1 => json!({"type": "decision", "request_id": id, "agent": "t",
                        "action": pick(&legal, p).unwrap_or(json!({"kind": "bid", "bid": 0}))}).to_string(),
                    2 => json!({"type": "decision", "request_id": id, "agent": "t",
                        "action": {"kind": "bid", "bid": 77}}).to_string(),
                    3 => format!(r#"{{"request_id":{id},"type":"decision","action":"#),
                    4 => json!({"type": "error", "request_id": id, "code": "overloaded", "message": "x"}).to_string(),
                    _ => json!({"type": "error", "request_id": id, "code": "expired", "message": "x"}).to_string(),
                };
                d.ai_send(conn, &text);
                let opened = d
                    .last_notes()
                    .iter()
                    .any(|n| matches!(n, Note::BreakerOpened { .. }));
                prop_assert!(
                    !(opened && matches!(kind, 0 | 1 | 4 | 5)),
                    "breaker opened on a good or shed answer"
                );
            }
        }
        Op::AiClose => {
            if let Some(conn) = w.ai.pop() {
                d.close(conn);
                w.decides.retain(|(_, c, _)| *c != conn);
            }
        }
        Op::Sample {
            lag_ms,
            cpu,
            throttled,
        } => {
            let sample = LoadSample {
                lag_us_max: u64::from(lag_ms) * 1000,
                lag_us_p99: u64::from(lag_ms) * 900,
                cpu_share: f64::from(cpu) / 100.0,
                throttled_share: f64::from(throttled) / 100.0,
            };
            let t = LoadThresholds {
                recover_samples: 2,
                ..LoadThresholds::default()
            };
            w.level = next_level(&t, w.level, classify(&t, &sample));
            d.input(wizard_core::vocabulary::io::Input::LoadSample(sample));
            prop_assert_eq!(
                d.server.level(),
                w.level.level,
                "level follows the rule table"
            );
        }
        Op::Advance { ms } => d.advance_ms(u64::from(ms)),
        Op::Spectate { conn, code } => {
            if let (Some(c), Some(lobby)) = (conn_of(w, conn), pick(&w.codes, code)) {
                // A name another player has or may take when they join ("P3", "p3" and
                // "P3" behind a braille blank are the same name), or one like the first
                // AI seat's ("merlin", "MerIin" with a capital I): the server must name
                // everyone in the lobby apart (check_names_apart).
                let other = conn_of(w, conn.wrapping_add(code).wrapping_add(1)).unwrap_or(c);
                let name = match c.0 % 4 {
                    1 => "merlin".to_string(),
                    2 => "MerIin".to_string(),
                    3 => format!("\u{2800}P{}", other.0),
                    _ => format!("p{}", other.0),
                };
                d.send_json(c, json!({"type": "spectate", "code": lobby, "name": name}));
                prop_assert!(!d.last_errors(c).contains(&"busy".to_string()));
            }
        }
        Op::Chat { conn, long } => {
            if let Some(c) = conn_of(w, conn) {
                let text = if long {
                    "x".repeat(201)
                } else {
                    format!("hi from {c}")
                };
                d.send_json(c, json!({"type": "chat", "text": text}));
                if long {
                    let said = d.last.iter().any(|o| {
                        matches!(o, Output::Send { text, .. } if text.starts_with(r#"{"type":"chat""#))
                    });
                    prop_assert!(!said, "a line over 200 characters went out");
                }
            }
        }
    }
    Ok(())
}

/// Sets up `games` lobbies with a running game each (two humans from different
/// addresses, one or two AI seats) and, optionally, an AI service connection, so the
/// random operations start from a busy server rather than an empty one.
fn prelude(
    d: &mut Driver,
    w: &mut World,
    games: u8,
    with_ai: bool,
    hidden_bids: bool,
) -> Result<(), TestCaseError> {
    if with_ai {
        step(d, w, &Op::AiConnect)?;
    }
    for g in 0..games {
        let first = w.players.len();
        step(d, w, &Op::Connect { ip: 2 * g })?;
        step(d, w, &Op::Connect { ip: 2 * g + 1 })?;
        let (a, b) = (first as u8, first as u8 + 1);
        step(
            d,
            w,
            &Op::Hello {
                conn: a,
                resume: None,
            },
        )?;
        step(
            d,
            w,
            &Op::Hello {
                conn: b,
                resume: None,
            },
        )?;
        step(d, w, &Op::Create { conn: a })?;
        if let Some(&(host, _)) = w.players.get(usize::from(a)).filter(|_| hidden_bids) {
            d.send_json(host, json!({"type": "set_options", "hidden_bids": true}));
        }
        let code = u8::try_from(w.codes.len()).unwrap() - 1;
        step(d, w, &Op::Join { conn: b, code })?;
        for _ in 0..=g % 2 {
            step(d, w, &Op::AddAi { conn: a })?;
        }
        step(d, w, &Op::Start { conn: a })?;
        check_invariants(d, w)?;
    }
    Ok(())
}

/// After an accepted move, every connected human of the mover's lobby got a state.
fn check_move_reached_everyone(d: &Driver, mover: ConnId) -> Result<(), TestCaseError> {
    let Some(view) = d.state(mover) else {
        return Ok(());
    };
    let humans: Vec<&str> = view["lobby"]["players"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter(|p| p["is_ai"] == false && p["connected"] == true)
                .filter_map(|p| p["id"].as_str())
                .collect()
        })
        .unwrap_or_default();
    for id in humans {
        let conn = d
            .seen
            .iter()
            .filter(|(_, s)| s.player_id.as_deref() == Some(id) && s.closed.is_none() && !s.gone)
            .max_by_key(|(_, s)| s.welcomed)
            .map(|(c, _)| *c);
        if let Some(conn) = conn {
            let got = d
                .last
                .iter()
                .any(|o| matches!(o, Output::Send { conn: c, text, .. } if *c == conn && text.starts_with(r#"{"type":"state""#)));
            prop_assert!(got, "player {} got no state after the move", id);
        }
    }
    Ok(())
}

/// Promises that hold after every step.
fn check_invariants(d: &Driver, w: &mut World) -> Result<(), TestCaseError> {
    let g = d.server.gauges();
    prop_assert!(g.player_connections <= CONNS_MAX + w.past_cap);
    prop_assert!(g.ip_table_entries <= IP_TABLE_MAX);
    prop_assert!(g.ai_probes_pending <= 1, "at most one half-open probe");
    d.server.check_absent().map_err(TestCaseError::fail)?;
    d.server.check_audiences().map_err(TestCaseError::fail)?;
    let mut per_ip: BTreeMap<u8, usize> = BTreeMap::new();
    for (_, ip) in &w.players {
        *per_ip.entry(*ip).or_default() += 1;
    }
    prop_assert!(per_ip.values().all(|&n| n <= CONNS_PER_IP_MAX));
    prop_assert_eq!(g.player_connections as usize, w.players.len());
    check_no_hand_leaks(&d.last);
    for o in &d.last {
        if let Output::Send { conn, text, .. } = o {
            let v: Value = serde_json::from_str(text).unwrap();
            if v["type"] == "decide" {
                let legal = v["observation"]["legal_actions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                w.decides
                    .push((v["request_id"].as_u64().unwrap(), *conn, legal));
            }
            if v["type"] == "state" && !v["lobby"].is_null() {
                check_names_apart(&v["lobby"])?;
                let key = (*conn, v["lobby"]["code"].as_str().unwrap_or("").to_string());
                let status = v["lobby"]["status"].as_str().unwrap_or("").to_string();
                if let Some(before) = w.statuses.insert(key, status.clone()) {
                    prop_assert!(
                        !(before == "playing" && status == "waiting"),
                        "a running game was ended"
                    );
                }
            }
        }
    }
    Ok(())
}

/// Nobody shown in a lobby, seat or spectator, has a name that looks like another's.
fn check_names_apart(lobby: &Value) -> Result<(), TestCaseError> {
    let seats = lobby["players"].as_array().into_iter().flatten();
    let names = seats.filter_map(|p| p["name"].as_str()).chain(
        lobby["spectators"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str),
    );
    let mut keys: [BTreeMap<String, &str>; 2] = Default::default();
    for name in names {
        for (seen, key) in keys
            .iter_mut()
            .zip(wizard_core::vocabulary::names::keys(name))
        {
            if let Some(other) = seen.insert(key, name) {
                prop_assert!(false, "{:?} and {:?} look alike in {}", other, name, lobby);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn the_server_keeps_its_promises(
        ops in prop::collection::vec(op(), 1..160),
        seed in any::<u64>(),
        ai_delay in prop_oneof![Just("0"), Just("0.5")],
        overloaded in any::<bool>(),
        games in 0..3u8,
        with_ai in any::<bool>(),
        hidden_bids in any::<bool>(),
    ) {
        let cfg = config(&[
            ("MAX_CONNECTIONS", "8"), ("MAX_CONNECTIONS_PER_IP", "3"), ("MESSAGE_RATE", "5"),
            ("MESSAGE_BURST", "6"), ("MAX_RATE_VIOLATIONS", "12"), ("LOBBY_CREATE_RATE", "3"),
            ("MAX_ACTIVE_GAMES", "2"), ("AI_MOVE_DELAY", ai_delay), ("TRICK_PAUSE", "0.3"),
            ("AI_DECISION_TIMEOUT", "2"), ("AI_BREAKER_FAILURES", "2"), ("AI_BREAKER_COOLDOWN", "3"),
            ("MAX_LOBBIES", "4"), ("MAX_SESSIONS", "10"), ("IP_TABLE_MAX", "2"),
            ("LOAD_RECOVER_SAMPLES", "2"), ("LOBBY_IDLE_TTL", "5"), ("ABANDONED_GAME_TTL", "3"),
            ("MAX_LOBBIES_PER_IP", "2"), ("MAX_GAMES_PER_IP", "1"), ("RECONNECT_RATE", "20"),
            ("RECONNECT_BURST", "5"), ("JOIN_FAIL_RATE", "20"), ("JOIN_FAIL_BURST", "3"),
            ("MAX_SPECTATORS", "2"), ("CHAT_RATE", "3"),
        ]);
        let mut d = Driver::new(cfg, seed);
        // Half the connections take deltas: every view check covers them too.
        d.deltas_on_odd = true;
        let mut w = World::default();
        prelude(&mut d, &mut w, games, with_ai, hidden_bids)?;
        if overloaded {
            // A severe lag sample: the games just started must go on regardless.
            step(&mut d, &mut w, &Op::Sample { lag_ms: 1400, cpu: 100, throttled: 90 })?;
            prop_assert_eq!(d.server.level(), LoadLevel::Overloaded);
        }
        for op in &ops {
            step(&mut d, &mut w, op)?;
            check_invariants(&d, &mut w)?;
        }
    }
}
