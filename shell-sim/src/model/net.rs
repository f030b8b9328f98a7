//! The network: connection ids, who owns each connection, and one-way latency per
//! connection. Latency is fixed per connection, so frames on one connection keep their
//! order (as TCP does) while connections differ from each other.

use std::net::IpAddr;

use rand_chacha::ChaCha12Rng;
use wizard_core::Time;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::ConnKind;
use wizard_core::vocabulary::wire::CloseCode;

use crate::host::outbox::Frame;
use crate::model::conn_map::ConnMap;
use crate::model::dist::Dist;
use crate::model::queue::EventQueue;

/// Who holds the client end of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// A simulated client (index into the clients).
    Client(usize),
    /// The AI service.
    Ai,
    /// A flooder, lobby spammer or storm connection of attack group `n`.
    Attacker(usize),
}

/// What reaches the server's side of a connection.
#[derive(Clone, Debug)]
pub enum Arrive {
    Open {
        ip: IpAddr,
        kind: ConnKind,
    },
    Text(String),
    /// Raw websocket frame bytes (masked client frames), read by the connection's
    /// `wizard_core::shell::ws::FrameReader`: only the fragment flooders send these.
    Raw(Vec<u8>),
    /// A TCP socket accepted by the shell that never sends its request head; `slow`:
    /// it sends the start of one, and never the rest.
    Silent {
        ip: IpAddr,
        slow: bool,
    },
    /// A binary frame (the protocol allows none).
    Binary,
    /// The peer closed (or answered our close).
    Close,
    /// The embedded AI service's link opens (`EMBEDDED_AI=1`): no socket, no door.
    OpenInProcess,
    /// A reply of the embedded AI service, as a value (no frame, no JSON).
    AiReply(Box<wizard_core::vocabulary::wire::AiReply>),
}

/// Everything that happens in the simulation.
#[derive(Clone, Debug)]
pub enum Ev {
    /// A frame reaches the server.
    ServerArrive { conn: ConnId, what: Arrive },
    /// The server thread may run a loop iteration.
    LoopRun,
    /// The core's deadline.
    CoreTimer,
    /// The load probe's sleep ends.
    ProbeWake,
    /// The server thread blocks for `us` (a stall).
    Stall { us: u64 },
    /// A chunk of other work on the server thread.
    Background { index: usize },
    /// Frames reach a client's socket.
    Deliver { conn: ConnId, frames: Vec<Frame> },
    /// A decide request handed to the embedded AI service as a value (`EMBEDDED_AI=1`).
    AiInProcess {
        conn: ConnId,
        request: Box<wizard_core::vocabulary::wire::AiRequest>,
    },
    /// A slow reader finished reading `bytes` of one frame.
    SlowRead { conn: ConnId, bytes: usize },
    /// The server closed the connection (with a close frame, or dropped it).
    ClientClosed {
        conn: ConnId,
        code: Option<CloseCode>,
    },
    /// A client's timer.
    ClientTimer { client: usize, generation: u64 },
    /// An attack or arrival source's next step.
    Source { index: usize },
    /// A storm connection is let go.
    StormRelease { conn: ConnId },
    /// A silent socket's `FIRST_BYTE_TIMEOUT` is over (a slow head's
    /// `HANDSHAKE_TIMEOUT`).
    FirstByteTimeout { conn: ConnId },
    /// A mute connection's `KEEPALIVE_TIMEOUT` may be over.
    KeepaliveCheck { conn: ConnId },
    /// A blocked write's `WRITE_TIMEOUT` may be over.
    WriteTimeout { conn: ConnId },
    /// SIGTERM.
    Shutdown,
    /// The server process is killed (`kill -9`): restart `index` of the scenario.
    Crash { index: usize },
    /// The killed process is started again on its durable store.
    ComeBack { index: usize },
    /// The AI service: a worker finished.
    AiDone {
        request_id: u64,
        agent: wizard_ai::admission::JobAgent,
        took_us: u64,
        /// In process (`EMBEDDED_AI=1`): the decision's CPU, charged to the quota.
        cpu_us: u64,
        conn: ConnId,
    },
    /// The AI service: a fault starts or ends, or a flap.
    AiFault { index: usize, start: bool },
    /// The AI service reconnects.
    AiConnect,
    /// A timeline second ends.
    Tick,
    /// The fault phase ends; the liveness phase begins.
    Heal,
    /// A reconnecting player drops its connection and comes back.
    Reconnect { client: usize },
    /// A player closes its connection and never comes back.
    WalkAway { client: usize },
    /// A spectator says its next line of table chat.
    Chat { client: usize },
    /// The end of the run.
    End,
}

