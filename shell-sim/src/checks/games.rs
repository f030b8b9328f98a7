//! The checkers of what the players of each game are shown. Every `state` frame the
//! core sends a player connection is taken apart (`wire::peek`), attributed to its
//! lobby (by the lobby's code) and seat (by the player id of the connection's
//! `welcome`), and checked: the view keeps to what its seat may know (`leak.rs`), the
//! seat receives the same lists of events as every other seat of the game, the
//! oracle's scores (`oracle.rs`) agree with the events and the view, the lobby's status
//! never goes from playing to waiting and a game finishes only after its last round,
//! and a game the server owes a move gets it within the bound of `progress.rs`.
//! docs/SIMULATION.md ("Checkers") states each rule.

use std::collections::{BTreeMap, BTreeSet};

use wizard_core::Time;
use wizard_core::vocabulary::ids::{ConnId, LobbyId};
use wizard_core::vocabulary::io::{Input, Note, Output};
use wizard_core::vocabulary::wire::{
    self, ClientMessage, LobbyStatus, LobbyView, ServerMessage, peek,
};

use crate::checks::expiry::Expiry;
use crate::checks::game_log::{GameLog, Seen, View};
use crate::checks::oracle::Oracle;
use crate::checks::progress::ProgressBound;
use crate::model::conn_map::ConnMap;
use crate::runs::report::Report;

/// How often waits are swept for the progress bound.
const SWEEP_US: u64 = 1_000_000;

/// What the checkers of games remember.
#[derive(Debug, Default)]
pub struct Games {
    bound: Option<ProgressBound>,
    viewers: ConnMap<Viewer>,
    /// By lobby code (packed, `code_key`).
    tables: BTreeMap<u64, Table>,
    /// Per lobby id, from the notes: the running game's players and moves applied.
    moves: BTreeMap<LobbyId, (u8, u64)>,
    next_sweep: Time,
    bad: Vec<String>,
    /// What was checked, for the report.
    pub seen: Seen,
    /// The walkers' `SESSION_TTL` (`expiry.rs`), judged from the lobby parts.
    pub expiry: Expiry,
}

/// A player connection as the checkers follow it.
#[derive(Debug, Default)]
struct Viewer {
    player_id: Option<String>,
    /// The lobby its newest view showed (`code_key`).
    table: Option<u64>,
    /// (the game's epoch, the place in its log): the lists of events it received.
    synced: Option<(u64, usize)>,
    /// The core closed it: what it sends there after the close is never delivered
    /// (the outbound queue takes nothing after a close), so it is not a view.
    closing: bool,
}

/// A lobby and its current game, as the frames showed them.
#[derive(Debug)]
struct Table {
    lobby_raw: String,
    lobby: LobbyView,
    status: LobbyStatus,
    /// Counts the games started in this lobby.
    epoch: u64,
    game: Option<GameLog>,
    viewers: BTreeSet<ConnId>,
}

impl Table {
    /// The lobby's status went to `status` (`fresh`: the first frame of this lobby):
    /// a game starts, ends or comes back to the waiting room only by the rules, and
    /// every connection of a waiting room receives the new game's first list.
    fn status_to(
        &mut self,
        r: &mut Report,
        now: Time,
        name: &str,
        status: LobbyStatus,
        fresh: bool,
        viewers: &mut ConnMap<Viewer>,
    ) {
        let from = self.status;
        self.status = status;
        match (from, status) {
            (LobbyStatus::Playing, LobbyStatus::Waiting) => {
                r.violation(
                    now,
                    format!("lobby {name}: status went from playing to waiting"),
                );
                self.game = None;
            }
            (LobbyStatus::Finished, LobbyStatus::Playing) => {
                r.violation(
                    now,
                    format!("lobby {name}: a new game without the waiting room"),
                );
                self.game = None;
            }
            (LobbyStatus::Waiting, LobbyStatus::Playing) if !fresh => {
                // A new game: every connection of the waiting room receives its first
                // list.
                self.epoch += 1;
                let players = u8::try_from(self.lobby.players.len()).unwrap_or(0);
                let rounds = 60 / players.max(1);
                let hidden = self.lobby.options.hidden_bids;
                let watched = !self.viewers.is_empty();
                let oracle = watched.then(|| Oracle::new(players, rounds, hidden));
                self.game = Some(GameLog::new(oracle));
                for c in &self.viewers {
                    if let Some(v) = viewers.get_mut(c) {
                        v.synced = Some((self.epoch, 0));
                    }
                }
            }
            (_, LobbyStatus::Waiting) => self.game = None,
            _ => {}
        }
        if self.game.is_none() && status != LobbyStatus::Waiting {
            // A game nobody saw start (no frame of its waiting room): known from the
            // first view on.
            self.epoch += 1;
            self.game = Some(GameLog::new(None));
        }
    }
}

