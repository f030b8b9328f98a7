//! Round trips through the in-process AI link ([`wizard_ai::service::local`]) as the
//! embedded server makes them: one decide request at a time, paced, the reply awaited
//! by the submitting thread; prints the round-trip distribution.
//!
//! It separates the causes of a slow round trip: `--nice N` sets the workers' niceness
//! (the server uses 10), `--hogs K` starts K threads that spin at normal priority (other
//! work on the same CPU), and `--agent heuristic|search` chooses how long a decision
//! takes. Pin the process to one CPU to reproduce a server pinned with `taskset`:
//!
//! ```sh
//! cargo build --release -p wizard-ai --example local_round_trip
//! taskset -c 0 target/release/examples/local_round_trip --nice 10 --hogs 1
//! taskset -c 0 target/release/examples/local_round_trip --nice 0 --hogs 1
//! ```

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;
use wizard_ai::service::ServiceOptions;
use wizard_ai::service::local::Local;
use wizard_core::vocabulary::config::{AiAgent, AiServiceConfig};
use wizard_core::vocabulary::game::{AiLevel, Game, Observation, Options, bot};
use wizard_core::vocabulary::wire::{AiReply, AiRequest};

struct Args {
    nice: i32,
    hogs: usize,
    requests: usize,
    pace_us: u64,
    agent: AiAgent,
}

fn args() -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut out = Args {
        nice: 10,
        hogs: 0,
        requests: 2000,
        pace_us: 2000,
        agent: AiAgent::Heuristic,
    };
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("nice") => out.nice = parser.value()?.parse()?,
            Long("hogs") => out.hogs = parser.value()?.parse()?,
            Long("requests") => out.requests = parser.value()?.parse()?,
            Long("pace-us") => out.pace_us = parser.value()?.parse()?,
            Long("agent") => {
                out.agent = match parser.value()?.string()?.as_str() {
                    "search" => AiAgent::Search,
                    _ => AiAgent::Heuristic,
                }
            }
            other => return Err(other.unexpected()),
        }
    }
    Ok(out)
}

/// Observations of seats to act in heuristic games, to ask about in turn.
fn observations(count: usize) -> Vec<Observation> {
    let mut out = Vec::new();
    let mut seed = 1u64;
    while out.len() < count {
        let Ok(mut game) = Game::new(4, Options::default(), seed, &mut Vec::new()) else {
            break;
        };
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        while let Some(seat) = game.next_to_act() {
            let obs = game.observation(seat);
            let Some(action) = bot::decide(&obs, &mut rng) else {
                break;
            };
            out.push(obs);
            if game.apply(seat, action, &mut Vec::new()).is_err() {
                break;
            }
        }
        seed += 1;
    }
    out.truncate(count);
    out
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let i = ((sorted.len().saturating_sub(1)) as f64 * p).round() as usize;
    sorted.get(i).copied().unwrap_or(0)
}

fn main() -> ExitCode {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "local_round_trip: {e}\nusage: local_round_trip [--nice N] [--hogs K] [--requests R] [--pace-us P] [--agent heuristic|search]"
            );
            return ExitCode::from(2);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let hogs: Vec<_> = (0..args.hogs)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            })
        })
        .collect();
    let config = AiServiceConfig {
        agent: args.agent,
        ..AiServiceConfig::default()
    };
    let link = Local::start(
        &config,
        &ServiceOptions {
            worker_nice: args.nice,
            seed: 7,
        },
    );
    let observations = observations(args.requests);
    let mut round_trips_us = Vec::with_capacity(observations.len());
    let mut next = Instant::now();
    for (id, observation) in (1u64..).zip(observations) {
        next += Duration::from_micros(args.pace_us);
        let sent = Instant::now();
        let request = AiRequest::Decide {
            request_id: id,
            observation,
            timeout: 1.0,
            level: AiLevel::Strong,
        };
        let reply = match link.submit(request) {
            Some(reply) => Ok(reply),
            None => link.replies().recv_blocking().map(|a| a.reply),
        };
        let us = u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX);
        if !matches!(reply, Ok(AiReply::Decision { .. })) {
            let _ = writeln!(std::io::stderr(), "request {id}: {reply:?}");
        }
        round_trips_us.push(us);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    stop.store(true, Ordering::Relaxed);
    for h in hogs {
        let _ = h.join();
    }
    round_trips_us.sort_unstable();
    let over = |us: u64| round_trips_us.iter().filter(|&&x| x >= us).count();
    println!(
        "nice {} hogs {} agent {:?}: n {} p50 {} us p90 {} us p99 {} us max {} us; >= 0.4 ms {}, >= 3.2 ms {}, >= 51 ms {}",
        args.nice,
        args.hogs,
        args.agent,
        round_trips_us.len(),
        percentile(&round_trips_us, 0.5),
        percentile(&round_trips_us, 0.9),
        percentile(&round_trips_us, 0.99),
        round_trips_us.last().copied().unwrap_or(0),
        over(400),
        over(3200),
        over(51_200),
    );
    ExitCode::SUCCESS
}
