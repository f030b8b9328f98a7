//! The `search` agent's cost per decision over a fixed, seeded set of real game
//! positions: prints the CPU time per decision (p50, p99, mean, max) of this thread.
//!
//! The decision set: for 3 to 6 players, `--games` games (seeds 1..) played by the
//! core's heuristic; every `--stride`-th decision with more than one legal action is
//! kept (trump choices, bids, early and late plays alike). Each is searched with the
//! RNG `decision_rng(seed, seat, index)`, so a run is deterministic under an iteration
//! budget; `checksum` (a hash of every chosen action) tells whether two builds chose
//! alike, and `--actions FILE` writes the chosen actions, one a line, to compare them.
//!
//! With `--by-round` it also prints the mean per decision for each player count and
//! round (the cards each seat holds): a search decision costs more as hands grow.
//!
//! ```sh
//! cargo build --release -p wizard-ai --example search_cost
//! taskset -c 1 target/release/examples/search_cost --iterations 200
//! taskset -c 1 target/release/examples/search_cost --iterations 200 --time-ms 25
//! ```

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;
use wizard_ai::agent::{Agent, Budget, decision_rng};
use wizard_ai::search::{self, SearchConfig};
use wizard_core::vocabulary::game::{Action, Game, Observation, Options, Phase, bot};

/// What the command line sets.
struct Args {
    iterations_max: u32,
    time_ms: Option<u64>,
    games: u64,
    stride: usize,
    repeat: u32,
    actions: Option<String>,
    stop_z: Option<f32>,
    stop_loss: Option<f32>,
    stop_worlds_min: Option<u32>,
    compare: bool,
    by_round: bool,
}

fn args() -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut out = Args {
        iterations_max: 200,
        time_ms: None,
        games: 4,
        stride: 7,
        repeat: 1,
        actions: None,
        stop_z: None,
        stop_loss: None,
        stop_worlds_min: None,
        compare: false,
        by_round: false,
    };
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("iterations") => out.iterations_max = parser.value()?.parse()?,
            Long("time-ms") => out.time_ms = Some(parser.value()?.parse()?),
            Long("games") => out.games = parser.value()?.parse()?,
            Long("stride") => out.stride = parser.value()?.parse::<usize>()?.max(1),
            Long("repeat") => out.repeat = parser.value()?.parse::<u32>()?.max(1),
            Long("actions") => out.actions = Some(parser.value()?.string()?),
            Long("stop-z") => out.stop_z = Some(parser.value()?.parse()?),
            Long("stop-loss") => out.stop_loss = Some(parser.value()?.parse()?),
            Long("stop-min") => out.stop_worlds_min = Some(parser.value()?.parse()?),
            Long("compare") => out.compare = true,
            Long("by-round") => out.by_round = true,
            other => return Err(other.unexpected()),
        }
    }
    Ok(out)
}

/// With `--by-round`: calls of the heuristic agent per decision, timed together.
const HEURISTIC_REPEAT: u32 = 20;

/// One decision of the set, with the seed its RNG is drawn from.
struct Decision {
    obs: Observation,
    seed: u64,
    index: u64,
    kind: &'static str,
}

fn kind(obs: &Observation) -> &'static str {
    match obs.phase {
        Phase::ChoosingTrump => "trump",
        Phase::Bidding => "bid",
        _ => {
            let done: u8 = obs.tricks_won.iter().sum();
            if u16::from(done) * 2 < u16::from(obs.round) {
                "play-early"
            } else {
                "play-late"
            }
        }
    }
}

fn decision_set(games: u64, stride: usize) -> Result<Vec<Decision>, String> {
    let mut out = Vec::new();
    let mut counter = 0usize;
    for players in 3..=6u8 {
        for g in 1..=games {
            let seed = u64::from(players) * 1000 + g;
            let mut game = Game::new(players, Options::default(), seed, &mut Vec::new())
                .map_err(|e| format!("game {seed}: {e}"))?;
            let mut rng = ChaCha12Rng::seed_from_u64(seed);
            let mut index = 0u64;
            while let Some(seat) = game.next_to_act() {
                let obs = game.observation(seat);
                let action = bot::decide(&obs, &mut rng)
                    .ok_or_else(|| format!("game {seed}: no action for seat {seat}"))?;
                if obs.legal_actions.len() > 1 {
                    if counter.is_multiple_of(stride) {
                        out.push(Decision {
                            kind: kind(&obs),
                            obs,
                            seed,
                            index,
                        });
                    }
                    counter += 1;
                }
                game.apply(seat, action, &mut Vec::new())
                    .map_err(|e| format!("game {seed}: {e:?}"))?;
                index += 1;
            }
        }
    }
    Ok(out)
}

fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn summary(name: &str, mut us: Vec<u64>) -> String {
    us.sort_unstable();
    let n = us.len().max(1) as u64;
    format!(
        "{name:<11} n {:>4}  p50 {:>6} us  p99 {:>6} us  mean {:>6} us  max {:>6} us",
        us.len(),
        percentile(&us, 0.50),
        percentile(&us, 0.99),
        us.iter().sum::<u64>() / n,
        us.last().copied().unwrap_or(0),
    )
}

