//! `wizard-bench-room`: a bare smol + async-tungstenite room with no game logic, the
//! baseline `wizard-server` is measured against (`bench/perf17.sh`).
//!
//! It speaks just enough of the player protocol for `wizard-bench --humans 4 --seats 4`
//! to drive it with the same workload as the real server: `hello`, `create_lobby`,
//! `join_lobby`, `start_game`, `action` and `return_to_lobby` (anything else is
//! ignored). Rooms have 4 seats; when the seat whose turn it is sends a move, every
//! seat is sent its own `state` frame, as after a Wizard move. The frames are one real
//! game's, recorded through `wizard_core::Server` at start-up ([`script`]): the same
//! bytes (about 1.5 KB a frame) the real server sends, but serving a move is a table
//! lookup, so what the room costs is the stack's: the socket reads and writes, the
//! websocket framing, the wake-ups.
//!
//! The same stack as the server: smol's executor, async-io's reactor, async-tungstenite
//! (the workspace's versions); one thread (a local executor). Each connection has a
//! reader task and a writer task (`WebSocketStream::split`); the writer feeds every
//! frame queued for it and flushes once. Bounded: connections (`ROOM_MAX_CONNECTIONS`),
//! a frame's and a message's size (`ROOM_MAX_FRAME_BYTES`), each connection's queue of
//! outgoing frames (`ROOM_QUEUE_FRAMES`: a reader that falls that far behind is cut),
//! rooms (one per two connections at most) and the websocket handshake (10 s).

pub mod script;

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::rc::Rc;
use std::time::Duration;

use async_io::{Async, Timer};
use async_tungstenite::tungstenite::protocol::WebSocketConfig;
use async_tungstenite::tungstenite::{Message, Utf8Bytes};
use futures_lite::{FutureExt, StreamExt};
use futures_util::SinkExt;

use script::{SEATS, Script};

/// The room's settings (environment variables, see `docs/OPERATIONS.md`).
#[derive(Clone, Debug)]
pub struct Settings {
    /// `BIND`: where to listen.
    pub bind: SocketAddr,
    /// `ROOM_MAX_CONNECTIONS`: open connections at most; more are closed at accept.
    pub connections_max: usize,
    /// `ROOM_MAX_FRAME_BYTES`: the largest frame and message a client may send.
    pub frame_bytes_max: usize,
    /// `ROOM_QUEUE_FRAMES`: frames queued for one connection at most.
    pub queue_frames: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            bind: SocketAddr::from(([127, 0, 0, 1], 8000)),
            connections_max: 20_000,
            frame_bytes_max: 4096,
            queue_frames: 64,
        }
    }
}

/// A setting that cannot be used (the operator's fault).
#[derive(Debug, PartialEq, Eq)]
pub struct SettingError {
    pub name: &'static str,
    pub value: String,
}

impl std::fmt::Display for SettingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={:?} is not a valid value", self.name, self.value)
    }
}

impl std::error::Error for SettingError {}

impl Settings {
    /// Reads the settings from `(name, value)` pairs (typically the environment); an
    /// empty value means the default.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Settings, SettingError> {
        let mut s = Settings::default();
        for (name, value) in pairs {
            if value.is_empty() {
                continue;
            }
            let bad = |name: &'static str| SettingError {
                name,
                value: value.to_owned(),
            };
            match name {
                "BIND" => s.bind = value.parse().map_err(|_| bad("BIND"))?,
                "ROOM_MAX_CONNECTIONS" => {
                    s.connections_max = positive(value).ok_or(bad("ROOM_MAX_CONNECTIONS"))?
                }
                "ROOM_MAX_FRAME_BYTES" => {
                    s.frame_bytes_max = positive(value).ok_or(bad("ROOM_MAX_FRAME_BYTES"))?
                }
                "ROOM_QUEUE_FRAMES" => {
                    s.queue_frames = positive(value).ok_or(bad("ROOM_QUEUE_FRAMES"))?
                }
                _ => {}
            }
        }
        Ok(s)
    }
}

fn positive(text: &str) -> Option<usize> {
    text.parse().ok().filter(|n| *n > 0)
}

/// How long a client has to finish the websocket handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The listen backlog, as the server's `LISTEN_BACKLOG` default.
const LISTEN_BACKLOG: i32 = 1024;

