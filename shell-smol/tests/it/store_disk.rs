//! The SQLite store's faults against the real binary and real files, as an operator's
//! bad day brings them: another process holding SQLite's lock, a disk that fills up, a
//! second server on the same file through a symlink or a hard link, a file truncated,
//! dropped or foreign, and a game whose records cannot be replayed. In each, every move
//! a player saw is there after a restart, and nothing a player did not see was shown.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use wizard_core::vocabulary::game::Observation;
use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode, ServerMessage};

use super::client::{Player, bounded, metric_in};
use super::durable::{Process, TempDir, extends, play, progress, table};
use super::proxy::{free_port, get};

/// Every player back with its token on `addr`: each sees its game where it saw it
/// last, nothing lost.
async fn back_where_they_were(addr: SocketAddr, players: &mut [Player], seen: &mut [Observation]) {
    for (i, pl) in players.iter_mut().enumerate() {
        let (back, view) = Player::hello(addr, Some(&pl.token)).await;
        assert_eq!(back.id, pl.id, "the same player");
        let now = view.game.expect("back in the game").observation;
        if let Err(e) = extends(&seen[i], &now) {
            panic!("player {i}: {e}");
        }
        assert_eq!(
            progress(&now),
            progress(&seen[i]),
            "player {i}: exactly the moves it saw"
        );
        seen[i] = now;
        *pl = back;
    }
}

fn metric(addr: SocketAddr, series: &str) -> f64 {
    let (status, body) = get(addr, "/metrics");
    assert_eq!(status, 200);
    metric_in(&body, series)
}

fn sqlite(path: &Path) -> String {
    format!("sqlite:{}", path.display())
}

/// Another process takes SQLite's write lock and holds it past `STORE_BUSY_TIMEOUT`
/// (an operator's `sqlite3`, a backup tool): the writer's folds fail and are tried
/// again, players go on (the journal holds their moves), and once the lock is released
/// the writer catches up. Then `kill -9`: every move any player saw comes back.
#[test]
fn a_lock_held_by_another_process_loses_no_move() {
    let dir = TempDir::made();
    let path = dir.0.join("wizard.db");
    let store = sqlite(&path);
    let log = dir.0.join("server.log");
    let port = free_port();
    let env = [
        ("STORE_SYNC_INTERVAL", "0.05"),
        ("STORE_BUSY_TIMEOUT", "0.2"),
        // The test asks /metrics after every move.
        ("SOCKET_RATE", "100000"),
        ("SOCKET_BURST", "100000"),
    ];
    let server = Process::start_env(&store, port, &log, &env);
    let addr = server.addr;
    let (mut players, mut seen) = bounded(60, async {
        let (mut players, mut seen, _) = table(addr).await;
        play(&mut players, &mut seen, 10).await;
        (players, seen)
    });
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let held_at = std::time::Instant::now();
    let during = bounded(60, async {
        // Players go on while the writer's folds fail.
        let mut moves = 0;
        while metric(addr, "wizard_store_fold_failing") < 1.0 {
            play(&mut players, &mut seen, 1).await;
            moves += 1;
            assert!(moves < 300, "no fold failed while the lock was held");
        }
        play(&mut players, &mut seen, 10).await;
        let (status, body) = get(addr, "/ready");
        assert_eq!(status, 200, "the journal still takes commits: {body}");
        moves + 10
    });
    assert!(metric(addr, "wizard_store_failures_total{kind=\"fold\"}") >= 1.0);
    holder.execute_batch("COMMIT").unwrap();
    drop(holder);
    bounded(60, async {
        let mut moves = 0;
        while metric(addr, "wizard_store_fold_failing") > 0.0 {
            play(&mut players, &mut seen, 1).await;
            moves += 1;
            assert!(
                moves < 300,
                "the writer did not catch up once the lock was released"
            );
        }
        play(&mut players, &mut seen, 5).await;
    });
    let held_ms = held_at.elapsed().as_millis();
    let acknowledged = progress(&seen[0]);
    server.crash();
    let server = Process::start_env(&store, port, &log, &env);
    bounded(
        60,
        back_where_they_were(server.addr, &mut players, &mut seen),
    );
    println!(
        "held lock: {during} moves acknowledged while the folds failed ({held_ms} ms of lock and catching up), none waited; restored after kill -9: {:?} = acknowledged {acknowledged:?}",
        progress(&seen[0])
    );
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text.contains("Store fold failed") && text.contains("Store folds resumed"),
        "the log says the folds failed and resumed:\n{text}"
    );
}

