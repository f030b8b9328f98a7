//! History records (PROTOCOL.md 7.4) through the public API: the moves' text reads back
//! as written, a whole game's record replays to its final scores with every hand as
//! dealt and every trick's winner by the rules, its stored text round-trips, and a
//! record that does not replay to its own scores is refused.

use rand::SeedableRng;
use wizard_core::machine::records::Record;
use wizard_core::machine::records::history::{
    HistoryPlayer, HistoryRecord, decode_moves, encode_moves, iso_utc, row_id,
};
use wizard_core::vocabulary::game::{Action, AiLevel, Card, Game, Options, Seat, Suit, bot, trick};

/// A whole game of `players` seats played by the heuristic player from `seed`, as its
/// history record.
fn played(players: u8, seed: u64) -> HistoryRecord {
    let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(seed);
    let mut events = Vec::new();
    let mut game = Game::new(players, Options::default(), seed, &mut events).unwrap();
    let mut moves: Vec<(Seat, Action)> = Vec::new();
    while let Some(seat) = game.next_to_act() {
        let action = bot::decide(&game.observation(seat), &mut rng).unwrap();
        game.apply(seat, action, &mut events).unwrap();
        moves.push((seat, action));
    }
    HistoryRecord {
        id: "0123456789abcdef0123".into(),
        started_ms: 1_765_000_000_000,
        finished_ms: 1_765_000_900_000,
        options: Options::default(),
        rated: false,
        seed,
        players: (0..players)
            .map(|s| HistoryPlayer {
                name: format!("P{s}"),
                profile_id: (s == 0).then(|| "0a1b2c3d4e5f".to_owned()),
                is_ai: s != 0,
                level: (s != 0).then_some(AiLevel::Normal),
            })
            .collect(),
        moves: encode_moves(&moves),
        final_scores: game.scores().to_vec(),
    }
}

#[test]
fn moves_read_back_as_written() {
    let moves = vec![
        (0, Action::Bid { bid: 2 }),
        (
            5,
            Action::Play {
                card: "h12".parse().unwrap(),
            },
        ),
        (
            1,
            Action::Play {
                card: "W1".parse().unwrap(),
            },
        ),
        (
            2,
            Action::Play {
                card: "J4".parse().unwrap(),
            },
        ),
        (3, Action::ChooseTrump { suit: Suit::Spades }),
        (4, Action::Bid { bid: 20 }),
    ];
    let text = encode_moves(&moves);
    assert_eq!(text, "0b2 5h12 1W1 2J4 3ts 4b20");
    assert_eq!(decode_moves(&text).unwrap(), moves);
    assert!(decode_moves("0x1").is_err());
    assert!(decode_moves("b1").is_err());
}

#[test]
fn a_whole_game_replays_with_hands_tricks_and_scores() {
    for (players, seed) in [(3u8, 7u64), (4, 11), (6, 5)] {
        let record = played(players, seed);
        let json: serde_json::Value = serde_json::from_str(&record.replay_json().unwrap()).unwrap();
        let rounds = json["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 60 / usize::from(players));
        let n = usize::from(players);
        let mut totals = vec![0i64; n];
        for (r, round) in rounds.iter().enumerate() {
            let hands = round["hands"].as_array().unwrap();
            assert!(hands.iter().all(|h| h.as_array().unwrap().len() == r + 1));
            let trump: Option<Suit> = round["trump"].as_str().map(|s| s.parse().unwrap());
            let mut taken = vec![0i64; n];
            for t in round["tricks"].as_array().unwrap() {
                let cards: Vec<Card> = t["cards"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap().parse().unwrap())
                    .collect();
                let leader = t["leader"].as_u64().unwrap() as usize;
                let winner = (leader + trick::winner(&cards, trump).unwrap()) % n;
                assert_eq!(t["winner"].as_u64(), Some(winner as u64));
                taken[winner] += 1;
            }
            for seat in 0..n {
                let bid = round["bids"][seat].as_i64().unwrap();
                let points = if bid == taken[seat] {
                    20 + 10 * bid
                } else {
                    -10 * (taken[seat] - bid).abs()
                };
                assert_eq!(round["scores"][seat].as_i64(), Some(points));
                totals[seat] += points;
            }
        }
        let finals: Vec<i64> = record.final_scores.iter().map(|&s| i64::from(s)).collect();
        assert_eq!(totals, finals);
        assert_eq!(json["final_scores"], serde_json::json!(record.final_scores));
        assert_eq!(json["started_at"], "2025-12-06T05:46:40.000Z");
        assert_eq!(json["players"][1]["level"], "normal");
        assert_eq!(json["players"][0]["level"], serde_json::Value::Null);
    }
}

#[test]
fn the_stored_text_round_trips_and_a_wrong_record_is_refused() {
    let record = played(4, 3);
    let text = Record::Game(record.clone()).encode();
    assert_eq!(Record::decode(&text).unwrap(), Record::Game(record.clone()));
    let key = Record::Game(record.clone()).row_key();
    assert_eq!(key.id, row_id(&record.id));
    assert_eq!(key.game_no, record.finished_ms);
    let lines = record.seat_summaries();
    assert_eq!(lines.len(), 1, "one profile seat");
    let line: serde_json::Value = serde_json::from_str(&lines[0].1).unwrap();
    assert_eq!(line["players"], serde_json::json!(["P0", "P1", "P2", "P3"]));
    assert_eq!(line["score"], serde_json::json!(record.final_scores[0]));

    let mut wrong = record.clone();
    wrong.final_scores[0] += 10;
    assert!(
        wrong.replay_json().is_err(),
        "not the scores the moves make"
    );
    let mut cut = record;
    cut.moves.truncate(cut.moves.len() / 2);
    assert!(
        cut.replay_json().is_err(),
        "an unfinished game is no history"
    );
}

#[test]
fn dates_are_utc_with_milliseconds() {
    assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(iso_utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
    assert_eq!(iso_utc(1_798_761_599_999), "2026-12-31T23:59:59.999Z");
}
