//! AI levels (PROTOCOL.md section 6.5): the easy player misjudges at its documented
//! rates and stays legal; `add_ai` takes a level, the lobby shows it, the AI request
//! carries it, and the fallback plays the easy player for easy seats only.

use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;
use serde_json::{Value, json};
use wizard_core::machine::records::Record;
use wizard_core::vocabulary::game::level::{
    self, AiLevel, EASY_BID_MISS_RATE, EASY_CARD_RANDOM_RATE,
};
use wizard_core::vocabulary::game::selfplay::play_out;
use wizard_core::vocabulary::game::{Action, BidRestriction, Game, Options, Phase, bot};
use wizard_core::vocabulary::io::{ConnId, Input, Output};

use super::driver::{Driver, config};

/// No delays, and a message rate the scripted players cannot exceed.
const FAST: &[(&str, &str)] = &[
    ("AI_MOVE_DELAY", "0"),
    ("TRICK_PAUSE", "0"),
    ("MESSAGE_RATE", "1000"),
    ("MESSAGE_BURST", "1000"),
];

/// How many standard deviations a count may stray from its expectation. The seeds are
/// fixed, so this only has to hold for them; 5 sigma keeps a correct player far inside
/// the bounds and a player off by a few points of rate far outside them.
const SIGMAS: f64 = 5.0;

/// A count of independent trials with success probabilities `p`: its expectation and
/// standard deviation (of the Poisson binomial distribution).
#[derive(Default)]
struct Tally {
    count: u64,
    mean: f64,
    var: f64,
    trials: u64,
}

impl Tally {
    fn trial(&mut self, p: f64, hit: bool) {
        self.trials += 1;
        self.count += u64::from(hit);
        self.mean += p;
        self.var += p * (1.0 - p);
    }

    /// Asserts the count is within [`SIGMAS`] standard deviations of its expectation.
    fn check(&self, what: &str) {
        let sd = self.var.sqrt();
        #[allow(clippy::cast_precision_loss)]
        let count = self.count as f64;
        assert!(
            (count - self.mean).abs() <= SIGMAS * sd,
            "{what}: {} of {} trials, expected {:.1} +- {:.1} ({SIGMAS} sd)",
            self.count,
            self.trials,
            self.mean,
            SIGMAS * sd
        );
    }
}

fn bid_of(action: Action) -> Option<u8> {
    match action {
        Action::Bid { bid } => Some(bid),
        _ => None,
    }
}

/// Whether a bid one off `bid` is legal in `legal`.
fn has_legal_neighbour(legal: &[Action], bid: u8) -> bool {
    [bid.checked_sub(1), bid.checked_add(1)]
        .into_iter()
        .flatten()
        .any(|b| legal.contains(&Action::Bid { bid: b }))
}

/// Over the decisions of many seeded heuristic games, the easy player changes the
/// heuristic's bid by exactly one in about 25 % of the bids that have a legal
/// neighbour, never otherwise, and plays a random legal card in about 20 % of the card
/// decisions (measured as: differs from the heuristic's card, which a random card does
/// with probability 1 - 1/legal cards).
#[test]
fn the_easy_player_misjudges_at_its_rates() {
    let mut bids = Tally::default();
    let mut cards = Tally::default();
    let mut misjudge_rng = ChaCha12Rng::seed_from_u64(19);
    for seed in 0..60u64 {
        let players = 3 + (seed % 4) as u8;
        let options = Options {
            bid_restriction: [BidRestriction::None, BidRestriction::Canadian][(seed % 2) as usize],
            ..Options::default()
        };
        let mut game = Game::new(players, options, seed, &mut Vec::new()).unwrap();
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        play_out(&mut game, |_, obs| {
            let heuristic = bot::decide(obs, &mut rng).unwrap();
            let easy = level::misjudge(obs, heuristic, &mut misjudge_rng);
            assert!(obs.legal_actions.contains(&easy), "{easy:?} is not legal");
            match obs.phase {
                Phase::Bidding => {
                    let (h, e) = (bid_of(heuristic).unwrap(), bid_of(easy).unwrap());
                    assert!(h.abs_diff(e) <= 1, "bid {e}, the heuristic's {h}");
                    let p = if has_legal_neighbour(&obs.legal_actions, h) {
                        EASY_BID_MISS_RATE
                    } else {
                        0.0
                    };
                    bids.trial(p, h != e);
                }
                Phase::Playing => {
                    #[allow(clippy::cast_precision_loss)]
                    let n = obs.legal_actions.len() as f64;
                    cards.trial(EASY_CARD_RANDOM_RATE * (1.0 - 1.0 / n), heuristic != easy);
                }
                _ => assert_eq!(easy, heuristic, "the trump choice is the heuristic's"),
            }
            heuristic
        })
        .unwrap();
    }
    assert!(
        bids.trials > 1000 && cards.trials > 5000,
        "enough decisions"
    );
    bids.check("bids off by one");
    cards.check("cards other than the heuristic's");
}

