//! The games of a run: hosts and guests playing open-loop, counting moves, latencies
//! and refusals.

use std::rc::Rc;
use std::time::{Duration, Instant};

use async_io::Timer;
use async_tungstenite::tungstenite::Message;
use futures_lite::{FutureExt, StreamExt};
use wizard_core::vocabulary::game::{Action, Event, Phase};
use wizard_core::vocabulary::wire::held::{HeldState, Taken};
use wizard_core::vocabulary::wire::{
    ClientMessage, ErrorCode, LobbyStatus, LobbyView, ServerMessage, decode_server, encode_client,
    peek,
};

use super::net::{Ws, connect, source_ip};
use super::seen::{Seen, StateSeen};
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

/// How a player's loop goes on after one wake-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Go,
    /// Close the connection and stop.
    Stop,
    /// The connection ended before the run did, with this close code (1006: none).
    Ended(u16),
}

impl Next {
    /// `Go` if a send went out, `Stop` if the connection is gone.
    fn sent(ok: bool) -> Next {
        if ok { Next::Go } else { Next::Stop }
    }
}

/// One bot human's script and what it remembers across frames and connections.
struct Bot {
    ctx: Rc<Ctx>,
    g: usize,
    h: usize,
    /// The player's index in the run, numbering its source address and think times.
    index: usize,
    arrival: Instant,
    one_game: bool,
    /// A guest's lobby code.
    code: Option<String>,
    /// A host's channel to its guests, for the lobby code.
    code_tx: Option<async_channel::Sender<String>>,
    /// The source address of its connections.
    from: std::net::IpAddr,
    /// Where the first connection went (a shard's route).
    path: String,
    host: bool,
    step: Step,
    accepting: bool,
    pending: Option<Pending>,
    awaiting: Option<Pending>,
    /// Moves scheduled, numbering the think times (`--think-jitter-ms`).
    moves_scheduled: u64,
    retry_at: Option<Instant>,
    you: Option<u8>,
    ai_needed: usize,
    token: Option<String>,
    /// The last human of each game is the one that leaves and comes back.
    rejoins: bool,
    rejoin_due: bool,
    last_rejoin: Instant,
    /// `resume`: the game part of the last state, and when the connection ended.
    last_game: String,
    broke: Option<(Instant, String)>,
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
    let mut bot = Bot::new(ctx.clone(), g, h, arrival, one_game, code, code_tx);
    let from = bot.from;
    let Some(mut ws) = open_at(&ctx, from, false, &bot.path).await else {
        return;
    };
    let mut seen = Seen::default();
    let mut ended: Option<u16> = None;
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
    if s.profiles {
        // Signed in before the first state, so the lobby seats a profile.
        let name = format!("B{}x{}", std::process::id(), bot.index);
        let _ = send(&mut ws, &ClientMessage::CreateProfile { name }).await;
    }
    loop {
        if let Some(code) = ended.take() {
            // The connection ended before the run: come back with the token if the
            // server restarted or crashed (`resume`), or stop.
            if !(s.resume && resumable(code)) || bot.token.is_none() {
                break;
            }
            let Some(back) = bot.resume(from, code).await else {
                return;
            };
            ws = back;
            seen = Seen::default();
        }
        if bot.rejoin_due && bot.pending.is_none() && bot.awaiting.is_none() {
            bot.rejoin_due = false;
            let _ = ws.close(None).await;
            ctx.stats.borrow_mut().closed();
            let Some(back) = rejoin(&ctx, from, bot.token.as_deref()).await else {
                return;
            };
            ws = back;
            seen = Seen::default();
            bot.last_rejoin = Instant::now();
        }
        let wake = [bot.pending.map(|p| p.at), bot.retry_at]
            .into_iter()
            .flatten()
            .fold(ctx.deadline, Instant::min);
        let event = async { Wake::Message(ws.next().await) }
            .or(async {
                Timer::at(wake).await;
                Wake::Timer
            })
            .await;
        let now = Instant::now();
        let next = bot.on_wake(&mut ws, &mut seen, &mut held, event, now).await;
        match next {
            Next::Go => {}
            Next::Stop => break,
            Next::Ended(code) => ended = Some(code),
        }
    }
    let _ = ws.close(None).await;
    ctx.stats.borrow_mut().closed();
}

