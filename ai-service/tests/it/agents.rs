//! The agents and the reply they produce: legal actions only, and the reply's `agent`
//! field names who decided.

use wizard_ai::admission::{Admission, AdmissionConfig, JobAgent, Next, Submit};
use wizard_ai::agent::{
    Agent, AgentSpec, Budget, HeuristicAgent, RandomAgent, SearchAgent, answer, decision_rng,
};
use wizard_core::Time;
use wizard_core::vocabulary::game::Options;
use wizard_core::vocabulary::wire::{AiErrorCode, AiReply};

use crate::search::{options, random_position};

#[test]
fn every_agent_decides_legally_and_deterministically() {
    let agents: Vec<Box<dyn Agent>> = vec![
        Box::new(RandomAgent),
        Box::new(HeuristicAgent::default()),
        Box::new(HeuristicAgent::variant(0.3, 0.1, 0.9)),
        Box::new(SearchAgent::default()),
    ];
    for seed in 0..24u64 {
        let players = 3 + u8::try_from(seed % 4).unwrap();
        let steps = u32::try_from(seed * 17 % 250).unwrap();
        let opt = options(u8::try_from(seed % 6).unwrap());
        let Some((game, seat)) = random_position(players, opt, seed, steps) else {
            continue;
        };
        let obs = game.observation(seat);
        for agent in &agents {
            let decide = || {
                agent
                    .decide(
                        &obs,
                        &Budget::iterations(3),
                        &mut decision_rng(seed, seat, 1),
                    )
                    .unwrap()
            };
            let a = decide();
            assert!(
                obs.legal_actions.contains(&a),
                "{} chose {a:?}",
                agent.name()
            );
            assert_eq!(a, decide());
        }
    }
}

#[test]
fn agent_specs_parse() {
    assert_eq!("random".parse::<AgentSpec>().unwrap(), AgentSpec::Random);
    assert!(
        matches!("search:window=1.5,sigma=0".parse::<AgentSpec>(), Ok(AgentSpec::Search(c)) if c.bid_window == 1.5)
    );
    assert!(matches!(
        "heuristic:aggression=0.5".parse::<AgentSpec>(),
        Ok(AgentSpec::Heuristic { aggression, .. }) if aggression == 0.5
    ));
    assert!("search:aggression=1".parse::<AgentSpec>().is_err());
    assert!("minimax".parse::<AgentSpec>().is_err());
}

/// The admission machine picks the agent; the reply names it.
#[test]
fn the_reply_names_the_agent_that_decided() {
    let primary = SearchAgent::default();
    let heuristic = HeuristicAgent::default();
    let mut admission = Admission::new(AdmissionConfig {
        workers: 1,
        queue_max: 8,
        degrade_queue_min: 1,
        timing_window: 8,
        timing_age_max_us: 60_000_000,
    });
    let (game, seat) = random_position(4, Options::default(), 9, 12).unwrap();
    let obs = game.observation(seat);
    let now = Time::from_secs(1);
    for id in 0..2 {
        assert_eq!(
            admission.submit(now, id, Time::from_secs(6)),
            Submit::Queued
        );
    }
    let mut names = Vec::new();
    while let Some(Next::Job(job)) = admission.next_job(now) {
        let agent: &dyn Agent = match job.agent {
            JobAgent::Primary => &primary,
            JobAgent::Heuristic => &heuristic,
        };
        let reply = answer(
            job.request_id,
            &obs,
            agent,
            &heuristic,
            &Budget::iterations(2),
            &mut decision_rng(0, seat, job.request_id),
        );
        match reply {
            AiReply::Decision {
                request_id,
                action,
                agent,
            } => {
                assert_eq!(request_id, job.request_id);
                assert!(obs.legal_actions.contains(&action));
                names.push(agent);
            }
            AiReply::Error { .. } => panic!("no decision"),
        }
        admission
            .finished(now, job.request_id, job.agent, 10)
            .unwrap();
    }
    // Request 0 had one other waiting (degrade at 1): heuristic; request 1 none: search.
    assert_eq!(names, ["heuristic", "search"]);

    let (finished, seat) = (game, (seat + 1) % 4);
    let not_to_act = finished.observation(seat);
    let reply = answer(
        5,
        &not_to_act,
        &primary,
        &heuristic,
        &Budget::iterations(2),
        &mut decision_rng(0, seat, 0),
    );
    assert!(matches!(
        reply,
        AiReply::Error {
            request_id: 5,
            code: AiErrorCode::Internal,
            ..
        }
    ));
}
