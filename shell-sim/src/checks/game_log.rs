//! One game as the checkers of `games.rs` follow it: its log of event lists, the
//! oracle, who holds which card, and the progress clock; and what one seat's frame
//! must agree with. A list is one change the core broadcast (a move, the start); the
//! core sends it to every connected seat at once, so the first seat to receive it adds
//! it to the log and every other seat must receive the same list next.

use wizard_core::Time;
use wizard_core::vocabulary::game::{Event, Phase, Seat};
use wizard_core::vocabulary::wire::{GameView, LobbyStatus, LobbyView};

use crate::checks::leak::{self, Owners};
use crate::checks::oracle::Oracle;
use crate::checks::progress::ProgressBound;
use crate::checks::seat_view::{self, Own, Public as PublicPart};
use crate::runs::report::{FNV_OFFSET, fnv};

/// One game's log and what the checkers derive from it.
#[derive(Debug)]
pub(crate) struct GameLog {
    /// The lists of events, hashed, in the order the core sent them.
    pub lists: Vec<u64>,
    pub oracle: Option<Oracle>,
    pub owners: Owners,
    /// No synchronised connection saw the game since the last list it saw: the next
    /// snapshot restarts the oracle from its view.
    pub unseen: bool,
    pub wait: Option<Wait>,
    /// The newest public part of a view, decoded and judged once for every seat that
    /// shares it.
    public: Option<Public>,
}

/// A view's public part: its text (`None`: a view that did not split), the view it
/// came with, and whether the oracle judged it.
#[derive(Debug)]
struct Public {
    text: Option<String>,
    obs: PublicPart,
    oracle_checked: bool,
}

/// The game waits on a seat the server plays (an AI, or a human with `turn_seconds`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wait {
    pub since: Time,
    pub bound_us: u64,
    pub reported: bool,
}

/// What the checkers saw, for the report: views and lists checked (and views that
/// did not split), oracle restarts, and the longest wait the progress bound judged (with its bound).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    pub views: u64,
    /// Views not in the core's layout, decoded whole (`seat_view.rs`).
    pub views_whole: u64,
    pub lists: u64,
    pub resyncs: u64,
    /// Views of a bidding phase under hidden bids, `autoplayed` events, and waits on a
    /// human's turn timer: how often the rules for them were put to work.
    pub hidden_bid_views: u64,
    pub autoplayed: u64,
    pub timed_waits: u64,
    pub wait_us: u64,
    pub wait_bound_us: u64,
    /// Views sent to spectators (`you` null), judged by `leak::spectator_rules`.
    pub spectator_views: u64,
    /// What the rules below had to judge, so that a swarm that never puts one to work
    /// says so (coverage): a list a second seat received and compared; a connection
    /// new to a running game placed at the log's end by its snapshot; a seat's view
    /// showing a hand (the hand's rules, the cards' owners); tricks, rounds and games
    /// the oracle recomputed from the events (winners, points, the ranking).
    pub lists_shared: u64,
    pub joined_midgame: u64,
    pub hand_views: u64,
    pub tricks_judged: u64,
    pub rounds_scored: u64,
    pub games_ranked: u64,
    /// Chat lines checked across a lobby's connections, and those that reached three
    /// or more (seats and spectators).
    pub chat_lines: u64,
    pub chat_spread: u64,
    /// Views of a lobby listing two spectators or more.
    pub many_spectators: u64,
}

/// One `state` frame of a game, as one connection received it.
#[derive(Debug)]
pub(crate) struct View<'a> {
    pub now: Time,
    pub events: &'a str,
    pub game_part: &'a str,
    /// The connection's seat, from its player id (`None`: not known).
    pub seat: Option<usize>,
    pub lobby: &'a LobbyView,
    pub status: LobbyStatus,
}

impl GameLog {
    /// A game seen from its start (`oracle` fresh), or not (`None`: known from the
    /// first view on).
    pub fn new(oracle: Option<Oracle>) -> GameLog {
        GameLog {
            lists: Vec::new(),
            unseen: oracle.is_none(),
            oracle,
            owners: Owners::default(),
            wait: None,
            public: None,
        }
    }

