//! One serde visitor for the values the core reads from a JSON string or object key
//! with a plain function (cards, suits, an action's kind and keys, the `type` key of a
//! message), straight from the input instead of through a `String` first.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};

/// Reads a string (or an object key) with `parse`. `expecting` completes serde's
/// "invalid type: ..., expected ..." when the value is not a string; `parse`'s error
/// becomes the message otherwise.
pub(crate) fn deserialize_with<'de, D, T, X>(
    deserializer: D,
    expecting: &'static str,
    parse: fn(&str) -> Result<T, X>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    X: fmt::Display,
{
    deserializer.deserialize_str(StrWith { expecting, parse })
}

struct StrWith<T, X> {
    expecting: &'static str,
    parse: fn(&str) -> Result<T, X>,
}

impl<T, X: fmt::Display> Visitor<'_> for StrWith<T, X> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        (self.parse)(text).map_err(E::custom)
    }
}
