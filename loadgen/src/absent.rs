//! The attacks of absent players (attack rows 3, 4, 5, 9, 10 and 13b): sessions, lobbies
//! and games left behind, lobby codes guessed, `busy` retried without waiting, and
//! quick-play tickets whose players walk away.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use async_io::Timer;
use async_tungstenite::tungstenite::Message;
use futures_lite::{FutureExt, StreamExt};
use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode, ServerMessage, decode_server};

use super::hostile::pause;
use super::net::{Ws, source_ip};
use crate::Ctx;
use crate::attack::{Attack, Window, tally};
use crate::game::{open, send};

/// What came back on an attack connection (one at a time, never stored: its size
/// does not matter).
#[allow(clippy::large_enum_variant)]
pub(super) enum Answer {
    Message(ServerMessage),
    /// Closed by the server (the close code, 1006 without one).
    Closed(u16),
    /// Nothing by the deadline.
    Timeout,
}

/// The next decodable message, a close, or a timeout at `until`.
pub(super) async fn answer(ws: &mut Ws, until: Instant) -> Answer {
    loop {
        let next = async { Some(ws.next().await) }
            .or(async {
                Timer::at(until).await;
                None
            })
            .await;
        match next {
            None => return Answer::Timeout,
            Some(Some(Ok(Message::Text(t)))) => {
                if let Ok(m) = decode_server(t.as_str()) {
                    return Answer::Message(m);
                }
            }
            Some(Some(Ok(Message::Close(frame)))) => {
                return Answer::Closed(frame.map_or(1005, |f| u16::from(f.code)));
            }
            Some(Some(Ok(_))) => {}
            Some(None | Some(Err(_))) => return Answer::Closed(1006),
        }
    }
}

/// Reads until `f` picks a message; every message on the way is tallied. `None` when
/// the connection closed (counted as cut) or nothing came within 5 s.
async fn until_msg<T>(
    ctx: &Ctx,
    ws: &mut Ws,
    attack: Attack,
    w: Window,
    mut f: impl FnMut(&ServerMessage) -> Option<T>,
) -> Option<T> {
    let until = (Instant::now() + Duration::from_secs(5)).min(w.end);
    loop {
        match answer(ws, until).await {
            Answer::Message(m) => {
                tally(&mut ctx.stats.borrow_mut().attack, attack, &m);
                if let Some(t) = f(&m) {
                    return Some(t);
                }
            }
            Answer::Closed(code) => {
                ctx.stats
                    .borrow_mut()
                    .attack
                    .ended(&format!("close {code}"));
                return None;
            }
            Answer::Timeout => return None,
        }
    }
}

/// Connects from `from` and says hello; the welcome, or `None` (counted).
async fn hello(ctx: &Ctx, from: IpAddr, attack: Attack, w: Window) -> Option<Ws> {
    let mut ws = open(ctx, from, true).await?;
    let _ = send(
        &mut ws,
        &ClientMessage::Hello {
            token: None,
            deltas: false,
            profile_key: None,
        },
    )
    .await;
    let welcomed = until_msg(ctx, &mut ws, attack, w, |m| match m {
        ServerMessage::Welcome { .. } => Some(true),
        ServerMessage::Error {
            code: ErrorCode::Busy,
            ..
        } => Some(false),
        _ => None,
    })
    .await;
    if welcomed == Some(true) {
        return Some(ws);
    }
    let mut st = ctx.stats.borrow_mut();
    if welcomed == Some(false) {
        st.attack.refusals.busy_connection += 1;
    }
    st.closed();
    None
}

/// Rows 3, 4 and 5: sessions seated in games (host + 2 AI, started) or in waiting
/// lobbies, left at once. Operation k comes from attack address k mod `--attack-ips`.
/// Session filling leaves games for its first half of `--attack-count`, lobbies after
/// (so that the oldest absent sessions are seated in running games).
pub(super) async fn abandon(ctx: &Ctx, attack: Attack, w: Window) {
    while ctx.attack_budget(w) {
        let op = {
            let mut st = ctx.stats.borrow_mut();
            st.attack.attempts += 1;
            st.attack.attempts - 1
        };
        let from = source_ip(1, op as usize % ctx.settings.attack_ips.max(1));
        let game = match attack {
            Attack::AbandonGames => true,
            Attack::SessionFill => op < ctx.settings.attack_count / 2,
            _ => false,
        };
        let Some(mut ws) = hello(ctx, from, attack, w).await else {
            pause(Duration::from_millis(20), w).await;
            continue;
        };
        if seat(ctx, &mut ws, attack, game, w).await {
            ctx.stats.borrow_mut().attack.accepted += 1;
        }
        // Gone without a goodbye, like a closed tab.
        drop(ws);
        ctx.stats.borrow_mut().closed();
    }
}

/// Creates a lobby and, for `game`, fills it with AI seats and starts it.
async fn seat(ctx: &Ctx, ws: &mut Ws, attack: Attack, game: bool, w: Window) -> bool {
    let create = ClientMessage::CreateLobby {
        name: "Gone".into(),
        public: false,
    };
    if !send(ws, &create).await {
        return false;
    }
    let refused = |m: &ServerMessage| matches!(m, ServerMessage::Error { .. });
    let lobby = until_msg(ctx, ws, attack, w, |m| match m {
        ServerMessage::State { lobby: Some(_), .. } => Some(true),
        m if refused(m) => Some(false),
        _ => None,
    })
    .await;
    if lobby != Some(true) || !game {
        return lobby == Some(true);
    }
    for _ in 0..2 {
        let _ = send(ws, &ClientMessage::AddAi { level: None }).await;
    }
    let full = until_msg(ctx, ws, attack, w, |m| match m {
        ServerMessage::State { lobby: Some(l), .. } if l.players.len() >= 3 => Some(true),
        m if refused(m) => Some(false),
        _ => None,
    })
    .await;
    if full != Some(true) || !send(ws, &ClientMessage::StartGame).await {
        return false;
    }
    let started = until_msg(ctx, ws, attack, w, |m| match m {
        ServerMessage::State { game: Some(_), .. } => Some(true),
        ServerMessage::Error {
            code: ErrorCode::Busy,
            ..
        } => {
            Some(false) // counted as busy_create by `tally`: the start was refused
        }
        m if refused(m) => Some(false),
        _ => None,
    })
    .await;
    started == Some(true)
}