fn main() -> ExitCode {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "search_cost: {e}\nusage: search_cost [--iterations N] [--time-ms MS] [--games G] [--stride K] [--repeat R] [--actions FILE] [--stop-z Z] [--stop-loss POINTS] [--stop-min N] [--compare] [--by-round]"
            );
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "search_cost: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let set = decision_set(args.games, args.stride)?;
    let mut config = SearchConfig::default();
    if let Some(z) = args.stop_z {
        config.stop_z = z;
    }
    if let Some(x) = args.stop_loss {
        config.stop_loss = x;
    }
    if let Some(n) = args.stop_worlds_min {
        config.stop_worlds_min = n;
    }
    let full = SearchConfig {
        stop_z: 0.0,
        ..config
    };
    // With --compare: decisions that differ from the full search (stopping rule off),
    // and the full search's value lost by them (its best mean minus the chosen's).
    let (mut differ, mut regret) = (0u32, 0.0f64);
    let mut all = Vec::new();
    let mut by_kind: Vec<(&'static str, Vec<u64>)> = ["trump", "bid", "play-early", "play-late"]
        .into_iter()
        .map(|k| (k, Vec::new()))
        .collect();
    // CPU microseconds summed and decisions counted, by player count and round: the
    // search's, and the heuristic agent's (timed over HEURISTIC_REPEAT calls).
    let mut by_round: std::collections::BTreeMap<(usize, u8), (u64, u64, u64)> =
        std::collections::BTreeMap::new();
    let heuristic = wizard_ai::agent::HeuristicAgent::default();
    let mut checksum: u64 = 0xcbf2_9ce4_8422_2325;
    let mut worlds = 0u64;
    // Decisions answered without sampling a world (forced, interchangeable, ...).
    let mut unsearched = 0u64;
    // Searched decisions by worlds used: up to 40, up to 127, 128 to the cap - 1, the cap.
    let mut by_worlds = [0u32; 4];
    let mut lines = String::new();
    for pass in 0..args.repeat {
        for d in &set {
            let mut rng = decision_rng(d.seed, d.obs.to_act.unwrap_or(0), d.index);
            let budget = Budget {
                deadline: args
                    .time_ms
                    .map(|ms| std::time::Instant::now() + Duration::from_millis(ms)),
                iterations_max: Some(args.iterations_max),
            };
            let started = thread_cpu();
            let out = search::search(&d.obs, &budget, &config, &mut rng)
                .map_err(|e| format!("decision {}: {e}", d.index))?;
            let us = u64::try_from((thread_cpu() - started).as_micros()).unwrap_or(u64::MAX);
            all.push(us);
            if args.by_round && pass == 0 {
                let started = thread_cpu();
                for _ in 0..HEURISTIC_REPEAT {
                    let _ = heuristic.decide(&d.obs, &budget, &mut rng);
                }
                let h_ns = u64::try_from((thread_cpu() - started).as_nanos()).unwrap_or(u64::MAX);
                let cell = by_round
                    .entry((d.obs.scores.len(), d.obs.round))
                    .or_default();
                *cell = (
                    cell.0 + us,
                    cell.1 + h_ns / u64::from(HEURISTIC_REPEAT),
                    cell.2 + 1,
                );
            }
            if let Some((_, v)) = by_kind.iter_mut().find(|(k, _)| *k == d.kind) {
                v.push(us);
            }
            if pass == 0 && args.compare {
                let mut rng = decision_rng(d.seed, d.obs.to_act.unwrap_or(0), d.index);
                let reference = search::search(&d.obs, &budget, &full, &mut rng)
                    .map_err(|e| format!("decision {}: {e}", d.index))?;
                if reference.action != out.action {
                    differ += 1;
                    let of = |a: Action| {
                        reference
                            .values
                            .iter()
                            .find(|(x, _)| *x == a)
                            .map_or(0.0, |(_, v)| *v)
                    };
                    regret += of(reference.action) - of(out.action);
                }
            }
            if pass == 0 {
                worlds += u64::from(out.worlds);
                unsearched += u64::from(out.fallback.is_some());
                if out.fallback.is_none() {
                    let bucket = match out.worlds {
                        w if w >= args.iterations_max => 3,
                        w if w >= 128 => 2,
                        w if w > 40 => 1,
                        _ => 0,
                    };
                    by_worlds[bucket] += 1;
                }
                let code = match out.action {
                    Action::ChooseTrump { suit } => format!("trump {}", suit.index()),
                    Action::Bid { bid } => format!("bid {bid}"),
                    Action::Play { card } => format!("play {}", card.index()),
                };
                for b in code.bytes().chain(std::iter::once(b'\n')) {
                    checksum = (checksum ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
                }
                let _ = writeln!(lines, "{code}");
            }
        }
    }
    if let Some(path) = &args.actions {
        std::fs::write(path, &lines).map_err(|e| format!("cannot write {path}: {e}"))?;
    }
    println!(
        "decisions {} x {} passes, iterations {}, time {:?} ms, worlds/decision {:.1}, unsearched {unsearched}, checksum {checksum:016x}",
        set.len(),
        args.repeat,
        args.iterations_max,
        args.time_ms,
        worlds as f64 / set.len().max(1) as f64,
    );
    println!(
        "searched decisions by worlds: <=40 {}, 41-127 {}, 128-{} {}, {} (the cap) {}",
        by_worlds[0],
        by_worlds[1],
        args.iterations_max.saturating_sub(1),
        by_worlds[2],
        args.iterations_max,
        by_worlds[3]
    );
    if args.compare {
        println!(
            "differ from the full search: {differ} of {} decisions, full-search value lost {:.3} points per decision",
            set.len(),
            regret / set.len().max(1) as f64
        );
    }
    println!("{}", summary("all", all));
    for (k, v) in by_kind {
        println!("{}", summary(k, v));
    }
    if args.by_round {
        for ((players, round), (us, h_ns, n)) in by_round {
            println!(
                "players {players} round {round:>2}: n {n:>4} search mean {:>6} us, heuristic mean {:>6} ns",
                us / n.max(1),
                h_ns / n.max(1)
            );
        }
    }
    Ok(())
}
