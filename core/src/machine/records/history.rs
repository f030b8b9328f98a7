//! A finished game as history keeps it (PROTOCOL.md 7.4): its seed, players, options
//! and every move in order, enough to replay it through the rules engine, and the
//! answers built from it: the `/games/<id>` body ([`HistoryRecord::replay_json`]) and
//! each profile seat's line among its recent games ([`HistoryRecord::seat_summaries`]).
//!
//! The record is small (the deal comes back from the seed; a 4-player game's 540 moves
//! are about 3 KB of text); the replay runs wherever the answer is built, off the game
//! path. A record that does not replay to its own final scores is refused.

use serde::{Deserialize, Serialize};

use crate::vocabulary::game::types::Event;
use crate::vocabulary::game::{Action, AiLevel, Card, Game, Options, Seat, Suit, ranking};

/// One seat of a finished game, as it was at the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryPlayer {
    pub name: String,
    /// The profile the seat rated, if any (kept as it was, also once deleted).
    pub profile_id: Option<String>,
    /// Whether an AI played the seat at the end (a human who left included).
    pub is_ai: bool,
    /// An AI seat's level; `None` for a human.
    pub level: Option<AiLevel>,
}

/// A finished game, kept for `HISTORY_DAYS`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryRecord {
    /// The game's public id (`state.game.id`).
    pub id: String,
    /// Wall-clock start and end, milliseconds since the Unix epoch.
    pub started_ms: u64,
    pub finished_ms: u64,
    pub options: Options,
    pub rated: bool,
    /// The seed the deal comes from.
    pub seed: u64,
    /// Seats in table order.
    pub players: Vec<HistoryPlayer>,
    /// Every move in order ([`encode_moves`]).
    pub moves: String,
    pub final_scores: Vec<i32>,
}

/// The number a store may key a game's row by: its id's first 15 hex digits (60 of
/// its 80 random bits; a lookup by it still compares the whole id).
pub fn row_id(id: &str) -> u64 {
    u64::from_str_radix(id.get(..15).unwrap_or(id), 16).unwrap_or(0)
}

/// Moves as text: one word per move, the seat's digit then `b` and the bid, the card's
/// code, or `t` and the suit's letter (`0b2 1h12 2W1 3th`).
pub fn encode_moves(moves: &[(Seat, Action)]) -> String {
    let mut out = String::with_capacity(moves.len() * 5);
    for (i, (seat, action)) in moves.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(itoa::Buffer::new().format(*seat));
        match action {
            Action::Bid { bid } => {
                out.push('b');
                out.push_str(itoa::Buffer::new().format(*bid));
            }
            Action::Play { card } => out.push_str(card.code()),
            Action::ChooseTrump { suit } => {
                out.push('t');
                out.push(suit.letter());
            }
        }
    }
    out
}

/// The moves of [`encode_moves`]' text.
pub fn decode_moves(text: &str) -> Result<Vec<(Seat, Action)>, String> {
    text.split_ascii_whitespace()
        .map(|word| {
            let digits = word.bytes().take_while(u8::is_ascii_digit).count();
            let (seat, rest) = word.split_at(digits);
            let seat: Seat = seat.parse().map_err(|_| format!("move {word}: no seat"))?;
            let action = if let Some(bid) = rest.strip_prefix('b') {
                Action::Bid {
                    bid: bid.parse().map_err(|_| format!("move {word}: bad bid"))?,
                }
            } else if let Some(letter) = rest.strip_prefix('t') {
                let suit = [Suit::Clubs, Suit::Diamonds, Suit::Hearts, Suit::Spades]
                    .into_iter()
                    .find(|s| s.letter().to_string() == letter)
                    .ok_or_else(|| format!("move {word}: bad suit"))?;
                Action::ChooseTrump { suit }
            } else {
                Action::Play {
                    card: rest
                        .parse::<Card>()
                        .map_err(|_| format!("move {word}: bad card"))?,
                }
            };
            Ok((seat, action))
        })
        .collect()
}

/// One round of a replay, as `/games/<id>` shows it.
#[derive(Debug, Default, Serialize)]
struct RoundJson {
    hands: Vec<Vec<Card>>,
    trump_card: Option<Card>,
    trump: Option<Suit>,
    bids: Vec<u8>,
    tricks: Vec<TrickJson>,
    scores: Vec<i32>,
}

#[derive(Debug, Serialize)]
struct TrickJson {
    leader: Seat,
    cards: Vec<Card>,
    winner: Seat,
}

