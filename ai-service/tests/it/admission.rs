//! The admission machine: unit tests of each rule, and a property test that drives it
//! with random submits, worker pulls, finishes and time advances against a reference
//! model of the rules.

use std::collections::BTreeMap;

use proptest::prelude::*;
use wizard_ai::admission::{Admission, AdmissionConfig, Job, JobAgent, Next, Submit};
use wizard_core::Time;

fn config(workers: usize, queue_max: usize, degrade_queue_min: usize) -> AdmissionConfig {
    AdmissionConfig {
        workers,
        queue_max,
        degrade_queue_min,
        timing_window: 4,
        timing_age_max_us: 10_000_000,
    }
}

fn job(next: Option<Next>) -> Job {
    match next {
        Some(Next::Job(j)) => j,
        other => panic!("expected a job, got {other:?}"),
    }
}

const T0: Time = Time(1_000_000);

#[test]
fn refuses_beyond_the_queue_cap_counting_running_work() {
    let mut a = Admission::new(config(1, 3, 100));
    let far = Time::from_secs(100);
    assert_eq!(a.submit(T0, 1, far), Submit::Queued);
    job(a.next_job(T0));
    assert_eq!(a.submit(T0, 2, far), Submit::Queued);
    assert_eq!(a.submit(T0, 3, far), Submit::Queued);
    assert_eq!(a.submit(T0, 4, far), Submit::Overloaded);
    assert_eq!(a.submit(T0, 2, far), Submit::Duplicate);
    assert_eq!(a.next_job(T0), None, "the only worker is busy");
    a.finished(T0, 1, JobAgent::Primary, 10).unwrap();
    assert_eq!(a.submit(T0, 4, far), Submit::Queued);
    assert_eq!(a.in_progress(), 3);
}

#[test]
fn expired_requests_are_never_computed() {
    let mut a = Admission::new(config(1, 8, 100));
    a.submit(T0, 1, T0.plus_us(100));
    a.submit(T0, 2, T0.plus_us(5_000));
    let later = T0.plus_us(100);
    assert_eq!(a.next_job(later), Some(Next::Expired(1)));
    let j = job(a.next_job(later));
    assert_eq!((j.request_id, j.agent), (2, JobAgent::Primary));
    assert_eq!(a.computing(), 1);
}

#[test]
fn degrades_when_enough_others_wait() {
    let mut a = Admission::new(config(1, 16, 2));
    let far = Time::from_secs(100);
    for id in 0..4 {
        a.submit(T0, id, far);
    }
    // 3 others wait behind request 0.
    assert_eq!(job(a.next_job(T0)).agent, JobAgent::Heuristic);
    a.finished(T0, 0, JobAgent::Heuristic, 5).unwrap();
    // 2 wait behind request 1: still at the threshold.
    assert_eq!(job(a.next_job(T0)).agent, JobAgent::Heuristic);
    a.finished(T0, 1, JobAgent::Heuristic, 5).unwrap();
    // 1 waits behind request 2: below it.
    assert_eq!(job(a.next_job(T0)).agent, JobAgent::Primary);
    assert_eq!(
        a.primary_p90_us(),
        None,
        "heuristic times are not the primary's"
    );
}

#[test]
fn degrades_when_the_primary_is_slower_than_half_the_time_left() {
    let mut a = Admission::new(config(1, 16, 100));
    let mut now = T0;
    // The primary took 0.3 s four times.
    for id in 0..4 {
        a.submit(now, id, now.plus_us(10_000_000));
        let j = job(a.next_job(now));
        assert_eq!(j.agent, JobAgent::Primary);
        now = now.plus_us(300_000);
        a.finished(now, id, JobAgent::Primary, 300_000).unwrap();
    }
    assert_eq!(a.primary_p90_us(), Some(300_000));
    // 0.7 s left: 0.3 s is less than half of it.
    a.submit(now, 10, now.plus_us(700_000));
    let j = job(a.next_job(now));
    assert_eq!(j.agent, JobAgent::Primary);
    a.finished(now, 10, JobAgent::Primary, 300_000).unwrap();
    // 0.5 s left: 0.3 s is more than half.
    a.submit(now, 11, now.plus_us(500_000));
    assert_eq!(job(a.next_job(now)).agent, JobAgent::Heuristic);
    a.finished(now, 11, JobAgent::Heuristic, 1).unwrap();
    // Timings older than the age limit are forgotten: the primary gets another chance.
    let much_later = now.plus_us(10_000_001);
    a.submit(much_later, 12, much_later.plus_us(500_000));
    assert_eq!(job(a.next_job(much_later)).agent, JobAgent::Primary);
}

