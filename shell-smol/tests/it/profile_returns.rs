//! A profile's player coming back, against the real server: a `hello` with the session's
//! token but no key is a guest's (no error, the seat of a waiting lobby no longer rates
//! the profile, and the key signs it in again), and the end of a rated game, with each
//! seat's rating change, is shown again after the server was killed and restarted.

use wizard_core::machine::profiles::ProfileKey;
use wizard_core::vocabulary::wire::{
    ClientMessage, LobbyStatus, LobbyView, ProfileView, ServerMessage,
};

use super::client::{
    Client, bounded, local, my_move, next_message, next_state, send, start_against_two_ai, ws_from,
};
use super::durable::{Process, TempDir};

/// Says hello on `ws`: the welcome's token and profile, and the first `state`'s lobby.
/// Fails on any `error` before them.
pub(super) async fn hello(
    ws: &mut Client,
    token: Option<&str>,
    key: Option<&str>,
) -> (String, Option<ProfileView>, Option<LobbyView>) {
    let hello = ClientMessage::Hello {
        token: token.map(str::to_owned),
        profile_key: key.map(|k| ProfileKey(k.to_owned())),
        deltas: false,
    };
    send(ws, &hello).await;
    let mut welcome = None;
    loop {
        match next_message(ws).await {
            ServerMessage::Welcome { token, profile, .. } => welcome = Some((token, profile)),
            ServerMessage::State { lobby, .. } if welcome.is_some() => {
                let (token, profile) = welcome.unwrap();
                return (token, profile, lobby);
            }
            ServerMessage::Error { code, message, .. } => {
                panic!("a hello is never refused here: {code:?} {message}")
            }
            _ => {}
        }
    }
}

/// Sends `create_profile`: the key and the profile's id.
pub(super) async fn create_profile(ws: &mut Client, name: &str) -> (String, String) {
    send(
        ws,
        &ClientMessage::CreateProfile {
            name: name.to_owned(),
        },
    )
    .await;
    loop {
        match next_message(ws).await {
            ServerMessage::Profile { key, id, .. } => return (key, id),
            ServerMessage::Error { code, .. } => panic!("no profile: {code:?}"),
            _ => {}
        }
    }
}

/// The next `state` with a lobby that `done` accepts.
async fn state_until(ws: &mut Client, done: impl Fn(&LobbyView) -> bool) -> LobbyView {
    loop {
        if let ServerMessage::State {
            lobby: Some(lobby), ..
        } = next_message(ws).await
            && done(&lobby)
        {
            return lobby;
        }
    }
}

/// Creates a lobby as `name`, adds two AI seats, starts and plays the game to its end:
/// the finished lobby (seat 0 is ours).
pub(super) async fn play_rated_game(ws: &mut Client, name: &str) -> LobbyView {
    start_against_two_ai(ws, name).await;
    loop {
        let view = next_state(ws).await;
        if let Some(l) = &view.lobby
            && l.status == LobbyStatus::Finished
        {
            return l.clone();
        }
        if let Some(action) = my_move(&view) {
            send(ws, &ClientMessage::Action { action }).await;
        }
    }
}

#[test]
fn back_without_the_key_is_a_guest_and_the_key_signs_in_again() {
    let server = super::client::TestServer::start(&[]);
    bounded(60, async {
        let mut ws = ws_from(server.addr, local(21)).await;
        let (token, profile, _) = hello(&mut ws, None, None).await;
        assert!(profile.is_none());
        let (key, id) = create_profile(&mut ws, "Nimue").await;
        send(
            &mut ws,
            &ClientMessage::CreateLobby {
                name: "Nimue".into(),
                public: false,
            },
        )
        .await;
        let lobby = state_until(&mut ws, |l| l.players[0].profile_id.is_some()).await;
        assert_eq!(lobby.players[0].profile_id.as_deref(), Some(id.as_str()));
        assert_eq!(lobby.players[0].rating.map(|r| r.0), Some(0.0));
        drop(ws);

        // The same session without a key: a guest, seated as one.
        let mut ws = ws_from(server.addr, local(21)).await;
        let (again, profile, lobby) = hello(&mut ws, Some(&token), None).await;
        assert_eq!(again, token, "the session was resumed");
        assert!(profile.is_none(), "no key, no profile: {profile:?}");
        let lobby = lobby.expect("still seated");
        assert_eq!(lobby.players[0].profile_id, None);
        assert_eq!(lobby.players[0].rating, None);
        drop(ws);

        // A key nobody holds: a guest too, never an error.
        let mut ws = ws_from(server.addr, local(21)).await;
        let unknown = "A".repeat(key.len());
        let (_, profile, _) = hello(&mut ws, Some(&token), Some(&unknown)).await;
        assert!(profile.is_none());
        drop(ws);

        // The key again: signed in, and the seat rates the profile again.
        let mut ws = ws_from(server.addr, local(21)).await;
        let (_, profile, lobby) = hello(&mut ws, Some(&token), Some(&key)).await;
        assert_eq!(
            profile.map(|p| (p.id, p.name)),
            Some((id.clone(), "Nimue".into()))
        );
        let lobby = match lobby {
            Some(l) if l.players[0].profile_id.is_some() => l,
            _ => state_until(&mut ws, |l| l.players[0].profile_id.is_some()).await,
        };
        assert_eq!(lobby.players[0].profile_id.as_deref(), Some(id.as_str()));
    });
}

#[test]
fn the_rating_change_at_a_game_s_end_is_shown_again_after_a_restart() {
    let dir = TempDir::made();
    let store = dir.store();
    let port = super::proxy::free_port();
    let log = dir.0.join("server.log");
    let env = [("AI_MOVE_DELAY", "0"), ("TRICK_PAUSE", "0")];
    let server = Process::start_env(&store, port, &log, &env);
    let (token, key, ended) = bounded(120, async {
        let mut ws = ws_from(server.addr, local(22)).await;
        let (token, _, _) = hello(&mut ws, None, None).await;
        let (key, _) = create_profile(&mut ws, "Vivien").await;
        let ended = play_rated_game(&mut ws, "Vivien").await;
        (token, key, ended)
    });
    let me = &ended.players[0];
    let change = me.rating_change.expect("the change is shown at the end").0;
    assert!(change != 0.0);
    assert_eq!(
        me.rating.map(|r| r.0),
        Some(change),
        "from a new profile's 0"
    );
    server.crash();

    let server = Process::start_env(&store, port, &log, &env);
    bounded(30, async {
        let mut ws = ws_from(server.addr, local(22)).await;
        let (_, profile, lobby) = hello(&mut ws, Some(&token), Some(&key)).await;
        assert_eq!(profile.map(|p| p.games), Some(1));
        let lobby = lobby.expect("the finished game's lobby");
        assert_eq!(lobby.status, LobbyStatus::Finished);
        assert_eq!(lobby.players, ended.players, "every seat as it ended");
        assert_eq!(lobby.players[0].rating_change.map(|c| c.0), Some(change));
    });
    server.stop();
}
