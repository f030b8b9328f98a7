//! The checkers of what players are shown (`games.rs`), one rule at a time: each
//! passes on real games played through the core, and fails on a copy of one of them
//! with a hand-made violation (a frame edited, dropped or moved in time).

// The violation makers share one signature, and some of them remove steps.
#![allow(clippy::ptr_arg)]

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use wizard_core::config::Config;
use wizard_core::game::{Event, Phase};
use wizard_core::io::{ConnId, ConnKind, Input, Note, Output};
use wizard_core::rng::Seed;
use wizard_core::wire::{self, ClientMessage, GameView, LobbyStatus, LobbyView, ServerMessage};
use wizard_core::{Server, Time};
use wizard_sim::Report;
use wizard_sim::game_log::Seen;
use wizard_sim::games::Games;
use wizard_sim::progress::ProgressBound;

/// One step of a recorded game: an input the core handled, or one of its outputs.
#[derive(Clone, Debug)]
enum Step {
    In(Input),
    Out(Time, Output),
}

/// A table to record: its humans and AI seats, hidden bids, and whether the second
/// human drops its connection after this many moves and comes back with its token.
#[derive(Clone, Copy, Debug)]
struct Table {
    humans: u64,
    ai: u8,
    hidden_bids: bool,
    drop_after_moves: Option<u64>,
}

const OPEN: Table = Table {
    humans: 3,
    ai: 0,
    hidden_bids: false,
    drop_after_moves: None,
};
const WITH_AI: Table = Table {
    humans: 2,
    ai: 2,
    hidden_bids: false,
    drop_after_moves: None,
};
const HIDDEN: Table = Table {
    humans: 2,
    ai: 1,
    hidden_bids: true,
    drop_after_moves: None,
};
const RECONNECT: Table = Table {
    humans: 3,
    ai: 1,
    hidden_bids: false,
    drop_after_moves: Some(40),
};

/// A bound the recorded games keep easily (every move comes within 50 ms).
const BOUND: ProgressBound = ProgressBound {
    ai_wait_us: 1_000_000,
    slack_us: 500_000,
};

/// The core driven by players who always make their first legal move.
struct Recorder {
    server: Server,
    now: Time,
    steps: Vec<Step>,
    latest: BTreeMap<ConnId, String>,
    tokens: BTreeMap<ConnId, String>,
    moves: u64,
}

impl Recorder {
    fn handle(&mut self, input: Input) {
        let mut out = Vec::new();
        self.server.handle(self.now, input.clone(), &mut out);
        self.steps.push(Step::In(input));
        for o in out {
            if let Output::Send { conn, text, .. } = &o {
                match wire::decode_server(text) {
                    Ok(ServerMessage::State { .. }) => {
                        self.latest.insert(*conn, text.clone());
                    }
                    Ok(ServerMessage::Welcome { token, .. }) => {
                        self.tokens.insert(*conn, token);
                    }
                    _ => {}
                }
            }
            if matches!(o, Output::Note(Note::MoveApplied { .. })) {
                self.moves += 1;
            }
            self.steps.push(Step::Out(self.now, o));
        }
    }

    fn send(&mut self, conn: ConnId, message: ClientMessage) {
        self.handle(Input::Message { conn, message });
    }

    fn open(&mut self, conn: ConnId, token: Option<String>) {
        let ip = IpAddr::V4(Ipv4Addr::new(10, 0, 0, u8::try_from(conn).unwrap()));
        self.handle(Input::Opened {
            conn,
            kind: ConnKind::Player,
            ip,
        });
        self.send(conn, ClientMessage::Hello { token });
    }

    fn view(&self, conn: ConnId) -> Option<(LobbyView, Option<GameView>)> {
        match wire::decode_server(self.latest.get(&conn)?) {
            Ok(ServerMessage::State { lobby, game, .. }) => Some((lobby?, game)),
            _ => None,
        }
    }
}

