//! The shell's executor turns, time-free: which of the two task classes runs next on a
//! server thread, and how much work a task does before it yields. shell-smol's
//! `priority.rs` ticks its two smol executors by this rule; the simulator's executor
//! (`shell-sim/src/host/executor.rs`) runs its tasks by it.
//!
//! The games class holds each admitted socket's task (its request head, the HTTP answer
//! or the upgrade, a websocket's reader and writer) and the load probe; the door class
//! holds the accept loop and the closes. A ready game task runs first, but after
//! [`GAMES_TICKS_MAX`] game tasks in a row a ready door task goes first, so new sockets
//! are still answered while the games keep nearly all of the CPU. The core task is
//! polled before either whenever the thread yields to its driver, which it does after
//! [`TICKS_PER_YIELD`] ticks, and again as soon as no task is ready if a task woke it.

/// Game tasks run in a row at most before one door task gets its turn.
pub const GAMES_TICKS_MAX: u32 = 16;
/// Ticks before the thread yields to its own driver (the reactor, the core task).
pub const TICKS_PER_YIELD: u32 = 64;
/// Frames a websocket reader handles before yielding to the executor.
pub const READ_FRAMES_PER_YIELD: u32 = 16;
/// Bytes a websocket reader takes from its socket before yielding to the executor.
pub const READ_BYTES_PER_YIELD: usize = 16 * 1024;

/// A class of tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Sockets' request heads, HTTP answers, handshakes and websockets; the probe.
    Games,
    /// The accept loop, lingers and closes.
    Door,
}

/// The memory of the rule: game tasks run in a row since the door's last turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Turns {
    games_in_row: u32,
}

impl Turns {
    /// Whether a ready door task goes before the games on this tick.
    pub fn door_first(&self) -> bool {
        self.games_in_row >= GAMES_TICKS_MAX
    }

    /// The class that runs next, given which have a task ready.
    pub fn pick(&self, games_ready: bool, door_ready: bool) -> Option<Class> {
        if door_ready && (self.door_first() || !games_ready) {
            Some(Class::Door)
        } else if games_ready {
            Some(Class::Games)
        } else {
            None
        }
    }

    /// A task of `class` ran.
    pub fn ran(&mut self, class: Class) {
        self.games_in_row = match class {
            Class::Games => self.games_in_row.saturating_add(1),
            Class::Door => 0,
        };
    }
}
