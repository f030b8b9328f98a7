//! The games of a run: hosts and guests playing open-loop, counting moves, latencies
//! and refusals.

use std::rc::Rc;
use std::time::{Duration, Instant};

use async_io::Timer;
use async_tungstenite::tungstenite::Message;
use futures_lite::{FutureExt, StreamExt};
use wizard_core::vocabulary::game::{Action, Phase};
use wizard_core::vocabulary::wire::held::{HeldState, Taken};
use wizard_core::vocabulary::wire::{
    ClientMessage, ErrorCode, LobbyStatus, ServerMessage, decode_server, encode_client, peek,
};

use super::net::{Ws, connect, source_ip};
use super::seen::Seen;
use crate::{Ctx, Exec};

/// Where a player stands in its script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Waiting for the state after hello.
    Hello,
    /// Host: `create_lobby` sent.
    Creating,
    /// Host: waiting for every seat; guests: `join_lobby` sent.
    Filling,
    /// Host: `start_game` sent.
    Starting,
    Playing,
    /// Host: `return_to_lobby` sent after a finished game.
    Returned,
}

/// One game: the host and its guests, each on its own connection.
pub(super) async fn game(ex: Exec, ctx: Rc<Ctx>, g: usize, at: Instant, one_game: bool) {
    Timer::at(at).await;
    let (code_tx, code_rx) = async_channel::bounded::<String>(8);
    let guests: Vec<_> = (1..ctx.settings.humans)
        .map(|h| {
            let ctx = ctx.clone();
            let code_rx = code_rx.clone();
            ex.spawn(async move {
                if let Ok(code) = code_rx.recv().await {
                    player(ctx, g, h, at, one_game, Some(code), None).await;
                }
            })
        })
        .collect();
    drop(code_rx);
    player(ctx.clone(), g, 0, at, one_game, None, Some(code_tx)).await;
    for guest in guests {
        guest.await;
    }
}

/// A pending move: when to send it, what, and when it was meant to be sent (later
/// than that only when a rate-limited send is repeated).
#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    at: Instant,
    intended: Instant,
    action: Action,
}

pub(super) enum Wake {
    Message(Option<Result<Message, async_tungstenite::tungstenite::Error>>),
    Timer,
}

