//! Profiles and ratings against the real server: a rated game's rating survives
//! `kill -9` once and only once (the update is committed with the game's last move),
//! profile creation floods and look-alike names from one address, and guessed keys.

use wizard_core::machine::profiles::ProfileKey;
use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode, ServerMessage};

use super::client::{Client, bounded, get_from, local, next_message, send, ws_from};
use super::durable::{Process, TempDir};
use super::profile_returns::play_rated_game;

/// Says hello on `ws` with `key`; the `welcome`'s profile as (id, games, mu), if any.
async fn hello_with_key(ws: &mut Client, key: Option<&str>) -> Option<(String, u32, f64)> {
    let hello = ClientMessage::Hello {
        token: None,
        profile_key: key.map(|k| ProfileKey(k.to_owned())),
        deltas: false,
    };
    send(ws, &hello).await;
    loop {
        if let ServerMessage::Welcome { profile, .. } = next_message(ws).await {
            return profile.map(|p| (p.id, p.games, p.mu.0));
        }
    }
}

/// Sends `create_profile` and reads up to its answer: the key, or the error's code.
async fn create_profile(ws: &mut Client, name: &str) -> Result<String, ErrorCode> {
    let create = ClientMessage::CreateProfile {
        name: name.to_owned(),
    };
    send(ws, &create).await;
    loop {
        match next_message(ws).await {
            ServerMessage::Profile { key, .. } => return Ok(key),
            ServerMessage::Error { code, .. } => return Err(code),
            _ => {}
        }
    }
}

#[test]
fn a_rated_game_s_rating_survives_kill_9_and_is_counted_once() {
    let dir = TempDir::made();
    let store = dir.store();
    // The writer never folds on its own: what a crash leaves is in the journal only.
    rating_survives_kill_9(&dir, &store, &[("STORE_SYNC_INTERVAL", "3600")]);
}

/// A profile plays a whole rated game against two AI seats on `store` (the real binary
/// with `env`), then the server is killed (`kill -9`) right after the final `state`,
/// twice restarted and killed again: each time the profile signs in with the rating
/// and the one game that `state` showed. `dir` holds the log.
pub(super) fn rating_survives_kill_9(dir: &TempDir, store: &str, env: &[(&str, &str)]) {
    let store = store.to_owned();
    let port = super::proxy::free_port();
    let log = dir.0.join("server.log");
    let mut env = env.to_vec();
    env.extend([("AI_MOVE_DELAY", "0"), ("TRICK_PAUSE", "0")]);
    let server = Process::start_env(&store, port, &log, &env);
    let addr = server.addr;
    let (key, id, mu) = bounded(120, async {
        let mut ws = ws_from(addr, local(1)).await;
        assert_eq!(hello_with_key(&mut ws, None).await, None);
        let key = create_profile(&mut ws, "Ann").await.expect("a profile");
        let finished = play_rated_game(&mut ws, "Ann").await;
        let me = &finished.players[0];
        let id = me.profile_id.clone().expect("a profile seat");
        let change = me.rating_change.expect("the change is shown").0;
        assert!(change != 0.0);
        (key, id, me.mu.expect("mu").0)
    });
    server.crash();
    for restart in 0..2 {
        let server = Process::start_env(&store, port, &log, &env);
        bounded(30, async {
            let mut ws = ws_from(server.addr, local(1)).await;
            let profile = hello_with_key(&mut ws, Some(&key)).await;
            assert_eq!(
                profile,
                Some((id.clone(), 1, mu)),
                "after crash {}",
                restart + 1
            );
        });
        server.crash();
    }
}

#[test]
fn profile_floods_and_look_alike_names_from_one_address_are_refused() {
    let dir = TempDir::made();
    let store = dir.store();
    let port = super::proxy::free_port();
    let server = Process::start_env(&store, port, &dir.0.join("server.log"), &[]);
    bounded(60, async {
        let mut ws = ws_from(server.addr, local(2)).await;
        hello_with_key(&mut ws, None).await;
        create_profile(&mut ws, "Merlin").await.expect("the first");
        // Look-alikes of a taken name: refused, and they cost no creation.
        for squat in ["MERLIN", "Merl\u{0456}n", "Mer\u{200d}lin", "MerIin"] {
            assert_eq!(
                create_profile(&mut ws, squat).await,
                Err(ErrorCode::NotAllowed),
                "{squat:?}"
            );
        }
        for i in 0..4 {
            create_profile(&mut ws, &format!("Flood{i}"))
                .await
                .expect("within PROFILE_CREATE_RATE");
        }
        for i in 4..20 {
            assert_eq!(
                create_profile(&mut ws, &format!("Flood{i}")).await,
                Err(ErrorCode::RateLimited),
                "{i}"
            );
        }
        // Another address creates.
        let mut other = ws_from(server.addr, local(3)).await;
        hello_with_key(&mut other, None).await;
        create_profile(&mut other, "Flood4")
            .await
            .expect("another address");
    });
}