/// A `state` or `delta` frame as the whole state's text: itself without deltas, the
/// held state after it with them; `Err` when there is no state to read (a gap asks for
/// a resync).
async fn state_text<'t>(
    ctx: &Ctx,
    ws: &mut Ws,
    held: &'t mut HeldState,
    text: &'t str,
) -> Result<&'t str, Next> {
    if !ctx.settings.deltas {
        return Ok(text);
    }
    match held.take(text) {
        Ok(Taken::Full | Taken::Delta) => Ok(held.text()),
        Ok(Taken::Gap) => {
            count_error(ctx, "delta gap");
            Err(Next::sent(send(ws, &ClientMessage::Resync).await))
        }
        Ok(Taken::Other) | Err(_) => {
            count_error(ctx, "undecodable");
            Err(Next::Go)
        }
    }
}

impl Bot {
    /// A bot about to connect: player `h` of game `g`, a guest with `code` or the host
    /// with `code_tx`.
    fn new(
        ctx: Rc<Ctx>,
        g: usize,
        h: usize,
        arrival: Instant,
        one_game: bool,
        code: Option<String>,
        code_tx: Option<async_channel::Sender<String>>,
    ) -> Bot {
        let s = &ctx.settings;
        let index = g * s.humans + h;
        Bot {
            from: source_ip(0, index / s.per_ip),
            // A guest joins at its lobby's shard; a host creates at the run's path.
            path: super::shards::route(&ctx, code.as_deref()),
            g,
            h,
            index,
            arrival,
            one_game,
            code,
            host: code_tx.is_some(),
            code_tx,
            step: Step::Hello,
            accepting: true,
            pending: None,
            awaiting: None,
            moves_scheduled: 0,
            retry_at: None,
            you: None,
            ai_needed: s.seats - s.humans,
            token: None,
            rejoins: !s.rejoin_every.is_zero() && h + 1 == s.humans,
            rejoin_due: false,
            last_rejoin: Instant::now(),
            last_game: String::new(),
            broke: None,
            ctx,
        }
    }

    /// What woke the loop: the timer, the connection's end, a state, or another frame.
    async fn on_wake(
        &mut self,
        ws: &mut Ws,
        seen: &mut Seen,
        held: &mut HeldState,
        event: Wake,
        now: Instant,
    ) -> Next {
        match event {
            Wake::Timer if now >= self.ctx.deadline => Next::Stop,
            Wake::Timer => self.on_timer(ws, now).await,
            Wake::Message(None) | Wake::Message(Some(Err(_))) => self.on_end(now, None),
            Wake::Message(Some(Ok(Message::Close(frame)))) => {
                let code = frame.map_or(1005, |f| u16::from(f.code));
                self.on_end(now, Some(code))
            }
            Wake::Message(Some(Ok(Message::Text(text))))
                if matches!(peek::frame_type(&text), "state" | "delta") =>
            {
                self.ctx.stats.borrow_mut().state_bytes += text.len() as u64;
                match state_text(&self.ctx, ws, held, &text).await {
                    Ok(text) => {
                        let want_events =
                            (self.host && self.ctx.measuring(now)) || self.awaiting.is_some();
                        match seen.state(text, want_events) {
                            Some(state) => self.on_state(ws, &state, now).await,
                            None => {
                                count_error(&self.ctx, "undecodable");
                                Next::Go
                            }
                        }
                    }
                    Err(next) => next,
                }
            }
            Wake::Message(Some(Ok(Message::Text(text)))) => match decode_server(text.as_str()) {
                Ok(message) => self.on_message(message, now),
                Err(_) => {
                    count_error(&self.ctx, "undecodable");
                    Next::Go
                }
            },
            Wake::Message(Some(Ok(_))) => Next::Go,
        }
    }

