//! Player names and chat lines: what a line of plain text may be, the form a name is
//! shown in, and the keys that decide whether two names are "the same" within a lobby.
//!
//! One rule cleans both ([`clean`] for names, [`clean_text`] for chat): invisible
//! characters are removed (the Default_Ignorable_Code_Points, which the UTS 39 skeleton
//! drops: zero-width spaces and joiners, bidirectional embeddings, overrides, isolates
//! and marks, soft hyphens, Hangul fillers, variation selectors, tag characters,
//! invisible operators; and the interlinear annotation controls), characters that look
//! like a space count as white space (those whose UTS 39 confusable prototype is a
//! space: the braille blank, spaces of every width), the line is trimmed, and a control
//! character or a line or paragraph separator left inside refuses it. A line with nothing visible left is
//! empty. Chat keeps the joiners and variation selectors that shape the visible
//! characters around them (emoji sequences, Persian and Indic text); names drop them.
//!
//! A name is shown in Unicode NFKC (full-width `Ｈｏｓｔ` becomes `Host`) with every run
//! of white space one space. Two names collide when they share a key ([`keys`]): they
//! look alike (equal UTS 39 confusable skeletons compared without case, so `AIice`,
//! with a capital I, collides with `Alice`, `H0st` and a Greek `Ηοst` with `Host`), or
//! they are the same letters in another case (`Ian` and `ian`). The tables come from
//! the unicode-rs crates (`unicode-normalization`, `unicode-security`) instead of
//! hand-made lists: they follow the Unicode data files and are updated with them.

use std::collections::BTreeSet;

use unicode_normalization::UnicodeNormalization;
use unicode_security::GeneralSecurityProfile;
use unicode_security::confusable_detection::skeleton;

/// Longest player name, in characters, after cleaning.
pub const NAME_CHARS_MAX: usize = 20;

/// Why a name or a chat line was refused (the client's fault).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextError {
    /// Nothing visible is left.
    Empty,
    /// More characters than allowed.
    TooLong,
    /// A control character (newline, tab, escape, ...) or a line or paragraph
    /// separator: a name or a chat line is one line.
    Control,
}

impl TextError {
    /// The text of the `error` message for a name.
    pub fn name_message(self) -> &'static str {
        match self {
            TextError::Empty => "Enter a name.",
            TextError::TooLong => "Names are at most 20 characters.",
            TextError::Control => "Names are one line, without control characters.",
        }
    }

    /// The text of the `error` message for a chat line.
    pub fn chat_message(self) -> &'static str {
        match self {
            TextError::Empty => "Write something first.",
            TextError::TooLong => "Chat messages are at most 200 characters.",
            TextError::Control => "Chat messages are one line, without control characters.",
        }
    }
}

/// How a character shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Look {
    /// Not at all: a Default_Ignorable_Code_Point, which the UTS 39 skeleton drops
    /// (maps to nothing), or one of the interlinear annotation controls (U+FFF9-U+FFFB,
    /// format characters that are not default-ignorable).
    Invisible,
    /// As white space: white space, or a character whose UTS 39 confusable prototype is
    /// white space (U+2800 BRAILLE PATTERN BLANK, ...).
    Blank,
    /// As something.
    Visible,
}

/// How `c` shows. The skeleton is looked up only for characters outside ASCII that
/// are not identifier characters (UTS 39 Identifier_Status Allowed, never invisible
/// nor blank): one table search for most text.
fn look(c: char) -> Look {
    if c.is_whitespace() {
        return Look::Blank;
    }
    if c.is_ascii() || c.identifier_allowed() {
        return Look::Visible;
    }
    if matches!(c, '\u{fff9}'..='\u{fffb}') {
        return Look::Invisible;
    }
    let mut buf = [0u8; 4];
    let mut prototype = skeleton(c.encode_utf8(&mut buf)).peekable();
    if prototype.peek().is_none() {
        Look::Invisible
    } else if prototype.all(char::is_whitespace) {
        Look::Blank
    } else {
        Look::Visible
    }
}

