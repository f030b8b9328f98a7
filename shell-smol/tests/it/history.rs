//! Game history against the real server (PROTOCOL.md 7.4): a finished game's
//! `/games/<id>` replays to its final scores (every trick's winner and every round's
//! points recomputed here from the hands and the cards), a running game is `404` also
//! for a player in it, the profile page lists the game, a restart keeps it,
//! `HISTORY_DAYS=0` keeps nothing, retention deletes old games, and scraping is
//! rate-limited per address.

use std::net::SocketAddr;

use wizard_core::vocabulary::game::trick;
use wizard_core::vocabulary::game::{Card, Suit, round_score};
use wizard_core::vocabulary::wire::{ClientMessage, LobbyStatus, ServerMessage};

use super::client::{
    bounded, get_from, local, my_move, next_message, next_state, send, start_against_two_ai,
    ws_from,
};
use super::durable::{Process, TempDir};

/// What a played game left: its id, the final scores its last `state` showed, and
/// the profile id of the human seat.
struct Played {
    id: String,
    scores: Vec<i32>,
    profile: String,
}

/// A profile plays a whole game against two AI seats; while it runs, `/games/<id>` is
/// `404` from the player's own address.
async fn play_a_game(addr: SocketAddr) -> Played {
    let mut ws = ws_from(addr, local(1)).await;
    send(
        &mut ws,
        &ClientMessage::Hello {
            token: None,
            profile_key: None,
            deltas: false,
        },
    )
    .await;
    send(
        &mut ws,
        &ClientMessage::CreateProfile { name: "Ann".into() },
    )
    .await;
    let profile = loop {
        if let ServerMessage::Profile { id, .. } = next_message(&mut ws).await {
            break id;
        }
    };
    start_against_two_ai(&mut ws, "Ann").await;
    let mut asked_while_running = false;
    loop {
        let view = next_state(&mut ws).await;
        let finished = view
            .lobby
            .as_ref()
            .is_some_and(|l| l.status == LobbyStatus::Finished);
        let game = view.game.as_ref();
        if let Some(game) = game.filter(|_| !asked_while_running && !finished) {
            assert!(game.id.len() >= 16, "at least 64 bits: {}", game.id);
            let (status, body) = get_from(addr, local(1), &format!("/games/{}", game.id)).await;
            assert_eq!(status, 404, "a running game is not shown: {body}");
            assert!(!body.contains("hands"), "{body}");
            asked_while_running = true;
        }
        if finished {
            let game = view.game.expect("the finished game");
            return Played {
                id: game.id,
                scores: game.observation.scores,
                profile,
            };
        }
        if let Some(action) = my_move(&view) {
            send(&mut ws, &ClientMessage::Action { action }).await;
        }
    }
}

/// `GET /games/<id>` until it answers `200` (the store's writer folds its batch).
async fn finished_game(addr: SocketAddr, id: &str) -> serde_json::Value {
    loop {
        let (status, body) = get_from(addr, local(2), &format!("/games/{id}")).await;
        if status == 200 {
            return serde_json::from_str(&body).expect("JSON");
        }
        assert_eq!(status, 404, "{body}");
        smol::Timer::after(std::time::Duration::from_millis(50)).await;
    }
}

fn cards(value: &serde_json::Value) -> Vec<Card> {
    value
        .as_array()
        .expect("cards")
        .iter()
        .map(|c| c.as_str().expect("a card").parse().expect("a card code"))
        .collect()
}

