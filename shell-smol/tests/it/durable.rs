//! Durable games against the real server: a game and its players' sessions survive a
//! restart on the same SQLite store, SIGTERM closes players with 1012, a new process
//! waits for the old one's lock, and a store that cannot be opened stops start-up.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use wizard_core::config::Config;
use wizard_core::rng::Seed;
use wizard_core::wire::ClientMessage;

use super::client::{Player, TestServer, bounded, close_code};

/// A fresh folder for one test's store, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("wizard-durable-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }

    fn store(&self) -> String {
        format!("sqlite:{}/wizard.db", self.0.display())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Ann's game with two AI seats (slow enough not to move during the test), and her
/// first move when the deal starts with her.
async fn start_game(player: &mut Player) -> wizard_core::wire::GameView {
    player.create_lobby("Ann").await;
    player.send(ClientMessage::AddAi).await;
    player.send(ClientMessage::AddAi).await;
    player
        .state_where(|v| v.lobby.as_ref().is_some_and(|l| l.players.len() == 3))
        .await;
    player.send(ClientMessage::StartGame).await;
    let view = player.state_where(|v| v.game.is_some()).await;
    let game = view.game.expect("a game");
    match game.observation.legal_actions.first().copied() {
        Some(action) => {
            player.send(ClientMessage::Action { action }).await;
            let view = player
                .state_where(|v| {
                    v.game
                        .as_ref()
                        .is_some_and(|g| g.observation.legal_actions.is_empty())
                })
                .await;
            view.game.expect("a game")
        }
        None => game,
    }
}

#[test]
fn a_game_and_its_sessions_survive_a_restart_on_the_store() {
    let dir = TempDir::new();
    let store = dir.store();
    let env = [("STORE", store.as_str()), ("AI_MOVE_DELAY", "120")];
    let server = TestServer::start(&env);
    let (ann, before) = bounded(30, async {
        let (mut ann, _) = Player::hello(server.addr, None).await;
        let game = start_game(&mut ann).await;
        (ann, game)
    });
    // SIGTERM with a durable store: everyone is told to come back soon, at once.
    let mut ws = ann.ws;
    server.shutdown();
    assert_eq!(bounded(10, close_code(&mut ws)), 1012);
    assert!(server.join(10), "the server did not stop");
    let server = TestServer::start(&env);
    bounded(30, async {
        let (back, view) = Player::hello(server.addr, Some(&ann.token)).await;
        assert_eq!(back.id, ann.id, "the same player");
        assert_eq!(back.token, ann.token, "the same token");
        let after = view.game.expect("back in the game");
        assert_eq!(
            after.observation, before.observation,
            "the game where it stood"
        );
    });
    // The store file is the player's data: only the server's user may read it.
    use std::os::unix::fs::PermissionsExt;
    let path = dir.0.join("wizard.db");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{}", path.display());
}

#[test]
fn a_new_server_waits_for_the_old_ones_store_and_then_restores_it() {
    let dir = TempDir::new();
    let store = dir.store();
    let env = [("STORE", store.as_str()), ("AI_MOVE_DELAY", "120")];
    let old = TestServer::start(&env);
    let ann = bounded(30, async {
        let (mut ann, _) = Player::hello(old.addr, None).await;
        ann.create_lobby("Ann").await;
        ann
    });
    // Started during a deploy: it holds its port but waits for the store's lock.
    let new = TestServer::start(&env);
    old.shutdown();
    assert!(old.join(10), "the old server did not stop");
    bounded(30, async {
        let (back, view) = Player::hello(new.addr, Some(&ann.token)).await;
        assert_eq!(back.id, ann.id);
        assert!(view.lobby.is_some(), "back in the lobby");
    });
}

#[test]
fn a_store_that_cannot_be_opened_stops_start_up() {
    let dir = TempDir::new();
    std::fs::create_dir_all(&dir.0).unwrap();
    // A file where the store's folder should be.
    let blocker = dir.0.join("not-a-folder");
    std::fs::write(&blocker, b"x").unwrap();
    let store = format!("sqlite:{}/wizard.db", blocker.display());
    let config = Config::from_pairs([("STORE", store.as_str()), ("BIND", "127.0.0.1:0")]).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let result = wizard_server::run_on(config, listener, Seed::from_u64(1), async {});
    let e = result.expect_err("started on a store it cannot open");
    assert!(matches!(e, wizard_server::RunError::Store(_)), "{e}");
    assert!(e.to_string().starts_with("STORE: "), "{e}");
}
