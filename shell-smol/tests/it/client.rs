//! Test helpers: a server on a free port, a raw HTTP client, a websocket client, and a
//! time bound for every test.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use async_io::{Async, Timer};
use async_tungstenite::WebSocketStream;
use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::client::IntoClientRequest;
use async_tungstenite::tungstenite::http::HeaderValue;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use futures_lite::{FutureExt, StreamExt};
use wizard_core::vocabulary::config::{AiServiceConfig, Config};
use wizard_core::vocabulary::game::{Action, Event};
use wizard_core::vocabulary::rng::Seed;
use wizard_core::vocabulary::wire::{
    ClientMessage, ErrorCode, GameView, LobbyView, ServerMessage, decode_server, encode_client,
};
use wizard_server::ShutdownHandle;

/// A server running on its own thread; shut down when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    handle: ShutdownHandle,
    done: async_channel::Receiver<()>,
}

impl TestServer {
    /// Starts a server with `pairs` on top of test defaults (no grace period).
    pub fn start(pairs: &[(&str, &str)]) -> TestServer {
        TestServer::start_on("127.0.0.1:0".parse().unwrap(), pairs)
    }

    /// Starts a server on `addr` (e.g. the address of one that was stopped). The AI
    /// service is embedded only when `pairs` say `EMBEDDED_AI=1` (its settings come from
    /// `pairs` too).
    pub fn start_on(addr: SocketAddr, pairs: &[(&str, &str)]) -> TestServer {
        let mut all = vec![
            ("SHUTDOWN_GRACE", "0"),
            ("BIND", "127.0.0.1:0"),
            ("STORE", "memory"),
            ("EMBEDDED_AI", "0"),
        ];
        all.extend_from_slice(pairs);
        let config = Config::from_pairs(all.iter().copied()).unwrap();
        let embedded_ai = config
            .shell
            .embedded_ai
            .then(|| AiServiceConfig::from_pairs(all.iter().copied()).unwrap());
        let listener = TcpListener::bind(addr).unwrap();
        let addr = listener.local_addr().unwrap();
        let (handle, signal) = ShutdownHandle::new();
        let (finished, done) = async_channel::bounded(1);
        std::thread::spawn(move || {
            let result =
                wizard_server::run_with(config, embedded_ai, listener, Seed::from_u64(7), signal);
            let _ = finished.try_send(());
            result
        });
        TestServer { addr, handle, done }
    }

    /// Starts the graceful shutdown, like SIGTERM.
    pub fn shutdown(&self) {
        self.handle.trigger();
    }

    /// Whether `run_on` returned within `secs` seconds.
    pub fn join(&self, secs: u64) -> bool {
        let wait = async { self.done.recv().await.is_ok() };
        smol::block_on(wait.or(async {
            Timer::after(Duration::from_secs(secs)).await;
            false
        }))
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.handle.trigger();
    }
}

/// Runs `f` to completion or fails the test after `secs` seconds.
pub fn bounded<T>(secs: u64, f: impl Future<Output = T>) -> T {
    smol::block_on(f.or(async {
        Timer::after(Duration::from_secs(secs)).await;
        panic!("test timed out after {secs} s");
    }))
}

/// Sends a raw HTTP request and returns the status and the body.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut tcp = Async::<TcpStream>::connect(addr).await.unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).await.unwrap();
    parse_response(&response)
}

/// The status and body of a raw HTTP response (0 and "" for junk).
pub fn parse_response(response: &str) -> (u16, String) {
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

pub type Client = WebSocketStream<Async<TcpStream>>;

/// Opens a websocket; `Err(status)` when the server answered with a plain HTTP status.
pub async fn ws(
    addr: SocketAddr,
    path: &str,
    headers: &[(&'static str, &str)],
) -> Result<Client, u16> {
    let mut request = format!("ws://{addr}{path}").into_client_request().unwrap();
    for (name, value) in headers {
        request
            .headers_mut()
            .append(*name, HeaderValue::from_str(value).unwrap());
    }
    let tcp = Async::<TcpStream>::connect(addr).await.unwrap();
    // As a browser's: no Nagle delay (two frames sent back to back, the second waiting
    // for the server's delayed acknowledgement of the first, 40 ms a round).
    tcp.get_ref().set_nodelay(true).unwrap();
    match async_tungstenite::client_async(request, tcp).await {
        Ok((ws, _)) => Ok(ws),
        Err(async_tungstenite::tungstenite::Error::Http(response)) => {
            Err(response.status().as_u16())
        }
        Err(e) => panic!("handshake failed: {e}"),
    }
}

/// Reads until the server's close frame and returns its code (0 for a close without
/// one, or the end of the stream).
pub async fn close_code(ws: &mut Client) -> u16 {
    while let Some(message) = ws.next().await {
        match message {
            Ok(Message::Close(frame)) => return frame.map_or(0, |f| u16::from(f.code)),
            Ok(_) => {}
            Err(_) => return 0,
        }
    }
    0
}

/// The next text frame.
pub async fn next_text(ws: &mut Client) -> String {
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(text))) => return text.as_str().to_owned(),
            Some(Ok(_)) => {}
            other => panic!("expected a text frame, got {other:?}"),
        }
    }
}