    /// The connection ended before the run with `code`: counted, and come back with the
    /// token; `None` if the server did not take it back.
    async fn resume(&mut self, from: std::net::IpAddr, code: u16) -> Option<Ws> {
        let token = self.token.as_deref()?;
        {
            let mut st = self.ctx.stats.borrow_mut();
            st.closed();
            *st.resume_ended.entry(code).or_default() += 1;
        }
        self.broke = Some((Instant::now(), std::mem::take(&mut self.last_game)));
        let Some(back) = super::resume::reconnect(&self.ctx, from, token, self.index).await else {
            self.ctx.stats.borrow_mut().resume_failed += 1;
            return None;
        };
        (self.pending, self.awaiting, self.retry_at) = (None, None, None);
        Some(back)
    }

    /// A timer fired before the deadline: send the move or the retry that is due.
    async fn on_timer(&mut self, ws: &mut Ws, now: Instant) -> Next {
        if let Some(p) = self.pending.filter(|p| p.at <= now) {
            self.pending = None;
            self.awaiting = Some(p);
            if !send(ws, &ClientMessage::Action { action: p.action }).await {
                return Next::Stop;
            }
        }
        if self.retry_at.is_some_and(|r| r <= now) {
            self.retry_at = None;
            let message = match self.step {
                Step::Creating => self.create_lobby(),
                _ => ClientMessage::StartGame,
            };
            return Next::sent(send(ws, &message).await);
        }
        Next::Go
    }

    fn create_lobby(&self) -> ClientMessage {
        ClientMessage::CreateLobby {
            name: format!("Bench {}", self.g),
            public: false,
        }
    }

    /// The connection ended, with a close `code` or without one (`None`): counted,
    /// unless the run is over.
    fn on_end(&mut self, now: Instant, code: Option<u16>) -> Next {
        if now >= self.ctx.deadline {
            return Next::Stop;
        }
        let mut st = self.ctx.stats.borrow_mut();
        st.honest_closed += 1;
        match code {
            Some(1013) => st.refusals.close_1013 += 1,
            Some(1008) => st.refusals.close_1008 += 1,
            _ => {}
        }
        Next::Ended(code.unwrap_or(1006))
    }

    /// A whole state: the moves it shows counted, then the script's next step.
    async fn on_state(&mut self, ws: &mut Ws, state: &StateSeen<'_, '_>, now: Instant) -> Next {
        if self.ctx.settings.resume {
            if let Some((at, before)) = self.broke.take() {
                back_in_game(&self.ctx, at, &before, state.game, state.lobby.is_some());
                super::shards::resume_event(&self.ctx, self.token.as_deref(), at);
            }
            self.last_game.clear();
            self.last_game.push_str(state.game);
        }
        if let Some((seat, _)) = state.turn {
            self.you = Some(seat);
        }
        self.count_moves(&state.events, now);
        let Some(lobby) = state.lobby else {
            return self.before_lobby(ws).await;
        };
        if self.host && self.step == Step::Creating {
            self.step = Step::Filling;
            self.ctx.stats.borrow_mut().lobbies += 1;
            super::shards::check_lobby(&self.ctx, self.token.as_deref(), &lobby.code);
            if let Some(tx) = &self.code_tx {
                for _ in 1..self.ctx.settings.humans {
                    let _ = tx.try_send(lobby.code.clone());
                }
            }
        }
        if self.host && self.step == Step::Filling {
            while self.ai_needed > 0 {
                self.ai_needed -= 1;
                if !send(ws, &ClientMessage::AddAi { level: None }).await {
                    break;
                }
            }
        }
        if self.on_status(ws, lobby, state.game, now).await == Next::Stop {
            return Next::Stop;
        }
        if lobby.status == LobbyStatus::Playing {
            self.schedule_move(state, now);
        }
        Next::Go
    }

