//! One real game's frames, recorded at start-up through `wizard_core::Server`: what the
//! room replays, so that its frames are the real server's, byte for byte (sizes, layout,
//! events), while serving them takes no game logic: a table lookup per move.

use async_tungstenite::tungstenite::Utf8Bytes;
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::game::Action;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{ConnKind, Input, Output};
use wizard_core::vocabulary::rng::Seed;
use wizard_core::vocabulary::wire::{ClientMessage, GameView, LobbyStatus, LobbyView, peek};
use wizard_core::{Server, Time};

/// Seats per game: the room plays 4 humans (`wizard-bench --humans 4 --seats 4`).
pub const SEATS: usize = 4;

/// What each seat receives after one event of the game, in seat order.
pub type PerSeat = [Vec<Utf8Bytes>; SEATS];

/// One move of the recorded game: who makes it, and what each seat then receives.
#[derive(Debug)]
pub struct Step {
    pub mover: u8,
    pub frames: PerSeat,
}

/// The frames of one recorded game of 4 humans, each of whom always played the first
/// of its legal actions (as `wizard-bench`'s bots do).
#[derive(Debug)]
pub struct Script {
    /// The lobby code in the recorded frames; the room writes its own in its place in
    /// the lobby frames before the game starts (`created`, `joined`).
    pub code: String,
    /// After `hello`, besides `welcome` (which the room writes per connection).
    pub hello: Vec<Utf8Bytes>,
    /// The host's frames after `create_lobby`.
    pub created: Vec<String>,
    /// `joined[j]`: after the (j+1)-th guest joined, for seats 0..=j+1.
    pub joined: Vec<Vec<Vec<String>>>,
    /// After `start_game`.
    pub started: PerSeat,
    pub steps: Vec<Step>,
    /// After the host's `return_to_lobby` at the end of the game.
    pub returned: PerSeat,
}

/// Why the recording failed: the core did not answer as a 4-human game does (a bug
/// here or a changed protocol, not the user's).
#[derive(Debug)]
pub struct RecordError(pub String);

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "recording the game's frames failed: {}", self.0)
    }
}

impl std::error::Error for RecordError {}

/// Moves one game may take at most (a 4-player game has 540).
const STEPS_MAX: usize = 2_000;

struct Recorder {
    server: Server,
    now: Time,
}

impl Recorder {
    /// Feeds `message` from seat `from` and returns what each of the 4 seats got.
    fn send(&mut self, from: usize, message: ClientMessage) -> [Vec<String>; SEATS] {
        self.input(Input::Message {
            conn: conn(from),
            message,
        })
    }

    fn input(&mut self, input: Input) -> [Vec<String>; SEATS] {
        // 10 ms between inputs: no rate limit sees a burst.
        self.now = Time::from_millis(self.now.0 / 1000 + 10);
        let mut out = Vec::new();
        self.server.handle(self.now, input, &mut out);
        // Whatever falls due at once (with no pauses configured, nothing should).
        for _ in 0..16 {
            match self.server.poll_timeout() {
                Some((at, _)) if at <= self.now => {
                    self.server.handle(self.now, Input::Timeout, &mut out)
                }
                _ => break,
            }
        }
        let mut per_seat: [Vec<String>; SEATS] = Default::default();
        for o in out {
            if let Output::Send { conn: c, text, .. } = o
                && let Some(seat) = (0..SEATS).find(|&s| conn(s) == c)
            {
                per_seat[seat].push(text);
            }
        }
        per_seat
    }
}

fn conn(seat: usize) -> ConnId {
    ConnId(seat as u64 + 1)
}

fn bytes(frames: [Vec<String>; SEATS]) -> PerSeat {
    frames.map(|f| f.into_iter().map(Utf8Bytes::from).collect())
}

/// The last `state` in `frames`, split: its lobby and game parts, decoded.
fn last_state(frames: &[String]) -> Option<(Option<LobbyView>, Option<GameView>)> {
    let text = frames
        .iter()
        .rev()
        .find(|t| peek::frame_type(t) == "state")?;
    let parts = peek::state_parts(text, "")?;
    Some((
        serde_json::from_str(parts.lobby).ok()?,
        serde_json::from_str(parts.game).ok()?,
    ))
}

