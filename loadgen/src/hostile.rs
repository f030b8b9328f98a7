//! The raw-socket attacks of the attack table: a message that never completes (row 1), silent
//! sockets (row 2), a ping flood that never reads (row 6) and a client that never reads
//! (row 7). Each connection starts over at once when the server ends it; all stop at
//! the window's end or the attack count.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use async_io::Timer;
use futures_lite::future::yield_now;

use super::raw::{self, Ending, Reader, Tcp};
use crate::Ctx;
use crate::attack::Window;

const MASK: [u8; 4] = [0x12, 0x34, 0x56, 0x78];

/// Waits `d`, or less when the window ends first.
pub(super) async fn pause(d: Duration, w: Window) {
    Timer::at((Instant::now() + d).min(w.end)).await;
}

/// Opens a raw websocket from `from` and says hello; a refusal is counted.
pub(super) async fn open_hello(ctx: &Ctx, from: IpAddr, w: Window) -> Option<Tcp> {
    open_hello_with(ctx, from, w, None).await
}

/// [`open_hello`] with a fixed receive buffer of `recv_bytes`.
async fn open_hello_with(
    ctx: &Ctx,
    from: IpAddr,
    w: Window,
    recv_bytes: Option<usize>,
) -> Option<Tcp> {
    let s = &ctx.settings;
    match raw::open_with(s.addr, &s.path, from, w.end, recv_bytes).await {
        Ok(mut tcp) => {
            if raw::write(&mut tcp, &raw::text(raw::HELLO), w.end).await {
                ctx.stats.borrow_mut().opened();
                Some(tcp)
            } else {
                None
            }
        }
        Err(status) => {
            let mut st = ctx.stats.borrow_mut();
            if status == 503 {
                st.attack.refusals.http_503 += 1;
            } else {
                st.attack.refusals.connect_failed += 1;
            }
            None
        }
    }
}

/// Records how a connection opened at `opened` ended (nothing while it is open).
fn record(ctx: &Ctx, ending: Ending, opened: Instant) {
    let mut st = ctx.stats.borrow_mut();
    st.closed();
    if ending == Ending::Open {
        return;
    }
    if ending == Ending::Close(1008) {
        st.attack.refusals.close_1008 += 1;
    }
    st.attack.ended(&ending.name());
    let held = opened.elapsed().as_millis() as u64;
    st.attack.held_ms_max = st.attack.held_ms_max.max(held);
}

/// After the last write: what the server did (a close frame still unread, a drop), or
/// `Open` when the write only timed out at the window's end.
async fn ending_after(tcp: &mut Tcp, reader: &mut Reader, wrote: bool, w: Window) -> Ending {
    let until = if wrote || Instant::now() >= w.end {
        Instant::now()
    } else {
        Instant::now() + Duration::from_millis(300)
    };
    match reader.ending(tcp, until).await {
        Ending::Open if !wrote && Instant::now() < w.end => Ending::Dropped,
        other => other,
    }
}

/// Row 1: a text frame with FIN=0, then empty continuation frames until cut.
pub(super) async fn fragment_flood(ctx: &Ctx, from: IpAddr, w: Window) {
    const BATCH: u64 = 256;
    let start = raw::frame(false, 0, 0x1, Some(MASK), b"{");
    let batch: Vec<u8> = (0..BATCH)
        .flat_map(|_| raw::frame(false, 0, 0x0, Some(MASK), &[]))
        .collect();
    while ctx.attack_budget(w) {
        let Some(mut tcp) = open_hello(ctx, from, w).await else {
            pause(Duration::from_millis(50), w).await;
            continue;
        };
        let opened = Instant::now();
        let mut reader = Reader::default();
        let mut wrote = raw::write(&mut tcp, &start, w.end).await;
        let mut ending = Ending::Open;
        while wrote && ctx.attack_budget(w) {
            ctx.stats.borrow_mut().attack.attempts += BATCH;
            wrote = raw::write(&mut tcp, &batch, w.end).await;
            ending = reader.ending(&mut tcp, Instant::now()).await;
            if ending != Ending::Open {
                break;
            }
            // Loopback writes are always ready: let the honest bots run.
            yield_now().await;
        }
        if ending == Ending::Open {
            ending = ending_after(&mut tcp, &mut reader, wrote, w).await;
        }
        record(ctx, ending, opened);
    }
}