/// A lobby code as the server writes them (6 of the 32 unambiguous characters).
fn random_code(state: &mut u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    (0..6)
        .map(|_| {
            // xorshift64: no entropy needed, only spread.
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            ALPHABET[(*state % 32) as usize] as char
        })
        .collect()
}

/// Row 9: `join_lobby` with random codes, as fast as the answers come (or at
/// `--attack-rate` per connection), reconnecting when cut.
pub(super) async fn code_guess(ctx: &Ctx, from: IpAddr, i: usize, w: Window) {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (i as u64 + 1);
    while ctx.attack_budget(w) {
        let Some(mut ws) = hello(ctx, from, Attack::CodeGuess, w).await else {
            pause(Duration::from_millis(50), w).await;
            continue;
        };
        let mut open_conn = true;
        while open_conn && ctx.attack_budget(w) {
            ctx.stats.borrow_mut().attack.attempts += 1;
            let guess = ClientMessage::JoinLobby {
                code: random_code(&mut rng),
                name: "Guess".into(),
            };
            if !send(&mut ws, &guess).await {
                break;
            }
            open_conn = paced_drain(ctx, &mut ws, Attack::CodeGuess, w).await;
        }
        let _ = ws.close(None).await;
        ctx.stats.borrow_mut().closed();
    }
}

/// Waits for the next answer (closed loop), then the `--attack-rate` pause if set;
/// false once the connection is closed.
async fn paced_drain(ctx: &Ctx, ws: &mut Ws, attack: Attack, w: Window) -> bool {
    let rate = ctx.settings.attack_rate;
    let open = until_msg(ctx, ws, attack, w, |m| {
        matches!(m, ServerMessage::Error { .. } | ServerMessage::State { .. }).then_some(())
    })
    .await
    .is_some();
    if open && rate > 0.0 {
        pause(Duration::from_secs_f64(1.0 / rate), w).await;
    }
    open
}

/// Row 10: `create_lobby` again at once after every `busy`, whatever `retry_after_ms`
/// said; a lobby it does get is left at once.
pub(super) async fn busy_retry(ctx: &Ctx, from: IpAddr, w: Window) {
    while ctx.attack_budget(w) {
        let Some(mut ws) = hello(ctx, from, Attack::BusyRetry, w).await else {
            pause(Duration::from_millis(50), w).await;
            continue;
        };
        let mut open_conn = true;
        while open_conn && ctx.attack_budget(w) {
            ctx.stats.borrow_mut().attack.attempts += 1;
            let create = ClientMessage::CreateLobby {
                name: "Again".into(),
                public: false,
            };
            if !send(&mut ws, &create).await {
                break;
            }
            let got = until_msg(ctx, &mut ws, Attack::BusyRetry, w, |m| match m {
                ServerMessage::State { lobby: Some(_), .. } => Some(true),
                ServerMessage::Error { .. } => Some(false),
                _ => None,
            })
            .await;
            open_conn = got.is_some();
            if got == Some(true) {
                let _ = send(&mut ws, &ClientMessage::LeaveLobby).await;
            }
            if ctx.settings.attack_rate > 0.0 {
                pause(Duration::from_secs_f64(1.0 / ctx.settings.attack_rate), w).await;
            }
        }
        let _ = ws.close(None).await;
        ctx.stats.borrow_mut().closed();
    }
}

/// Row 13b: a session queues for quick play and closes its socket (no close frame) as
/// soon as it is `queued` or seated; then the next one, from the same address. Attack
/// connection `i` asks for tables of `3 + i % 4`, so that tickets of every size wait.
/// `accepted` counts tickets queued, `found` those seated before they walked away.
pub(super) async fn quick_walk(ctx: &Ctx, from: IpAddr, i: usize, w: Window) {
    let seats = 3 + (i % 4) as u8;
    while ctx.attack_budget(w) {
        let Some(mut ws) = hello(ctx, from, Attack::QuickWalk, w).await else {
            pause(Duration::from_millis(50), w).await;
            continue;
        };
        ctx.stats.borrow_mut().attack.attempts += 1;
        let quick = ClientMessage::QuickPlay {
            name: "Walker".into(),
            seats: Some(seats),
        };
        if send(&mut ws, &quick).await {
            let got = until_msg(ctx, &mut ws, Attack::QuickWalk, w, |m| match m {
                ServerMessage::Queued { .. } => Some(false),
                ServerMessage::State { game: Some(_), .. } => Some(true),
                ServerMessage::Error { .. } => Some(false),
                _ => None,
            })
            .await;
            if got == Some(true) {
                ctx.stats.borrow_mut().attack.found += 1;
            }
        }
        drop(ws);
        ctx.stats.borrow_mut().closed();
        if ctx.settings.attack_rate > 0.0 {
            pause(Duration::from_secs_f64(1.0 / ctx.settings.attack_rate), w).await;
        }
    }
}