/// The lobby code at the start of a lobby part (`{"code":"ABC234",...`).
fn lobby_code(raw: &str) -> Option<&str> {
    raw.strip_prefix("{\"code\":\"")?.split('"').next()
}

/// A lobby code as a number: its bytes (six, from a 32-letter alphabet, fit), or a
/// hash of a longer one.
fn code_key(code: &str) -> u64 {
    let b = code.as_bytes();
    if b.len() < 8 {
        b.iter()
            .fold(b.len() as u64, |k, c| (k << 8) | u64::from(*c))
    } else {
        crate::runs::report::fnv(crate::runs::report::FNV_OFFSET, b) | 1 << 63
    }
}

impl Games {
    /// The checkers with the progress bound (`None`: progress is not judged).
    pub fn new(bound: Option<ProgressBound>) -> Games {
        Games {
            bound,
            ..Games::default()
        }
    }

    /// The checkers of a restored process: no connection followed, every game picked
    /// up from its next snapshot; the figures so far and the TTL rule's settings kept.
    pub fn restarted(&mut self) -> Games {
        Games {
            bound: self.bound,
            seen: self.seen,
            expiry: self.expiry.restarted(),
            ..Games::default()
        }
    }

    /// An input the core is about to handle: a connection that closed sees no more.
    pub fn input(&mut self, input: &Input) {
        if let Input::Closed { conn } = input {
            self.detach(*conn);
            self.viewers.remove(conn);
        }
    }

    /// One output of the core, in the order the core produced them.
    pub fn output(&mut self, r: &mut Report, now: Time, o: &Output) {
        match o {
            Output::Send { conn, .. } if self.viewers.get(conn).is_some_and(|v| v.closing) => {}
            Output::Send { conn, text, .. } => match peek::frame_type(text) {
                "state" => self.state(r, now, *conn, text),
                "welcome" => {
                    if let Ok(ServerMessage::Welcome { player_id, .. }) = wire::decode_server(text)
                    {
                        let v = self.viewer(*conn);
                        v.player_id = Some(player_id);
                    }
                }
                _ => {}
            },
            // Requests to the AI carry no player's view.
            Output::AiRequest { .. } => {}
            Output::Close { conn, .. } => {
                self.detach(*conn);
                self.viewer(*conn).closing = true;
            }
            Output::Note(n) => self.note(r, now, n),
        }
        for what in self.bad.drain(..) {
            r.violation(now, what);
        }
    }