/// Plays one game of 4 humans through the real core and keeps every frame it sent.
pub fn record() -> Result<Script, RecordError> {
    let fail = |what: &str| RecordError(what.to_owned());
    let config = Config::from_pairs([
        ("TRICK_PAUSE", "0"),
        ("AI_MOVE_DELAY", "0"),
        ("MESSAGE_RATE", "100000"),
        ("MESSAGE_BURST", "100000"),
    ])
    .map_err(|e| RecordError(format!("config: {e}")))?;
    let mut r = Recorder {
        server: Server::new(config, Seed::from_u64(17), Time::ZERO),
        now: Time::ZERO,
    };
    let hello = r.hello_all();
    let created = r.send(
        0,
        ClientMessage::CreateLobby {
            name: "Bench 0".into(),
            public: false,
        },
    );
    let code = last_state(&created[0])
        .and_then(|(lobby, _)| lobby)
        .ok_or_else(|| fail("no lobby after create_lobby"))?
        .code;
    let created = created[0].clone();
    let mut joined = Vec::new();
    for guest in 1..SEATS {
        let got = r.send(
            guest,
            ClientMessage::JoinLobby {
                code: code.clone(),
                name: format!("G{guest}"),
            },
        );
        joined.push(got[..=guest].to_vec());
    }
    let started = r.send(0, ClientMessage::StartGame);
    let steps = r.play(started.clone())?;
    let started = bytes(started);
    let returned = bytes(r.send(0, ClientMessage::ReturnToLobby));
    if returned.iter().any(Vec::is_empty) {
        return Err(fail("return_to_lobby reached not every seat"));
    }
    Ok(Script {
        code,
        hello,
        created,
        joined,
        started,
        steps,
        returned,
    })
}

impl Recorder {
    /// Every seat connects and says hello: the frames the first got after its
    /// `welcome`.
    fn hello_all(&mut self) -> Vec<Utf8Bytes> {
        let mut hello = Vec::new();
        for seat in 0..SEATS {
            self.input(Input::Opened {
                conn: conn(seat),
                kind: ConnKind::Player,
                ip: std::net::IpAddr::from([10, 0, 0, seat as u8 + 1]),
            });
            let got = self.send(
                seat,
                ClientMessage::Hello {
                    token: None,
                    deltas: false,
                    profile_key: None,
                },
            );
            if seat == 0 {
                hello = got[0]
                    .iter()
                    .filter(|t| peek::frame_type(t) != "welcome")
                    .map(|t| Utf8Bytes::from(t.clone()))
                    .collect();
            }
        }
        hello
    }

    /// The started game played to its end, each move by the seat whose view says it is
    /// its turn; `latest` holds each seat's frames of the last input that reached it.
    fn play(&mut self, mut latest: [Vec<String>; SEATS]) -> Result<Vec<Step>, RecordError> {
        let fail = |what: &str| RecordError(what.to_owned());
        let mut steps = Vec::new();
        loop {
            let (finished, next) = to_act(&latest);
            if finished {
                return Ok(steps);
            }
            let (mover, action) = next.ok_or_else(|| fail("no seat to act in a running game"))?;
            if steps.len() >= STEPS_MAX {
                return Err(fail("the game did not finish"));
            }
            let got = self.send(mover, ClientMessage::Action { action });
            if got.iter().any(Vec::is_empty) {
                return Err(RecordError(format!(
                    "move {} reached not every seat",
                    steps.len()
                )));
            }
            // A seat whose view did not change this move keeps its last one for the search.
            for (seat, frames) in got.iter().enumerate() {
                latest[seat] = frames.clone();
            }
            steps.push(Step {
                mover: mover as u8,
                frames: bytes(got),
            });
        }
    }
}

/// From each seat's latest frames: whether the game finished, and the seat to act
/// with its first legal action.
fn to_act(latest: &[Vec<String>; SEATS]) -> (bool, Option<(usize, Action)>) {
    let mut next: Option<(usize, Action)> = None;
    let mut finished = false;
    for (seat, frames) in latest.iter().enumerate() {
        let Some((lobby, game)) = last_state(frames) else {
            continue;
        };
        finished |= lobby.is_some_and(|l| l.status == LobbyStatus::Finished);
        if let Some(g) = game
            && g.you.is_some()
            && g.observation.to_act == g.you
            && let Some(action) = g.observation.legal_actions.first()
        {
            next = Some((seat, *action));
        }
    }
    (finished, next)
}
