//! A test driver around `Server`: feeds inputs the way a shell does (encoding and
//! decoding real wire text), keeps every connection's latest view, and offers the
//! cross-checks the server tests share.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde_json::{Value, json};
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{ConnKind, Input, Note, Output};
use wizard_core::vocabulary::rng::Seed;
use wizard_core::vocabulary::wire::held::{self, HeldState, Link, Taken};
use wizard_core::vocabulary::wire::{self, ClientMessage, CloseCode};
use wizard_core::{Server, Time};

/// What one connection has received.
#[derive(Default, Debug)]
pub struct Seen {
    pub messages: Vec<Value>,
    pub closed: Option<CloseCode>,
    pub state: Option<Value>,
    pub token: Option<String>,
    pub player_id: Option<String>,
    /// Order of the last `welcome` among all connections.
    pub welcomed: u64,
    /// The client side closed it.
    pub gone: bool,
}

#[allow(dead_code)] // each test module uses a different part of the driver
pub struct Driver {
    pub server: Server,
    pub now: Time,
    pub seen: BTreeMap<ConnId, Seen>,
    /// Outputs of the last input.
    pub last: Vec<Output>,
    /// Every output ever, in order (for determinism hashes).
    pub transcript: Vec<String>,
    welcomes: u64,
    /// Connections with an odd id say `hello {deltas: true}` (PROTOCOL.md 7.5); their
    /// deltas are applied to what they hold, and [`Driver::last`] shows the full
    /// `state` each one made (so every check of a view checks what deltas carry).
    pub deltas_on_odd: bool,
    held: BTreeMap<ConnId, HeldState>,
    /// `delta` frames received.
    pub deltas: u64,
}

pub fn config(pairs: &[(&str, &str)]) -> Config {
    Config::from_pairs(pairs.iter().copied()).expect("valid test config")
}

#[allow(dead_code)]
impl Driver {
    pub fn new(config: Config, seed: u64) -> Driver {
        Driver {
            server: Server::new(config, Seed::from_u64(seed), Time::ZERO),
            now: Time::ZERO,
            seen: BTreeMap::new(),
            last: Vec::new(),
            transcript: Vec::new(),
            welcomes: 0,
            deltas_on_odd: false,
            held: BTreeMap::new(),
            deltas: 0,
        }
    }

    /// The frame as a client without deltas would have it: a numbered `state` or a
    /// `delta` becomes the full `state` the connection now holds. A delta must build on
    /// what the connection holds, and carry nothing its view does not show.
    fn as_full(&mut self, conn: ConnId, text: &str) -> Option<String> {
        if !self.deltas_on_odd || !matches!(held::link(text), Link::Full | Link::Delta) {
            return None;
        }
        let view = self.held.entry(conn).or_default();
        let taken = view.take(text).expect("a state or delta that parses");
        assert!(
            matches!(taken, Taken::Full | Taken::Delta),
            "{taken:?}: {text}"
        );
        if taken == Taken::Delta {
            self.deltas += 1;
            for card in text.split('"').filter(|t| is_card(t)) {
                assert!(
                    view.text().contains(&format!("\"{card}\"")),
                    "conn {conn}: {card} in a delta but not in the view: {text}"
                );
            }
        }
        Some(view.text().to_string())
    }

    pub fn input(&mut self, input: Input) -> &[Output] {
        self.last.clear();
        let mut out = Vec::new();
        self.server.handle(self.now, input, &mut out);
        for o in &mut out {
            if let Output::Send { conn, text, .. } = o
                && let Some(full) = self.as_full(*conn, text)
            {
                *text = full;
            }
        }
        for o in &out {
            self.transcript
                .push(format!("{}:{o:?}", self.now.as_micros()));
            match o {
                Output::Send { conn, text, .. } => {
                    let value: Value = serde_json::from_str(text).expect("the server sends JSON");
                    let seen = self.seen.entry(*conn).or_default();
                    match value["type"].as_str() {
                        Some("state") => seen.state = Some(value.clone()),
                        Some("welcome") => {
                            self.welcomes += 1;
                            seen.welcomed = self.welcomes;
                            seen.token = value["token"].as_str().map(str::to_string);
                            seen.player_id = value["player_id"].as_str().map(str::to_string);
                        }
                        _ => {}
                    }
                    seen.messages.push(value);
                }
                // Kept as the JSON the same request would have on a websocket.
                Output::AiRequest { conn, request, .. } => {
                    let value = serde_json::to_value(request).expect("a request encodes");
                    self.seen.entry(*conn).or_default().messages.push(value);
                }
                Output::Close { conn, code } => {
                    self.seen.entry(*conn).or_default().closed = Some(*code);
                }
                Output::Note(_) => {}
            }
        }
        self.last = out;
        &self.last
    }