#[test]
fn finishing_an_unknown_or_mislabelled_job_is_an_error() {
    let mut a = Admission::new(config(2, 8, 100));
    a.submit(T0, 7, Time::from_secs(10));
    let j = job(a.next_job(T0));
    assert!(a.finished(T0, 8, JobAgent::Primary, 1).is_err());
    assert!(a.finished(T0, 7, JobAgent::Heuristic, 1).is_err());
    assert!(a.finished(T0, 7, j.agent, 1).is_ok());
    assert!(a.finished(T0, 7, j.agent, 1).is_err());
}

#[derive(Clone, Debug)]
enum Op {
    Submit { deadline_in_us: u64 },
    Pull,
    Finish { pick: usize, took_us: u64 },
    Advance { us: u64 },
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..3_000_000).prop_map(|deadline_in_us| Op::Submit { deadline_in_us }),
        3 => Just(Op::Pull),
        2 => (any::<usize>(), 0u64..2_000_000).prop_map(|(pick, took_us)| Op::Finish { pick, took_us }),
        2 => (0u64..1_000_000).prop_map(|us| Op::Advance { us }),
    ]
}

/// The reference p90 over (finished at, took) samples still in the window.
fn model_p90(samples: &[(Time, u64)], now: Time, cfg: &AdmissionConfig) -> Option<u64> {
    let start = samples.len().saturating_sub(cfg.timing_window);
    let mut took: Vec<u64> = samples[start..]
        .iter()
        .filter(|(at, _)| now.since_us(*at) <= cfg.timing_age_max_us)
        .map(|&(_, t)| t)
        .collect();
    took.sort_unstable();
    if took.is_empty() {
        return None;
    }
    Some(took[(took.len() * 9).div_ceil(10) - 1])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn admission_follows_its_rules(
        workers in 1usize..4,
        queue_max in 0usize..8,
        degrade in 0usize..5,
        ops in prop::collection::vec(op_strategy(), 1..120),
    ) {
        let cfg = config(workers, queue_max, degrade);
        let mut a = Admission::new(cfg);
        let mut now = T0;
        let mut next_id = 0u64;
        // Model: request id -> deadline for waiting ones (arrival order by id), running jobs.
        let mut waiting: BTreeMap<u64, Time> = BTreeMap::new();
        let mut running: Vec<Job> = Vec::new();
        let mut samples: Vec<(Time, u64)> = Vec::new();
        let mut outcomes: BTreeMap<u64, &'static str> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Submit { deadline_in_us } => {
                    let id = next_id;
                    next_id += 1;
                    let deadline = now.plus_us(deadline_in_us);
                    let r = a.submit(now, id, deadline);
                    if waiting.len() + running.len() >= queue_max {
                        prop_assert_eq!(r, Submit::Overloaded);
                        outcomes.insert(id, "overloaded");
                    } else {
                        prop_assert_eq!(r, Submit::Queued);
                        waiting.insert(id, deadline);
                    }
                }
                Op::Pull => {
                    let r = a.next_job(now);
                    if running.len() >= workers || waiting.is_empty() {
                        prop_assert_eq!(r, None);
                        continue;
                    }
                    let (&id, &deadline) = waiting.iter().next().unwrap();
                    waiting.remove(&id);
                    if deadline <= now {
                        prop_assert_eq!(r, Some(Next::Expired(id)));
                        outcomes.insert(id, "expired");
                        continue;
                    }
                    let slow = model_p90(&samples, now, &cfg)
                        .is_some_and(|p| p * 2 > deadline.since_us(now));
                    let agent = if waiting.len() >= degrade || slow {
                        JobAgent::Heuristic
                    } else {
                        JobAgent::Primary
                    };
                    let j = Job { request_id: id, agent, deadline };
                    prop_assert_eq!(r, Some(Next::Job(j)));
                    prop_assert!(j.deadline > now, "an expired request is never computed");
                    running.push(j);
                }
                Op::Finish { pick, took_us } => {
                    if running.is_empty() {
                        continue;
                    }
                    let j = running.remove(pick % running.len());
                    a.finished(now, j.request_id, j.agent, took_us).unwrap();
                    if j.agent == JobAgent::Primary {
                        samples.push((now, took_us));
                    }
                    outcomes.insert(j.request_id, "decided");
                }
                Op::Advance { us } => now = now.plus_us(us),
            }
            prop_assert!(a.in_progress() <= queue_max, "queue above its cap");
            prop_assert!(a.computing() <= workers);
            prop_assert_eq!(a.waiting(), waiting.len());
            prop_assert_eq!(a.computing(), running.len());
        }
        // Every request is answered once or still in progress.
        let open = waiting.len() + running.len();
        prop_assert_eq!(outcomes.len() + open, usize::try_from(next_id).unwrap());
    }
}