/// Replays `/games/<id>`'s body with the rules: every trick's cards come from the
/// hands as dealt, its winner is the rules' winner and leads the next trick, every
/// round's points follow from the bids and the tricks taken, and the points add up to
/// the final scores. Returns the final scores.
fn replay(game: &serde_json::Value) -> Vec<i32> {
    let players = game["players"].as_array().expect("players").len();
    let rounds = game["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 60 / players, "every round");
    let mut totals = vec![0i32; players];
    for (r, round) in rounds.iter().enumerate() {
        let mut hands: Vec<Vec<Card>> = round["hands"]
            .as_array()
            .expect("hands")
            .iter()
            .map(cards)
            .collect();
        assert!(
            hands.iter().all(|h| h.len() == r + 1),
            "round {r}: hands as dealt"
        );
        let trump: Option<Suit> = round["trump"].as_str().map(|s| s.parse().expect("a suit"));
        let mut taken = vec![0u8; players];
        let tricks = round["tricks"].as_array().expect("tricks");
        assert_eq!(tricks.len(), r + 1);
        let mut leader: Option<usize> = None;
        for t in tricks {
            let lead = t["leader"].as_u64().expect("leader") as usize;
            if let Some(l) = leader {
                assert_eq!(lead, l, "the last winner leads");
            }
            let played = cards(&t["cards"]);
            assert_eq!(played.len(), players);
            for (i, card) in played.iter().enumerate() {
                let seat = (lead + i) % players;
                let hand = &mut hands[seat];
                let at = hand.iter().position(|c| c == card).expect("from the hand");
                hand.remove(at);
            }
            let winner = (lead + trick::winner(&played, trump).expect("a winner")) % players;
            assert_eq!(t["winner"].as_u64(), Some(winner as u64), "trick winner");
            taken[winner] += 1;
            leader = Some(winner);
        }
        assert!(hands.iter().all(Vec::is_empty), "every card played");
        let bids: Vec<u8> = round["bids"]
            .as_array()
            .expect("bids")
            .iter()
            .map(|b| b.as_u64().expect("a bid") as u8)
            .collect();
        for seat in 0..players {
            let points = round_score(bids[seat], taken[seat]);
            assert_eq!(round["scores"][seat].as_i64(), Some(i64::from(points)));
            totals[seat] += points;
        }
    }
    let recorded: Vec<i32> = game["final_scores"]
        .as_array()
        .expect("final scores")
        .iter()
        .map(|s| s.as_i64().expect("a score") as i32)
        .collect();
    assert_eq!(totals, recorded, "the rounds add up to the final scores");
    totals
}

#[test]
fn a_finished_game_replays_to_its_scores_is_listed_and_survives_a_restart() {
    let dir = TempDir::made();
    let store = dir.store();
    history_survives_a_restart(&dir, &store, &[("STORE_SYNC_INTERVAL", "0.1")]);
}

/// A profile plays a whole game against two AI seats on `store` (the real binary with
/// `env`): `/games/<id>` is `404` while it runs and replays to its final scores once it
/// is over, the profile page lists it, and after a restart it is the same. `dir` holds
/// the log.
pub(super) fn history_survives_a_restart(dir: &TempDir, store: &str, env: &[(&str, &str)]) {
    let port = super::proxy::free_port();
    let log = dir.0.join("server.log");
    let mut env = env.to_vec();
    env.extend([("AI_MOVE_DELAY", "0"), ("TRICK_PAUSE", "0")]);
    let server = Process::start_env(store, port, &log, &env);
    let (played, body) = bounded(120, async {
        let played = play_a_game(server.addr).await;
        let game = finished_game(server.addr, &played.id).await;
        assert_eq!(game["id"], serde_json::json!(played.id));
        assert_eq!(game["rated"], serde_json::json!(true));
        assert_eq!(game["players"][0]["name"], "Ann");
        assert_eq!(
            game["players"][0]["profile_id"],
            serde_json::json!(played.profile)
        );
        assert_eq!(game["players"][1]["is_ai"], serde_json::json!(true));
        assert_eq!(game["players"][1]["level"], "strong");
        assert!(game["started_at"].as_str().unwrap() <= game["finished_at"].as_str().unwrap());
        assert_eq!(replay(&game), played.scores, "the game the players saw");
        let (status, page) = get_from(
            server.addr,
            local(3),
            &format!("/profiles/{}", played.profile),
        )
        .await;
        assert_eq!(status, 200, "{page}");
        let page: serde_json::Value = serde_json::from_str(&page).unwrap();
        let recent = page["recent_games"].as_array().expect("recent games");
        assert_eq!(recent.len(), 1, "{page}");
        assert_eq!(recent[0]["id"], serde_json::json!(played.id));
        assert_eq!(recent[0]["players"][0], "Ann");
        let mine = i64::from(played.scores[0]);
        assert_eq!(recent[0]["score"].as_i64(), Some(mine));
        (played, game)
    });
    server.stop();
    let server = Process::start_env(store, port, &log, &env);
    bounded(30, async {
        let again = finished_game(server.addr, &played.id).await;
        assert_eq!(again, body, "a restart keeps the game as it was");
    });
}

#[test]
fn history_days_0_keeps_no_game() {
    let dir = TempDir::made();
    let store = dir.store();
    let port = super::proxy::free_port();
    let log = dir.0.join("server.log");
    let env = [
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
        ("HISTORY_DAYS", "0"),
    ];
    let server = Process::start_env(&store, port, &log, &env);
    bounded(120, async {
        let played = play_a_game(server.addr).await;
        let (_, metrics) = super::client::http(server.addr, "GET", "/metrics", &[]).await;
        assert!(
            metrics.contains("wizard_games_finished_total 1"),
            "{metrics}"
        );
        assert!(
            metrics.contains("wizard_games_recorded_total 0"),
            "{metrics}"
        );
        let (status, _) = get_from(server.addr, local(2), &format!("/games/{}", played.id)).await;
        assert_eq!(status, 404);
    });
    server.stop();
    let conn = rusqlite::Connection::open(dir.0.join("wizard.db")).unwrap();
    let games: i64 = conn
        .query_row("SELECT COUNT(*) FROM games", [], |r| r.get(0))
        .unwrap();
    assert_eq!(games, 0, "nothing kept");
}

#[test]
fn retention_deletes_games_past_history_days_in_bounded_passes() {
    let dir = TempDir::made();
    let store = dir.store();
    let port = super::proxy::free_port();
    let log = dir.0.join("server.log");
    // A store made by the server, then 250 games of 100 days ago and one of yesterday.
    Process::start_env(&store, port, &log, &[]).stop();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let day_ms = 86_400_000i64;
    {
        let conn = rusqlite::Connection::open(dir.0.join("wizard.db")).unwrap();
        let mut insert = conn
            .prepare("INSERT INTO games (id, finished_ms, body) VALUES (?1, ?2, '{}')")
            .unwrap();
        for i in 0..250 {
            insert
                .execute(rusqlite::params![
                    format!("{i:020x}"),
                    now_ms - 100 * day_ms + i
                ])
                .unwrap();
        }
        insert
            .execute(rusqlite::params!["f".repeat(20), now_ms - day_ms])
            .unwrap();
    }
    let env = [
        ("HISTORY_DAYS", "30"),
        ("HISTORY_PURGE_ROWS", "100"),
        ("HISTORY_PURGE_INTERVAL", "0.2"),
    ];
    let server = Process::start_env(&store, port, &log, &env);
    bounded(30, async {
        loop {
            let (_, metrics) = super::client::http(server.addr, "GET", "/metrics", &[]).await;
            if metrics.contains("wizard_store_history_purged 250") {
                break;
            }
            smol::Timer::after(std::time::Duration::from_millis(100)).await;
        }
    });
    server.stop();
    let conn = rusqlite::Connection::open(dir.0.join("wizard.db")).unwrap();
    let kept: Vec<String> = conn
        .prepare("SELECT id FROM games")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        kept,
        vec!["f".repeat(20)],
        "only the game within HISTORY_DAYS"
    );
}

#[test]
fn scraping_games_is_rate_limited_per_address() {
    let server = super::client::TestServer::start(&[("GAMES_RATE", "10"), ("SOCKET_RATE", "1000")]);
    bounded(60, async {
        let mut statuses = std::collections::BTreeMap::new();
        for i in 0..40u32 {
            let (status, _) = get_from(server.addr, local(30), &format!("/games/{i:020x}")).await;
            *statuses.entry(status).or_insert(0) += 1;
        }
        assert!(!statuses.contains_key(&200), "{statuses:?}");
        assert_eq!(statuses.get(&404), Some(&10), "the budget: {statuses:?}");
        assert_eq!(statuses.get(&429), Some(&30), "{statuses:?}");
        // Another address keeps its own budget.
        let (status, _) = get_from(server.addr, local(31), "/games/00000000000000000000").await;
        assert_eq!(status, 404);
    });
}