    pub fn advance_ms(&mut self, ms: u64) {
        self.now = self.now.plus_us(ms * 1000);
        self.input(Input::Timeout);
    }

    /// Runs every deadline up to `until` in order, as a shell would.
    pub fn run_until(&mut self, until: Time) {
        while let Some((t, _)) = self.server.poll_timeout() {
            if t > until {
                break;
            }
            self.now = self.now.max(t);
            self.input(Input::Timeout);
        }
        self.now = self.now.max(until);
    }

    pub fn open(&mut self, conn: ConnId, ip: &str) {
        let ip: IpAddr = ip.parse().expect("an IP");
        self.input(Input::Opened {
            conn,
            kind: ConnKind::Player,
            ip,
        });
    }

    pub fn open_ai(&mut self, conn: ConnId) {
        self.open_ai_as(conn, ConnKind::Ai);
    }

    /// Opens an AI connection of `kind` (over a websocket or in process).
    pub fn open_ai_as(&mut self, conn: ConnId, kind: ConnKind) {
        self.input(Input::Opened {
            conn,
            kind,
            ip: "127.0.0.1".parse().expect("an IP"),
        });
    }

    /// Sends a client message as text, decoded like the shell does.
    pub fn send(&mut self, conn: ConnId, message: &ClientMessage) -> &[Output] {
        let text = wire::encode_client(message);
        self.send_text(conn, &text)
    }

    pub fn send_json(&mut self, conn: ConnId, value: Value) -> &[Output] {
        self.send_text(conn, &value.to_string())
    }

    pub fn send_text(&mut self, conn: ConnId, text: &str) -> &[Output] {
        self.input(Input::from_text(conn, ConnKind::Player, text))
    }

    pub fn ai_send(&mut self, conn: ConnId, text: &str) -> &[Output] {
        self.input(Input::from_text(conn, ConnKind::Ai, text))
    }

    pub fn close(&mut self, conn: ConnId) {
        self.seen.entry(conn).or_default().gone = true;
        self.input(Input::Closed { conn });
    }

    pub fn hello(&mut self, conn: ConnId, token: Option<&str>) {
        self.send(
            conn,
            &ClientMessage::Hello {
                token: token.map(str::to_string),
                deltas: self.deltas_on_odd && conn.0 % 2 == 1,
                profile_key: None,
            },
        );
    }

    /// A new player `conn` from 10.0.0.1, host of a lobby with two AI seats, starts its
    /// game.
    pub fn start_with_two_ai(&mut self, conn: ConnId) {
        self.open(conn, "10.0.0.1");
        self.hello(conn, None);
        self.send_json(conn, json!({"type": "create_lobby", "name": "Ann"}));
        self.send_json(conn, json!({"type": "add_ai"}));
        self.send_json(conn, json!({"type": "add_ai"}));
        self.send_json(conn, json!({"type": "start_game"}));
    }

    pub fn state(&self, conn: ConnId) -> Option<&Value> {
        self.seen.get(&conn).and_then(|s| s.state.as_ref())
    }

    /// The legal actions in `conn`'s latest view.
    pub fn legal(&self, conn: ConnId) -> Vec<Value> {
        self.state(conn)
            .and_then(|s| {
                s["game"]["observation"]["legal_actions"]
                    .as_array()
                    .cloned()
            })
            .unwrap_or_default()
    }

    pub fn lobby_code(&self, conn: ConnId) -> Option<String> {
        self.state(conn)
            .and_then(|s| s["lobby"]["code"].as_str().map(str::to_string))
    }

