//! The PostgreSQL store against a real PostgreSQL (Debian's package, started by
//! [`Postgres`] in a temporary folder on a free loopback port): records round-trip
//! per shard, a standby waits for the owner's lock, games survive `kill -9`s of the
//! real binary, a standby takes over a killed owner's games, and an owner that loses
//! its connection (its backend terminated, or PostgreSQL stopped) acknowledges
//! nothing more and exits non-zero. Where PostgreSQL cannot be found or installed,
//! each test prints one "skipped: ..." line and passes.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_lite::StreamExt;
use wizard_core::machine::records::Record;
use wizard_core::vocabulary::game::Observation;
use wizard_core::vocabulary::ids::SessionId;
use wizard_core::vocabulary::shard::ShardId;
use wizard_core::vocabulary::wire::{ClientMessage, ServerMessage, decode_server};
use wizard_server::pg_store::{PgStore, lock_key};

use super::client::{Player, bounded};
use super::durable::{
    Process, TempDir, a_game_survives_kill_9s, extends, play_one, progress, table,
};

/// A PostgreSQL server of its own for one test: `initdb` into a temporary folder,
/// `postgres` on a free loopback port (as the `postgres` user when the test runs as
/// root, which PostgreSQL refuses to run as); stopped (fast shutdown) when dropped.
pub(super) struct Postgres {
    child: Option<Child>,
    pub(super) port: u16,
    dir: TempDir,
}

/// Where Debian puts PostgreSQL's server programs (`/usr/lib/postgresql/N/bin`), the
/// newest version first.
fn server_bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// The uid and gid of the `postgres` user, from `/etc/passwd`.
fn postgres_user() -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&"postgres"))
            .then(|| Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?)))
            .flatten()
    })
}

impl Postgres {
    /// Starts one, installing PostgreSQL first when it is missing and this is root
    /// with `apt-get` (`.ci/install-postgres.sh`). `None`, after one "skipped: ..."
    /// line, where it cannot.
    #[allow(clippy::print_stdout)] // the skip is said where the test runner shows it
    pub(super) fn start(test: &str) -> Option<Postgres> {
        match Postgres::try_start() {
            Ok(pg) => Some(pg),
            Err(why) => {
                println!("skipped: {test}: no PostgreSQL to test against: {why}");
                None
            }
        }
    }

