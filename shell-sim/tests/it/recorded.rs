//! Games recorded through the core for the tests of the view checkers: a table of
//! players who always make their first legal move, every input and output kept, and
//! helpers to decode, edit and re-encode the recorded `state` frames.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::game::{Event, Phase};
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{ConnKind, Input, Note, Output};
use wizard_core::vocabulary::rng::Seed;
use wizard_core::vocabulary::wire::{
    self, ClientMessage, GameView, LobbyStatus, LobbyView, ServerMessage,
};
use wizard_core::{Server, Time};
use wizard_sim::Report;
use wizard_sim::checks::game_log::Seen;
use wizard_sim::checks::games::Games;
use wizard_sim::checks::progress::ProgressBound;

/// One step of a recorded game: an input the core handled, or one of its outputs.
#[derive(Clone, Debug)]
pub enum Step {
    In(Input),
    Out(Time, Output),
}

/// A recording an edit changes (a newtype, so that an edit may drop or add steps).
#[derive(Clone, Debug)]
pub struct Steps(pub Vec<Step>);

/// A table to record: its humans and AI seats, hidden bids, whether the second
/// human (the only one, at a table of one) drops its connection after this many moves
/// and comes back with its token, and how many spectators watch it from the start
/// (connections 50, 51, ...).
#[derive(Clone, Copy, Debug)]
pub struct Table {
    pub humans: u64,
    pub ai: u8,
    pub hidden_bids: bool,
    pub drop_after_moves: Option<u64>,
    pub spectators: u64,
}

pub const OPEN: Table = Table {
    humans: 3,
    ai: 0,
    hidden_bids: false,
    drop_after_moves: None,
    spectators: 0,
};
pub const WITH_AI: Table = Table {
    humans: 2,
    ai: 2,
    hidden_bids: false,
    drop_after_moves: None,
    spectators: 0,
};
pub const HIDDEN: Table = Table {
    humans: 2,
    ai: 1,
    hidden_bids: true,
    drop_after_moves: None,
    spectators: 0,
};
pub const RECONNECT: Table = Table {
    humans: 3,
    ai: 1,
    hidden_bids: false,
    drop_after_moves: Some(40),
    spectators: 0,
};

/// Hidden bids, watched by two spectators.
pub const WATCHED: Table = Table {
    humans: 2,
    ai: 1,
    hidden_bids: true,
    drop_after_moves: None,
    spectators: 2,
};

/// The only human drops: nobody sees the game until it comes back.
pub const ALONE: Table = Table {
    humans: 1,
    ai: 2,
    hidden_bids: false,
    drop_after_moves: Some(40),
    spectators: 0,
};

/// A bound the recorded games keep easily (every move comes within 50 ms).
pub const BOUND: ProgressBound = ProgressBound {
    ai_wait_us: 1_000_000,
    slack_us: 500_000,
};

/// The core driven by players who always make their first legal move.
pub struct Recorder {
    server: Server,
    now: Time,
    steps: Vec<Step>,
    latest: BTreeMap<ConnId, String>,
    tokens: BTreeMap<ConnId, String>,
    moves: u64,
}

impl Recorder {
    fn handle(&mut self, input: Input) {
        let mut out = Vec::new();
        self.server.handle(self.now, input.clone(), &mut out);
        self.steps.push(Step::In(input));
        for o in out {
            if let Output::Send { conn, text, .. } = &o {
                match wire::decode_server(text) {
                    Ok(ServerMessage::State { .. }) => {
                        self.latest.insert(*conn, text.clone());
                    }
                    Ok(ServerMessage::Welcome { token, .. }) => {
                        self.tokens.insert(*conn, token);
                    }
                    _ => {}
                }
            }
            if matches!(o, Output::Note(Note::MoveApplied { .. })) {
                self.moves += 1;
            }
            self.steps.push(Step::Out(self.now, o));
        }
    }

    fn send(&mut self, conn: ConnId, message: ClientMessage) {
        self.handle(Input::Message { conn, message });
    }

    fn open(&mut self, conn: ConnId, token: Option<String>) {
        let ip = IpAddr::V4(Ipv4Addr::new(10, 0, 0, u8::try_from(conn.0).unwrap()));
        self.handle(Input::Opened {
            conn,
            kind: ConnKind::Player,
            ip,
        });
        self.send(
            conn,
            ClientMessage::Hello {
                token,
                deltas: false,
                profile_key: None,
            },
        );
    }

    fn view(&self, conn: ConnId) -> Option<(LobbyView, Option<GameView>)> {
        match wire::decode_server(self.latest.get(&conn)?) {
            Ok(ServerMessage::State { lobby, game, .. }) => Some((lobby?, game)),
            _ => None,
        }
    }
}