    /// Whether `events` open the game: the deal of round 1, as the first list of a log
    /// that has no other yet.
    fn opens(&self, events: &str) -> bool {
        events.starts_with("[{\"type\":\"round_started\",\"round\":1,")
            && match self.lists.as_slice() {
                [] => true,
                [first] => *first == fnv(FNV_OFFSET, events.as_bytes()),
                _ => false,
            }
    }

    /// A frame for the connection whose place in the log is `at` (`None`: the first
    /// frame of this game on it). Returns its place after the frame.
    pub fn frame(
        &mut self,
        at: Option<usize>,
        f: &View<'_>,
        bound: Option<&ProgressBound>,
        seen: &mut Seen,
        bad: &mut Vec<String>,
    ) -> usize {
        let fresh = at.is_none();
        // A game created and started in one call (a quick-play table) has no waiting
        // room to see: its seats' first view is its first list, the deal of round 1.
        let start = fresh && self.opens(f.events);
        if start && self.unseen {
            let players = u8::try_from(f.lobby.players.len()).unwrap_or(0);
            let rounds = 60 / players.max(1);
            self.oracle = Some(Oracle::new(players, rounds, f.lobby.options.hidden_bids));
            self.unseen = false;
        }
        let at = if start { Some(0) } else { at };
        if fresh && !start && f.events != "[]" {
            bad.push("its first view of the game carries events (no snapshot first)".into());
        }
        // A snapshot after a stretch nobody saw: the oracle starts again from it.
        let resync = fresh && self.unseen;
        seen.joined_midgame += u64::from(fresh && !start && !self.lists.is_empty());
        seen.views += 1;
        seen.resyncs += u64::from(resync);
        let (at, moved) =
            self.follow_lists(at.unwrap_or(self.lists.len()), f.events, resync, seen, bad);
        let Some((you, own)) = self.decode(f.game_part, seen, bad) else {
            return at;
        };
        let Some(you) = you else {
            // A spectator's view: nothing of its own, and no seat's view to judge.
            if let Some(p) = &self.public {
                leak::spectator_rules(&p.obs, &own, bad);
            }
            // It resynchronises nothing: the oracle restarts from a seat's view.
            seen.spectator_views += 1;
            return at;
        };
        if let Some(p) = &self.public {
            let hidden = p.obs.options.hidden_bids && p.obs.phase == Phase::Bidding;
            seen.hidden_bid_views += u64::from(hidden);
        }
        seen.hand_views += u64::from(!own.hand.is_empty());
        self.view(f, you, &own, resync, at == self.lists.len(), bad);
        self.unseen = false;
        if let Some(b) = bound {
            self.judge_wait(f, b, own.to_act, moved, seen, bad);
        }
        at
    }

    /// Follows the connection from its place `at` in the log of event lists through
    /// `events` (`[]`: none): a new list is judged and logged, a known one must be the
    /// next, and no list may be missed. Returns the place after it and whether the game
    /// moved (a new list).
    fn follow_lists(
        &mut self,
        at: usize,
        events: &str,
        resync: bool,
        seen: &mut Seen,
        bad: &mut Vec<String>,
    ) -> (usize, bool) {
        let mut at = at;
        let mut moved = false;
        if events != "[]" {
            let hash = fnv(FNV_OFFSET, events.as_bytes());
            match self.lists.get(at) {
                None => {
                    self.lists.push(hash);
                    seen.lists += 1;
                    moved = true;
                    self.list(events, resync, seen, bad);
                    at = self.lists.len();
                }
                Some(h) if *h == hash => {
                    seen.lists_shared += 1;
                    at += 1;
                }
                Some(_) => match self.lists[at..].iter().position(|h| *h == hash) {
                    Some(k) => {
                        bad.push(format!("missed lists of events {at} to {}", at + k - 1));
                        at += k + 1;
                    }
                    None => {
                        bad.push(format!(
                            "its list of events {at} differs from the other seats' (of {} \
                             lists)",
                            self.lists.len()
                        ));
                        at = self.lists.len();
                    }
                },
            }
        } else if at != self.lists.len() {
            bad.push(format!(
                "missed lists of events {at} to {} before a view without events",
                self.lists.len() - 1
            ));
            at = self.lists.len();
        }
        (at, moved)
    }