    fn try_start() -> Result<Postgres, String> {
        let root = rustix::process::geteuid().is_root();
        let bin = match server_bin_dir() {
            Some(bin) => bin,
            None => {
                let script =
                    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/install-postgres.sh");
                let status = Command::new("bash")
                    .arg(&script)
                    .stdout(Stdio::null())
                    .status()
                    .map_err(|e| format!("{}: {e}", script.display()))?;
                if !status.success() {
                    return Err(format!("{} failed ({status})", script.display()));
                }
                server_bin_dir().ok_or("not installed in /usr/lib/postgresql")?
            }
        };
        let user = if root {
            Some(postgres_user().ok_or("running as root and no postgres user")?)
        } else {
            None
        };
        let dir = TempDir::new();
        std::fs::create_dir_all(&dir.0).map_err(|e| e.to_string())?;
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&dir.0, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
        }
        let as_user = |program: &str| {
            let mut command = Command::new(bin.join(program));
            if let Some((uid, gid)) = user {
                use std::os::unix::process::CommandExt;
                command.uid(uid).gid(gid);
            }
            command.env_clear().env("LANG", "C.UTF-8");
            command
        };
        let data = dir.0.join("data");
        let log = dir.0.join("postgres.log");
        let out = as_user("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"])
            .output()
            .map_err(|e| format!("initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "initdb: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let port = super::proxy::free_port();
        let log_file = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&log, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
        }
        let child = as_user("postgres")
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "unix_socket_directories="])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("postgres: {e}"))?;
        let mut pg = Postgres {
            child: Some(child),
            port,
            dir,
        };
        // Ready once it takes a connection (bounded: a server that exits or never
        // answers is an error, with its log).
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            if pg.try_client("postgres").is_ok() {
                return Ok(pg);
            }
            let exited = pg.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() || Instant::now() > until {
                return Err(format!(
                    "postgres did not start: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn try_client(&self, db: &str) -> Result<postgres::Client, postgres::Error> {
        postgres::Client::connect(
            &format!(
                "host=127.0.0.1 port={} user=postgres dbname={db}",
                self.port
            ),
            postgres::NoTls,
        )
    }

    /// An administrator's connection to database `db`.
    pub(super) fn client(&self, db: &str) -> postgres::Client {
        self.try_client(db).unwrap()
    }

    /// Creates database `db` and returns the `STORE` URL for it.
    pub(super) fn database(&self, db: &str) -> String {
        self.client("postgres")
            .batch_execute(&format!("CREATE DATABASE {db}"))
            .unwrap();
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// A fast shutdown (SIGINT: every session is ended), waiting for the exit.
    pub(super) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
            }
            let until = Instant::now() + Duration::from_secs(30);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The folder this server's files (and the test's logs) are in.
    pub(super) fn dir(&self) -> &TempDir {
        &self.dir
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

fn session(n: u64, round: u64) -> Record {
    Record::Session {
        session: SessionId(n),
        player_id: format!("p{n}-{round}"),
        token_sha256: format!("{n:032x}{round:032x}"),
    }
}

fn shard(id: &str) -> Option<ShardId> {
    Some(id.parse().unwrap())
}

/// The backend (process id) that holds shard `id`'s lock, if one does.
fn owner_backend(admin: &mut postgres::Client, id: Option<ShardId>) -> Option<i32> {
    admin
        .query_opt(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
             AND ((classid::bigint << 32) | objid::bigint) = $1",
            &[&lock_key(id)],
        )
        .unwrap()
        .map(|r| r.get(0))
}

/// Records go in and come back per shard, in order, across many statements and
/// transactions; tickets become durable; a second opener of a shard waits for the
/// first one's lock and then reads what it committed; dead rows are compacted away;
/// a row that is not a record stops the open, naming its sequence number.
#[test]
fn records_round_trip_per_shard_and_a_second_opener_waits_for_the_lock() {
    let Some(pg) = Postgres::start("records_round_trip_per_shard") else {
        return;
    };
    let url = pg.database("store");
    let mut admin = pg.client("store");
    let (k, l) = (shard("K"), shard("L"));
    let (store_k, records) = PgStore::open(&url, k).unwrap();
    assert!(records.is_empty());
    // Two shards at once: their own locks, their own sequences.
    let (store_l, _) = PgStore::open(&url, l).unwrap();
    let ticket = store_k.commit(vec![session(1, 0), session(2, 0)]).unwrap();
    store_k.flush().unwrap();
    assert!(store_k.durable_through() >= ticket, "flushed, so durable");
    // More than one statement's rows in one commit (one transaction).
    let many: Vec<Record> = (0..25_000).map(|n| session(n, 1)).collect();
    store_k.commit(many.clone()).unwrap();
    store_l.commit(vec![session(7, 0)]).unwrap();
    store_l.flush().unwrap();
    assert!(
        owner_backend(&mut admin, k).is_some(),
        "K's owner holds its lock"
    );
    // A standby for K blocks in its open while K's owner holds the lock...
    let standby = std::thread::spawn({
        let url = url.clone();
        move || PgStore::open(&url, k).map(|(store, records)| (store, records.len()))
    });
    let waiting = |admin: &mut postgres::Client| -> i64 {
        admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE application_name = 'wizard-server shard K'",
                &[],
            )
            .unwrap()
            .get(0)
    };
    let until = Instant::now() + Duration::from_secs(30);
    while waiting(&mut admin) < 2 {
        assert!(Instant::now() < until, "the standby never connected");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !standby.is_finished(),
        "opened while the owner holds the lock"
    );
    // ...and reads everything once the owner is gone.
    drop(store_k);
    let (store_k, count) = standby.join().unwrap().unwrap();
    assert_eq!(count, 2 + many.len());
    drop(store_k);
    let (_, records) = PgStore::open(&url, k).unwrap();
    let mut expected = vec![session(1, 0), session(2, 0)];
    expected.extend(many);
    assert!(records == expected, "every record of K, in order");
    drop(store_l);
    let (_, records) = PgStore::open(&url, l).unwrap();
    assert_eq!(records, [session(7, 0)], "L's own");

    // Compaction: 100 sessions recorded 50 times leave their newest records only. One
    // commit, so that the writer takes it in one turn and compacts after it: over
    // several turns a compaction could come before the last of them and leave up to
    // `compact_rows_min` dead rows behind (what turns it takes is timing).
    let m = shard("M");
    let (store, _) = PgStore::open_compacting_at(&url, m, 1000).unwrap();
    let mut all: Vec<Record> = (0..50)
        .flat_map(|round| (0..100).map(move |n| session(n, round)))
        .collect();
    all.extend((90..100).map(|n| Record::SessionGone {
        session: SessionId(n),
    }));
    store.commit(all).unwrap();
    store.flush().unwrap();
    drop(store);
    let rows: i64 = admin
        .query_one("SELECT count(*) FROM wizard_records WHERE shard = 'M'", &[])
        .unwrap()
        .get(0);
    assert!(rows < 5010, "compacted: {rows} rows");
    let (store, records) = PgStore::open(&url, m).unwrap();
    let newest: Vec<Record> = (0..90).map(|n| session(n, 49)).collect();
    assert_eq!(records, newest, "only the live records are left");
    drop(store);

    // A damaged row names itself.
    admin
        .execute(
            "UPDATE wizard_records SET body = 'junk' WHERE shard = 'L' AND seq = 1",
            &[],
        )
        .unwrap();
    let err = PgStore::open(&url, l).unwrap_err().to_string();
    assert!(err.contains("record 1:"), "{err}");
}

/// Three players' game survives ten `kill -9`s of the real binary and a SIGTERM,
/// restarted each time on the same database (`durable::a_game_survives_kill_9s`).
#[test]
fn a_game_survives_ten_kill_9s_on_postgres() {
    let Some(pg) = Postgres::start("a_game_survives_ten_kill_9s_on_postgres") else {
        return;
    };
    let url = pg.database("kills");
    a_game_survives_kill_9s(pg.dir(), &url, &[("SHARD_ID", "K")], 10);
}

/// A rated game's profile update on PostgreSQL: committed with the game's last move,
/// so it survives `kill -9` and is counted once.
#[test]
fn a_rated_game_s_rating_survives_kill_9_on_postgres() {
    let Some(pg) = Postgres::start("a_rated_game_s_rating_survives_kill_9_on_postgres") else {
        return;
    };
    let url = pg.database("ratings");
    super::profiles::rating_survives_kill_9(pg.dir(), &url, &[("SHARD_ID", "K")]);
}

/// Waits (bounded) until `log` holds `line`.
#[test]
fn a_finished_game_s_history_on_postgres_replays_and_survives_a_restart() {
    let name = "a_finished_game_s_history_on_postgres_replays_and_survives_a_restart";
    let Some(pg) = Postgres::start(name) else {
        return;
    };
    let url = pg.database("history");
    super::history::history_survives_a_restart(pg.dir(), &url, &[("SHARD_ID", "K")]);
}

fn wait_for_line(log: &Path, line: &str) {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(line) {
            return;
        }
        assert!(Instant::now() < until, "no {line:?} in: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ann, Bob and Cat in a game on `addr`, with the views they saw.
async fn three_players_in_a_game(addr: std::net::SocketAddr) -> ([Player; 3], Vec<Observation>) {
    let (players, seen, code) = table(addr).await;
    assert!(code.starts_with('K'), "a code of shard K: {code}");
    let players: [Player; 3] = players
        .try_into()
        .unwrap_or_else(|_| panic!("three players"));
    (players, seen)
}

/// Ann, Bob and Cat in a game on `addr` after `moves` moves ([`play`]), within 60 s.
fn players_after(addr: std::net::SocketAddr, moves: usize) -> ([Player; 3], Vec<Observation>) {
    bounded(60, async {
        let (mut players, mut seen) = three_players_in_a_game(addr).await;
        play(&mut players, &mut seen, moves).await;
        (players, seen)
    })
}

/// Plays `moves` moves (whoever may move), every player's view followed.
/// Up to `moves` moves, fewer if the game ends.
async fn play(players: &mut [Player; 3], seen: &mut [Observation], moves: usize) {
    for _ in 0..moves {
        if !play_one(players, seen).await {
            return;
        }
    }
}

/// Both players come back on `addr` with their tokens, seeing at least what they saw.
async fn come_back(
    addr: std::net::SocketAddr,
    players: &mut [Player; 3],
    seen: &mut [Observation],
) {
    for (i, p) in players.iter_mut().enumerate() {
        let (back, view) = Player::hello(addr, Some(&p.token)).await;
        assert_eq!(back.id, p.id, "the same player");
        let now = view.game.expect("back in the game").observation;
        if let Err(e) = extends(&seen[i], &now) {
            panic!("player {i}: {e}");
        }
        seen[i] = now;
        *p = back;
    }
}

/// Shard K on a database of its own: its owner serving, its standby waiting for the
/// owner's lock, and an administrator's session.
struct Shard {
    admin: postgres::Client,
    owner: Process,
    owner_log: PathBuf,
    standby: Process,
    standby_log: PathBuf,
}

/// Starts shard K's owner, then its standby, on database `db` of `pg`, and waits
/// until the standby says it stands by.
fn owner_and_standby(pg: &Postgres, db: &str) -> Shard {
    let url = pg.database(db);
    let admin = pg.client(db);
    let env = [("SHARD_ID", "K")];
    let (owner_log, standby_log) = (pg.dir().0.join("owner.log"), pg.dir().0.join("standby.log"));
    let owner = Process::start_env(&url, super::proxy::free_port(), &owner_log, &env);
    let standby = Process::spawn_env(&url, super::proxy::free_port(), &standby_log, &env);
    wait_for_line(&standby_log, "standing by, another server owns this shard");
    Shard {
        admin,
        owner,
        owner_log,
        standby,
        standby_log,
    }
}

/// Waits (30 s at most) for the standby to serve `/health`: it took the shard over.
fn takes_over(standby: &mut Process, standby_log: &Path) {
    let mut exited = || standby.child.try_wait().ok().flatten().is_some();
    assert!(
        super::proxy::poll_200(standby.addr, "/health", 30, &mut exited),
        "the standby did not take over: {}",
        std::fs::read_to_string(standby_log).unwrap_or_default()
    );
}

/// Owner and standby of shard K on one database: the standby waits (it does not even
/// listen) while the owner serves, so only one of them ever answers; after a
/// `kill -9` of the owner the standby takes the lock, restores and serves the game,
/// and the players come back to it with nothing they saw missing.
#[test]
fn a_standby_takes_over_after_kill_9_of_the_owner() {
    let Some(pg) = Postgres::start("a_standby_takes_over_after_kill_9_of_the_owner") else {
        return;
    };
    let Shard {
        mut admin,
        owner,
        mut standby,
        standby_log,
        ..
    } = owner_and_standby(&pg, "standby");
    let (mut players, mut seen) = players_after(owner.addr, 5);
    // One owner: the standby has not even bound its address.
    assert_eq!(super::proxy::get(standby.addr, "/health").0, 0);
    assert!(
        standby.child.try_wait().unwrap().is_none(),
        "the standby waits"
    );
    let held_by = owner_backend(&mut admin, shard("K"));
    assert!(held_by.is_some(), "the owner holds the lock");
    owner.crash();
    takes_over(&mut standby, &standby_log);
    let now_held_by = owner_backend(&mut admin, shard("K"));
    assert!(
        now_held_by.is_some() && now_held_by != held_by,
        "the standby's lock"
    );
    bounded(60, async {
        come_back(standby.addr, &mut players, &mut seen).await;
        play(&mut players, &mut seen, 5).await;
    });
}

/// What a player gets after its move when the server can no longer commit: no frame
/// showing the move, then the end of the connection.
async fn never_acknowledged(player: &mut Player, before: &Observation) {
    loop {
        match player.ws.next().await {
            Some(Ok(msg)) if msg.is_text() => {
                let text = msg.into_text().unwrap();
                if let Ok(ServerMessage::State { game: Some(g), .. }) = decode_server(&text) {
                    assert!(
                        progress(&g.observation) <= progress(before),
                        "a move was acknowledged after the store was lost"
                    );
                }
            }
            Some(Ok(msg)) if msg.is_close() => return,
            Some(Ok(_)) => {}
            Some(Err(_)) | None => return,
        }
    }
}

/// Waits (bounded) for `p` to exit; returns its status.
fn exit_status(p: &mut Process, secs: u64) -> std::process::ExitStatus {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(status) = p.child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < until, "still running after {secs} s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Fencing: the owner's backend is terminated (`pg_terminate_backend`), which ends
/// its session and so its lock, and another session takes the lock before the owner
/// can take it again (as a standby on another machine may). A move sent then is never
/// acknowledged, the owner exits non-zero, and the standby takes over the game as it
/// stood, without the move.
#[test]
fn an_owner_whose_session_is_terminated_acknowledges_nothing_and_exits() {
    let Some(pg) = Postgres::start("an_owner_whose_session_is_terminated") else {
        return;
    };
    let Shard {
        mut admin,
        mut owner,
        owner_log,
        mut standby,
        standby_log,
    } = owner_and_standby(&pg, "fence");
    let (mut players, mut seen) = players_after(owner.addr, 3);
    let backend = owner_backend(&mut admin, shard("K")).expect("the owner's backend");
    // The lock is asked for in the same statement: queued before the owner's session
    // is gone, it is granted before the owner can connect again.
    let key = wizard_server::pg_store::lock_key(shard("K"));
    let ended: bool = admin
        .query_one(
            "SELECT pg_terminate_backend($1) AND pg_advisory_lock($2) IS NOT NULL",
            &[&backend, &key],
        )
        .unwrap()
        .get(0);
    assert!(ended);
    let until = Instant::now() + Duration::from_secs(30);
    while admin
        .query_opt("SELECT 1 FROM pg_stat_activity WHERE pid = $1", &[&backend])
        .unwrap()
        .is_some()
    {
        assert!(Instant::now() < until, "the backend did not end");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mover = seen
        .iter()
        .position(|o| !o.legal_actions.is_empty())
        .expect("someone may move");
    let action = seen[mover].legal_actions[0];
    let before = seen[mover].clone();
    bounded(30, async {
        players[mover].send(ClientMessage::Action { action }).await;
        never_acknowledged(&mut players[mover], &before).await;
    });
    let status = exit_status(&mut owner, 30);
    assert!(!status.success(), "the owner exits non-zero: {status}");
    let log = std::fs::read_to_string(&owner_log).unwrap_or_default();
    assert!(
        log.contains("Store lost") && log.contains("another process owns the shard"),
        "{log}"
    );
    // The other session lets go: the standby takes the shard.
    let _: bool = admin
        .query_one("SELECT pg_advisory_unlock($1)", &[&key])
        .unwrap()
        .get(0);
    takes_over(&mut standby, &standby_log);
    bounded(60, async {
        come_back(standby.addr, &mut players, &mut seen).await;
        assert_eq!(seen[mover], before, "the unacknowledged move is not there");
        play(&mut players, &mut seen, 3).await;
    });
}

/// Fencing: PostgreSQL stops (fast shutdown) for good under a serving owner: the owner
/// notices while idle (its ownership check), acknowledges nothing more, tries again
/// for `RETRY_WAIT_MAX` and exits non-zero.
#[test]
fn an_owner_exits_non_zero_when_postgres_stops() {
    let Some(mut pg) = Postgres::start("an_owner_exits_non_zero_when_postgres_stops") else {
        return;
    };
    let url = pg.database("stopped");
    let env = [("SHARD_ID", "K")];
    let owner_log = pg.dir().0.join("owner.log");
    let mut owner = Process::start_env(&url, super::proxy::free_port(), &owner_log, &env);
    let (mut players, seen) = bounded(60, async { three_players_in_a_game(owner.addr).await });
    pg.stop();
    let status = exit_status(
        &mut owner,
        wizard_server::pg_store::RETRY_WAIT_MAX.as_secs() + 30,
    );
    assert!(!status.success(), "the owner exits non-zero: {status}");
    let mover = seen
        .iter()
        .position(|o| !o.legal_actions.is_empty())
        .expect("someone may move");
    bounded(30, never_acknowledged(&mut players[mover], &seen[mover]));
}

/// A lost connection with no standby (the owner's backend terminated): the owner
/// connects again, takes its shard's lock again and goes on; the move sent meanwhile is
/// acknowledged once it is committed, and a later `kill -9` and restart find every move
/// the players saw.
#[test]
fn an_owner_whose_session_is_terminated_connects_again_and_loses_nothing() {
    let Some(pg) = Postgres::start("an_owner_whose_session_is_terminated_connects_again") else {
        return;
    };
    let url = pg.database("again");
    let mut admin = pg.client("again");
    let env = [("SHARD_ID", "K")];
    let log = pg.dir().0.join("owner.log");
    let port = super::proxy::free_port();
    let owner = Process::start_env(&url, port, &log, &env);
    let (mut players, mut seen) = players_after(owner.addr, 5);
    let backend = owner_backend(&mut admin, shard("K")).expect("the owner's backend");
    let ended: bool = admin
        .query_one("SELECT pg_terminate_backend($1)", &[&backend])
        .unwrap()
        .get(0);
    assert!(ended);
    bounded(60, play(&mut players, &mut seen, 10));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text.contains("Connected again; this process still owns the shard"),
        "the owner connected again:\n{text}"
    );
    assert_ne!(
        owner_backend(&mut admin, shard("K")),
        Some(backend),
        "a new session holds the lock"
    );
    owner.crash();
    let owner = Process::start_env(&url, port, &log, &env);
    bounded(60, async {
        come_back(owner.addr, &mut players, &mut seen).await;
        play(&mut players, &mut seen, 3).await;
    });
}

/// A statement timeout (the table locked by another session for longer than the
/// owner's `statement_timeout`): the owner's commits fail and are tried again, it
/// says so (`/ready` 503 `store`) and holds the move's frames; once the table is
/// free the move is acknowledged, and nothing is lost across a `kill -9`.
#[test]
fn a_statement_timeout_pauses_the_owner_and_it_resumes() {
    let Some(pg) = Postgres::start("a_statement_timeout_pauses_the_owner") else {
        return;
    };
    let url = pg.database("timeout");
    let url = format!("{url}?options=-c%20statement_timeout%3D100");
    let mut admin = pg.client("timeout");
    let env = [
        ("SHARD_ID", "K"),
        ("SOCKET_RATE", "100000"),
        ("SOCKET_BURST", "100000"),
    ];
    let log = pg.dir().0.join("owner.log");
    let port = super::proxy::free_port();
    let owner = Process::start_env(&url, port, &log, &env);
    let (mut players, mut seen) = players_after(owner.addr, 5);
    let mut tx = admin.transaction().unwrap();
    tx.batch_execute("LOCK TABLE wizard_records IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let mover = seen
        .iter()
        .position(|o| !o.legal_actions.is_empty())
        .expect("someone may move");
    let action = seen[mover].legal_actions[0];
    let before = progress(&seen[mover]);
    bounded(30, async {
        players[mover].send(ClientMessage::Action { action }).await;
        // Not acknowledged while the table is locked: /ready says why.
        loop {
            let (status, body) = super::proxy::get(owner.addr, "/ready");
            if status == 503 && body.contains("\"store\"") {
                break;
            }
            async_io::Timer::after(Duration::from_millis(20)).await;
        }
    });
    tx.commit().unwrap();
    bounded(60, async {
        let v = players[mover]
            .state_where(|v| {
                v.game
                    .as_ref()
                    .is_some_and(|g| progress(&g.observation) > before)
            })
            .await;
        seen[mover] = v.game.expect("a game").observation;
        for (j, pl) in players.iter_mut().enumerate() {
            if j != mover {
                let b = progress(&seen[j]);
                let v = pl
                    .state_where(|v| {
                        v.game
                            .as_ref()
                            .is_some_and(|g| progress(&g.observation) > b)
                    })
                    .await;
                seen[j] = v.game.expect("a game").observation;
            }
        }
        play(&mut players, &mut seen, 5).await;
    });
    assert!(super::proxy::poll_200(
        owner.addr,
        "/ready",
        20,
        &mut || false
    ));
    owner.crash();
    let owner = Process::start_env(&url, port, &log, &env);
    bounded(60, async {
        come_back(owner.addr, &mut players, &mut seen).await;
        play(&mut players, &mut seen, 3).await;
    });
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text.contains("Store commit failed") && text.contains("Store commits resumed"),
        "{text}"
    );
}
