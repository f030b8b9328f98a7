//! The AI service: `wizard_ai::admission::Admission` (the service's real admission
//! machine) decides what is computed when and by which agent; decision times come from
//! the scenario's distributions (`primary_ms`, `heuristic_ms`) for a service over
//! websockets, and from the cost model's CPU figures for one in process; faults make it
//! hang, crash, flap, answer garbage, illegal moves, `internal` or `overloaded`, or run
//! slow. Decisions themselves are the
//! core's fallback for the request's level (the heuristic, or the easy player for
//! `easy`) on the request's observation, so legal answers are really legal.
//!
//! Embedded (`EMBEDDED_AI=1`) the service is linked in process, as in the real server
//! (`shell-smol/src/embedded.rs`): one connection of kind `AiInProcess` that crosses no
//! network, requests and replies as values (no frame, no JSON, no reader or writer
//! cost), and no faults that need a separate process (crash, flapping, garbage).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use rand::RngExt;
use rand_chacha::ChaCha12Rng;
use wizard_ai::admission::{Admission, AdmissionConfig, Job, JobAgent, Next, Submit};
use wizard_core::Time;
use wizard_core::vocabulary::game::level::{self, AiLevel};
use wizard_core::vocabulary::game::{Action, Observation};
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::ConnKind;
use wizard_core::vocabulary::wire::{self, AiErrorCode, AiReply, AiRequest};

use crate::actors::ctx::Ctx;
use crate::model::cost::search_round_weight;
use crate::model::cpu::Cpu;
use crate::model::dist::{Dist, secs_to_us};
use crate::model::net::{Arrive, Ev, Owner};
use crate::runs::scenario::{AiFaultKind, AiSpec};

/// A request the service holds.
#[derive(Debug)]
struct Held {
    conn: ConnId,
    observation: Observation,
    level: AiLevel,
}

/// The simulated AI service.
#[derive(Debug)]
pub struct AiService {
    pub spec: AiSpec,
    admission: Admission,
    held: BTreeMap<u64, Held>,
    pub conns: Vec<ConnId>,
    active: Vec<bool>,
    pub down: bool,
    pub healed: bool,
    rng: ChaCha12Rng,
    primary: Dist,
    pub degraded_queue: u64,
    pub degraded_slow: u64,
    pub answered: u64,
    /// Linked in process (`EMBEDDED_AI=1`) rather than over websockets.
    pub in_process: bool,
    /// In process: the server's CPU as it stands, for the workers' share of it.
    pub process_cpu: Option<ProcessCpu>,
    /// Decisions of the primary agent (`search`) and of the heuristic, started.
    pub started: (u64, u64),
}

/// The server process's CPU as the embedded AI's workers get it: a decision is its CPU
/// (`search_us` or `heuristic_us`, the cost model's), computed by the worker thread
/// beside the event loop from the quota the event loop also uses, so under throttling
/// it takes longer than its own time, and the admission machine, which times the
/// primary agent, degrades more decisions to the heuristic, as the real server's
/// workers do.
#[derive(Clone, Debug)]
pub struct ProcessCpu {
    /// A copy of the quota's state, used up by the decisions started from it.
    pub cpu: Cpu,
    pub search_us: u64,
    pub heuristic_us: u64,
}

const AI_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 99, 0, 1));

impl AiService {
    pub fn new(spec: AiSpec, rng: ChaCha12Rng, in_process: bool) -> AiService {
        let config = AdmissionConfig {
            workers: spec.workers.max(1),
            queue_max: spec.queue_max.max(1),
            degrade_queue_min: spec.degrade_queue_min,
            timing_window: 32,
            timing_age_max_us: 60_000_000,
        };
        let primary = spec.primary_ms.unwrap_or(Dist::Const(20.0));
        let active = vec![false; spec.faults.len()];
        AiService {
            admission: Admission::new(config),
            spec,
            held: BTreeMap::new(),
            conns: Vec::new(),
            active,
            down: false,
            healed: false,
            rng,
            primary,
            degraded_queue: 0,
            degraded_slow: 0,
            answered: 0,
            in_process,
            process_cpu: None,
            started: (0, 0),
        }
    }

    fn fault(&self, kind: AiFaultKind) -> Option<f64> {
        if self.healed || (self.in_process && !kind.in_process()) {
            return None;
        }
        self.spec
            .faults
            .iter()
            .zip(&self.active)
            .find(|(f, on)| **on && f.kind == kind)
            .map(|(f, _)| f.factor)
    }

    /// Opens the service's connections and schedules its faults.
    pub fn start(&mut self, cx: &mut Ctx<'_>, now: Time) {
        self.connect(cx, now);
        for (index, f) in self.spec.faults.iter().enumerate() {
            cx.q.push(
                Time(secs_to_us(f.from_s)),
                Ev::AiFault { index, start: true },
            );
            cx.q.push(
                Time(secs_to_us(f.to_s)),
                Ev::AiFault {
                    index,
                    start: false,
                },
            );
        }
    }