/// Plays one game of `t` through a real core and records every input and output.
fn record(t: Table) -> Vec<Step> {
    let env = [
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
        ("MESSAGE_RATE", "1000"),
        ("MESSAGE_BURST", "1000"),
    ];
    let config = Config::from_pairs(env).unwrap();
    let mut rec = Recorder {
        server: Server::new(config, Seed::from_u64(7), Time::ZERO),
        now: Time::ZERO,
        steps: Vec::new(),
        latest: BTreeMap::new(),
        tokens: BTreeMap::new(),
        moves: 0,
    };
    let mut conns: Vec<ConnId> = (1..=t.humans).collect();
    for &c in &conns {
        rec.open(c, None);
    }
    rec.send(1, ClientMessage::CreateLobby { name: "p1".into() });
    let code = rec.view(1).unwrap().0.code;
    for &c in &conns[1..] {
        let name = format!("p{c}");
        let code = code.clone();
        rec.send(c, ClientMessage::JoinLobby { code, name });
    }
    for _ in 0..t.ai {
        rec.send(1, ClientMessage::AddAi);
    }
    if t.hidden_bids {
        let options = ClientMessage::SetOptions {
            hidden_bids: Some(true),
            bid_restriction: None,
            turn_seconds: None,
        };
        rec.send(1, options);
    }
    rec.send(1, ClientMessage::StartGame);
    for _ in 0..10_000 {
        rec.now = rec.now.plus_us(50_000);
        rec.handle(Input::Timeout);
        if t.drop_after_moves.is_some_and(|m| rec.moves >= m) && conns[1] == 2 {
            rec.handle(Input::Closed { conn: 2 });
            let token = rec.tokens.get(&2).cloned();
            rec.open(100, token);
            conns[1] = 100;
        }
        let mut finished = true;
        for &c in &conns {
            let Some((lobby, game)) = rec.view(c) else {
                continue;
            };
            finished &= lobby.status == LobbyStatus::Finished;
            let first = game.and_then(|g| g.observation.legal_actions.first().copied());
            if let Some(action) = first {
                rec.send(c, ClientMessage::Action { action });
            }
        }
        if finished {
            return rec.steps;
        }
    }
    panic!("the recorded game did not finish");
}

/// Feeds `steps` to the checkers; sweeps the waits at `end` (after the last step when
/// `None`).
fn check(steps: &[Step], end: Option<Time>) -> Report {
    check_seen(steps, end).0
}

/// [`check`], with what the checkers saw.
fn check_seen(steps: &[Step], end: Option<Time>) -> (Report, Seen) {
    let mut games = Games::new(Some(BOUND));
    let mut r = Report::default();
    let mut last = Time::ZERO;
    for s in steps {
        match s {
            Step::In(input) => games.input(input),
            Step::Out(now, o) => {
                last = *now;
                games.output(&mut r, *now, o);
            }
        }
    }
    games.sweep(&mut r, end.unwrap_or(last), true);
    (r, games.seen)
}

type Decoded = (Option<LobbyView>, Option<GameView>, Vec<Event>);

fn decode(text: &str) -> Option<Decoded> {
    match wire::decode_server(text) {
        Ok(ServerMessage::State {
            lobby,
            game,
            events,
        }) => Some((lobby, game, events)),
        _ => None,
    }
}

fn encode((lobby, game, events): Decoded) -> String {
    wire::encode(&ServerMessage::State {
        lobby,
        game,
        events,
    })
}

/// The state frames of `steps`: (step index, connection, decoded).
fn states(steps: &[Step]) -> Vec<(usize, ConnId, Decoded)> {
    steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            Step::Out(_, Output::Send { conn, text, .. }) => Some((i, *conn, decode(text)?)),
            _ => None,
        })
        .collect()
}

fn set_text(steps: &mut [Step], i: usize, text: String) {
    if let Step::Out(_, Output::Send { text: t, .. }) = &mut steps[i] {
        *t = text;
    }
}

/// Edits the first state frame to `conn` for which `edit` returns true.
fn edit_first(steps: &mut [Step], conn: ConnId, edit: impl Fn(&mut Decoded) -> bool) -> bool {
    for (i, c, mut d) in states(steps) {
        if c == conn && edit(&mut d) {
            set_text(steps, i, encode(d));
            return true;
        }
    }
    false
}

/// Edits every copy of the first list of events for which `edit` returns true, so that
/// every seat still receives the same (edited) list.
fn edit_list(steps: &mut [Step], edit: impl Fn(&mut Vec<Event>) -> bool) -> bool {
    let all = states(steps);
    let Some(original) = all.iter().find_map(|(_, _, d)| {
        let mut e = d.2.clone();
        edit(&mut e).then(|| d.2.clone())
    }) else {
        return false;
    };
    for (i, _, mut d) in all {
        if d.2 == original {
            edit(&mut d.2);
            set_text(steps, i, encode(d));
        }
    }
    true
}

