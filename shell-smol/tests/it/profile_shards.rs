//! Profiles across shards, against two real shards (`SHARD_ID` A and B) on one real
//! PostgreSQL (the PostgreSQL tests' [`Postgres`], skipped with one line where there is
//! none): a name taken on one shard is taken on the other (look-alikes too), a profile
//! made on A signs in on B and is rated there, A then signs it in with B's rating, and
//! a profile deleted on B no longer signs in on A, whose name is free again; and when
//! both shards are asked for the same name (or two look-alikes) at the same moment,
//! exactly one creates it; a shard whose client keeps asking for a name its core
//! refuses holds the name's claim one hold, not for ever.

use std::cell::Cell;
use std::time::{Duration, Instant};

use async_io::Timer;
use futures_util::future::join;
use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode, ServerMessage};

use super::client::{Client, bounded, local, next_message, send, ws_from};
use super::durable::Process;
use super::postgres::Postgres;
use super::profile_returns::{create_profile, hello, play_rated_game};

/// Sends `create_profile` and returns the error's code it must get.
async fn refused(ws: &mut Client, name: &str) -> ErrorCode {
    let create = ClientMessage::CreateProfile {
        name: name.to_owned(),
    };
    send(ws, &create).await;
    loop {
        match next_message(ws).await {
            ServerMessage::Error { code, .. } => return code,
            ServerMessage::Profile { name, .. } => panic!("{name:?} was created"),
            _ => {}
        }
    }
}

/// Sends `create_profile` and returns what it got: the profile's id, or the error's code.
async fn create(ws: &mut Client, name: &str) -> Result<String, ErrorCode> {
    let create = ClientMessage::CreateProfile {
        name: name.to_owned(),
    };
    send(ws, &create).await;
    loop {
        match next_message(ws).await {
            ServerMessage::Error { code, .. } => return Err(code),
            ServerMessage::Profile { id, .. } => return Ok(id),
            _ => {}
        }
    }
}

/// Rounds of simultaneous creations.
const RACE_ROUNDS: usize = 30;

#[test]
fn two_shards_creating_a_look_alike_name_at_once_make_one_profile() {
    let Some(pg) =
        Postgres::start("two_shards_creating_a_look_alike_name_at_once_make_one_profile")
    else {
        return;
    };
    let url = pg.database("races");
    let env = |shard| [("SHARD_ID", shard), ("PROFILE_CREATE_RATE", "1000")];
    let log = pg.dir().0.join("races.log");
    let a = Process::start_env(&url, super::proxy::free_port(), &log, &env("A"));
    let b = Process::start_env(&url, super::proxy::free_port(), &log, &env("B"));
    bounded(180, async {
        let mut on_a = ws_from(a.addr, local(41)).await;
        hello(&mut on_a, None, None).await;
        let mut on_b = ws_from(b.addr, local(42)).await;
        hello(&mut on_b, None, None).await;
        let mut won = [0; 2];
        for round in 0..RACE_ROUNDS {
            // Two letters per round: names of letters only, each round's its own.
            let tag: String = [round / 26, round % 26]
                .iter()
                .map(|&n| char::from(b'a' + u8::try_from(n).unwrap()))
                .collect();
            let name = format!("Rival{tag}");
            // The same name in capitals, a Cyrillic look-alike or an invisible character.
            let alike = match round % 3 {
                0 => name.to_uppercase(),
                1 => name.replacen('a', "\u{0430}", 1),
                _ => name.replacen('v', "v\u{200b}", 1),
            };
            let (got_a, got_b) = join(create(&mut on_a, &name), create(&mut on_b, &alike)).await;
            match (&got_a, &got_b) {
                (Ok(_), Err(ErrorCode::NotAllowed)) => won[0] += 1,
                (Err(ErrorCode::NotAllowed), Ok(_)) => won[1] += 1,
                _ => panic!("round {round}: {name:?} on A {got_a:?}, {alike:?} on B {got_b:?}"),
            }
            // Afterwards the name is taken on both shards.
            for ws in [&mut on_a, &mut on_b] {
                assert_eq!(
                    create(ws, &name).await,
                    Err(ErrorCode::NotAllowed),
                    "{name:?}"
                );
            }
        }
        println!("names won by A and B: {won:?}");
    });
    a.stop();
    b.stop();
}

