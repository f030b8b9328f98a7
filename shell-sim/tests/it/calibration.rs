//! The calibration file and the documentation agree: docs/SIMULATION.md's calibration
//! part is the one generated from `fixtures/sim-calibration.json`, and every point it
//! names is a scenario of `fixtures/scenarios/`. The simulator with the file's figures
//! gives the embedded AI's share of `search` decisions the real server measured.

use std::path::PathBuf;

use wizard_sim::model::calibration::calibration;

use crate::common::{run, scenario};

/// How far the simulated share of `search` decisions may be from the real server's at a
/// calibration point, relative to the real one.
const SEARCH_SHARE_GAP_MAX: f64 = 0.25;

#[test]
fn the_doc_states_the_figures_of_the_calibration_file() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc = std::fs::read_to_string(root.join("docs/SIMULATION.md")).unwrap();
    let generated = calibration()
        .rewrite_doc(&doc)
        .expect("docs/SIMULATION.md has the calibration markers");
    assert!(
        generated == doc,
        "docs/SIMULATION.md's calibration part differs from fixtures/sim-calibration.json: \
         run `cargo run -p wizard-sim -- calibration-doc --write`"
    );
    for p in &calibration().points {
        let path = root.join(format!("fixtures/scenarios/{}.json", p.scenario));
        assert!(path.exists(), "{} names no scenario", p.scenario);
    }
}

#[test]
fn the_default_cost_model_takes_the_fitted_figures() {
    let cost = wizard_sim::model::cost::CostModel::default();
    let f = calibration().figures;
    assert_eq!(cost.ai_embedded_us, f.ai_embedded_us);
    assert_eq!(cost.ai_embedded_heuristic_us, f.ai_embedded_heuristic_us);
    assert_eq!(cost.ai_embedded_answer_us, f.ai_embedded_answer_us);
    assert_eq!(cost.fallback_move_us, f.fallback_move_us);
    assert_eq!(cost.idle_floor_us_per_s(true), f.idle_floor_ai_on_us_per_s);
    assert_eq!(
        cost.idle_floor_us_per_s(false),
        f.idle_floor_ai_off_us_per_s
    );
    assert_eq!((cost.read_us, cost.write_us), (f.read_us, f.write_us));
}

#[test]
fn the_search_share_follows_the_real_servers_at_the_calibration_points() {
    // The points with the embedded AI, run as the file's figures make the default cost
    // model: the loop's share of each answer paces the games, and the admission machine
    // lets the primary agent decide while the worker's queue is short.
    let mut checked = 0;
    for p in &calibration().points {
        let Some(real) = p.real_search_per_mille else {
            continue;
        };
        let r = run(scenario(&p.scenario), 1);
        let sim = r
            .counters
            .get("ai_embedded_search_per_mille")
            .copied()
            .unwrap_or(0);
        let gap = (sim as f64 - f64::from(real)).abs() / f64::from(real.max(1));
        assert!(
            gap <= SEARCH_SHARE_GAP_MAX,
            "{}: search share {sim} per mille simulated, {real} real",
            p.scenario
        );
        checked += 1;
    }
    assert!(checked > 0, "no calibration point with the embedded AI");
}