/// Whether `c` ends a line: a control character (Unicode category Cc: newline, tab,
/// U+0085 NEXT LINE, ...) or U+2028 LINE SEPARATOR, U+2029 PARAGRAPH SEPARATOR.
fn breaks_line(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

/// The invisible characters chat keeps: they join or select the form of the visible
/// characters around them. U+200C ZERO WIDTH NON-JOINER, U+200D ZERO WIDTH JOINER and
/// the variation selectors (U+FE00-U+FE0F, U+E0100-U+E01EF).
fn shapes_text(c: char) -> bool {
    matches!(c, '\u{200c}' | '\u{200d}' | '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}')
}

/// The rule names and chat share: `raw` without its invisible characters (but those
/// `keep` accepts), trimmed of white space and blank-looking characters at both ends
/// and of kept invisible ones at the start (they shape nothing there).
/// [`TextError::Empty`] when nothing visible is left, [`TextError::Control`] when a
/// line break is left inside. Length is the caller's.
fn visible_line(
    raw: impl Iterator<Item = char>,
    keep: fn(char) -> bool,
) -> Result<Vec<(char, Look)>, TextError> {
    let mut line: Vec<(char, Look)> = raw
        .map(|c| (c, look(c)))
        .filter(|&(c, l)| l != Look::Invisible || keep(c))
        .collect();
    let start = line
        .iter()
        .position(|&(_, l)| l == Look::Visible)
        .ok_or(TextError::Empty)?;
    let end = line
        .iter()
        .rposition(|&(_, l)| l != Look::Blank)
        .map_or(start, |i| i + 1);
    line.truncate(end);
    line.drain(..start);
    if line.iter().any(|&(c, _)| breaks_line(c)) {
        return Err(TextError::Control);
    }
    Ok(line)
}

/// A line of text as sent to everyone (chat): [`visible_line`], keeping the joiners
/// and variation selectors of emoji and scripts; at most `chars_max` characters. The
/// text is not normalised: it arrives as typed.
pub fn clean_text(raw: &str, chars_max: usize) -> Result<String, TextError> {
    // Input of more than twice the limit is refused before looking at each character:
    // a message may be far larger than a line.
    if raw.chars().count() > chars_max * 2 {
        return Err(TextError::TooLong);
    }
    let line = visible_line(raw.chars(), shapes_text)?;
    if line.len() > chars_max {
        return Err(TextError::TooLong);
    }
    Ok(line.into_iter().map(|(c, _)| c).collect())
}

/// The form a name is shown in: NFKC, then [`visible_line`] (no invisible character
/// kept), every run of white space or blank-looking characters one space; at most
/// [`NAME_CHARS_MAX`] characters.
pub fn clean(raw: &str) -> Result<String, TextError> {
    // Long input is refused before normalising it: NFKC may expand a character into
    // several, and a name is short anyway.
    if raw.chars().count() > NAME_CHARS_MAX * 4 {
        return Err(TextError::TooLong);
    }
    let name = one_space(&visible_line(raw.nfkc(), |_| false)?);
    if name.chars().count() > NAME_CHARS_MAX {
        return Err(TextError::TooLong);
    }
    Ok(name)
}

/// The visible characters of `chars`, each run of blank ones one U+0020 space, none at
/// either end.
fn one_space(chars: &[(char, Look)]) -> String {
    let mut out = String::new();
    let mut blank = false;
    for &(c, l) in chars {
        match l {
            Look::Invisible => {}
            Look::Blank => blank = !out.is_empty(),
            Look::Visible => {
                if blank {
                    out.push(' ');
                    blank = false;
                }
                out.push(c);
            }
        }
    }
    out
}

/// The keys two names must not share within a lobby; names collide when either of
/// their keys is equal.
///
/// - How it looks: the UTS 39 confusable skeleton first (`I`, `1` and `|` become `l`,
///   `0` becomes `O`, Greek and Cyrillic look-alikes their Latin prototype), then lower
///   case, then the skeleton of that (`m` becomes `rn` in either case).
/// - Its letters: lower case first, then the skeleton, so that a name in another case
///   collides even where the two cases look different (`Ian` and `ian`).
///
/// Both are computed from the shown form ([`clean`]'s NFKC, no invisible character,
/// single spaces), so a name from anywhere (an AI seat's, a restored one) compares
/// like a cleaned one.
pub fn keys(name: &str) -> [String; 2] {
    let chars: Vec<(char, Look)> = name.nfkc().map(|c| (c, look(c))).collect();
    let shown = one_space(&chars);
    let lower = |s: String| -> String { s.chars().flat_map(char::to_lowercase).collect() };
    let looks = skeleton(&lower(skeleton(&shown).collect())).collect();
    let letters = skeleton(&lower(shown)).collect();
    [looks, letters]
}

/// Whether `a` and `b` are the same name in a lobby: they share a key ([`keys`]).
pub fn same(a: &str, b: &str) -> bool {
    let (a, b) = (keys(a), keys(b));
    a.iter().zip(&b).any(|(x, y)| x == y)
}

/// `wanted` when no name of `taken` is the same ([`same`]), else the first of
/// `wanted (2)`, `wanted (3)`... that none is. Everyone shown in a lobby (its seats,
/// humans and AI, and its spectators) is named through this, so no two of them, and
/// no chat line of two of them, can be told apart only by their ids.
pub fn unique<'a>(taken: impl IntoIterator<Item = &'a str>, wanted: &str) -> String {
    // Sets: a lobby may have many spectators (`MAX_SPECTATORS`), and up to two
    // candidates per taken name are tried.
    let mut sets: [BTreeSet<String>; 2] = Default::default();
    let mut count = 0;
    for name in taken {
        count += 1;
        for (set, key) in sets.iter_mut().zip(keys(name)) {
            set.insert(key);
        }
    }
    let free = |n: &str| keys(n).iter().zip(&sets).all(|(k, set)| !set.contains(k));
    if free(wanted) {
        return wanted.to_string();
    }
    // Each taken name has two keys, so it rules out at most two candidates: among
    // `2 * count + 1` of them one is free.
    (2..=2 * count + 2)
        .map(|i| format!("{wanted} ({i})"))
        .find(|n| free(n))
        .unwrap_or_else(|| wanted.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alikes_share_a_key() {
        for other in [
            "host",
            "HOST",
            "H\u{43e}st",
            "Ho\u{200b}st",
            "\u{ff28}\u{ff4f}st",
            "H0st",
            "\u{397}\u{3bf}st",
        ] {
            let shown = clean(other).unwrap();
            assert!(same(&shown, "Host"), "{other:?} shown as {shown:?}");
        }
        assert!(!same("Hist", "Host"));
        assert!(same("Ian", "ian") && same("Ian", "lan") && !same("ian", "lan"));
    }

    #[test]
    fn invisible_and_bidi_characters_are_removed_from_the_shown_name() {
        assert_eq!(clean("An\u{200b}n").unwrap(), "Ann");
        assert_eq!(clean("\u{202e}nnA").unwrap(), "nnA");
        assert_eq!(clean("A\u{2066}b\u{2069}").unwrap(), "Ab");
        assert_eq!(clean("A\u{2800}\u{3000} b\u{2800}").unwrap(), "A b");
        assert_eq!(clean("\u{200f}\u{200e}"), Err(TextError::Empty));
        assert_eq!(clean("\u{2800}\u{3164}"), Err(TextError::Empty));
        assert_eq!(clean("  "), Err(TextError::Empty));
        assert_eq!(clean("a\tb"), Err(TextError::Control));
        assert_eq!(clean("a\u{2028}b"), Err(TextError::Control));
        assert_eq!(clean(&"x".repeat(21)), Err(TextError::TooLong));
        assert_eq!(clean(&"x".repeat(20)).unwrap().len(), 20);
    }

    #[test]
    fn each_key_of_a_taken_name_rules_out_a_candidate() {
        // "Ian (2)" is taken by its letters, "lan (3)" by its looks.
        let taken = ["Ian", "ian (2)", "lan (3)"];
        assert_eq!(unique(taken, "Ian"), "Ian (4)");
    }
}