#[test]
fn a_profile_made_on_one_shard_plays_and_is_rated_on_another() {
    let Some(pg) = Postgres::start("a_profile_made_on_one_shard_plays_and_is_rated_on_another")
    else {
        return;
    };
    let url = pg.database("profiles");
    let env = |shard| {
        [
            ("SHARD_ID", shard),
            ("AI_MOVE_DELAY", "0"),
            ("TRICK_PAUSE", "0"),
        ]
    };
    let log = pg.dir().0.join("shards.log");
    let a = Process::start_env(&url, super::proxy::free_port(), &log, &env("A"));
    let b = Process::start_env(&url, super::proxy::free_port(), &log, &env("B"));
    bounded(180, async {
        let mut on_a = ws_from(a.addr, local(31)).await;
        hello(&mut on_a, None, None).await;
        let (key, id) = create_profile(&mut on_a, "Morgana").await;

        // The name is taken on B too, and so are its look-alikes.
        let mut on_b = ws_from(b.addr, local(32)).await;
        hello(&mut on_b, None, None).await;
        for squat in ["Morgana", "MORGANA", "Morg\u{0430}na", "Mor\u{200b}gana"] {
            assert_eq!(
                refused(&mut on_b, squat).await,
                ErrorCode::NotAllowed,
                "{squat:?}"
            );
        }
        drop(on_b);

        // A's key signs in on B, and B rates its game.
        let mut on_b = ws_from(b.addr, local(33)).await;
        let (_, profile, _) = hello(&mut on_b, None, Some(&key)).await;
        let profile = profile.expect("A's profile signs in on B");
        assert_eq!((profile.id.as_str(), profile.games), (id.as_str(), 0));
        let ended = play_rated_game(&mut on_b, "Morgana").await;
        let me = &ended.players[0];
        assert_eq!(me.profile_id.as_deref(), Some(id.as_str()));
        assert!(me.rating_change.is_some_and(|c| c.0 != 0.0), "rated on B");
        let mu = me.mu.expect("mu").0;

        // Back on A: B's rating and game.
        let mut again = ws_from(a.addr, local(34)).await;
        let (_, profile, _) = hello(&mut again, None, Some(&key)).await;
        let profile = profile.expect("still a profile on A");
        assert_eq!(profile.games, 1, "the game rated on B counts on A");
        assert_eq!(profile.mu.0, mu, "A shows B's rating");
        drop(again);

        // Deleted on B: A no longer knows the key, and the name is free.
        send(&mut on_b, &ClientMessage::DeleteProfile).await;
        loop {
            if let ServerMessage::ProfileDeleted { id: gone } = next_message(&mut on_b).await {
                assert_eq!(gone, id);
                break;
            }
        }
        let mut after = ws_from(a.addr, local(35)).await;
        let (_, profile, _) = hello(&mut after, None, Some(&key)).await;
        assert!(
            profile.is_none(),
            "a profile deleted on B is a guest's key on A"
        );
        create_profile(&mut after, "Morgana").await;
    });
    a.stop();
    b.stop();
}

#[test]
fn a_name_claim_repeated_by_refused_creations_frees_the_name_after_one_hold() {
    let Some(pg) =
        Postgres::start("a_name_claim_repeated_by_refused_creations_frees_the_name_after_one_hold")
    else {
        return;
    };
    let url = pg.database("claims");
    let log = pg.dir().0.join("claims.log");
    // On A an address makes one profile an hour: each later creation claims the name,
    // then the core refuses it.
    let env_a = [("SHARD_ID", "A"), ("PROFILE_CREATE_RATE", "1")];
    let a = Process::start_env(&url, super::proxy::free_port(), &log, &env_a);
    let b = Process::start_env(&url, super::proxy::free_port(), &log, &[("SHARD_ID", "B")]);
    let hold = wizard_server::store::directory::CLAIM_HOLD;
    bounded(4 * hold.as_secs() + 60, async {
        let mut on_a = ws_from(a.addr, local(51)).await;
        hello(&mut on_a, None, None).await;
        create_profile(&mut on_a, "Nimue").await;
        assert_eq!(refused(&mut on_a, "Vivien").await, ErrorCode::RateLimited);
        let claimed = Instant::now();
        let mut on_b = ws_from(b.addr, local(52)).await;
        hello(&mut on_b, None, None).await;
        assert_eq!(
            refused(&mut on_b, "Vivien").await,
            ErrorCode::NotAllowed,
            "A's claim holds the name"
        );
        // A asks again and again; B asks too until it gets the name.
        let done = Cell::new(false);
        let repeat_on_a = async {
            while !done.get() {
                let code = refused(&mut on_a, "Vivien").await;
                assert!(
                    matches!(code, ErrorCode::RateLimited | ErrorCode::NotAllowed),
                    "{code:?}"
                );
                Timer::after(Duration::from_millis(250)).await;
            }
        };
        let ask_on_b = async {
            let deadline = claimed + 3 * hold;
            let got = loop {
                match create(&mut on_b, "Vivien").await {
                    Ok(id) => break id,
                    Err(code) => assert_eq!(code, ErrorCode::NotAllowed),
                }
                assert!(
                    Instant::now() < deadline,
                    "A's repeated claims held the name for three holds"
                );
                Timer::after(Duration::from_millis(500)).await;
            };
            done.set(true);
            got
        };
        let ((), id) = join(repeat_on_a, ask_on_b).await;
        assert!(!id.is_empty());
        assert!(
            claimed.elapsed() >= hold,
            "the name came free before the claim's hold was over"
        );
    });
    a.stop();
    b.stop();
}
