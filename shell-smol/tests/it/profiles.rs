//! Profiles and ratings against the real server: a rated game's rating survives
//! `kill -9` once and only once (the update is committed with the game's last move),
//! profile creation floods and look-alike names from one address, and guessed keys.

use wizard_core::profiles::ProfileKey;
use wizard_core::wire::{ClientMessage, ErrorCode, ServerMessage};

use super::client::{Client, View, bounded, local, my_move, next_message, send, ws_from};
use super::durable::{Process, TempDir};

/// Says hello on `ws` with `key`; the `welcome`'s profile as (id, games, mu), if any.
async fn hello_with_key(ws: &mut Client, key: Option<&str>) -> Option<(String, u32, f64)> {
    let hello = ClientMessage::Hello {
        token: None,
        profile_key: key.map(|k| ProfileKey(k.to_owned())),
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

/// The next `state`.
async fn next_state(ws: &mut Client) -> View {
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

#[test]
fn a_rated_game_s_rating_survives_kill_9_and_is_counted_once() {
    let dir = TempDir::new();
    std::fs::create_dir_all(&dir.0).unwrap();
    let store = format!("sqlite:{}/wizard.db", dir.0.display());
    let port = super::proxy::free_port();
    let log = dir.0.join("server.log");
    // The writer never folds on its own: what a crash leaves is in the journal only.
    let env = [
        ("STORE_SYNC_INTERVAL", "3600"),
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
    ];
    let server = Process::start_env(&store, port, &log, &env);
    let addr = server.addr;
    let (key, id, mu) = bounded(120, async {
        let mut ws = ws_from(addr, local(1)).await;
        assert_eq!(hello_with_key(&mut ws, None).await, None);
        let key = create_profile(&mut ws, "Ann").await.expect("a profile");
        send(&mut ws, &ClientMessage::CreateLobby { name: "Ann".into() }).await;
        send(&mut ws, &ClientMessage::AddAi { level: None }).await;
        send(&mut ws, &ClientMessage::AddAi { level: None }).await;
        send(&mut ws, &ClientMessage::StartGame).await;
        loop {
            let view = next_state(&mut ws).await;
            let finished = view
                .lobby
                .as_ref()
                .is_some_and(|l| l.status == wizard_core::wire::LobbyStatus::Finished);
            if finished {
                let me = &view.lobby.unwrap().players[0];
                let id = me.profile_id.clone().expect("a profile seat");
                let change = me.rating_change.expect("the change is shown").0;
                assert!(change != 0.0);
                break (key, id, me.mu.expect("mu").0);
            }
            if let Some(action) = my_move(&view) {
                send(&mut ws, &ClientMessage::Action { action }).await;
            }
        }
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
    let dir = TempDir::new();
    std::fs::create_dir_all(&dir.0).unwrap();
    let store = format!("sqlite:{}/wizard.db", dir.0.display());
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
    let dir = TempDir::new();
    std::fs::create_dir_all(&dir.0).unwrap();
    let store = format!("sqlite:{}/wizard.db", dir.0.display());
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