fn in_round(d: &Decoded, round: u8, phase: Phase) -> bool {
    d.1.as_ref()
        .is_some_and(|g| g.observation.round == round && g.observation.phase == phase)
}

fn assert_fails(name: &str, steps: &[Step], expected: &str) {
    let r = check(steps, None);
    assert!(
        r.violations.iter().any(|v| v.contains(expected)),
        "{name}: expected a violation with {expected:?}, got {:#?}",
        r.violations
    );
}

#[test]
fn real_games_pass_every_checker_of_views() {
    for t in [OPEN, WITH_AI, HIDDEN, RECONNECT] {
        let steps = record(t);
        // Every frame survives a decode and an encode unchanged, so the edits below
        // change only what they mean to.
        for (i, _, d) in states(&steps) {
            if let Step::Out(_, Output::Send { text, .. }) = &steps[i] {
                assert_eq!(&encode(d), text);
            }
        }
        let (r, seen) = check_seen(&steps, None);
        assert!(r.violations.is_empty(), "{t:?}: {:#?}", r.violations);
        // Every view was judged, each split into its own fields and the public rest.
        assert!(seen.views > 100 && seen.lists > 100, "{t:?}: {seen:?}");
        assert_eq!(seen.views_whole, 0, "{t:?}");
        let finished = steps
            .iter()
            .filter(|s| matches!(s, Step::Out(_, Output::Note(Note::GameFinished { .. }))))
            .count();
        assert_eq!(finished, 1, "{t:?}: the recorded game finished");
    }
}

/// Rewrites every game part with its keys in another order (sorted), so that no view
/// is in the core's layout.
fn reorder(steps: &mut [Step]) {
    for s in steps.iter_mut() {
        let Step::Out(_, Output::Send { text, .. }) = s else {
            continue;
        };
        let Some(parts) = wizard_core::wire::peek::state_parts(text, "") else {
            continue;
        };
        let game: serde_json::Value = serde_json::from_str(parts.game).unwrap();
        *text = format!(
            "{{\"type\":\"state\",\"lobby\":{},\"game\":{},\"events\":{}}}",
            parts.lobby, game, parts.events
        );
    }
}

#[test]
fn views_in_another_layout_are_decoded_whole_and_judged_alike() {
    let mut steps = record(RECONNECT);
    reorder(&mut steps);
    let (r, seen) = check_seen(&steps, None);
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    assert!(
        seen.views > 100 && seen.views_whole == seen.views,
        "{seen:?}"
    );
    for (name, edit, expected) in [
        (
            "a card of another seat",
            card_of_another_seat as fn(&mut Vec<Step>) -> bool,
            "in its hand in round 3",
        ),
        (
            "a card in an unknown field",
            card_in_unknown_field,
            "where cards may be",
        ),
        (
            "a view with wrong totals",
            view_totals_wrong,
            "view shows totals",
        ),
    ] {
        let mut steps = record(OPEN);
        assert!(edit(&mut steps), "{name}: the edit found its frame");
        reorder(&mut steps);
        assert_fails(name, &steps, expected);
    }
}

/// Each rule, broken by hand in a copy of a real game: (rule, table, edit, what the
/// violation says).
type Case = (
    &'static str,
    Table,
    fn(&mut Vec<Step>) -> bool,
    &'static str,
);

