//! Lean frames (PROTOCOL.md 7.5): merge patches built, applied and composed on JSON
//! text, and every view of every golden game rebuilt from deltas byte for byte, for
//! every seat and a spectator. (The protocol transcripts are replayed with deltas in
//! `transcripts.rs`; the server's deltas in whole games in `server_game.rs`.)

// A test of the core, not the core: it reads the golden files.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use proptest::prelude::*;
use serde::Deserialize;
use wizard_core::vocabulary::game::{Action, Event, Game, Options, Seat};
use wizard_core::vocabulary::wire::flat::{self, Flat};
use wizard_core::vocabulary::wire::held::{self, HeldState, Taken};
use wizard_core::vocabulary::wire::merge_patch::{self, NotExpressible};

fn applied(target: &str, patch: &str) -> String {
    let mut out = String::new();
    merge_patch::apply(target, patch, &mut out).unwrap();
    out
}

/// Small JSON objects over few keys, with nulls, nested objects and arrays: what makes
/// merge patches hard (deletion, re-adding at the end, objects merging).
fn json_value(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        (0..3u8).prop_map(|n| n.to_string()),
        Just("\"x\"".to_string()),
        Just("[1,null]".to_string()),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    prop_oneof![leaf, json_object(depth - 1)].boxed()
}

fn json_object(depth: u32) -> BoxedStrategy<String> {
    prop::collection::vec((0..4u8, json_value(depth)), 0..4)
        .prop_map(|members| {
            let mut seen = Vec::new();
            let parts: Vec<String> = members
                .into_iter()
                .filter(|(k, _)| {
                    let fresh = !seen.contains(k);
                    seen.push(*k);
                    fresh
                })
                .map(|(k, v)| format!("\"k{k}\":{v}"))
                .collect();
            format!("{{{}}}", parts.join(","))
        })
        .boxed()
}

fn old_of(p: &(String, String)) -> &String {
    &p.0
}

fn new_of(p: &(String, String)) -> &String {
    &p.1
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A slow reader's merged delta has the effect of both: composing never changes
    /// what the client ends up holding, and refuses only where one patch cannot say it.
    #[test]
    fn composed_patches_apply_as_both(t in json_object(2), a in json_object(2), b in json_object(2)) {
        let both = applied(&applied(&t, &a), &b);
        let mut c = String::new();
        match merge_patch::compose(&a, &b, &mut c) {
            Ok(()) => prop_assert_eq!(applied(&t, &c), both),
            Err(NotExpressible) => prop_assert!(c.is_empty()),
        }
    }

    /// Diffing objects with their members marked writes what diffing their texts does,
    /// with `skip` too, also when their members differ.
    #[test]
    fn marked_diffs_equal_text_diffs(old in json_object(3), new in json_object(3), skip in 0..5u8) {
        let skip_key = format!("\"k{skip}\"");
        let skip = [skip_key.as_str()];
        let (mut by_text, mut by_marks) = (String::new(), String::new());
        let text = merge_patch::diff(&old, &new, &skip, &mut by_text);
        let (Ok(a), Ok(b)) = (Flat::new(old.clone()), Flat::new(new.clone())) else {
            panic!("objects are marked");
        };
        let marks = flat::diff(&a, &b, &skip, &mut by_marks);
        prop_assert_eq!((marks, by_marks), (text, by_text));
    }

    /// Objects of the same members (the common case of a game's states) go through the
    /// slice-per-member path; their patches still equal the text's.
    #[test]
    fn marked_diffs_of_same_members_equal_text_diffs(
        values in prop::collection::vec((json_value(2), json_value(2)), 1..5),
        inner in prop::collection::vec((json_value(1), json_value(1)), 0..4),
    ) {
        let object = |pick: fn(&(String, String)) -> &String| {
            let inner: Vec<String> = inner.iter().enumerate().map(|(i, p)| format!("\"i{i}\":{}", pick(p))).collect();
            let mut members: Vec<String> = values.iter().enumerate().map(|(i, p)| format!("\"k{i}\":{}", pick(p))).collect();
            members.push(format!("\"o\":{{\"n\":{{{}}},\"z\":1}}", inner.join(",")));
            format!("{{{}}}", members.join(","))
        };
        let (old, new) = (object(old_of), object(new_of));
        let (mut by_text, mut by_marks) = (String::new(), String::new());
        let text = merge_patch::diff(&old, &new, &["\"k0\""], &mut by_text);
        let (Ok(a), Ok(b)) = (Flat::new(old.clone()), Flat::new(new.clone())) else {
            panic!("objects are marked");
        };
        let marks = flat::diff(&a, &b, &["\"k0\""], &mut by_marks);
        prop_assert_eq!((marks, by_marks), (text, by_text));
    }

    /// Marking an object after another (reusing the marks of the members they start
    /// with alike) marks it as reading it whole does, whatever the two objects.
    #[test]
    fn marks_taken_from_the_last_object_equal_marks_read_anew(
        old in json_object(3),
        new in json_object(3),
        cut in 0..64usize,
    ) {
        // Half the cases: `new` starts as `old` does, up to some member of it.
        let members = merge_patch::members(&old).expect("an object");
        let kept = members.len().min(cut % 8);
        let (new, reused) = if cut >= 32 {
            (new, false)
        } else {
            let mut head: Vec<String> = members[..kept].iter().map(|(k, v)| format!("{k}:{v}")).collect();
            if let Some(rest) = merge_patch::members(&new) {
                head.extend(rest.iter().map(|(k, v)| format!("{k}:{v}")));
            }
            (format!("{{{}}}", head.join(",")), kept > 0)
        };
        let last = Flat::new(old.clone()).expect("an object");
        let read = Flat::new(new.clone());
        let after = Flat::new_after(new.clone(), &last);
        prop_assert_eq!(&after, &read);
        if reused {
            prop_assert!(read.is_ok(), "{} is an object", new);
        }
    }

    /// A diff applied to the old object gives the new one byte for byte, or says it
    /// cannot.
    #[test]
    fn diffs_apply_to_exactly_the_new_object(old in json_object(2), new in json_object(2)) {
        let mut patch = String::new();
        if merge_patch::diff(&old, &new, &[], &mut patch).is_ok() {
            prop_assert_eq!(applied(&old, &patch), new);
        } else {
            prop_assert!(patch.is_empty());
        }
    }
}