    /// Errors the last input sent to `conn`.
    pub fn last_errors(&self, conn: ConnId) -> Vec<String> {
        self.last
            .iter()
            .filter_map(|o| match o {
                Output::Send { conn: c, text, .. } if *c == conn => {
                    let v: Value = serde_json::from_str(text).ok()?;
                    (v["type"] == "error").then(|| v["code"].as_str().unwrap_or("").to_string())
                }
                _ => None,
            })
            .collect()
    }

    /// The moves the last input applied.
    pub fn moves_applied(&self) -> usize {
        self.last
            .iter()
            .filter(|o| matches!(o, Output::Note(Note::MoveApplied { .. })))
            .count()
    }

    pub fn last_notes(&self) -> Vec<Note> {
        self.last
            .iter()
            .filter_map(|o| match o {
                Output::Note(n) => Some(n.clone()),
                _ => None,
            })
            .collect()
    }
}

/// Whether `t` is a card code (`h12`, `W1`, `J4`).
fn is_card(t: &str) -> bool {
    let mut chars = t.chars();
    match chars.next() {
        Some('c' | 'd' | 'h' | 's') => chars
            .as_str()
            .parse::<u8>()
            .is_ok_and(|n| (2..=14).contains(&n)),
        Some('W' | 'J') => chars
            .as_str()
            .parse::<u8>()
            .is_ok_and(|n| (1..=4).contains(&n)),
        _ => false,
    }
}

/// Card codes in a JSON value's `hand` (a player's own cards in its latest view).
pub fn hand_of(state: &Value) -> Vec<String> {
    state["game"]["observation"]["hand"]
        .as_array()
        .map(|h| {
            h.iter()
                .filter_map(|c| c.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Checks that no connection's game view shows a card another seat of the same lobby
/// holds, that no view shows another seat's hidden bid, and that a spectator's view
/// (`you` null) has no hand and no legal action. Only views of one broadcast (one
/// change) are compared: a broadcast sends each seat and spectator one state, so a
/// repeated connection starts the next broadcast.
pub fn check_no_hand_leaks(outputs: &[Output]) {
    let mut group: Vec<(ConnId, Value)> = Vec::new();
    for o in outputs {
        if let Output::Send { conn, text, .. } = o {
            let v: Value = serde_json::from_str(text).expect("JSON");
            if v["type"] != "state" || v["game"].is_null() {
                continue;
            }
            check_own_view(*conn, &v);
            if group.iter().any(|(c, _)| c == conn) {
                check_group(&group);
                group.clear();
            }
            group.push((*conn, v));
        }
    }
    check_group(&group);
}

/// What one view may show by itself: no hidden bid but the viewer's own, and for a
/// spectator no hand and no legal action.
fn check_own_view(conn: ConnId, v: &Value) {
    let you = &v["game"]["you"];
    let obs = &v["game"]["observation"];
    if you.is_null() {
        assert_eq!(
            obs["hand"],
            serde_json::json!([]),
            "spectator {conn} sees a hand"
        );
        let legal = &obs["legal_actions"];
        assert_eq!(*legal, serde_json::json!([]), "spectator {conn} may act");
    }
    let hidden = obs["options"]["hidden_bids"] == true
        && obs["phase"] == "bidding"
        && obs["has_bid"]
            .as_array()
            .is_some_and(|h| h.iter().any(|b| *b == false));
    if hidden {
        let bids = obs["bids"].as_array().cloned().unwrap_or_default();
        for (seat, bid) in bids.iter().enumerate() {
            let own = you.as_u64() == Some(seat as u64);
            assert!(
                own || bid.is_null(),
                "conn {conn} sees seat {seat}'s hidden bid"
            );
        }
    }
}

fn check_group(views: &[(ConnId, Value)]) {
    for (a, va) in views {
        for (b, vb) in views {
            if a == b || va["lobby"]["code"] != vb["lobby"]["code"] {
                continue;
            }
            // Events may name cards of a round that just ended, dealt anew since; the
            // view itself is what must never show them.
            let text_b = vb["game"].to_string();
            for card in hand_of(va) {
                assert!(
                    !text_b.contains(&format!("\"{card}\"")),
                    "conn {b} sees {card} from conn {a}'s hand"
                );
            }
        }
    }
}
