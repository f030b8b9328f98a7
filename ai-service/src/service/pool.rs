//! The worker pool of one AI connection: `AI_WORKERS` threads that take jobs from the
//! admission machine, compute them with the player of the request's level (for
//! `strong` the primary agent, or the heuristic when admission degrades the job; for
//! `normal` the heuristic; for `easy` the easy player), and hand the replies to the
//! connection's writer.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{info, warn};
use wizard_core::Time;
use wizard_core::vocabulary::game::{AiLevel, Observation};
use wizard_core::vocabulary::wire::{AiErrorCode, AiReply};

use super::Answered;
use crate::admission::{Admission, AdmissionConfig, JobAgent, Next, Submit};
use crate::agent::{self, Agent, Budget, EasyAgent, HeuristicAgent};

/// The most a primary decision may take, whatever the server's timeout.
pub const THINK_TIME_MAX: Duration = Duration::from_millis(100);
/// Sampled worlds per decision at most (the search agent's iteration budget).
pub const SEARCH_WORLDS_MAX: u32 = crate::levels::SEARCH_WORLDS_MAX;

struct State {
    admission: Admission,
    /// Observations and levels of the requests in progress, by request id (bounded by
    /// the admission machine's queue).
    jobs: BTreeMap<u64, (Observation, AiLevel)>,
    stopped: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    start: Instant,
    primary: Box<dyn Agent>,
    heuristic: HeuristicAgent,
    easy: EasyAgent,
    replies: async_channel::Sender<Answered>,
    seed: u64,
    degrade_queue_min: usize,
    /// When a degradation line was last logged (µs since `start`), and how many
    /// degradations happened since: under load the line is written once a second.
    degrade_logged_us: AtomicU64,
    degraded_unlogged: AtomicU64,
}

impl Shared {
    fn now(&self) -> Time {
        Time(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A worker that panicked leaves the state consistent (every step is one call
        // into the admission machine), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The pool; dropping it without [`Pool::stop`] also stops the workers.
pub struct Pool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.workers.len())
            .finish()
    }
}

impl Pool {
    /// Starts `config.workers` threads, each `nice` steps below normal priority.
    pub fn start(
        config: AdmissionConfig,
        primary: Box<dyn Agent>,
        replies: async_channel::Sender<Answered>,
        nice: i32,
        seed: u64,
    ) -> Pool {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                admission: Admission::new(config),
                jobs: BTreeMap::new(),
                stopped: false,
            }),
            wake: Condvar::new(),
            start: Instant::now(),
            primary,
            heuristic: HeuristicAgent::default(),
            easy: EasyAgent,
            replies,
            seed,
            degrade_queue_min: config.degrade_queue_min,
            degrade_logged_us: AtomicU64::new(0),
            degraded_unlogged: AtomicU64::new(0),
        });
        let workers = (0..config.workers.max(1))
            .filter_map(|i| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("wizard-ai-{i}"))
                    .spawn(move || {
                        lower_priority(nice);
                        work(&shared);
                    })
                    .map_err(|e| warn!(error = %e, "cannot start an AI worker thread"))
                    .ok()
            })
            .collect();
        Pool { shared, workers }
    }

    /// Admits a request for a player of `level` whose answer the server awaits for
    /// `timeout_s` seconds.
    pub fn submit(
        &self,
        request_id: u64,
        observation: Observation,
        level: AiLevel,
        timeout_s: f64,
    ) -> Submit {
        let now = self.shared.now();
        let timeout_us = if timeout_s.is_finite() && timeout_s > 0.0 {
            (timeout_s * 1e6) as u64
        } else {
            0
        };
        let mut state = self.shared.lock();
        let submitted = state
            .admission
            .submit(now, request_id, now.plus_us(timeout_us));
        if submitted == Submit::Queued {
            state.jobs.insert(request_id, (observation, level));
            self.shared.wake.notify_one();
        }
        submitted
    }

    /// Requests waiting or computing.
    pub fn in_progress(&self) -> usize {
        self.shared.lock().admission.in_progress()
    }

    /// Stops the workers after their current job and waits for them.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.shared.lock().stopped = true;
        self.shared.wake.notify_all();
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Runs this thread `nice` steps below normal priority (Linux applies it per thread).
fn lower_priority(nice: i32) {
    if nice == 0 {
        return;
    }
    let tid = rustix::thread::gettid();
    if let Err(e) = rustix::process::setpriority_process(Some(tid), nice) {
        warn!(error = %e, nice, "cannot lower the AI worker's priority");
    }
}

