//! Wire encoding of cards, suits and actions: round trips and typed errors for junk.

use std::str::FromStr;

use wizard_core::vocabulary::game::{Action, Card, CardParseError, Suit};

#[test]
fn every_card_round_trips_through_its_code_and_json() {
    let deck = Card::deck();
    assert_eq!(deck.len(), 60);
    let codes: std::collections::BTreeSet<String> = deck.iter().map(Card::to_string).collect();
    assert_eq!(codes.len(), 60, "every card has its own code");
    for (i, card) in deck.iter().enumerate() {
        assert_eq!(card.index(), i);
        assert_eq!(Card::from_index(i), Some(*card));
        let code = card.to_string();
        assert_eq!(Card::from_str(&code), Ok(*card), "{code}");
        let json = serde_json::to_string(card).unwrap();
        assert_eq!(json, format!("\"{code}\""));
        assert_eq!(serde_json::from_str::<Card>(&json).unwrap(), *card);
    }
    assert_eq!(Card::from_index(60), None);
}

#[test]
fn card_codes_follow_the_protocol() {
    let cases = [
        ("h14", Card::suited(Suit::Hearts, 14)),
        ("c2", Card::suited(Suit::Clubs, 2)),
        ("d11", Card::suited(Suit::Diamonds, 11)),
        ("s10", Card::suited(Suit::Spades, 10)),
        ("W1", Some(Card::Wizard(1))),
        ("W4", Some(Card::Wizard(4))),
        ("J1", Some(Card::Jester(1))),
        ("J4", Some(Card::Jester(4))),
    ];
    for (code, card) in cases {
        let card = card.unwrap();
        assert_eq!(code.parse::<Card>(), Ok(card));
        assert_eq!(card.to_string(), code);
    }
    assert_eq!(Card::Wizard(2).suit(), None, "Wizards have no suit");
    assert_eq!(Card::Jester(3).suit(), None, "Jesters have no suit");
}

#[test]
fn junk_card_codes_get_typed_errors() {
    use CardParseError::*;
    type Expect = fn(&CardParseError) -> bool;
    let cases: &[(&str, Expect)] = &[
        ("", |e| *e == Empty),
        ("x9", |e| matches!(e, UnknownKind { .. })),
        ("H14", |e| matches!(e, UnknownKind { .. })),
        ("w1", |e| matches!(e, UnknownKind { .. })),
        ("é", |e| matches!(e, UnknownKind { .. })),
        ("h15", |e| matches!(e, BadNumber { .. })),
        ("h1", |e| matches!(e, BadNumber { .. })),
        ("h0", |e| matches!(e, BadNumber { .. })),
        ("h05", |e| matches!(e, BadNumber { .. })),
        ("h+5", |e| matches!(e, BadNumber { .. })),
        ("h", |e| matches!(e, BadNumber { .. })),
        ("h 5", |e| matches!(e, BadNumber { .. })),
        ("h999999999999", |e| matches!(e, BadNumber { .. })),
        ("W0", |e| matches!(e, BadNumber { .. })),
        ("W5", |e| matches!(e, BadNumber { .. })),
        ("J5", |e| matches!(e, BadNumber { .. })),
        ("Jx", |e| matches!(e, BadNumber { .. })),
    ];
    for (code, expected) in cases {
        let err = code.parse::<Card>().expect_err(code);
        assert!(expected(&err), "{code:?} gave {err:?}");
        assert!(!err.to_string().is_empty());
    }
    // Echoed input is truncated: a huge junk string cannot bloat an error message.
    let long = format!("x{}", "9".repeat(10_000));
    assert!(long.parse::<Card>().unwrap_err().to_string().len() < 120);
    for json in ["12", "null", "[\"h2\"]", "\"h15\"", "{}"] {
        assert!(serde_json::from_str::<Card>(json).is_err(), "{json}");
    }
}

#[test]
fn suits_are_full_words() {
    for (suit, name) in Suit::ALL
        .into_iter()
        .zip(["clubs", "diamonds", "hearts", "spades"])
    {
        assert_eq!(suit.to_string(), name);
        assert_eq!(name.parse::<Suit>(), Ok(suit));
        assert_eq!(serde_json::to_string(&suit).unwrap(), format!("\"{name}\""));
        assert_eq!(
            serde_json::from_str::<Suit>(&format!("\"{name}\"")).unwrap(),
            suit
        );
    }
    for junk in ["", "Hearts", "h", "none", "heart"] {
        assert!(junk.parse::<Suit>().is_err(), "{junk:?}");
    }
}

