//! Player names and chat text through `Server::handle` (PROTOCOL.md, lobbies and 6.4):
//! look-alike names are numbered in a lobby, blank names are refused, and a chat line
//! is one line of visible plain text.

use serde_json::{Value, json};
use wizard_core::vocabulary::io::{ConnId, Output};

use crate::driver::{Driver, config};

const HOST: ConnId = ConnId(1);
const GUEST: ConnId = ConnId(2);

/// A new server with `HOST` in a lobby of its own named `host` (plus the first AI seat,
/// Merlin, when `ai`), and `GUEST` connected but in no lobby; returns the lobby code.
fn lobby(host: &str, ai: bool) -> (Driver, String) {
    let mut d = Driver::new(config(&[]), 7);
    d.open(HOST, "10.0.0.1");
    d.hello(HOST, None);
    d.send_json(HOST, json!({"type": "create_lobby", "name": host}));
    let code = d.lobby_code(HOST).expect("a lobby");
    if ai {
        d.send_json(HOST, json!({"type": "add_ai"}));
        assert!(d.last_errors(HOST).is_empty(), "the AI seat is added");
    }
    d.open(GUEST, "10.0.0.2");
    d.hello(GUEST, None);
    (d, code)
}

/// The names shown in `conn`'s latest view of its lobby: seats, then spectators.
fn shown_names(d: &Driver, conn: ConnId) -> Vec<String> {
    let lobby = &d.state(conn).expect("a state")["lobby"];
    let seats = lobby["players"].as_array().into_iter().flatten();
    let seats = seats.filter_map(|p| p["name"].as_str());
    let watching = lobby["spectators"].as_array().into_iter().flatten();
    seats
        .chain(watching.filter_map(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// (the host's name, whether Merlin sits too, the name the guest asks for, the names
/// the host then sees). The guest's name is numbered when it looks like one taken.
const JOINS: &[(&str, bool, &str, &[&str])] = &[
    // Capital I, digit one and a vertical bar look like a small l.
    ("Alice", false, "AIice", &["Alice", "AIice (2)"]),
    ("Alice", false, "A1ice", &["Alice", "A1ice (2)"]),
    ("Bill", false, "BiII", &["Bill", "BiII (2)"]),
    ("Bill", false, "BilI", &["Bill", "BilI (2)"]),
    ("Bill", false, "Bi||", &["Bill", "Bi|| (2)"]),
    ("Host", true, "MerIin", &["Host", "Merlin", "MerIin (2)"]),
    // Small m looks like rn, in any case of the rest.
    ("Host", true, "rnerlin", &["Host", "Merlin", "rnerlin (2)"]),
    // Greek capital Eta and small omicron.
    (
        "Host",
        false,
        "\u{397}\u{3bf}st",
        &["Host", "\u{397}\u{3bf}st (2)"],
    ),
    // Digit zero looks like a capital O, in any case.
    ("Host", false, "H0st", &["Host", "H0st (2)"]),
    ("Zoe", false, "Z0e", &["Zoe", "Z0e (2)"]),
    ("ZOE", false, "z0e", &["ZOE", "z0e (2)"]),
    // The same letters in another case are the same name.
    ("Ian", false, "ian", &["Ian", "ian (2)"]),
    ("Merlin", false, "merlin", &["Merlin", "merlin (2)"]),
    // Blank-looking characters: a braille blank, Hangul fillers, spaces of every width.
    ("Alice", false, "Alice\u{2800}", &["Alice", "Alice (2)"]),
    (
        "Alice",
        false,
        "\u{2800}Alice\u{3164}",
        &["Alice", "Alice (2)"],
    ),
    (
        "Alice",
        false,
        "Al\u{115f}\u{1160}ice\u{ffa0}",
        &["Alice", "Alice (2)"],
    ),
    (
        "Alice",
        false,
        "\u{2003}Alice\u{3000}",
        &["Alice", "Alice (2)"],
    ),
    (
        "Alice",
        false,
        "A\u{2061}lice\u{e0041}",
        &["Alice", "Alice (2)"],
    ),
    (
        "Alice",
        false,
        "Ali\u{fe0f}ce\u{180e}\u{34f}",
        &["Alice", "Alice (2)"],
    ),
    ("Alice", false, "Alice\u{fff9}", &["Alice", "Alice (2)"]),
    // A blank inside a name shows as one space.
    (
        "Al ice",
        false,
        "Al\u{2800}\u{2003} ice",
        &["Al ice", "Al ice (2)"],
    ),
    // Different names stay apart.
    ("Alice", false, "Ali", &["Alice", "Ali"]),
    ("Bob", false, "Rob", &["Bob", "Rob"]),
    ("Host", false, "Hist", &["Host", "Hist"]),
    ("ian", false, "lan", &["ian", "lan"]),
    ("Zoe", false, "Zo\u{eb}", &["Zoe", "Zo\u{eb}"]),
];

/// Every row of [`JOINS`] where the guest, sending `kind` with the wanted name, is
/// shown otherwise than expected, as (wanted, names shown or the errors).
fn join_mismatches(kind: &str) -> Vec<(&'static str, Vec<String>)> {
    let mut wrong = Vec::new();
    for &(host, ai, wanted, expected) in JOINS {
        let (mut d, code) = lobby(host, ai);
        d.send_json(GUEST, json!({"type": kind, "code": code, "name": wanted}));
        let errors = d.last_errors(GUEST);
        let shown = shown_names(&d, HOST);
        if !errors.is_empty() {
            wrong.push((wanted, errors));
        } else if shown != expected {
            wrong.push((wanted, shown));
        }
    }
    wrong
}

#[test]
fn a_look_alike_joining_a_lobby_is_numbered() {
    assert_eq!(join_mismatches("join_lobby"), []);
}

#[test]
fn a_look_alike_spectator_is_numbered_and_a_later_seat_too() {
    assert_eq!(join_mismatches("spectate"), []);
    // The seat taken after the spectator is the numbered one.
    let (mut d, code) = lobby("Host", false);
    d.send_json(
        GUEST,
        json!({"type": "spectate", "code": code, "name": "Zoe"}),
    );
    d.open(ConnId(3), "10.0.0.3");
    d.hello(ConnId(3), None);
    d.send_json(
        ConnId(3),
        json!({"type": "join_lobby", "code": code, "name": "Z0e"}),
    );
    assert_eq!(shown_names(&d, HOST), ["Host", "Z0e (2)", "Zoe"]);
}

/// Names with nothing visible, or on more than one line: (name, why).
const REFUSED_NAMES: &[(&str, &str)] = &[
    ("\u{2800}", "a braille blank"),
    ("\u{3164}", "a Hangul filler"),
    ("\u{115f}\u{1160}\u{ffa0}", "Hangul fillers"),
    (
        "\u{2800}\u{200b}\u{feff}\u{ad}",
        "blank and zero-width characters",
    ),
    ("\u{202e}\u{2066}\u{200f}", "bidirectional controls"),
    (
        "\u{fe0f}\u{e0041}\u{2061}",
        "a variation selector, a tag, an invisible operator",
    ),
    ("\u{2003}\u{3000}\u{1680}", "spaces"),
    ("Al\u{2028}ice", "a line separator"),
    ("Al\u{2029}ice", "a paragraph separator"),
    ("Al\u{85}ice", "a next-line control"),
    ("Al\nice", "a newline"),
];

#[test]
fn a_name_with_nothing_visible_or_a_line_break_is_invalid() {
    let mut wrong = Vec::new();
    for &(name, why) in REFUSED_NAMES {
        for kind in ["join_lobby", "spectate", "create_lobby"] {
            let (mut d, code) = lobby("Host", false);
            d.send_json(GUEST, json!({"type": kind, "code": code, "name": name}));
            let errors = d.last_errors(GUEST);
            let shown = shown_names(&d, HOST);
            let in_lobby = d.lobby_code(GUEST).is_some();
            if errors != ["invalid"] || shown != ["Host"] || in_lobby {
                wrong.push((why, kind, errors, shown));
            }
        }
    }
    assert_eq!(wrong, []);
}

/// The `text` of every `chat` frame the last input sent to `conn`.
fn chat_lines(d: &Driver, conn: ConnId) -> Vec<String> {
    d.last
        .iter()
        .filter_map(|o| match o {
            Output::Send { conn: c, text, .. } if *c == conn => {
                let v: Value = serde_json::from_str(text).ok()?;
                (v["type"] == "chat").then(|| v["text"].as_str().unwrap_or("").to_string())
            }
            _ => None,
        })
        .collect()
}

/// (what is sent, the line everyone receives, or None when it is `invalid`).
const CHAT: &[(&str, Option<&str>)] = &[
    ("good luck", Some("good luck")),
    // Bidirectional controls are removed: the text reads in the order it was typed.
    ("\u{202e}kcul doog", Some("kcul doog")),
    ("a\u{202a}b\u{202b}c\u{202c}d\u{202d}e", Some("abcde")),
    ("a\u{2066}b\u{2067}c\u{2068}d\u{2069}e", Some("abcde")),
    ("a\u{200e}b\u{200f}c\u{61c}d", Some("abcd")),
    // Other invisible characters are removed.
    ("g\u{200b}g\u{feff}\u{ad}\u{2060}", Some("gg")),
    ("gg\u{e0067}\u{e0067}", Some("gg")),
    ("gg\u{fffa}", Some("gg")),
    // Joiners and variation selectors between visible characters stay: emoji sequences
    // and scripts that need them.
    ("\u{2764}\u{fe0f}", Some("\u{2764}\u{fe0f}")),
    (
        "\u{1f469}\u{200d}\u{1f4bb}",
        Some("\u{1f469}\u{200d}\u{1f4bb}"),
    ),
    ("\u{645}\u{200c}\u{6cc}", Some("\u{645}\u{200c}\u{6cc}")),
    // At the start they join nothing.
    ("\u{200d}\u{fe0f}gg", Some("gg")),
    // Blank-looking characters at either end are trimmed like spaces.
    ("\u{2800}gg\u{3164}\u{2003}", Some("gg")),
    // Nothing visible: empty.
    ("\u{200b}\u{200c}\u{200d}\u{2060}\u{feff}", None),
    ("\u{202e}", None),
    ("\u{fe0f}\u{200d}", None),
    ("\u{2800}\u{2800}", None),
    ("\u{3164}\u{115f}\u{1160}\u{ffa0}", None),
    (" \u{3000}\u{2003}\u{200a} ", None),
    // More than one line.
    ("good\u{2028}luck", None),
    ("good\u{2029}luck", None),
    ("good\nluck", None),
    ("good\u{85}luck", None),
];

#[test]
fn chat_is_one_line_of_visible_plain_text() {
    let (mut d, code) = lobby("Host", false);
    d.send_json(
        GUEST,
        json!({"type": "spectate", "code": code, "name": "Zoe"}),
    );
    let mut wrong = Vec::new();
    for &(sent, received) in CHAT {
        // A minute apart, so CHAT_RATE never refuses a line: a refusal is for the text.
        d.advance_ms(60_000);
        d.send_json(HOST, json!({"type": "chat", "text": sent}));
        let errors = d.last_errors(HOST);
        let (to_host, to_guest) = (chat_lines(&d, HOST), chat_lines(&d, GUEST));
        let right = match received {
            Some(line) => errors.is_empty() && to_host == [line] && to_guest == [line],
            None => errors == ["invalid"] && to_host.is_empty() && to_guest.is_empty(),
        };
        if !right {
            wrong.push((sent, errors, to_guest));
        }
    }
    assert_eq!(wrong, []);
}
