//! Criterion benchmarks of the server machine: a move in a game of four humans (with
//! the four personal states encoded), the same with a durable store's records kept and
//! taken after each move (`_durable`: what the core adds for a store, without the
//! store's own commit, measured in `shell-smol/benches/store.rs`), the same with every
//! seat taking state deltas (`_deltas`), one seat's delta alone built from the two
//! texts (`deltas/text_diff_one_seat`) and as the server builds it, marking the new
//! state's members and comparing them with the last one's (`deltas/marked_one_seat`), a
//! message dropped by the flood limiter, and a `hello` creating a session.

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
use wizard_core::vocabulary::wire::flat::Flat;
use wizard_core::vocabulary::wire::held::{self, HeldState};
use wizard_core::{Server, Time};

fn config() -> Config {
    Config::from_pairs([
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
        ("MESSAGE_RATE", "1000000"),
        ("MESSAGE_BURST", "1000000"),
        ("MAX_ACTIVE_GAMES", "1000"),
    ])
    .unwrap()
}

fn message(conn: ConnId, message: ClientMessage) -> Input {
    Input::Message { conn, message }
}

/// A server with one lobby of four humans (connections 1 to 4) and a started game.
struct Table {
    server: Server,
    now: Time,
    out: Vec<Output>,
    /// The latest legal actions per connection.
    legal: [Vec<Action>; 5],
    /// The state each connection holds (deltas applied).
    held: [HeldState; 5],
}

