//! The honest side beside an attack, besides the games: a `/health` prober (open-loop,
//! latency from the intended probe time), newcomers (a new player's hello, and a lobby
//! created and left), quick-play groups (time to seat), and the stall monitor (a running
//! game with no move for `stall_after`).

use std::rc::Rc;
use std::time::{Duration, Instant};

use async_io::Timer;
use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode, ServerMessage};

use super::absent::{Answer, answer};
use super::net::source_ip;
use crate::game::{open, send};
use crate::{Ctx, Exec, net, raw};

/// A probe that got no answer in this time failed.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);
/// A newcomer's step that got no answer in this time was refused (generous: a slow
/// answer is a latency, not a refusal).
const NEWCOMER_TIMEOUT: Duration = Duration::from_secs(5);
/// A quick player not seated in this time was refused: past the server's default
/// `QUICK_PLAY_WAIT` of 30 s, after which AI seats fill its table.
const SEAT_TIMEOUT: Duration = Duration::from_secs(40);
/// Quick players take addresses from this index of the probes' range up (newcomers
/// take 1 to 60 000).
const QUICK_IP_FIRST: usize = 100_000;
/// ...and cycle through this many.
const QUICK_IPS_MAX: usize = 100_000;

/// One game's progress, for the stall monitor.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    pub playing: bool,
    pub last_move: Option<Instant>,
    /// Already counted as stalled since its last move.
    pub stalled: bool,
}

impl Ctx {
    pub(super) fn game_moved(&self, g: usize, now: Instant) {
        if let Some(p) = self.progress.borrow_mut().get_mut(g) {
            p.last_move = Some(now);
            p.stalled = false;
        }
    }

    pub(super) fn game_playing(&self, g: usize, playing: bool, now: Instant) {
        if let Some(p) = self.progress.borrow_mut().get_mut(g) {
            p.playing = playing;
            p.last_move = Some(now);
            p.stalled = false;
        }
    }
}

/// Every 100 ms: the longest gap without a move, and games past `stall_after`.
pub(super) async fn monitor(ctx: Rc<Ctx>) {
    Timer::at(ctx.window_start).await;
    while Instant::now() < ctx.deadline {
        Timer::after(Duration::from_millis(100)).await;
        let now = Instant::now();
        let mut progress = ctx.progress.borrow_mut();
        let mut st = ctx.stats.borrow_mut();
        for p in progress.iter_mut().filter(|p| p.playing) {
            let gap = now.saturating_duration_since(p.last_move.unwrap_or(now));
            st.move_gap_max_us = st.move_gap_max_us.max(gap.as_micros() as u64);
            if gap > ctx.settings.stall_after && !p.stalled {
                p.stalled = true;
                st.stalled += 1;
            }
        }
    }
}

/// Runs `f(k, at)` at `window_start + k * every` until the deadline, each on its own
/// task (at most `ANSWER_TIMEOUT / every` + 1 at once, since each is bounded).
async fn open_loop<F, Fut>(ex: Exec, ctx: Rc<Ctx>, every: Duration, f: F)
where
    F: Fn(Rc<Ctx>, u32, Instant) -> Fut,
    Fut: Future<Output = ()> + 'static,
{
    let mut running = Vec::new();
    for k in 0u32.. {
        let at = ctx.window_start + every * k;
        if at >= ctx.deadline {
            break;
        }
        Timer::at(at).await;
        running.retain(|t: &smol::Task<()>| !t.is_finished());
        running.push(ex.spawn(f(ctx.clone(), k, at)));
    }
    for t in running {
        t.await;
    }
}

/// `GET /health` every `health_every` over a new connection from a probe address.
pub(super) async fn prober(ex: Exec, ctx: Rc<Ctx>) {
    let every = ctx.settings.health_every;
    open_loop(ex, ctx, every, |ctx, _, at| async move {
        let until = at + ANSWER_TIMEOUT;
        let request = b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
        let status = match raw::tcp(ctx.settings.addr, source_ip(2, 0), ANSWER_TIMEOUT).await {
            Some(mut tcp) => raw::request_status(&mut tcp, request, until).await,
            None => None,
        };
        let mut st = ctx.stats.borrow_mut();
        let us = Instant::now().saturating_duration_since(at).as_micros() as u64;
        st.health_latency.saturating_record(us);
        if status != Some(200) {
            st.health_failed += 1;
        }
    })
    .await;
}

/// A new player every `newcomer_every`, each from its own address: hello, and with
/// `newcomer_lobby` a lobby created and left. Every refusal is an honest one.
pub(super) async fn newcomers(ex: Exec, ctx: Rc<Ctx>) {
    let every = ctx.settings.newcomer_every;
    open_loop(ex, ctx, every, |ctx, k, _| async move {
        let from = source_ip(2, 1 + k as usize % 60_000);
        let Some(mut ws) = open(&ctx, from, false).await else {
            return;
        };
        let served = newcomer(&ctx, &mut ws).await;
        let _ = ws.close(None).await;
        let mut st = ctx.stats.borrow_mut();
        st.closed();
        st.newcomers += u64::from(served);
    })
    .await;
}