/// Binds `settings.bind` with the server's backlog.
pub fn bind(settings: &Settings) -> std::io::Result<Async<TcpListener>> {
    let listener = TcpListener::bind(settings.bind)?;
    rustix::net::listen(&listener, LISTEN_BACKLOG)?;
    Async::new(listener)
}

/// Serves on `listener` until the process ends (one thread: the caller's).
pub fn serve(listener: Async<TcpListener>, settings: Settings, script: Script) {
    let ex = Rc::new(smol::LocalExecutor::new());
    let room = Rc::new(Rooms {
        settings,
        script,
        state: RefCell::new(State::default()),
    });
    smol::block_on(ex.run(accept_loop(ex.clone(), listener, room)));
}

type Exec = Rc<smol::LocalExecutor<'static>>;

/// What every task shares (one thread: a plain cell, never held across an await).
struct Rooms {
    settings: Settings,
    script: Script,
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    open: usize,
    next_conn: u64,
    next_room: u64,
    conns: HashMap<u64, Conn>,
    rooms: HashMap<u64, Room>,
    codes: HashMap<String, u64>,
}

struct Conn {
    tx: async_channel::Sender<Utf8Bytes>,
    seat: Option<(u64, usize)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Waiting,
    /// The next move is the script's step `n`.
    Playing(usize),
    Finished,
}

struct Room {
    code: String,
    seats: Vec<u64>,
    phase: Phase,
}

async fn accept_loop(ex: Exec, listener: Async<TcpListener>, rooms: Rc<Rooms>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors and the like: wait instead of spinning.
            Timer::after(Duration::from_millis(10)).await;
            continue;
        };
        {
            let mut st = rooms.state.borrow_mut();
            if st.open >= rooms.settings.connections_max {
                continue; // dropped: closed at once
            }
            st.open += 1;
        }
        let _ = stream.get_ref().set_nodelay(true);
        ex.spawn(connection(ex.clone(), stream, rooms.clone()))
            .detach();
    }
}

async fn connection(ex: Exec, stream: Async<TcpStream>, rooms: Rc<Rooms>) {
    let s = &rooms.settings;
    let config = WebSocketConfig::default()
        .max_frame_size(Some(s.frame_bytes_max))
        .max_message_size(Some(s.frame_bytes_max));
    let handshake = async {
        async_tungstenite::accept_async_with_config(stream, Some(config))
            .await
            .ok()
    }
    .or(async {
        Timer::after(HANDSHAKE_TIMEOUT).await;
        None
    });
    if let Some(ws) = handshake.await {
        let (mut sink, mut source) = ws.split();
        let (tx, rx) = async_channel::bounded::<Utf8Bytes>(s.queue_frames);
        let id = {
            let mut st = rooms.state.borrow_mut();
            st.next_conn += 1;
            let id = st.next_conn;
            st.conns.insert(id, Conn { tx, seat: None });
            id
        };
        let writer = ex.spawn(async move {
            while let Ok(frame) = rx.recv().await {
                if sink.feed(Message::Text(frame)).await.is_err() {
                    return;
                }
                while let Ok(frame) = rx.try_recv() {
                    if sink.feed(Message::Text(frame)).await.is_err() {
                        return;
                    }
                }
                if sink.flush().await.is_err() {
                    return;
                }
            }
            let _ = sink.close(None).await;
        });
        while let Some(Ok(message)) = source.next().await {
            if let Message::Text(text) = message {
                rooms.on_text(id, &text);
            }
        }
        rooms.leave(id);
        writer.await;
    }
    rooms.state.borrow_mut().open -= 1;
}

/// The `type` of a client frame as clients write it (`{"type":"..."`).
fn frame_type(text: &str) -> &str {
    let rest = text.strip_prefix("{\"type\":\"").unwrap_or("");
    rest.split('"').next().unwrap_or("")
}

/// The 6-character code of room `n` (the server's alphabet).
fn room_code(n: u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    (0..6)
        .map(|i| char::from(ALPHABET[(n >> (5 * i)) as usize % ALPHABET.len()]))
        .collect()
}

