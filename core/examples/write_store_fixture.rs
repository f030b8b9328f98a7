//! Writes `fixtures/store/vN.jsonl` (N = `RECORD_VERSION`), the records of a short
//! session as this version stores them, and `fixtures/store/vN.views.json`, what every
//! seat saw at its end (`Server::durable_views`). `core/tests/it/durable.rs` restores
//! each version's records and compares with its views, so that a later version must
//! keep reading every earlier one (or migrate it).
//!
//! `cargo run -p wizard-core --example write_store_fixture`
//!
//! Run it again only for a new record version (it refuses to overwrite a version's
//! files): the point of a fixture is that it stays as its version wrote it.

// A tool around the core, not the core: it writes the fixture files.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(clippy::expect_used, clippy::unwrap_used)]

use serde_json::{Value, json};
use wizard_core::machine::records::Record;
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::io::{ConnId, ConnKind, Input, Output};
use wizard_core::vocabulary::rng::Seed;
use wizard_core::{Server, Time};

struct Run {
    server: Server,
    now: Time,
    records: Vec<Record>,
    last_state: std::collections::BTreeMap<u64, Value>,
}

impl Run {
    fn input(&mut self, input: Input) {
        let mut out = Vec::new();
        self.server.handle(self.now, input, &mut out);
        self.records.extend(self.server.take_records());
        for o in out {
            if let Output::Send { conn, text, .. } = o {
                let v: Value = serde_json::from_str(&text).unwrap();
                if v["type"] == "state" {
                    self.last_state.insert(conn.0, v);
                }
            }
        }
    }

    fn send(&mut self, conn: u64, msg: Value) {
        self.input(Input::from_text(
            ConnId(conn),
            ConnKind::Player,
            &msg.to_string(),
        ));
    }

    fn advance_ms(&mut self, ms: u64) {
        self.now = self.now.plus_us(ms * 1000);
        self.input(Input::Timeout);
    }

    fn legal(&self, conn: u64) -> Vec<Value> {
        self.last_state
            .get(&conn)
            .and_then(|s| {
                s["game"]["observation"]["legal_actions"]
                    .as_array()
                    .cloned()
            })
            .unwrap_or_default()
    }
}

fn main() {
    let config = Config::from_pairs([("AI_MOVE_DELAY", "0.5"), ("TRICK_PAUSE", "0")]).unwrap();
    let mut server = Server::new(config, Seed::from_u64(2026), Time::ZERO);
    server.keep_records();
    let mut run = Run {
        server,
        now: Time::ZERO,
        records: Vec::new(),
        last_state: Default::default(),
    };
    for (conn, ip) in [(1, "10.0.0.1"), (2, "10.0.0.2"), (3, "10.0.0.3")] {
        run.input(Input::Opened {
            conn: ConnId(conn),
            kind: ConnKind::Player,
            ip: ip.parse().unwrap(),
        });
        run.send(conn, json!({"type": "hello", "token": null}));
    }
    // A running game: Ann hosts Bob and an AI seat, with hidden bids and a turn timer.
    run.send(1, json!({"type": "create_lobby", "name": "Ann"}));
    let code = run.last_state[&1]["lobby"]["code"]
        .as_str()
        .unwrap()
        .to_string();
    run.send(
        2,
        json!({"type": "join_lobby", "code": code, "name": "Bob"}),
    );
    run.send(1, json!({"type": "add_ai"}));
    run.send(
        1,
        json!({"type": "set_options", "hidden_bids": true, "bid_restriction": "house", "turn_seconds": 30}),
    );
    run.send(1, json!({"type": "start_game"}));
    // A waiting lobby: Cat's.
    run.send(3, json!({"type": "create_lobby", "name": "Cat"}));
    // Some rounds: the humans play their first legal action, the AI seat its own.
    for _ in 0..40 {
        for conn in [1, 2] {
            if let Some(action) = run.legal(conn).first().cloned() {
                run.send(conn, json!({"type": "action", "action": action}));
            }
        }
        run.advance_ms(600);
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/store");
    std::fs::create_dir_all(dir).unwrap();
    let v = wizard_core::machine::records::RECORD_VERSION;
    let (records, views) = (
        format!("{dir}/v{v}.jsonl"),
        format!("{dir}/v{v}.views.json"),
    );
    for file in [&records, &views] {
        assert!(
            !std::path::Path::new(file).exists(),
            "{file} exists: a version's fixture is never rewritten"
        );
    }
    let lines: String = run.records.iter().map(|r| r.encode() + "\n").collect();
    std::fs::write(&records, lines).unwrap();
    let text = serde_json::to_string_pretty(&run.server.durable_views()).unwrap();
    std::fs::write(&views, text + "\n").unwrap();
    println!(
        "{} records, {} lobbies",
        run.records.len(),
        run.server.durable_views().len()
    );
}
