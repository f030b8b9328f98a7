//! Quick play across shards against real PostgreSQL (PROTOCOL.md 7.2, shards): two
//! real `wizard-server` processes, shards A and B, on one database. Players queueing
//! on both are seated at one table (those of the other shard told `matched` and
//! joining there), and a shard killed with `kill -9` while a group forms loses no
//! ticket of the other shard. Where PostgreSQL cannot be found or installed, each test
//! prints one "skipped: ..." line and passes.

use std::net::SocketAddr;

use futures_util::future::join_all;

use wizard_core::vocabulary::wire::{ClientMessage, ServerMessage};

use super::client::{Player, View, bounded};
use super::durable::Process;
use super::postgres::Postgres;

/// The settings of both shards: a fast pool, and waits long enough that only the
/// players, never the AI rule, complete a table.
const QUICK_ENV: [(&str, &str); 3] = [
    ("QUICK_PLAY_INTERVAL", "0.2"),
    ("QUICK_PLAY_WAIT", "60"),
    ("QUICK_PLAY_JOIN_WAIT", "20"),
];

fn shard_env(id: &'static str) -> Vec<(&'static str, &'static str)> {
    let mut env = vec![("SHARD_ID", id)];
    env.extend(QUICK_ENV);
    env
}

/// Shard `id`'s process on `url` (the database of `pg`), its log in the test's folder.
fn start_shard(pg: &Postgres, url: &str, id: &'static str) -> Process {
    let log = pg.dir().0.join(format!("{}.log", id.to_lowercase()));
    Process::start_env(url, super::proxy::free_port(), &log, &shard_env(id))
}

/// Queues `name` for a table of `seats` and reads up to `queued`.
async fn queue(p: &mut Player, name: &str, seats: u8) {
    p.send(ClientMessage::QuickPlay {
        name: name.to_owned(),
        seats: Some(seats),
    })
    .await;
    loop {
        match p.next().await {
            ServerMessage::Queued { .. } => return,
            ServerMessage::Error { code, message, .. } => panic!("refused: {code:?} {message}"),
            _ => {}
        }
    }
}

/// Follows the player to its table as the web client does: a `state` of a running
/// game here, or `matched` and then a join on the named shard (a new connection, a
/// new session there). Returns the player (the one at the table) and its view.
async fn follow(
    mut p: Player,
    name: &str,
    shards: &[(&str, SocketAddr)],
) -> (Player, View, Option<String>) {
    loop {
        match p.next().await {
            ServerMessage::State {
                lobby,
                game: Some(game),
                events,
            } => {
                let view = View {
                    lobby,
                    game: Some(game),
                    events,
                };
                return (p, view, None);
            }
            ServerMessage::Matched { code, shard } => {
                assert!(
                    code.starts_with(&shard),
                    "{code} is a code of shard {shard}"
                );
                let addr = shards
                    .iter()
                    .find(|(id, _)| *id == shard)
                    .map(|(_, a)| *a)
                    .expect("a known shard");
                let (mut there, _) = Player::hello(addr, None).await;
                there.join_lobby(&code, name).await;
                let view = there.state_where(|v| v.game.is_some()).await;
                return (there, view, Some(shard));
            }
            ServerMessage::Error { code, message, .. } => panic!("refused: {code:?} {message}"),
            _ => {}
        }
    }
}

/// One table: every view shows the same code, the same running game, `humans` human
/// seats named as the players and no AI seat.
fn one_table(views: &[View], names: &[&str]) -> String {
    let code = views[0].lobby.as_ref().expect("a lobby").code.clone();
    for v in views {
        let lobby = v.lobby.as_ref().expect("a lobby");
        assert_eq!(lobby.code, code, "one table");
        assert!(v.game.is_some(), "a running game");
        assert_eq!(lobby.players.len(), names.len(), "{:?}", lobby.players);
        assert!(lobby.players.iter().all(|s| !s.is_ai), "no AI seat");
        let mut seated: Vec<&str> = lobby.players.iter().map(|s| s.name.as_str()).collect();
        seated.sort_unstable();
        let mut want = names.to_vec();
        want.sort_unstable();
        assert_eq!(seated, want);
        assert!(lobby.public, "a quick-play table is public once it plays");
    }
    code
}