impl Table {
    /// `durable`: the server keeps records, taken after every input as a shell does;
    /// `deltas`: every seat's `hello` asks for state deltas.
    fn new(durable: bool, deltas: bool) -> Table {
        let mut server = Server::new(config(), Seed::from_u64(1), Time::ZERO);
        if durable {
            server.keep_records();
        }
        let mut t = Table {
            server,
            now: Time::ZERO,
            out: Vec::new(),
            legal: Default::default(),
            held: Default::default(),
        };
        for conn in (1..=4).map(ConnId) {
            let ip = format!("10.0.0.{conn}").parse().unwrap();
            t.input(Input::Opened {
                conn,
                kind: ConnKind::Player,
                ip,
            });
            t.input(message(
                conn,
                ClientMessage::Hello {
                    token: None,
                    deltas,
                    profile_key: None,
                },
            ));
        }
        t.input(message(
            ConnId(1),
            ClientMessage::CreateLobby {
                name: "Ann".into(),
                public: false,
            },
        ));
        let code = t.code();
        for (conn, name) in [(2, "Bob"), (3, "Cat"), (4, "Dan")] {
            t.input(message(
                ConnId(conn),
                ClientMessage::JoinLobby {
                    code: code.clone(),
                    name: name.into(),
                },
            ));
        }
        t.input(message(ConnId(1), ClientMessage::StartGame));
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

    fn input(&mut self, input: Input) {
        self.out.clear();
        self.server.handle(self.now, input, &mut self.out);
        drop(self.server.take_records());
        self.absorb();
    }

    fn absorb(&mut self) {
        for o in &self.out {
            if let Output::Send { conn, text, .. } = o
                && (text.starts_with(r#"{"type":"state""#)
                    || text.starts_with(r#"{"type":"delta""#))
            {
                let held = &mut self.held[conn.0 as usize];
                held.take(text).unwrap();
                let text = held.text();
                // Only the legal actions matter here; parse just that array.
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

    /// The next move: the acting connection and its first legal action. Restarts the
    /// game when it is over.
    fn next_move(&mut self) -> (ConnId, Action) {
        for _ in 0..3 {
            if let Some(conn) = (1..=4).find(|&c| !self.legal[c].is_empty()) {
                return (ConnId(conn as u64), self.legal[conn][0]);
            }
            self.input(message(ConnId(1), ClientMessage::ReturnToLobby));
            self.input(message(ConnId(1), ClientMessage::StartGame));
        }
        panic!("no seat can move and the game cannot be restarted");
    }
}

fn benches(c: &mut Criterion) {
    for (durable, deltas) in [(false, false), (true, false), (false, true)] {
        let name = match (durable, deltas) {
            (true, _) => "server/move_4_humans_with_4_states_durable",
            (_, true) => "server/move_4_humans_with_4_states_deltas",
            _ => "server/move_4_humans_with_4_states",
        };
        let (mut moves, mut records) = (0u64, 0u64);
        c.bench_function(name, |b| {
            let mut t = Table::new(durable, deltas);
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    let (conn, action) = t.next_move();
                    let input = message(conn, ClientMessage::Action { action });
                    t.out.clear();
                    let start = Instant::now();
                    t.server.handle(t.now, input, &mut t.out);
                    let taken = t.server.take_records();
                    spent += start.elapsed();
                    moves += 1;
                    records += taken.len() as u64;
                    black_box((&t.out, taken));
                    t.absorb();
                }
                spent
            })
        });
        if durable && moves > 0 {
            // The simulator's cost model charges the store per record (shell-sim cost.rs).
            println!(
                "{name}: {:.3} records a move ({records} in {moves} moves)",
                records as f64 / moves as f64
            );
        }
    }

    // One seat's patch from two consecutive states of a game, built by diffing their
    // texts: what each delta costs over a full state.
    let mut t = Table::new(false, false);
    let mut pairs = Vec::new();
    let mut last: Option<String> = None;
    while pairs.len() < 500 {
        let (conn, action) = t.next_move();
        t.input(message(conn, ClientMessage::Action { action }));
        let Some(text) = t.out.iter().find_map(|o| match o {
            Output::Send { conn, text, .. }
                if conn.0 == 1 && text.starts_with("{\"type\":\"state\"") =>
            {
                Some(text.clone())
            }
            _ => None,
        }) else {
            continue;
        };
        if let Some(old) = last.replace(text.clone()) {
            pairs.push((old, text));
        }
    }
    c.bench_function("deltas/text_diff_one_seat", |b| {
        let mut i = 0;
        let mut out = String::with_capacity(4096);
        b.iter(|| {
            let (old, new) = &pairs[i % pairs.len()];
            i += 1;
            out.clear();
            black_box(held::delta_frame(old, new, 2, &mut out).is_ok());
            black_box(&out);
        })
    });
    let marked: Vec<(Flat, String)> = pairs
        .iter()
        .map(|(old, new)| (Flat::new(old.clone()).unwrap(), new.clone()))
        .collect();
    c.bench_function("deltas/marked_one_seat", |b| {
        let mut i = 0;
        let mut out = String::with_capacity(4096);
        b.iter_batched(
            || {
                i += 1;
                let (old, new) = &marked[i % marked.len()];
                (old, new.clone())
            },
            |(old, new)| {
                // The new state is marked once; the server keeps it for the next delta.
                let new = Flat::new(new).unwrap();
                out.clear();
                black_box(held::delta_frame_flat(old, &new, 2, &mut out).is_ok());
                black_box((&out, new));
            },
            criterion::BatchSize::SmallInput,
        )
    });

    c.bench_function("server/flooded_message_dropped", |b| {
        let cfg = Config::from_pairs([("MAX_RATE_VIOLATIONS", "4000000000")]).unwrap();
        let mut server = Server::new(cfg, Seed::from_u64(2), Time::ZERO);
        let mut out = Vec::new();
        let ip = "10.0.0.9".parse().unwrap();
        server.handle(
            Time::ZERO,
            Input::Opened {
                conn: ConnId(9),
                kind: ConnKind::Player,
                ip,
            },
            &mut out,
        );
        server.handle(
            Time::ZERO,
            message(
                ConnId(9),
                ClientMessage::Hello {
                    token: None,
                    deltas: false,
                    profile_key: None,
                },
            ),
            &mut out,
        );
        for _ in 0..40 {
            server.handle(
                Time::ZERO,
                message(ConnId(9), ClientMessage::AddAi { level: None }),
                &mut out,
            );
        }
        b.iter(|| {
            out.clear();
            server.handle(
                Time::ZERO,
                message(ConnId(9), ClientMessage::AddAi { level: None }),
                &mut out,
            );
            black_box(&out);
        })
    });

    c.bench_function("server/hello_new_session", |b| {
        let mut server = Server::new(config(), Seed::from_u64(3), Time::ZERO);
        let mut out = Vec::new();
        let ip = "10.0.0.7".parse().unwrap();
        let mut conn = ConnId(100);
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                conn = conn.next();
                server.handle(
                    Time::ZERO,
                    Input::Opened {
                        conn,
                        kind: ConnKind::Player,
                        ip,
                    },
                    &mut out,
                );
                out.clear();
                let start = Instant::now();
                server.handle(
                    Time::ZERO,
                    message(
                        conn,
                        ClientMessage::Hello {
                            token: None,
                            deltas: false,
                            profile_key: None,
                        },
                    ),
                    &mut out,
                );
                spent += start.elapsed();
                black_box(&out);
                server.handle(Time::ZERO, Input::Closed { conn }, &mut out);
                out.clear();
            }
            spent
        })
    });
}

criterion_group!(server_benches, benches);
criterion_main!(server_benches);