/// One worker: take the next job, compute it, report, repeat until stopped.
fn work(shared: &Shared) {
    loop {
        let (next, observation, waiting) = {
            let mut state = shared.lock();
            loop {
                if state.stopped {
                    return;
                }
                let now = shared.now();
                if let Some(next) = state.admission.next_job(now) {
                    let id = match next {
                        Next::Job(job) => job.request_id,
                        Next::Expired(id) => id,
                    };
                    let observation = state.jobs.remove(&id);
                    break (next, observation, state.admission.waiting());
                }
                state = shared
                    .wake
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        };
        let reply = match (next, observation) {
            (Next::Expired(request_id), _) => {
                info!(request_id, "Dropping expired request");
                AiReply::Error {
                    request_id,
                    code: AiErrorCode::Expired,
                    message: "the deadline passed before a worker was free".into(),
                }
            }
            (Next::Job(job), Some((obs, level))) => compute(shared, job, &obs, level, waiting),
            (Next::Job(job), None) => {
                finish(shared, job.request_id, job.agent, None);
                AiReply::Error {
                    request_id: job.request_id,
                    code: AiErrorCode::Internal,
                    message: "lost the request's observation".into(),
                }
            }
        };
        let at = Instant::now();
        if shared
            .replies
            .send_blocking(Answered { reply, at })
            .is_err()
        {
            return;
        }
    }
}

fn compute(
    shared: &Shared,
    job: crate::admission::Job,
    obs: &Observation,
    level: AiLevel,
    waiting: usize,
) -> AiReply {
    let started = Instant::now();
    let left = Duration::from_micros(job.deadline.since_us(shared.now()));
    let agent: &dyn Agent = match (level, job.agent) {
        (AiLevel::Easy, _) => &shared.easy,
        (AiLevel::Normal, _) => &shared.heuristic,
        (AiLevel::Strong, JobAgent::Primary) => shared.primary.as_ref(),
        (AiLevel::Strong, JobAgent::Heuristic) => {
            log_degraded(shared, waiting);
            &shared.heuristic
        }
    };
    let budget = Budget {
        deadline: Some(started + (left / 2).min(THINK_TIME_MAX)),
        iterations_max: Some(SEARCH_WORLDS_MAX),
    };
    let seat = obs.to_act.unwrap_or(0);
    let mut rng = agent::decision_rng(shared.seed, seat, job.request_id);
    let reply = agent::answer(
        job.request_id,
        obs,
        agent,
        &shared.heuristic,
        &budget,
        &mut rng,
    );
    // Only the primary's own decisions tell how long the primary takes.
    let took_us = (level == AiLevel::Strong)
        .then(|| u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX));
    finish(shared, job.request_id, job.agent, took_us);
    reply
}

/// Logs a degradation, at most once a second, with how many happened since the last
/// line (a busy service degrades every request; one line each would flood the log).
fn log_degraded(shared: &Shared, waiting: usize) {
    const LOG_EVERY_US: u64 = 1_000_000;
    let count = shared.degraded_unlogged.fetch_add(1, Ordering::Relaxed) + 1;
    let now_us = shared.now().as_micros();
    let last = shared.degrade_logged_us.load(Ordering::Relaxed);
    if last != 0 && now_us.saturating_sub(last) < LOG_EVERY_US {
        return;
    }
    shared
        .degrade_logged_us
        .store(now_us.max(1), Ordering::Relaxed);
    shared.degraded_unlogged.store(0, Ordering::Relaxed);
    if waiting >= shared.degrade_queue_min {
        info!(
            waiting,
            count, "Busy ({waiting} waiting): using heuristic agent"
        );
    } else {
        info!(
            count,
            "Primary agent too slow for the time left: using heuristic agent"
        );
    }
}

/// Reports a finished job; `took_us` is `None` when the primary did not decide it.
fn finish(shared: &Shared, request_id: u64, agent: JobAgent, took_us: Option<u64>) {
    let mut state = shared.lock();
    let now = shared.now();
    let reported = match took_us {
        Some(took_us) => state.admission.finished(now, request_id, agent, took_us),
        None => state.admission.finished_untimed(now, request_id, agent),
    };
    if let Err(e) = reported {
        warn!(error = %e, "admission report refused");
    }
    drop(state);
    // A worker slot is free: another worker may take a waiting job.
    shared.wake.notify_one();
}