/// A group of `seats` new players every `quick_every`, each from its own address: all
/// say hello, then all send `quick_play {seats}` at once; each one's time from its send
/// to the `state` of its running game is a seat latency. Seated, they leave the table
/// (the last human out deletes it: no game slot held). Every refusal, and a wait past
/// [`SEAT_TIMEOUT`], is an honest one.
pub(super) async fn quick_groups(ex: Exec, ctx: Rc<Ctx>) {
    let every = ctx.settings.quick_every;
    let seats = ctx.settings.seats;
    let ex2 = ex.clone();
    open_loop(ex, ctx, every, move |ctx, k, _| {
        let ex = ex2.clone();
        async move {
            let mut arrived = Vec::new();
            for j in 0..seats {
                let n = QUICK_IP_FIRST + (k as usize * seats + j) % QUICK_IPS_MAX;
                let ctx = ctx.clone();
                arrived.push(ex.spawn(async move {
                    let mut ws = open(&ctx, source_ip(2, n), false).await?;
                    let hello = ClientMessage::Hello {
                        token: None,
                        deltas: false,
                        profile_key: None,
                    };
                    let _ = send(&mut ws, &hello).await;
                    let state = |m: &ServerMessage| matches!(m, ServerMessage::State { .. });
                    if expect(&ctx, &mut ws, true, state).await {
                        Some(ws)
                    } else {
                        let _ = ws.close(None).await;
                        ctx.stats.borrow_mut().closed();
                        None
                    }
                }));
            }
            let mut queued = Vec::new();
            for (j, t) in arrived.into_iter().enumerate() {
                let Some(ws) = t.await else { continue };
                let ctx = ctx.clone();
                queued.push(ex.spawn(quick_player(ctx, ws, format!("Quick{j}"))));
            }
            for t in queued {
                t.await;
            }
        }
    })
    .await;
}

/// One quick player: queues and waits to be seated, then leaves and closes.
async fn quick_player(ctx: Rc<Ctx>, mut ws: net::Ws, name: String) {
    // Out of 3 to 6 the server answers `invalid`, counted as an error.
    let seats = u8::try_from(ctx.settings.seats).unwrap_or(u8::MAX);
    let start = Instant::now();
    let quick = ClientMessage::QuickPlay {
        name,
        seats: Some(seats),
    };
    let _ = send(&mut ws, &quick).await;
    let until = start + SEAT_TIMEOUT;
    let seated = loop {
        let got = answer(&mut ws, until).await;
        let mut st = ctx.stats.borrow_mut();
        match got {
            Answer::Message(ServerMessage::State { game: Some(_), .. }) => {
                let us = start.elapsed().as_micros() as u64;
                st.seat_latency.saturating_record(us);
                st.quick_seated += 1;
                break true;
            }
            Answer::Message(ServerMessage::Error { code, .. }) => {
                match code {
                    ErrorCode::Busy => st.refusals.busy_create += 1,
                    ErrorCode::RateLimited => st.refusals.rate_limited += 1,
                    other => *st.errors.entry(format!("quick {other:?}")).or_default() += 1,
                }
                break false;
            }
            Answer::Message(_) => {}
            Answer::Closed(_) => {
                st.honest_closed += 1;
                break false;
            }
            Answer::Timeout => {
                st.refusals.timed_out += 1;
                break false;
            }
        }
    };
    if seated {
        let _ = send(&mut ws, &ClientMessage::LeaveLobby).await;
    }
    let _ = ws.close(None).await;
    ctx.stats.borrow_mut().closed();
}

/// The newcomer's script; false when something on the way was refused (counted).
async fn newcomer(ctx: &Ctx, ws: &mut net::Ws) -> bool {
    let _ = send(
        ws,
        &ClientMessage::Hello {
            token: None,
            deltas: false,
            profile_key: None,
        },
    )
    .await;
    if !expect(ctx, ws, true, |m| matches!(m, ServerMessage::State { .. })).await {
        return false;
    }
    if !ctx.settings.newcomer_lobby {
        return true;
    }
    let create = ClientMessage::CreateLobby {
        name: "Newcomer".into(),
        public: false,
    };
    let _ = send(ws, &create).await;
    let lobby = |m: &ServerMessage| matches!(m, ServerMessage::State { lobby: Some(_), .. });
    if !expect(ctx, ws, false, lobby).await {
        return false;
    }
    let _ = send(ws, &ClientMessage::LeaveLobby).await;
    expect(ctx, ws, false, |m| {
        matches!(m, ServerMessage::State { lobby: None, .. })
    })
    .await
}

/// Reads up to a message that `f` accepts; an error, a close or silence on the way
/// is counted as an honest refusal (`busy` at hello is a connection limit).
async fn expect(
    ctx: &Ctx,
    ws: &mut net::Ws,
    at_hello: bool,
    f: impl Fn(&ServerMessage) -> bool,
) -> bool {
    let until = Instant::now() + NEWCOMER_TIMEOUT;
    loop {
        let got = answer(ws, until).await;
        let mut st = ctx.stats.borrow_mut();
        match got {
            Answer::Message(m) if f(&m) => return true,
            Answer::Message(ServerMessage::Error { code, .. }) => {
                match code {
                    ErrorCode::Busy if at_hello => st.refusals.busy_connection += 1,
                    ErrorCode::Busy => st.refusals.busy_create += 1,
                    ErrorCode::RateLimited => st.refusals.rate_limited += 1,
                    other => *st.errors.entry(format!("newcomer {other:?}")).or_default() += 1,
                }
                return false;
            }
            Answer::Message(_) => {}
            Answer::Closed(code) => {
                if code == 1013 {
                    st.refusals.close_1013 += 1;
                }
                st.honest_closed += 1;
                return false;
            }
            Answer::Timeout => {
                st.refusals.timed_out += 1;
                return false;
            }
        }
    }
}
