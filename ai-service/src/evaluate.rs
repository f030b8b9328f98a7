//! Duplicate-format tournaments: how much stronger a candidate agent is than reference
//! agents, with card luck cancelled.
//!
//! A deal set is one game seed. The engine's deals depend only on the seed (never on
//! the moves), so playing the same seed once per seat, with the candidate rotated
//! through every seat and references in the others, gives every seat's cards to the
//! candidate once. The unit of measurement is the deal set: its figure is the mean,
//! over its games, of the candidate's score minus the table mean (all seats, the
//! candidate included); the 95 % interval is over deal sets. Decision times are the
//! candidate's, wall clock, including forced moves.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde::Serialize;
use wizard_core::vocabulary::game::{Event, Game, Options, Seat, SetupError, selfplay};

use crate::agent::{Agent, AgentSpec, Budget, decision_rng};

/// What to play.
#[derive(Clone, Debug)]
pub struct EvalConfig {
    pub players: Vec<u8>,
    pub options: Options,
    /// The name of the rule preset, for the report.
    pub rules: String,
    pub deal_sets: u32,
    pub seed: u64,
    pub candidate: AgentSpec,
    pub candidate_name: String,
    /// The other seats cycle through these.
    pub references: Vec<AgentSpec>,
    pub reference_names: Vec<String>,
    pub time_per_decision: Option<Duration>,
    pub iterations_max: Option<u32>,
}

/// The figures for one player count.
#[derive(Clone, Debug, Serialize)]
pub struct PlayersReport {
    pub players: u8,
    pub deal_sets: u32,
    pub games: u64,
    /// Candidate's score minus the table mean (all seats), per game, mean over deal sets.
    pub diff_vs_table_mean: f64,
    pub diff_vs_table_ci95: f64,
    /// Candidate's score minus the mean of the other seats, per game.
    pub diff_vs_others_mean: f64,
    pub diff_vs_others_ci95: f64,
    pub candidate_score_mean: f64,
    pub table_score_mean: f64,
    /// Games won, a shared first place counting as a share.
    pub win_rate: f64,
    /// The candidate's rounds with tricks equal to bid.
    pub bid_hit_rate: f64,
    pub decisions: u64,
    pub decision_us_p50: u64,
    pub decision_us_p99: u64,
    pub decision_us_max: u64,
    pub seconds: f64,
}

/// A whole tournament.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub candidate: String,
    pub references: Vec<String>,
    pub rules: String,
    pub seed: u64,
    pub time_per_decision_ms: Option<f64>,
    pub iterations_max: Option<u32>,
    pub results: Vec<PlayersReport>,
}

/// Why a tournament stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvalError {
    Setup(SetupError),
    /// An agent made no decision or an illegal one (a bug in that agent).
    Agent {
        agent: String,
        detail: String,
    },
    NoReferences,
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::Setup(e) => e.fmt(f),
            EvalError::Agent { agent, detail } => write!(f, "agent {agent} failed: {detail}"),
            EvalError::NoReferences => f.write_str("at least one reference agent is needed"),
        }
    }
}

impl std::error::Error for EvalError {}

/// What one game tells about the candidate.
struct GameResult {
    diff_table: f64,
    diff_others: f64,
    candidate_score: f64,
    table_mean: f64,
    win: f64,
    rounds: u32,
    bids_hit: u32,
}

/// Plays the tournament; `progress` hears a line after every tenth of each player count.
pub fn evaluate(config: &EvalConfig, mut progress: impl FnMut(&str)) -> Result<Report, EvalError> {
    if config.references.is_empty() {
        return Err(EvalError::NoReferences);
    }
    let candidate = config.candidate.build();
    let references: Vec<Box<dyn Agent>> = config.references.iter().map(AgentSpec::build).collect();
    let mut results = Vec::new();
    for &players in &config.players {
        let table = Table {
            config,
            players,
            candidate: candidate.as_ref(),
            references: &references,
        };
        results.push(table.play_all(&mut progress)?);
    }
    Ok(Report {
        candidate: config.candidate_name.clone(),
        references: config.reference_names.clone(),
        rules: config.rules.clone(),
        seed: config.seed,
        time_per_decision_ms: config.time_per_decision.map(|d| d.as_secs_f64() * 1000.0),
        iterations_max: config.iterations_max,
        results,
    })
}

