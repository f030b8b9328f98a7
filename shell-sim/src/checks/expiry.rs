//! The checker of `SESSION_TTL`: a player who walks away (closes its connection and
//! never comes back) keeps its seat for `SESSION_TTL` after the core heard the close,
//! and then loses it as if it had left, as the core's `expire_session` does in the real
//! server: in a running or finished game the seat becomes an AI seat with the same name
//! (PROTOCOL.md, `leave_lobby`), in a waiting room it is removed. Judged from the lobby
//! parts of the views the other players receive (`games.rs`): the walker's seat may not
//! change before the TTL is over (unless the core evicts the session at `MAX_SESSIONS`
//! in the same input), must change by the TTL plus the progress checker's slack (the
//! time the thread may need to get to a due deadline, `progress.rs`) while someone sees
//! the lobby, and must change into exactly the seat the rule says.

use std::collections::BTreeMap;

use wizard_core::Time;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::Input;
use wizard_core::vocabulary::wire::{LobbyStatus, LobbyView};

use crate::model::conn_map::ConnMap;

/// What the checker remembers of one walker.
#[derive(Clone, Copy, Debug, Default)]
struct Walker {
    /// When the core handled its connection's close: the TTL starts.
    left_at: Option<Time>,
    /// When the other players' views stopped showing it.
    gone_at: Option<Time>,
    /// Reported as overdue already.
    reported: bool,
}

/// The walkers of a run and the rule's settings.
#[derive(Debug, Default)]
pub struct Expiry {
    ttl_us: u64,
    /// `None`: the scenario leaves the thread no CPU it can count on, lateness is not
    /// judged.
    slack_us: Option<u64>,
    /// By player id. One entry per walker the scenario asks for.
    walkers: BTreeMap<String, Walker>,
    by_conn: ConnMap<String>,
    /// The input being handled evicts a session at `MAX_SESSIONS` (`Note::SessionEvicted`
    /// among its outputs): a seat may then go before its TTL.
    pub evicting: bool,
    /// Walkers whose seat went as the rule says.
    pub expired_seen: u64,
}

impl Expiry {
    /// The rule with `SESSION_TTL` (`ttl_us`) and the lateness allowed (`slack_us`).
    pub fn new(ttl_us: u64, slack_us: Option<u64>) -> Expiry {
        Expiry {
            ttl_us,
            slack_us,
            ..Expiry::default()
        }
    }

    /// The rule for a restored process: the walkers it knew of are forgotten (their
    /// seats were restored and their TTL starts again), the count of seats given up kept.
    pub fn restarted(&self) -> Expiry {
        Expiry {
            expired_seen: self.expired_seen,
            ..Expiry::new(self.ttl_us, self.slack_us)
        }
    }

    /// The restored process starts at `now`: a walker that walked while the process was
    /// down closed a connection no process heard of; `Server::restore` counts every
    /// human as disconnected since the restore (`SESSION_TTL` starts again), so its TTL
    /// starts now.
    pub fn restored(&mut self, now: Time) {
        self.by_conn = ConnMap::default();
        for w in self.walkers.values_mut() {
            w.left_at.get_or_insert(now);
        }
    }

    /// The player `player_id` closes `conn` now and never comes back.
    pub fn walked(&mut self, conn: ConnId, player_id: &str) {
        self.walkers.insert(player_id.to_owned(), Walker::default());
        self.by_conn.insert(conn, player_id.to_owned());
    }

    /// How many walkers the run has.
    pub fn walkers(&self) -> usize {
        self.walkers.len()
    }

    /// An input the core is about to handle at `now`: a walker's close starts its TTL.
    pub fn input(&mut self, now: Time, input: &Input) {
        if let Input::Closed { conn } = input
            && let Some(id) = self.by_conn.remove(conn)
            && let Some(w) = self.walkers.get_mut(&id)
        {
            w.left_at = Some(now);
        }
    }

    /// A lobby's view changed from `old` to `new` at `now`; returns the broken rules.
    pub fn lobby(&mut self, now: Time, old: &LobbyView, new: &LobbyView) -> Vec<String> {
        let mut bad = Vec::new();
        if self.walkers.is_empty() {
            return bad;
        }
        for (seat, p) in old.players.iter().enumerate() {
            let Some(w) = self.walkers.get_mut(&p.id) else {
                continue;
            };
            if new.players.iter().any(|q| q.id == p.id) || w.gone_at.is_some() {
                continue;
            }
            w.gone_at = Some(now);
            let due = w.left_at.map(|t| t.plus_us(self.ttl_us));
            if !self.evicting && due.is_none_or(|due| now < due) {
                bad.push(format!(
                    "player {}: seat {seat} given up at {:.3} s, before SESSION_TTL after \
                     its close at {:?}",
                    p.id,
                    now.0 as f64 / 1e6,
                    w.left_at.map(|t| t.0 as f64 / 1e6)
                ));
                continue;
            }
            let kept = match old.status {
                LobbyStatus::Waiting => new.players.len() + 1 == old.players.len(),
                LobbyStatus::Playing | LobbyStatus::Finished => {
                    new.players.len() == old.players.len()
                        && new
                            .players
                            .get(seat)
                            .is_some_and(|q| q.is_ai && q.name == p.name)
                }
            };
            if kept {
                self.expired_seen += 1;
            } else {
                bad.push(format!(
                    "player {}: seat {seat} of a {:?} lobby expired into {:?}",
                    p.id, old.status, new.players
                ));
            }
        }
        bad
    }

    /// Walkers still seated in a lobby someone sees (`seen(player_id)`) past their TTL
    /// and the slack; each is reported once.
    pub fn overdue(&mut self, now: Time, seen: impl Fn(&str) -> bool) -> Vec<String> {
        let mut bad = Vec::new();
        let Some(slack_us) = self.slack_us else {
            return bad;
        };
        for (id, w) in &mut self.walkers {
            let Some(left) = w.left_at else {
                continue;
            };
            let due = left.plus_us(self.ttl_us.saturating_add(slack_us));
            if w.gone_at.is_none() && !w.reported && now > due && seen(id) {
                w.reported = true;
                bad.push(format!(
                    "player {id}: still seated {:.1} s after its close (SESSION_TTL {:.1} s, \
                     slack {:.1} s)",
                    now.since_us(left) as f64 / 1e6,
                    self.ttl_us as f64 / 1e6,
                    slack_us as f64 / 1e6
                ));
            }
        }
        bad
    }
}
