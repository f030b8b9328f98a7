//! The quick-play checker (PROTOCOL.md 7.2), fed every input the core handled with its
//! outputs, in order. It keeps a shadow of the pool: a connection holds a ticket from
//! the `queued` it is sent until it is seated (its first `state` with a lobby), told
//! `busy`, cancels (`cancel_quick_play`) or closes. Promises:
//!
//! - no ticket outlives its player: the server's count of tickets
//!   (`gauges().quick_play_tickets`) is the shadow's after every input (a connection
//!   the core is closing may still count until its close is handled), and the
//!   server's own check of the pool (`check_quick_play`) passes; a player that
//!   cancelled is never seated (nor `matched`) until it asks again;
//! - no player is seated twice: each group the core seats (`Note::QuickPlaySeated`)
//!   has as many players as ticket holders seated by its views, in one lobby whose
//!   seats are all different players;
//! - every ticket is seated or refused within `QUICK_PLAY_WAIT` plus one
//!   `QUICK_PLAY_INTERVAL` and the server thread's slack ("Progress"); a refusal is
//!   `busy` with `retry_after_ms`, after which the player holds no ticket.

use std::collections::{BTreeMap, BTreeSet};

use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{Input, Note, Output};
use wizard_core::vocabulary::wire::{LobbyView, peek};
use wizard_core::{Server, Time};

use crate::host::core_task::Handled;
use crate::runs::report::Report;

/// A group being seated in the current input: its note's counts and what its views
/// showed so far.
#[derive(Debug)]
struct Seating {
    humans: u8,
    seats: usize,
    seen: u8,
    judged: bool,
}

/// The shadow of the pool and the figures of the run.
#[derive(Debug, Default)]
pub struct Quick {
    /// The server thread's slack (`checks/progress.rs`); None: no time bound judged.
    slack_us: Option<u64>,
    /// Ticket holders and when their ticket joined the pool.
    tickets: BTreeMap<ConnId, Time>,
    by_age: BTreeSet<(Time, ConnId)>,
    /// Ticket holders the core is closing (their close not yet handled).
    closing: BTreeSet<ConnId>,
    /// Players who cancelled and have not asked again.
    cancelled: BTreeSet<ConnId>,
    /// Tickets reported late already.
    late: BTreeSet<ConnId>,
    wait_us_max: u64,
    counts: BTreeMap<&'static str, u64>,
}

impl Quick {
    pub fn new(slack_us: Option<u64>) -> Quick {
        Quick {
            slack_us,
            ..Quick::default()
        }
    }

    /// The process was killed: the restored one holds no ticket.
    pub fn restarted(&self) -> Quick {
        Quick {
            slack_us: self.slack_us,
            wait_us_max: self.wait_us_max,
            counts: self.counts.clone(),
            ..Quick::default()
        }
    }

    fn count(&mut self, r: &mut Report, what: &'static str) {
        let n = self.counts.entry(what).or_insert(0);
        *n += 1;
        r.counters.insert(what.to_string(), *n);
        r.cover(what);
    }

    fn drop_ticket(&mut self, conn: ConnId) -> Option<Time> {
        let since = self.tickets.remove(&conn)?;
        self.by_age.remove(&(since, conn));
        self.closing.remove(&conn);
        self.late.remove(&conn);
        Some(since)
    }

    /// `cancel_quick_play` handled: the player's ticket, if it held one, is gone.
    fn cancel(&mut self, r: &mut Report, conn: ConnId) {
        if self.drop_ticket(conn).is_some() {
            self.cancelled.insert(conn);
            self.count(r, "quick_cancelled");
        }
    }

    /// The connection's close handled: its ticket, if it held one, is gone.
    fn closed(&mut self, r: &mut Report, conn: ConnId) {
        self.cancelled.remove(&conn);
        if self.drop_ticket(conn).is_some() {
            self.count(r, "quick_walked_away");
        }
    }

    /// One input the core handled, with its outputs.
    pub fn handled(
        &mut self,
        r: &mut Report,
        h: &Handled,
        input: &Input,
        out: &[Output],
        server: &Server,
    ) {
        let now = h.now;
        match (input, h.message) {
            (Input::Message { conn, .. }, Some("quick_play")) => {
                self.cancelled.remove(conn);
            }
            (Input::Message { conn, .. }, Some("cancel_quick_play")) => self.cancel(r, *conn),
            (Input::Closed { conn }, _) => self.closed(r, *conn),
            _ => {}
        }
        // A `busy` to the connection whose `quick_play` this is answers it.
        let asker = h.conn.filter(|_| h.message == Some("quick_play"));
        let mut seating: Option<Seating> = None;
        for o in out {
            match o {
                Output::Note(Note::QuickPlaySeated { humans, ai, .. }) => {
                    self.end_group(r, now, seating.take());
                    let seats = usize::from(*humans) + usize::from(*ai);
                    seating = Some(Seating {
                        humans: *humans,
                        seats,
                        seen: 0,
                        judged: false,
                    });
                    self.count(
                        r,
                        if *ai > 0 {
                            "quick_seated_with_ai"
                        } else {
                            "quick_seated_full"
                        },
                    );
                }
                Output::Close { conn, .. } if self.tickets.contains_key(conn) => {
                    self.closing.insert(*conn);
                }
                Output::Send { conn, text, .. } => {
                    let asked = asker == Some(*conn);
                    self.sent(r, now, *conn, text, asked, seating.as_mut());
                }
                _ => {}
            }
        }
        self.end_group(r, now, seating);
        self.judge_pool(r, now, server);
    }