/// Connections and their latencies.
#[derive(Debug)]
pub struct Net {
    next_conn: ConnId,
    latency_us: ConnMap<u64>,
    pub owner: ConnMap<Owner>,
    pub ip: ConnMap<IpAddr>,
    /// Connections whose peer never answers a ping (mute attackers).
    pub mute: ConnMap<()>,
    dist: Dist,
    rng: ChaCha12Rng,
}

impl Net {
    pub fn new(dist: Dist, rng: ChaCha12Rng) -> Net {
        Net {
            next_conn: ConnId(1),
            latency_us: ConnMap::default(),
            owner: ConnMap::default(),
            ip: ConnMap::default(),
            mute: ConnMap::default(),
            dist,
            rng,
        }
    }

    /// A new connection of `owner` from `ip`, with its drawn one-way latency.
    fn register(&mut self, owner: Owner, ip: IpAddr) -> (ConnId, u64) {
        let conn = self.next_conn;
        self.next_conn = conn.next();
        let lat = self.dist.sample_us(&mut self.rng).max(1);
        self.latency_us.insert(conn, lat);
        self.owner.insert(conn, owner);
        self.ip.insert(conn, ip);
        (conn, lat)
    }

    /// Opens a connection: the server sees it after one latency.
    pub fn open(
        &mut self,
        q: &mut EventQueue<Ev>,
        now: Time,
        owner: Owner,
        ip: IpAddr,
        kind: ConnKind,
    ) -> ConnId {
        let (conn, lat) = self.register(owner, ip);
        // The TCP and websocket handshakes take about two round trips.
        q.push(
            now.plus_us(3 * lat),
            Ev::ServerArrive {
                conn,
                what: Arrive::Open { ip, kind },
            },
        );
        conn
    }

    /// Opens a TCP socket that will never send its request head (`slow`: only the start
    /// of it): the shell accepts it after one latency (the SYN).
    pub fn open_silent(
        &mut self,
        q: &mut EventQueue<Ev>,
        now: Time,
        owner: Owner,
        ip: IpAddr,
        slow: bool,
    ) -> ConnId {
        let (conn, lat) = self.register(owner, ip);
        q.push(
            now.plus_us(lat),
            Ev::ServerArrive {
                conn,
                what: Arrive::Silent { ip, slow },
            },
        );
        conn
    }

    /// The id the next connection will get: every connection so far is below it.
    pub fn next_conn(&self) -> ConnId {
        self.next_conn
    }

    pub fn latency_us(&self, conn: ConnId) -> u64 {
        self.latency_us.get(&conn).copied().unwrap_or(1000)
    }

    /// Names a connection that never crosses the network: the embedded AI service's
    /// in-process link. It reaches the server at once ([`Arrive::OpenInProcess`]).
    pub fn open_in_process(
        &mut self,
        q: &mut EventQueue<Ev>,
        now: Time,
        owner: Owner,
        ip: IpAddr,
    ) -> ConnId {
        let (conn, _) = self.register(owner, ip);
        self.latency_us.insert(conn, 0);
        q.push(
            now,
            Ev::ServerArrive {
                conn,
                what: Arrive::OpenInProcess,
            },
        );
        conn
    }

    /// A frame from the client end to the server.
    pub fn to_server(&self, q: &mut EventQueue<Ev>, now: Time, conn: ConnId, what: Arrive) {
        q.push(
            now.plus_us(self.latency_us(conn)),
            Ev::ServerArrive { conn, what },
        );
    }
}