    pub fn connect(&mut self, cx: &mut Ctx<'_>, now: Time) {
        if self.down || !self.conns.is_empty() {
            return;
        }
        if self.in_process {
            let conn = cx.net.open_in_process(cx.q, now, Owner::Ai, AI_IP);
            self.conns.push(conn);
            return;
        }
        for _ in 0..self.spec.connections.max(1) {
            let conn = cx.net.open(cx.q, now, Owner::Ai, AI_IP, ConnKind::Ai);
            self.conns.push(conn);
        }
    }

    /// Drops every connection (a crash: all held work is lost).
    fn disconnect(&mut self, cx: &mut Ctx<'_>, now: Time) {
        for conn in self.conns.drain(..) {
            cx.net.to_server(cx.q, now, conn, Arrive::Close);
        }
        self.held.clear();
        self.admission = Admission::new(self.admission.config());
    }

    /// A fault starts or ends.
    pub fn fault_edge(&mut self, cx: &mut Ctx<'_>, now: Time, index: usize, start: bool) {
        let Some(f) = self.spec.faults.get(index).cloned() else {
            return;
        };
        let to = Time(secs_to_us(f.to_s));
        if let Some(on) = self.active.get_mut(index) {
            *on = start && now < to;
        }
        if self.in_process && !f.kind.in_process() {
            return;
        }
        match f.kind {
            AiFaultKind::Crash if start && !self.healed => {
                self.down = true;
                self.disconnect(cx, now);
            }
            AiFaultKind::Crash => {
                self.down = false;
                self.connect(cx, now);
            }
            AiFaultKind::Flapping if start && now < to && !self.healed => {
                if self.down {
                    self.down = false;
                    self.connect(cx, now);
                } else {
                    self.down = true;
                    self.disconnect(cx, now);
                }
                let every = secs_to_us(f.factor.max(0.5));
                cx.q.push(now.plus_us(every), Ev::AiFault { index, start: true });
            }
            AiFaultKind::Flapping => {
                self.down = false;
                self.connect(cx, now);
            }
            _ => {}
        }
    }

    /// The server process was killed with the service inside it (`EMBEDDED_AI=1`): its
    /// link, its workers and their work are gone; the restored process opens a new link.
    pub fn process_killed(&mut self) {
        self.conns.clear();
        self.held.clear();
        self.admission = Admission::new(self.admission.config());
    }

    /// The liveness phase: every fault is healed.
    pub fn heal(&mut self, cx: &mut Ctx<'_>, now: Time) {
        self.healed = true;
        self.down = false;
        self.connect(cx, now);
    }

    /// The server closed one of our connections (or refused it).
    pub fn closed(&mut self, cx: &mut Ctx<'_>, now: Time, conn: ConnId) {
        cx.net.to_server(cx.q, now, conn, Arrive::Close);
        self.conns.retain(|c| *c != conn);
        self.held.retain(|_, h| h.conn != conn);
        if self.conns.is_empty() && !self.down {
            cx.q.push(now.plus_us(1_000_000), Ev::AiConnect);
        }
    }

    fn reply(&mut self, cx: &mut Ctx<'_>, now: Time, conn: ConnId, reply: &AiReply) {
        if self.conns.contains(&conn) {
            self.answered += 1;
            let what = if self.in_process {
                Arrive::AiReply(Box::new(reply.clone()))
            } else {
                Arrive::Text(wire::encode_ai_reply(reply))
            };
            cx.net.to_server(cx.q, now, conn, what);
        }
    }

    fn error(&mut self, cx: &mut Ctx<'_>, now: Time, conn: ConnId, id: u64, code: AiErrorCode) {
        let reply = AiReply::Error {
            request_id: id,
            code,
            message: "sim".into(),
        };
        self.reply(cx, now, conn, &reply);
    }

    /// A frame from the server on `conn`.
    pub fn deliver(&mut self, cx: &mut Ctx<'_>, now: Time, conn: ConnId, frames: Vec<String>) {
        for text in frames {
            if let Ok(request) = wire::decode_ai_request(&text) {
                self.submit(cx, now, conn, request);
            }
        }
        self.pump(cx, now);
    }

    /// A request handed over the in-process link.
    pub fn deliver_in_process(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Time,
        conn: ConnId,
        request: AiRequest,
    ) {
        if self.conns.contains(&conn) {
            self.submit(cx, now, conn, request);
            self.pump(cx, now);
        }
    }

    /// One decide request, to the admission machine (or to a fault).
    fn submit(&mut self, cx: &mut Ctx<'_>, now: Time, conn: ConnId, request: AiRequest) {
        let AiRequest::Decide {
            request_id,
            observation,
            timeout,
            level,
        } = request;
        if self.fault(AiFaultKind::BlackHole).is_some() {
            return;
        }
        if self.fault(AiFaultKind::Overloaded).is_some() {
            self.error(cx, now, conn, request_id, AiErrorCode::Overloaded);
            return;
        }
        let deadline = now.plus_us(secs_to_us(timeout));
        match self.admission.submit(now, request_id, deadline) {
            Submit::Queued => {
                self.held.insert(
                    request_id,
                    Held {
                        conn,
                        observation,
                        level,
                    },
                );
            }
            Submit::Overloaded => self.error(cx, now, conn, request_id, AiErrorCode::Overloaded),
            Submit::Duplicate => self.error(cx, now, conn, request_id, AiErrorCode::Internal),
        }
    }

