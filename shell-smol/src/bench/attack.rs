//! Attack modes: connection storms, message floods and lobby spam, bounded in count
//! and time, against loopback only.

use std::rc::Rc;
use std::time::{Duration, Instant};

use async_io::Timer;
use async_tungstenite::tungstenite::Message;
use futures_lite::{FutureExt, StreamExt};
use wizard_core::wire::{ClientMessage, ErrorCode, ServerMessage, decode_server};

use super::net::{Ws, source_ip};
use super::*;

pub(super) async fn attack_task(ctx: Rc<Ctx>, attack: Attack, i: usize) {
    Timer::at(ctx.window_start).await;
    let s = &ctx.settings;
    let from = source_ip(1, i % s.attack_ips.max(1));
    let budget = |ctx: &Ctx| {
        let st = ctx.stats.borrow();
        Instant::now() < ctx.deadline && st.attack.attempts < ctx.settings.attack_count
    };
    match attack {
        Attack::Storm => {
            while budget(&ctx) {
                ctx.stats.borrow_mut().attack.attempts += 1;
                let Some(mut ws) = open(&ctx, from, true).await else {
                    Timer::after(Duration::from_millis(1)).await;
                    continue;
                };
                let _ = send(&mut ws, &ClientMessage::Hello { token: None }).await;
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
        Attack::Flood | Attack::LobbySpam => {
            while budget(&ctx) {
                let Some(mut ws) = open(&ctx, from, true).await else {
                    Timer::after(Duration::from_millis(100)).await;
                    continue;
                };
                let _ = send(&mut ws, &ClientMessage::Hello { token: None }).await;
                let message = if attack == Attack::Flood {
                    ClientMessage::LeaveLobby
                } else {
                    ClientMessage::CreateLobby {
                        name: "Spam".into(),
                    }
                };
                let mut open_conn = true;
                let mut sent = 0u64;
                while open_conn && budget(&ctx) {
                    ctx.stats.borrow_mut().attack.attempts += 1;
                    if !send(&mut ws, &message).await {
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
            Some(Ok(Message::Text(t))) => match decode_server(t.as_str()) {
                Ok(ServerMessage::State { lobby, .. })
                    if attack == Attack::Flood || lobby.is_some() =>
                {
                    st.attack.accepted += 1;
                }
                Ok(ServerMessage::Error { code, .. }) => match code {
                    ErrorCode::RateLimited => st.attack.refusals.rate_limited += 1,
                    ErrorCode::Busy => st.attack.refusals.busy_create += 1,
                    _ => {}
                },
                _ => {}
            },
            Some(Ok(Message::Close(frame))) => {
                match frame.map_or(0, |f| u16::from(f.code)) {
                    1008 => st.attack.refusals.close_1008 += 1,
                    1013 => st.attack.refusals.close_1013 += 1,
                    _ => {}
                }
                return false;
            }
            Some(Ok(_)) => {}
            None | Some(Err(_)) => return false,
        }
    }
}