const CASES: &[Case] = &[
    // 1. No frame holds another seat's hand or a hidden bid.
    (
        "a card of seat 1 in seat 0's hand",
        OPEN,
        card_of_another_seat,
        "in its hand in round 3",
    ),
    (
        "a card in an unknown field",
        OPEN,
        card_in_unknown_field,
        "where cards may be",
    ),
    ("a hidden bid shown", HIDDEN, hidden_bid_shown, "hidden bid"),
    (
        "seat 1's view sent to seat 0",
        OPEN,
        another_seats_view,
        "was sent the view of seat 1",
    ),
    // 2. Every seat sees the same lists of events.
    (
        "a list dropped for one seat",
        OPEN,
        list_dropped,
        "missed lists of events",
    ),
    (
        "a list changed for one seat",
        OPEN,
        list_changed,
        "differs from the other seats'",
    ),
    // 3. The oracle recomputes the scores.
    (
        "a round scored wrong",
        OPEN,
        round_scored_wrong,
        "the rules say",
    ),
    (
        "a trick to the wrong seat",
        WITH_AI,
        trick_to_wrong_seat,
        "the rules say seat",
    ),
    (
        "a view with wrong totals",
        OPEN,
        view_totals_wrong,
        "view shows totals",
    ),
    // 4. The status never goes back, a game finishes only after its last round.
    (
        "playing to waiting",
        OPEN,
        back_to_waiting,
        "from playing to waiting",
    ),
    (
        "finished in round 3",
        OPEN,
        finished_early,
        "lobby finished in round 3",
    ),
    (
        "game_finished in round 2",
        WITH_AI,
        game_finished_event_early,
        "game finished in round",
    ),
    (
        "GameFinished after 20 moves",
        WITH_AI,
        finished_note_early,
        "finished after 20 moves",
    ),
    // 5. A game the server owes a move gets it within the bound.
    ("a late AI move", WITH_AI, ai_move_late, "over the bound"),
];

#[test]
fn every_rule_fails_on_its_violation() {
    for (name, table, edit, expected) in CASES {
        let mut steps = record(*table);
        assert!(edit(&mut steps), "{name}: the edit found its frame");
        assert_fails(name, &steps, expected);
    }
}

fn card_of_another_seat(steps: &mut Vec<Step>) -> bool {
    let all = states(steps);
    let theirs = all
        .iter()
        .find(|(_, c, d)| *c == 2 && in_round(d, 3, Phase::Bidding))
        .and_then(|(_, _, d)| d.1.as_ref()?.observation.hand.first().copied());
    let Some(card) = theirs else { return false };
    edit_first(steps, 1, |d| {
        let fits = in_round(d, 3, Phase::Bidding);
        if let (true, Some(g)) = (fits, &mut d.1) {
            g.observation.hand[0] = card;
        }
        fits
    })
}

fn card_in_unknown_field(steps: &mut Vec<Step>) -> bool {
    for (i, c, d) in states(steps) {
        if c == 1 && in_round(&d, 2, Phase::Playing) {
            let text = encode(d).replacen("\"hand\":[", "\"peek\":[\"h14\"],\"hand\":[", 1);
            set_text(steps, i, text);
            return true;
        }
    }
    false
}

fn hidden_bid_shown(steps: &mut Vec<Step>) -> bool {
    edit_first(steps, 1, |d| {
        let Some(g) = &mut d.1 else { return false };
        let o = &mut g.observation;
        let other = (0..o.players).find(|s| *s != g.you && o.has_bid[usize::from(*s)]);
        match (o.phase, other) {
            (Phase::Bidding, Some(s)) => {
                o.bids[usize::from(s)] = Some(0);
                true
            }
            _ => false,
        }
    })
}

fn another_seats_view(steps: &mut Vec<Step>) -> bool {
    let all = states(steps);
    let Some((_, _, theirs)) = all
        .iter()
        .find(|(_, c, d)| *c == 2 && in_round(d, 2, Phase::Playing))
    else {
        return false;
    };
    let theirs = theirs.clone();
    edit_first(steps, 1, |d| {
        let fits = in_round(d, 2, Phase::Playing);
        if fits {
            d.1 = theirs.1.clone();
        }
        fits
    })
}

fn list_dropped(steps: &mut Vec<Step>) -> bool {
    let found = states(steps)
        .into_iter()
        .find(|(_, c, d)| *c == 2 && !d.2.is_empty() && in_round(d, 2, Phase::Playing));
    let Some((i, _, _)) = found else { return false };
    steps.remove(i);
    true
}

fn list_changed(steps: &mut Vec<Step>) -> bool {
    edit_first(steps, 2, |d| {
        let fits = d.2.len() > 1 && in_round(d, 2, Phase::Playing);
        if fits {
            d.2.pop();
        }
        fits
    })
}

fn round_scored_wrong(steps: &mut Vec<Step>) -> bool {
    edit_list(steps, |events| {
        let mut hit = false;
        for e in events.iter_mut() {
            if let Event::RoundFinished { deltas, scores, .. } = e {
                deltas[0] += 10;
                scores[0] += 10;
                hit = true;
            }
        }
        hit
    })
}