impl HistoryRecord {
    /// Replays the game through the rules engine: every round as dealt, bid, played and
    /// scored. Fails when a move is illegal or the scores differ from the recorded ones.
    fn rounds(&self) -> Result<Vec<RoundJson>, String> {
        let players = u8::try_from(self.players.len()).map_err(|_| "too many seats")?;
        let mut events = Vec::new();
        let mut game = Game::new(players, self.options, self.seed, &mut events)
            .map_err(|e| format!("{e:?}"))?;
        let mut rounds = Vec::new();
        let mut round = RoundJson::default();
        let mut leader: Option<Seat> = None;
        let dealt = |game: &Game, events: &[Event], round: &mut RoundJson| {
            for e in events {
                if let Event::RoundStarted {
                    trump_card,
                    trump_suit,
                    ..
                } = e
                {
                    round.hands = (0..players).map(|s| game.hand(s).to_vec()).collect();
                    round.trump_card = *trump_card;
                    round.trump = *trump_suit;
                }
            }
        };
        dealt(&game, &events, &mut round);
        for (i, (seat, action)) in decode_moves(&self.moves)?.into_iter().enumerate() {
            events.clear();
            game.apply(seat, action, &mut events)
                .map_err(|e| format!("move {i}: {e}"))?;
            for e in &events {
                match e {
                    Event::TrumpChosen { suit, .. } => round.trump = Some(*suit),
                    Event::CardPlayed { player, .. } if leader.is_none() => {
                        leader = Some(*player);
                    }
                    Event::TrickCompleted { winner, cards } => {
                        round.tricks.push(TrickJson {
                            leader: leader.take().unwrap_or(*winner),
                            cards: cards.iter().map(|c| c.card).collect(),
                            winner: *winner,
                        });
                    }
                    Event::RoundFinished { bids, deltas, .. } => {
                        round.bids = bids.clone();
                        round.scores = deltas.clone();
                        rounds.push(std::mem::take(&mut round));
                    }
                    _ => {}
                }
            }
            dealt(&game, &events, &mut round);
        }
        if game.ranking().is_none() || game.scores() != self.final_scores.as_slice() {
            return Err(format!(
                "game {} replays to {:?}, recorded {:?}",
                self.id,
                game.scores(),
                self.final_scores
            ));
        }
        Ok(rounds)
    }

    /// The `/games/<id>` body (PROTOCOL.md 7.4): `{id, started_at, finished_at,
    /// options, rated, players, rounds, final_scores}`, every hand revealed.
    pub fn replay_json(&self) -> Result<String, String> {
        let rounds = self.rounds()?;
        Ok(serde_json::json!({
            "id": self.id,
            "started_at": iso_utc(self.started_ms),
            "finished_at": iso_utc(self.finished_ms),
            "options": self.options,
            "rated": self.rated,
            "players": self.players,
            "rounds": rounds,
            "final_scores": self.final_scores,
        })
        .to_string())
    }

    /// For each profile seat, its profile id and its line among the profile's recent
    /// games: `{id, date, place, score, players}` (`players`: every seat's name).
    pub fn seat_summaries(&self) -> Vec<(String, String)> {
        let places = ranking(&self.final_scores);
        let names: Vec<&str> = self.players.iter().map(|p| p.name.as_str()).collect();
        let date = iso_utc(self.finished_ms);
        (0u8..)
            .zip(&self.players)
            .filter_map(|(seat, p)| {
                let profile = p.profile_id.clone()?;
                let placing = places.iter().find(|x| x.player == seat)?;
                let line = serde_json::json!({
                    "id": self.id,
                    "date": date,
                    "place": placing.place,
                    "score": placing.score,
                    "players": names,
                })
                .to_string();
                Some((profile, line))
            })
            .collect()
    }
}

/// Milliseconds since the Unix epoch as an RFC 3339 UTC time,
/// `2026-12-06T15:40:02.123Z`.
pub fn iso_utc(ms: u64) -> String {
    let days = (ms / 86_400_000) as i64;
    let in_day = ms % 86_400_000;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

/// `games` whole games of `players` seats played by the heuristic player (seeded, so
/// always the same), as history keeps them: seat 0 a profile, the others AI seats. For
/// measuring the stores' history.
pub fn played_games(games: u64, players: u8) -> Vec<HistoryRecord> {
    use rand::SeedableRng;

    use crate::vocabulary::game::bot;
    let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(2);
    let mut out = Vec::new();
    for g in 0..games {
        let seed = g * 7919 + 17;
        let mut events = Vec::new();
        let Ok(mut game) = Game::new(players, Options::default(), seed, &mut events) else {
            continue;
        };
        let mut moves = Vec::new();
        while let Some(seat) = game.next_to_act() {
            let Some(action) = bot::decide(&game.observation(seat), &mut rng) else {
                break;
            };
            if game.apply(seat, action, &mut events).is_err() {
                break;
            }
            events.clear();
            moves.push((seat, action));
        }
        let started_ms = 1_765_000_000_000 + g * 60_000;
        out.push(HistoryRecord {
            id: format!("{:020x}", u128::from(g) * 0x9e37_79b9_7f4a_7c15 + 1),
            started_ms,
            finished_ms: started_ms + 1_200_000,
            options: Options::default(),
            rated: true,
            seed,
            players: (0..players)
                .map(|s| HistoryPlayer {
                    name: if s == 0 {
                        format!("Player {g}")
                    } else {
                        format!("Merlin {s}")
                    },
                    profile_id: (s == 0).then(|| format!("{:012x}", g + 1)),
                    is_ai: s != 0,
                    level: (s != 0).then_some(AiLevel::Strong),
                })
                .collect(),
            moves: encode_moves(&moves),
            final_scores: game.scores().to_vec(),
        });
    }
    out
}
