//! A short duplicate tournament: every seat played once per deal set, figures sane and
//! reproducible under an iteration budget.

use wizard_ai::evaluate::{EvalConfig, evaluate, render_text};
use wizard_core::vocabulary::game::Options;

#[test]
fn a_short_duplicate_tournament_runs_and_repeats() {
    let config = EvalConfig {
        players: vec![3],
        options: Options::default(),
        rules: "default".to_owned(),
        deal_sets: 1,
        seed: 4,
        candidate: "search".parse().unwrap(),
        candidate_name: "search".to_owned(),
        references: vec!["heuristic".parse().unwrap(), "random".parse().unwrap()],
        reference_names: vec!["heuristic".to_owned(), "random".to_owned()],
        time_per_decision: None,
        iterations_max: Some(2),
    };
    let report = evaluate(&config, |_| {}).unwrap();
    let r = &report.results[0];
    assert_eq!((r.players, r.games), (3, 3));
    assert!(r.decisions > 3 * 20, "at least one bid per round per game");
    assert!((0.0..=1.0).contains(&r.win_rate) && (0.0..=1.0).contains(&r.bid_hit_rate));
    // The table mean includes the candidate: both differences have the same sign.
    assert!(r.diff_vs_table_mean * r.diff_vs_others_mean >= 0.0);
    assert!(r.decision_us_p50 <= r.decision_us_p99);
    assert!(render_text(&report).contains("search vs heuristic, random"));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["results"][0]["games"], 3);

    let again = evaluate(&config, |_| {}).unwrap();
    assert_eq!(again.results[0].diff_vs_table_mean, r.diff_vs_table_mean);
}
