//! AI levels (PROTOCOL.md section 6.5) in the service: each request is decided by the
//! player of its level, the easy agent is the core's easy player, and only the
//! primary's own decisions count for its timing.

use std::time::Duration;

use wizard_ai::admission::{Admission, AdmissionConfig, JobAgent, Next, Submit};
use wizard_ai::agent::{self, AgentSpec, Budget, RandomAgent};
use wizard_ai::service::Pool;
use wizard_core::Time;
use wizard_core::vocabulary::game::level::{self, AiLevel};
use wizard_core::vocabulary::game::{Game, Options, bot::Params};
use wizard_core::vocabulary::wire::AiReply;

fn config() -> AdmissionConfig {
    AdmissionConfig {
        workers: 1,
        queue_max: 16,
        degrade_queue_min: 16,
        timing_window: 4,
        timing_age_max_us: 10_000_000,
    }
}

/// A pool whose primary is the random agent (so its replies are recognisable) answers
/// a strong request with the primary, a normal one with the heuristic and an easy one
/// with the easy player, each reply naming its agent.
#[test]
fn the_pool_decides_with_the_player_of_the_level() {
    let (tx, rx) = async_channel::bounded::<wizard_ai::service::Answered>(16);
    let pool = Pool::start(config(), Box::new(RandomAgent), tx, 0, 7);
    let game = Game::new(4, Options::default(), 3, &mut Vec::new()).unwrap();
    let seat = game.next_to_act().unwrap();
    let levels = [
        (1, AiLevel::Strong, "random"),
        (2, AiLevel::Normal, "heuristic"),
        (3, AiLevel::Easy, "easy"),
    ];
    for (id, level, _) in levels {
        assert_eq!(
            pool.submit(id, game.observation(seat), level, 5.0),
            Submit::Queued
        );
    }
    let mut agents = std::collections::BTreeMap::new();
    for _ in 0..levels.len() {
        let reply = rx.recv_blocking().expect("a reply for every request").reply;
        let AiReply::Decision {
            request_id, agent, ..
        } = reply
        else {
            panic!("{reply:?}")
        };
        agents.insert(request_id, agent);
    }
    pool.stop();
    for (id, _, want) in levels {
        assert_eq!(agents[&id], want, "request {id}");
    }
}

/// `easy` parses as an agent and decides exactly as the core's easy player with the
/// same RNG (written once, in the core).
#[test]
fn the_easy_agent_is_the_core_easy_player() {
    let easy = "easy".parse::<AgentSpec>().unwrap().build();
    assert_eq!(easy.name(), "easy");
    assert_eq!(
        "normal".parse::<AgentSpec>().unwrap(),
        "heuristic".parse().unwrap()
    );
    let mut game = Game::new(5, Options::default(), 11, &mut Vec::new()).unwrap();
    let mut decisions = 0;
    while let Some(seat) = game.next_to_act() {
        let obs = game.observation(seat);
        let mut a = agent::decision_rng(5, seat, decisions);
        let mut b = a.clone();
        let got = easy
            .decide(&obs, &Budget::time(Duration::from_millis(1)), &mut a)
            .unwrap();
        let want = level::decide_easy(&Params::default(), &obs, &mut b).unwrap();
        assert_eq!(got, want);
        game.apply(seat, got, &mut Vec::new()).unwrap();
        decisions += 1;
    }
    assert!(decisions > 100);
}

/// A job given to the primary but decided by a weaker level's player leaves the
/// primary's timing alone.
#[test]
fn untimed_finishes_do_not_count_for_the_primary() {
    let t0 = Time(1_000_000);
    let mut a = Admission::new(config());
    a.submit(t0, 1, t0.plus_us(5_000_000));
    let Some(Next::Job(job)) = a.next_job(t0) else {
        panic!("a job")
    };
    assert_eq!(job.agent, JobAgent::Primary);
    a.finished_untimed(t0, 1, JobAgent::Primary).unwrap();
    assert_eq!(a.primary_p90_us(), None);
    a.submit(t0, 2, t0.plus_us(5_000_000));
    a.next_job(t0);
    a.finished(t0, 2, JobAgent::Primary, 40_000).unwrap();
    assert_eq!(a.primary_p90_us(), Some(40_000));
}