    /// Moves applied, counted once per game from the host's view; and this bot's own
    /// awaited move, timed from when it was meant to be sent.
    fn count_moves(&mut self, events: &[Event], now: Instant) {
        let ctx = &self.ctx;
        if self.host && ctx.measuring(now) {
            let moved = events.iter().filter(|e| e.mover().is_some()).count() as u64;
            ctx.stats.borrow_mut().moves += moved;
            if moved > 0 {
                ctx.game_moved(self.g, now);
            }
        }
        if let (Some(Pending { intended, .. }), Some(seat)) = (self.awaiting, self.you)
            && events.iter().any(|e| e.mover() == Some(seat))
        {
            self.awaiting = None;
            self.rejoin_due = self.rejoins
                && ctx.measuring(now)
                && now.duration_since(self.last_rejoin) >= ctx.settings.rejoin_every;
            if ctx.measuring(intended) {
                let mut st = ctx.stats.borrow_mut();
                st.human_moves += 1;
                let us = now.saturating_duration_since(intended).as_micros();
                st.move_latency.saturating_record(us as u64);
            }
        }
    }

    /// A state with no lobby: after hello, a guest joins its lobby and a host creates one.
    async fn before_lobby(&mut self, ws: &mut Ws) -> Next {
        if self.step != Step::Hello {
            return Next::Go;
        }
        if let Some(code) = &self.code {
            self.step = Step::Filling;
            let join = ClientMessage::JoinLobby {
                code: code.clone(),
                name: format!("G{}", self.h),
            };
            return Next::sent(send(ws, &join).await);
        }
        if !self.host {
            return Next::Go;
        }
        self.step = Step::Creating;
        if !self.accepting && self.one_game {
            self.ctx.stats.borrow_mut().refusals.busy_create += 1;
            return Next::Stop;
        }
        Next::sent(send(ws, &self.create_lobby()).await)
    }

    /// The lobby's status against the script: a full lobby started, a started game
    /// counted, a finished one counted and returned to the lobby (or the end of a
    /// one-game run).
    async fn on_status(
        &mut self,
        ws: &mut Ws,
        lobby: &LobbyView,
        game: &str,
        now: Instant,
    ) -> Next {
        let ctx = &self.ctx;
        let ready = lobby.players.len() >= ctx.settings.seats;
        match lobby.status {
            LobbyStatus::Waiting
                if self.host
                    && ready
                    && matches!(self.step, Step::Filling | Step::Returned)
                    && self.retry_at.is_none() =>
            {
                self.step = Step::Starting;
                Next::sent(send(ws, &ClientMessage::StartGame).await)
            }
            LobbyStatus::Playing if self.step != Step::Playing => {
                if self.host {
                    ctx.game_playing(self.g, true, now);
                    let mut st = ctx.stats.borrow_mut();
                    st.games_started += 1;
                    if self.one_game {
                        let us = now.saturating_duration_since(self.arrival).as_micros();
                        st.start_latency.saturating_record(us as u64);
                    }
                }
                self.step = Step::Playing;
                Next::Go
            }
            LobbyStatus::Finished if self.step == Step::Playing => {
                if self.host {
                    ctx.game_playing(self.g, false, now);
                    let scored = every_round_scored(game);
                    super::shards::game_finished(ctx, &lobby.code);
                    let mut st = ctx.stats.borrow_mut();
                    st.games_finished += 1;
                    if !scored {
                        st.games_unscored += 1;
                    }
                }
                self.pending = None;
                self.awaiting = None;
                if self.one_game {
                    return Next::Stop;
                }
                if self.host {
                    self.step = Step::Returned;
                    Next::sent(send(ws, &ClientMessage::ReturnToLobby).await)
                } else {
                    self.step = Step::Filling;
                    Next::Go
                }
            }
            _ => Next::Go,
        }
    }

