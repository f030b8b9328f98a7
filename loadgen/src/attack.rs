//! Attack modes, bounded in count and time, against loopback only: the catalogue of
//! the attack table (one `Attack` per row) and the classic storm, flood and lobby spam. The
//! raw-socket attacks live in `hostile.rs`, those of absent players in `absent.rs`,
//! protocol violations and look-alike names in `violations.rs`.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use async_io::Timer;
use async_tungstenite::tungstenite::Message;
use futures_lite::{FutureExt, StreamExt};
use serde_json::{Value, json};
use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode, ServerMessage, decode_server};

use super::net::{Ws, source_ip};
use crate::game::{open, send};
use crate::{Ctx, Refusals};

/// An attack mode, run beside the games (or alone with `--games 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attack {
    /// Open connections as fast as possible, say hello, close.
    Storm,
    /// Connections that send messages as fast as they can and reconnect at once after
    /// each close (row 8 of the attack table: every 1008 is followed by a new connection).
    Flood,
    /// Connections that create lobbies as fast as they can.
    LobbySpam,
    /// Row 1: a text frame with FIN=0, then empty continuation frames forever.
    FragmentFlood,
    /// Row 2: TCP connections that never send a byte (`--attack-ips 1`: one address).
    Silent,
    /// Row 3: sessions left behind (hello then disconnect; seated in running games,
    /// in waiting lobbies, or not at all), to fill `MAX_SESSIONS`.
    SessionFill,
    /// Row 4: games started (host + 2 AI) and abandoned at once.
    AbandonGames,
    /// Row 5: lobbies created and abandoned at once.
    AbandonLobbies,
    /// Row 6: websocket pings as fast as possible from a client that never reads.
    PingFlood,
    /// Row 7: a client in its own lobby that asks for states and never reads them.
    NoRead,
    /// Row 8: the flood, from `--attack-ips` addresses, reconnecting after every 1008.
    ReconnectFlood,
    /// Row 9: `join_lobby` with random codes.
    CodeGuess,
    /// Row 10: naive retriers of `create_lobby` that ignore `retry_after_ms`.
    BusyRetry,
    /// Row 11: the catalogue of malformed frames, upgrades and early messages.
    Violations,
    /// Row 12: look-alike names joining a lobby whose host is `Host`.
    Names,
    /// Row 13a: `quick_play` and `cancel_quick_play` in turn as fast as the server
    /// reads them (one address with `--attack-ips 1`), reconnecting after every 1008.
    QuickCancel,
    /// Row 13b: sessions that queue for quick play (tables of 3 to 6 in turn) and close
    /// their connection once `queued` (or seated), from `--attack-ips` addresses.
    QuickWalk,
}

/// Every attack, in the order of the attack table (the classic three first).
pub const ATTACKS: [Attack; 17] = [
    Attack::Storm,
    Attack::Flood,
    Attack::LobbySpam,
    Attack::FragmentFlood,
    Attack::Silent,
    Attack::SessionFill,
    Attack::AbandonGames,
    Attack::AbandonLobbies,
    Attack::PingFlood,
    Attack::NoRead,
    Attack::ReconnectFlood,
    Attack::CodeGuess,
    Attack::BusyRetry,
    Attack::Violations,
    Attack::Names,
    Attack::QuickCancel,
    Attack::QuickWalk,
];

impl Attack {
    pub fn name(self) -> &'static str {
        match self {
            Attack::Storm => "storm",
            Attack::Flood => "flood",
            Attack::LobbySpam => "lobby-spam",
            Attack::FragmentFlood => "fragment-flood",
            Attack::Silent => "silent",
            Attack::SessionFill => "session-fill",
            Attack::AbandonGames => "abandon-games",
            Attack::AbandonLobbies => "abandon-lobbies",
            Attack::PingFlood => "ping-flood",
            Attack::NoRead => "no-read",
            Attack::ReconnectFlood => "reconnect-flood",
            Attack::CodeGuess => "code-guess",
            Attack::BusyRetry => "busy-retry",
            Attack::Violations => "violations",
            Attack::Names => "names",
            Attack::QuickCancel => "quick-cancel",
            Attack::QuickWalk => "quick-walk",
        }
    }

    pub fn parse(s: &str) -> Option<Attack> {
        ATTACKS.into_iter().find(|a| a.name() == s)
    }

    /// Every name, for usage texts.
    pub fn names() -> String {
        ATTACKS.map(Attack::name).join("|")
    }
}