    /// A frame to `conn`: a ticket confirmed, a player seated, or a refusal.
    fn sent(
        &mut self,
        r: &mut Report,
        now: Time,
        conn: ConnId,
        text: &str,
        asked: bool,
        seating: Option<&mut Seating>,
    ) {
        match peek::frame_type(text) {
            "queued" => {
                if let std::collections::btree_map::Entry::Vacant(e) = self.tickets.entry(conn) {
                    e.insert(now);
                    self.by_age.insert((now, conn));
                }
                self.count(r, "quick_queued");
            }
            "matched" if self.cancelled.contains(&conn) => {
                r.violation(now, format!("conn {conn}: matched after its cancel"));
            }
            "error" if text.contains("\"code\":\"busy\"") => {
                let held = self.drop_ticket(conn).is_some();
                if !(held || asked) {
                    return;
                }
                if !text.contains("\"retry_after_ms\":") {
                    r.violation(
                        now,
                        format!("conn {conn}: quick play refused busy without retry_after_ms"),
                    );
                }
                self.count(r, "quick_refused_busy");
            }
            "state" => {
                let Some(parts) = peek::state_parts(text, "") else {
                    return;
                };
                if parts.lobby == "null" {
                    return;
                }
                if self.cancelled.remove(&conn) {
                    r.violation(
                        now,
                        format!("conn {conn}: seated after its cancel_quick_play"),
                    );
                }
                let Some(since) = self.drop_ticket(conn) else {
                    return;
                };
                let waited = now.since_us(since);
                self.wait_us_max = self.wait_us_max.max(waited);
                r.counters
                    .insert("quick_wait_ms_max".into(), self.wait_us_max / 1000);
                self.count(r, "quick_seated");
                let Some(g) = seating else {
                    r.violation(
                        now,
                        format!("conn {conn}: a quick-play ticket seated without a group"),
                    );
                    return;
                };
                g.seen = g.seen.saturating_add(1);
                if !g.judged {
                    g.judged = true;
                    judge_lobby(r, now, parts.lobby, g.seats);
                }
            }
            _ => {}
        }
    }

    /// A group's views are all out: as many ticket holders seated as its note says.
    fn end_group(&mut self, r: &mut Report, now: Time, g: Option<Seating>) {
        if let Some(g) = g
            && g.seen != g.humans
        {
            r.violation(
                now,
                format!(
                    "a quick-play group of {} players seated {} ticket holders",
                    g.humans, g.seen
                ),
            );
        }
    }

    /// The pool against the server's, and every ticket within its time.
    fn judge_pool(&mut self, r: &mut Report, now: Time, server: &Server) {
        let held = server.gauges().quick_play_tickets;
        let (lo, hi) = (
            (self.tickets.len() - self.closing.len()) as u64,
            self.tickets.len() as u64,
        );
        if held < lo || held > hi {
            r.violation(
                now,
                format!("the server holds {held} quick-play tickets, its players {lo} to {hi}"),
            );
        }
        if let Err(e) = server.check_quick_play() {
            r.violation(now, format!("quick play: {e}"));
        }
        let Some(slack) = self.slack_us else {
            return;
        };
        let c = server.config();
        let bound = c.quick_play_wait_us + c.quick_play_interval_us + slack;
        r.counters
            .insert("quick_wait_bound_ms".into(), bound / 1000);
        let late: Vec<(Time, ConnId)> = self
            .by_age
            .iter()
            .take_while(|(since, _)| now.since_us(*since) > bound)
            .copied()
            .collect();
        for (since, conn) in late {
            if self.late.insert(conn) {
                r.violation(
                    now,
                    format!(
                        "conn {conn}: a quick-play ticket waited {:.1} s unseated (bound {:.1} s)",
                        now.since_us(since) as f64 / 1e6,
                        bound as f64 / 1e6
                    ),
                );
            }
        }
    }
}

