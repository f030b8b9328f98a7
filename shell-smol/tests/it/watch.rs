//! Spectators and table chat over real websockets (PROTOCOL.md 6.4): a spectator
//! watches a running game with no hand and no legal action, cannot move, is listed to
//! the seats, and chat reaches seats and spectators as plain text, with its history
//! sent to a late spectator and `CHAT_RATE` enforced.

use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode, ServerMessage};

use crate::client::{Player, TestServer, bounded};

/// No AI delays, a message rate that never gets in the way, and a chat rate of 2.
const WATCH: &[(&str, &str)] = &[
    ("AI_MOVE_DELAY", "0"),
    ("TRICK_PAUSE", "0"),
    ("MESSAGE_RATE", "1000"),
    ("MESSAGE_BURST", "1000"),
    ("CHAT_RATE", "2"),
];

/// The next `chat` frame's (from, name, text), skipping states.
async fn next_chat(player: &mut Player) -> (String, String, String) {
    loop {
        match player.next().await {
            ServerMessage::Chat {
                from, name, text, ..
            } => return (from, name, text),
            ServerMessage::Error { code, message, .. } => panic!("refused: {code:?} {message}"),
            _ => {}
        }
    }
}

#[test]
fn a_spectator_watches_a_running_game_and_chat_reaches_everyone() {
    let server = TestServer::start(WATCH);
    let addr = server.addr;
    bounded(30, async {
        let (mut host, _) = Player::hello(addr, None).await;
        let code = host.create_lobby("Ann").await;
        host.add_ai(2).await;
        host.add_ai(3).await;
        host.start_game().await;
        let (mut watcher, _) = Player::hello(addr, None).await;
        watcher
            .send(ClientMessage::Spectate {
                code: code.to_lowercase(),
                name: "Zoe".into(),
            })
            .await;
        let view = watcher.state_where(|v| v.game.is_some()).await;
        let lobby = view.lobby.as_ref().unwrap();
        assert_eq!(lobby.spectators, ["Zoe"]);
        assert!(lobby.players.iter().all(|p| p.id != watcher.id), "no seat");
        let game = view.game.as_ref().unwrap();
        assert_eq!(game.you, None);
        assert!(game.observation.hand.is_empty(), "a spectator has no hand");
        assert!(game.observation.legal_actions.is_empty());
        assert_eq!(game.observation.round, 1);
        let seen = host
            .state_where(|v| v.lobby.as_ref().is_some_and(|l| !l.spectators.is_empty()))
            .await;
        assert_eq!(
            seen.lobby.unwrap().spectators,
            ["Zoe"],
            "the seats see who watches"
        );

        watcher.send(ClientMessage::StartGame).await;
        assert_eq!(watcher.next_error().await, ErrorCode::NotAllowed);

        let script = "<script>alert(1)</script>";
        host.send(ClientMessage::Chat {
            text: format!("  {script} "),
        })
        .await;
        let line = (host.id.clone(), "Ann".to_string(), script.to_string());
        assert_eq!(
            next_chat(&mut watcher).await,
            line,
            "reaches the spectator, trimmed"
        );
        assert_eq!(next_chat(&mut host).await, line, "and the sender");
        watcher
            .send(ClientMessage::Chat {
                text: "<b>x</b>".into(),
            })
            .await;
        let from_watcher = (
            watcher.id.clone(),
            "Zoe".to_string(),
            "<b>x</b>".to_string(),
        );
        assert_eq!(
            next_chat(&mut host).await,
            from_watcher,
            "a spectator's line"
        );

        // A late spectator gets both lines after its state.
        let (mut late, _) = Player::hello(addr, None).await;
        late.send(ClientMessage::Spectate {
            code: code.clone(),
            name: "Zoe".into(),
        })
        .await;
        let view = late.state_where(|v| v.game.is_some()).await;
        assert_eq!(view.lobby.unwrap().spectators, ["Zoe", "Zoe (2)"]);
        assert_eq!(next_chat(&mut late).await, line);
        assert_eq!(next_chat(&mut late).await, from_watcher);

        // CHAT_RATE 2: the host's third line is refused with a time to wait.
        host.send(ClientMessage::Chat { text: "two".into() }).await;
        host.send(ClientMessage::Chat {
            text: "three".into(),
        })
        .await;
        let refusal = loop {
            if let ServerMessage::Error {
                code,
                retry_after_ms,
                ..
            } = host.next().await
            {
                break (code, retry_after_ms.is_some_and(|ms| ms > 0));
            }
        };
        assert_eq!(refusal, (ErrorCode::RateLimited, true));

        // Leaving: the seats see the list shrink.
        watcher.send(ClientMessage::LeaveLobby).await;
        // States sent before the leave may still be queued: the empty one comes last.
        let left = watcher.state_where(|v| v.lobby.is_none()).await;
        assert!(left.game.is_none());
        host.state_where(|v| {
            v.lobby
                .as_ref()
                .is_some_and(|l| l.spectators == ["Zoe (2)"])
        })
        .await;
    });
}
