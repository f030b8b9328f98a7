//! The checkers of what players are shown (`games.rs`), one rule at a time: each
//! passes on real games played through the core (`recorded.rs`), and fails on a copy
//! of one of them with a hand-made violation (a frame edited, dropped or moved in
//! time).

use wizard_core::Time;
use wizard_core::vocabulary::game::{Event, Phase};
use wizard_core::vocabulary::io::{ConnId, Note, Output};
use wizard_core::vocabulary::wire::LobbyStatus;

use crate::recorded::*;

#[test]
fn real_games_pass_every_checker_of_views() {
    for t in [OPEN, WITH_AI, HIDDEN, RECONNECT, ALONE, WATCHED] {
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
        // Spectators' views (`you` null) are decoded whole, and only theirs.
        assert_eq!(seen.views_whole, seen.spectator_views, "{t:?}");
        assert_eq!(
            seen.spectator_views > 100,
            t.spectators > 0,
            "{t:?}: {seen:?}"
        );
        // Only a game nobody saw for a while has the oracle start again from a view.
        assert_eq!(seen.resyncs, u64::from(t.humans == 1), "{t:?}");
        let finished = steps
            .iter()
            .filter(|s| matches!(s, Step::Out(_, Output::Note(Note::GameFinished { .. }))))
            .count();
        assert_eq!(finished, 1, "{t:?}: the recorded game finished");
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
            card_of_another_seat as fn(&mut Steps) -> bool,
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
        let mut steps = Steps(record(OPEN));
        assert!(edit(&mut steps), "{name}: the edit found its frame");
        let mut steps = steps.0;
        reorder(&mut steps);
        assert_fails(name, &steps, expected);
    }
}

/// Each rule, broken by hand in a copy of a real game: (rule, table, edit, what the
/// violation says).
type Case = (&'static str, Table, fn(&mut Steps) -> bool, &'static str);

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
        "a card of seat 0 shown to a spectator",
        WATCHED,
        card_shown_to_spectator,
        "a spectator was shown a hand",
    ),
    (
        "a hidden bid shown to a spectator",
        WATCHED,
        hidden_bid_shown_to_spectator,
        "a spectator sees the hidden bid",
    ),
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
    (
        "wrong totals after a resync",
        ALONE,
        totals_wrong_after_resync,
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
        let mut steps = Steps(record(*table));
        assert!(edit(&mut steps), "{name}: the edit found its frame");
        assert_fails(name, &steps.0, expected);
    }
}

fn card_of_another_seat(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
    let all = states(steps);
    let theirs = all
        .iter()
        .find(|(_, c, d)| *c == ConnId(2) && in_round(d, 3, Phase::Bidding))
        .and_then(|(_, _, d)| d.1.as_ref()?.observation.hand.first().copied());
    let Some(card) = theirs else { return false };
    edit_first(steps, ConnId(1), |d| {
        let fits = in_round(d, 3, Phase::Bidding);
        if let (true, Some(g)) = (fits, &mut d.1) {
            g.observation.hand[0] = card;
        }
        fits
    })
}

fn card_in_unknown_field(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
    for (i, c, d) in states(steps) {
        if c == ConnId(1) && in_round(&d, 2, Phase::Playing) {
            let text = encode(d).replacen("\"hand\":[", "\"peek\":[\"h14\"],\"hand\":[", 1);
            set_text(steps, i, text);
            return true;
        }
    }
    false
}

fn hidden_bid_shown(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
    edit_first(steps, ConnId(1), |d| {
        let Some(g) = &mut d.1 else { return false };
        let o = &mut g.observation;
        let other = (0..o.players).find(|s| Some(*s) != g.you && o.has_bid[usize::from(*s)]);
        match (o.phase, other) {
            (Phase::Bidding, Some(s)) => {
                o.bids[usize::from(s)] = Some(0);
                true
            }
            _ => false,
        }
    })
}

/// The first card of seat 0's hand in round 3, put into a spectator's hand.
fn card_shown_to_spectator(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
    let theirs = states(steps)
        .into_iter()
        .find(|(_, c, d)| *c == ConnId(1) && in_round(d, 3, Phase::Playing))
        .and_then(|(_, _, d)| d.1.as_ref()?.observation.hand.first().copied());
    let Some(card) = theirs else { return false };
    edit_first(steps, ConnId(50), |d| {
        let fits = in_round(d, 3, Phase::Playing);
        if let (true, Some(g)) = (fits, &mut d.1) {
            g.observation.hand.push(card);
        }
        fits
    })
}