/// A small file system of its own for the store, unmounted when dropped: a tmpfs of
/// `size` (root only; `None` where it cannot be mounted).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).ok()?;
        let status = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        status.success().then(|| Tmpfs(dir.to_path_buf()))
    }

    /// Fills the file system with `filler` until `free_bytes` or fewer are left.
    fn fill(&self, filler: &Path, free_bytes: u64) {
        use std::io::Write as _;
        let free = || {
            let s = rustix::fs::statvfs(&self.0).unwrap();
            s.f_bavail * s.f_frsize
        };
        let mut f = std::fs::File::create(filler).unwrap();
        let block = vec![0x5au8; 4096];
        while free() > free_bytes {
            if f.write_all(&block).is_err() {
                break;
            }
        }
        let _ = f.sync_all();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

fn hidden_bids(on: bool) -> ClientMessage {
    serde_json::from_value(serde_json::json!({"type": "set_options", "hidden_bids": on}))
        .expect("a set_options message")
}

/// The disk fills up (something else wrote a filler file): the writer's folds fail,
/// then the journal cannot grow, and the server stops acknowledging, says so on
/// `/ready` (503, `store`) and in `/metrics`, and pauses: the host's option changes
/// wait, none is shown that is not in the journal. Space freed, it resumes by itself;
/// then `kill -9`: the lobby comes back exactly as the host last saw it.
#[test]
fn a_full_disk_pauses_and_resumes_and_loses_no_change() {
    let dir = TempDir::new();
    let mount = dir.0.join("disk");
    let Some(disk) = Tmpfs::mount(&mount, "8m") else {
        println!(
            "skipped: cannot mount a tmpfs here (needs root): a_full_disk_pauses_and_resumes_and_loses_no_change"
        );
        return;
    };
    let path = mount.join("wizard.db");
    let store = sqlite(&path);
    let log = dir.0.join("server.log");
    let port = free_port();
    let env = [
        ("STORE_SYNC_INTERVAL", "0.05"),
        ("MESSAGE_RATE", "100000"),
        ("MESSAGE_BURST", "100000"),
        // The test asks /ready while it waits.
        ("SOCKET_RATE", "100000"),
        ("SOCKET_BURST", "100000"),
    ];
    let server = Process::start_env(&store, port, &log, &env);
    let addr = server.addr;
    let filler = mount.join("filler");
    disk.fill(&filler, 16 * 1024);
    let (mut host, acked, held) = bounded(120, async {
        let (mut host, _) = Player::hello(addr, None).await;
        host.create_lobby("Ann").await;
        // Each change of an option is a lobby record: about a kilobyte of journal.
        let mut acked = 0u64;
        let mut hidden = false;
        loop {
            hidden = !hidden;
            host.send(hidden_bids(hidden)).await;
            // Either the change is shown, or the store stops acknowledging.
            let shown = async {
                host.state_where(|v| {
                    v.lobby
                        .as_ref()
                        .is_some_and(|l| l.options.hidden_bids == hidden)
                })
                .await;
                true
            };
            let stalled = async {
                loop {
                    let (status, body) = get(addr, "/ready");
                    if status == 503 && body.contains("\"store\"") {
                        return false;
                    }
                    async_io::Timer::after(std::time::Duration::from_millis(20)).await;
                }
            };
            if futures_lite::future::or(shown, stalled).await {
                acked += 1;
                assert!(acked < 20_000, "the journal never filled the disk");
                continue;
            }
            break (host, acked, hidden);
        }
    });
    assert!(
        acked > 100,
        "{acked} changes acknowledged before the disk was full"
    );
    assert_eq!(metric(addr, "wizard_store_unavailable"), 1.0);
    assert!(metric(addr, "wizard_store_failures_total{kind=\"commit\"}") >= 1.0);
    // The operator frees space: the held change goes out, and play resumes.
    std::fs::remove_file(&filler).unwrap();
    let freed = std::time::Instant::now();
    bounded(60, async {
        host.state_where(|v| {
            v.lobby
                .as_ref()
                .is_some_and(|l| l.options.hidden_bids == held)
        })
        .await;
        println!(
            "full disk: {acked} changes acknowledged before the store stopped; the held one shown {} ms after space was freed",
            freed.elapsed().as_millis()
        );
        for hidden in [!held, held] {
            host.send(hidden_bids(hidden)).await;
            host.state_where(|v| {
                v.lobby
                    .as_ref()
                    .is_some_and(|l| l.options.hidden_bids == hidden)
            })
            .await;
        }
    });
    assert!(
        super::proxy::poll_200(addr, "/ready", 20, &mut || false),
        "ready again"
    );
    server.crash();
    let server = Process::start_env(&store, port, &log, &env);
    bounded(30, async {
        let (_, view) = Player::hello(server.addr, Some(&host.token)).await;
        let lobby = view.lobby.expect("back in the lobby");
        assert_eq!(lobby.options.hidden_bids, held, "the last change seen");
    });
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text.contains("Store cannot commit") && text.contains("Store commits resumed"),
        "the log says it paused and resumed:\n{text}"
    );
    drop(disk);
}

