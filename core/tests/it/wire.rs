//! Wire messages (PROTOCOL.md sections 2 and 4): decode tables for every message and
//! for junk, encode/decode round trips, ignored unknown fields, and no panics on
//! arbitrary input.

use proptest::prelude::*;
use wizard_core::vocabulary::game::{
    Action, AiLevel, BidRestriction, Card, Event, Game, Observation, Options, Placing, PlayedCard,
    Suit,
};
use wizard_core::vocabulary::load::LoadLevel;
use wizard_core::vocabulary::wire::{
    AiErrorCode, AiHealth, AiReply, AiRequest, ClientMessage, CloseCode, DecodeError, ErrorCode,
    GameView, Health, LobbyStatus, LobbyView, PlayerView, ServerMessage, decode_ai_reply,
    decode_ai_request, decode_client, decode_health, decode_server, encode, encode_ai_reply,
    encode_ai_request, encode_client, encode_health, peek_request_id,
};

/// The observation example of RULES.md, verbatim.
const RULES_OBSERVATION: &str = r#"{
  "players": 4, "round": 3, "rounds": 15, "phase": "playing",
  "dealer": 2, "to_act": 2, "turn_deadline_ms": null,
  "trump_card": "W2", "trump_suit": "hearts",
  "hand": ["h10", "c3"],
  "bids": [1, 1, 0, 2], "has_bid": [true, true, true, true],
  "tricks_won": [0, 1, 0, 0],
  "trick": [{"player": 1, "card": "h2"}], "leader": 1,
  "last_trick": {"cards": [{"player": 3, "card": "s9"}, {"player": 0, "card": "s4"},
                           {"player": 1, "card": "W1"}, {"player": 2, "card": "s2"}], "winner": 1},
  "played": ["s9", "s4", "W1", "s2", "h2"],
  "scores": [20, -10, 30, 0], "round_scores": [[20, 30, 10, -10], [0, -40, 20, 10]],
  "options": {"hidden_bids": false, "bid_restriction": "none", "turn_seconds": 0},
  "legal_actions": [{"kind": "play", "card": "h10"}]
}"#;

fn card(code: &str) -> Card {
    code.parse().unwrap()
}

fn rules_observation() -> Observation {
    serde_json::from_str(RULES_OBSERVATION).unwrap()
}

/// A fresh observation from the engine, so round trips cover what the server sends.
fn engine_observation() -> (Observation, Vec<Event>) {
    let mut events = Vec::new();
    let options = Options {
        hidden_bids: true,
        bid_restriction: BidRestriction::Canadian,
        turn_seconds: 30,
    };
    let game = Game::new(5, options, 7, &mut events).unwrap();
    (game.observation(1), events)
}

fn bad_field() -> DecodeError {
    DecodeError::BadField {
        type_name: "",
        message: String::new(),
    }
}

/// Compares errors by variant, and `UnknownType` by its echoed name too.
fn assert_error(text: &str, got: Result<impl std::fmt::Debug, DecodeError>, want: &DecodeError) {
    let err = got.expect_err(text);
    match (&err, want) {
        (DecodeError::BadField { message, .. }, DecodeError::BadField { .. }) => {
            assert!(!message.is_empty(), "{text}");
        }
        _ => assert_eq!(&err, want, "{text}"),
    }
    let shown = err.to_string();
    assert!(!shown.is_empty() && shown.len() < 220, "{text}: {shown}");
}

#[test]
fn the_rules_example_observation_decodes() {
    let obs = rules_observation();
    assert_eq!(obs.hand, vec![card("h10"), card("c3")]);
    assert_eq!(obs.trump_suit, Some(Suit::Hearts));
    assert_eq!(obs.ranking, None);
    assert_eq!(obs.legal_actions, vec![Action::Play { card: card("h10") }]);
}

