//! The machinery every direction of the wire shares: the typed [`DecodeError`], the
//! two-pass decoder (envelope, then fields) and the encoder that never fails.

use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt;

use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

/// Why a frame is not a valid message (the sender's fault). The `Display` text is short
/// and human-readable, fit for an `error` message with code `invalid`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Not valid JSON (including trailing junk and nesting too deep).
    NotJson,
    /// Valid JSON, but not an object.
    NotAnObject,
    /// An object without a `type` field.
    MissingType,
    /// A `type` this direction does not know, truncated to [`TYPE_ECHO_CHARS_MAX`] chars.
    UnknownType { type_name: String },
    /// A required field is missing or has the wrong type or value (a junk card, a
    /// negative bid, a non-string `type`, ...). `type_name` is the message type whose
    /// fields failed, or `"message"` when the envelope itself did (a non-string `type`).
    BadField {
        type_name: &'static str,
        message: String,
    },
}

/// How much of an unknown `type` is echoed back in [`DecodeError::UnknownType`].
pub const TYPE_ECHO_CHARS_MAX: usize = 32;
/// How long a [`DecodeError::BadField`] message may grow (serde echoes input values).
pub const FIELD_MESSAGE_CHARS_MAX: usize = 160;

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::NotJson => f.write_str("message is not valid JSON"),
            DecodeError::NotAnObject => f.write_str("message must be a JSON object"),
            DecodeError::MissingType => f.write_str("message has no \"type\" field"),
            DecodeError::UnknownType { type_name } => {
                write!(f, "unknown message type {type_name:?}")
            }
            DecodeError::BadField { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for DecodeError {}

/// The wire types hold only strings, numbers, bools, sequences and string-keyed structs,
/// so serialization cannot fail; a failure would be a bug in a `Serialize` impl.
pub(super) fn to_json<T: Serialize>(value: &T) -> String {
    match serde_json::to_string(value) {
        Ok(text) => text,
        Err(e) => {
            debug_assert!(false, "wire types always serialize: {e}");
            String::new()
        }
    }
}

// ---------------------------------------------------------------------------------------
// Two-pass decoding: first the `type` (borrowed, other values skipped without
// allocation), then the fields of that one type straight into a plain struct. This
// avoids serde's internally-tagged path, which buffers the whole object into an
// intermediate tree first.
// ---------------------------------------------------------------------------------------

/// What the first pass found at the top level.
enum Envelope<'a> {
    NotObject,
    /// An object; its `type`, if it has one.
    Object(Option<Cow<'a, str>>),
}

/// Returns the message's `type`, after checking the whole text is one JSON object.
pub(super) fn envelope(text: &str) -> Result<Cow<'_, str>, DecodeError> {
    envelope_object(text)?.ok_or(DecodeError::MissingType)
}

pub(super) fn envelope_object(text: &str) -> Result<Option<Cow<'_, str>>, DecodeError> {
    match serde_json::from_str::<Envelope<'_>>(text) {
        Ok(Envelope::Object(type_name)) => Ok(type_name),
        Ok(Envelope::NotObject) => Err(DecodeError::NotAnObject),
        // Only our own visitors raise data errors (a non-string or repeated `type`).
        Err(e) if e.is_data() => Err(bad_field("message", &e)),
        Err(_) => Err(DecodeError::NotJson),
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Envelope<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EnvelopeVisitor)
    }
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut type_name: Option<Cow<'de, str>> = None;
        while let Some(KeyIsType(is_type)) = map.next_key::<KeyIsType>()? {
            if is_type {
                if type_name.is_some() {
                    return Err(de::Error::custom("duplicate field `type`"));
                }
                type_name = Some(map.next_value::<TypeName<'de>>()?.0);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Envelope::Object(type_name))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Envelope::NotObject)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Envelope::NotObject)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Envelope::NotObject)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Envelope::NotObject)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Envelope::NotObject)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Envelope::NotObject)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Envelope::NotObject)
    }
}

/// Whether an object key is `type`, found without allocating the key.
struct KeyIsType(bool);

impl<'de> Deserialize<'de> for KeyIsType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::vocabulary::serde_str::deserialize_with(deserializer, "an object key", |key| {
            Ok::<_, Infallible>(KeyIsType(key == "type"))
        })
    }
}

/// The `type` value: a string, borrowed from the input unless it has escapes.
struct TypeName<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for TypeName<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TypeNameVisitor)
    }
}

struct TypeNameVisitor;

impl<'de> Visitor<'de> for TypeNameVisitor {
    type Value = TypeName<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`type` to be a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(TypeName(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(TypeName(Cow::Owned(v.to_owned())))
    }
}

/// Second pass: the fields of one message type. `type` and unknown fields are ignored.
pub(super) fn fields<T: DeserializeOwned>(
    text: &str,
    type_name: &'static str,
) -> Result<T, DecodeError> {
    serde_json::from_str(text).map_err(|e| bad_field(type_name, &e))
}

pub(super) fn unknown_type(type_name: &str) -> DecodeError {
    DecodeError::UnknownType {
        type_name: type_name.chars().take(TYPE_ECHO_CHARS_MAX).collect(),
    }
}

/// serde_json's message without its " at line L column C" suffix (the client sends one
/// line), truncated because serde echoes offending values.
fn bad_field(type_name: &'static str, e: &serde_json::Error) -> DecodeError {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let bare = full.strip_suffix(&suffix).unwrap_or(&full);
    let mut message = format!("invalid {type_name}: ");
    message.extend(bare.chars().take(FIELD_MESSAGE_CHARS_MAX));
    DecodeError::BadField { type_name, message }
}