/// What the attack tasks saw.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct AttackStats {
    /// Operations: connections opened, messages or frames sent, lobbies asked for.
    pub attempts: u64,
    /// What the server took: welcomes, answered messages, lobbies or games created.
    pub accepted: u64,
    pub refusals: Refusals,
    /// Attack connections the server ended (a close frame, a reset, a failed write).
    pub cut: u64,
    /// How attack connections ended, by name (`close 1008`, `dropped (1006)`, ...).
    pub endings: BTreeMap<String, u64>,
    /// `busy` answers without `retry_after_ms`.
    pub busy_without_retry_after: u64,
    /// Per-case outcomes (violations, names): case name to what the server did.
    pub cases: BTreeMap<String, String>,
    /// Cases whose outcome is not the target.
    pub mismatches: BTreeMap<String, String>,
    /// Longest time in ms a connection was held open before the server ended it.
    pub held_ms_max: u64,
    /// Code guessing: lobbies found.
    pub found: u64,
}

impl AttackStats {
    pub fn ended(&mut self, how: &str) {
        self.cut += 1;
        *self.endings.entry(how.to_owned()).or_default() += 1;
    }

    pub fn to_json(&self, window_s: f64) -> Value {
        let a = self;
        json!({
            "attempts": a.attempts,
            "accepted": a.accepted,
            "accepted_per_s": (a.accepted as f64 / window_s.max(1e-9)).round(),
            "refused": a.refusals.total(),
            "busy": a.refusals.busy_create + a.refusals.busy_connection + a.refusals.busy_start,
            "busy_without_retry_after": a.busy_without_retry_after,
            "rate_limited": a.refusals.rate_limited,
            "close_1013": a.refusals.close_1013,
            "close_1008": a.refusals.close_1008,
            "http_503": a.refusals.http_503,
            "connect_failed": a.refusals.connect_failed,
            "cut": a.cut,
            "endings": a.endings,
            "held_ms_max": a.held_ms_max,
            "found": a.found,
            "cases": a.cases,
            "mismatches": a.mismatches,
        })
    }
}

/// When one attack phase runs.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub start: Instant,
    pub end: Instant,
}

impl Ctx {
    /// Whether attack task work may go on: inside the window and under the count.
    pub(super) fn attack_budget(&self, w: Window) -> bool {
        Instant::now() < w.end && self.stats.borrow().attack.attempts < self.settings.attack_count
    }
}

/// Runs attack connection `i` within `w`.
pub(super) async fn attack_task(ctx: Rc<Ctx>, attack: Attack, i: usize, w: Window) {
    Timer::at(w.start).await;
    let from = source_ip(1, i % ctx.settings.attack_ips.max(1));
    match attack {
        Attack::Storm => storm(&ctx, from, w).await,
        Attack::Flood | Attack::ReconnectFlood | Attack::LobbySpam | Attack::QuickCancel => {
            flood(&ctx, attack, from, w).await
        }
        Attack::QuickWalk => super::absent::quick_walk(&ctx, from, i, w).await,
        Attack::FragmentFlood => super::hostile::fragment_flood(&ctx, from, w).await,
        Attack::Silent => super::hostile::silent(&ctx, from, w).await,
        Attack::PingFlood => super::hostile::ping_flood(&ctx, from, w).await,
        Attack::NoRead => super::hostile::no_read(&ctx, from, w).await,
        Attack::SessionFill | Attack::AbandonGames | Attack::AbandonLobbies => {
            super::absent::abandon(&ctx, attack, w).await
        }
        Attack::CodeGuess => super::absent::code_guess(&ctx, from, i, w).await,
        Attack::BusyRetry => super::absent::busy_retry(&ctx, from, w).await,
        Attack::Violations => super::violations::violations(&ctx, i, w).await,
        Attack::Names => super::violations::names(&ctx, i, w).await,
    }
}

async fn storm(ctx: &Rc<Ctx>, from: std::net::IpAddr, w: Window) {
    let ctx = ctx.clone();
    let budget = |ctx: &Ctx| ctx.attack_budget(w);
    while budget(&ctx) {
        ctx.stats.borrow_mut().attack.attempts += 1;
        let Some(mut ws) = open(&ctx, from, true).await else {
            Timer::after(Duration::from_millis(1)).await;
            continue;
        };
        let _ = send(
            &mut ws,
            &ClientMessage::Hello {
                token: None,
                deltas: false,
                profile_key: None,
            },
        )
        .await;
        let outcome = async {
            while let Some(Ok(message)) = ws.next().await {
                match message {
                    Message::Text(t) => match decode_server(t.as_str()) {
                        Ok(ServerMessage::Welcome { .. }) => return Some(true),
                        Ok(ServerMessage::Error {
                            code: ErrorCode::Busy,
                            ..
                        }) => return Some(false),
                        _ => {}
                    },
                    Message::Close(_) => return None,
                    _ => {}
                }
            }
            None
        }
        .or(async {
            Timer::after(Duration::from_secs(5)).await;
            None
        })
        .await;
        {
            let mut st = ctx.stats.borrow_mut();
            match outcome {
                Some(true) => st.attack.accepted += 1,
                Some(false) => {
                    st.attack.refusals.busy_connection += 1;
                    st.attack.refusals.close_1013 += 1;
                }
                None => st.attack.refusals.connect_failed += 1,
            }
            st.closed();
        }
        let _ = ws.close(None).await;
    }
}