fn hidden_bid_shown_to_spectator(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
    edit_first(steps, ConnId(51), |d| {
        let Some(g) = &mut d.1 else { return false };
        let o = &mut g.observation;
        let bidder = (0..o.players).find(|s| o.has_bid[usize::from(*s)]);
        match (o.phase, bidder) {
            (Phase::Bidding, Some(s)) if o.has_bid.contains(&false) => {
                o.bids[usize::from(s)] = Some(1);
                true
            }
            _ => false,
        }
    })
}

fn another_seats_view(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
    let all = states(steps);
    let Some((_, _, theirs)) = all
        .iter()
        .find(|(_, c, d)| *c == ConnId(2) && in_round(d, 2, Phase::Playing))
    else {
        return false;
    };
    let theirs = theirs.clone();
    edit_first(steps, ConnId(1), |d| {
        let fits = in_round(d, 2, Phase::Playing);
        if fits {
            d.1 = theirs.1.clone();
        }
        fits
    })
}

fn list_dropped(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
    let found = states(steps)
        .into_iter()
        .find(|(_, c, d)| *c == ConnId(2) && !d.2.is_empty() && in_round(d, 2, Phase::Playing));
    let Some((i, _, _)) = found else { return false };
    steps.remove(i);
    true
}

fn list_changed(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
    edit_first(steps, ConnId(2), |d| {
        let fits = d.2.len() > 1 && in_round(d, 2, Phase::Playing);
        if fits {
            d.2.pop();
        }
        fits
    })
}

fn round_scored_wrong(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
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

fn trick_to_wrong_seat(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
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

fn view_totals_wrong(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
    edit_first(steps, ConnId(3), |d| {
        let fits = in_round(d, 4, Phase::Playing);
        if let (true, Some(g)) = (fits, &mut d.1) {
            g.observation.scores[0] += 10;
        }
        fits
    })
}

/// After the only human came back (connection 100), the oracle starts from its
/// snapshot and judges the views after it.
fn totals_wrong_after_resync(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
    edit_first(steps, ConnId(100), |d| {
        let fits = in_round(d, 6, Phase::Playing);
        if let (true, Some(g)) = (fits, &mut d.1) {
            g.observation.scores[1] -= 10;
        }
        fits
    })
}

fn back_to_waiting(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
    edit_first(steps, ConnId(1), |d| {
        let fits = in_round(d, 2, Phase::Playing);
        if let (true, Some(l)) = (fits, &mut d.0) {
            l.status = LobbyStatus::Waiting;
        }
        fits
    })
}

fn finished_early(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
    edit_first(steps, ConnId(1), |d| {
        let fits = in_round(d, 3, Phase::Bidding);
        if let (true, Some(l)) = (fits, &mut d.0) {
            l.status = LobbyStatus::Finished;
        }
        fits
    })
}

fn game_finished_event_early(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
    edit_list(steps, |events| {
        let fits = events
            .iter()
            .any(|e| matches!(e, Event::RoundStarted { round: 2, .. }));
        if fits {
            let scores = vec![0; 4];
            let ranking = wizard_core::vocabulary::game::ranking(&scores);
            events.push(Event::GameFinished { scores, ranking });
        }
        fits
    })
}

fn finished_note_early(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
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
fn ai_move_late(rec: &mut Steps) -> bool {
    let steps = &mut rec.0;
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

/// The core may still address a connection it asked to close (its session is not gone
/// until the close is reported): those frames are never delivered, the outbound queue
/// takes nothing after a close, so they are no views. Swarm seed 6764 (a junk sender
/// closed with 1003, then shown an AI's move) found the checkers judging them.
#[test]
fn frames_after_the_cores_close_are_no_views() {
    let mut steps = record(WITH_AI);
    let first = states(&steps)
        .into_iter()
        .find(|(_, c, d)| *c == ConnId(2) && !d.2.is_empty() && in_round(d, 2, Phase::Playing));
    let (i, _, _) = first.unwrap();
    let now = match &steps[i] {
        Step::Out(now, _) => *now,
        Step::In(_) => unreachable!("a state frame is an output"),
    };
    let code = wizard_core::vocabulary::wire::CloseCode::BinaryFrame;
    steps.insert(
        i,
        Step::Out(
            now,
            Output::Close {
                conn: ConnId(2),
                code,
            },
        ),
    );
    let r = check(&steps, None);
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
}
