//! The compact stored form of [`Record::Move`] (record version 2): a JSON array
//! `[2,"m",lobby,game_no,seat,"action","by",autoplayed]`, e.g.
//! `[2,"m",17,1,3,"ph12","a",0]`.
//!
//! Moves are nearly every record a store holds (about 180 per running 4-player game
//! halfway through), and a restart's restore decodes all of them. Version 1 stored a
//! move as an object of about 120 bytes, which serde decodes through its buffered path
//! for tagged enums; this form is about 30 bytes and decodes as a tuple. Actions are
//! `b<bid>`, `p<card code>` (`ph12`, `pW1`, `pJ3`) and `t<suit>` (`thearts`); sources
//! are `h` (human), `a` (AI) and `f` (fallback); `autoplayed` is `0` or `1`.

use super::{Record, RecordError};
use crate::machine::session::LobbyId;
use crate::vocabulary::game::{Action, Seat};
use crate::vocabulary::io::MoveSource;

/// How a compact move's text begins: the version, then the kind.
pub(super) const PREFIX: &str = "[2,\"m\",";

/// Appends the stored text of a move to `out`.
pub(super) fn encode_into(
    out: &mut Vec<u8>,
    lobby: LobbyId,
    game_no: u64,
    seat: Seat,
    action: Action,
    by: MoveSource,
    autoplayed: bool,
) {
    let by: &[u8] = match by {
        MoveSource::Human => b"\",\"h\",",
        MoveSource::Ai => b"\",\"a\",",
        MoveSource::Fallback => b"\",\"f\",",
    };
    // Built by hand, not with `write!`: this runs for nearly every record a store
    // keeps, on the game loop.
    let mut number = itoa::Buffer::new();
    out.extend_from_slice(PREFIX.as_bytes());
    out.extend_from_slice(number.format(lobby.0).as_bytes());
    out.push(b',');
    out.extend_from_slice(number.format(game_no).as_bytes());
    out.push(b',');
    out.extend_from_slice(number.format(seat).as_bytes());
    out.extend_from_slice(b",\"");
    match action {
        Action::Bid { bid } => {
            out.push(b'b');
            out.extend_from_slice(number.format(bid).as_bytes());
        }
        Action::Play { card } => {
            out.push(b'p');
            out.extend_from_slice(card.code().as_bytes());
        }
        Action::ChooseTrump { suit } => {
            out.push(b't');
            out.extend_from_slice(suit.name().as_bytes());
        }
    }
    out.extend_from_slice(by);
    out.extend_from_slice(if autoplayed { b"1]" } else { b"0]" });
}

/// Reads a text that begins with [`PREFIX`].
pub(super) fn decode(text: &str) -> Result<Record, RecordError> {
    let malformed = |what: &str| RecordError::Malformed(format!("compact move: {what}"));
    let (_, _, lobby, game_no, seat, action, by, autoplayed): (
        u32,
        &str,
        u64,
        u64,
        Seat,
        &str,
        &str,
        u8,
    ) = serde_json::from_str(text).map_err(|e| RecordError::Malformed(e.to_string()))?;
    let (kind, value) = action
        .split_at_checked(1)
        .ok_or_else(|| malformed("empty action"))?;
    let action = match kind {
        "b" => Action::Bid {
            bid: value.parse().map_err(|_| malformed("bid"))?,
        },
        "p" => Action::Play {
            card: value.parse().map_err(|_| malformed("card"))?,
        },
        "t" => Action::ChooseTrump {
            suit: value.parse().map_err(|_| malformed("suit"))?,
        },
        _ => return Err(malformed("action kind")),
    };
    let by = match by {
        "h" => MoveSource::Human,
        "a" => MoveSource::Ai,
        "f" => MoveSource::Fallback,
        _ => return Err(malformed("source")),
    };
    let autoplayed = match autoplayed {
        0 => false,
        1 => true,
        _ => return Err(malformed("autoplayed")),
    };
    Ok(Record::Move {
        lobby: LobbyId(lobby),
        game_no,
        seat,
        action,
        by,
        autoplayed,
    })
}