    /// Our turn per the latest state: schedule the move (once per turn).
    fn schedule_move(&mut self, state: &StateSeen<'_, '_>, now: Instant) {
        if self.pending.is_some() || self.awaiting.is_some() {
            return;
        }
        let Some(Some(game)) = state.game_to_act_on() else {
            return;
        };
        let obs = &game.observation;
        if game.you.is_some()
            && obs.to_act == game.you
            && obs.phase != Phase::Finished
            && let Some(action) = obs.legal_actions.first()
        {
            let s = &self.ctx.settings;
            let think = Duration::from_micros(super::think_us(
                s.think,
                s.think_jitter,
                self.index,
                self.moves_scheduled,
            ));
            self.moves_scheduled += 1;
            self.pending = Some(Pending {
                at: now + think,
                intended: now + think,
                action: *action,
            });
        }
    }

    /// Any frame but a state.
    fn on_message(&mut self, message: ServerMessage, now: Instant) -> Next {
        match message {
            ServerMessage::Welcome { token: t, .. } => {
                self.ctx.stats.borrow_mut().welcomed += 1;
                if self.token.is_none() {
                    super::shards::check_welcome(&self.ctx, &self.path, &t);
                }
                self.token = Some(t);
            }
            ServerMessage::ServerStatus {
                accepting_games, ..
            } => self.accepting = accepting_games,
            // The load generator's players do not chat.
            ServerMessage::Chat { .. } | ServerMessage::ChatGap { .. } => {}
            // Nor do they keep profiles.
            ServerMessage::Profile { .. } | ServerMessage::ProfileDeleted { .. } => {}
            // Nor queue for quick play or list tables.
            ServerMessage::Queued { .. }
            | ServerMessage::Matched { .. }
            | ServerMessage::Tables { .. } => {}
            ServerMessage::Error {
                code,
                retry_after_ms,
                ..
            } => return self.on_error(code, retry_after_ms, now),
            // A `state` that does not start as the core writes it.
            ServerMessage::State { .. } | ServerMessage::Delta { .. } => {
                count_error(&self.ctx, "state layout")
            }
        }
        Next::Go
    }

    /// An error frame: a rate-limited move sent again when allowed; a `busy` refusal
    /// of a create or a start retried no sooner than it says (or, open-loop, the end).
    fn on_error(&mut self, err: ErrorCode, retry_after_ms: Option<u64>, now: Instant) -> Next {
        if err == ErrorCode::RateLimited
            && let Some(p) = self.awaiting.take()
        {
            // The move was dropped: send it again when allowed; its
            // latency still counts from the first intended time.
            let wait = Duration::from_millis(retry_after_ms.unwrap_or(100).max(1));
            self.pending = Some(Pending {
                at: now + wait,
                ..p
            });
        }
        let give_up = {
            let mut st = self.ctx.stats.borrow_mut();
            match (err, self.step) {
                (ErrorCode::Busy, Step::Creating) => st.refusals.busy_create += 1,
                (ErrorCode::Busy, Step::Starting) => st.refusals.busy_start += 1,
                (ErrorCode::Busy, _) => st.refusals.busy_connection += 1,
                (ErrorCode::RateLimited, _) => st.refusals.rate_limited += 1,
                (other, _) => *st.errors.entry(format!("{other:?}")).or_default() += 1,
            }
            if err == ErrorCode::WrongShard {
                st.misroute(format!("wrong_shard at {}", self.path));
            }
            err == ErrorCode::Busy && matches!(self.step, Step::Creating | Step::Starting)
        };
        if give_up {
            if self.one_game {
                // Open-loop arrivals take a refusal as the answer.
                return Next::Stop;
            }
            // As PROTOCOL.md 6.2 asks: no sooner than `busy` says.
            let wait = retry_after_ms.unwrap_or(1000).max(1);
            self.retry_at = Some(now + Duration::from_millis(wait));
        }
        Next::Go
    }
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
