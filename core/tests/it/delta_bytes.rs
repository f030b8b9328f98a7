//! Where the bytes of lean frames (PROTOCOL.md 7.5) go over one whole game of four
//! humans: each seat's frames split into full `state`s, the `delta` envelope, the
//! events, the patch's nesting and each field of the observation, with the checks that
//! make the split a lower bound within the contract: every patch member is a change
//! (nothing unchanged is sent), and every full `state` after the first is one a merge
//! patch cannot say. Print it with
//! `cargo test -p wizard-core --test it delta_bytes_by_field -- --nocapture`.

use std::collections::BTreeMap;

use wizard_core::vocabulary::wire::held::{self, HeldState, Taken};
use wizard_core::vocabulary::wire::merge_patch::members;

use super::server_game::four_humans_frames;

/// The value of member `key` (without quotes) of the object `text`.
fn member<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    members(text)?
        .into_iter()
        .find(|(k, _)| k.get(1..k.len() - 1) == Some(key))
        .map(|(_, v)| v)
}

/// The objects of a patch that only carry the changes inside them (their braces, keys
/// and commas are the patch's nesting); members of every other object are fields.
const NESTING: &[&str] = &["", "lobby", "game", "game.observation"];

/// Adds the bytes of `patch` (an object at `path`) to `parts`, by field. Each member is
/// charged its key, colon, value and the comma before it.
fn split_patch(patch: &str, path: &str, parts: &mut BTreeMap<String, usize>) {
    let ms = members(patch).expect("a patch is an object");
    *parts.entry("nesting".into()).or_default() += 2;
    for (i, (k, v)) in ms.iter().enumerate() {
        let name = k.trim_matches('"');
        let at = if path.is_empty() {
            name.to_string()
        } else {
            format!("{path}.{name}")
        };
        let own = k.len() + 1 + usize::from(i > 0);
        if v.starts_with('{') && NESTING.contains(&at.as_str()) {
            *parts.entry("nesting".into()).or_default() += own;
            split_patch(v, &at, parts);
        } else {
            *parts.entry(at).or_default() += own + v.len();
        }
    }
}

/// Asserts that every member of `patch` changes `old` (the object it applies to): no
/// unchanged value is sent. Objects the patch merges into are checked member by member.
fn assert_only_changes(old: &str, patch: &str, path: &str) {
    for (k, v) in members(patch).expect("a patch is an object") {
        let key = k.trim_matches('"');
        let before = member(old, key);
        match before {
            Some(b) if v.starts_with('{') && b.starts_with('{') => {
                assert_only_changes(b, v, &format!("{path}.{key}"));
            }
            _ => assert_ne!(before, Some(v), "{path}.{key} sent unchanged"),
        }
    }
}

/// One seat's frames from `started` on split by what they carry (bytes), checked as
/// the module says.
fn split_seat(all: &[String], started: usize) -> BTreeMap<String, usize> {
    let mut parts = BTreeMap::<String, usize>::new();
    let mut held = HeldState::default();
    for frame in &all[..started] {
        held.take(frame).expect("frames parse");
    }
    let frames = &all[started..];
    for (i, frame) in frames.iter().enumerate() {
        let before = held.text().to_string();
        let taken = held.take(frame).expect("frames parse");
        match taken {
            Taken::Full => {
                *parts.entry("full states".into()).or_default() += frame.len();
                *parts.entry("full states (count)".into()).or_default() += 1;
                if i > 0 {
                    let mut out = String::new();
                    assert!(
                        held::delta_frame(&before, held.text(), 1, &mut out).is_err(),
                        "a full state where a delta could say it: {out}"
                    );
                }
            }
            Taken::Delta => {
                let patch = member(frame, "patch").expect("a patch");
                let events = member(frame, "events").expect("events");
                assert_only_changes(&before, patch, "state");
                split_patch(patch, "", &mut parts);
                let events_bytes = r#","events":"#.len() + events.len();
                *parts.entry("events".into()).or_default() += events_bytes;
                *parts.entry("envelope".into()).or_default() +=
                    frame.len() - patch.len() - events_bytes;
                *parts.entry("deltas (count)".into()).or_default() += 1;
            }
            other => panic!("{other:?} in a seat's game frames"),
        }
    }
    let counted: usize = parts
        .iter()
        .filter(|(k, _)| !k.ends_with("(count)"))
        .map(|(_, v)| v)
        .sum();
    let total: usize = frames.iter().map(String::len).sum();
    assert_eq!(counted, total, "every byte charged once");
    parts
}

#[test]
fn delta_bytes_by_field() {
    let seats = four_humans_frames(true).map(|(frames, started)| split_seat(&frames, started));
    let mut rows: Vec<&String> = seats.iter().flat_map(|s| s.keys()).collect();
    rows.sort_by_key(|k| std::cmp::Reverse(seats[0].get(*k).copied().unwrap_or(0)));
    rows.dedup();
    let cell = |s: &BTreeMap<String, usize>, k: &str| s.get(k).copied().unwrap_or(0);
    eprintln!(
        "{:<36}{:>9}{:>9}{:>9}{:>9}",
        "bytes by part", "seat 0", "1", "2", "3"
    );
    for k in &rows {
        let c = seats.each_ref().map(|s| cell(s, k));
        eprintln!("{k:<36}{:>9}{:>9}{:>9}{:>9}", c[0], c[1], c[2], c[3]);
    }
    // What the contract fixes whatever the builder does: full states where a merge
    // patch cannot say the change (a member becoming null), the delta's own members,
    // the events it carries, and the objects holding the fields that change.
    let fixed = ["full states", "envelope", "events", "nesting"];
    for (i, s) in seats.iter().enumerate() {
        let total: usize = s
            .iter()
            .filter(|(k, _)| !k.ends_with("(count)"))
            .map(|(_, v)| v)
            .sum();
        let fixed_bytes: usize = fixed.iter().map(|k| cell(s, k)).sum();
        eprintln!(
            "seat {i}: {total} bytes; {fixed_bytes} fixed by the contract, {} of changed fields \
             (each sent once per change, arrays whole)",
            total - fixed_bytes
        );
        assert!(cell(s, "deltas (count)") > 10 * cell(s, "full states (count)"));
    }
}