#[test]
fn diff_leaves_equal_members_and_skipped_ones_out() {
    let mut p = String::new();
    merge_patch::diff(
        r#"{"type":"state","a":{"b":1,"c":[1]},"events":[1]}"#,
        r#"{"type":"state","a":{"b":2,"c":[1]},"events":[2]}"#,
        &["\"type\"", "\"events\""],
        &mut p,
    )
    .unwrap();
    assert_eq!(p, r#"{"a":{"b":2}}"#);
    p.clear();
    merge_patch::diff(r#"{"a":{"b":1}}"#, r#"{"a":{"b":1}}"#, &[], &mut p).unwrap();
    assert_eq!(p, "{}");
}

#[derive(Deserialize)]
struct Golden {
    players: u8,
    options: Options,
    seed: u64,
    actions: Vec<(u8, Action)>,
}

/// The `state` text of `seat` (`Seat::MAX`: a spectator) as the server lays it out,
/// without a lobby.
fn view(game: &Game, seat: Seat, events: &[Event]) -> String {
    let mut text = String::from(r#"{"type":"state","lobby":null,"game":{"you":"#);
    if seat == Seat::MAX {
        text.push_str("null");
    } else {
        text.push_str(&seat.to_string());
    }
    text.push_str(r#","observation":"#);
    game.observation_json()
        .write_seat(game, seat, |_| None, &mut text);
    text.push_str(r#"},"events":"#);
    text.push_str(&serde_json::to_string(events).unwrap());
    text.push('}');
    text
}

#[test]
fn every_view_of_every_golden_game_rebuilds_from_deltas() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/games");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "golden games present: {files:?}");
    for path in files {
        let name = path.display();
        let golden: Golden =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut events = Vec::new();
        let mut game = Game::new(golden.players, golden.options, golden.seed, &mut events).unwrap();
        let seats: Vec<Seat> = (0..golden.players).chain([Seat::MAX]).collect();
        let mut last: Vec<String> = seats.iter().map(|&s| view(&game, s, &events)).collect();
        let mut held: Vec<HeldState> = last
            .iter()
            .map(|text| {
                let mut h = HeldState::default();
                assert_eq!(h.take(&held::numbered_state(text, 1)), Ok(Taken::Full));
                h
            })
            .collect();
        let (mut deltas, mut full, mut plain_bytes, mut delta_bytes) = (0, 0, 0, 0);
        for (i, &(seat, action)) in golden.actions.iter().enumerate() {
            events.clear();
            game.apply(seat, action, &mut events).unwrap();
            for (k, &viewer) in seats.iter().enumerate() {
                let text = view(&game, viewer, &events);
                let seq = held[k].seq().unwrap() + 1;
                let mut frame = String::new();
                let by_text = held::delta_frame(&last[k], &text, seq, &mut frame);
                // The server's builder (members marked) writes the same frame.
                let mut marked = String::new();
                let flats = (Flat::new(last[k].clone()), Flat::new(text.clone()));
                let (Ok(old_flat), Ok(new_flat)) = flats else {
                    panic!("{name}: a view is not an object");
                };
                let by_marks = held::delta_frame_flat(&old_flat, &new_flat, seq, &mut marked);
                assert_eq!((by_marks, &marked), (by_text, &frame), "{name}: action {i}");
                if by_text.is_ok() {
                    assert_eq!(held[k].take(&frame), Ok(Taken::Delta));
                    deltas += 1;
                } else {
                    frame = held::numbered_state(&text, seq);
                    assert_eq!(held[k].take(&frame), Ok(Taken::Full));
                    full += 1;
                }
                assert_eq!(
                    held[k].text(),
                    text,
                    "{name}: action {i}, viewer {viewer}: {frame}"
                );
                plain_bytes += text.len();
                delta_bytes += frame.len();
                last[k] = text;
            }
        }
        // Deltas must be the rule and a fraction of the bytes, or they are not lean
        // (arrays go whole: the cards played in the round are most of a delta).
        assert!(deltas > 10 * full, "{name}: {deltas} deltas, {full} full");
        assert!(
            delta_bytes * 2 < plain_bytes,
            "{name}: {delta_bytes} bytes with deltas, {plain_bytes} without"
        );
    }
}
