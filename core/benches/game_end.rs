//! Criterion benchmark of a game's end on the core: the last move of a 4-player game of
//! four humans, with its four `state`s and the store's records taken, as the core task
//! pays for it. `game_end/rated_with_history`: every seat a profile and `HISTORY_DAYS`
//! at its default, so the last move also updates four ratings (their records) and
//! builds the game's history record (every move encoded); `game_end/guests_no_history`:
//! guests and `HISTORY_DAYS=0`, the same move without either. Their difference is what
//! a finished game adds on the core thread; the store's writer then writes the history
//! row (`shell-smol/examples/history_size.rs`, `--write-runs`). Each iteration plays a
//! whole game untimed and times its last move only.

#![allow(clippy::expect_used, clippy::unwrap_used)]
// a benchmark may stop on a broken setup
// A benchmark measures wall time around the pure core; the core itself never does.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::game::Action;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{ConnKind, Input, Output};
use wizard_core::vocabulary::rng::Seed;
use wizard_core::vocabulary::wire::ClientMessage;
use wizard_core::{Server, Time};

/// Moves a 4-player game cannot exceed (15 rounds: 60 bids and 480 cards, 540).
const GAME_MOVES_MAX: usize = 600;

/// A durable server with one lobby of four humans (connections 1 to 4): profiles and
/// history (`rated`), or guests without history.
struct Table {
    server: Server,
    out: Vec<Output>,
    legal: [Vec<Action>; 5],
}

impl Table {
    fn new(rated: bool) -> Table {
        let history_days = if rated { "90" } else { "0" };
        let config = Config::from_pairs([
            ("AI_MOVE_DELAY", "0"),
            ("TRICK_PAUSE", "0"),
            ("MESSAGE_RATE", "1000000"),
            ("MESSAGE_BURST", "1000000"),
            ("HISTORY_DAYS", history_days),
        ])
        .unwrap();
        let mut server = Server::new(config, Seed::from_u64(1), Time::ZERO);
        server.keep_records();
        server.set_wall_clock(1_800_000_000_000);
        let mut t = Table {
            server,
            out: Vec::new(),
            legal: Default::default(),
        };
        for conn in (1..=4).map(ConnId) {
            let ip = format!("10.0.0.{conn}").parse().unwrap();
            let kind = ConnKind::Player;
            t.input(Input::Opened { conn, kind, ip });
            let hello = ClientMessage::Hello {
                token: None,
                deltas: false,
                profile_key: None,
            };
            t.input(Input::Message {
                conn,
                message: hello,
            });
            if rated {
                let name = format!("Player{}", conn.0);
                t.send(conn, ClientMessage::CreateProfile { name });
            }
        }
        t.send(
            ConnId(1),
            ClientMessage::CreateLobby {
                name: "Ann".into(),
                public: false,
            },
        );
        let code = t.code();
        for conn in 2..=4 {
            let join = ClientMessage::JoinLobby {
                code: code.clone(),
                name: format!("Guest{conn}"),
            };
            t.send(ConnId(conn), join);
        }
        t
    }

    fn code(&self) -> String {
        self.out
            .iter()
            .find_map(|o| match o {
                Output::Send { text, .. } if text.contains("\"lobby\":{") => {
                    let v: Value = serde_json::from_str(text).unwrap();
                    v["lobby"]["code"].as_str().map(str::to_string)
                }
                _ => None,
            })
            .unwrap()
    }

    fn send(&mut self, conn: ConnId, message: ClientMessage) {
        self.input(Input::Message { conn, message });
    }

    fn input(&mut self, input: Input) {
        self.out.clear();
        self.server.handle(Time::ZERO, input, &mut self.out);
        drop(self.server.take_records());
        self.absorb();
    }

    /// The legal actions of each connection from its latest state.
    fn absorb(&mut self) {
        for o in &self.out {
            if let Output::Send { conn, text, .. } = o
                && text.starts_with(r#"{"type":"state""#)
            {
                let legal = text.find("\"legal_actions\":").and_then(|i| {
                    let rest = &text[i + "\"legal_actions\":".len()..];
                    serde_json::Deserializer::from_str(rest)
                        .into_iter::<Vec<Action>>()
                        .next()?
                        .ok()
                });
                self.legal[conn.0 as usize] = legal.unwrap_or_default();
            }
        }
    }

    /// Plays a new game to its end; the time of its last move (the input, its outputs
    /// and the records taken) and the records that move made.
    fn last_move(&mut self) -> (Duration, usize) {
        self.send(ConnId(1), ClientMessage::ReturnToLobby);
        self.send(ConnId(1), ClientMessage::StartGame);
        for _ in 0..GAME_MOVES_MAX {
            let conn = (1..=4)
                .find(|&c| !self.legal[c].is_empty())
                .expect("a seat to move");
            let action = self.legal[conn][0];
            let input = Input::Message {
                conn: ConnId(conn as u64),
                message: ClientMessage::Action { action },
            };
            self.out.clear();
            let start = Instant::now();
            self.server.handle(Time::ZERO, input, &mut self.out);
            let records = self.server.take_records();
            let spent = start.elapsed();
            let count = records.len();
            black_box((&self.out, records));
            let over = self.out.iter().any(|o| {
                matches!(o, Output::Send { text, .. } if text.contains("\"status\":\"finished\""))
            });
            self.absorb();
            if over {
                return (spent, count);
            }
        }
        panic!("the game did not end within {GAME_MOVES_MAX} moves");
    }
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("game_end");
    group.sample_size(20);
    for rated in [true, false] {
        let name = if rated {
            "rated_with_history"
        } else {
            "guests_no_history"
        };
        let mut t = Table::new(rated);
        let (_, records) = t.last_move();
        println!("game_end/{name}: {records} records from the last move");
        group.bench_function(name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| t.last_move().0).sum())
        });
    }
    group.finish();
}

criterion_group!(game_end_benches, benches);
criterion_main!(game_end_benches);
