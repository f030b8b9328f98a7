//! Shard identity (PROTOCOL.md section 6.3) through the server's public API: what a
//! sharded server issues (codes and tokens carrying its `SHARD_ID`), `wrong_shard` for
//! another shard's code or token, and an unsharded server unchanged. The wire-level
//! conversation is in `fixtures/protocol/shards*.jsonl`; these tests check what a
//! transcript cannot (prefixes, lengths, the randomness behind them).

use serde_json::Value;
use wizard_core::machine::lobby::{CODE_ALPHABET, CODE_CHARS};
use wizard_core::vocabulary::io::ConnId;
use wizard_core::vocabulary::rng::TOKEN_CHARS;
use wizard_core::vocabulary::shard::{SHARDED_TOKEN_CHARS, ShardId, owner_of, token_owner};
use wizard_core::vocabulary::wire::ClientMessage;

use super::driver::{Driver, config};

/// Sessions (one per address, so no per-address cap is reached) each creating a lobby.
const PLAYERS: u64 = 40;

/// What `PLAYERS` players got from a server with `shard` (or none): their welcomes and
/// the codes of the lobbies they created.
fn issue(shard: &str, seed: u64) -> (Driver, Vec<Value>, Vec<String>) {
    let mut d = Driver::new(config(&[("SHARD_ID", shard)]), seed);
    let (mut welcomes, mut codes) = (Vec::new(), Vec::new());
    for n in 1..=PLAYERS {
        let conn = ConnId(n);
        d.open(conn, &format!("10.0.{}.{}", n / 200, n % 200 + 1));
        d.hello(conn, None);
        let seen = &d.seen[&conn];
        welcomes.push(seen.messages[0].clone());
        let create = ClientMessage::CreateLobby {
            name: format!("P{n}"),
        };
        d.send(conn, &create);
        codes.push(d.lobby_code(conn).expect("a lobby"));
    }
    (d, welcomes, codes)
}

fn in_alphabet(text: &str) -> bool {
    text.bytes().all(|b| CODE_ALPHABET.contains(&b))
}

#[test]
fn a_shard_puts_its_id_first_in_codes_and_tokens() {
    for shard in ["A", "K", "9", "2"] {
        let (d, welcomes, codes) = issue(shard, 11);
        for (welcome, code) in welcomes.iter().zip(&codes) {
            assert_eq!(welcome["type"], "welcome");
            assert_eq!(welcome["shard"], shard, "{welcome}");
            let token = welcome["token"].as_str().expect("a token");
            assert_eq!(token.len(), SHARDED_TOKEN_CHARS, "{token}");
            assert!(token.starts_with(shard), "{shard}: {token}");
            assert_eq!(
                token_owner(token).map(|s| s.to_string()),
                Some(shard.into())
            );
            assert_eq!(code.len(), CODE_CHARS, "{code}");
            assert!(
                code.starts_with(shard) && in_alphabet(code),
                "{shard}: {code}"
            );
            assert_eq!(owner_of(code).map(|s| s.to_string()), Some(shard.into()));
        }
        // The rest of a code stays random: no two alike, and not one fixed pattern.
        let mut tails: Vec<&str> = codes.iter().map(|c| &c[1..]).collect();
        tails.sort_unstable();
        tails.dedup();
        assert_eq!(tails.len(), codes.len(), "{codes:?}");
        let health = d.server.health();
        assert_eq!(health.shard.as_deref(), Some(shard));
    }
}

/// The shard's id goes in front of a token's randomness, never in its place: with the
/// same seed, a sharded token is the id followed by exactly the unsharded token.
#[test]
fn the_prefix_adds_to_the_tokens_randomness() {
    let (_, plain, _) = issue("", 5);
    let (_, sharded, _) = issue("C", 5);
    for (p, s) in plain.iter().zip(&sharded) {
        let (p, s) = (p["token"].as_str().unwrap(), s["token"].as_str().unwrap());
        assert_eq!(p.len(), TOKEN_CHARS);
        assert_eq!(s, format!("C{p}"));
    }
}

#[test]
fn an_unsharded_server_is_unchanged() {
    let (d, welcomes, codes) = issue("", 3);
    for (welcome, code) in welcomes.iter().zip(&codes) {
        assert!(welcome.get("shard").is_none(), "{welcome}");
        assert_eq!(welcome["token"].as_str().map(str::len), Some(TOKEN_CHARS));
        assert!(code.len() == CODE_CHARS && in_alphabet(code), "{code}");
    }
    // Codes start anywhere in the alphabet, as before.
    let firsts: std::collections::BTreeSet<char> =
        codes.iter().filter_map(|c| c.chars().next()).collect();
    assert!(firsts.len() > 10, "{firsts:?}");
    assert_eq!(d.server.health().shard, None);
    let health = wizard_core::vocabulary::wire::encode_health(&d.server.health());
    assert!(!health.contains("shard"), "{health}");
}

