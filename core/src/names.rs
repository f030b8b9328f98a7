//! Player names: what a name may be, the form it is shown in, and the key that decides
//! whether two names are "the same" within a lobby.
//!
//! A name is shown in Unicode NFKC (full-width `Ｈｏｓｔ` becomes `Host`) with every
//! invisible character removed: zero-width spaces and joiners, bidirectional overrides
//! and isolates, soft hyphens, variation selectors (the Default_Ignorable_Code_Points of
//! UTS 39). Two names collide when their uniqueness keys are equal: the shown form,
//! lower-cased, then reduced to its UTS 39 confusable skeleton, so `host`, `HOST` and a
//! Cyrillic `Hоst` all collide with `Host`. The tables come from the unicode-rs crates
//! (`unicode-normalization`, `unicode-security`) instead of hand-made lists: they
//! follow the Unicode data files and are updated with them.

use unicode_normalization::UnicodeNormalization;
use unicode_security::confusable_detection::skeleton;

/// Longest player name, in characters, after cleaning and trimming.
pub const NAME_CHARS_MAX: usize = 20;

/// Why a name was refused (the client's fault).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameError {
    /// Nothing visible is left.
    Empty,
    /// More than [`NAME_CHARS_MAX`] characters.
    TooLong,
    /// A control character (newline, tab, escape, ...).
    Control,
}

impl NameError {
    /// The text for the `error` message.
    pub fn message(self) -> &'static str {
        match self {
            NameError::Empty => "Enter a name.",
            NameError::TooLong => "Names are at most 20 characters.",
            NameError::Control => "Names may not contain control characters.",
        }
    }
}

/// Whether `c` is invisible: a Default_Ignorable_Code_Point, which the UTS 39
/// skeleton drops (and so maps to nothing). Bidirectional controls (U+202A-U+202E,
/// U+2066-U+2069, U+200E, U+200F, U+061C) and zero-width characters are among them.
fn is_invisible(c: char) -> bool {
    let mut buf = [0u8; 4];
    skeleton(c.encode_utf8(&mut buf)).next().is_none()
}

/// The form a name is shown in: NFKC, invisible characters removed, trimmed; at most
/// [`NAME_CHARS_MAX`] characters and no control characters.
pub fn clean(raw: &str) -> Result<String, NameError> {
    // Long input is refused before normalising it: NFKC may expand a character into
    // several, and a name is short anyway.
    if raw.chars().count() > NAME_CHARS_MAX * 4 {
        return Err(NameError::TooLong);
    }
    let shown: String = raw.nfkc().filter(|&c| !is_invisible(c)).collect();
    let name = shown.trim();
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.chars().count() > NAME_CHARS_MAX {
        return Err(NameError::TooLong);
    }
    if name.chars().any(char::is_control) {
        return Err(NameError::Control);
    }
    Ok(name.to_string())
}

/// The key two names must not share within a lobby: lower case, then the UTS 39
/// confusable skeleton (look-alike letters of other scripts map to one prototype).
pub fn key(name: &str) -> String {
    let lower: String = name.nfkc().flat_map(char::to_lowercase).collect();
    skeleton(&lower).collect()
}

/// `wanted` when no name of `taken` looks the same ([`key`]), else the first of
/// `wanted (2)`, `wanted (3)`... that none does. Everyone shown in a lobby (its seats,
/// humans and AI, and its spectators) is named through this, so no two of them, and
/// no chat line of two of them, can be told apart only by their ids.
pub fn unique<'a>(taken: impl IntoIterator<Item = &'a str>, wanted: &str) -> String {
    // A set: a lobby may have many spectators (`MAX_SPECTATORS`), and up to one
    // candidate per name is tried.
    let keys: std::collections::BTreeSet<String> = taken.into_iter().map(key).collect();
    let free = |n: &str| !keys.contains(&key(n));
    if free(wanted) {
        return wanted.to_string();
    }
    // Among `keys.len() + 1` candidates one is free.
    (2..=keys.len() + 2)
        .map(|i| format!("{wanted} ({i})"))
        .find(|n| free(n))
        .unwrap_or_else(|| wanted.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alikes_share_a_key() {
        let host = key("Host");
        for other in [
            "host",
            "HOST",
            "H\u{43e}st",
            "Ho\u{200b}st",
            "\u{ff28}\u{ff4f}st",
        ] {
            let shown = clean(other).unwrap();
            assert_eq!(key(&shown), host, "{other:?} shown as {shown:?}");
        }
        assert_ne!(key("Hist"), host);
    }

    #[test]
    fn invisible_and_bidi_characters_are_removed_from_the_shown_name() {
        assert_eq!(clean("An\u{200b}n").unwrap(), "Ann");
        assert_eq!(clean("\u{202e}nnA").unwrap(), "nnA");
        assert_eq!(clean("A\u{2066}b\u{2069}").unwrap(), "Ab");
        assert_eq!(clean("\u{200f}\u{200e}"), Err(NameError::Empty));
        assert_eq!(clean("  "), Err(NameError::Empty));
        assert_eq!(clean("a\tb"), Err(NameError::Control));
        assert_eq!(clean(&"x".repeat(21)), Err(NameError::TooLong));
        assert_eq!(clean(&"x".repeat(20)).unwrap().len(), 20);
    }
}
