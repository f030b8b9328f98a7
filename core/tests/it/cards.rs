//! Wire encoding of cards, suits and actions: round trips and typed errors for junk.

use std::str::FromStr;

use wizard_core::game::{Action, Card, CardParseError, Suit};

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