/// The agents at one player count.
struct Table<'a> {
    config: &'a EvalConfig,
    players: u8,
    candidate: &'a dyn Agent,
    references: &'a [Box<dyn Agent>],
}

/// Sums over games, for the means of the report.
#[derive(Default)]
struct Totals {
    candidate_score: f64,
    table_mean: f64,
    wins: f64,
    rounds: u32,
    bids_hit: u32,
    games: u64,
}

impl Table<'_> {
    fn play_all(&self, progress: &mut impl FnMut(&str)) -> Result<PlayersReport, EvalError> {
        let (config, players) = (self.config, self.players);
        let started = Instant::now();
        let mut per_set_table = Vec::new();
        let mut per_set_others = Vec::new();
        let mut totals = Totals::default();
        let mut times_us = Vec::new();
        for set in 0..config.deal_sets {
            let deal_seed = config
                .seed
                .wrapping_mul(1_000_003)
                .wrapping_add(u64::from(set));
            let (mut t, mut o) = (0.0, 0.0);
            for candidate_seat in 0..players {
                let r = self.play_game(deal_seed, candidate_seat, &mut times_us)?;
                t += r.diff_table;
                o += r.diff_others;
                totals.candidate_score += r.candidate_score;
                totals.table_mean += r.table_mean;
                totals.wins += r.win;
                totals.rounds += r.rounds;
                totals.bids_hit += r.bids_hit;
                totals.games += 1;
            }
            per_set_table.push(t / f64::from(players));
            per_set_others.push(o / f64::from(players));
            let tenth = (config.deal_sets / 10).max(1);
            if (set + 1) % tenth == 0 {
                let (m, h) = selfplay::mean_ci95(&per_set_table);
                progress(&format!(
                    "players {players}: {} / {} deal sets, diff {m:.1} +- {h:.1}",
                    set + 1,
                    config.deal_sets
                ));
            }
        }
        let (dt, ht) = selfplay::mean_ci95(&per_set_table);
        let (d_o, h_o) = selfplay::mean_ci95(&per_set_others);
        times_us.sort_unstable();
        #[allow(clippy::cast_precision_loss)]
        let g = totals.games.max(1) as f64;
        Ok(PlayersReport {
            players,
            deal_sets: config.deal_sets,
            games: totals.games,
            diff_vs_table_mean: dt,
            diff_vs_table_ci95: ht,
            diff_vs_others_mean: d_o,
            diff_vs_others_ci95: h_o,
            candidate_score_mean: totals.candidate_score / g,
            table_score_mean: totals.table_mean / g,
            win_rate: totals.wins / g,
            bid_hit_rate: f64::from(totals.bids_hit) / f64::from(totals.rounds.max(1)),
            decisions: times_us.len() as u64,
            decision_us_p50: percentile(&times_us, 50),
            decision_us_p99: percentile(&times_us, 99),
            decision_us_max: times_us.last().copied().unwrap_or(0),
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// The agent playing `seat`: the candidate at its seat, the references cycling
    /// through the seats after it.
    fn agent_at(&self, seat: Seat, candidate_seat: Seat) -> Result<&dyn Agent, EvalError> {
        if seat == candidate_seat {
            return Ok(self.candidate);
        }
        let players = self.players;
        let k = usize::from((seat + players - candidate_seat - 1) % players);
        match self.references.get(k % self.references.len().max(1)) {
            Some(a) => Ok(a.as_ref()),
            None => Err(EvalError::NoReferences),
        }
    }

    fn play_game(
        &self,
        deal_seed: u64,
        candidate_seat: Seat,
        times_us: &mut Vec<u64>,
    ) -> Result<GameResult, EvalError> {
        let (config, players) = (self.config, self.players);
        let mut events = Vec::new();
        let mut game =
            Game::new(players, config.options, deal_seed, &mut events).map_err(EvalError::Setup)?;
        let agent_seed = deal_seed ^ (u64::from(candidate_seat) << 48);
        let mut decision_index = vec![0u64; usize::from(players)];
        while let Some(seat) = game.next_to_act() {
            let agent = self.agent_at(seat, candidate_seat)?;
            let obs = game.observation(seat);
            let index = decision_index.get(usize::from(seat)).copied().unwrap_or(0);
            let mut rng = decision_rng(agent_seed, seat, index);
            if let Some(i) = decision_index.get_mut(usize::from(seat)) {
                *i += 1;
            }
            let started = Instant::now();
            let budget = Budget {
                deadline: config.time_per_decision.map(|d| started + d),
                iterations_max: config.iterations_max,
            };
            let action = agent
                .decide(&obs, &budget, &mut rng)
                .map_err(|e| EvalError::Agent {
                    agent: agent.name().to_owned(),
                    detail: e.to_string(),
                })?;
            if seat == candidate_seat {
                times_us.push(u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX));
            }
            game.apply(seat, action, &mut events)
                .map_err(|e| EvalError::Agent {
                    agent: agent.name().to_owned(),
                    detail: format!("illegal {action:?}: {e}"),
                })?;
        }
        Ok(game_result(&events, game.scores(), candidate_seat, players))
    }
}

/// The candidate's figures from a finished game's `events` and `scores`.
fn game_result(events: &[Event], scores: &[i32], candidate_seat: Seat, players: u8) -> GameResult {
    let c = usize::from(candidate_seat);
    let mut rounds = 0;
    let mut bids_hit = 0;
    for e in events {
        if let Event::RoundFinished { bids, tricks, .. } = e {
            rounds += 1;
            if bids.get(c).is_some() && bids.get(c) == tricks.get(c) {
                bids_hit += 1;
            }
        }
    }
    let mine = f64::from(scores.get(c).copied().unwrap_or(0));
    let total: f64 = scores.iter().map(|&s| f64::from(s)).sum();
    let n = f64::from(players);
    let best = scores.iter().copied().max().unwrap_or(0);
    let sharing = scores.iter().filter(|&&s| s == best).count();
    #[allow(clippy::cast_precision_loss)]
    let win = if mine == f64::from(best) {
        1.0 / sharing as f64
    } else {
        0.0
    };
    GameResult {
        diff_table: mine - total / n,
        diff_others: mine - (total - mine) / (n - 1.0),
        candidate_score: mine,
        table_mean: total / n,
        win,
        rounds,
        bids_hit,
    }
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[u64], pct: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (sorted.len() * pct).div_ceil(100).max(1);
    sorted.get(rank - 1).copied().unwrap_or(0)
}

/// The report as a table for people.
pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    let budget = match (report.time_per_decision_ms, report.iterations_max) {
        (Some(t), Some(i)) => format!("{t} ms or {i} iterations per decision"),
        (Some(t), None) => format!("{t} ms per decision"),
        (None, Some(i)) => format!("{i} iterations per decision"),
        (None, None) => "default budget".to_owned(),
    };
    let _ = writeln!(
        out,
        "{} vs {} ({} rules, {budget}, seed {})",
        report.candidate,
        report.references.join(", "),
        report.rules,
        report.seed
    );
    let _ = writeln!(
        out,
        "players  sets  games  diff/game vs table mean [95% CI]  vs others  win rate  bid hit  p50 ms  p99 ms  max ms"
    );
    for r in &report.results {
        #[allow(clippy::cast_precision_loss)]
        let ms = |us: u64| us as f64 / 1000.0;
        let _ = writeln!(
            out,
            "{:>7}  {:>4}  {:>5}  {:>9.1} [{:>6.1}, {:>6.1}]          {:>9.1}  {:>7.1}%  {:>6.1}%  {:>6.2}  {:>6.2}  {:>6.2}",
            r.players,
            r.deal_sets,
            r.games,
            r.diff_vs_table_mean,
            r.diff_vs_table_mean - r.diff_vs_table_ci95,
            r.diff_vs_table_mean + r.diff_vs_table_ci95,
            r.diff_vs_others_mean,
            100.0 * r.win_rate,
            100.0 * r.bid_hit_rate,
            ms(r.decision_us_p50),
            ms(r.decision_us_p99),
            ms(r.decision_us_max),
        );
    }
    out
}