    /// The wait for the seat to act (`to_act`) in a running game stays within the
    /// progress bound `b`; `moved`: the game moved with this frame.
    fn judge_wait(
        &mut self,
        f: &View<'_>,
        b: &ProgressBound,
        to_act: Option<Seat>,
        moved: bool,
        seen: &mut Seen,
        bad: &mut Vec<String>,
    ) {
        if let Some(p) = &self.public {
            let served =
                (f.status == LobbyStatus::Playing).then(|| served(&p.obs, to_act, f.lobby));
            seen.timed_waits += u64::from(served.is_some_and(|(_, turn_us)| turn_us > 0));
            let due = served.and_then(|(ai, turn_us)| b.for_wait(ai, turn_us));
            progress(&mut self.wait, due, f.now, moved, seen, bad);
        }
    }

    /// The viewer's seat (`None`: a spectator) and own fields; decodes and judges the
    /// public part when it is not the one judged last.
    fn decode(
        &mut self,
        game: &str,
        seen: &mut Seen,
        bad: &mut Vec<String>,
    ) -> Option<(Option<Seat>, Own)> {
        let Some(sv) = seat_view::split(game) else {
            seen.views_whole += 1;
            let whole: GameView = match serde_json::from_str(game) {
                Ok(g) => g,
                Err(e) => {
                    bad.push(format!("undecodable game part: {e}"));
                    return None;
                }
            };
            let own = Own::of(&whole.observation);
            let public = PublicPart::of(whole.observation);
            let (strings, fields) = (
                leak::card_strings(game),
                leak::cards_in_public(&public) + own.hand.len() + own.plays.len(),
            );
            if strings != fields {
                bad.push(format!(
                    "{strings} cards in the view, {fields} where cards may be"
                ));
            }
            self.new_public(None, public, bad);
            return Some((whole.you, own));
        };
        let same = self
            .public
            .as_ref()
            .and_then(|p| p.text.as_deref())
            .is_some_and(|t| sv.public_is(t));
        if !same {
            let obs: PublicPart = match serde_json::from_str(sv.observation) {
                Ok(o) => o,
                Err(e) => {
                    bad.push(format!("undecodable observation: {e}"));
                    return None;
                }
            };
            let strings: usize = sv.public.iter().map(|p| leak::card_strings(p)).sum();
            if strings != leak::cards_in_public(&obs) {
                bad.push(format!(
                    "{strings} cards in the public part of the view, {} where cards may be",
                    leak::cards_in_public(&obs)
                ));
            }
            self.new_public(Some(sv.public_text()), obs, bad);
        }
        Some((Some(sv.you), sv.own))
    }

    fn new_public(&mut self, text: Option<String>, obs: PublicPart, bad: &mut Vec<String>) {
        leak::public_rules(&obs, bad);
        self.owners.view_public(&obs, bad);
        self.public = Some(Public {
            text,
            obs,
            oracle_checked: false,
        });
    }

    /// A list no seat received before: its events go to the oracle and the owners.
    fn list(&mut self, text: &str, resync: bool, seen: &mut Seen, bad: &mut Vec<String>) {
        let events: Vec<Event> = match serde_json::from_str(text) {
            Ok(e) => e,
            Err(e) => {
                bad.push(format!("undecodable events: {e}"));
                return;
            }
        };
        if leak::card_strings(text) != leak::cards_in_events(&events) {
            bad.push(format!(
                "events hold a card outside their card fields: {text}"
            ));
        }
        self.owners.events(&events, bad);
        if let Some(p) = &mut self.public {
            p.oracle_checked = false;
        }
        if let (false, Some(o)) = (resync || self.unseen, &mut self.oracle) {
            for e in &events {
                o.event(e, bad);
                let judged = match e {
                    Event::TrickCompleted { .. } => &mut seen.tricks_judged,
                    Event::RoundFinished { .. } => &mut seen.rounds_scored,
                    Event::GameFinished { .. } => &mut seen.games_ranked,
                    _ => continue,
                };
                *judged += 1;
            }
        }
        let autoplayed = events
            .iter()
            .filter(|e| matches!(e, Event::Autoplayed { .. }));
        seen.autoplayed += autoplayed.count() as u64;
    }