#[test]
fn client_messages_decode() {
    let cases = [
        (
            r#"{"type":"hello","token":null}"#,
            ClientMessage::Hello {
                token: None,
                deltas: false,
                profile_key: None,
            },
        ),
        (
            r#"{"type":"hello"}"#,
            ClientMessage::Hello {
                token: None,
                deltas: false,
                profile_key: None,
            },
        ),
        (
            r#"{"type":"hello","token":"abc-_12"}"#,
            ClientMessage::Hello {
                token: Some("abc-_12".into()),
                deltas: false,
                profile_key: None,
            },
        ),
        (
            r#"{"type":"create_lobby","name":"Ann"}"#,
            ClientMessage::CreateLobby {
                name: "Ann".into(),
                public: false,
            },
        ),
        (
            r#"{"name":"Bob","code":"abcd23","type":"join_lobby"}"#,
            ClientMessage::JoinLobby {
                code: "abcd23".into(),
                name: "Bob".into(),
            },
        ),
        (r#"{"type":"leave_lobby"}"#, ClientMessage::LeaveLobby),
        (r#"{"type":"add_ai"}"#, ClientMessage::AddAi { level: None }),
        (
            r#"{"type":"add_ai","level":"easy"}"#,
            ClientMessage::AddAi {
                level: Some(AiLevel::Easy),
            },
        ),
        (
            r#"{"type":"add_ai","level":null}"#,
            ClientMessage::AddAi { level: None },
        ),
        (
            r#"{"type":"remove_player","player_id":"0123456789ab"}"#,
            ClientMessage::RemovePlayer {
                player_id: "0123456789ab".into(),
            },
        ),
        (
            r#"{"type":"set_options","hidden_bids":true}"#,
            ClientMessage::SetOptions {
                hidden_bids: Some(true),
                bid_restriction: None,
                turn_seconds: None,
                public: None,
            },
        ),
        (
            r#"{"type":"set_options","bid_restriction":"house","turn_seconds":60,"hidden_bids":null}"#,
            ClientMessage::SetOptions {
                hidden_bids: None,
                bid_restriction: Some(BidRestriction::House),
                turn_seconds: Some(60),
                public: None,
            },
        ),
        (
            r#"{"type":"set_options"}"#,
            ClientMessage::SetOptions {
                hidden_bids: None,
                bid_restriction: None,
                turn_seconds: None,
                public: None,
            },
        ),
        (r#"{"type":"start_game"}"#, ClientMessage::StartGame),
        (
            r#"{"type":"action","action":{"kind":"bid","bid":2}}"#,
            ClientMessage::Action {
                action: Action::Bid { bid: 2 },
            },
        ),
        (
            r#"{"type":"action","action":{"card":"h12","kind":"play"}}"#,
            ClientMessage::Action {
                action: Action::Play { card: card("h12") },
            },
        ),
        (
            r#"{"type":"action","action":{"kind":"play","card":"W4"}}"#,
            ClientMessage::Action {
                action: Action::Play {
                    card: Card::Wizard(4),
                },
            },
        ),
        (
            r#"{"type":"action","action":{"kind":"choose_trump","suit":"hearts"}}"#,
            ClientMessage::Action {
                action: Action::ChooseTrump { suit: Suit::Hearts },
            },
        ),
        (
            r#"{"type":"return_to_lobby"}"#,
            ClientMessage::ReturnToLobby,
        ),
        // Escapes in the type and whitespace are plain JSON.
        (
            " {\"type\" : \"add\\u005fai\"} \n",
            ClientMessage::AddAi { level: None },
        ),
    ];
    for (text, want) in cases {
        assert_eq!(decode_client(text), Ok(want), "{text}");
    }
}

#[test]
fn unknown_fields_are_ignored_everywhere() {
    let cases = [
        (
            r#"{"type":"hello","token":"t","extra":[1,{"a":null}],"v":2}"#,
            ClientMessage::Hello {
                token: Some("t".into()),
                deltas: false,
                profile_key: None,
            },
        ),
        (
            r#"{"x":{"type":"nested"},"type":"leave_lobby","y":"z"}"#,
            ClientMessage::LeaveLobby,
        ),
        (
            r#"{"type":"action","action":{"kind":"bid","bid":0,"why":"safe"},"seq":9}"#,
            ClientMessage::Action {
                action: Action::Bid { bid: 0 },
            },
        ),
        (
            r#"{"type":"set_options","hidden_bids":false,"colour":"blue"}"#,
            ClientMessage::SetOptions {
                hidden_bids: Some(false),
                bid_restriction: None,
                turn_seconds: None,
                public: None,
            },
        ),
    ];
    for (text, want) in cases {
        assert_eq!(decode_client(text), Ok(want), "{text}");
    }
    let reply = r#"{"type":"decision","request_id":1,"action":{"kind":"bid","bid":1},"agent":"search","ms":3}"#;
    assert_eq!(
        decode_ai_reply(reply),
        Ok(AiReply::Decision {
            request_id: 1,
            action: Action::Bid { bid: 1 },
            agent: "search".into(),
        })
    );
    let status = r#"{"type":"server_status","load":"busy","accepting_games":true,"since":5}"#;
    assert_eq!(
        decode_server(status),
        Ok(ServerMessage::ServerStatus {
            load: LoadLevel::Busy,
            accepting_games: true,
        })
    );
}

#[test]
fn junk_client_messages_are_typed_errors() {
    let long_type = "x".repeat(100);
    let long_type_json = format!(r#"{{"type":"{long_type}"}}"#);
    let cases: Vec<(&str, DecodeError)> = vec![
        ("", DecodeError::NotJson),
        ("hello", DecodeError::NotJson),
        ("{", DecodeError::NotJson),
        (r#"{"type":"hello""#, DecodeError::NotJson),
        (r#"{"type":"hello"} x"#, DecodeError::NotJson),
        (r#"{"type":"hello"}{}"#, DecodeError::NotJson),
        (r#"{"type":"hello",}"#, DecodeError::NotJson),
        (r#"{'type':'hello'}"#, DecodeError::NotJson),
        ("[", DecodeError::NotJson),
        ("[1,2", DecodeError::NotJson),
        ("[]", DecodeError::NotAnObject),
        (r#"[{"type":"hello"}]"#, DecodeError::NotAnObject),
        ("42", DecodeError::NotAnObject),
        ("-1.5e3", DecodeError::NotAnObject),
        ("true", DecodeError::NotAnObject),
        ("null", DecodeError::NotAnObject),
        (r#""hello""#, DecodeError::NotAnObject),
        ("{}", DecodeError::MissingType),
        (r#"{"kind":"hello"}"#, DecodeError::MissingType),
        (r#"{"Type":"hello"}"#, DecodeError::MissingType),
        (r#"{"type":"HELLO"}"#, unknown("HELLO")),
        (r#"{"type":"welcome"}"#, unknown("welcome")),
        (r#"{"type":""}"#, unknown("")),
        (r#"{"type":"decide"}"#, unknown("decide")),
        (&long_type_json, unknown(&"x".repeat(32))),
        (r#"{"type":null}"#, bad_field()),
        (r#"{"type":7}"#, bad_field()),
        (r#"{"type":["hello"]}"#, bad_field()),
        (r#"{"type":"hello","type":"hello"}"#, bad_field()),
        (r#"{"type":"hello","token":5}"#, bad_field()),
        (r#"{"type":"hello","token":{"t":1}}"#, bad_field()),
        (r#"{"type":"create_lobby"}"#, bad_field()),
        (r#"{"type":"create_lobby","name":null}"#, bad_field()),
        (r#"{"type":"create_lobby","name":["Ann"]}"#, bad_field()),
        (r#"{"type":"join_lobby","code":"ABCDEF"}"#, bad_field()),
        (r#"{"type":"join_lobby","name":"Ann"}"#, bad_field()),
        (
            r#"{"type":"join_lobby","code":123456,"name":"Ann"}"#,
            bad_field(),
        ),
        (r#"{"type":"add_ai","level":"expert"}"#, bad_field()),
        (r#"{"type":"add_ai","level":1}"#, bad_field()),
        (r#"{"type":"remove_player"}"#, bad_field()),
        (r#"{"type":"remove_player","player_id":1}"#, bad_field()),
        (r#"{"type":"set_options","hidden_bids":"yes"}"#, bad_field()),
        (
            r#"{"type":"set_options","bid_restriction":"dealer"}"#,
            bad_field(),
        ),
        (r#"{"type":"set_options","turn_seconds":-1}"#, bad_field()),
        (
            r#"{"type":"set_options","turn_seconds":70000}"#,
            bad_field(),
        ),
        (r#"{"type":"set_options","turn_seconds":1.5}"#, bad_field()),
        (r#"{"type":"action"}"#, bad_field()),
        (r#"{"type":"action","action":null}"#, bad_field()),
        (r#"{"type":"action","action":"bid"}"#, bad_field()),
        (r#"{"type":"action","action":{}}"#, bad_field()),
        (r#"{"type":"action","action":{"kind":"fold"}}"#, bad_field()),
        (r#"{"type":"action","action":{"kind":"bid"}}"#, bad_field()),
        (
            r#"{"type":"action","action":{"kind":"bid","bid":-1}}"#,
            bad_field(),
        ),
        (
            r#"{"type":"action","action":{"kind":"bid","bid":256}}"#,
            bad_field(),
        ),
        (
            r#"{"type":"action","action":{"kind":"bid","bid":"2"}}"#,
            bad_field(),
        ),
        (
            r#"{"type":"action","action":{"kind":"bid","bid":1.5}}"#,
            bad_field(),
        ),
        (r#"{"type":"action","action":{"kind":"play"}}"#, bad_field()),
        (
            r#"{"type":"action","action":{"kind":"play","card":12}}"#,
            bad_field(),
        ),
        (
            r#"{"type":"action","action":{"kind":"choose_trump"}}"#,
            bad_field(),
        ),
        (
            r#"{"type":"action","action":{"kind":"choose_trump","suit":"h"}}"#,
            bad_field(),
        ),
        (
            r#"{"type":"action","action":{"kind":"choose_trump","suit":"Hearts"}}"#,
            bad_field(),
        ),
        (
            r#"{"type":"action","action":{"kind":"choose_trump","suit":"stars"}}"#,
            bad_field(),
        ),
        (
            r#"{"type":"action","action":{"kind":"choose_trump","suit":null}}"#,
            bad_field(),
        ),
        (r#"{"type":"chat"}"#, bad_field()),
        (r#"{"type":"chat","text":null}"#, bad_field()),
        (r#"{"type":"chat","text":["a"]}"#, bad_field()),
        (r#"{"type":"spectate","code":"ABC234"}"#, bad_field()),
        (r#"{"type":"spectate","name":"Zoe","code":7}"#, bad_field()),
    ];
    for (text, want) in &cases {
        assert_error(text, decode_client(text), want);
    }
    // Deep nesting: skipped iteratively in unknown fields, refused by serde_json's
    // recursion limit in known ones, never a stack overflow.
    let open = "[".repeat(10_000);
    let close = "]".repeat(10_000);
    let deep = format!(r#"{{"type":"hello","x":{open}{close}}}"#);
    assert_eq!(
        decode_client(&deep),
        Ok(ClientMessage::Hello {
            token: None,
            deltas: false,
            profile_key: None,
        })
    );
    let deep = format!(r#"{{"type":"action","action":{open}{close}}}"#);
    assert_error("deep action", decode_client(&deep), &bad_field());
    let deep = format!(r#"{{"type":"hello","x":{open}}}"#);
    assert_error("unclosed", decode_client(&deep), &DecodeError::NotJson);
}

#[test]
fn junk_cards_are_bad_fields() {
    let junk = [
        "x9", "h15", "h1", "h0", "h05", "h+5", "h 5", "h", "W5", "W0", "W01", "J5", "J0", "w1",
        "j1", "H12", "c", "", "s100", "d-2", "h12 ", " h12", "W", "Joker", "h١٢",
    ];
    for code in junk {
        let text = format!(r#"{{"type":"action","action":{{"kind":"play","card":"{code}"}}}}"#);
        assert_error(&text, decode_client(&text), &bad_field());
        let reply = format!(
            r#"{{"type":"decision","request_id":3,"action":{{"kind":"play","card":"{code}"}},"agent":"a"}}"#
        );
        assert_error(&reply, decode_ai_reply(&reply), &bad_field());
        // The server can still fail that request at once.
        assert_eq!(peek_request_id(&reply), Some(3), "{reply}");
    }
}

#[test]
fn bad_field_messages_are_short_and_name_the_problem() {
    let text = r#"{"type":"join_lobby","code":"ABCDEF"}"#;
    let err = decode_client(text).unwrap_err();
    assert_eq!(err.to_string(), "invalid join_lobby: missing field `name`");
    let huge = format!(
        r#"{{"type":"action","action":{{"kind":"play","card":"x{}"}}}}"#,
        "9".repeat(100_000)
    );
    let err = decode_client(&huge).unwrap_err();
    assert!(err.to_string().len() < 220, "{err}");
    let err =
        decode_client(r#"{"type":"action","action":{"kind":"play","card":"h15"}}"#).unwrap_err();
    assert!(err.to_string().contains("h15"), "{err}");
    assert_eq!(
        DecodeError::NotJson.to_string(),
        "message is not valid JSON"
    );
    assert_eq!(unknown("ping").to_string(), "unknown message type \"ping\"");
}

fn unknown(type_name: &str) -> DecodeError {
    DecodeError::UnknownType {
        type_name: type_name.into(),
    }
}

fn lobby() -> LobbyView {
    LobbyView {
        code: "ABC234".into(),
        status: LobbyStatus::Playing,
        host_id: "0123456789ab".into(),
        options: Options {
            hidden_bids: false,
            bid_restriction: BidRestriction::House,
            turn_seconds: 0,
        },
        public: false,
        players: vec![
            PlayerView {
                id: "0123456789ab".into(),
                name: "Ann".into(),
                is_ai: false,
                connected: true,
                level: None,
                profile_id: None,
                rating: None,
                mu: None,
                sigma: None,
                rating_change: None,
            },
            PlayerView {
                id: "ba9876543210".into(),
                name: "Ann (2)".into(),
                is_ai: true,
                connected: false,
                level: Some(AiLevel::Easy),
                profile_id: None,
                rating: None,
                mu: None,
                sigma: None,
                rating_change: None,
            },
        ],
        min_players: 3,
        max_players: 6,
        ai_available: true,
        spectators: vec!["Zoe".into()],
    }
}

fn every_event() -> Vec<Event> {
    vec![
        Event::RoundStarted {
            round: 3,
            dealer: 2,
            trump_card: Some(Card::Wizard(2)),
            trump_suit: None,
        },
        Event::TrumpChosen {
            player: 2,
            suit: Suit::Hearts,
        },
        Event::BidMade {
            player: 0,
            bid: None,
        },
        Event::BidMade {
            player: 1,
            bid: Some(2),
        },
        Event::BidsRevealed {
            bids: vec![1, 2, 0],
        },
        Event::CardPlayed {
            player: 1,
            card: card("h2"),
        },
        Event::TrickCompleted {
            winner: 1,
            cards: vec![PlayedCard {
                player: 1,
                card: Card::Jester(3),
            }],
        },
        Event::RoundFinished {
            bids: vec![1, 2, 0],
            tricks: vec![1, 1, 1],
            deltas: vec![30, -10, -10],
            scores: vec![30, -10, -10],
        },
        Event::GameFinished {
            scores: vec![30, -10, -10],
            ranking: vec![Placing {
                player: 0,
                score: 30,
                place: 1,
            }],
        },
        Event::Autoplayed { player: 2 },
    ]
}

fn every_client_message() -> Vec<ClientMessage> {
    vec![
        ClientMessage::Spectate {
            code: "abc234".into(),
            name: "Zoe \u{1f0cf}".into(),
        },
        ClientMessage::Chat {
            text: "<script>alert(\"x\")</script> \u{e9}".into(),
        },
        ClientMessage::Hello {
            token: None,
            deltas: false,
            profile_key: None,
        },
        ClientMessage::Hello {
            token: Some("s3cr3t".into()),
            deltas: true,
            profile_key: None,
        },
        ClientMessage::CreateLobby {
            name: "Ann \"the\" \u{e9}\u{1f0cf}".into(),
            public: false,
        },
        ClientMessage::JoinLobby {
            code: "ABC234".into(),
            name: "Bob".into(),
        },
        ClientMessage::LeaveLobby,
        ClientMessage::AddAi { level: None },
        ClientMessage::AddAi {
            level: Some(AiLevel::Normal),
        },
        ClientMessage::RemovePlayer {
            player_id: "0123456789ab".into(),
        },
        ClientMessage::SetOptions {
            hidden_bids: Some(true),
            bid_restriction: Some(BidRestriction::Canadian),
            turn_seconds: Some(300),
            public: None,
        },
        ClientMessage::SetOptions {
            hidden_bids: None,
            bid_restriction: None,
            turn_seconds: None,
            public: None,
        },
        ClientMessage::StartGame,
        ClientMessage::Action {
            action: Action::Bid { bid: 0 },
        },
        ClientMessage::Action {
            action: Action::Play {
                card: Card::Jester(1),
            },
        },
        ClientMessage::Action {
            action: Action::ChooseTrump { suit: Suit::Spades },
        },
        ClientMessage::ReturnToLobby,
    ]
}

fn every_server_message() -> Vec<ServerMessage> {
    let (obs, events) = engine_observation();
    let mut messages = vec![
        ServerMessage::Welcome {
            player_id: "0123456789ab".into(),
            token: "tok_-0".into(),
            name: "Ann".into(),
            shard: None,
            profile: None,
        },
        ServerMessage::Welcome {
            player_id: "0123456789ab".into(),
            token: "Ktok_-0".into(),
            name: "Ann".into(),
            shard: Some("K".into()),
            profile: None,
        },
        ServerMessage::State {
            lobby: None,
            game: None,
            events: Vec::new(),
        },
        ServerMessage::State {
            lobby: Some(lobby()),
            game: Some(GameView {
                id: String::new(),
                you: Some(2),
                observation: rules_observation(),
            }),
            events: every_event(),
        },
        ServerMessage::State {
            lobby: Some(LobbyView {
                status: LobbyStatus::Waiting,
                ..lobby()
            }),
            game: Some(GameView {
                id: String::new(),
                you: Some(1),
                observation: obs,
            }),
            events,
        },
        ServerMessage::ServerStatus {
            load: LoadLevel::Overloaded,
            accepting_games: false,
        },
        ServerMessage::State {
            lobby: Some(lobby()),
            game: Some(GameView {
                id: String::new(),
                you: None,
                observation: rules_observation(),
            }),
            events: Vec::new(),
        },
        ServerMessage::Chat {
            from: "0123456789ab".into(),
            name: "Ann (2)".into(),
            text: "<b>\"x\"</b>\n".into(),
            at_ms: u64::MAX,
        },
        ServerMessage::Error {
            code: ErrorCode::RateLimited,
            message: "slow down".into(),
            retry_after_ms: Some(1500),
            shard: None,
        },
        ServerMessage::Error {
            code: ErrorCode::WrongShard,
            message: "elsewhere".into(),
            retry_after_ms: None,
            shard: Some("B".into()),
        },
    ];
    messages.extend(ErrorCode::ALL.into_iter().map(|code| ServerMessage::Error {
        code,
        message: code.to_string(),
        retry_after_ms: None,
        shard: None,
    }));
    messages
}

fn every_ai_reply() -> Vec<AiReply> {
    let mut replies = vec![AiReply::Decision {
        request_id: u64::MAX,
        action: Action::Play { card: card("s14") },
        agent: "search".into(),
    }];
    replies.extend(
        [
            AiErrorCode::Overloaded,
            AiErrorCode::Expired,
            AiErrorCode::Internal,
        ]
        .into_iter()
        .map(|code| AiReply::Error {
            request_id: 17,
            code,
            message: "queue full".into(),
        }),
    );
    replies
}

#[test]
fn every_message_round_trips() {
    for msg in every_client_message() {
        let text = encode_client(&msg);
        assert_eq!(decode_client(&text), Ok(msg.clone()), "{text}");
        let tag = format!(r#"{{"type":"{}""#, msg.type_name());
        assert!(text.starts_with(&tag), "{text}");
        // The derived serde impls agree with the fast decoder.
        assert_eq!(serde_json::from_str::<ClientMessage>(&text).unwrap(), msg);
    }
    for msg in every_server_message() {
        let text = encode(&msg);
        assert_eq!(decode_server(&text), Ok(msg.clone()), "{text}");
        assert_eq!(serde_json::from_str::<ServerMessage>(&text).unwrap(), msg);
    }
    for reply in every_ai_reply() {
        let text = encode_ai_reply(&reply);
        assert_eq!(decode_ai_reply(&text), Ok(reply.clone()), "{text}");
        assert_eq!(peek_request_id(&text), Some(reply.request_id()));
    }
    let (obs, _) = engine_observation();
    for (request_id, observation, level) in [
        (17, rules_observation(), AiLevel::Easy),
        (0, obs, AiLevel::Strong),
    ] {
        let request = AiRequest::Decide {
            request_id,
            observation,
            timeout: 5.0,
            level,
        };
        let text = encode_ai_request(&request);
        assert_eq!(decode_ai_request(&text), Ok(request), "{text}");
    }
    let health = health();
    assert_eq!(decode_health(&encode_health(&health)), Ok(health));
}

#[test]
fn encodings_follow_the_protocol_text() {
    let cases = [
        (
            encode(&ServerMessage::Welcome {
                player_id: "0123456789ab".into(),
                token: "t".into(),
                name: "Ann".into(),
                shard: None,
                profile: None,
            }),
            r#"{"type":"welcome","player_id":"0123456789ab","token":"t","name":"Ann","profile":null}"#,
        ),
        (
            encode(&ServerMessage::Welcome {
                player_id: "0123456789ab".into(),
                token: "Bt".into(),
                name: "Ann".into(),
                shard: Some("B".into()),
                profile: None,
            }),
            r#"{"type":"welcome","player_id":"0123456789ab","token":"Bt","name":"Ann","shard":"B","profile":null}"#,
        ),
        (
            encode(&ServerMessage::State {
                lobby: None,
                game: None,
                events: Vec::new(),
            }),
            r#"{"type":"state","lobby":null,"game":null,"events":[]}"#,
        ),
        (
            encode(&ServerMessage::ServerStatus {
                load: LoadLevel::Normal,
                accepting_games: true,
            }),
            r#"{"type":"server_status","load":"normal","accepting_games":true}"#,
        ),
        (
            encode(&ServerMessage::Error {
                code: ErrorCode::HelloRequired,
                message: "say hello first".into(),
                retry_after_ms: None,
                shard: None,
            }),
            r#"{"type":"error","code":"hello_required","message":"say hello first"}"#,
        ),
        (
            encode(&ServerMessage::Error {
                code: ErrorCode::Busy,
                message: "m".into(),
                retry_after_ms: Some(250),
                shard: None,
            }),
            r#"{"type":"error","code":"busy","message":"m","retry_after_ms":250}"#,
        ),
        (
            encode(&ServerMessage::Error {
                code: ErrorCode::WrongShard,
                message: "m".into(),
                retry_after_ms: None,
                shard: Some("A".into()),
            }),
            r#"{"type":"error","code":"wrong_shard","message":"m","shard":"A"}"#,
        ),
        (
            encode_client(&ClientMessage::Action {
                action: Action::Play { card: card("h12") },
            }),
            r#"{"type":"action","action":{"kind":"play","card":"h12"}}"#,
        ),
        (
            encode_client(&ClientMessage::Hello {
                token: None,
                deltas: false,
                profile_key: None,
            }),
            r#"{"type":"hello","token":null}"#,
        ),
        (
            encode_client(&ClientMessage::Spectate {
                code: "ABC234".into(),
                name: "Zoe".into(),
            }),
            r#"{"type":"spectate","code":"ABC234","name":"Zoe"}"#,
        ),
        (
            encode_client(&ClientMessage::Chat {
                text: "<b>hi</b>".into(),
            }),
            r#"{"type":"chat","text":"<b>hi</b>"}"#,
        ),
        (
            encode(&ServerMessage::Chat {
                from: "0123456789ab".into(),
                name: "Ann".into(),
                text: "<script>".into(),
                at_ms: 1500,
            }),
            r#"{"type":"chat","from":"0123456789ab","name":"Ann","text":"<script>","at_ms":1500}"#,
        ),
        (
            encode_ai_reply(&AiReply::Decision {
                request_id: 17,
                action: Action::Bid { bid: 2 },
                agent: "search".into(),
            }),
            r#"{"type":"decision","request_id":17,"action":{"kind":"bid","bid":2},"agent":"search"}"#,
        ),
        (
            encode_ai_reply(&AiReply::Error {
                request_id: 17,
                code: AiErrorCode::Overloaded,
                message: "...".into(),
            }),
            r#"{"type":"error","request_id":17,"code":"overloaded","message":"..."}"#,
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
    let lobby_json: serde_json::Value = serde_json::to_value(lobby()).unwrap();
    let want: serde_json::Value = serde_json::from_str(
        r#"{"code":"ABC234","status":"playing","host_id":"0123456789ab",
            "options":{"hidden_bids":false,"bid_restriction":"house","turn_seconds":0},
            "players":[{"id":"0123456789ab","name":"Ann","is_ai":false,"connected":true},
                       {"id":"ba9876543210","name":"Ann (2)","is_ai":true,"connected":false,"level":"easy"}],
            "min_players":3,"max_players":6,"ai_available":true,"spectators":["Zoe"]}"#,
    )
    .unwrap();
    assert_eq!(lobby_json, want);
    let request = encode_ai_request(&AiRequest::Decide {
        request_id: 17,
        observation: rules_observation(),
        timeout: 5.0,
        level: AiLevel::Normal,
    });
    assert!(
        request.starts_with(r#"{"type":"decide","request_id":17,"observation":{"players":4,"#),
        "{request}"
    );
    assert!(
        request.ends_with(r#","timeout":5.0,"level":"normal"}"#),
        "{request}"
    );
    // A request without a level (from a server before levels) is for `strong`.
    let old = request.replace(r#","level":"normal""#, "");
    let Ok(AiRequest::Decide { level, .. }) = decode_ai_request(&old) else {
        panic!("{old}")
    };
    assert_eq!(level, AiLevel::Strong);
}

#[test]
fn server_and_ai_junk_is_typed_too() {
    let server: Vec<(&str, DecodeError)> = vec![
        (r#"{"type":"hello"}"#, unknown("hello")),
        (r#"{"type":"state","lobby":null,"game":null}"#, bad_field()),
        (
            r#"{"type":"state","lobby":null,"game":null,"events":[{"type":"boom"}]}"#,
            bad_field(),
        ),
        (
            r#"{"type":"server_status","load":"melting","accepting_games":true}"#,
            bad_field(),
        ),
        (
            r#"{"type":"error","code":"oops","message":"m"}"#,
            bad_field(),
        ),
        (
            r#"{"type":"welcome","player_id":"p","token":"t"}"#,
            bad_field(),
        ),
        (
            r#"{"type":"chat","from":"p","name":"n","text":"t","at_ms":-1}"#,
            bad_field(),
        ),
        (
            r#"{"type":"chat","from":"p","name":"n","at_ms":1}"#,
            bad_field(),
        ),
        ("[]", DecodeError::NotAnObject),
    ];
    for (text, want) in &server {
        assert_error(text, decode_server(text), want);
    }
    let ai: Vec<(&str, DecodeError)> = vec![
        ("not json", DecodeError::NotJson),
        ("17", DecodeError::NotAnObject),
        (r#"{"request_id":1}"#, DecodeError::MissingType),
        (r#"{"type":"decide","request_id":1}"#, unknown("decide")),
        (
            r#"{"type":"decision","request_id":-1,"action":{"kind":"bid","bid":1},"agent":"a"}"#,
            bad_field(),
        ),
        (
            r#"{"type":"decision","request_id":"1","action":{"kind":"bid","bid":1},"agent":"a"}"#,
            bad_field(),
        ),
        (
            r#"{"type":"decision","request_id":1,"agent":"a"}"#,
            bad_field(),
        ),
        (
            r#"{"type":"decision","request_id":1,"action":{"kind":"bid","bid":1}}"#,
            bad_field(),
        ),
        (
            r#"{"type":"error","request_id":1,"code":"tired","message":"m"}"#,
            bad_field(),
        ),
        (
            r#"{"type":"error","request_id":1,"code":"internal"}"#,
            bad_field(),
        ),
    ];
    for (text, want) in &ai {
        assert_error(text, decode_ai_reply(text), want);
    }
    let decide: Vec<(&str, DecodeError)> = vec![
        (r#"{"type":"decision"}"#, unknown("decision")),
        (
            r#"{"type":"decide","request_id":1,"timeout":5.0}"#,
            bad_field(),
        ),
        (
            r#"{"type":"decide","request_id":1,"observation":{},"timeout":5.0}"#,
            bad_field(),
        ),
    ];
    for (text, want) in &decide {
        assert_error(text, decode_ai_request(text), want);
    }
    assert_eq!(peek_request_id("nope"), None);
    assert_eq!(peek_request_id(r#"{"type":"decision"}"#), None);
}

fn health() -> Health {
    Health {
        status: "ok".into(),
        load: LoadLevel::Normal,
        loop_lag: 0.0003,
        cpu: 0.012,
        throttled: 0.0,
        accepting_games: true,
        lobbies: 4,
        active_games: 3,
        sessions: 9,
        connections: 7,
        ai_available: true,
        ai: AiHealth {
            connections: 1,
            pending: 0,
            breaker: "closed".into(),
        },
        version: String::new(),
        shard: None,
    }
}

#[test]
fn health_matches_the_protocol_example() {
    // Section 5's example, from before the version: still read, with no version.
    let example = r#"{"status":"ok","load":"normal","loop_lag":0.0003,"cpu":0.012,"throttled":0.0,
 "accepting_games":true,"lobbies":4,"active_games":3,"sessions":9,"connections":7,
 "ai_available":true,"ai":{"connections":1,"pending":0,"breaker":"closed"}}"#;
    assert_eq!(decode_health(example), Ok(health()));
    // Section 6.2: `/health` gains "version".
    let versioned = Health {
        version: "1.2.3".into(),
        ..health()
    };
    let with_version = concat!(
        r#"{"status":"ok","load":"normal","loop_lag":0.0003,"cpu":0.012,"throttled":0.0,"#,
        r#""accepting_games":true,"lobbies":4,"active_games":3,"sessions":9,"connections":7,"#,
        r#""ai_available":true,"ai":{"connections":1,"pending":0,"breaker":"closed"},"#,
        r#""version":"1.2.3"}"#
    );
    assert_eq!(encode_health(&versioned), with_version);
    assert_eq!(decode_health(with_version), Ok(versioned.clone()));
    // Section 6.2: with shards, `/health` gains "shard"; without, it has none.
    let sharded = Health {
        shard: Some("C".into()),
        ..versioned
    };
    let with_shard = concat!(
        r#"{"status":"ok","load":"normal","loop_lag":0.0003,"cpu":0.012,"throttled":0.0,"#,
        r#""accepting_games":true,"lobbies":4,"active_games":3,"sessions":9,"connections":7,"#,
        r#""ai_available":true,"ai":{"connections":1,"pending":0,"breaker":"closed"},"#,
        r#""version":"1.2.3","shard":"C"}"#
    );
    assert_eq!(encode_health(&sharded), with_shard);
    assert_eq!(decode_health(with_shard), Ok(sharded));
}

#[test]
fn close_codes_and_error_codes_are_complete() {
    let codes: Vec<u16> = CloseCode::ALL.iter().map(|c| c.code()).collect();
    assert_eq!(
        codes,
        [1001, 1003, 1008, 1009, 1013, 4000, 1002, 1007, 1012]
    );
    for close in CloseCode::ALL {
        assert_eq!(CloseCode::from_code(close.code()), Some(close));
        assert!(!close.reason().is_empty() && close.reason().len() <= 123);
    }
    assert_eq!(CloseCode::from_code(1000), None);
    let names: Vec<String> = ErrorCode::ALL
        .iter()
        .map(|c| serde_json::to_string(c).unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "\"invalid\"",
            "\"hello_required\"",
            "\"not_found\"",
            "\"not_allowed\"",
            "\"illegal_action\"",
            "\"busy\"",
            "\"rate_limited\"",
            "\"session_replaced\"",
            "\"removed\"",
            "\"wrong_shard\"",
        ]
    );
    for code in ErrorCode::ALL {
        assert_eq!(format!("\"{code}\""), serde_json::to_string(&code).unwrap());
    }
    assert!(AiErrorCode::Overloaded.is_shedding());
    assert!(AiErrorCode::Expired.is_shedding());
    assert!(!AiErrorCode::Internal.is_shedding());
}

/// JSON-ish fragments, so generated strings often get past the first pass.
fn jsonish() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(",".to_owned()),
        Just(":".to_owned()),
        Just("\"type\"".to_owned()),
        Just("\"action\"".to_owned()),
        Just("\"kind\"".to_owned()),
        Just("\"play\"".to_owned()),
        Just("\"card\"".to_owned()),
        Just("\"bid\"".to_owned()),
        Just("\"hello\"".to_owned()),
        Just("\"set_options\"".to_owned()),
        Just("null".to_owned()),
        Just("-1".to_owned()),
        Just("1e999".to_owned()),
        "\"[a-zA-Z0-9_\\\\]{0,6}\"",
        any::<i64>().prop_map(|n| n.to_string()),
    ];
    proptest::collection::vec(fragment, 0..24).prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn arbitrary_strings_never_panic_the_decoders(text in any::<String>()) {
        let _ = decode_client(&text);
        let _ = decode_ai_reply(&text);
        let _ = decode_server(&text);
        let _ = decode_ai_request(&text);
        let _ = peek_request_id(&text);
    }

    #[test]
    fn jsonish_strings_never_panic_and_errors_stay_short(text in jsonish()) {
        match decode_client(&text) {
            Ok(msg) => prop_assert_eq!(decode_client(&encode_client(&msg)), Ok(msg)),
            Err(e) => prop_assert!(e.to_string().len() < 220, "{}", e),
        }
        let _ = decode_ai_reply(&text);
    }
}

/// `Input::from_text`, the one rule that turns a complete text message into an input:
/// player messages decode or are undecodable; an AI reply carries a peeked
/// `request_id` only when it does not decode.
#[test]
fn a_text_message_becomes_one_input_by_one_rule() {
    use wizard_core::vocabulary::ids::ConnId;
    use wizard_core::vocabulary::io::{ConnKind, Input};
    // (kind, text, expected input kind, expected peeked request id)
    let cases: &[(ConnKind, &str, &str, Option<u64>)] = &[
        (ConnKind::Player, r#"{"type":"hello"}"#, "message", None),
        (
            ConnKind::Player,
            r#"{"type":"nonsense"}"#,
            "undecodable",
            None,
        ),
        (ConnKind::Player, "not json", "undecodable", None),
        (
            ConnKind::Ai,
            r#"{"type":"decision","request_id":7,"action":{"kind":"bid","bid":1},"agent":"search"}"#,
            "ai decoded",
            None,
        ),
        (
            ConnKind::Ai,
            r#"{"type":"decision","request_id":8,"action":{"kind":"fly"}}"#,
            "ai undecodable",
            Some(8),
        ),
        (ConnKind::Ai, "garbage", "ai undecodable", None),
    ];
    for &(kind, text, want_kind, want_id) in cases {
        let input = Input::from_text(ConnId(3), kind, text);
        let (got_kind, got_id) = match &input {
            Input::Message {
                conn: ConnId(3), ..
            } => ("message", None),
            Input::Undecodable {
                conn: ConnId(3), ..
            } => ("undecodable", None),
            Input::AiMessage {
                conn: ConnId(3),
                reply,
                request_id,
                arrived: None,
            } => (
                if reply.is_ok() {
                    "ai decoded"
                } else {
                    "ai undecodable"
                },
                *request_id,
            ),
            other => panic!("{text}: unexpected {other:?}"),
        };
        assert_eq!((got_kind, got_id), (want_kind, want_id), "{text}");
    }
}