/// One bot human. The host (`code_tx` set) creates the lobby, adds the AI seats and
/// starts games; guests join with `code`.
pub(super) async fn player(
    ctx: Rc<Ctx>,
    g: usize,
    h: usize,
    arrival: Instant,
    one_game: bool,
    code: Option<String>,
    code_tx: Option<async_channel::Sender<String>>,
) {
    let s = &ctx.settings;
    let index = g * s.humans + h;
    let from = source_ip(0, index / s.per_ip);
    // A guest joins at its lobby's shard; a host creates at the run's path.
    let path = super::shards::route(&ctx, code.as_deref());
    let Some(mut ws) = open_at(&ctx, from, false, &path).await else {
        return;
    };
    let host = code_tx.is_some();
    let mut step = Step::Hello;
    let mut accepting = true;
    let mut pending: Option<Pending> = None;
    let mut awaiting: Option<Pending> = None;
    // Moves scheduled, numbering the think times (`--think-jitter-ms`).
    let mut moves_scheduled: u64 = 0;
    let mut retry_at: Option<Instant> = None;
    let mut you: Option<u8> = None;
    let mut ai_needed = s.seats - s.humans;
    let mut seen = Seen::default();
    let mut token: Option<String> = None;
    // Set when the connection ended before the run did: its close code (1006: none).
    let mut ended: Option<u16> = None;
    // The last human of each game is the one that leaves and comes back.
    let rejoins = !s.rejoin_every.is_zero() && h + 1 == s.humans;
    let mut rejoin_due = false;
    let mut last_rejoin = Instant::now();
    // `resume`: the game part of the last state, and when the connection ended.
    let mut last_game = String::new();
    let mut broke: Option<(Instant, String)> = None;
    // With deltas: the state as this bot holds it (PROTOCOL.md 7.5).
    let mut held = HeldState::default();
    let _ = send(
        &mut ws,
        &ClientMessage::Hello {
            token: None,
            deltas: s.deltas,
            profile_key: None,
        },
    )
    .await;
    loop {
        if let Some(code) = ended.take() {
            // The connection ended before the run: come back with the token if the
            // server restarted or crashed (`resume`), or stop.
            let Some(t) = token.as_deref().filter(|_| s.resume && resumable(code)) else {
                break;
            };
            {
                let mut st = ctx.stats.borrow_mut();
                st.closed();
                *st.resume_ended.entry(code).or_default() += 1;
            }
            broke = Some((Instant::now(), std::mem::take(&mut last_game)));
            let Some(back) = super::resume::reconnect(&ctx, from, t, index).await else {
                ctx.stats.borrow_mut().resume_failed += 1;
                return;
            };
            ws = back;
            seen = Seen::default();
            (pending, awaiting, retry_at) = (None, None, None);
        }
        if rejoin_due && pending.is_none() && awaiting.is_none() {
            rejoin_due = false;
            let _ = ws.close(None).await;
            ctx.stats.borrow_mut().closed();
            let Some(back) = rejoin(&ctx, from, token.as_deref()).await else {
                return;
            };
            ws = back;
            seen = Seen::default();
            last_rejoin = Instant::now();
        }
        let mut wake = ctx.deadline;
        if let Some(p) = pending {
            wake = wake.min(p.at);
        }
        if let Some(r) = retry_at {
            wake = wake.min(r);
        }
        let event = async { Wake::Message(ws.next().await) }
            .or(async {
                Timer::at(wake).await;
                Wake::Timer
            })
            .await;
        let now = Instant::now();
        match event {
            Wake::Timer => {
                if now >= ctx.deadline {
                    break;
                }
                if let Some(p) = pending.filter(|p| p.at <= now) {
                    pending = None;
                    awaiting = Some(p);
                    if !send(&mut ws, &ClientMessage::Action { action: p.action }).await {
                        break;
                    }
                }
                if retry_at.is_some_and(|r| r <= now) {
                    retry_at = None;
                    let message = match step {
                        Step::Creating => ClientMessage::CreateLobby {
                            name: format!("Bench {g}"),
                            public: false,
                        },
                        _ => ClientMessage::StartGame,
                    };
                    if !send(&mut ws, &message).await {
                        break;
                    }
                }
            }
            Wake::Message(None) | Wake::Message(Some(Err(_))) => {
                if now >= ctx.deadline {
                    break;
                }
                ctx.stats.borrow_mut().honest_closed += 1;
                ended = Some(1006);
            }
            Wake::Message(Some(Ok(Message::Close(frame)))) => {
                let code = frame.map_or(1005, |f| u16::from(f.code));
                let mut st = ctx.stats.borrow_mut();
                if now >= ctx.deadline {
                    break;
                }
                st.honest_closed += 1;
                match code {
                    1013 => st.refusals.close_1013 += 1,
                    1008 => st.refusals.close_1008 += 1,
                    _ => {}
                }
                ended = Some(code);
            }
            Wake::Message(Some(Ok(Message::Text(text))))
                if matches!(peek::frame_type(&text), "state" | "delta") =>
            {
                ctx.stats.borrow_mut().state_bytes += text.len() as u64;
                let text = if s.deltas {
                    match held.take(&text) {
                        Ok(Taken::Full | Taken::Delta) => held.text(),
                        Ok(Taken::Gap) => {
                            count_error(&ctx, "delta gap");
                            if !send(&mut ws, &ClientMessage::Resync).await {
                                break;
                            }
                            continue;
                        }
                        Ok(Taken::Other) | Err(_) => {
                            count_error(&ctx, "undecodable");
                            continue;
                        }
                    }
                } else {
                    text.as_str()
                };
                let want_events = (host && ctx.measuring(now)) || awaiting.is_some();
                let Some(state) = seen.state(text, want_events) else {
                    count_error(&ctx, "undecodable");
                    continue;
                };
                if s.resume {
                    if let Some((at, before)) = broke.take() {
                        back_in_game(&ctx, at, &before, state.game, state.lobby.is_some());
                        super::shards::resume_event(&ctx, token.as_deref(), at);
                    }
                    last_game.clear();
                    last_game.push_str(state.game);
                }
                let events = &state.events;
                if let Some((seat, _)) = state.turn {
                    you = Some(seat);
                }
                // Moves applied: counted once per game, from the host's view.
                if host && ctx.measuring(now) {
                    let moved = events.iter().filter(|e| e.mover().is_some()).count() as u64;
                    ctx.stats.borrow_mut().moves += moved;
                    if moved > 0 {
                        ctx.game_moved(g, now);
                    }
                }
                if let (Some(Pending { intended, .. }), Some(seat)) = (awaiting, you)
                    && events.iter().any(|e| e.mover() == Some(seat))
                {
                    awaiting = None;
                    rejoin_due = rejoins
                        && ctx.measuring(now)
                        && now.duration_since(last_rejoin) >= s.rejoin_every;
                    if ctx.measuring(intended) {
                        let mut st = ctx.stats.borrow_mut();
                        st.human_moves += 1;
                        let us = now.saturating_duration_since(intended).as_micros();
                        st.move_latency.saturating_record(us as u64);
                    }
                }
                let Some(lobby) = state.lobby else {
                    if step == Step::Hello {
                        if let Some(code) = &code {
                            step = Step::Filling;
                            let join = ClientMessage::JoinLobby {
                                code: code.clone(),
                                name: format!("G{h}"),
                            };
                            if !send(&mut ws, &join).await {
                                break;
                            }
                        } else if host {
                            step = Step::Creating;
                            let create = ClientMessage::CreateLobby {
                                name: format!("Bench {g}"),
                                public: false,
                            };
                            if !accepting && one_game {
                                ctx.stats.borrow_mut().refusals.busy_create += 1;
                                break;
                            }
                            if !send(&mut ws, &create).await {
                                break;
                            }
                        }
                    }
                    continue;
                };
                if host && step == Step::Creating {
                    step = Step::Filling;
                    ctx.stats.borrow_mut().lobbies += 1;
                    super::shards::check_lobby(&ctx, token.as_deref(), &lobby.code);
                    if let Some(tx) = &code_tx {
                        for _ in 1..s.humans {
                            let _ = tx.try_send(lobby.code.clone());
                        }
                    }
                }
                if host && step == Step::Filling && ai_needed > 0 {
                    while ai_needed > 0 {
                        ai_needed -= 1;
                        if !send(&mut ws, &ClientMessage::AddAi { level: None }).await {
                            break;
                        }
                    }
                }
                let ready = lobby.players.len() >= s.seats;
                let status = lobby.status;
                match status {
                    LobbyStatus::Waiting
                        if host
                            && ready
                            && matches!(step, Step::Filling | Step::Returned)
                            && retry_at.is_none() =>
                    {
                        step = Step::Starting;
                        if !send(&mut ws, &ClientMessage::StartGame).await {
                            break;
                        }
                    }
                    LobbyStatus::Playing if step != Step::Playing => {
                        if host {
                            ctx.game_playing(g, true, now);
                            let mut st = ctx.stats.borrow_mut();
                            st.games_started += 1;
                            if one_game {
                                let us = now.saturating_duration_since(arrival).as_micros();
                                st.start_latency.saturating_record(us as u64);
                            }
                        }
                        step = Step::Playing;
                    }
                    LobbyStatus::Finished if step == Step::Playing => {
                        if host {
                            ctx.game_playing(g, false, now);
                            let scored = every_round_scored(state.game);
                            super::shards::game_finished(&ctx, &lobby.code);
                            let mut st = ctx.stats.borrow_mut();
                            st.games_finished += 1;
                            if !scored {
                                st.games_unscored += 1;
                            }
                        }
                        pending = None;
                        awaiting = None;
                        if one_game {
                            break;
                        }
                        if host {
                            step = Step::Returned;
                            if !send(&mut ws, &ClientMessage::ReturnToLobby).await {
                                break;
                            }
                        } else {
                            step = Step::Filling;
                        }
                    }
                    _ => {}
                }
                // Our turn per the latest state: schedule the move (once per turn).
                if status == LobbyStatus::Playing
                    && pending.is_none()
                    && awaiting.is_none()
                    && let Some(Some(game)) = state.game_to_act_on()
                {
                    let obs = &game.observation;
                    if game.you.is_some()
                        && obs.to_act == game.you
                        && obs.phase != Phase::Finished
                        && let Some(action) = obs.legal_actions.first()
                    {
                        let think = Duration::from_micros(super::think_us(
                            s.think,
                            s.think_jitter,
                            index,
                            moves_scheduled,
                        ));
                        moves_scheduled += 1;
                        pending = Some(Pending {
                            at: now + think,
                            intended: now + think,
                            action: *action,
                        });
                    }
                }
            }
            Wake::Message(Some(Ok(Message::Text(text)))) => {
                let Ok(message) = decode_server(text.as_str()) else {
                    count_error(&ctx, "undecodable");
                    continue;
                };
                match message {
                    ServerMessage::Welcome { token: t, .. } => {
                        ctx.stats.borrow_mut().welcomed += 1;
                        if token.is_none() {
                            super::shards::check_welcome(&ctx, &path, &t);
                        }
                        token = Some(t);
                    }
                    ServerMessage::ServerStatus {
                        accepting_games, ..
                    } => accepting = accepting_games,
                    // The load generator's players do not chat.
                    ServerMessage::Chat { .. } | ServerMessage::ChatGap { .. } => {}
                    // Nor do they keep profiles.
                    ServerMessage::Profile { .. } | ServerMessage::ProfileDeleted { .. } => {}
                    // Nor queue for quick play or list tables.
                    ServerMessage::Queued { .. }
                    | ServerMessage::Matched { .. }
                    | ServerMessage::Tables { .. } => {}
                    ServerMessage::Error {
                        code: err,
                        retry_after_ms,
                        ..
                    } => {
                        if err == ErrorCode::RateLimited
                            && let Some(p) = awaiting.take()
                        {
                            // The move was dropped: send it again when allowed; its
                            // latency still counts from the first intended time.
                            let wait = Duration::from_millis(retry_after_ms.unwrap_or(100).max(1));
                            pending = Some(Pending {
                                at: now + wait,
                                ..p
                            });
                        }
                        let give_up = {
                            let mut st = ctx.stats.borrow_mut();
                            match (err, step) {
                                (ErrorCode::Busy, Step::Creating) => st.refusals.busy_create += 1,
                                (ErrorCode::Busy, Step::Starting) => st.refusals.busy_start += 1,
                                (ErrorCode::Busy, _) => st.refusals.busy_connection += 1,
                                (ErrorCode::RateLimited, _) => st.refusals.rate_limited += 1,
                                (other, _) => {
                                    *st.errors.entry(format!("{other:?}")).or_default() += 1
                                }
                            }
                            if err == ErrorCode::WrongShard {
                                st.misroute(format!("wrong_shard at {path}"));
                            }
                            err == ErrorCode::Busy
                                && matches!(step, Step::Creating | Step::Starting)
                        };
                        if give_up {
                            if one_game {
                                // Open-loop arrivals take a refusal as the answer.
                                break;
                            }
                            // As PROTOCOL.md 6.2 asks: no sooner than `busy` says.
                            let wait = retry_after_ms.unwrap_or(1000).max(1);
                            retry_at = Some(now + Duration::from_millis(wait));
                        }
                    }
                    // A `state` that does not start as the core writes it.
                    ServerMessage::State { .. } | ServerMessage::Delta { .. } => {
                        count_error(&ctx, "state layout")
                    }
                }
            }
            Wake::Message(Some(Ok(_))) => {}
        }
    }
    let _ = ws.close(None).await;
    ctx.stats.borrow_mut().closed();
}

