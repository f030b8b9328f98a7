//! The figures of the cost model fitted against the real server, read at compile time
//! from the one file `bench/calibrate.sh` writes (`fixtures/sim-calibration.json`):
//! the figures, the commit they were measured on, the code paths they model (CI fails
//! once a later commit changes one: `bench/calibration_fresh.sh`), and each point's
//! real and simulated figures, from which docs/SIMULATION.md's table is generated
//! ([`Calibration::markdown`], `wizard-sim calibration-doc`).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The figures file, as compiled in.
pub const CALIBRATION_JSON: &str = include_str!("../../../fixtures/sim-calibration.json");

/// The fitted figures (CPU microseconds, at `speed_factor` 1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figures {
    pub read_us: f64,
    pub write_us: f64,
    pub fallback_move_us: f64,
    pub ai_embedded_us: f64,
    pub ai_embedded_heuristic_us: f64,
    /// The core thread's share of one answer of the embedded AI (its wake-up, the link).
    pub ai_embedded_answer_us: f64,
    /// The idle server's CPU a second with the embedded AI's workers (`EMBEDDED_AI=1`)
    /// and without them.
    pub idle_floor_ai_on_us_per_s: f64,
    pub idle_floor_ai_off_us_per_s: f64,
}

/// One calibration point as measured: the real server's (the medians over its runs) and
/// the simulator's level changes and saturated moves a second.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Point {
    pub scenario: String,
    pub real_levels: String,
    pub sim_levels: String,
    pub worst_gap_s: f64,
    pub real_moves_per_s: f64,
    pub sim_moves_per_s: f64,
    /// With the embedded AI: the share of its decisions the primary agent (`search`)
    /// made, per mille, on the real server and in the simulator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_search_per_mille: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim_search_per_mille: Option<u32>,
    /// How many times the real server was measured at this point, and the least and
    /// the most saturated moves a second of those runs (the host's run-to-run spread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_runs: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_moves_per_s_min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_moves_per_s_max: Option<f64>,
}

/// The figures file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    pub about: String,
    /// The commit the real server was measured on.
    pub measured_on: String,
    /// The command that measures and rewrites this file.
    pub command: String,
    /// The code paths whose cost the figures model.
    pub paths: Vec<String>,
    pub figures: Figures,
    pub points: Vec<Point>,
}

/// The compiled-in calibration (a broken file fails every run at once, and the tests).
pub fn calibration() -> &'static Calibration {
    static PARSED: OnceLock<Calibration> = OnceLock::new();
    PARSED.get_or_init(|| {
        serde_json::from_str(CALIBRATION_JSON)
            .unwrap_or_else(|e| panic!("fixtures/sim-calibration.json: {e}"))
    })
}

/// The markers around the generated part of docs/SIMULATION.md.
pub const DOC_BEGIN: &str = "<!-- calibration: generated from fixtures/sim-calibration.json by `cargo run -p wizard-sim -- calibration-doc --write`; do not edit -->";
pub const DOC_END: &str = "<!-- calibration: end -->";

impl Calibration {
    /// The figures and the points as docs/SIMULATION.md states them (between
    /// [`DOC_BEGIN`] and [`DOC_END`]).
    pub fn markdown(&self) -> String {
        let f = &self.figures;
        let short = self.measured_on.get(..7).unwrap_or(&self.measured_on);
        let mut s = format!(
            "Measured on commit {short} (`{}` rewrites the figures and this table):\n\n\
             | figure | value |\n|---|---:|\n\
             | `read_us`, `write_us` (a frame read, a frame written) | {} us, {} us |\n\
             | `fallback_move_us` (the fallback player deciding a move) | {} us |\n\
             | `ai_embedded_us` (an embedded `search` decision, on the quota) | {} us |\n\
             | `ai_embedded_heuristic_us` (a decision degraded to the heuristic) | {} us |\n\
             | `ai_embedded_answer_us` (the core thread taking an embedded answer: its wake-up, the link) | {} us |\n\
             | `idle_floor_ai_on_us_per_s`, `idle_floor_ai_off_us_per_s` (the idle server's CPU with the embedded AI and without) | {} us, {} us a second |\n\n\
             The real figures are the medians of each point's runs (the last column: how many, and \
             the least and the most moves a second of one run).\n\n\
             | point | level changes, real | level changes, simulated | worst gap | moves/s saturated, real | simulated | sim / real | `search` decisions, real / simulated | real runs |\n\
             |---|---|---|---:|---:|---:|---:|---:|---|\n",
            self.command,
            f.read_us,
            f.write_us,
            f.fallback_move_us,
            f.ai_embedded_us,
            f.ai_embedded_heuristic_us,
            f.ai_embedded_answer_us,
            f.idle_floor_ai_on_us_per_s,
            f.idle_floor_ai_off_us_per_s
        );
        for p in &self.points {
            let ratio = if p.real_moves_per_s > 0.0 {
                p.sim_moves_per_s / p.real_moves_per_s
            } else {
                f64::NAN
            };
            let search = match (p.real_search_per_mille, p.sim_search_per_mille) {
                (Some(real), Some(sim)) => format!("{real} / {sim} per mille"),
                _ => "no AI".to_string(),
            };
            let runs = match (p.real_runs, p.real_moves_per_s_min, p.real_moves_per_s_max) {
                (Some(n), Some(lo), Some(hi)) => format!("{n}: {lo:.0} to {hi:.0}"),
                _ => "1".to_string(),
            };
            s.push_str(&format!(
                "| `{}` | {} | {} | {:.2} s | {:.0} | {:.0} | {ratio:.2} | {search} | {runs} |\n",
                p.scenario,
                p.real_levels,
                p.sim_levels,
                p.worst_gap_s,
                p.real_moves_per_s,
                p.sim_moves_per_s
            ));
        }
        s
    }

    /// `doc` with its generated part replaced by [`markdown`](Self::markdown) (`None`:
    /// the markers are missing).
    pub fn rewrite_doc(&self, doc: &str) -> Option<String> {
        let begin = doc.find(DOC_BEGIN)? + DOC_BEGIN.len();
        let end = doc[begin..].find(DOC_END)? + begin;
        Some(format!(
            "{}\n{}{}",
            &doc[..begin],
            self.markdown(),
            &doc[end..]
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_parses_and_names_a_commit() {
        let c = calibration();
        assert_eq!(c.measured_on.len(), 40, "a full commit id");
        assert!(c.figures.ai_embedded_us > 0.0);
        assert!(!c.paths.is_empty());
    }
}