    /// A `chat` message the core handled: its line goes to every connection that
    /// follows the sender's lobby (seats and spectators), byte for byte the same, and
    /// to no connection of another lobby or of none (a leak), or to nobody (refused).
    /// Checked per `handle` call, where the core broadcasts it.
    pub fn chat(&mut self, r: &mut Report, now: Time, input: &Input, out: &[Output]) {
        let Input::Message {
            conn: sender,
            message: ClientMessage::Chat { .. },
        } = input
        else {
            return;
        };
        let lines: Vec<(ConnId, &str)> = out
            .iter()
            .filter_map(|o| match o {
                Output::Send { conn, text, .. } if peek::frame_type(text) == "chat" => {
                    Some((*conn, text.as_str()))
                }
                _ => None,
            })
            .collect();
        let Some(&(_, line)) = lines.first() else {
            return;
        };
        let table = self.viewers.get(sender).and_then(|v| v.table);
        let members = table
            .and_then(|c| self.tables.get(&c))
            .map(|t| t.viewers.clone())
            .unwrap_or_default();
        let code = table
            .and_then(|c| self.tables.get(&c))
            .map_or("-", |t| t.lobby.code.as_str());
        for &(conn, text) in &lines {
            if text != line {
                r.violation(
                    now,
                    format!("conn {conn}: chat line {text} differs from {line}"),
                );
            }
            let other = self.viewers.get(&conn).and_then(|v| v.table);
            if !members.contains(&conn) && other.is_some() {
                r.violation(
                    now,
                    format!("conn {conn}: a chat line of lobby {code} in another lobby's frames"),
                );
            }
        }
        let mut followers = 0;
        for conn in &members {
            if self.viewers.get(conn).is_some_and(|v| v.closing) {
                continue;
            }
            followers += 1;
            if !lines.iter().any(|(c, _)| c == conn) {
                r.violation(
                    now,
                    format!("lobby {code} conn {conn}: lost a chat line the lobby received"),
                );
            }
        }
        self.seen.chat_lines += 1;
        self.seen.chat_spread += u64::from(followers >= 3);
    }

    /// Reports every game that waited on the server longer than its bound (at most
    /// once a second, or at once with `force`).
    pub fn sweep(&mut self, r: &mut Report, now: Time, force: bool) {
        if !force && now < self.next_sweep {
            return;
        }
        self.next_sweep = now.plus_us(SWEEP_US);
        let tables = &self.tables;
        let seen = |id: &str| {
            tables
                .values()
                .any(|t| !t.viewers.is_empty() && t.lobby.players.iter().any(|p| p.id == id))
        };
        for what in self.expiry.overdue(now, seen) {
            r.violation(now, what);
        }
        for t in self.tables.values_mut() {
            let code = &t.lobby.code;
            let Some(w) = t.game.as_mut().and_then(|g| g.wait.as_mut()) else {
                continue;
            };
            if !w.reported && now.since_us(w.since) > w.bound_us {
                w.reported = true;
                r.violation(
                    now,
                    format!(
                        "lobby {code}: no move for {:.1} s while the server owed one (bound {:.1} s)",
                        now.since_us(w.since) as f64 / 1e6,
                        w.bound_us as f64 / 1e6
                    ),
                );
            }
        }
    }

    fn viewer(&mut self, conn: ConnId) -> &mut Viewer {
        if !self.viewers.contains_key(&conn) {
            self.viewers.insert(conn, Viewer::default());
        }
        self.viewers
            .get_mut(&conn)
            .unwrap_or_else(|| unreachable!("inserted above"))
    }

    /// Moves applied per game, from the notes: a game finishes after exactly the moves
    /// of all its rounds (every seat bids and plays every card; a trump is chosen in
    /// at most every round but the last).
    fn note(&mut self, r: &mut Report, now: Time, n: &Note) {
        match n {
            Note::GameStarted { lobby, players } => {
                self.moves.insert(*lobby, (*players, 0));
            }
            Note::MoveApplied { lobby, .. } => {
                if let Some((_, m)) = self.moves.get_mut(lobby) {
                    *m += 1;
                }
            }
            Note::GameFinished { lobby } => {
                if let Some((players, m)) = self.moves.remove(lobby) {
                    let n = u64::from(players.max(1));
                    let rounds = 60 / n;
                    let least = n * rounds + n * rounds * (rounds + 1) / 2;
                    if m < least || m > least + rounds - 1 {
                        r.violation(
                            now,
                            format!(
                                "lobby {lobby}: game of {players} finished after {m} moves \
                                 (a whole game has {least} to {})",
                                least + rounds - 1
                            ),
                        );
                    }
                }
            }
            Note::LobbyDeleted { lobby } => {
                self.moves.remove(lobby);
            }
            _ => {}
        }
    }

