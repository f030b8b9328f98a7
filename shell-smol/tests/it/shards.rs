//! Shards over real sockets (PROTOCOL.md section 6.3): two servers on loopback with
//! `SHARD_ID` A and B, as a proxy would put them side by side. Codes and tokens name
//! their shard, the other shard sends them home with `wrong_shard`, `/ws/<id>` routes,
//! and `/health` names the shard.

use wizard_core::vocabulary::wire::{ClientMessage, ServerMessage, decode_health};

use crate::client::{Player, TestServer, bounded, http, next_message, send, ws};

/// The next message, which must be `wrong_shard`; returns the shard it names.
async fn wrong_shard(ws: &mut crate::client::Client) -> String {
    match next_message(ws).await {
        ServerMessage::Error {
            code: wizard_core::vocabulary::wire::ErrorCode::WrongShard,
            shard: Some(shard),
            ..
        } => shard,
        other => panic!("not wrong_shard: {other:?}"),
    }
}

#[test]
fn codes_and_tokens_are_sent_to_their_shard() {
    let a = TestServer::start(&[("SHARD_ID", "A")]);
    let b = TestServer::start(&[("SHARD_ID", "B")]);
    bounded(20, async {
        // A's own route is /ws; its code and token start with its id.
        let on_a = ws(a.addr, "/ws/A", &[]).await.unwrap();
        let (mut host, _) = Player::hello_on(on_a, None).await;
        assert!(
            host.token.starts_with('A') && host.token.len() == 33,
            "{}",
            host.token
        );
        let code = host.create_lobby("Ann").await;
        assert!(code.starts_with('A') && code.len() == 6, "{code}");

        // Joining A's lobby through B: wrong_shard naming A, and nothing joined.
        let (mut guest, _) = Player::hello(b.addr, None).await;
        assert!(guest.token.starts_with('B'), "{}", guest.token);
        let join = ClientMessage::JoinLobby {
            code: code.clone(),
            name: "Bob".into(),
        };
        guest.send(join.clone()).await;
        assert_eq!(wrong_shard(&mut guest.ws).await, "A");

        // Repeated on A (as the web client does): joined.
        let (mut guest, _) = Player::hello(a.addr, None).await;
        let view = guest.join_lobby(&code, "Bob").await;
        assert_eq!(view.lobby.map(|l| l.players.len()), Some(2));

        // A's token on B: wrong_shard naming A, the connection kept for another hello.
        let mut stray = ws(b.addr, "/ws", &[]).await.unwrap();
        let hello = ClientMessage::Hello {
            token: Some(host.token.clone()),
            deltas: false,
            profile_key: None,
        };
        send(&mut stray, &hello).await;
        assert_eq!(wrong_shard(&mut stray).await, "A");
        // The same token on A resumes the host.
        let (back, view) = Player::hello(a.addr, Some(&host.token)).await;
        assert_eq!(
            (back.id.as_str(), back.token.as_str()),
            (host.id.as_str(), host.token.as_str())
        );
        assert_eq!(view.lobby.map(|l| l.code), Some(code));
    });
}

#[test]
fn shard_routes_and_health() {
    let a = TestServer::start(&[("SHARD_ID", "A")]);
    let plain = TestServer::start(&[]);
    bounded(20, async {
        // (server, path, the upgrade's outcome: Ok or the HTTP status).
        let cases = [
            (a.addr, "/ws", Ok(())),
            (a.addr, "/ws/A", Ok(())),
            (a.addr, "/ws/B", Err(421)),
            (a.addr, "/ws/x", Err(404)),
            (plain.addr, "/ws", Ok(())),
            (plain.addr, "/ws/A", Err(404)),
        ];
        for (addr, path, want) in cases {
            let got = ws(addr, path, &[]).await.map(drop);
            assert_eq!(got, want, "{path} on {addr}");
        }
        let (status, body) = http(a.addr, "GET", "/health", &[]).await;
        assert_eq!(status, 200);
        assert_eq!(decode_health(&body).unwrap().shard.as_deref(), Some("A"));
        let (_, body) = http(plain.addr, "GET", "/health", &[]).await;
        assert!(!body.contains("shard"), "{body}");
        // /ready is the same on a shard.
        let (status, body) = http(a.addr, "GET", "/ready", &[]).await;
        assert_eq!((status, body.as_str()), (200, r#"{"ready":true}"#));
    });
}

/// `wizard-bench --shard-routes 1` (the shard test's bots, bench/shards_test.sh): hosts
/// create at `/ws`, guests join at `/ws/<code's shard>`; every connection that lands on
/// the wrong shard is counted. On one shard nothing is misrouted and every lobby is the
/// shard's; a host sent to another shard's route is (the server's 421).
#[test]
fn the_load_generator_follows_shard_routes_and_counts_misroutes() {
    use std::time::Duration;
    use wizard_bench::{Pacing, Settings};

    let a = TestServer::start(&[
        ("SHARD_ID", "A"),
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
        ("EMBEDDED_AI", "0"),
        ("MESSAGE_RATE", "1000"),
        ("MESSAGE_BURST", "1000"),
    ]);
    let run = |path: &str| {
        let mut s = Settings::new(a.addr);
        s.path = path.into();
        s.games = 2;
        s.humans = 2;
        s.pacing = Pacing::Full;
        s.think = Duration::ZERO;
        s.ramp = Duration::from_millis(100);
        s.warmup = Duration::ZERO;
        s.duration = Duration::from_secs(2);
        s.shard_routes = true;
        s.history = None;
        wizard_bench::run(s).unwrap()
    };
    // (the hosts' path, lobbies created on A, misrouted at least)
    let cases = [("/ws", 2, 0), ("/ws/A", 2, 0), ("/ws/B", 0, 1)];
    for (path, lobbies, misrouted) in cases {
        let report = run(path);
        let shards = &report.line["results"]["shards"];
        assert_eq!(
            shards["lobbies_by_shard"]["A"].as_u64().unwrap_or(0),
            lobbies,
            "{path}: {shards}"
        );
        if misrouted == 0 {
            assert_eq!(report.stats.misrouted, 0, "{path}: {shards}");
            // The guests joined at /ws/A: the games started (each needs both humans).
            assert!(report.stats.games_started > 0, "{path}: {shards}");
            // Every finished game counted under its shard (none may finish in 2 s on a
            // busy machine).
            assert_eq!(
                shards["finished_by_shard"]["A"].as_u64().unwrap_or(0),
                report.stats.games_finished,
                "{path}: {shards}"
            );
        } else {
            assert!(report.stats.misrouted >= misrouted, "{path}: {shards}");
            assert!(
                report.stats.misroutes.iter().any(|m| m.contains("421")),
                "{path}: {shards}"
            );
        }
    }
}