/// Plays one game of `t` through a real core and records every input and output.
pub fn record(t: Table) -> Vec<Step> {
    let env = [
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
        ("MESSAGE_RATE", "1000"),
        ("MESSAGE_BURST", "1000"),
    ];
    let config = Config::from_pairs(env).unwrap();
    let mut rec = Recorder {
        server: Server::new(config, Seed::from_u64(7), Time::ZERO),
        now: Time::ZERO,
        steps: Vec::new(),
        latest: BTreeMap::new(),
        tokens: BTreeMap::new(),
        moves: 0,
    };
    let mut conns: Vec<ConnId> = (1..=t.humans).map(ConnId).collect();
    for &c in &conns {
        rec.open(c, None);
    }
    rec.send(
        ConnId(1),
        ClientMessage::CreateLobby {
            name: "p1".into(),
            public: false,
        },
    );
    let code = rec.view(ConnId(1)).unwrap().0.code;
    for &c in &conns[1..] {
        let name = format!("p{c}");
        let code = code.clone();
        rec.send(c, ClientMessage::JoinLobby { code, name });
    }
    for _ in 0..t.ai {
        rec.send(ConnId(1), ClientMessage::AddAi { level: None });
    }
    for s in 0..t.spectators {
        let c = ConnId(50 + s);
        rec.open(c, None);
        let code = code.clone();
        let name = format!("s{c}");
        rec.send(c, ClientMessage::Spectate { code, name });
    }
    if t.hidden_bids {
        let options = ClientMessage::SetOptions {
            hidden_bids: Some(true),
            bid_restriction: None,
            turn_seconds: None,
            public: None,
        };
        rec.send(ConnId(1), options);
    }
    rec.send(ConnId(1), ClientMessage::StartGame);
    for _ in 0..10_000 {
        rec.now = rec.now.plus_us(50_000);
        rec.handle(Input::Timeout);
        let k = usize::from(conns.len() > 1);
        if t.drop_after_moves.is_some_and(|m| rec.moves >= m) && conns[k] < ConnId(100) {
            let gone = conns[k];
            rec.handle(Input::Closed { conn: gone });
            let token = rec.tokens.get(&gone).cloned();
            rec.open(ConnId(100), token);
            conns[k] = ConnId(100);
        }
        let mut finished = true;
        for &c in &conns {
            let Some((lobby, game)) = rec.view(c) else {
                continue;
            };
            finished &= lobby.status == LobbyStatus::Finished;
            let first = game.and_then(|g| g.observation.legal_actions.first().copied());
            if let Some(action) = first {
                rec.send(c, ClientMessage::Action { action });
            }
        }
        if finished {
            return rec.steps;
        }
    }
    panic!("the recorded game did not finish");
}

/// Feeds `steps` to the checkers; sweeps the waits at `end` (after the last step when
/// `None`).
pub fn check(steps: &[Step], end: Option<Time>) -> Report {
    check_seen(steps, end).0
}

/// [`check`], with what the checkers saw.
pub fn check_seen(steps: &[Step], end: Option<Time>) -> (Report, Seen) {
    let mut games = Games::new(Some(BOUND));
    let mut r = Report::default();
    let mut last = Time::ZERO;
    for s in steps {
        match s {
            Step::In(input) => games.input(input),
            Step::Out(now, o) => {
                last = *now;
                games.output(&mut r, *now, o);
            }
        }
    }
    games.sweep(&mut r, end.unwrap_or(last), true);
    (r, games.seen)
}

pub type Decoded = (Option<LobbyView>, Option<GameView>, Vec<Event>);

pub fn decode(text: &str) -> Option<Decoded> {
    match wire::decode_server(text) {
        Ok(ServerMessage::State {
            lobby,
            game,
            events,
        }) => Some((lobby, game, events)),
        _ => None,
    }
}

pub fn encode((lobby, game, events): Decoded) -> String {
    wire::encode(&ServerMessage::State {
        lobby,
        game,
        events,
    })
}

/// The state frames of `steps`: (step index, connection, decoded).
pub fn states(steps: &[Step]) -> Vec<(usize, ConnId, Decoded)> {
    steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            Step::Out(_, Output::Send { conn, text, .. }) => Some((i, *conn, decode(text)?)),
            _ => None,
        })
        .collect()
}

pub fn set_text(steps: &mut [Step], i: usize, text: String) {
    if let Step::Out(_, Output::Send { text: t, .. }) = &mut steps[i] {
        *t = text;
    }
}

/// Edits the first state frame to `conn` for which `edit` returns true.
pub fn edit_first(steps: &mut [Step], conn: ConnId, edit: impl Fn(&mut Decoded) -> bool) -> bool {
    for (i, c, mut d) in states(steps) {
        if c == conn && edit(&mut d) {
            set_text(steps, i, encode(d));
            return true;
        }
    }
    false
}

/// Edits every copy of the first list of events for which `edit` returns true, so that
/// every seat still receives the same (edited) list.
pub fn edit_list(steps: &mut [Step], edit: impl Fn(&mut Vec<Event>) -> bool) -> bool {
    let all = states(steps);
    let Some(original) = all.iter().find_map(|(_, _, d)| {
        let mut e = d.2.clone();
        edit(&mut e).then(|| d.2.clone())
    }) else {
        return false;
    };
    for (i, _, mut d) in all {
        if d.2 == original {
            edit(&mut d.2);
            set_text(steps, i, encode(d));
        }
    }
    true
}

pub fn in_round(d: &Decoded, round: u8, phase: Phase) -> bool {
    d.1.as_ref()
        .is_some_and(|g| g.observation.round == round && g.observation.phase == phase)
}

pub fn assert_fails(name: &str, steps: &[Step], expected: &str) {
    let r = check(steps, None);
    assert!(
        r.violations.iter().any(|v| v.contains(expected)),
        "{name}: expected a violation with {expected:?}, got {:#?}",
        r.violations
    );
}

/// Rewrites every game part with its keys in another order (sorted), so that no view
/// is in the core's layout.
pub fn reorder(steps: &mut [Step]) {
    for s in steps.iter_mut() {
        let Step::Out(_, Output::Send { text, .. }) = s else {
            continue;
        };
        let Some(parts) = wizard_core::vocabulary::wire::peek::state_parts(text, "") else {
            continue;
        };
        let game: serde_json::Value = serde_json::from_str(parts.game).unwrap();
        *text = format!(
            "{{\"type\":\"state\",\"lobby\":{},\"game\":{},\"events\":{}}}",
            parts.lobby, game, parts.events
        );
    }
}