    /// Seat `you`'s view (its own fields `own`, the public part judged already): what
    /// its seat may know, the oracle's figures, the lobby's status.
    fn view(
        &mut self,
        f: &View<'_>,
        you: Seat,
        own: &Own,
        resync: bool,
        at_head: bool,
        bad: &mut Vec<String>,
    ) {
        let Some(p) = &mut self.public else {
            return;
        };
        let obs = &p.obs;
        if let Some(seat) = f.seat.filter(|s| *s != usize::from(you)) {
            bad.push(format!("seat {seat} was sent the view of seat {you}"));
        }
        leak::own_rules(obs, own, you, bad);
        self.owners.view_hand(&own.hand, you, bad);
        match &self.oracle {
            Some(o) if !resync => {
                if at_head {
                    if !p.oracle_checked {
                        o.check_public(obs, bad);
                        p.oracle_checked = true;
                    }
                    o.check_bids(obs, own, you, bad);
                }
            }
            _ => {
                self.oracle = Some(Oracle::resync(obs, own, you));
                p.oracle_checked = true;
            }
        }
        let over = obs.phase == Phase::Finished;
        let last = obs.round == obs.rounds;
        match f.status {
            LobbyStatus::Finished if !over || !last => bad.push(format!(
                "lobby finished in round {} of {} ({:?})",
                obs.round, obs.rounds, obs.phase
            )),
            LobbyStatus::Playing | LobbyStatus::Waiting if over => {
                bad.push(format!("the game is over but the lobby is {:?}", f.status))
            }
            _ => {}
        }
    }
}

/// The progress clock: a list is a move (or the start); a game that waits on a seat
/// the server plays (`due`: its bound) must get its next move within the bound.
fn progress(
    wait: &mut Option<Wait>,
    due: Option<u64>,
    now: Time,
    moved: bool,
    seen: &mut Seen,
    bad: &mut Vec<String>,
) {
    let fresh = |bound_us| Wait {
        since: now,
        bound_us,
        reported: false,
    };
    if !moved {
        match (due, *wait) {
            (None, _) => *wait = None,
            (Some(bound_us), None) => *wait = Some(fresh(bound_us)),
            // The seats owed changed kind without a move (a human's seat given up at
            // `SESSION_TTL` turns AI): the core's turn book restarts such a seat's turn
            // as its new kind (`TurnBook::sync`), so its wait starts now.
            (Some(bound_us), Some(w)) if w.bound_us != bound_us => *wait = Some(fresh(bound_us)),
            (Some(_), Some(_)) => {}
        }
        return;
    }
    if let Some(w) = *wait {
        let waited = now.since_us(w.since);
        // The longest wait relative to its bound.
        if u128::from(waited) * u128::from(seen.wait_bound_us.max(1))
            > u128::from(seen.wait_us) * u128::from(w.bound_us)
        {
            (seen.wait_us, seen.wait_bound_us) = (waited, w.bound_us);
        }
        if !w.reported && waited > w.bound_us {
            bad.push(format!(
                "a move came {:.1} s after the last, over the bound of {:.1} s",
                waited as f64 / 1e6,
                w.bound_us as f64 / 1e6
            ));
        }
    }
    *wait = due.map(fresh);
}

/// Whether the game waits on an AI seat, and `turn_seconds` in microseconds when it
/// waits on a human with a turn timer (else 0): the seats whose move the server owes,
/// from a view's public part and its seat's `to_act`.
pub(crate) fn served(obs: &PublicPart, to_act: Option<Seat>, lobby: &LobbyView) -> (bool, u64) {
    let awaited: Vec<Seat> = match obs.phase {
        Phase::Finished => Vec::new(),
        Phase::Bidding if obs.options.hidden_bids => (0u8..)
            .zip(&obs.has_bid)
            .filter(|(_, b)| !**b)
            .map(|(s, _)| s)
            .collect(),
        _ => to_act.into_iter().collect(),
    };
    let is_ai = |s: &Seat| lobby.players.get(usize::from(*s)).is_some_and(|p| p.is_ai);
    let ai = awaited.iter().any(is_ai);
    let timed = lobby.options.turn_seconds > 0 && awaited.iter().any(|s| !is_ai(s));
    let turn_us = if timed {
        u64::from(lobby.options.turn_seconds) * 1_000_000
    } else {
        0
    };
    (ai, turn_us)
}
