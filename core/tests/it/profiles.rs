//! Profiles and ratings through the server machine (PROTOCOL.md 7.1, 7.3): creating,
//! signing in, deleting, names unique as lobby names are, the per-address limits, the
//! rating update when a rated game ends (also for a player who left), one profile per
//! table, and a restore that neither loses nor repeats a rating.

use serde_json::{Value, json};
use wizard_core::machine::rating::{self, Rating};
use wizard_core::machine::records::Record;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{Input, Output};
use wizard_core::vocabulary::rng::Seed;
use wizard_core::{Server, Time};

use super::driver::{Driver, config};

const FAST: &[(&str, &str)] = &[
    ("AI_MOVE_DELAY", "0"),
    ("TRICK_PAUSE", "0"),
    ("MESSAGE_RATE", "1000"),
    ("MESSAGE_BURST", "1000"),
];

/// The last message of `type_name` that `conn` received.
fn last_of(d: &Driver, conn: ConnId, type_name: &str) -> Option<Value> {
    d.seen
        .get(&conn)?
        .messages
        .iter()
        .rev()
        .find(|m| m["type"] == type_name)
        .cloned()
}

fn hello_with_key(d: &mut Driver, conn: ConnId, ip: &str, key: &str) -> Value {
    d.open(conn, ip);
    d.send_json(
        conn,
        json!({"type": "hello", "token": null, "profile_key": key}),
    );
    last_of(d, conn, "welcome").expect("a welcome")
}

/// A new connection from `ip` creates profile `name`: the `profile` answer.
fn create(d: &mut Driver, conn: ConnId, ip: &str, name: &str) -> Value {
    d.open(conn, ip);
    d.hello(conn, None);
    d.send_json(conn, json!({"type": "create_profile", "name": name}));
    last_of(d, conn, "profile").expect("a profile answer")
}

/// Plays until `conn`'s lobby is finished, the humans in `humans` sending their first
/// legal action, deadlines run otherwise.
fn play_to_end(d: &mut Driver, watch: ConnId, humans: &[ConnId]) {
    for _ in 0..5000 {
        if d.state(watch)
            .is_some_and(|s| s["lobby"]["status"] == "finished")
        {
            return;
        }
        match humans.iter().copied().find(|&c| !d.legal(c).is_empty()) {
            Some(conn) => {
                let action = d.legal(conn)[0].clone();
                d.send_json(conn, json!({"type": "action", "action": action}));
            }
            None => {
                let (t, _) = d.server.poll_timeout().expect("a running game waits");
                d.now = d.now.max(t);
                d.input(Input::Timeout);
            }
        }
    }
    panic!("the game did not finish");
}

fn final_scores(state: &Value) -> Vec<i64> {
    state["game"]["observation"]["scores"]
        .as_array()
        .expect("scores")
        .iter()
        .map(|s| s.as_i64().unwrap())
        .collect()
}

#[test]
fn a_created_profile_signs_in_on_another_connection() {
    let mut d = Driver::new(config(FAST), 1);
    let p = create(&mut d, ConnId(1), "10.0.0.1", "Ann");
    let id = p["id"].as_str().unwrap();
    let key = p["key"].as_str().unwrap();
    assert_eq!(id.len(), 12);
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    assert!(key.len() >= 27, "at least 160 bits in URL-safe base64");
    assert!(
        key.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    );
    assert_eq!(
        (p["name"].clone(), p["rating"].clone(), p["games"].clone()),
        (json!("Ann"), json!(0.0), json!(0))
    );
    let welcome = hello_with_key(&mut d, ConnId(2), "10.0.0.2", key);
    assert_eq!(welcome["profile"]["id"], id);
    assert_eq!(welcome["profile"]["name"], "Ann");
    assert!(welcome["profile"].get("key").is_none());
    // An unknown key is no error: a guest.
    let other = if key.starts_with('A') { "B" } else { "A" };
    let wrong = format!("{other}{}", &key[1..]);
    let welcome = hello_with_key(&mut d, ConnId(3), "10.0.0.3", &wrong);
    assert!(welcome["profile"].is_null());
    assert!(d.last_errors(ConnId(3)).is_empty());
    // A guest's welcome says so too.
    d.open(ConnId(4), "10.0.0.4");
    d.hello(ConnId(4), None);
    assert!(last_of(&d, ConnId(4), "welcome").unwrap()["profile"].is_null());
}

