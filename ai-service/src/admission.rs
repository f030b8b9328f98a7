//! The AI service's admission machine: which request is computed when, by which agent,
//! and which is refused. Pure and clock-injected (every call takes `now`), so the
//! simulator drives the same code the service runs.
//!
//! Rules (seed design, layer 4):
//! - a request arriving while `queue_max` requests are in progress (waiting plus
//!   computing) is refused at once: [`Submit::Overloaded`];
//! - at most `workers` decisions are computed at the same time; the others wait in
//!   arrival order;
//! - a request whose deadline has passed when a worker would take it is answered
//!   `expired` without computing ([`Next::Expired`]);
//! - the heuristic decides instead of the primary agent when `degrade_queue_min` or more
//!   other requests are waiting, or when the primary's recent decision time (the p90 of
//!   its last `timing_window` decisions, none older than `timing_age_max_us`) exceeds
//!   half the time left before the request's deadline. Old timings are forgotten so a
//!   primary that was slow once gets another chance instead of being shunned forever.
//!
//! Every queue is bounded: waiting + computing by `queue_max`, computing by `workers`,
//! the timing window by `timing_window`. It is not the worker pool itself: callers run
//! the job and report back with [`Admission::finished`].

use std::collections::VecDeque;
use std::fmt;

use wizard_core::Time;
use wizard_core::vocabulary::config::AiServiceConfig;
use wizard_core::vocabulary::time::US_PER_SEC;

/// Limits of the admission machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// Decisions computed at the same time (`AI_WORKERS`).
    pub workers: usize,
    /// Requests in progress before refusing (`AI_MAX_QUEUE`).
    pub queue_max: usize,
    /// From this many other waiting requests, the heuristic decides (`AI_DEGRADE_QUEUE`).
    pub degrade_queue_min: usize,
    /// How many recent primary decision times the p90 is taken over.
    pub timing_window: usize,
    /// Primary decision times older than this are forgotten.
    pub timing_age_max_us: u64,
}

impl AdmissionConfig {
    /// The limits the service's configuration sets, with a window of the last 32
    /// decisions over at most 60 s.
    pub fn from_service(config: &AiServiceConfig) -> AdmissionConfig {
        AdmissionConfig {
            workers: config.workers,
            queue_max: config.queue_max,
            degrade_queue_min: config.degrade_queue_min,
            timing_window: 32,
            timing_age_max_us: 60 * US_PER_SEC,
        }
    }
}

/// The answer to a new request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    /// Accepted: it will come out of [`Admission::next_job`].
    Queued,
    /// Too many requests in progress: answer `overloaded` now.
    Overloaded,
    /// A request with this id is already in progress (the server's bug): answer
    /// `internal` and keep the first one.
    Duplicate,
}

/// Who decides a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum JobAgent {
    /// The configured agent (`AI_AGENT`).
    Primary,
    /// The cheap heuristic, because the service is busy or the primary is too slow.
    Heuristic,
}

/// A request a worker should compute now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    pub request_id: u64,
    pub agent: JobAgent,
    /// The server's deadline for the answer.
    pub deadline: Time,
}

/// What a free worker should do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Job(Job),
    /// The request's deadline passed while it waited: answer `expired`, compute nothing.
    Expired(u64),
}

/// A report that does not match a running job (the caller's bug).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishError {
    UnknownRequest {
        request_id: u64,
    },
    /// The job was given to another agent than the one reported.
    AgentMismatch {
        request_id: u64,
        agent: JobAgent,
    },
}

impl fmt::Display for FinishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FinishError::UnknownRequest { request_id } => {
                write!(f, "request {request_id} is not being computed")
            }
            FinishError::AgentMismatch { request_id, agent } => {
                write!(f, "request {request_id} was not given to {agent:?}")
            }
        }
    }
}

impl std::error::Error for FinishError {}

#[derive(Clone, Copy, Debug)]
struct Waiting {
    request_id: u64,
    deadline: Time,
}

/// The admission machine. See the module doc for its rules.
#[derive(Clone, Debug)]
pub struct Admission {
    config: AdmissionConfig,
    waiting: VecDeque<Waiting>,
    computing: Vec<Job>,
    /// (finished at, took) of the primary's recent decisions, oldest first.
    timings: VecDeque<(Time, u64)>,
}