/// A shard's own token resumes its session (same player id, same token) on the shard,
/// and names the shard elsewhere: `wrong_shard` with its id, and no new session there.
#[test]
fn tokens_resume_at_home_and_are_sent_home_elsewhere() {
    let (mut a, welcomes, _) = issue("A", 8);
    let token = welcomes[0]["token"].as_str().unwrap().to_owned();
    let player = welcomes[0]["player_id"].clone();
    a.close(ConnId(1));
    a.open(ConnId(100), "10.9.9.9");
    a.hello(ConnId(100), Some(&token));
    let back = &a.seen[&ConnId(100)].messages[0];
    assert_eq!(
        (&back["type"], &back["player_id"], &back["token"]),
        (&"welcome".into(), &player, &token.clone().into())
    );

    let mut b = Driver::new(config(&[("SHARD_ID", "B")]), 8);
    b.open(ConnId(1), "10.0.0.1");
    b.hello(ConnId(1), Some(&token));
    let refusal = &b.seen[&ConnId(1)].messages;
    assert_eq!(refusal.len(), 1, "{refusal:?}");
    assert_eq!(
        (&refusal[0]["code"], &refusal[0]["shard"]),
        (&"wrong_shard".into(), &"A".into())
    );
    assert_eq!(
        b.server.health().sessions,
        0,
        "no session made for a foreign token"
    );
    // The connection stays: it may say hello again (e.g. without a token).
    b.hello(ConnId(1), None);
    assert_eq!(b.seen[&ConnId(1)].messages[1]["type"], "welcome");
}

/// `join_lobby` and `spectate` by code: (code, the error code or "joined", the shard
/// named).
#[test]
fn join_or_watch_by_code_on_a_shard() {
    let (mut a, _, codes) = issue("A", 21);
    let mine = codes[0].clone();
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("BCDEFG", "wrong_shard", Some("B")),
        ("bcdefg", "wrong_shard", Some("B")),
        (" 9ZZZZZ ", "wrong_shard", Some("9")),
        // Its own id, but no such lobby: the usual not_found.
        ("AZZZZZ", "not_found", None),
        // Not a shard's id at all (0 is not in the alphabet): not_found.
        ("0ZZZZZ", "not_found", None),
        ("", "not_found", None),
        (&mine, "joined", None),
    ];
    type Message = fn(String) -> ClientMessage;
    let kinds: [(&str, Message); 2] = [
        ("join_lobby", |code| ClientMessage::JoinLobby {
            code,
            name: "Zed".into(),
        }),
        ("spectate", |code| ClientMessage::Spectate {
            code,
            name: "Zoe".into(),
        }),
    ];
    for (n, (kind, message)) in kinds.into_iter().enumerate() {
        let conn = ConnId(500 + n as u64);
        a.open(conn, &format!("10.8.0.{}", n + 1));
        a.hello(conn, None);
        for (code, want, shard) in cases {
            let before = a.seen[&conn].messages.len();
            a.send(conn, &message((*code).to_owned()));
            let got = &a.seen[&conn].messages[before..];
            let first = got.first().expect("an answer");
            if *want == "joined" {
                assert_eq!(first["type"], "state", "{kind} {code}: {first}");
                assert_eq!(first["lobby"]["code"], mine.as_str(), "{kind}");
            } else {
                assert_eq!(first["code"], *want, "{kind} {code}: {first}");
                assert_eq!(first["shard"].as_str(), *shard, "{kind} {code}: {first}");
            }
        }
    }
}

/// An unsharded server never says `wrong_shard`: another shard's code is unknown, and a
/// token of sharded shape is no token of its own (a new session).
#[test]
fn an_unsharded_server_never_says_wrong_shard() {
    let (_, sharded, _) = issue("B", 2);
    let token = sharded[0]["token"].as_str().unwrap();
    let mut d = Driver::new(config(&[]), 2);
    d.open(ConnId(1), "10.0.0.1");
    d.hello(ConnId(1), Some(token));
    let welcome = &d.seen[&ConnId(1)].messages[0];
    assert_eq!(welcome["type"], "welcome");
    assert_ne!(welcome["token"], token);
    let join = ClientMessage::JoinLobby {
        code: "BCDEFG".into(),
        name: "Zed".into(),
    };
    d.send(ConnId(1), &join);
    assert_eq!(d.last_errors(ConnId(1)), ["not_found"]);
}

/// [`owner_of`] and [`token_owner`]: the first character, when it is a shard's id.
#[test]
fn owners_of_codes_and_tokens() {
    let id = |c: &str| c.parse::<ShardId>().ok();
    let token_a = format!("A{}", "x".repeat(TOKEN_CHARS));
    let token_plain = format!("B{}", "x".repeat(TOKEN_CHARS - 1));
    let cases: &[(&str, Option<ShardId>, Option<ShardId>)] = &[
        ("ABCDEF", id("A"), None),
        ("abcdef", id("A"), None),
        ("  9XYZ", id("9"), None),
        ("OBCDEF", None, None),
        ("1BCDEF", None, None),
        ("", None, None),
        ("é", None, None),
        (&token_a, id("A"), id("A")),
        (&token_plain, id("B"), None),
    ];
    for (text, owner, as_token) in cases {
        assert_eq!(owner_of(text), *owner, "{text:?}");
        assert_eq!(token_owner(text), *as_token, "{text:?}");
    }
    for c in CODE_ALPHABET {
        let text = char::from(*c).to_string();
        assert_eq!(id(&text).map(|s| s.to_string()), Some(text));
    }
}