/// Row 2: TCP connections that send nothing, each held until the server ends it.
pub(super) async fn silent(ctx: &Ctx, from: IpAddr, w: Window) {
    // With --attack-rate, each connection opens at most that many sockets a second
    // (the storm of the attack table: sockets held, opened again when cut); without, as fast as
    // the server accepts them (a connect flood).
    let every = (ctx.settings.attack_rate > 0.0)
        .then(|| Duration::from_secs_f64(1.0 / ctx.settings.attack_rate));
    let mut next = Instant::now();
    while ctx.attack_budget(w) {
        if let Some(every) = every {
            Timer::at(next.min(w.end)).await;
            next = Instant::now().max(next) + every;
        }
        ctx.stats.borrow_mut().attack.attempts += 1;
        let within = w.end.saturating_duration_since(Instant::now());
        let Some(mut tcp) = raw::tcp(ctx.settings.addr, from, within).await else {
            ctx.stats.borrow_mut().attack.refusals.connect_failed += 1;
            pause(Duration::from_millis(50), w).await;
            continue;
        };
        ctx.stats.borrow_mut().opened();
        let opened = Instant::now();
        // Whatever the server sends (a 408, nothing), read up to its close.
        let ending = match raw::read_status(&mut tcp, w.end).await {
            None => Ending::Open,
            Some(0) => Ending::Dropped,
            Some(status) => Ending::Close(status),
        };
        let mut st = ctx.stats.borrow_mut();
        st.closed();
        if ending != Ending::Open {
            let how = match ending {
                Ending::Close(status) => format!("http {status}"),
                _ => "dropped".to_owned(),
            };
            st.attack.ended(&how);
            let held = opened.elapsed().as_millis() as u64;
            st.attack.held_ms_max = st.attack.held_ms_max.max(held);
        }
    }
}

/// Row 6: 125-byte pings as fast as the socket takes them; the pongs are never read.
pub(super) async fn ping_flood(ctx: &Ctx, from: IpAddr, w: Window) {
    const BATCH: u64 = 32;
    let payload = [0x5au8; 125];
    let batch: Vec<u8> = (0..BATCH)
        .flat_map(|_| raw::frame(true, 0, 0x9, Some(MASK), &payload))
        .collect();
    while ctx.attack_budget(w) {
        let Some(mut tcp) = open_hello(ctx, from, w).await else {
            pause(Duration::from_millis(50), w).await;
            continue;
        };
        let opened = Instant::now();
        let mut wrote = true;
        while wrote && ctx.attack_budget(w) {
            ctx.stats.borrow_mut().attack.attempts += BATCH;
            wrote = raw::write(&mut tcp, &batch, w.end).await;
            yield_now().await;
        }
        // Only now read (the pongs first), to find whether a close frame came.
        let ending = ending_after(&mut tcp, &mut Reader::default(), wrote, w).await;
        record(ctx, ending, opened);
    }
}

/// Row 7: a client in its own lobby that keeps asking for states (toggling an option,
/// a refused start) at `--attack-rate` messages a second (8 when unset, under the
/// default `MESSAGE_RATE`) and never reads.
/// The receive buffer of a client that never reads.
const NO_READ_RECV_BYTES: usize = 4096;

pub(super) async fn no_read(ctx: &Ctx, from: IpAddr, w: Window) {
    let rate = if ctx.settings.attack_rate > 0.0 {
        ctx.settings.attack_rate
    } else {
        8.0
    };
    let every = Duration::from_secs_f64(1.0 / rate);
    while ctx.attack_budget(w) {
        // A small receive window: what the client does not read piles up on the
        // server's side at once, instead of in megabytes of the client's own buffer.
        let Some(mut tcp) = open_hello_with(ctx, from, w, Some(NO_READ_RECV_BYTES)).await else {
            pause(Duration::from_millis(50), w).await;
            continue;
        };
        let opened = Instant::now();
        let create = raw::text(r#"{"type":"create_lobby","name":"Deaf"}"#);
        let mut wrote = raw::write(&mut tcp, &create, w.end).await;
        let mut k = 0u64;
        while wrote && ctx.attack_budget(w) {
            let message = if k.is_multiple_of(2) {
                format!(
                    r#"{{"type":"set_options","hidden_bids":{}}}"#,
                    k.is_multiple_of(4)
                )
            } else {
                r#"{"type":"start_game"}"#.to_owned()
            };
            k += 1;
            ctx.stats.borrow_mut().attack.attempts += 1;
            wrote = raw::write(&mut tcp, &raw::text(&message), w.end).await;
            Timer::at((opened + every.mul_f64(k as f64)).min(w.end)).await;
        }
        let ending = ending_after(&mut tcp, &mut Reader::default(), wrote, w).await;
        record(ctx, ending, opened);
    }
}
