//! The server process killed (`kill -9`) and started again on its durable store, as
//! the real shell restores itself (`Server::restore` over the records its store
//! committed). What the store holds is what was committed before the kill: a pass's
//! records are committed before its frames go out (commit before acknowledge), so a
//! kill during a pass loses its records and its frames together, and nothing a player
//! received is missing from the store. Everything else of the process is lost: its
//! inbox, outbound queues, timers, sockets and the embedded AI's work.

use wizard_core::Server;
use wizard_core::Time;
use wizard_core::machine::records::Record;
use wizard_core::shell::door::Door;
use wizard_core::shell::reply_wait::ReplyWait;
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::rng::Seed;
use wizard_core::vocabulary::stats::Counters;

use crate::host::core_task::Host;
use crate::host::executor::Executor;
use crate::host::probe::Probe;
use crate::model::conn_map::ConnMap;
use crate::model::net::{Arrive, Ev, Net};
use crate::model::queue::EventQueue;

/// What a kill left behind, for the world around the process.
#[derive(Debug)]
pub struct Killed {
    /// The pass running at the kill, whose records and frames were lost (its start).
    pub lost_pass: Option<Time>,
    /// The killed process's counters (the restored one counts from zero).
    pub counters: Counters,
}

impl Host {
    /// From now on the host keeps its store's commits, for restarts.
    pub fn keep_journal(&mut self) {
        self.journal.get_or_insert_with(Vec::new);
    }

    /// The process is killed at `now`: its peers see their connections end (after the
    /// frames already on the wire), and every event it would still have caused is gone.
    pub fn kill(&mut self, q: &mut EventQueue<Ev>, net: &Net, now: Time) -> Killed {
        let lost_pass = (self.last_pass.1 > now).then_some(self.last_pass.0);
        if let Some(journal) = &mut self.journal {
            journal.retain(|(at, _)| *at <= now);
            #[cfg(feature = "planted-bugs")]
            if wizard_core::planted::planted(wizard_core::planted::Bug::LostCommit) {
                journal.pop();
            }
        }
        let floor = net.next_conn();
        let in_process = self.in_process;
        let late = |at: Time, conn: ConnId| at > now.plus_us(net.latency_us(conn));
        q.retain(|at, ev| match ev {
            // The process's own timers and its threads' work.
            Ev::LoopRun
            | Ev::CoreTimer
            | Ev::ProbeWake
            | Ev::KeepaliveCheck { .. }
            | Ev::WriteTimeout { .. }
            | Ev::FirstByteTimeout { .. }
            | Ev::AiInProcess { .. } => false,
            Ev::AiDone { conn, .. } => Some(*conn) != in_process,
            Ev::ServerArrive {
                conn,
                what: Arrive::AiReply(_),
            } => Some(*conn) != in_process,
            // What it would have written after the kill.
            Ev::Deliver { conn, .. } | Ev::ClientClosed { conn, .. } => {
                *conn >= floor || !late(at, *conn)
            }
            _ => true,
        });
        let mut held: Vec<ConnId> = self.kinds_held();
        held.extend(self.silent.iter().map(|(c, _)| c));
        held.sort_unstable();
        held.dedup();
        for conn in held {
            if Some(conn) == in_process {
                continue;
            }
            let at = now.plus_us(net.latency_us(conn));
            q.push(at, Ev::ClientClosed { conn, code: None });
        }
        self.dead_below = floor;
        self.down = true;
        self.reset_process(now);
        Killed {
            lost_pass,
            counters: self.server.counters().clone(),
        }
    }

    /// Everything that lived in the killed process, as a new one starts with it.
    fn reset_process(&mut self, now: Time) {
        let backlog =
            usize::try_from(self.server.config().shell.listen_backlog_max).unwrap_or(usize::MAX);
        let mut exec = Executor::new(backlog);
        exec.backlog_refused = self.exec.backlog_refused;
        exec.door_len_max = self.exec.door_len_max;
        self.exec = exec;
        self.clear_queues();
        self.in_process = None;
        self.replies = ReplyWait::default();
        self.door = Door::for_config(self.server.config());
        self.silent = ConnMap::default();
        self.readers = ConnMap::default();
        self.last_heard = ConnMap::default();
        self.pending_records.clear();
        self.fold_us_owed = 0.0;
        self.thread_free_at = now;
        self.last_pass = (now, now);
    }

    /// The process starts again at `now`, restored from its store's commits with a
    /// fresh `seed` (the old one would repeat tokens and codes). Returns why the
    /// records could not be restored, if they could not (a broken promise).
    pub fn come_back(
        &mut self,
        q: &mut EventQueue<Ev>,
        now: Time,
        seed: Seed,
    ) -> Result<(), String> {
        let config: Config = self.server.config().clone();
        let records: Vec<Record> = self
            .journal
            .iter()
            .flatten()
            .flat_map(|(_, batch)| batch.iter().cloned())
            .collect();
        let server = Server::restore(config, seed, now, records).map_err(|e| e.to_string())?;
        self.server = server;
        self.down = false;
        self.restarts += 1;
        let interval = self.server.config().load_sample_interval_us;
        let probe = Probe::new(interval, now, self.cpu.stat_at(now));
        self.new_probe(probe, now);
        q.push(self.probe_intended, Ev::ProbeWake);
        self.schedule_timer(q, now);
        self.wake(q, now);
        Ok(())
    }
}