#[test]
fn the_key_is_only_in_its_creators_answer() {
    let mut d = Driver::new(config(FAST), 2);
    d.open(ConnId(9), "10.0.0.9");
    d.hello(ConnId(9), None);
    let p = create(&mut d, ConnId(1), "10.0.0.1", "Ann");
    let key = p["key"].as_str().unwrap().to_owned();
    hello_with_key(&mut d, ConnId(2), "10.0.0.2", &key);
    d.send_json(ConnId(2), json!({"type": "create_lobby", "name": "Ann"}));
    let code = d.lobby_code(ConnId(2)).unwrap();
    d.send_json(
        ConnId(9),
        json!({"type": "join_lobby", "code": code, "name": "Bob"}),
    );
    let frames_with_key: Vec<(u64, String)> = d
        .seen
        .iter()
        .flat_map(|(c, s)| s.messages.iter().map(move |m| (c.0, m.to_string())))
        .filter(|(_, m)| m.contains(&key))
        .collect();
    assert_eq!(frames_with_key.len(), 1, "{frames_with_key:?}");
    assert_eq!(frames_with_key[0].0, 1);
    // Nor in a debug print of the message that carries it.
    let hello = wizard_core::vocabulary::wire::decode_client(
        &json!({"type": "hello", "profile_key": key}).to_string(),
    )
    .unwrap();
    assert!(!format!("{hello:?}").contains(&key));
}

#[test]
fn profile_names_are_unique_as_lobby_names_are() {
    let mut d = Driver::new(config(FAST), 3);
    create(&mut d, ConnId(1), "10.0.0.1", "Ann");
    // Case, a Cyrillic look-alike, an invisible character, surrounding spaces.
    for (i, name) in ["ann", "\u{410}nn", "A\u{200b}nn", "  ANN "]
        .iter()
        .enumerate()
    {
        let conn = ConnId(10 + i as u64);
        d.open(conn, &format!("10.0.1.{i}"));
        d.hello(conn, None);
        d.send_json(conn, json!({"type": "create_profile", "name": name}));
        assert_eq!(d.last_errors(conn), ["not_allowed"], "{name:?}");
        assert!(last_of(&d, conn, "profile").is_none());
    }
    let p = create(&mut d, ConnId(20), "10.0.2.1", "Anna");
    assert_eq!(p["name"], "Anna");
}

#[test]
fn profile_creation_is_limited_per_address() {
    let mut d = Driver::new(config(FAST), 4);
    d.open(ConnId(1), "10.0.0.1");
    d.hello(ConnId(1), None);
    for i in 0..5 {
        d.send_json(
            ConnId(1),
            json!({"type": "create_profile", "name": format!("P{i}")}),
        );
        assert!(d.last_errors(ConnId(1)).is_empty(), "{i}");
    }
    d.send_json(ConnId(1), json!({"type": "create_profile", "name": "P5"}));
    assert_eq!(d.last_errors(ConnId(1)), ["rate_limited"]);
    let error = last_of(&d, ConnId(1), "error").unwrap();
    assert!(error["retry_after_ms"].as_u64().unwrap() > 600_000);
    assert_eq!(d.server.profiles().len(), 5);
    // Another address is not held back.
    create(&mut d, ConnId(2), "10.0.0.2", "P5");
    assert_eq!(d.server.profiles().len(), 6);
    // An hour later the address may again.
    d.advance_ms(3_600_000);
    d.send_json(ConnId(1), json!({"type": "create_profile", "name": "P6"}));
    assert!(d.last_errors(ConnId(1)).is_empty());
}