/// The lobby a group is seated in: its size, every seat a different player.
fn judge_lobby(r: &mut Report, now: Time, lobby: &str, seats: usize) {
    let Ok(l) = serde_json::from_str::<LobbyView>(lobby) else {
        r.violation(now, "a quick-play lobby's view does not decode".into());
        return;
    };
    let ids: BTreeSet<&str> = l.players.iter().map(|p| p.id.as_str()).collect();
    if ids.len() != l.players.len() {
        r.violation(now, format!("lobby {}: a player seated twice", l.code));
    }
    if l.players.len() != seats {
        r.violation(
            now,
            format!(
                "lobby {}: {} seats for a quick-play group of {seats}",
                l.code,
                l.players.len()
            ),
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use wizard_core::vocabulary::config::Config;
    use wizard_core::vocabulary::io::Delivery;
    use wizard_core::vocabulary::rng::Seed;
    use wizard_core::vocabulary::wire::ClientMessage;

    use super::*;
    use crate::model::cost::WorkKind;

    const SLACK_US: u64 = 1_000_000;

    fn handled(now_us: u64, conn: u64, message: Option<&'static str>) -> Handled {
        Handled {
            now: Time(now_us),
            conn: Some(ConnId(conn)),
            kind: WorkKind::Message,
            message,
            ai_decoded: None,
            ai_request_id: None,
            is_sample: false,
            is_timeout: false,
            dropped: false,
            messages_accepted: 1,
            lobbies_created: 0,
        }
    }

    fn send(conn: u64, text: &str) -> Output {
        Output::Send {
            conn: ConnId(conn),
            text: text.to_string(),
            delivery: Delivery::Every,
        }
    }

    fn quick_play(conn: u64) -> Input {
        Input::Message {
            conn: ConnId(conn),
            message: ClientMessage::QuickPlay {
                name: "q".into(),
                seats: Some(3),
            },
        }
    }

    fn violations_with(r: &Report, what: &str) -> usize {
        r.violations.iter().filter(|v| v.contains(what)).count()
    }

    /// A `queued` the server's pool does not hold (the shadow says one ticket, the
    /// server none) is a ticket count that disagrees.
    #[test]
    fn a_ticket_the_server_does_not_hold_is_caught() {
        let server = Server::new(Config::default(), Seed::from_u64(1), Time::ZERO);
        let (mut q, mut r) = (Quick::new(Some(SLACK_US)), Report::default());
        let out = [send(7, r#"{"type":"queued","since_ms":0}"#)];
        q.handled(
            &mut r,
            &handled(0, 7, Some("quick_play")),
            &quick_play(7),
            &out,
            &server,
        );
        assert_eq!(
            violations_with(&r, "quick-play tickets"),
            1,
            "{:?}",
            r.violations
        );
    }

    /// A player that cancelled and is then shown a lobby was seated after its cancel;
    /// a ticket older than the bound is reported once.
    #[test]
    fn a_seat_after_a_cancel_and_a_ticket_past_its_wait_are_caught() {
        let server = Server::new(Config::default(), Seed::from_u64(1), Time::ZERO);
        let (mut q, mut r) = (Quick::new(Some(SLACK_US)), Report::default());
        let queued = [send(7, r#"{"type":"queued","since_ms":0}"#)];
        q.handled(
            &mut r,
            &handled(0, 7, Some("quick_play")),
            &quick_play(7),
            &queued,
            &server,
        );
        let cancel = Input::Message {
            conn: ConnId(7),
            message: ClientMessage::CancelQuickPlay,
        };
        q.handled(
            &mut r,
            &handled(1, 7, Some("cancel_quick_play")),
            &cancel,
            &[],
            &server,
        );
        assert_eq!(r.coverage.get("quick_cancelled"), Some(&1));
        let seat = [send(
            7,
            r#"{"type":"state","lobby":{"code":"ABCDEF"},"game":null,"events":[]}"#,
        )];
        let other = Input::Timeout;
        q.handled(&mut r, &handled(2, 8, None), &other, &seat, &server);
        assert_eq!(
            violations_with(&r, "seated after its cancel"),
            1,
            "{:?}",
            r.violations
        );

        q.handled(
            &mut r,
            &handled(3, 9, Some("quick_play")),
            &quick_play(9),
            &queued_to(9),
            &server,
        );
        let c = server.config();
        let bound = c.quick_play_wait_us + c.quick_play_interval_us + SLACK_US;
        q.handled(&mut r, &handled(3 + bound, 8, None), &other, &[], &server);
        assert_eq!(violations_with(&r, "unseated"), 0, "{:?}", r.violations);
        q.handled(&mut r, &handled(4 + bound, 8, None), &other, &[], &server);
        q.handled(&mut r, &handled(5 + bound, 8, None), &other, &[], &server);
        assert_eq!(violations_with(&r, "unseated"), 1, "{:?}", r.violations);
    }

    fn queued_to(conn: u64) -> [Output; 1] {
        [send(conn, r#"{"type":"queued","since_ms":0}"#)]
    }
}