#[test]
fn guessed_keys_sign_nobody_in_and_use_up_the_address_s_guesses() {
    let dir = TempDir::made();
    let store = dir.store();
    let port = super::proxy::free_port();
    let env = [("JOIN_FAIL_BURST", "5"), ("JOIN_FAIL_RATE", "1")];
    let server = Process::start_env(&store, port, &dir.0.join("server.log"), &env);
    bounded(60, async {
        let mut ws = ws_from(server.addr, local(4)).await;
        hello_with_key(&mut ws, None).await;
        let key = create_profile(&mut ws, "Ann").await.unwrap();
        // Guesses of the right shape, each one character off the real key.
        for i in 0..5 {
            let mut guess: Vec<char> = key.chars().collect();
            guess[i] = if guess[i] == 'A' { 'B' } else { 'A' };
            let guess: String = guess.into_iter().collect();
            let mut g = ws_from(server.addr, local(5)).await;
            assert_eq!(hello_with_key(&mut g, Some(&guess)).await, None);
        }
        // The guesser's address is out of guesses: the real key does not work from it...
        let mut g = ws_from(server.addr, local(5)).await;
        assert_eq!(hello_with_key(&mut g, Some(&key)).await, None);
        // ...and from elsewhere it does.
        let mut owner = ws_from(server.addr, local(6)).await;
        let profile = hello_with_key(&mut owner, Some(&key)).await;
        assert_eq!(profile.map(|p| p.1), Some(0));
    });
}

#[test]
fn profile_pages_and_the_leaderboard_are_public_and_scraping_is_bounded() {
    let server = super::client::TestServer::start(&[("SOCKET_RATE", "20")]);
    bounded(60, async {
        let mut ws = ws_from(server.addr, local(8)).await;
        hello_with_key(&mut ws, None).await;
        let key = create_profile(&mut ws, "Ann").await.unwrap();
        let mut again = ws_from(server.addr, local(8)).await;
        let (id, _, _) = hello_with_key(&mut again, Some(&key)).await.unwrap();
        let (status, body) = get_from(server.addr, local(9), &format!("/profiles/{id}")).await;
        assert_eq!(status, 200, "{body}");
        let page: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(page["name"], "Ann");
        assert_eq!(page["rating"], serde_json::json!(0.0));
        assert_eq!(page["games"], 0);
        assert!(!body.contains(&key), "the key is never on a page");
        let (status, body) = get_from(server.addr, local(9), "/leaderboard").await;
        assert_eq!(status, 200);
        let board: serde_json::Value = serde_json::from_str(&body).unwrap();
        // Fewer than 5 rated games: not listed yet; the AI levels always are.
        assert_eq!(board["profiles"], serde_json::json!([]));
        assert_eq!(board["ai"]["strong"]["mu"], serde_json::json!(35.42));
        // A deleted profile's page is gone.
        send(&mut again, &ClientMessage::DeleteProfile).await;
        loop {
            if let ServerMessage::ProfileDeleted { .. } = next_message(&mut again).await {
                break;
            }
        }
        let path = format!("/profiles/{id}");
        let gone = async {
            loop {
                if get_from(server.addr, local(11), &path).await.0 == 404 {
                    return;
                }
            }
        };
        gone.await;
        // A scraper asking for ids from one address: never a page, and past SOCKET_RATE
        // its sockets are refused while another address is answered.
        let mut statuses = std::collections::BTreeMap::new();
        for i in 0..200u32 {
            let (status, _) =
                get_from(server.addr, local(10), &format!("/profiles/{i:012x}")).await;
            *statuses.entry(status).or_insert(0) += 1;
        }
        assert!(!statuses.contains_key(&200), "{statuses:?}");
        let answered = statuses.get(&404).copied().unwrap_or(0);
        assert!(answered < 200, "some refused: {statuses:?}");
        let (status, _) = get_from(server.addr, local(12), "/leaderboard").await;
        assert_eq!(status, 200);
    });
}