#[test]
fn failed_keys_count_against_the_guess_budget() {
    let mut d = Driver::new(
        config(&[("JOIN_FAIL_RATE", "1"), ("JOIN_FAIL_BURST", "3")]),
        5,
    );
    let key = create(&mut d, ConnId(1), "10.0.0.1", "Ann")["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let wrong = format!("{}x", &key[..key.len() - 1]);
    for i in 0..3 {
        let welcome = hello_with_key(&mut d, ConnId(10 + i), "10.9.9.9", &wrong);
        assert!(welcome["profile"].is_null());
    }
    // Out of guesses: even the right key is not looked at from this address...
    let welcome = hello_with_key(&mut d, ConnId(20), "10.9.9.9", &key);
    assert!(welcome["profile"].is_null());
    // ...and unknown lobby codes from it are refused like the keys.
    d.send_json(
        ConnId(20),
        json!({"type": "join_lobby", "code": "ZZZZZZ", "name": "X"}),
    );
    assert_eq!(d.last_errors(ConnId(20)), ["rate_limited"]);
    // Another address signs in.
    let welcome = hello_with_key(&mut d, ConnId(21), "10.0.0.2", &key);
    assert_eq!(welcome["profile"]["name"], "Ann");
}

#[test]
fn a_rated_game_updates_the_profile_once_with_the_ai_levels_fixed_ratings() {
    let mut d = Driver::new(config(FAST), 6);
    d.server.keep_records();
    let p = create(&mut d, ConnId(1), "10.0.0.1", "Ann");
    let id = p["id"].as_str().unwrap().to_owned();
    d.send_json(ConnId(1), json!({"type": "create_lobby", "name": "Ann"}));
    d.send_json(ConnId(1), json!({"type": "add_ai", "level": "easy"}));
    d.send_json(ConnId(1), json!({"type": "add_ai", "level": "strong"}));
    let lobby = &d.state(ConnId(1)).unwrap()["lobby"];
    assert_eq!(lobby["players"][0]["profile_id"], id.as_str());
    assert_eq!(lobby["players"][0]["rating"], json!(0.0));
    assert!(lobby["players"][1].get("rating").is_none());
    d.send_json(ConnId(1), json!({"type": "start_game"}));
    let game_id = d.state(ConnId(1)).unwrap()["game"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(game_id.len() >= 16 && game_id.chars().all(|c| c.is_ascii_hexdigit()));
    d.server.take_records();
    play_to_end(&mut d, ConnId(1), &[ConnId(1)]);
    let state = d.state(ConnId(1)).unwrap().clone();
    let scores = final_scores(&state);
    let expected = rating::rate(&[Rating::NEW, rating::AI_EASY, rating::AI_STRONG], &scores)[0];
    let me = &state["lobby"]["players"][0];
    assert_eq!(me["mu"].as_f64().unwrap(), expected.mu);
    assert_eq!(me["sigma"].as_f64().unwrap(), expected.sigma);
    assert_eq!(me["rating"].as_f64().unwrap(), expected.shown());
    assert_eq!(me["rating_change"].as_f64().unwrap(), expected.shown());
    let profile = d.server.profiles().get(&id).unwrap();
    assert_eq!((profile.rating, profile.games), (expected, 1));
    // The rating's record follows the game's last move, in the same batch.
    let records = d.server.take_records();
    let last_move = records
        .iter()
        .rposition(|r| matches!(r, Record::Move { .. }))
        .expect("the last move");
    let rated = records
        .iter()
        .position(|r| matches!(r, Record::Profile(p) if p.id == id && p.games == 1))
        .expect("the profile's record");
    assert!(rated > last_move);
    // Nothing later rates it again.
    d.advance_ms(60_000);
    d.send_json(ConnId(1), json!({"type": "return_to_lobby"}));
    assert_eq!(d.server.profiles().get(&id).unwrap().games, 1);
    assert_eq!(d.server.counters().games_rated, 1);
}

#[test]
fn a_player_who_leaves_a_rated_game_is_rated_by_the_seat_s_final_score() {
    let mut d = Driver::new(config(FAST), 7);
    let id = create(&mut d, ConnId(1), "10.0.0.1", "Ann")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    d.open(ConnId(2), "10.0.0.2");
    d.hello(ConnId(2), None);
    d.send_json(ConnId(1), json!({"type": "create_lobby", "name": "Ann"}));
    let code = d.lobby_code(ConnId(1)).unwrap();
    d.send_json(
        ConnId(2),
        json!({"type": "join_lobby", "code": code, "name": "Bob"}),
    );
    d.send_json(ConnId(1), json!({"type": "add_ai"}));
    d.send_json(ConnId(1), json!({"type": "start_game"}));
    d.send_json(ConnId(1), json!({"type": "leave_lobby"}));
    assert!(d.state(ConnId(1)).unwrap()["lobby"].is_null());
    play_to_end(&mut d, ConnId(2), &[ConnId(2)]);
    let state = d.state(ConnId(2)).unwrap().clone();
    let scores = final_scores(&state);
    // Seat 0 played on as a strong AI, the guest counts as a new player.
    let expected = rating::rate(&[Rating::NEW, Rating::NEW, rating::AI_STRONG], &scores)[0];
    let profile = d.server.profiles().get(&id).unwrap();
    assert_eq!((profile.rating, profile.games), (expected, 1));
    assert_eq!(state["lobby"]["players"][0]["is_ai"], true);
    assert_eq!(state["lobby"]["players"][0]["profile_id"], id.as_str());
    assert!(state["lobby"]["players"][1].get("rating").is_none());
}

#[test]
fn one_profile_takes_one_seat_at_a_table() {
    let mut d = Driver::new(config(FAST), 8);
    let key = create(&mut d, ConnId(1), "10.0.0.1", "Ann")["key"]
        .as_str()
        .unwrap()
        .to_owned();
    d.send_json(ConnId(1), json!({"type": "create_lobby", "name": "Ann"}));
    let code = d.lobby_code(ConnId(1)).unwrap();
    hello_with_key(&mut d, ConnId(2), "10.0.0.2", &key);
    d.send_json(
        ConnId(2),
        json!({"type": "join_lobby", "code": code, "name": "Ann2"}),
    );
    assert_eq!(d.last_errors(ConnId(2)), ["not_allowed"]);
    assert_eq!(
        d.state(ConnId(1)).unwrap()["lobby"]["players"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_deleted_profile_is_gone_and_its_name_free() {
    let mut d = Driver::new(config(FAST), 9);
    let key = create(&mut d, ConnId(1), "10.0.0.1", "Ann")["key"]
        .as_str()
        .unwrap()
        .to_owned();
    d.send_json(ConnId(1), json!({"type": "delete_profile"}));
    assert!(last_of(&d, ConnId(1), "profile_deleted").is_some());
    assert!(d.server.profiles().is_empty());
    let welcome = hello_with_key(&mut d, ConnId(2), "10.0.0.2", &key);
    assert!(welcome["profile"].is_null());
    // A guest has nothing to delete.
    d.send_json(ConnId(2), json!({"type": "delete_profile"}));
    assert_eq!(d.last_errors(ConnId(2)), ["not_allowed"]);
    create(&mut d, ConnId(3), "10.0.0.3", "ann");
    assert_eq!(d.server.profiles().len(), 1);
}

#[test]
fn a_restore_keeps_profiles_and_ratings_and_rates_nothing_twice() {
    let mut d = Driver::new(config(FAST), 10);
    d.server.keep_records();
    let p = create(&mut d, ConnId(1), "10.0.0.1", "Ann");
    let (id, key) = (
        p["id"].as_str().unwrap().to_owned(),
        p["key"].as_str().unwrap().to_owned(),
    );
    create(&mut d, ConnId(5), "10.0.0.5", "Gone");
    d.send_json(ConnId(5), json!({"type": "delete_profile"}));
    d.send_json(ConnId(1), json!({"type": "create_lobby", "name": "Ann"}));
    d.send_json(ConnId(1), json!({"type": "add_ai"}));
    d.send_json(ConnId(1), json!({"type": "add_ai"}));
    d.send_json(ConnId(1), json!({"type": "start_game"}));
    play_to_end(&mut d, ConnId(1), &[ConnId(1)]);
    let rated = d.server.profiles().get(&id).unwrap().clone();
    assert_eq!(rated.games, 1);
    let records = d.server.take_records();
    let restored = Server::restore(config(FAST), Seed::from_u64(99), Time::ZERO, records)
        .expect("the records restore");
    assert_eq!(restored.profiles().len(), 1);
    assert_eq!(restored.profiles().get(&id), Some(&rated));
    let mut r = Driver::new(config(FAST), 11);
    r.server = restored;
    let welcome = hello_with_key(&mut r, ConnId(1), "10.0.0.1", &key);
    assert_eq!(welcome["profile"]["games"], 1);
    assert_eq!(welcome["profile"]["mu"].as_f64().unwrap(), rated.rating.mu);
    // The name is still taken after the restore, the deleted one free.
    r.send_json(ConnId(1), json!({"type": "create_profile", "name": "ANN"}));
    assert_eq!(r.last_errors(ConnId(1)), ["not_allowed"]);
    r.send_json(ConnId(1), json!({"type": "create_profile", "name": "Gone"}));
    assert!(r.last_errors(ConnId(1)).is_empty());
}

#[test]
fn profiles_are_bounded() {
    let mut d = Driver::new(config(&[("PROFILES_MAX", "2")]), 12);
    create(&mut d, ConnId(1), "10.0.0.1", "A1");
    create(&mut d, ConnId(2), "10.0.0.2", "A2");
    d.open(ConnId(3), "10.0.0.3");
    d.hello(ConnId(3), None);
    d.send_json(ConnId(3), json!({"type": "create_profile", "name": "A3"}));
    assert_eq!(d.last_errors(ConnId(3)), ["busy"]);
    assert_eq!(d.server.profiles().len(), 2);
    // Outputs carry no profile answer for the refused one.
    assert!(
        !d.last.iter().any(
            |o| matches!(o, Output::Send { text, .. } if text.contains("\"type\":\"profile\""))
        )
    );
}

#[test]
fn the_leaderboard_lists_profiles_with_five_rated_games_best_first() {
    let mut d = Driver::new(config(FAST), 13);
    let p = create(&mut d, ConnId(1), "10.0.0.1", "Ann");
    let id = p["id"].as_str().unwrap().to_owned();
    create(&mut d, ConnId(2), "10.0.0.2", "Bob");
    let board: Value = serde_json::from_str(&d.server.leaderboard_json()).unwrap();
    assert_eq!(board["profiles"], json!([]));
    assert_eq!(board["ai"]["easy"]["mu"], json!(rating::AI_EASY.mu));
    d.send_json(ConnId(1), json!({"type": "create_lobby", "name": "Ann"}));
    d.send_json(ConnId(1), json!({"type": "add_ai", "level": "easy"}));
    d.send_json(ConnId(1), json!({"type": "add_ai", "level": "easy"}));
    for game in 0..5 {
        // The player's message budget (MESSAGE_BURST) refills between games.
        d.advance_ms(2000);
        let board: Value = serde_json::from_str(&d.server.leaderboard_json()).unwrap();
        assert_eq!(board["profiles"], json!([]), "after {game} games");
        d.send_json(ConnId(1), json!({"type": "start_game"}));
        assert!(
            d.last_errors(ConnId(1)).is_empty(),
            "{:?}",
            d.last_errors(ConnId(1))
        );
        play_to_end(&mut d, ConnId(1), &[ConnId(1)]);
        d.send_json(ConnId(1), json!({"type": "return_to_lobby"}));
        assert!(
            d.last_errors(ConnId(1)).is_empty(),
            "{:?}",
            d.last_errors(ConnId(1))
        );
    }
    let board: Value = serde_json::from_str(&d.server.leaderboard_json()).unwrap();
    let listed = board["profiles"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "Bob played no game");
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["games"], 5);
    let page: Value = serde_json::from_str(&d.server.profile_json(&id).unwrap()).unwrap();
    assert_eq!(page["rating"], listed[0]["rating"]);
    assert!(d.server.profile_json("000000000000").is_none());
}

#[test]
fn the_registry_finds_each_profile_by_its_own_id_and_refuses_ids_no_profile_has() {
    use rand::SeedableRng as _;
    use rand_chacha::ChaCha12Rng;
    use wizard_core::machine::profiles::{ProfileRecord, ProfileRegistry};
    use wizard_core::vocabulary::figure::Figure;
    let mut registry = ProfileRegistry::new(
        10,
        ChaCha12Rng::seed_from_u64(1),
        ChaCha12Rng::seed_from_u64(2),
    );
    let record = |id: &str, n: u8| ProfileRecord {
        id: id.to_owned(),
        name: format!("Player{n}"),
        key_sha256: format!("{n:02x}").repeat(32),
        mu: Figure(25.0 + f64::from(n)),
        sigma: Figure(8.0),
        games: u32::from(n),
    };
    // Ids that share a prefix or differ only in their last byte are told apart.
    for (n, id) in ["abc", "ab", "abd", "0123456789abcdef", "b"]
        .iter()
        .enumerate()
    {
        registry.restore(&record(id, n as u8)).expect(id);
    }
    for (n, id) in ["abc", "ab", "abd", "0123456789abcdef", "b"]
        .iter()
        .enumerate()
    {
        assert_eq!(registry.get(id).map(|p| p.games), Some(n as u32), "{id}");
    }
    assert!(registry.get("a").is_none() && registry.get("abcd").is_none());
    // Listed in the ids' own order.
    let ids: Vec<&str> = registry.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["0123456789abcdef", "ab", "abc", "abd", "b"]);
    // Longer than any id, or holding a zero byte: refused, and never found.
    assert!(registry.restore(&record("0123456789abcdef0", 7)).is_err());
    assert!(registry.restore(&record("ab\0", 8)).is_err());
    assert!(registry.get("0123456789abcdef0").is_none() && registry.get("ab\0").is_none());
    assert_eq!(registry.len(), 5);
}

#[test]
fn the_registry_says_which_profiles_changed_since_a_mark_and_maybe_past_what_it_keeps() {
    use rand::SeedableRng as _;
    use rand_chacha::ChaCha12Rng;
    use wizard_core::machine::profiles::{CHANGES_KEPT_MAX, ProfileRegistry};
    let mut registry = ProfileRegistry::new(
        CHANGES_KEPT_MAX + 10,
        ChaCha12Rng::seed_from_u64(1),
        ChaCha12Rng::seed_from_u64(2),
    );
    let (a, _) = registry.create("Alpha").expect("created");
    let (b, _) = registry.create("Beta").expect("created");
    let mark = registry.changes();
    assert!(!registry.changed_since(&a.id, mark) && !registry.changed_since(&b.id, mark));
    // Rated: that one changed, the other not.
    let rating = Rating {
        mu: 30.0,
        sigma: 7.0,
    };
    assert!(registry.rated(&a.id, rating).is_some());
    assert!(registry.changed_since(&a.id, mark) && !registry.changed_since(&b.id, mark));
    // Unknown ids did not change; rating one changes nothing.
    assert!(registry.rated("000000000000", rating).is_none());
    let mark = registry.changes();
    assert!(!registry.changed_since(&a.id, mark));
    // Deleted, then created again: changes.
    assert!(registry.delete(&b.id));
    assert!(registry.changed_since(&b.id, mark) && !registry.changed_since(&a.id, mark));
    let mark = registry.changes();
    let (c, _) = registry.create("Gamma").expect("created");
    assert!(registry.changed_since(&c.id, mark) && !registry.changed_since(&a.id, mark));
    // More changes than are kept since the mark: anything may have changed.
    for n in 0..CHANGES_KEPT_MAX {
        registry.create(&format!("Filler{n}")).expect("created");
    }
    assert!(registry.changed_since(&a.id, mark));
    assert!(!registry.changed_since(&a.id, registry.changes()));
}