#[test]
fn actions_use_the_protocol_encoding() {
    let cases = [
        (r#"{"kind":"bid","bid":2}"#, Action::Bid { bid: 2 }),
        (
            r#"{"kind":"play","card":"h12"}"#,
            Action::Play {
                card: Card::suited(Suit::Hearts, 12).unwrap(),
            },
        ),
        (
            r#"{"kind":"choose_trump","suit":"hearts"}"#,
            Action::ChooseTrump { suit: Suit::Hearts },
        ),
    ];
    for (json, action) in cases {
        assert_eq!(serde_json::to_string(&action).unwrap(), json);
        assert_eq!(serde_json::from_str::<Action>(json).unwrap(), action);
    }
    // Unknown fields are ignored.
    let extra = r#"{"kind":"bid","bid":1,"note":"x"}"#;
    assert_eq!(
        serde_json::from_str::<Action>(extra).unwrap(),
        Action::Bid { bid: 1 }
    );
    for junk in [
        r#"{"kind":"bid"}"#,
        r#"{"kind":"bid","bid":-1}"#,
        r#"{"kind":"bid","bid":"2"}"#,
        r#"{"kind":"play","card":"h15"}"#,
        r#"{"kind":"choose_trump","suit":"none"}"#,
        r#"{"kind":"pass"}"#,
        r#"{"bid":2}"#,
        r#"[]"#,
    ] {
        assert!(serde_json::from_str::<Action>(junk).is_err(), "{junk}");
    }
}

#[test]
fn cards_and_suits_decode_from_escaped_strings_and_name_what_was_expected() {
    // JSON escapes go through the decoder's own buffer rather than the input text.
    assert_eq!(
        serde_json::from_str::<Card>(r#""\u0068\u0031\u0034""#).unwrap(),
        Card::suited(Suit::Hearts, 14).unwrap()
    );
    assert_eq!(
        serde_json::from_str::<Suit>(r#""sp\u0061des""#).unwrap(),
        Suit::Spades
    );
    for json in ["12", "null", "[\"h2\"]"] {
        let err = serde_json::from_str::<Card>(json).unwrap_err().to_string();
        assert!(err.contains("expected a string"), "{json}: {err}");
    }
    let err = serde_json::from_str::<Card>("\"h15\"")
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!("{} at line 1 column 5", "h15".parse::<Card>().unwrap_err())
    );
    let err = serde_json::from_str::<Suit>("\"x\"")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&"x".parse::<Suit>().unwrap_err().to_string()),
        "{err}"
    );
}

/// serde's own decoder for the action encoding, to hold the hand-written one to.
mod derived {
    use wizard_core::vocabulary::game::{Card, Suit};

    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    pub enum Action {
        Bid { bid: u8 },
        Play { card: Card },
        ChooseTrump { suit: Suit },
    }
}
use derived::Action as DerivedAction;

fn same_action(a: &Action, d: &DerivedAction) -> bool {
    match (a, d) {
        (Action::Bid { bid }, DerivedAction::Bid { bid: b }) => bid == b,
        (Action::Play { card }, DerivedAction::Play { card: c }) => card == c,
        (Action::ChooseTrump { suit }, DerivedAction::ChooseTrump { suit: s }) => suit == s,
        _ => false,
    }
}

/// serde_json's message without its position (the two decoders fail at different
/// points of the same input).
fn bare(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    full.strip_suffix(&suffix).unwrap_or(&full).to_string()
}

fn field_strategy() -> impl proptest::strategy::Strategy<Value = (String, String)> {
    use proptest::prelude::*;
    let key = prop_oneof![
        Just("kind"),
        Just("bid"),
        Just("card"),
        Just("suit"),
        Just("note"),
        Just("k\\u0069nd")
    ];
    let value = prop_oneof![
        Just("\"bid\""),
        Just("\"play\""),
        Just("\"choose_trump\""),
        Just("\"pass\""),
        Just("2"),
        Just("-1"),
        Just("300"),
        Just("2.0"),
        Just("null"),
        Just("\"h12\""),
        Just("\"W\\u0031\""),
        Just("\"h15\""),
        Just("\"hearts\""),
        Just("\"none\""),
        Just("[1,{\"a\":2}]"),
        Just("{}"),
    ];
    (key, value).prop_map(|(k, v)| (k.to_string(), v.to_string()))
}

proptest::proptest! {
    /// Any object of known and unknown fields in any order decodes to the same action,
    /// or fails with the same message, as with serde's derived decoder; the documented
    /// differences: a field of another kind placed before `kind`, and which of several
    /// faults an object with two `kind` keys is refused for.
    #[test]
    fn the_action_decoder_agrees_with_serdes(
        fields in proptest::collection::vec(field_strategy(), 0..6)
    ) {
        let json = format!(
            "{{{}}}",
            fields
                .iter()
                .map(|(k, v)| format!("\"{k}\":{v}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let kind_at = fields.iter().position(|(k, _)| k.starts_with('k'));
        let foreign_before_kind = fields.iter().enumerate().any(|(i, (k, _))| {
            ["bid", "card", "suit"].contains(&k.as_str()) && kind_at.is_none_or(|at| i < at)
        });
        // With two `kind` keys both fail, but serde's names the duplicate first.
        let kinds = fields.iter().filter(|(k, _)| k.starts_with('k')).count();
        let ours = serde_json::from_str::<Action>(&json);
        let theirs = serde_json::from_str::<DerivedAction>(&json);
        match (&ours, &theirs) {
            (Ok(a), Ok(d)) => proptest::prop_assert!(same_action(a, d), "{json}: {a:?} {d:?}"),
            (Err(_), Err(_)) if kinds > 1 => {}
            (Err(a), Err(d)) if !foreign_before_kind => {
                proptest::prop_assert_eq!(bare(a), bare(d), "{}", json)
            }
            (Err(_), _) if foreign_before_kind => {}
            _ => proptest::prop_assert!(false, "{json}: {ours:?} against {theirs:?}"),
        }
    }
}

#[test]
fn actions_decode_from_the_array_form_and_refuse_non_objects() {
    assert_eq!(
        serde_json::from_str::<Action>(r#"["bid",2]"#).unwrap(),
        Action::Bid { bid: 2 }
    );
    assert_eq!(
        serde_json::from_str::<Action>(r#"["choose_trump","clubs"]"#).unwrap(),
        Action::ChooseTrump { suit: Suit::Clubs }
    );
    assert!(serde_json::from_str::<Action>(r#"["play"]"#).is_err());
    for junk in ["null", "5", "\"bid\"", "[]"] {
        let ours = serde_json::from_str::<Action>(junk).unwrap_err();
        let theirs = serde_json::from_str::<DerivedAction>(junk).unwrap_err();
        assert_eq!(bare(&ours), bare(&theirs), "{junk}");
    }
}