/// Whole games played by easy players are legal to the end and the same given the
/// same RNG.
#[test]
fn easy_players_play_legal_games_deterministically() {
    let scores = |seed: u64| {
        let mut game = Game::new(4, Options::default(), seed, &mut Vec::new()).unwrap();
        let mut rng = ChaCha12Rng::seed_from_u64(seed ^ 7);
        play_out(&mut game, |_, obs| {
            level::fallback(AiLevel::Easy, obs, &mut rng).unwrap()
        })
        .unwrap();
        game.scores().to_vec()
    };
    for seed in 0..8 {
        assert_eq!(scores(seed), scores(seed));
    }
}

#[test]
fn level_names_parse_and_unknown_ones_do_not() {
    for level in AiLevel::ALL {
        assert_eq!(level.name().parse::<AiLevel>(), Ok(level));
        assert_eq!(
            serde_json::to_value(level).unwrap(),
            json!(level.name()),
            "wire name"
        );
    }
    assert_eq!(AiLevel::default(), AiLevel::Strong);
    for junk in ["", "Easy", "expert", "strong "] {
        assert!(junk.parse::<AiLevel>().is_err(), "{junk:?}");
    }
}

/// A host alone in a new lobby on connection 1.
fn host(d: &mut Driver) {
    d.open(ConnId(1), "10.0.0.1");
    d.hello(ConnId(1), None);
    d.send_json(ConnId(1), json!({"type": "create_lobby", "name": "Ann"}));
}