impl Rooms {
    fn on_text(&self, id: u64, text: &str) {
        let mut st = self.state.borrow_mut();
        let script = &self.script;
        let seat = st.conns.get(&id).and_then(|c| c.seat);
        match frame_type(text) {
            "hello" => {
                let welcome = format!(
                    "{{\"type\":\"welcome\",\"player_id\":\"{id:012x}\",\"token\":\"room-{id}\",\"name\":\"Guest\"}}"
                );
                st.send(id, Utf8Bytes::from(welcome));
                for frame in &script.hello {
                    st.send(id, frame.clone());
                }
            }
            "create_lobby" if seat.is_none() => {
                // At most one room per two connections: the table stays bounded.
                if st.rooms.len() * 2 >= self.settings.connections_max {
                    return;
                }
                st.next_room += 1;
                let room = st.next_room;
                let code = room_code(room);
                for frame in &script.created {
                    st.send(id, Utf8Bytes::from(frame.replace(&script.code, &code)));
                }
                st.codes.insert(code.clone(), room);
                st.rooms.insert(
                    room,
                    Room {
                        code,
                        seats: vec![id],
                        phase: Phase::Waiting,
                    },
                );
                if let Some(c) = st.conns.get_mut(&id) {
                    c.seat = Some((room, 0));
                }
            }
            "join_lobby" if seat.is_none() => {
                let Some(code) = serde_json::from_str::<serde_json::Value>(text)
                    .ok()
                    .and_then(|v| v["code"].as_str().map(str::to_owned))
                else {
                    return;
                };
                let Some(&room_id) = st.codes.get(&code) else {
                    return;
                };
                let Some(room) = st.rooms.get_mut(&room_id) else {
                    return;
                };
                if room.phase != Phase::Waiting || room.seats.len() >= SEATS {
                    return;
                }
                room.seats.push(id);
                let seats = room.seats.clone();
                let frames = &script.joined[seats.len() - 2];
                for (viewer, frames) in seats.iter().zip(frames) {
                    for frame in frames {
                        st.send(*viewer, Utf8Bytes::from(frame.replace(&script.code, &code)));
                    }
                }
                if let Some(c) = st.conns.get_mut(&id) {
                    c.seat = Some((room_id, seats.len() - 1));
                }
            }
            "start_game" => {
                let Some((room_id, 0)) = seat else { return };
                let Some(room) = st.rooms.get_mut(&room_id) else {
                    return;
                };
                if room.phase != Phase::Waiting || room.seats.len() != SEATS {
                    return;
                }
                room.phase = Phase::Playing(0);
                let seats = room.seats.clone();
                st.broadcast(&seats, &script.started);
            }
            "action" => {
                let Some((room_id, seat)) = seat else { return };
                let Some(room) = st.rooms.get_mut(&room_id) else {
                    return;
                };
                let Phase::Playing(n) = room.phase else {
                    return;
                };
                let Some(step) = script.steps.get(n) else {
                    return;
                };
                if usize::from(step.mover) != seat {
                    return; // not this seat's turn
                }
                room.phase = if n + 1 == script.steps.len() {
                    Phase::Finished
                } else {
                    Phase::Playing(n + 1)
                };
                let seats = room.seats.clone();
                st.broadcast(&seats, &step.frames);
            }
            "return_to_lobby" => {
                let Some((room_id, 0)) = seat else { return };
                let Some(room) = st.rooms.get_mut(&room_id) else {
                    return;
                };
                if room.phase != Phase::Finished {
                    return;
                }
                room.phase = Phase::Waiting;
                let seats = room.seats.clone();
                st.broadcast(&seats, &script.returned);
            }
            _ => {}
        }
    }

    /// Connection `id` is gone: its seat is freed, and an empty room removed.
    fn leave(&self, id: u64) {
        let mut st = self.state.borrow_mut();
        let Some(conn) = st.conns.remove(&id) else {
            return;
        };
        let Some((room_id, _)) = conn.seat else {
            return;
        };
        let Some(room) = st.rooms.get_mut(&room_id) else {
            return;
        };
        room.seats.retain(|&c| c != id);
        if room.seats.is_empty() {
            let code = room.code.clone();
            st.rooms.remove(&room_id);
            st.codes.remove(&code);
        }
    }
}

impl State {
    /// Queues `frame` for `id`; a connection whose queue is full is cut (its writer
    /// sees the channel closed and closes the socket).
    fn send(&mut self, id: u64, frame: Utf8Bytes) {
        if let Some(c) = self.conns.get(&id)
            && c.tx.try_send(frame).is_err()
        {
            c.tx.close();
        }
    }

    fn broadcast(&mut self, seats: &[u64], frames: &script::PerSeat) {
        for (viewer, frames) in seats.iter().zip(frames) {
            for frame in frames {
                self.send(*viewer, frame.clone());
            }
        }
    }
}
