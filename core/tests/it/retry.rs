//! Every `busy` carries `retry_after_ms` (PROTOCOL.md section 6.2): at least the time
//! the refusal can take to go away, spread so that refused clients do not return as one.

use serde_json::Value;
use wizard_core::vocabulary::io::{ConnId, Output};
use wizard_core::vocabulary::wire::ClientMessage;

use crate::driver::{Driver, config};

/// The `retry_after_ms` of every `busy` the last input sent to `conn`.
fn busy_waits(d: &Driver, conn: ConnId) -> Vec<Option<u64>> {
    d.last
        .iter()
        .filter_map(|o| match o {
            Output::Send { conn: c, text, .. } if *c == conn => {
                let v: Value = serde_json::from_str(text).ok()?;
                (v["type"] == "error" && v["code"] == "busy").then(|| v["retry_after_ms"].as_u64())
            }
            _ => None,
        })
        .collect()
}

fn create(d: &mut Driver, conn: ConnId) -> Vec<Option<u64>> {
    d.send(
        conn,
        &ClientMessage::CreateLobby {
            name: format!("P{conn}"),
        },
    );
    busy_waits(d, conn)
}

/// Settings, what is refused (`create` or `connect`), and the range every
/// `retry_after_ms` must fall in.
type Case = (
    &'static [(&'static str, &'static str)],
    &'static str,
    u64,
    u64,
);

#[test]
fn busy_says_when_to_come_back() {
    let cases: [Case; 4] = [
        // Overloaded: the level needs LOAD_RECOVER_SAMPLES calmer samples to recover.
        (
            &[
                ("LOAD_FORCE_LEVEL", "overloaded"),
                ("LOAD_RECOVER_SAMPLES", "8"),
                ("LOAD_SAMPLE_INTERVAL", "2"),
            ],
            "create",
            16_000,
            24_000,
        ),
        // MAX_LOBBIES reached: the floor of 5 s, plus up to half of it.
        (&[("MAX_LOBBIES", "1")], "create", 5_000, 7_500),
        // MAX_CONNECTIONS reached: the refusal before the 1013 close says when too,
        // and a connection limit does not wait for the load level.
        (&[("MAX_CONNECTIONS", "1")], "connect", 5_000, 7_500),
        (
            &[("MAX_CONNECTIONS", "1"), ("LOAD_FORCE_LEVEL", "overloaded")],
            "connect",
            5_000,
            7_500,
        ),
    ];
    for (settings, what, low, high) in cases {
        let mut d = Driver::new(config(settings), 7);
        d.open(ConnId(1), "10.0.0.1");
        d.hello(ConnId(1), None);
        if what == "create" && settings.iter().any(|(k, _)| *k == "MAX_LOBBIES") {
            assert_eq!(
                create(&mut d, ConnId(1)),
                Vec::new(),
                "{settings:?}: first lobby"
            );
        }
        let mut waits = Vec::new();
        for i in 0..40u64 {
            let conn = ConnId(10 + i);
            d.open(conn, &format!("10.0.1.{i}"));
            d.hello(conn, None);
            let got = if what == "create" {
                create(&mut d, conn)
            } else {
                busy_waits(&d, conn)
            };
            assert_eq!(got.len(), 1, "{settings:?}: one busy for conn {conn}");
            let ms = got[0].unwrap_or_else(|| panic!("{settings:?}: busy without retry_after_ms"));
            assert!(
                (low..=high).contains(&ms),
                "{settings:?}: {ms} not in {low}..={high}"
            );
            waits.push(ms);
            d.close(conn);
        }
        waits.sort_unstable();
        waits.dedup();
        assert!(
            waits.len() >= 20,
            "{settings:?}: refused clients told the same wait: {waits:?}"
        );
    }
}