fn players(d: &Driver) -> Vec<Value> {
    d.state(ConnId(1)).unwrap()["lobby"]["players"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn add_ai_takes_a_level_and_the_lobby_shows_it() {
    let mut d = Driver::new(config(FAST), 1);
    host(&mut d);
    for level in [json!("easy"), json!("normal"), json!("strong"), Value::Null] {
        d.send_json(ConnId(1), json!({"type": "add_ai", "level": level}));
        assert!(d.last_errors(ConnId(1)).is_empty());
    }
    d.send_json(ConnId(1), json!({"type": "add_ai"}));
    assert!(d.last_errors(ConnId(1)).is_empty());
    let seats = players(&d);
    let levels: Vec<&Value> = seats.iter().map(|p| &p["level"]).collect();
    assert_eq!(
        levels,
        [
            &Value::Null,
            &json!("easy"),
            &json!("normal"),
            &json!("strong"),
            &json!("strong"),
            &json!("strong")
        ],
        "a human has no level; absent and null mean strong"
    );
    assert!(
        seats[0].as_object().unwrap().get("level").is_none(),
        "a human seat carries no level field"
    );
}

#[test]
fn add_ai_with_an_unknown_level_is_invalid() {
    let mut d = Driver::new(config(FAST), 1);
    host(&mut d);
    for level in [
        json!("expert"),
        json!("EASY"),
        json!(2),
        json!({"easy": true}),
    ] {
        d.send_json(ConnId(1), json!({"type": "add_ai", "level": level}));
        assert_eq!(d.last_errors(ConnId(1)), ["invalid"], "level {level}");
    }
    assert_eq!(players(&d).len(), 1, "no seat was added");
}

/// The AI service is asked with the seat's level.
#[test]
fn the_ai_request_carries_the_seat_level() {
    let mut d = Driver::new(config(FAST), 3);
    d.open_ai(ConnId(50));
    host(&mut d);
    for level in ["easy", "normal", "strong"] {
        d.send_json(ConnId(1), json!({"type": "add_ai", "level": level}));
    }
    d.send_json(ConnId(1), json!({"type": "start_game"}));
    let mut asked = std::collections::BTreeMap::new();
    // Answer every request with its first legal action until each AI seat was asked.
    for _ in 0..200 {
        let requests: Vec<Value> = d
            .last
            .iter()
            .filter_map(|o| match o {
                Output::Send { conn, text, .. } if *conn == ConnId(50) => {
                    Some(serde_json::from_str(text).unwrap())
                }
                _ => None,
            })
            .collect();
        for r in &requests {
            let seat = r["observation"]["to_act"].as_u64().unwrap();
            asked.insert(seat, r["level"].clone());
            let action = r["observation"]["legal_actions"][0].clone();
            let id = &r["request_id"];
            d.ai_send(
                ConnId(50),
                &json!({"type": "decision", "request_id": id, "action": action, "agent": "t"})
                    .to_string(),
            );
        }
        if asked.len() == 3 {
            break;
        }
        if requests.is_empty() {
            if !d.legal(ConnId(1)).is_empty() {
                let action = d.legal(ConnId(1))[0].clone();
                d.send_json(ConnId(1), json!({"type": "action", "action": action}));
            } else if let Some((t, _)) = d.server.poll_timeout() {
                d.now = d.now.max(t);
                d.input(Input::Timeout);
            }
        }
    }
    let want: std::collections::BTreeMap<u64, Value> = [
        (1, json!("easy")),
        (2, json!("normal")),
        (3, json!("strong")),
    ]
    .into();
    assert_eq!(asked, want);
}

/// Plays a game of one human (always the first legal action) and AI seats of `levels`
/// to its end without an AI service, so the fallback makes every AI move; returns the
/// seed and moves from the records.
fn fallback_game(seed: u64, levels: &[&str]) -> (u64, Vec<(u8, Action)>, Options) {
    let mut d = Driver::new(config(FAST), seed);
    d.server.keep_records();
    host(&mut d);
    for level in levels {
        d.send_json(ConnId(1), json!({"type": "add_ai", "level": level}));
    }
    d.send_json(ConnId(1), json!({"type": "start_game"}));
    for _ in 0..5000 {
        let state = d.state(ConnId(1)).unwrap();
        if state["lobby"]["status"] == "finished" {
            break;
        }
        if d.legal(ConnId(1)).is_empty() {
            let (t, _) = d.server.poll_timeout().expect("a running game waits");
            d.now = d.now.max(t);
            d.input(Input::Timeout);
        } else {
            let action = d.legal(ConnId(1))[0].clone();
            d.send_json(ConnId(1), json!({"type": "action", "action": action}));
        }
    }
    let mut game_seed = None;
    let mut moves = Vec::new();
    let mut options = Options::default();
    let mut seat_levels: Vec<AiLevel> = Vec::new();
    for record in d.server.take_records() {
        match record {
            Record::Lobby(l) => {
                game_seed = l.seed.or(game_seed);
                options = l.options;
                seat_levels = l.seats.iter().skip(1).map(|s| s.level).collect();
            }
            Record::Move { seat, action, .. } => moves.push((seat, action)),
            _ => {}
        }
    }
    let want: Vec<AiLevel> = levels.iter().map(|l| l.parse().unwrap()).collect();
    assert_eq!(seat_levels, want, "the last lobby record keeps the levels");
    assert!(
        moves.len() > 100,
        "the game was played: {} moves",
        moves.len()
    );
    (game_seed.expect("a seed"), moves, options)
}

/// The fallback plays the easy player for easy seats and the heuristic for the
/// others: replaying the recorded games, an easy seat's bid is the heuristic's in
/// about 75 % of the bids that could be off, and one off otherwise; a normal or strong
/// seat's bid is always the heuristic's (its bid does not depend on the RNG).
#[test]
fn the_fallback_plays_the_easy_player_for_easy_seats() {
    let mut easy = Tally::default();
    let mut others = 0u32;
    for seed in 0..6u64 {
        let (game_seed, moves, options) = fallback_game(seed, &["easy", "normal", "strong"]);
        let mut game = Game::new(4, options, game_seed, &mut Vec::new()).unwrap();
        let mut rng = ChaCha12Rng::seed_from_u64(0);
        for (seat, action) in moves {
            let obs = game.observation(seat);
            if let (Some(bid), Some(h)) =
                (bid_of(action), bot::decide(&obs, &mut rng).and_then(bid_of))
            {
                match seat {
                    1 => {
                        assert!(bid.abs_diff(h) <= 1, "easy bid {bid}, heuristic {h}");
                        let p = if has_legal_neighbour(&obs.legal_actions, h) {
                            EASY_BID_MISS_RATE
                        } else {
                            0.0
                        };
                        easy.trial(p, bid != h);
                    }
                    2 | 3 => others += u32::from(bid != h),
                    _ => {}
                }
            }
            game.apply(seat, action, &mut Vec::new()).unwrap();
        }
    }
    assert!(easy.trials >= 80, "{} easy bids", easy.trials);
    assert!(easy.count > 0, "the easy seat misjudged");
    easy.check("easy seat bids off by one");
    assert_eq!(others, 0, "normal and strong seats bid as the heuristic");
}

/// A seat record keeps a level other than `strong`; without one (as version 1 wrote
/// before levels existed) it is `strong`.
#[test]
fn seat_records_keep_levels_and_old_ones_read_as_strong() {
    let old = r#"{"v":1,"type":"lobby","lobby":1,"code":"TN83CV","status":"waiting","host":"1645bef065b5","options":{"hidden_bids":false,"bid_restriction":"none","turn_seconds":0},"seats":[{"player_id":"1645bef065b5","name":"Ann","session":1},{"player_id":"ai-584970ac","name":"Merlin","session":null}],"owner":"10.0.0.1","game_no":0,"seed":null}"#;
    let Ok(Record::Lobby(mut lobby)) = Record::decode(old) else {
        panic!("a version 1 lobby record")
    };
    assert_eq!(lobby.seats[1].level, AiLevel::Strong);
    // Written in this build's version; a strong seat adds no field.
    assert_eq!(
        Record::Lobby(lobby.clone()).encode(),
        old.replacen(r#"{"v":1,"#, r#"{"v":2,"#, 1),
        "a strong seat is written as before"
    );
    lobby.seats[1].level = AiLevel::Easy;
    let text = Record::Lobby(lobby.clone()).encode();
    assert!(text.contains(r#""session":null,"level":"easy"}"#), "{text}");
    assert_eq!(Record::decode(&text), Ok(Record::Lobby(lobby)));
}
