//! One game as the checkers of `games.rs` follow it: its log of event lists, the
//! oracle, who holds which card, and the progress clock; and what one seat's frame
//! must agree with. A list is one change the core broadcast (a move, the start); the
//! core sends it to every connected seat at once, so the first seat to receive it adds
//! it to the log and every other seat must receive the same list next.

use wizard_core::Time;
use wizard_core::game::{Event, Observation, Phase, Seat};
use wizard_core::wire::{LobbyStatus, LobbyView};

use crate::leak::{self, Owners};
use crate::oracle::Oracle;
use crate::progress::ProgressBound;
use crate::report::{FNV_OFFSET, fnv};

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
}

/// The game waits on a seat the server plays (an AI, or a human with `turn_seconds`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wait {
    pub since: Time,
    pub bound_us: u64,
    pub reported: bool,
}

/// What the checkers saw, for the report: views and lists checked, oracle restarts,
/// and the longest wait the progress bound judged (with its bound).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    pub views: u64,
    pub lists: u64,
    pub resyncs: u64,
    pub wait_us: u64,
    pub wait_bound_us: u64,
}

/// One `state` frame of a game, as one connection received it.
#[derive(Debug)]
pub(crate) struct View<'a> {
    pub now: Time,
    pub events: &'a str,
    pub game_part: &'a str,
    pub obs: &'a Observation,
    pub you: Seat,
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
        let you = f.you;
        let fresh = at.is_none();
        if fresh && f.events != "[]" {
            bad.push(format!(
                "seat {you}: its first view of the game carries events (no snapshot first)"
            ));
        }
        // A snapshot after a stretch nobody saw: the oracle starts again from it.
        let resync = fresh && self.unseen;
        seen.views += 1;
        seen.resyncs += u64::from(resync);
        let mut at = at.unwrap_or(self.lists.len());
        let mut moved = false;
        if f.events != "[]" {
            let hash = fnv(FNV_OFFSET, f.events.as_bytes());
            match self.lists.get(at) {
                None => {
                    self.lists.push(hash);
                    seen.lists += 1;
                    moved = true;
                    self.list(f.events, resync, bad);
                    at = self.lists.len();
                }
                Some(h) if *h == hash => at += 1,
                Some(_) => match self.lists[at..].iter().position(|h| *h == hash) {
                    Some(k) => {
                        bad.push(format!(
                            "seat {you}: missed lists of events {at} to {}",
                            at + k - 1
                        ));
                        at += k + 1;
                    }
                    None => {
                        bad.push(format!(
                            "seat {you}: its list of events {at} differs from the other \
                             seats' (of {} lists)",
                            self.lists.len()
                        ));
                        at = self.lists.len();
                    }
                },
            }
        } else if at != self.lists.len() {
            bad.push(format!(
                "seat {you}: missed lists of events {at} to {} before a view without events",
                self.lists.len() - 1
            ));
            at = self.lists.len();
        }
        self.view(f, resync, at == self.lists.len(), bad);
        self.unseen = false;
        if let Some(b) = bound {
            self.progress(f, b, moved, seen, bad);
        }
        at
    }

    /// A list no seat received before: its events go to the oracle and the owners.
    fn list(&mut self, text: &str, resync: bool, bad: &mut Vec<String>) {
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
        if let (false, Some(o)) = (resync || self.unseen, &mut self.oracle) {
            for e in &events {
                o.event(e, bad);
            }
        }
    }

    /// The view itself: what its seat may know, and the oracle's figures.
    fn view(&mut self, f: &View<'_>, resync: bool, at_head: bool, bad: &mut Vec<String>) {
        let (obs, you) = (f.obs, f.you);
        let before = bad.len();
        leak::view_rules(obs, you, bad);
        let strings = leak::card_strings(f.game_part);
        let fields = leak::cards_in_view(obs);
        if strings != fields {
            bad.push(format!(
                "seat {you}: {strings} cards in its view, {fields} of them where cards may be"
            ));
        }
        self.owners.view(obs, you, bad);
        if resync || self.oracle.is_none() {
            self.oracle = Some(Oracle::resync(obs, you));
        } else if let (true, Some(o)) = (at_head, &self.oracle) {
            o.check_view(obs, you, bad);
        }
        let over = obs.phase == Phase::Finished;
        let last = obs.round == obs.rounds;
        match f.status {
            LobbyStatus::Finished if !over || !last => bad.push(format!(
                "seat {you}: lobby finished in round {} of {} ({:?})",
                obs.round, obs.rounds, obs.phase
            )),
            LobbyStatus::Playing | LobbyStatus::Waiting if over => bad.push(format!(
                "seat {you}: the game is over but the lobby is {:?}",
                f.status
            )),
            _ => {}
        }
        for m in &mut bad[before..] {
            if !m.starts_with("seat ") {
                *m = format!("seat {you}: {m}");
            }
        }
    }

    /// The progress clock: a list is a move (or the start); a game that waits on a seat
    /// the server plays must get its next move within the bound.
    fn progress(
        &mut self,
        f: &View<'_>,
        b: &ProgressBound,
        moved: bool,
        seen: &mut Seen,
        bad: &mut Vec<String>,
    ) {
        let due = if f.status == LobbyStatus::Playing {
            let (ai, timed) = served(f.obs, f.lobby);
            b.for_wait(ai, timed)
        } else {
            None
        };
        let fresh = |bound_us| Wait {
            since: f.now,
            bound_us,
            reported: false,
        };
        if moved {
            if let Some(w) = self.wait {
                let waited = f.now.since_us(w.since);
                // The longest wait relative to its bound.
                if u128::from(waited) * u128::from(seen.wait_bound_us.max(1))
                    > u128::from(seen.wait_us) * u128::from(w.bound_us)
                {
                    (seen.wait_us, seen.wait_bound_us) = (waited, w.bound_us);
                }
            }
            if let Some(w) = self.wait
                && !w.reported
                && f.now.since_us(w.since) > w.bound_us
            {
                bad.push(format!(
                    "a move came {:.1} s after the last, over the bound of {:.1} s",
                    f.now.since_us(w.since) as f64 / 1e6,
                    w.bound_us as f64 / 1e6
                ));
            }
            self.wait = due.map(fresh);
        } else {
            match (due, self.wait) {
                (None, _) => self.wait = None,
                (Some(bound_us), None) => self.wait = Some(fresh(bound_us)),
                (Some(_), Some(_)) => {}
            }
        }
    }
}

/// Whether the game waits on an AI seat, and `turn_seconds` in microseconds when it
/// waits on a human with a turn timer (else 0): the seats whose move the server owes.
pub(crate) fn served(obs: &Observation, lobby: &LobbyView) -> (bool, u64) {
    let awaited: Vec<Seat> = match obs.phase {
        Phase::Finished => Vec::new(),
        Phase::Bidding if obs.options.hidden_bids => (0u8..)
            .zip(&obs.has_bid)
            .filter(|(_, b)| !**b)
            .map(|(s, _)| s)
            .collect(),
        _ => obs.to_act.into_iter().collect(),
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
