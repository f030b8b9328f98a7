//! Durable games against the real server: a game and its players' sessions survive a
//! restart on the same SQLite store, SIGTERM closes players with 1012, a new process
//! waits for the old one's lock, and a store that cannot be opened stops start-up.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::game::Observation;
use wizard_core::vocabulary::rng::Seed;
use wizard_core::vocabulary::wire::ClientMessage;

use super::client::{Player, TestServer, bounded, close_code};

/// A fresh folder for one test's store, removed when dropped.
pub(super) struct TempDir(pub(super) PathBuf);

impl TempDir {
    pub(super) fn new() -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("wizard-durable-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }

    /// [`TempDir::new`], made (for a store file, and the logs beside it).
    pub(super) fn made() -> TempDir {
        let dir = TempDir::new();
        std::fs::create_dir_all(&dir.0).unwrap();
        dir
    }

    /// `sqlite:` and the store file `wizard.db` in it.
    pub(super) fn store(&self) -> String {
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
async fn start_game(player: &mut Player) -> wizard_core::vocabulary::wire::GameView {
    player.create_lobby("Ann").await;
    player.send(ClientMessage::AddAi { level: None }).await;
    player.send(ClientMessage::AddAi { level: None }).await;
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
    let dir = TempDir::made();
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

/// The real binary with no settings but `EMBEDDED_AI=0` (no embedded AI service to
/// start) and `env`, its stdin closed and its output piped.
pub(super) fn server_command(env: &[(&str, &str)]) -> std::process::Command {
    use std::process::{Command, Stdio};
    let mut command = Command::new(env!("CARGO_BIN_EXE_wizard-server"));
    command
        .env_clear()
        .env("EMBEDDED_AI", "0")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// The real binary on `store`, at `port`; killed (SIGKILL) when dropped.
pub(super) struct Process {
    pub(super) child: std::process::Child,
    pub(super) addr: std::net::SocketAddr,
}

impl Process {
    fn start(store: &str, port: u16, log: &std::path::Path) -> Process {
        Process::start_env(store, port, log, &[])
    }

    /// [`Process::start`] with more settings.
    pub(super) fn start_env(
        store: &str,
        port: u16,
        log: &std::path::Path,
        env: &[(&str, &str)],
    ) -> Process {
        let p = Process::spawn_env(store, port, log, env);
        assert!(
            super::proxy::poll_200(p.addr, "/health", 20, &mut || false),
            "no /health: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        p
    }

    /// Starts the binary with `env` without waiting for it to listen.
    pub(super) fn spawn_env(
        store: &str,
        port: u16,
        log: &std::path::Path,
        env: &[(&str, &str)],
    ) -> Process {
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap();
        let bind = addr.to_string();
        let settings = [
            ("BIND", bind.as_str()),
            ("STORE", store),
            ("LOG_LEVEL", "warn"),
            // The test's players move as fast as they are answered.
            ("MESSAGE_RATE", "1000"),
            ("MESSAGE_BURST", "1000"),
        ];
        let child = server_command(&settings)
            .envs(env.iter().copied())
            // The log lines (stdout) and whatever else it says (stderr), in `log`.
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .expect("wizard-server starts");
        Process { child, addr }
    }

    /// SIGTERM, without waiting for the exit.
    pub(super) fn term(&self) {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    }

    /// `kill -9`.
    pub(super) fn crash(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then waits for the exit.
    pub(super) fn stop(mut self) -> std::process::ExitStatus {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How far a game is, growing with every move: round, trump chosen, bids made, tricks
/// won, cards on the table, finished.
pub(super) fn progress(o: &Observation) -> (u8, bool, usize, u32, usize, bool) {
    (
        o.round,
        o.trump_suit.is_some(),
        o.has_bid.iter().filter(|b| **b).count(),
        o.tricks_won.iter().map(|t| u32::from(*t)).sum(),
        o.trick.len(),
        o.ranking.is_some(),
    )
}

/// No move a player saw is missing or changed in `after`, the view the player gets
/// when it comes back: the rounds scored stay scored, and within the same round every
/// bid stays and cards only leave the hand.
pub(super) fn extends(before: &Observation, after: &Observation) -> Result<(), String> {
    if !after.round_scores.starts_with(&before.round_scores) {
        return Err(format!(
            "scored rounds changed: {:?} then {:?}",
            before.round_scores, after.round_scores
        ));
    }
    if after.round < before.round {
        return Err(format!("round {} then {}", before.round, after.round));
    }
    if after.round == before.round {
        for (seat, (b, a)) in before.bids.iter().zip(&after.bids).enumerate() {
            if b.is_some() && a != b {
                return Err(format!("seat {seat}'s bid {b:?} then {a:?}"));
            }
        }
        if let Some(card) = after.hand.iter().find(|c| !before.hand.contains(c)) {
            return Err(format!("{card:?} came back into the hand"));
        }
        if after.played.len() < before.played.len() {
            return Err(format!(
                "{} cards played then {}",
                before.played.len(),
                after.played.len()
            ));
        }
    }
    Ok(())
}

/// Three players play a whole game while the server is killed (`kill -9`) ten times at
/// moments drawn from a seed and restarted on the same store, then stopped with SIGTERM
/// once: every player comes back with its token each time, never sees a move it saw
/// missing or changed, and the game ends with every round scored. The store's writer
/// never folds on its own (an hour's interval): what each crash leaves is in the
/// journal only, and each start folds it.
#[test]
fn a_game_survives_ten_kill_9s_and_a_sigterm() {
    let dir = TempDir::made();
    let store = dir.store();
    let env = [("STORE_SYNC_INTERVAL", "3600")];
    a_game_survives_kill_9s(&dir, &store, &env, 10);
}

/// Three players play a whole game on `store` while the real binary (with `env`) is
/// killed (`kill -9`) `kills` times at moments drawn from a seed and restarted on the
/// same store, then stopped with SIGTERM once: every player comes back with its
/// token each time, never sees a move it saw missing or changed, and the game ends
/// with every round scored. `dir` holds the log.
pub(super) fn a_game_survives_kill_9s(
    dir: &TempDir,
    store: &str,
    env: &[(&str, &str)],
    kills: usize,
) {
    use rand::{RngExt, SeedableRng};
    let store = store.to_string();
    let port = super::proxy::free_port();
    let log = dir.0.join("server.log");
    let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(16);
    // After how many moves each crash comes (the game has about 700).
    let mut crashes: Vec<usize> = (0..kills).map(|_| rng.random_range(10..650)).collect();
    crashes.sort_unstable();
    let term_at = 660;
    let env = env.to_vec();
    let mut server = Some(Process::start_env(&store, port, &log, &env));
    let addr = server.as_ref().unwrap().addr;
    bounded(240, async {
        let (mut players, mut seen, _) = table(addr).await;
        let (mut moves, mut restarts) = (0usize, 0usize);
        while seen[0].ranking.is_none() {
            let crash = crashes.first() == Some(&moves);
            if crash || moves == term_at {
                let p = server.take().unwrap();
                if crash {
                    crashes.remove(0);
                    p.crash();
                } else {
                    // SIGTERM with a durable store: 1012 for everyone, and exit 0.
                    let mut codes = Vec::new();
                    let status = p.stop();
                    for pl in players.iter_mut() {
                        codes.push(close_code(&mut pl.ws).await);
                    }
                    assert!(status.success(), "{status}");
                    assert_eq!(codes, [1012, 1012, 1012]);
                }
                server = Some(Process::start_env(&store, port, &log, &env));
                restarts += 1;
                for (i, pl) in players.iter_mut().enumerate() {
                    let (back, view) = Player::hello(addr, Some(&pl.token)).await;
                    assert_eq!(back.id, pl.id, "the same player after restart {restarts}");
                    let now = view.game.expect("back in the game").observation;
                    if let Err(e) = extends(&seen[i], &now) {
                        panic!("player {i} after restart {restarts} at move {moves}: {e}");
                    }
                    seen[i] = now;
                    *pl = back;
                }
                moves += 1; // a restart may have taken a move the players did not see
                continue;
            }
            assert!(
                play_one(&mut players, &mut seen).await,
                "nobody may move at move {moves}: {:?}",
                seen[0]
            );
            moves += 1;
        }
        assert_eq!(restarts, kills + 1, "every crash and a SIGTERM");
        let rounds = usize::from(seen[0].rounds);
        assert_eq!(seen[0].round_scores.len(), rounds, "every round scored");
    });
}

/// Three humans at one table, the game started; each one's view, and the lobby's code.
pub(super) async fn table(addr: std::net::SocketAddr) -> (Vec<Player>, Vec<Observation>, String) {
    let (mut ann, _) = Player::hello(addr, None).await;
    let (mut bob, _) = Player::hello(addr, None).await;
    let (mut cat, _) = Player::hello(addr, None).await;
    let code = ann.create_lobby("Ann").await;
    bob.join_lobby(&code, "Bob").await;
    cat.join_lobby(&code, "Cat").await;
    ann.send(ClientMessage::StartGame).await;
    let mut players = vec![ann, bob, cat];
    let mut seen = Vec::new();
    for p in players.iter_mut() {
        let v = p.state_where(|v| v.game.is_some()).await;
        seen.push(v.game.expect("a game").observation);
    }
    (players, seen, code)
}

/// One move by whoever may move, and every player's view after it. False once the
/// game is over.
pub(super) async fn play_one(players: &mut [Player], seen: &mut [Observation]) -> bool {
    let Some((i, action)) = seen
        .iter()
        .enumerate()
        .find_map(|(i, o)| o.legal_actions.first().map(|a| (i, *a)))
    else {
        return false;
    };
    players[i].send(ClientMessage::Action { action }).await;
    for (j, pl) in players.iter_mut().enumerate() {
        let before = progress(&seen[j]);
        let v = pl
            .state_where(|v| {
                v.game
                    .as_ref()
                    .is_some_and(|g| progress(&g.observation) > before)
            })
            .await;
        seen[j] = v.game.expect("a game").observation;
    }
    true
}

pub(super) async fn play(players: &mut [Player], seen: &mut [Observation], moves: usize) {
    for _ in 0..moves {
        assert!(play_one(players, seen).await, "the game ended early");
    }
}

/// The number of open player connections `/metrics` reports (`wizard_player_connections`).
fn player_connections(addr: std::net::SocketAddr) -> Option<u64> {
    let (status, body) = super::proxy::get(addr, "/metrics");
    (status == 200).then_some(())?;
    body.lines()
        .find_map(|l| l.strip_prefix("wizard_player_connections "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as u64)
}

/// The load generator's bots (4 games of 3 humans, moving as fast as they are answered,
/// with `resume` on) while the real binary is killed (`kill -9`) ten times and stopped
/// with SIGTERM once, each time at a moment drawn from a seed once every bot is back,
/// and restarted on the same store. Every bot comes back with its token after every
/// restart; the SIGTERM closes every one with 1012; no bot finds a card, a bid or a
/// round's score it saw missing or changed; games keep finishing, each with every round
/// scored.
#[test]
fn load_generator_bots_come_back_after_ten_kill_9s_and_a_sigterm() {
    use super::bench::bench_lib::{self, Pacing, Settings};
    use rand::{RngExt, SeedableRng};
    const BOTS: u64 = 12;
    let dir = TempDir::made();
    let store = dir.store();
    let port = super::proxy::free_port();
    let log = dir.0.join("server.log");
    let first = Process::start(&store, port, &log);
    let addr = first.addr;
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let restarter = std::thread::spawn(move || {
        let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(16);
        let mut server = Some(first);
        let mut restarts = 0u32;
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while restarts < 11 && std::time::Instant::now() < give_up {
            // Every bot is back in (asked every 100 ms, or the run ended)...
            if player_connections(addr) != Some(BOTS) {
                let poll = std::time::Duration::from_millis(100);
                if stop_rx.recv_timeout(poll).is_ok() {
                    break;
                }
                continue;
            }
            // ...then the fault, at a moment of play drawn from the seed.
            let after = std::time::Duration::from_millis(rng.random_range(50..600));
            if stop_rx.recv_timeout(after).is_ok() {
                break;
            }
            let p = server.take().unwrap();
            if restarts < 10 {
                p.crash();
            } else {
                let status = p.stop();
                assert!(status.success(), "SIGTERM: {status}");
            }
            server = Some(Process::start(&store, port, &log));
            restarts += 1;
        }
        (server, restarts)
    });
    let mut s = Settings::new(addr);
    s.games = 4;
    s.humans = 3;
    s.seats = 3;
    s.pacing = Pacing::Full;
    s.think = std::time::Duration::ZERO;
    s.ramp = std::time::Duration::from_millis(200);
    s.warmup = std::time::Duration::ZERO;
    s.duration = std::time::Duration::from_secs(25);
    s.resume = true;
    s.history = None;
    let report = bench_lib::run(s).expect("the generator runs");
    let _ = stop_tx.send(());
    let (server, restarts) = restarter.join().expect("the restarter");
    drop(server);
    let st = &report.stats;
    let results = &report.line["results"];
    assert_eq!(restarts, 11, "ten crashes and a SIGTERM: {results}");
    assert_eq!(st.resume_mismatch, 0, "{:?}", st.resume_mismatches);
    assert_eq!(st.resume_failed, 0, "{results}");
    assert_eq!(
        st.resumed,
        11 * BOTS,
        "every bot back after every restart: {results}"
    );
    let ended: Vec<(u16, u64)> = st.resume_ended.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(ended, [(1006, 10 * BOTS), (1012, BOTS)], "{results}");
    assert!(st.games_finished >= 4, "{results}");
    assert_eq!(st.games_unscored, 0, "{results}");
}

/// The write-ahead log stays bounded under steady writes: about 100 MB of commits, with
/// a sync every 20 ms that never finds the writer idle, leave a log of at most the size
/// the store keeps (16 MiB) plus what a few syncs' worth of commits take. Before the
/// writer caught up after each sync, SQLite never started the log afresh and it held
/// every commit (8 MB a second at 1000 paced games).
#[test]
fn the_write_ahead_log_stays_bounded_under_steady_writes() {
    use wizard_core::machine::records::Record;
    use wizard_core::vocabulary::ids::SessionId;
    use wizard_server::store::Store;
    let dir = TempDir::new();
    let path = dir.0.join("wizard.db");
    let (mut store, _) = Store::open_sqlite(&path, std::time::Duration::from_millis(20)).unwrap();
    let wal = dir.0.join("wizard.db-wal");
    let mut wal_bytes_max = 0u64;
    let mut written = 0usize;
    let mut k = 0u64;
    smol::block_on(async {
        while written < 100 << 20 {
            // 20 sessions of 4 KiB each per commit, replaced over and over.
            let records: Vec<Record> = (0..20)
                .map(|i| Record::Session {
                    session: SessionId((k * 20 + i) % 1000),
                    player_id: format!("{k:012}"),
                    token_sha256: "ab".repeat(2048),
                })
                .collect();
            written += records.iter().map(|r| r.encode().len()).sum::<usize>();
            store.commit(records).unwrap();
            k += 1;
            // Every 8 MiB, wait for a fold: a writer starved of CPU (parallel tests) may
            // otherwise fold up to PENDING_BYTES_MAX at once, which the bound below does
            // not allow for. The log still has to start afresh after every fold in
            // between (the 20 ms interval), or it grows past the bound.
            if k.is_multiple_of(100) {
                store.flush().unwrap();
            }
            let now = std::fs::metadata(&wal).map_or(0, |m| m.len());
            wal_bytes_max = wal_bytes_max.max(now);
        }
    });
    drop(store);
    let kept = 16u64 << 20;
    assert!(
        wal_bytes_max < kept + (24 << 20),
        "the log reached {} MiB for {} MiB written in {k} commits",
        wal_bytes_max >> 20,
        written >> 20
    );
}

/// A deploy that starts the new binary before the old one is gone: the old one gets
/// SIGTERM and the new one starts at once, on the same address and store, with
/// `BIND_WAIT`. The new one waits for the address and the store's lock, then serves the
/// old one's lobby to its player, who comes back with the token.
#[test]
fn a_new_binary_started_while_the_old_one_stops_takes_over_its_address_and_games() {
    let dir = TempDir::made();
    let store = dir.store();
    let port = super::proxy::free_port();
    let log = dir.0.join("server.log");
    let mut old = Process::start(&store, port, &log);
    let addr = old.addr;
    // Ann does not read while the old server stops: it waits for her close answer
    // (up to a second), so it still holds the address when the new one starts.
    let (ann, code) = bounded(30, async {
        let (mut ann, _) = Player::hello(addr, None).await;
        let code = ann.create_lobby("Ann").await;
        (ann, code)
    });
    let token = ann.token.clone();
    old.term();
    let mut new = Process::spawn_env(&store, port, &log, &[("BIND_WAIT", "30")]);
    let status = old.child.wait().unwrap();
    assert!(status.success(), "the old server: {status}");
    let mut exited = || new.child.try_wait().ok().flatten().is_some();
    assert!(
        super::proxy::poll_200(addr, "/health", 30, &mut exited),
        "the new server did not take over: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    drop(ann);
    bounded(30, async {
        let (_, view) = Player::hello(addr, Some(&token)).await;
        assert_eq!(view.lobby.expect("back in the lobby").code, code);
    });
}

/// Frames of records (sequence number, body) for the journal tests.
fn frames(rows_per_frame: &[&[(u64, &str)]]) -> (Vec<u8>, Vec<usize>) {
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    let mut frame = Vec::new();
    for rows in rows_per_frame {
        wizard_server::journal::encode_frame(&mut frame, rows.iter().copied());
        bytes.extend_from_slice(&frame);
        ends.push(bytes.len());
    }
    (bytes, ends)
}

/// Session `n`'s record, for the store tests.
fn session(n: u64) -> wizard_core::machine::records::Record {
    wizard_core::machine::records::Record::Session {
        session: wizard_core::vocabulary::ids::SessionId(n),
        player_id: format!("p{n}"),
        token_sha256: format!("{n:064x}"),
    }
}

/// The one journal generation of the store at `path` (its number and file); fails the
/// test when there are none or several.
fn only_generation(path: &std::path::Path) -> (u64, std::path::PathBuf) {
    let generations = wizard_server::journal::generations(path).unwrap();
    assert_eq!(generations.len(), 1, "{generations:?}");
    generations[0].clone()
}

/// Opens the SQLite store at `path` with an hour's sync interval, so that it folds only
/// when a test stops it: the store and the records it restored.
fn open_store_folding_on_stop(
    path: &std::path::Path,
) -> (
    wizard_server::store::Store,
    Vec<wizard_core::machine::records::Record>,
) {
    let interval = std::time::Duration::from_secs(3600);
    wizard_server::store::Store::open_sqlite(path, interval).unwrap()
}

/// The journal reads back every whole frame, and drops a tail cut at any byte or
/// damaged at any byte (a power loss), with the count of bytes dropped.
#[test]
fn the_journal_reads_whole_frames_and_drops_a_cut_or_damaged_tail() {
    use wizard_server::journal;
    let rows: [&[(u64, &str)]; 3] = [
        &[(1, "{\"a\":1}")],
        &[(2, "{\"b\":2}"), (3, "{\"c\":\"ü\"}")],
        &[(4, "")],
    ];
    let (bytes, ends) = frames(&rows);
    let all: Vec<(u64, String)> = rows
        .iter()
        .flat_map(|f| f.iter().map(|(s, b)| (*s, (*b).to_owned())))
        .collect();
    let rows_in = |whole_frames: usize| -> Vec<(u64, String)> {
        let n: usize = rows[..whole_frames].iter().map(|f| f.len()).sum();
        all[..n].to_vec()
    };
    for cut in 0..=bytes.len() {
        let whole = ends.iter().filter(|e| **e <= cut).count();
        let kept = ends[..whole].last().copied().unwrap_or(0);
        let read = journal::read(&bytes[..cut]);
        assert_eq!(read.rows, rows_in(whole), "cut at {cut}");
        assert_eq!(
            read.torn_bytes,
            up_to_last_non_zero(&bytes[kept..cut]),
            "cut at {cut}"
        );
    }
    for at in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x40;
        let frame = ends.iter().position(|e| at < *e).unwrap();
        let read = journal::read(&damaged);
        assert_eq!(read.rows, rows_in(frame), "damaged at {at}");
        let kept = if frame == 0 { 0 } else { ends[frame - 1] };
        let torn = up_to_last_non_zero(&damaged[kept..]);
        assert_eq!(read.torn_bytes, torn, "damaged at {at}");
    }
}

/// The length of `tail` up to its last byte that is not zero: the torn bytes a journal
/// read reports (the zeros after them are a generation's unused rest).
fn up_to_last_non_zero(tail: &[u8]) -> usize {
    tail.iter()
        .rposition(|b| *b != 0)
        .map_or(0, |last| last + 1)
}

/// A generation file is allocated ahead and mapped: its unused rest is zeros, which
/// end it without counting as torn; a frame larger than what is left grows the file
/// and reads back whole; `bytes` counts the frames, not the file.
#[test]
fn a_journal_generation_reads_back_every_frame_before_its_unused_zeros() {
    use wizard_server::journal;
    let dir = TempDir::made();
    let db = dir.0.join("wizard.db");
    let reserved_bytes = 64;
    let mut writer = journal::Writer::create(&db, 7, reserved_bytes).unwrap();
    let file = journal::generation_path(&db, 7);
    let long = "x".repeat(300);
    let rows: [&[(u64, &str)]; 4] = [
        &[(1, "{\"a\":1}")],
        &[(2, "{\"b\":2}"), (3, "")],
        &[(4, long.as_str())],
        &[(5, "{\"c\":\"\u{fc}\"}")],
    ];
    let mut appended = 0;
    let mut frame = Vec::new();
    let mut expected = Vec::new();
    for frame_rows in rows {
        journal::encode_frame(&mut frame, frame_rows.iter().copied());
        writer.append(&frame).unwrap();
        appended += frame.len() as u64;
        assert_eq!(writer.bytes(), appended);
        expected.extend(frame_rows.iter().map(|(s, b)| (*s, (*b).to_owned())));
        let bytes = std::fs::read(&file).unwrap();
        assert!(bytes.len() as u64 >= reserved_bytes.max(appended));
        let read = journal::read(&bytes);
        assert_eq!(read.rows, expected, "after {appended} bytes");
        assert_eq!(read.torn_bytes, 0, "after {appended} bytes");
    }
    assert!(
        appended > 2 * reserved_bytes,
        "the file grew past twice its start"
    );
    writer.close();
    assert!(
        writer.append(&frame).is_err(),
        "a closed generation takes no frame"
    );
    assert_eq!(writer.bytes(), appended);
}

/// Minor page faults this thread has taken so far (`/proc/thread-self/stat`, field 10).
fn thread_minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    // The command name (field 2) is in parentheses and may hold spaces.
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    after_name.split(' ').nth(7).unwrap().parse().unwrap()
}

/// A generation faulted in ahead (`prefault`, what the store's writer does before the
/// core task fills it) takes its frames with no page fault on the appending thread;
/// without it, every new page faults.
#[test]
fn a_generation_faulted_in_ahead_takes_its_frames_without_page_faults() {
    use wizard_server::journal;
    let dir = TempDir::made();
    let db = dir.0.join("wizard.db");
    let (page_bytes, pages) = (4096, 64);
    let filled_bytes = (page_bytes * pages) as u64;
    let mut frame = Vec::new();
    let body = "x".repeat(500);
    journal::encode_frame(&mut frame, [(1, body.as_str())]);
    let mut faults = Vec::new();
    for (number, ahead) in [(1, false), (2, true)] {
        let mut writer = journal::Writer::create(&db, number, 2 * filled_bytes).unwrap();
        if ahead && let Err(e) = writer.prefault(filled_bytes) {
            // MADV_POPULATE_WRITE came with Linux 5.14.
            eprintln!("skipped: this kernel cannot fault a mapping in ahead: {e}");
            return;
        }
        let before = thread_minor_faults();
        while writer.bytes() + (frame.len() as u64) < filled_bytes {
            writer.append(&frame).unwrap();
        }
        faults.push(thread_minor_faults() - before);
    }
    assert!(
        faults[0] >= pages as u64 / 2,
        "appending to {pages} fresh pages faults them in: {faults:?}"
    );
    assert!(
        faults[1] <= pages as u64 / 8,
        "a generation faulted in ahead takes no fault per page: {faults:?}"
    );
}

/// An empty frame is all zeros, like a generation's unused rest, and ends the reading:
/// a frame after zeros (a power loss can leave a hole) is dropped and counted as torn.
/// The store never writes one: a commit of no records leaves the journal untouched.
#[test]
fn the_journal_ends_at_zeros_and_a_commit_never_writes_an_empty_frame() {
    use wizard_server::journal;
    let mut empty = Vec::new();
    journal::encode_frame(&mut empty, []);
    assert_eq!(empty, [0; journal::FRAME_HEADER_BYTES]);
    let (first, _) = frames(&[&[(1, "{\"a\":1}")]]);
    let (after, _) = frames(&[&[(2, "{\"b\":2}")]]);
    for hole_bytes in [1, 3, journal::FRAME_HEADER_BYTES, 40] {
        let mut bytes = first.clone();
        bytes.extend(std::iter::repeat_n(0, hole_bytes));
        bytes.extend_from_slice(&after);
        bytes.extend_from_slice(&[0; 100]);
        let read = journal::read(&bytes);
        assert_eq!(
            read.rows,
            [(1, "{\"a\":1}".to_owned())],
            "hole of {hole_bytes}"
        );
        assert_eq!(
            read.torn_bytes,
            hole_bytes + after.len(),
            "hole of {hole_bytes}"
        );
    }

    let dir = TempDir::new();
    let path = dir.0.join("wizard.db");
    let (mut store, _) = open_store_folding_on_stop(&path);
    let current = || std::fs::read(only_generation(&path).1).unwrap();
    store.commit(Vec::new()).unwrap();
    assert!(current().iter().all(|b| *b == 0), "no frame for no records");
    store.commit(vec![session(1)]).unwrap();
    store.commit(Vec::new()).unwrap();
    store.commit(vec![session(2), session(3)]).unwrap();
    let read = journal::read(&current());
    let seqs: Vec<u64> = read.rows.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(read.torn_bytes, 0);
    drop(store);
    assert!(journal::generations(&path).unwrap().is_empty());
}

/// Frames appended back to back in one buffer ([`journal::push_frame`], the store's
/// pending records) read back row by row without copying ([`journal::rows`], the
/// writer's fold) exactly as the journal file reads them after a crash, empty bodies
/// included; an empty frame is skipped in memory but ends a journal file (the store
/// never writes one); a cut buffer yields only whole rows, in order.
#[test]
fn frames_built_in_place_read_back_as_the_journal_reads_them() {
    use wizard_server::journal;
    let rows: [&[(u64, &str)]; 4] = [
        &[(1, "{\"a\":1}")],
        &[],
        &[
            (2, "[2,\"m\",1,1,0,\"b1\",\"h\",0]"),
            (3, "{\"c\":\"\u{fc}\"}"),
        ],
        &[(4, "")],
    ];
    let mut bytes = Vec::new();
    for frame in rows {
        let start = journal::push_frame(&mut bytes, frame.iter().copied(), |body, out| {
            out.extend_from_slice(body.as_bytes())
        });
        assert!(start <= bytes.len());
    }
    let (separately, _) = frames(&rows);
    assert_eq!(bytes, separately, "one buffer holds the same frames");
    let in_place: Vec<(u64, String)> = journal::rows(&bytes)
        .map(|(seq, body)| (seq, String::from_utf8(body.to_vec()).unwrap()))
        .collect();
    let without_empty: Vec<&[(u64, &str)]> =
        rows.iter().copied().filter(|f| !f.is_empty()).collect();
    let (file, _) = frames(&without_empty);
    let read = journal::read(&file);
    assert_eq!(read.torn_bytes, 0);
    assert_eq!(in_place, read.rows);
    assert_eq!(in_place.len(), 4);
    let read = journal::read(&bytes);
    assert_eq!(read.rows, in_place[..1], "a file ends at an empty frame");
    for cut in 0..bytes.len() {
        let part: Vec<(u64, String)> = journal::rows(&bytes[..cut])
            .map(|(seq, body)| (seq, String::from_utf8(body.to_vec()).unwrap()))
            .collect();
        assert!(part.len() < 4, "cut at {cut}");
        assert_eq!(part, in_place[..part.len()], "cut at {cut}");
    }
}

/// What a crash left in the journal comes back on the next open, in order after what
/// SQLite holds; a cut tail and everything after a gap are dropped; a generation older
/// than the ones the file has folded is stale and ignored; the journal is gone after.
#[test]
fn opening_a_store_folds_the_journal_a_crash_left_as_far_as_it_runs_on() {
    use wizard_server::journal;
    let dir = TempDir::new();
    let path = dir.0.join("wizard.db");
    let (mut store, records) = open_store_folding_on_stop(&path);
    assert!(records.is_empty());
    // Records 1 and 2, folded when the store closes.
    store.commit(vec![session(1), session(2)]).unwrap();
    drop(store);
    assert!(
        journal::generations(&path).unwrap().is_empty(),
        "a clean stop folds it all"
    );
    // A crash's journal: records 3 and 4 in one generation, 5 whole and 6 cut in the
    // next; a stale generation 0 holds another record 3.
    let body = |n: u64| session(n).encode();
    let (b3, b4, b5, b6, stale) = (body(3), body(4), body(5), body(6), body(99));
    let (gen_a, _) = frames(&[&[(3, b3.as_str())], &[(4, b4.as_str())]]);
    let (mut gen_b, _) = frames(&[&[(5, b5.as_str())], &[(6, b6.as_str())]]);
    gen_b.truncate(gen_b.len() - 3);
    let (gen_stale, _) = frames(&[&[(3, stale.as_str())]]);
    std::fs::write(journal::generation_path(&path, 1_000_000), gen_a).unwrap();
    std::fs::write(journal::generation_path(&path, 1_000_001), gen_b).unwrap();
    std::fs::write(journal::generation_path(&path, 0), gen_stale).unwrap();
    let (store, records) = open_store_folding_on_stop(&path);
    assert_eq!(records, (1..=5).map(session).collect::<Vec<_>>());
    let left = journal::generations(&path).unwrap();
    assert_eq!(left.len(), 1, "only the new generation: {left:?}");
    assert!(left[0].0 > 1_000_001, "{left:?}");
    // Numbering goes on after what was kept: a crash after record 6 leaves 6, then 8
    // (a gap: 7 is missing) and 9, and the next open takes 6 only.
    drop(store);
    let (gap, _) = frames(&[
        &[(6, body(6).as_str()), (8, body(8).as_str())],
        &[(9, body(9).as_str())],
    ]);
    std::fs::write(journal::generation_path(&path, left[0].0 + 10), gap).unwrap();
    let (mut store, records) = open_store_folding_on_stop(&path);
    assert_eq!(records, (1..=6).map(session).collect::<Vec<_>>());
    store.commit(vec![session(7)]).unwrap();
    drop(store);
    let (store, records) = open_store_folding_on_stop(&path);
    assert_eq!(records, (1..=7).map(session).collect::<Vec<_>>());
    // The writer keeps filling a generation after folding it (until it is half full),
    // so a crash can leave one whose first rows SQLite already holds: they are
    // skipped, the rest comes back once.
    drop(store);
    let (folded_and_not, _) = frames(&[
        &[(5, body(5).as_str()), (6, body(6).as_str())],
        &[(7, body(7).as_str()), (8, body(8).as_str())],
        &[(9, body(9).as_str())],
    ]);
    std::fs::write(
        journal::generation_path(&path, left[0].0 + 100),
        folded_and_not,
    )
    .unwrap();
    let (_store, records) = open_store_folding_on_stop(&path);
    assert_eq!(records, (1..=9).map(session).collect::<Vec<_>>());
}

/// A fold leaves the generation the core task is filling in place until it is half
/// full ([`GENERATION_ROTATE_BYTES`]): the frames committed after the fold follow the
/// folded ones in the same file, and only a fuller generation makes way for a new one.
#[test]
fn a_fold_keeps_the_generation_until_it_is_half_full() {
    use wizard_server::journal;
    use wizard_server::store::GENERATION_ROTATE_BYTES;
    let dir = TempDir::new();
    let path = dir.0.join("wizard.db");
    let (mut store, _) = open_store_folding_on_stop(&path);
    let only = || only_generation(&path);
    let (number, _) = only();
    store.commit(vec![session(1), session(2)]).unwrap();
    store.flush().unwrap();
    store.commit(vec![session(3)]).unwrap();
    store.flush().unwrap();
    let (still, file) = only();
    assert_eq!(
        still, number,
        "a fold of a few records keeps the generation"
    );
    let read = journal::read(&std::fs::read(&file).unwrap());
    let seqs: Vec<u64> = read.rows.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, [1, 2, 3]);
    // Past half full: the next fold starts a new generation and deletes this one.
    let big = |n: u64| wizard_core::machine::records::Record::Session {
        session: wizard_core::vocabulary::ids::SessionId(n),
        player_id: "x".repeat(64 * 1024),
        token_sha256: format!("{n:064x}"),
    };
    let count = GENERATION_ROTATE_BYTES / (64 * 1024) + 1;
    store.commit((4..4 + count).map(big).collect()).unwrap();
    store.flush().unwrap();
    let (next, _) = only();
    assert!(next > number, "{next} after {number}");
    drop(store);
    let (_store, records) = open_store_folding_on_stop(&path);
    assert_eq!(records.len() as u64, 3 + count);
}

/// The store drops what a restore no longer needs once it outnumbers the rest: 100
/// sessions each recorded 50 times leave their newest records only, and sessions
/// that are gone leave nothing, while everything stays readable throughout.
#[test]
fn the_store_compacts_what_a_restore_no_longer_needs() {
    use wizard_core::machine::records::Record;
    use wizard_core::vocabulary::ids::SessionId;
    use wizard_server::store::Store;
    let session = |n: u64, round: u64| Record::Session {
        session: SessionId(n),
        player_id: format!("p{n}-{round}"),
        token_sha256: format!("{n:032x}{round:032x}"),
    };
    let dir = TempDir::new();
    let path = dir.0.join("wizard.db");
    let interval = std::time::Duration::from_secs(3600);
    let (mut store, _) = Store::open_sqlite_compacting_at(&path, interval, 1000).unwrap();
    for round in 0..50 {
        store
            .commit((0..100).map(|n| session(n, round)).collect())
            .unwrap();
    }
    store
        .commit(
            (90..100)
                .map(|n| Record::SessionGone {
                    session: SessionId(n),
                })
                .collect(),
        )
        .unwrap();
    store.flush().unwrap();
    drop(store);
    let (_store, records) = Store::open_sqlite(&path, interval).unwrap();
    let newest: Vec<Record> = (0..90).map(|n| session(n, 49)).collect();
    // An open reads every row in the table: 5010 were written, 90 are left.
    assert_eq!(records, newest, "only the live records are left");
}

/// An open reads the rows in batches that other threads decode: more rows than several
/// batches come back whole and in order, moves and other records mixed; and a row
/// that is not a record stops the open with its sequence number, whichever batch it
/// falls in.
#[test]
fn an_open_reads_many_batches_in_order_and_names_a_damaged_row() {
    use wizard_core::machine::records::Record;
    use wizard_core::vocabulary::game::Action;
    use wizard_core::vocabulary::ids::{LobbyId, SessionId};
    use wizard_core::vocabulary::io::MoveSource;
    use wizard_server::store::Store;
    let record = |n: u64| {
        if n.is_multiple_of(3) {
            Record::Session {
                session: SessionId(n),
                player_id: format!("p{n}"),
                token_sha256: format!("{n:064x}"),
            }
        } else {
            Record::Move {
                lobby: LobbyId(n),
                game_no: n,
                seat: (n % 6) as u8,
                action: Action::Bid {
                    bid: (n % 15) as u8,
                },
                by: MoveSource::Ai,
                autoplayed: n.is_multiple_of(2),
            }
        }
    };
    let count = 70_000;
    let dir = TempDir::new();
    let path = dir.0.join("wizard.db");
    let interval = std::time::Duration::from_secs(3600);
    let (mut store, _) = Store::open_sqlite(&path, interval).unwrap();
    let written: Vec<Record> = (1..=count).map(record).collect();
    for chunk in written.chunks(10_000) {
        store.commit(chunk.to_vec()).unwrap();
    }
    drop(store);
    let (store, read) = Store::open_sqlite(&path, interval).unwrap();
    assert_eq!(read.len(), written.len());
    assert!(read == written, "every record, in order");
    drop(store);
    for damaged in [1, 16_385, 40_000, count] {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE records SET body = 'junk' WHERE seq = ?1",
            [damaged as i64],
        )
        .unwrap();
        drop(conn);
        let err = Store::open_sqlite(&path, interval).unwrap_err().to_string();
        assert!(
            err.contains(&format!("record {damaged}:")),
            "{damaged}: {err}"
        );
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE records SET body = ?2 WHERE seq = ?1",
            rusqlite::params![damaged as i64, record(damaged).encode()],
        )
        .unwrap();
    }
}

/// A process waiting for its store's lock (a shard's standby, or a new process during a
/// deploy) holds its port but refuses connections until it has the store and serves:
/// a proxy in front then counts it down at once and sends players to the process that
/// serves, instead of into an accept queue nobody reads. The real binary, with the test
/// holding the store's lock.
#[test]
fn a_process_waiting_for_the_store_refuses_connections_until_it_serves() {
    use std::io::{BufRead, BufReader};
    use std::net::{TcpListener, TcpStream};
    use std::process::Command;

    let dir = TempDir::made();
    // The store's lock, as a serving process holds it (store.rs: PATH.lock, flock).
    let lock = std::fs::File::create(dir.0.join("wizard.db.lock")).unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let (bind, store) = (addr.to_string(), dir.store());
    let mut child = server_command(&[("BIND", &bind), ("STORE", &store), ("LOG_FORMAT", "text")])
        .spawn()
        .expect("wizard-server runs");
    let pid = child.id();
    // Its log lines, as they come (stdout and stderr alike).
    let (line_tx, line_rx) = std::sync::mpsc::channel::<String>();
    for out in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let tx = line_tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
    }
    let kill = || {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    };
    let wait_for = |what: &str| {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let left = until.saturating_duration_since(std::time::Instant::now());
            match line_rx.recv_timeout(left) {
                Ok(line) if line.contains(what) => return,
                Ok(_) => {}
                Err(_) => {
                    kill();
                    panic!("no log line with {what:?}");
                }
            }
        }
    };
    wait_for("Waiting for the store's lock");
    let refused = TcpStream::connect(addr).map(drop);
    assert_eq!(
        refused.as_ref().map_err(std::io::Error::kind),
        Err(std::io::ErrorKind::ConnectionRefused),
        "a connection to the waiting process: {refused:?}"
    );
    // The lock released (the serving process is gone): it restores and listens.
    drop(lock);
    wait_for("Listening");
    let served = TcpStream::connect(addr).map(drop);
    kill();
    let _ = child.wait();
    assert!(served.is_ok(), "once it serves: {served:?}");
}