#[test]
fn players_on_two_shards_are_matched_into_one_game() {
    let Some(pg) = Postgres::start("players_on_two_shards_are_matched_into_one_game") else {
        return;
    };
    let url = pg.database("quick_two");
    let (a, b) = (start_shard(&pg, &url, "A"), start_shard(&pg, &url, "B"));
    let shards = [("A", a.addr), ("B", b.addr)];
    bounded(60, async {
        let (mut ann, _) = Player::hello(a.addr, None).await;
        let (mut bob, _) = Player::hello(a.addr, None).await;
        let (mut cat, _) = Player::hello(b.addr, None).await;
        queue(&mut ann, "Ann", 3).await;
        queue(&mut cat, "Cat", 3).await;
        queue(&mut bob, "Bob", 3).await;
        // Together: the table's players wait for those who move to it.
        let at_table = join_all([
            follow(ann, "Ann", &shards),
            follow(bob, "Bob", &shards),
            follow(cat, "Cat", &shards),
        ])
        .await;
        let views: Vec<View> = at_table.iter().map(|(_, v, _)| v.clone()).collect();
        let followed: Vec<Option<String>> = at_table.iter().map(|(_, _, m)| m.clone()).collect();
        let code = one_table(&views, &["Ann", "Bob", "Cat"]);
        let host = &code[..1];
        // Exactly the players of the other shard moved, to the table's shard.
        for (i, home) in ["A", "A", "B"].iter().enumerate() {
            let want = (*home != host).then(|| host.to_owned());
            assert_eq!(
                followed[i], want,
                "player {i} of shard {home}, table on {host}"
            );
        }
    });
    let mut admin = pg.client("quick_two");
    let left = count(&mut admin, "wizard_quick_tickets", &[]).unwrap();
    assert_eq!(left, 0, "no ticket outlives its seat");
}

#[test]
fn a_shard_killed_while_a_group_forms_loses_no_ticket_of_the_other_shard() {
    let test = "a_shard_killed_while_a_group_forms_loses_no_ticket_of_the_other_shard";
    let Some(pg) = Postgres::start(test) else {
        return;
    };
    let url = pg.database("quick_kill");
    let (a, b) = (start_shard(&pg, &url, "A"), start_shard(&pg, &url, "B"));
    let mut admin = pg.client("quick_kill");
    let (ann, cat) = bounded(30, async {
        let (mut ann, _) = Player::hello(a.addr, None).await;
        let (mut cat, _) = Player::hello(b.addr, None).await;
        queue(&mut ann, "Ann", 3).await;
        queue(&mut cat, "Cat", 3).await;
        (ann, cat)
    });
    // Both tickets in the shared pool (each shard writes its own within a cycle).
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while tickets(&mut admin, "A") + tickets(&mut admin, "B") < 2 {
        assert!(
            std::time::Instant::now() < until,
            "the tickets never reached the pool"
        );
    }
    // Shard A dies holding a claim on Cat's ticket: the group it was forming (the
    // claim written as A's cycle writes it, so that the kill falls inside the window
    // between claim and seating every time).
    a.crash();
    drop(ann);
    admin
        .batch_execute(
            "WITH g AS (INSERT INTO wizard_quick_groups (shard) VALUES ('A') RETURNING id)
             UPDATE wizard_quick_tickets SET group_id = (SELECT id FROM g) WHERE shard = 'B'",
        )
        .unwrap();
    // Shard B's next cycles, once A's lease has run out: A's tickets deleted, its
    // claim released, Cat's ticket free again.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while tickets(&mut admin, "A") > 0 || claims_of_a(&mut admin) > 0 {
        assert!(
            std::time::Instant::now() < until,
            "the dead shard's tickets and claims outlived its lease"
        );
    }
    assert_eq!(
        tickets(&mut admin, "B"),
        1,
        "Cat's ticket is still in the pool"
    );
    bounded(60, async {
        let (mut dan, _) = Player::hello(b.addr, None).await;
        let (mut eve, _) = Player::hello(b.addr, None).await;
        queue(&mut dan, "Dan", 3).await;
        queue(&mut eve, "Eve", 3).await;
        let shards = [("B", b.addr)];
        let at_table = join_all([
            follow(cat, "Cat", &shards),
            follow(dan, "Dan", &shards),
            follow(eve, "Eve", &shards),
        ])
        .await;
        let views: Vec<View> = at_table.iter().map(|(_, v, _)| v.clone()).collect();
        assert!(
            at_table.iter().all(|(_, _, moved)| moved.is_none()),
            "a table of shard B's own players"
        );
        one_table(&views, &["Cat", "Dan", "Eve"]);
    });
    assert_eq!(tickets(&mut admin, "B"), 0, "no ticket outlives its seat");
}

/// Shard `shard`'s tickets in the pool: zero until a shard's first cycle has made the
/// pool's tables.
fn tickets(admin: &mut postgres::Client, shard: &str) -> i64 {
    count(admin, "wizard_quick_tickets WHERE shard = $1", &[&shard]).unwrap_or(0)
}

/// Groups of shard A still in the pool.
fn claims_of_a(admin: &mut postgres::Client) -> i64 {
    count(admin, "wizard_quick_groups WHERE shard = 'A'", &[]).unwrap()
}

/// The rows of `from` (a table, and a `WHERE` clause over `params` or none).
fn count(
    admin: &mut postgres::Client,
    from: &str,
    params: &[&(dyn postgres::types::ToSql + Sync)],
) -> Result<i64, postgres::Error> {
    Ok(admin
        .query_one(&format!("SELECT count(*) FROM {from}"), params)?
        .get(0))
}