/// Whether a connection that ended with `code` is one a client comes back from: the
/// server restarting (1012) or gone without a close (1006: a crash); not a refusal
/// or a policy close.
fn resumable(code: u16) -> bool {
    matches!(code, 1012 | 1006)
}

/// Whether a finished game's part (`game`, as sent) has a score for every round.
fn every_round_scored(game: &str) -> bool {
    serde_json::from_str::<Option<wizard_core::vocabulary::wire::GameView>>(game)
        .ok()
        .flatten()
        .is_some_and(|g| g.observation.round_scores.len() == usize::from(g.observation.rounds))
}

/// A resumed bot's first `state`: how long it was away, and whether its game still
/// holds what it saw before (`game_before`).
fn back_in_game(ctx: &Ctx, broke_at: Instant, game_before: &str, game: &str, in_lobby: bool) {
    let mut st = ctx.stats.borrow_mut();
    if !in_lobby {
        st.resume_failed += 1;
        return;
    }
    st.resumed += 1;
    let us = broke_at.elapsed().as_micros() as u64;
    st.resume_latency.saturating_record(us);
    if let Err(lost) = super::resume::continues(game_before, game) {
        st.resume_mismatch += 1;
        if st.resume_mismatches.len() < 8 {
            st.resume_mismatches.push(lost);
        }
    }
}