async fn flood(ctx: &Rc<Ctx>, attack: Attack, from: std::net::IpAddr, w: Window) {
    let ctx = ctx.clone();
    let budget = |ctx: &Ctx| ctx.attack_budget(w);
    while budget(&ctx) {
        let Some(mut ws) = open(&ctx, from, true).await else {
            Timer::after(Duration::from_millis(100)).await;
            continue;
        };
        let _ = send(
            &mut ws,
            &ClientMessage::Hello {
                token: None,
                deltas: false,
                profile_key: None,
            },
        )
        .await;
        let message = match attack {
            Attack::LobbySpam => ClientMessage::CreateLobby {
                name: "Spam".into(),
                public: false,
            },
            // For the table size the honest quick players want.
            Attack::QuickCancel => ClientMessage::QuickPlay {
                name: "Churn".into(),
                seats: Some(u8::try_from(ctx.settings.seats).unwrap_or(u8::MAX)),
            },
            _ => ClientMessage::LeaveLobby,
        };
        let mut open_conn = true;
        let mut sent = 0u64;
        while open_conn && budget(&ctx) {
            ctx.stats.borrow_mut().attack.attempts += 1;
            let cancel = attack == Attack::QuickCancel && sent % 2 == 1;
            let next = if cancel {
                &ClientMessage::CancelQuickPlay
            } else {
                &message
            };
            if !send(&mut ws, next).await {
                break;
            }
            sent += 1;
            // Read whatever arrived; now and then wait a little for answers.
            let wait = if sent.is_multiple_of(64) {
                Duration::from_millis(2)
            } else {
                Duration::ZERO
            };
            open_conn = drain(&ctx, &mut ws, attack, wait).await;
        }
        if open_conn {
            drain(&ctx, &mut ws, attack, Duration::from_millis(300)).await;
        }
        let _ = ws.close(None).await;
        ctx.stats.borrow_mut().closed();
    }
}

/// Reads the attack connection's answers until none came for `wait`; false once the
/// connection is closed.
pub(super) async fn drain(ctx: &Ctx, ws: &mut Ws, attack: Attack, wait: Duration) -> bool {
    loop {
        let next = if wait.is_zero() {
            match futures_lite::future::poll_once(ws.next()).await {
                Some(next) => next,
                None => return true,
            }
        } else {
            let timed = async { Some(ws.next().await) }
                .or(async {
                    Timer::after(wait).await;
                    None
                })
                .await;
            match timed {
                Some(next) => next,
                None => return true,
            }
        };
        let mut st = ctx.stats.borrow_mut();
        match next {
            Some(Ok(Message::Text(t))) => {
                if let Ok(message) = decode_server(t.as_str()) {
                    tally(&mut st.attack, attack, &message);
                }
            }
            Some(Ok(Message::Close(frame))) => {
                let code = frame.map_or(0, |f| u16::from(f.code));
                match code {
                    1008 => st.attack.refusals.close_1008 += 1,
                    1013 => st.attack.refusals.close_1013 += 1,
                    _ => {}
                }
                st.attack.ended(&format!("close {code}"));
                return false;
            }
            Some(Ok(_)) => {}
            None | Some(Err(_)) => {
                st.attack.ended("dropped (1006)");
                return false;
            }
        }
    }
}

/// Counts one answer to an attack connection.
pub(super) fn tally(a: &mut AttackStats, attack: Attack, message: &ServerMessage) {
    match message {
        ServerMessage::State { lobby, .. } => match attack {
            Attack::CodeGuess => a.found += u64::from(lobby.is_some()),
            Attack::LobbySpam | Attack::BusyRetry => a.accepted += u64::from(lobby.is_some()),
            Attack::Flood | Attack::ReconnectFlood => a.accepted += 1,
            // The others count what they got themselves.
            _ => {}
        },
        ServerMessage::Queued { .. }
            if matches!(attack, Attack::QuickCancel | Attack::QuickWalk) =>
        {
            a.accepted += 1
        }
        ServerMessage::Error {
            code,
            retry_after_ms,
            ..
        } => match code {
            ErrorCode::RateLimited => a.refusals.rate_limited += 1,
            ErrorCode::Busy => {
                a.refusals.busy_create += 1;
                if retry_after_ms.is_none() {
                    a.busy_without_retry_after += 1;
                }
            }
            ErrorCode::NotFound if attack == Attack::CodeGuess => a.accepted += 1,
            _ => {}
        },
        _ => {}
    }
}
