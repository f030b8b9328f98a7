//! The server thread's executor, as shell-smol's `priority.rs` runs it on one thread
//! (the thread count is the quota's whole cores, at least one): the core task, and
//! tasks of two classes that take turns by the core's rule
//! (`wizard_core::shell::executor::Turns`). Each turn runs one task for one tick on the
//! quota'd CPU; nothing is preempted within a tick, but every tick is bounded, so an
//! expensive burst of arrivals can no longer push the loop and the probe behind all of
//! its work.
//!
//! - **The core task**: one pass of the loop (`core_task.rs`). It is polled first whenever
//!   the thread yields to its driver, after [`TICKS_PER_YIELD`] ticks or when no task
//!   is ready; after each pass the ready tasks get their ticks.
//! - **Games** (a FIFO): the load probe's wake-up, and a frame reader's work on frames
//!   that never reach the core (fragments, dropped frames), [`READ_FRAMES_PER_YIELD`]
//!   frames per tick, then back at the end of the queue.
//! - **Door** (a FIFO): the accept path's work per socket: accepting a silent socket,
//!   refusing one, closing one at its first-byte timeout. New sockets wait in the
//!   kernel's accept queue, at most `LISTEN_BACKLOG` of them; beyond that the kernel
//!   refuses them, at no cost to the server.
//!
//! Not modelled: honest frames are still decoded when they arrive and their reading is
//! charged in the core's pass (as before the executor), and the core's passes do not
//! hog the thread while the inbox refills (the real core task keeps running while its
//! inbox has inputs; here the readers that refill it are not tasks).

use std::collections::VecDeque;

use wizard_core::Time;
use wizard_core::shell::executor::{Class, READ_FRAMES_PER_YIELD, TICKS_PER_YIELD, Turns};
use wizard_core::vocabulary::io::ConnId;

use crate::model::conn_map::ConnMap;

/// A task of the games class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Task {
    Probe,
    Reader(ConnId),
}

/// What the thread does with its next turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// A pass of the core task's loop.
    Core,
    /// The load probe's wake-up.
    Probe,
    /// A reader handles this many frames that do not reach the core.
    Read(u64),
    /// A door task of this many (scaled) microseconds.
    Door(u64),
    /// Nothing is ready.
    Idle,
}

/// The executor's queues and turns.
#[derive(Debug)]
pub struct Executor {
    turns: Turns,
    /// Ticks left before the thread yields to its driver (0: it yields now).
    ticks_left: u32,
    games: VecDeque<Task>,
    door: VecDeque<u64>,
    /// `LISTEN_BACKLOG`: new sockets waiting to be accepted at most.
    backlog_max: usize,
    /// Frames each reader has yet to handle (a reader is in `games` while it has any).
    reader_frames: ConnMap<u64>,
    probe_queued: bool,
    /// The next turn's event, when one is scheduled.
    pub scheduled: Option<Time>,
    /// New sockets the kernel refused at a full accept queue.
    pub backlog_refused: u64,
    /// The longest the door's queue was.
    pub door_len_max: usize,
}

impl Executor {
    pub fn new(backlog_max: usize) -> Executor {
        Executor {
            turns: Turns::default(),
            ticks_left: 0,
            games: VecDeque::new(),
            door: VecDeque::new(),
            backlog_max: backlog_max.max(1),
            reader_frames: ConnMap::default(),
            probe_queued: false,
            scheduled: None,
            backlog_refused: 0,
            door_len_max: 0,
        }
    }

    /// Whether any task is ready.
    pub fn has_tasks(&self) -> bool {
        !self.games.is_empty() || !self.door.is_empty()
    }

    /// The probe's sleep is over: its task is ready (once).
    pub fn probe(&mut self) {
        if !self.probe_queued {
            self.probe_queued = true;
            self.games.push_back(Task::Probe);
        }
    }

    /// `frames` more frames for `conn`'s reader that never reach the core.
    pub fn read(&mut self, conn: ConnId, frames: u64) {
        if frames == 0 {
            return;
        }
        match self.reader_frames.get_mut(&conn) {
            Some(n) => *n += frames,
            None => {
                self.reader_frames.insert(conn, frames);
                self.games.push_back(Task::Reader(conn));
            }
        }
    }

    /// Whether the kernel's accept queue has room for a new socket.
    pub fn backlog_room(&self) -> bool {
        self.door.len() < self.backlog_max
    }

    /// A door task of `us` (scaled) microseconds. New sockets are admitted only while
    /// [`Self::backlog_room`]; closes of sockets already held (at most the door's hard
    /// cap of them) always queue.
    pub fn door(&mut self, us: u64) {
        self.door.push_back(us);
        self.door_len_max = self.door_len_max.max(self.door.len());
    }

    /// The next turn, with the core task ready (`core_ready`) or not.
    pub fn next(&mut self, core_ready: bool) -> Turn {
        if self.ticks_left == 0 {
            self.ticks_left = TICKS_PER_YIELD;
            if core_ready {
                return Turn::Core;
            }
        }
        let pick = self
            .turns
            .pick(!self.games.is_empty(), !self.door.is_empty());
        let Some(class) = pick else {
            // No task is ready: the thread goes back to its driver.
            self.ticks_left = 0;
            if core_ready {
                self.ticks_left = TICKS_PER_YIELD;
                return Turn::Core;
            }
            return Turn::Idle;
        };
        self.turns.ran(class);
        self.ticks_left -= 1;
        match class {
            Class::Door => Turn::Door(self.door.pop_front().unwrap_or(0)),
            Class::Games => match self.games.pop_front() {
                Some(Task::Probe) => {
                    self.probe_queued = false;
                    Turn::Probe
                }
                Some(Task::Reader(conn)) => {
                    let left = self.reader_frames.remove(&conn).unwrap_or(0);
                    let now = left.min(u64::from(READ_FRAMES_PER_YIELD));
                    if left > now {
                        self.reader_frames.insert(conn, left - now);
                        self.games.push_back(Task::Reader(conn));
                    }
                    Turn::Read(now)
                }
                None => Turn::Idle,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wizard_core::shell::executor::GAMES_TICKS_MAX;

    #[test]
    fn the_probe_runs_between_door_tasks_and_the_core_after_a_yield() {
        let mut ex = Executor::new(1024);
        for _ in 0..1000 {
            ex.door(8);
        }
        ex.probe();
        // The core first (the thread starts at its driver), then the probe ahead of the
        // door, then door tasks until the thread yields back to the core.
        assert_eq!(ex.next(true), Turn::Core);
        assert_eq!(ex.next(true), Turn::Probe);
        let doors = (0..TICKS_PER_YIELD - 1)
            .map(|_| ex.next(true))
            .filter(|t| *t == Turn::Door(8))
            .count();
        assert_eq!(doors, TICKS_PER_YIELD as usize - 1);
        assert_eq!(ex.next(true), Turn::Core);
    }

    #[test]
    fn readers_yield_and_the_door_gets_a_turn_after_a_run_of_games() {
        let mut ex = Executor::new(1);
        ex.read(ConnId(1), 16 * 40);
        ex.read(ConnId(2), 3);
        ex.door(8);
        assert!(!ex.backlog_room());
        let turns: Vec<Turn> = (0..20).map(|_| ex.next(false)).collect();
        assert_eq!(turns[0], Turn::Read(16));
        assert_eq!(turns[1], Turn::Read(3));
        let door_at = turns.iter().position(|t| matches!(t, Turn::Door(_)));
        assert_eq!(door_at, Some(GAMES_TICKS_MAX as usize));
        assert_eq!(ex.next(false), Turn::Read(16));
    }
}