pub(super) fn count_error(ctx: &Ctx, what: &str) {
    *ctx.stats
        .borrow_mut()
        .errors
        .entry(what.to_owned())
        .or_default() += 1;
}

pub(super) async fn send(ws: &mut Ws, message: &ClientMessage) -> bool {
    ws.send(Message::text(encode_client(message))).await.is_ok()
}

/// A returning player: connects again and says hello with `token` until welcomed
/// (every refusal on the way counted), or the run ends.
async fn rejoin(ctx: &Ctx, from: std::net::IpAddr, token: Option<&str>) -> Option<Ws> {
    while Instant::now() < ctx.deadline {
        let path = super::shards::route(ctx, token);
        if let Some(mut ws) = open_at(ctx, from, false, &path).await {
            let hello = ClientMessage::Hello {
                token: token.map(str::to_owned),
                deltas: ctx.settings.deltas,
                profile_key: None,
            };
            let _ = send(&mut ws, &hello).await;
            let until = Instant::now() + Duration::from_secs(5);
            loop {
                let answer = super::absent::answer(&mut ws, until).await;
                let mut st = ctx.stats.borrow_mut();
                match answer {
                    super::absent::Answer::Message(ServerMessage::Welcome { .. }) => {
                        st.welcomed += 1;
                        st.rejoined += 1;
                        drop(st);
                        return Some(ws);
                    }
                    super::absent::Answer::Message(ServerMessage::Error { code, .. }) => {
                        if code == ErrorCode::WrongShard {
                            st.misroute(format!("rejoin: wrong_shard at {path}"));
                        }
                        if code == ErrorCode::Busy {
                            st.refusals.busy_connection += 1;
                        } else {
                            *st.errors.entry(format!("rejoin {code:?}")).or_default() += 1;
                        }
                    }
                    super::absent::Answer::Message(_) => continue,
                    super::absent::Answer::Closed(_) => st.honest_closed += 1,
                    super::absent::Answer::Timeout => st.refusals.timed_out += 1,
                }
                st.closed();
                break;
            }
        }
        Timer::after(Duration::from_millis(200)).await;
    }
    None
}