/// Waits for a line with `what` in the log at `log`.
fn log_says(log: &Path, what: &str) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < until {
        if std::fs::read_to_string(log)
            .unwrap_or_default()
            .contains(what)
        {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// A second server started on the same file through another path (`link` makes it: a
/// symlink or a hard link) stands by, says so at once, and does not listen; the first
/// goes on. When the first stops (`crash`: `kill -9`, else SIGTERM), the second takes
/// over and every move the players saw is there (after a crash, from the first one's
/// journal).
fn a_second_server_through_another_path_stands_by(
    link: fn(&Path, &Path) -> std::io::Result<()>,
    crash: bool,
) {
    let dir = TempDir::new();
    let (home, other) = (dir.0.join("home"), dir.0.join("other"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let path = home.join("wizard.db");
    let (log, log2) = (dir.0.join("server.log"), dir.0.join("second.log"));
    let env = [("STORE_SYNC_INTERVAL", "3600")];
    let first = Process::start_env(&sqlite(&path), free_port(), &log, &env);
    let (mut players, mut seen) = bounded(60, async {
        let (mut players, mut seen, _) = table(first.addr).await;
        play(&mut players, &mut seen, 15).await;
        (players, seen)
    });
    let alias = other.join("games.db");
    link(&path, &alias).unwrap();
    let second = Process::spawn_env(&sqlite(&alias), free_port(), &log2, &env);
    assert!(
        log_says(&log2, "Waiting for the store's lock: standing by"),
        "the second server says it stands by:\n{}",
        std::fs::read_to_string(&log2).unwrap_or_default()
    );
    assert!(
        std::net::TcpStream::connect(second.addr).is_err(),
        "a standby does not listen"
    );
    bounded(60, play(&mut players, &mut seen, 15));
    if crash {
        first.crash();
    } else {
        assert!(first.stop().success());
    }
    assert!(
        super::proxy::poll_200(second.addr, "/health", 30, &mut || false),
        "the second server serves once the first is gone:\n{}",
        std::fs::read_to_string(&log2).unwrap_or_default()
    );
    bounded(60, async {
        back_where_they_were(second.addr, &mut players, &mut seen).await;
        play(&mut players, &mut seen, 5).await;
    });
}

#[test]
fn a_second_server_through_a_symlink_stands_by() {
    a_second_server_through_another_path_stands_by(
        |target, link| std::os::unix::fs::symlink(target, link),
        false,
    );
}

#[test]
fn a_second_server_through_a_hard_link_stands_by_and_takes_over_a_crash() {
    a_second_server_through_another_path_stands_by(
        |target, link| std::fs::hard_link(target, link),
        true,
    );
}

/// The server's exit status and log, started on `store` with `env`, when it stops by
/// itself within 30 s (`None` if it served instead).
fn start_fails(store: &str, log: &Path, env: &[(&str, &str)]) -> Option<(i32, String)> {
    let mut p = Process::spawn_env(store, free_port(), log, env);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < until {
        if let Some(status) = p.child.try_wait().unwrap() {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            return Some((status.code().unwrap_or(-1), text));
        }
        if get(p.addr, "/health").0 == 200 {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    None
}

/// A store's file emptied, its table dropped, deleted while its journal or lock is
/// left, or a SQLite file of something else: the server refuses to start (exit 2, a
/// line naming the file) instead of starting empty. `STORE_INIT=1` starts afresh where
/// that is what the operator wants; a foreign file is never written into.
#[test]
fn a_file_that_is_not_the_store_stops_start_up() {
    let dir = TempDir::made();
    let path = dir.0.join("wizard.db");
    let store = sqlite(&path);
    let log = dir.0.join("server.log");
    let make_store = || {
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(dir.0.join("wizard.db.lock"));
        let p = Process::start_env(&store, free_port(), &log, &[]);
        bounded(30, async {
            let (mut ann, _) = Player::hello(p.addr, None).await;
            ann.create_lobby("Ann").await;
        });
        assert!(p.stop().success());
    };
    let refused = |what: &str, env: &[(&str, &str)]| {
        let log = dir.0.join(format!("{}.log", what.replace(' ', "-")));
        match start_fails(&store, &log, env) {
            Some((2, text)) => assert!(
                text.contains(&path.display().to_string()) && text.contains("not a store")
                    || text.contains("is missing"),
                "{what}: the line names the file:\n{text}"
            ),
            other => panic!("{what}: started or failed otherwise: {other:?}"),
        }
    };
    make_store();
    std::fs::File::create(&path).unwrap().set_len(0).unwrap();
    refused("truncated to 0 bytes", &[]);
    // STORE_INIT=1: the operator starts afresh on purpose.
    let p = Process::start_env(&store, free_port(), &log, &[("STORE_INIT", "1")]);
    assert!(p.stop().success());
    make_store();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TABLE records")
        .unwrap();
    refused("records dropped", &[]);
    refused(
        "records dropped, even with STORE_INIT",
        &[("STORE_INIT", "1")],
    );
    make_store();
    std::fs::remove_file(&path).unwrap();
    refused("deleted, its lock left", &[]);
    // Another application's database, where nothing says a store was.
    let foreign = dir.0.join("notes.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine')")
        .unwrap();
    let log = dir.0.join("foreign.log");
    for env in [&[][..], &[("STORE_INIT", "1")][..]] {
        match start_fails(&sqlite(&foreign), &log, env) {
            Some((2, text)) => assert!(text.contains("not a store"), "{text}"),
            other => panic!("a foreign file: {other:?}"),
        }
    }
    let kept: String = rusqlite::Connection::open(&foreign)
        .unwrap()
        .query_row("SELECT text FROM notes", [], |r| r.get(0))
        .unwrap();
    assert_eq!(kept, "mine", "nothing written into it");
}

/// A game whose records cannot be replayed (a move added by hand that the rules
/// refuse) is set aside at the restore: every other game comes back, the set-aside
/// game's player is told at its `hello`, and `/metrics` counts it.
#[test]
fn a_game_that_cannot_be_replayed_is_set_aside_and_its_player_told() {
    let dir = TempDir::made();
    let path = dir.0.join("wizard.db");
    let store = sqlite(&path);
    let log = dir.0.join("server.log");
    let env = [("AI_MOVE_DELAY", "120"), ("MAX_GAMES_PER_IP", "5")];
    let p = Process::start_env(&store, free_port(), &log, &env);
    let (ann, bob, bob_seen) = bounded(60, async {
        let mut two = Vec::new();
        for name in ["Ann", "Bob"] {
            let (mut pl, _) = Player::hello(p.addr, None).await;
            pl.create_lobby(name).await;
            pl.add_ai(2).await;
            pl.add_ai(3).await;
            let view = pl.start_game().await;
            two.push((pl, view.game.expect("a game").observation));
        }
        let (bob, bob_seen) = two.pop().unwrap();
        let (ann, _) = two.pop().unwrap();
        (ann, bob, bob_seen)
    });
    assert!(p.stop().success());
    // Ann's game (lobby 1) gets a move no rule allows: a card nobody holds twice.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let (seq, body): (i64, String) = conn
        .query_row(
            "SELECT seq, body FROM records WHERE kind = 'lobby' AND lobby = 1 ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(seq > 0 && !body.is_empty());
    let bad = wizard_core::machine::records::Record::Move {
        lobby: wizard_core::vocabulary::ids::LobbyId(1),
        game_no: 1,
        seat: 0,
        action: wizard_core::vocabulary::game::Action::Bid { bid: 200 },
        by: wizard_core::vocabulary::io::MoveSource::Human,
        autoplayed: false,
    };
    let next: i64 = conn
        .query_row("SELECT MAX(seq) + 1 FROM records", [], |r| r.get(0))
        .unwrap();
    conn.execute(
        "INSERT INTO records (seq, lobby, kind, game_no, body) VALUES (?1, 1, 'move', 1, ?2)",
        rusqlite::params![next, bad.encode()],
    )
    .unwrap();
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('folded_seq', ?1)",
        [next],
    )
    .unwrap();
    drop(conn);
    let p = Process::start_env(&store, free_port(), &log, &env);
    bounded(30, async {
        let (_, view) = Player::hello(p.addr, Some(&bob.token)).await;
        let game = view.game.expect("Bob's game is back");
        assert_eq!(game.observation, bob_seen, "where Bob left it");
        let (mut ann_back, view) = Player::hello(p.addr, Some(&ann.token)).await;
        assert_eq!(ann_back.id, ann.id, "Ann's session is kept");
        assert!(view.lobby.is_none(), "no game to show her");
        loop {
            match ann_back.next().await {
                ServerMessage::Error { code, message, .. } => {
                    assert_eq!(code, ErrorCode::NotFound);
                    assert!(message.contains("could not be restored"), "{message}");
                    break;
                }
                _ => continue,
            }
        }
    });
    assert_eq!(metric(p.addr, "wizard_store_games_set_aside"), 1.0);
    drop(p);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("set aside"), "the log names it:\n{text}");
}
