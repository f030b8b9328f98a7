//! Decoding an [`Action`] (`{"kind":"play","card":"h12"}`) field by field.
//!
//! serde's derived decoder for an internally tagged enum first copies the whole object
//! into a buffer, then decodes the variant from that copy; an action arrives with every
//! move and every view lists up to sixteen of them, so this decoder reads the fields
//! straight from the input instead. It accepts what the derived one accepts (fields in
//! any order, unknown fields ignored, the `[kind, value]` array form) and refuses
//! with the same messages (unknown variant, missing, duplicate or mistyped field; a
//! property test holds it to serde's). Two differences, for malformed input only: a
//! field of another kind that comes before `kind` (`{"card":5,"kind":"bid","bid":1}`)
//! is checked as that field, where the derived decoder ignored it; and an object with
//! two `kind` keys may be refused for a fault met before the second one.

use std::convert::Infallible;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::card::{Card, Suit};
use super::types::Action;
use crate::vocabulary::serde_str::deserialize_with;

/// The `kind` of an action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bid,
    Play,
    ChooseTrump,
}

const KINDS: &[&str] = &["bid", "play", "choose_trump"];

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_with(deserializer, "variant identifier", |name| match name {
            "bid" => Ok(Kind::Bid),
            "play" => Ok(Kind::Play),
            "choose_trump" => Ok(Kind::ChooseTrump),
            // serde's own text for an unknown variant.
            _ => Err(<de::value::Error as de::Error>::unknown_variant(
                name, KINDS,
            )),
        })
    }
}

/// A key of an action object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Kind,
    Bid,
    Card,
    Suit,
    Other,
}

impl Field {
    /// The kind this field belongs to (`None` for `kind` and unknown fields).
    fn kind(self) -> Option<Kind> {
        match self {
            Field::Bid => Some(Kind::Bid),
            Field::Card => Some(Kind::Play),
            Field::Suit => Some(Kind::ChooseTrump),
            Field::Kind | Field::Other => None,
        }
    }
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_with(deserializer, "field identifier", |key| {
            Ok::<_, Infallible>(match key {
                "kind" => Field::Kind,
                "bid" => Field::Bid,
                "card" => Field::Card,
                "suit" => Field::Suit,
                _ => Field::Other,
            })
        })
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ActionVisitor)
    }
}

struct ActionVisitor;

/// Decodes a field's value into its slot, refusing a second one before looking at it.
fn once<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    name: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

fn required<T, E: de::Error>(slot: Option<T>, name: &'static str) -> Result<T, E> {
    slot.ok_or_else(|| E::missing_field(name))
}

impl<'de> Visitor<'de> for ActionVisitor {
    type Value = Action;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("internally tagged enum Action")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Action, A::Error> {
        let mut kind: Option<Kind> = None;
        let mut bid: Option<u8> = None;
        let mut card: Option<Card> = None;
        let mut suit: Option<Suit> = None;
        while let Some(field) = map.next_key::<Field>()? {
            // A field of another kind than the one named is ignored, as an unknown one.
            let wanted = match (field.kind(), kind) {
                (Some(own), Some(named)) => own == named,
                _ => true,
            };
            match field {
                Field::Kind => once(&mut map, &mut kind, "kind")?,
                Field::Bid if wanted => once(&mut map, &mut bid, "bid")?,
                Field::Card if wanted => once(&mut map, &mut card, "card")?,
                Field::Suit if wanted => once(&mut map, &mut suit, "suit")?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(match required(kind, "kind")? {
            Kind::Bid => Action::Bid {
                bid: required(bid, "bid")?,
            },
            Kind::Play => Action::Play {
                card: required(card, "card")?,
            },
            Kind::ChooseTrump => Action::ChooseTrump {
                suit: required(suit, "suit")?,
            },
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Action, A::Error> {
        let Some(kind) = seq.next_element::<Kind>()? else {
            return Err(de::Error::missing_field("kind"));
        };
        let missing = |name| de::Error::invalid_length(1, &name);
        Ok(match kind {
            Kind::Bid => Action::Bid {
                bid: seq
                    .next_element()?
                    .ok_or_else(|| missing("struct variant Action::Bid with 1 element"))?,
            },
            Kind::Play => Action::Play {
                card: seq
                    .next_element()?
                    .ok_or_else(|| missing("struct variant Action::Play with 1 element"))?,
            },
            Kind::ChooseTrump => Action::ChooseTrump {
                suit: seq
                    .next_element()?
                    .ok_or_else(|| missing("struct variant Action::ChooseTrump with 1 element"))?,
            },
        })
    }
}