fn trick_to_wrong_seat(steps: &mut Vec<Step>) -> bool {
    edit_list(steps, |events| {
        let mut hit = false;
        for e in events.iter_mut() {
            if let Event::TrickCompleted { winner, cards } = e
                && cards.len() == 4
            {
                *winner = (*winner + 1) % 4;
                hit = true;
            }
        }
        hit
    })
}

fn view_totals_wrong(steps: &mut Vec<Step>) -> bool {
    edit_first(steps, 3, |d| {
        let fits = in_round(d, 4, Phase::Playing);
        if let (true, Some(g)) = (fits, &mut d.1) {
            g.observation.scores[0] += 10;
        }
        fits
    })
}

fn back_to_waiting(steps: &mut Vec<Step>) -> bool {
    edit_first(steps, 1, |d| {
        let fits = in_round(d, 2, Phase::Playing);
        if let (true, Some(l)) = (fits, &mut d.0) {
            l.status = LobbyStatus::Waiting;
        }
        fits
    })
}

fn finished_early(steps: &mut Vec<Step>) -> bool {
    edit_first(steps, 1, |d| {
        let fits = in_round(d, 3, Phase::Bidding);
        if let (true, Some(l)) = (fits, &mut d.0) {
            l.status = LobbyStatus::Finished;
        }
        fits
    })
}

fn game_finished_event_early(steps: &mut Vec<Step>) -> bool {
    edit_list(steps, |events| {
        let fits = events
            .iter()
            .any(|e| matches!(e, Event::RoundStarted { round: 2, .. }));
        if fits {
            let scores = vec![0; 4];
            let ranking = wizard_core::game::ranking(&scores);
            events.push(Event::GameFinished { scores, ranking });
        }
        fits
    })
}

fn finished_note_early(steps: &mut Vec<Step>) -> bool {
    let mut moves = 0;
    let cut = steps.iter().position(|s| {
        if let Step::Out(_, Output::Note(Note::MoveApplied { .. })) = s {
            moves += 1;
        }
        moves == 20
    });
    let lobby = steps.iter().find_map(|s| match s {
        Step::Out(_, Output::Note(Note::GameStarted { lobby, .. })) => Some(*lobby),
        _ => None,
    });
    let (Some(cut), Some(lobby)) = (cut, lobby) else {
        return false;
    };
    let now = match &steps[cut] {
        Step::Out(now, _) => *now,
        Step::In(_) => Time::ZERO,
    };
    steps.truncate(cut + 1);
    steps.push(Step::Out(now, Output::Note(Note::GameFinished { lobby })));
    true
}

/// Everything after the first state frame of round 2 that shows an AI seat to act
/// happens later by more than the bound: the AI's move comes late.
fn ai_move_late(steps: &mut Vec<Step>) -> bool {
    let waiting = states(steps).into_iter().find(|(_, _, (l, g, _))| {
        let (Some(l), Some(g)) = (l, g) else {
            return false;
        };
        let to_act = g.observation.to_act.map(usize::from);
        to_act.is_some_and(|s| l.players[s].is_ai) && g.observation.round == 2
    });
    let Some((i, _, _)) = waiting else {
        return false;
    };
    let late = BOUND.ai_wait_us + BOUND.slack_us + 1;
    for s in &mut steps[i + 1..] {
        if let Step::Out(now, _) = s {
            *now = now.plus_us(late);
        }
    }
    true
}

#[test]
fn a_game_left_waiting_on_its_ai_fails_at_the_bound_not_before() {
    let steps = record(WITH_AI);
    let waiting = states(&steps).into_iter().find(|(_, _, (l, g, _))| {
        let (Some(l), Some(g)) = (l, g) else {
            return false;
        };
        let to_act = g.observation.to_act.map(usize::from);
        to_act.is_some_and(|s| l.players[s].is_ai)
    });
    let (i, _, _) = waiting.unwrap();
    let at = match &steps[i] {
        Step::Out(now, _) => *now,
        Step::In(_) => unreachable!("a state frame is an output"),
    };
    // The core stops there: the AI's move (in the same handle call) never comes.
    let cut = &steps[..=i];
    let bound = BOUND.ai_wait_us + BOUND.slack_us;
    let within = check(cut, Some(at.plus_us(bound)));
    assert!(within.violations.is_empty(), "{:#?}", within.violations);
    let past = check(cut, Some(at.plus_us(bound + 1)));
    assert!(
        past.violations.iter().any(|v| v.contains("no move for")),
        "{:#?}",
        past.violations
    );
}