/// Opens a TCP connection to `addr` from the local address `from` (any 127.0.0.x works
/// on Linux without configuration), so that tests can act as several client IPs.
pub fn tcp_from(addr: SocketAddr, from: std::net::IpAddr) -> Async<TcpStream> {
    use rustix::net::{AddressFamily, SocketType, bind, connect, socket};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    bind(&fd, &SocketAddr::new(from, 0)).unwrap();
    // A blocking connect to loopback completes at once (the listener's backlog is free).
    connect(&fd, &addr).unwrap();
    let tcp = TcpStream::from(fd);
    tcp.set_nodelay(true).unwrap();
    Async::new(tcp).unwrap()
}

/// Opens a player websocket from the local address `from`.
pub async fn ws_from(addr: SocketAddr, from: std::net::IpAddr) -> Client {
    let request = format!("ws://{addr}/ws").into_client_request().unwrap();
    let (ws, _) = async_tungstenite::client_async(request, tcp_from(addr, from))
        .await
        .unwrap();
    ws
}

/// Upgrades `tcp` to a player's websocket by hand and says `hello`, reading nothing but
/// the 101: a client that may stop reading.
pub async fn raw_hello(tcp: &mut Async<TcpStream>) {
    let request = "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
                   Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                   Sec-WebSocket-Version: 13\r\n\r\n";
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 129];
    tcp.read_exact(&mut head).await.unwrap();
    assert!(head.starts_with(b"HTTP/1.1 101"));
    tcp.write_all(&client_frame(r#"{"type":"hello","token":null}"#))
        .await
        .unwrap();
}

/// A masked client text frame (mask 0: the payload goes as is).
pub fn client_frame(text: &str) -> Vec<u8> {
    let mut f = Vec::new();
    wizard_core::shell::ws::encode::client_frame(&mut f, 0x81, Some([0; 4]), text.as_bytes());
    f
}

/// `127.0.0.n`.
pub fn local(n: u8) -> std::net::IpAddr {
    std::net::IpAddr::from([127, 0, 0, n])
}

/// The next message, decoded; panics on a close or a frame that is not a message.
pub async fn next_message(ws: &mut Client) -> ServerMessage {
    let text = next_text(ws).await;
    decode_server(&text).unwrap_or_else(|e| panic!("undecodable {text:?}: {e}"))
}

/// Sends one client message.
pub async fn send(ws: &mut Client, message: &ClientMessage) {
    ws.send(Message::text(encode_client(message)))
        .await
        .unwrap();
}

/// Skips other messages on `ws` up to the next `state`.
pub async fn next_state(ws: &mut Client) -> View {
    loop {
        if let ServerMessage::State {
            lobby,
            game,
            events,
        } = next_message(ws).await
        {
            return View {
                lobby,
                game,
                events,
            };
        }
    }
}

/// Creates a private lobby as `name` on `ws`, adds two AI seats and starts the game
/// (without reading the answers).
pub async fn start_against_two_ai(ws: &mut Client, name: &str) {
    let create = ClientMessage::CreateLobby {
        name: name.into(),
        public: false,
    };
    send(ws, &create).await;
    send(ws, &ClientMessage::AddAi { level: None }).await;
    send(ws, &ClientMessage::AddAi { level: None }).await;
    send(ws, &ClientMessage::StartGame).await;
}

/// `GET path` from the local address `from`: status and body (status 0 when the socket
/// was closed without an answer).
pub async fn get_from(addr: SocketAddr, from: std::net::IpAddr, path: &str) -> (u16, String) {
    let mut tcp = tcp_from(addr, from);
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    if tcp.write_all(request.as_bytes()).await.is_err() {
        return (0, String::new());
    }
    let mut response = String::new();
    let _ = tcp.read_to_string(&mut response).await;
    parse_response(&response)
}

/// A player's `state`, the fields tests look at.
#[derive(Clone, Debug)]
pub struct View {
    pub lobby: Option<LobbyView>,
    pub game: Option<GameView>,
    pub events: Vec<Event>,
}

/// A player connection that said hello.
pub struct Player {
    pub ws: Client,
    pub id: String,
    pub token: String,
}

impl Player {
    /// Connects from 127.0.0.1 and says hello (with `token` to resume); returns the
    /// player and the `state` that follows `welcome` and `server_status`.
    pub async fn hello(addr: SocketAddr, token: Option<&str>) -> (Player, View) {
        let ws = ws(addr, "/ws", &[]).await.unwrap();
        Player::hello_on(ws, token).await
    }

    /// Says hello on an open websocket.
    pub async fn hello_on(ws: Client, token: Option<&str>) -> (Player, View) {
        let (player, _, view) = Player::hello_with_status(ws, token).await;
        (player, view)
    }

    /// [`Player::hello_on`], also returning the `accepting_games` of the
    /// `server_status` that came after `welcome`.
    pub async fn hello_with_status(mut ws: Client, token: Option<&str>) -> (Player, bool, View) {
        let hello = ClientMessage::Hello {
            token: token.map(str::to_owned),
            deltas: false,
            profile_key: None,
        };
        send(&mut ws, &hello).await;
        let ServerMessage::Welcome {
            player_id, token, ..
        } = next_message(&mut ws).await
        else {
            panic!("no welcome");
        };
        let mut player = Player {
            ws,
            id: player_id,
            token,
        };
        let ServerMessage::ServerStatus {
            accepting_games, ..
        } = player.next().await
        else {
            panic!("no server_status after welcome");
        };
        let view = player.next_state().await;
        (player, accepting_games, view)
    }

    pub async fn send(&mut self, message: ClientMessage) {
        send(&mut self.ws, &message).await;
    }

    pub async fn next(&mut self) -> ServerMessage {
        next_message(&mut self.ws).await
    }

    /// Skips other messages up to the next `state`.
    pub async fn next_state(&mut self) -> View {
        next_state(&mut self.ws).await
    }

    /// The next `state`; an `error` on the way fails the test (a refused move).
    pub async fn next_state_no_error(&mut self) -> View {
        loop {
            match self.next().await {
                ServerMessage::State {
                    lobby,
                    game,
                    events,
                } => {
                    return View {
                        lobby,
                        game,
                        events,
                    };
                }
                ServerMessage::Error { code, message, .. } => {
                    panic!("refused: {code:?} {message}")
                }
                _ => {}
            }
        }
    }

    /// Reads states until one satisfies `f`.
    pub async fn state_where(&mut self, mut f: impl FnMut(&View) -> bool) -> View {
        loop {
            let view = self.next_state().await;
            if f(&view) {
                return view;
            }
        }
    }

    /// Reads until an `error` and returns its code; panics on a `state` when `strict`.
    pub async fn next_error(&mut self) -> ErrorCode {
        loop {
            if let ServerMessage::Error { code, .. } = self.next().await {
                return code;
            }
        }
    }

    /// Creates a lobby and returns its code.
    pub async fn create_lobby(&mut self, name: &str) -> String {
        let view = self.create_lobby_view(name).await;
        view.lobby.map(|l| l.code).unwrap_or_default()
    }

    /// Creates a lobby and returns the first state showing it.
    pub async fn create_lobby_view(&mut self, name: &str) -> View {
        self.send(ClientMessage::CreateLobby {
            name: name.into(),
            public: false,
        })
        .await;
        self.state_where(|v| v.lobby.is_some()).await
    }

    /// Joins the lobby `code` and returns the state showing the seat.
    pub async fn join_lobby(&mut self, code: &str, name: &str) -> View {
        self.send(ClientMessage::JoinLobby {
            code: code.into(),
            name: name.into(),
        })
        .await;
        let id = self.id.clone();
        self.state_where(|v| {
            v.lobby
                .as_ref()
                .is_some_and(|l| l.players.iter().any(|p| p.id == id))
        })
        .await
    }

    /// Adds an AI seat (host) and waits for the state showing `seats` seats.
    pub async fn add_ai(&mut self, seats: usize) {
        self.send(ClientMessage::AddAi { level: None }).await;
        self.state_where(|v| v.lobby.as_ref().is_some_and(|l| l.players.len() == seats))
            .await;
    }

    /// Starts the game (host) and returns the first state with a game.
    pub async fn start_game(&mut self) -> View {
        self.send(ClientMessage::StartGame).await;
        self.state_where(|v| v.game.is_some()).await
    }
}

/// When `view` awaits this player's action, the first legal one.
pub fn my_move(view: &View) -> Option<Action> {
    let game = view.game.as_ref()?;
    let obs = &game.observation;
    if game.you.is_none() || obs.to_act != game.you {
        return None;
    }
    obs.legal_actions.first().copied()
}

/// The sum of the `/metrics` samples `series` names, 0 when absent: a name alone
/// (`wizard_fallbacks_total`) takes every labelled sample of it, a name with labels
/// (`wizard_moves_total{by="ai"}`) that one sample.
pub async fn metric(addr: SocketAddr, series: &str) -> f64 {
    let (_, body) = http(addr, "GET", "/metrics", &[]).await;
    metric_in(&body, series)
}

/// [`metric`] of a `/metrics` body.
pub fn metric_in(body: &str, series: &str) -> f64 {
    body.lines()
        .filter(|l| {
            l.strip_prefix(series)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// The test process's resident memory in KiB (the server runs in it).
pub fn vm_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}