impl Admission {
    pub fn new(config: AdmissionConfig) -> Admission {
        Admission {
            config,
            waiting: VecDeque::with_capacity(config.queue_max.min(1024)),
            computing: Vec::with_capacity(config.workers.min(1024)),
            timings: VecDeque::with_capacity(config.timing_window.min(1024)),
        }
    }

    pub fn config(&self) -> AdmissionConfig {
        self.config
    }

    /// Requests waiting plus computing.
    pub fn in_progress(&self) -> usize {
        self.waiting.len() + self.computing.len()
    }

    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    pub fn computing(&self) -> usize {
        self.computing.len()
    }

    /// A new request that must be answered by `deadline`.
    pub fn submit(&mut self, now: Time, request_id: u64, deadline: Time) -> Submit {
        self.forget_old(now);
        let known = self.waiting.iter().any(|w| w.request_id == request_id)
            || self.computing.iter().any(|j| j.request_id == request_id);
        if known {
            return Submit::Duplicate;
        }
        if self.in_progress() >= self.config.queue_max {
            return Submit::Overloaded;
        }
        self.waiting.push_back(Waiting {
            request_id,
            deadline,
        });
        Submit::Queued
    }

    /// The next thing a worker should do, or `None` when every worker is busy or
    /// nothing waits. Call it until `None` after every submit and finish.
    pub fn next_job(&mut self, now: Time) -> Option<Next> {
        if self.computing.len() >= self.config.workers {
            return None;
        }
        self.forget_old(now);
        let w = self.waiting.pop_front()?;
        if w.deadline <= now {
            return Some(Next::Expired(w.request_id));
        }
        let busy = self.waiting.len() >= self.config.degrade_queue_min;
        let time_left_us = w.deadline.since_us(now);
        let slow = self
            .primary_p90_us()
            .is_some_and(|p90| p90.saturating_mul(2) > time_left_us);
        let agent = if busy || slow {
            JobAgent::Heuristic
        } else {
            JobAgent::Primary
        };
        let job = Job {
            request_id: w.request_id,
            agent,
            deadline: w.deadline,
        };
        self.computing.push(job);
        Some(Next::Job(job))
    }

    /// A worker answered `request_id` with `agent` after `took_us` of computing.
    pub fn finished(
        &mut self,
        now: Time,
        request_id: u64,
        agent: JobAgent,
        took_us: u64,
    ) -> Result<(), FinishError> {
        self.finish(now, request_id, agent, Some(took_us))
    }

    /// A worker answered `request_id`, given to `agent`, with another player than that
    /// agent (a request for a weaker level, PROTOCOL.md section 6.5): its time says
    /// nothing about the primary's and is not kept.
    pub fn finished_untimed(
        &mut self,
        now: Time,
        request_id: u64,
        agent: JobAgent,
    ) -> Result<(), FinishError> {
        self.finish(now, request_id, agent, None)
    }

    fn finish(
        &mut self,
        now: Time,
        request_id: u64,
        agent: JobAgent,
        took_us: Option<u64>,
    ) -> Result<(), FinishError> {
        let i = self
            .computing
            .iter()
            .position(|j| j.request_id == request_id)
            .ok_or(FinishError::UnknownRequest { request_id })?;
        if self.computing.get(i).map(|j| j.agent) != Some(agent) {
            return Err(FinishError::AgentMismatch { request_id, agent });
        }
        self.computing.swap_remove(i);
        if let Some(took_us) = took_us.filter(|_| agent == JobAgent::Primary)
            && self.config.timing_window > 0
        {
            if self.timings.len() >= self.config.timing_window {
                self.timings.pop_front();
            }
            self.timings.push_back((now, took_us));
        }
        self.forget_old(now);
        Ok(())
    }

    /// The 90th percentile of the primary's recent decision times, if any are known.
    pub fn primary_p90_us(&self) -> Option<u64> {
        let mut took: Vec<u64> = self.timings.iter().map(|&(_, t)| t).collect();
        if took.is_empty() {
            return None;
        }
        took.sort_unstable();
        // Nearest-rank percentile: the smallest value with at least 90 % at or below it.
        let rank = (took.len() * 9).div_ceil(10).max(1);
        took.get(rank - 1).copied()
    }

    fn forget_old(&mut self, now: Time) {
        while let Some(&(at, _)) = self.timings.front() {
            if now.since_us(at) > self.config.timing_age_max_us {
                self.timings.pop_front();
            } else {
                break;
            }
        }
    }
}