    /// The connection sees no game any more (closed, left, or in another lobby).
    fn detach(&mut self, conn: ConnId) {
        let Some(v) = self.viewers.get_mut(&conn) else {
            return;
        };
        v.synced = None;
        let Some(code) = v.table.take() else {
            return;
        };
        let Some(t) = self.tables.get_mut(&code) else {
            return;
        };
        t.viewers.remove(&conn);
        let epoch = t.epoch;
        let seen = t.viewers.iter().any(|c| {
            self.viewers
                .get(c)
                .is_some_and(|v| v.synced.is_some_and(|(e, _)| e == epoch))
        });
        if let (Some(g), false) = (&mut t.game, seen) {
            g.unseen = true;
            g.wait = None;
        }
        if t.viewers.is_empty() && t.status == LobbyStatus::Waiting {
            self.tables.remove(&code);
        }
    }

    fn state(&mut self, r: &mut Report, now: Time, conn: ConnId, text: &str) {
        let known_code = self.viewers.get(&conn).and_then(|v| v.table);
        let known_raw = known_code
            .and_then(|c| self.tables.get(&c))
            .map_or("", |t| t.lobby_raw.as_str());
        let Some(parts) = peek::state_parts(text, known_raw) else {
            r.violation(now, format!("conn {conn}: a state frame out of shape"));
            return;
        };
        if parts.lobby == "null" {
            self.detach(conn);
            return;
        }
        let code = match (known_code, parts.lobby_known) {
            (Some(c), true) => c,
            _ => match lobby_code(parts.lobby) {
                Some(c) => code_key(c),
                None => {
                    r.violation(now, format!("conn {conn}: a lobby without its code first"));
                    return;
                }
            },
        };
        if !self.lobby(r, now, code, parts.lobby) {
            return;
        }
        if known_code != Some(code) {
            self.detach(conn);
            self.viewer(conn).table = Some(code);
        }
        let Some(t) = self.tables.get_mut(&code) else {
            return;
        };
        t.viewers.insert(conn);
        self.seen.many_spectators += u64::from(t.lobby.spectators.len() >= 2);
        if t.game.is_none() || parts.game == "null" {
            return;
        }
        let v = self
            .viewers
            .get_mut(&conn)
            .unwrap_or_else(|| unreachable!("attached above"));
        let seat = v
            .player_id
            .as_ref()
            .and_then(|id| t.lobby.players.iter().position(|p| &p.id == id));
        let epoch = t.epoch;
        let at = v.synced.filter(|(e, _)| *e == epoch).map(|(_, at)| at);
        let view = View {
            now,
            events: parts.events,
            game_part: parts.game,
            seat,
            lobby: &t.lobby,
            status: t.status,
        };
        if let Some(g) = &mut t.game {
            let at = g.frame(
                at,
                &view,
                self.bound.as_ref(),
                &mut self.seen,
                &mut self.bad,
            );
            v.synced = Some((epoch, at));
        }
        for what in self.bad.drain(..) {
            r.violation(now, format!("lobby {} conn {conn}: {what}", t.lobby.code));
        }
    }

    /// Brings the table of `code` up to the lobby part `raw`; checks its status change.
    fn lobby(&mut self, r: &mut Report, now: Time, code: u64, raw: &str) -> bool {
        let same = self.tables.get(&code).is_some_and(|t| t.lobby_raw == raw);
        if same {
            return true;
        }
        let lobby: LobbyView = match serde_json::from_str(raw) {
            Ok(l) => l,
            Err(e) => {
                r.violation(now, format!("undecodable lobby part {raw}: {e}"));
                return false;
            }
        };
        let status = lobby.status;
        let name = lobby.code.clone();
        let t = self.tables.entry(code).or_insert_with(|| Table {
            lobby_raw: String::new(),
            lobby: lobby.clone(),
            status,
            epoch: 0,
            game: None,
            viewers: BTreeSet::new(),
        });
        let fresh = t.lobby_raw.is_empty();
        t.lobby_raw.clear();
        t.lobby_raw.push_str(raw);
        let old = std::mem::replace(&mut t.lobby, lobby);
        if !fresh {
            for what in self.expiry.lobby(now, &old, &t.lobby) {
                r.violation(now, what);
            }
        }
        t.status_to(r, now, &name, status, fresh, &mut self.viewers);
        true
    }
}