    /// Gives free workers their next jobs.
    fn pump(&mut self, cx: &mut Ctx<'_>, now: Time) {
        loop {
            let waiting = self.admission.waiting();
            let Some(next) = self.admission.next_job(now) else {
                return;
            };
            match next {
                Next::Expired(id) => {
                    if let Some(h) = self.held.remove(&id) {
                        self.error(cx, now, h.conn, id, AiErrorCode::Expired);
                    }
                }
                Next::Job(job) => {
                    if job.deadline <= now {
                        cx.report.violation(
                            now,
                            format!("AI computed expired request {}", job.request_id),
                        );
                    }
                    let dist = match job.agent {
                        JobAgent::Primary => self.primary,
                        JobAgent::Heuristic => {
                            if waiting.saturating_sub(1) >= self.spec.degrade_queue_min {
                                self.degraded_queue += 1;
                            } else {
                                self.degraded_slow += 1;
                            }
                            self.spec.heuristic_ms
                        }
                    };
                    let factor = self.fault(AiFaultKind::Slow).unwrap_or(1.0).max(1.0);
                    // In process: the CPU the decision takes out of the quota.
                    let (took_us, cpu) = match self.in_process_cpu_us(&job) {
                        // In process the decision takes its CPU on a worker thread, at
                        // one core's speed, and waits for the quota when the process is
                        // throttled.
                        Some((cpu_us, p)) => {
                            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                            let slowed_us = (cpu_us as f64 * factor).round() as u64;
                            (p.cpu.run(now, slowed_us).since_us(now), cpu_us)
                        }
                        None => (dist.scaled(factor).sample_us(&mut self.rng), 0),
                    };
                    let took_us = took_us.max(1);
                    match job.agent {
                        JobAgent::Primary => self.started.0 += 1,
                        JobAgent::Heuristic => self.started.1 += 1,
                    }
                    let conn = self.held.get(&job.request_id).map_or(ConnId(0), |h| h.conn);
                    cx.q.push(
                        now.plus_us(took_us),
                        Ev::AiDone {
                            request_id: job.request_id,
                            agent: job.agent,
                            took_us,
                            cpu_us: cpu,
                            conn,
                        },
                    );
                }
            }
        }
    }

    /// In process: the CPU `job`'s decision takes (a `search` one weighted by its
    /// round, `search_round_weight`) and the process's CPU it runs on; `None` over
    /// websockets.
    fn in_process_cpu_us(&mut self, job: &Job) -> Option<(u64, &mut ProcessCpu)> {
        let weight = self.held.get(&job.request_id).map_or(1.0, |h| {
            search_round_weight(h.observation.round, h.observation.rounds)
        });
        let p = self.process_cpu.as_mut()?;
        let cpu_us = match job.agent {
            JobAgent::Primary => {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let us = (p.search_us as f64 * weight).round() as u64;
                us
            }
            JobAgent::Heuristic => p.heuristic_us,
        };
        Some((cpu_us, p))
    }

    /// A worker finished `request_id`.
    pub fn done(&mut self, cx: &mut Ctx<'_>, now: Time, id: u64, agent: JobAgent, took_us: u64) {
        if self.admission.finished(now, id, agent, took_us).is_err() {
            // The job belonged to a connection lost in a crash.
            return;
        }
        if let Some(h) = self.held.remove(&id) {
            self.answer(cx, now, h, id, agent);
        }
        self.pump(cx, now);
    }

    fn answer(&mut self, cx: &mut Ctx<'_>, now: Time, h: Held, id: u64, agent: JobAgent) {
        if self.fault(AiFaultKind::Garbage).is_some() {
            if self.conns.contains(&h.conn) {
                let text = if self.rng.random_bool(0.5) {
                    format!("{{\"type\":\"decision\",\"request_id\":{id},\"action\":7}}")
                } else {
                    "\u{1}not json".to_string()
                };
                cx.net.to_server(cx.q, now, h.conn, Arrive::Text(text));
            }
            return;
        }
        if self.fault(AiFaultKind::Internal).is_some() {
            self.error(cx, now, h.conn, id, AiErrorCode::Internal);
            return;
        }
        let action = if self.fault(AiFaultKind::Illegal).is_some() {
            cx.report.ai_illegal.insert(id);
            Some(Action::Bid { bid: 99 })
        } else {
            level::fallback(h.level, &h.observation, &mut self.rng)
        };
        let Some(action) = action else {
            self.error(cx, now, h.conn, id, AiErrorCode::Internal);
            return;
        };
        let name = match agent {
            JobAgent::Primary => "primary",
            JobAgent::Heuristic => "heuristic",
        };
        let reply = AiReply::Decision {
            request_id: id,
            action,
            agent: name.into(),
        };
        self.reply(cx, now, h.conn, &reply);
    }

    /// Requests waiting plus computing, and the admission's cap (for the checkers).
    pub fn in_progress(&self) -> (usize, usize) {
        (
            self.admission.in_progress(),
            self.admission.config().queue_max,
        )
    }
}