/// Opens a websocket from `from`, counting a door refusal (503) or a failure into the
/// games' or the attack's refusals; a handshake gets 5 s.
pub(super) async fn open(ctx: &Ctx, from: std::net::IpAddr, attack: bool) -> Option<Ws> {
    open_at(ctx, from, attack, &ctx.settings.path).await
}

/// [`open`] at `path` (a shard's route); a 421 (a shard that does not own the route)
/// also counts as misrouted.
pub(super) async fn open_at(
    ctx: &Ctx,
    from: std::net::IpAddr,
    attack: bool,
    path: &str,
) -> Option<Ws> {
    let connecting = connect(ctx.settings.addr, path, from);
    let timed_out = Rc::new(std::cell::Cell::new(false));
    let flag = timed_out.clone();
    let result = connecting
        .or(async move {
            Timer::after(Duration::from_secs(5)).await;
            flag.set(true);
            Err(None)
        })
        .await;
    let mut st = ctx.stats.borrow_mut();
    let refusals = if attack {
        &mut st.attack.refusals
    } else {
        &mut st.refusals
    };
    match result {
        Ok(ws) => {
            st.opened();
            Some(ws)
        }
        Err(Some(503)) => {
            refusals.http_503 += 1;
            None
        }
        Err(Some(421)) => {
            refusals.connect_failed += 1;
            st.misroute(format!("421 at {path}"));
            None
        }
        Err(_) if timed_out.get() => {
            refusals.timed_out += 1;
            None
        }
        Err(_) => {
            refusals.connect_failed += 1;
            None
        }
    }
}
