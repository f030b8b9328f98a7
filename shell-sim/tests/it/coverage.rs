//! Coverage that bites: for each fact that tells a checker's rule was put to work, a
//! swarm seed that reaches it, run alone. A fact the swarm stops reaching (a change to
//! the scenario draws, or to the code that counts it) fails here by name; the swarm
//! prints the first seed reaching each fact (`wizard-sim swarm --seeds 200`).

use crate::common::assert_clean;

/// Runs swarm seed `seed` and checks it passes and reaches `fact`.
fn reaches(fact: &str, seed: u64) {
    let s = wizard_sim::runs::swarm::scenario(seed);
    let r = wizard_sim::run(s, seed).unwrap();
    assert_clean(&r, &[]);
    assert!(
        r.coverage.contains_key(fact),
        "swarm seed {seed} no longer reaches {fact} (it reached {:?}); `wizard-sim swarm \
         --seeds 200` names the first seed that does",
        r.coverage.keys().collect::<Vec<_>>()
    );
    assert!(
        wizard_sim::runs::swarm::COVERAGE_REQUIRED.contains(&fact),
        "{fact} is not required of the swarm"
    );
}

macro_rules! reaches {
    ($($test:ident: $fact:literal at $seed:literal;)*) => {
        $(
            #[test]
            fn $test() {
                reaches($fact, $seed);
            }
        )*
    };
}

reaches! {
    // A slow reader's queue replaced a `state` without events by a newer one: the
    // client's stream check holds no `state` with events went the same way.
    replaced_queued_state: "outbox_state_replaced" at 2;
    // The view checkers: a list compared across seats (a lost or missed list), a
    // connection joining a running game, hands shown (hand leaks), tricks, rounds and
    // games recomputed by the oracle (lost events, wrong scores).
    shared_event_list: "event_list_shared" at 1;
    joined_midgame: "view_joined_midgame" at 1;
    hands_shown: "views_hands" at 1;
    trick_judged: "oracle_trick_judged" at 1;
    round_scored: "oracle_round_scored" at 1;
    game_ranked: "oracle_game_ranked" at 20;
    // Hidden bids in the bidding phase (hidden-bid leaks), spectators' views.
    hidden_bids: "views_hidden_bids" at 12;
    spectators: "views_spectators" at 1;
    // The process killed and restored from its store, and a player resuming in its
    // game, held to what it saw before the kill.
    restarted: "restart" at 22;
    resumed: "restart_resumed" at 22;
}

reaches! {
    // Chat lines checked across a lobby's connections, reaching three or more, giving
    // way in a slow reader's queue; lobbies with several spectators.
    chat_checked: "chat_checked" at 2;
    chat_spread: "chat_spread" at 2;
    chat_gap: "chat_gap" at 2;
    many_spectators: "spectators_many" at 1;
}

reaches! {
    // Quick play: a table of players, a table filled with AI seats after
    // QUICK_PLAY_WAIT, a ticket cancelled, a player walking away while queued, and
    // `quick_play` refused `busy` (the quick-play checker holds each to its promise).
    quick_seated_full: "quick_seated_full" at 3;
    quick_seated_with_ai: "quick_seated_with_ai" at 4;
    quick_cancelled: "quick_cancelled" at 4;
    quick_walked_away: "quick_walked_away" at 14;
    quick_refused_busy: "quick_refused_busy" at 7;
}
