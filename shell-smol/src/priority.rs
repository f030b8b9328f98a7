//! The server's two task priorities: the games' work runs before the door's.
//!
//! Every executor thread ticks two executors. [`Priorities::games`] holds each admitted
//! socket's task: its request head, the HTTP answer (`/health` included) or the upgrade
//! handshake, and an upgraded websocket's readers and writers; and the load probe. The
//! core task is the future each thread's run is driven with, polled before either.
//! [`Priorities::door`] holds the accept loop and, after a websocket ended, its linger
//! and close (freeing a socket's queued bytes in `close` is the costliest system call of
//! a connection's life).
//!
//! Why: with one FIFO, a burst of new connections (a storm of reconnecting flooders,
//! 400 clients opening at once) queued every honest move behind its handshakes and
//! closes, and delayed moves by 10-15 ms with the server's CPU mostly idle. Request heads
//! and `/health` were first read at the door's priority too, and `/health` p99 reached
//! 9.2 ms behind the ping flood's closes; they are cheap, so they now run with the games.
//! Now a
//! runnable game task waits for at most one door task. The door is not starved: after
//! [`GAMES_TICKS_MAX`] game tasks in a row one door task runs first, so new sockets are
//! still answered (`busy`, 503), never left to time out, while the games keep nearly
//! all of the CPU.

use std::future::Future;

use futures_lite::FutureExt;
use smol::Executor;

use wizard_core::executor::{Class, Turns};
/// The rule's constants are the core's (`wizard_core::executor`), which the simulator
/// runs its executor by too.
pub use wizard_core::executor::{GAMES_TICKS_MAX, TICKS_PER_YIELD};

/// The two executors every server thread ticks.
#[derive(Debug, Default)]
pub struct Priorities {
    /// Sockets' request heads, HTTP answers, handshakes and websockets; the probe.
    pub games: Executor<'static>,
    /// The accept loop, lingers and closes.
    pub door: Executor<'static>,
}

impl Priorities {
    /// Drives `main` on this thread, ticking the executors whenever it is pending:
    /// `main` first, then a game task, then a door task (with the door's turn after
    /// [`GAMES_TICKS_MAX`] game tasks).
    pub async fn run<T>(&self, main: impl Future<Output = T>) -> T {
        main.or(self.ticks()).await
    }

    async fn ticks<T>(&self) -> T {
        let mut turns = Turns::default();
        loop {
            for _ in 0..TICKS_PER_YIELD {
                // The door's turn only if it has a task ready: waiting on the door alone
                // would leave the games' tasks scheduled with nobody to run them.
                if turns.door_first() && self.door.try_tick() {
                    turns.ran(Class::Door);
                    continue;
                }
                let ran_games = async {
                    self.games.tick().await;
                    true
                }
                .or(async {
                    self.door.tick().await;
                    false
                })
                .await;
                turns.ran(if ran_games { Class::Games } else { Class::Door });
            }
            futures_lite::future::yield_now().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Runs `games` and `door` tasks that each log their name once, all runnable at
    /// the start, and returns the order they ran in.
    fn order(games: usize, door: usize) -> Vec<char> {
        let p = Arc::new(Priorities::default());
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for _ in 0..door {
            let log = Arc::clone(&log);
            tasks.push(p.door.spawn(async move { log.lock().unwrap().push('d') }));
        }
        for _ in 0..games {
            let log = Arc::clone(&log);
            tasks.push(p.games.spawn(async move { log.lock().unwrap().push('g') }));
        }
        let done = Rc::new(RefCell::new(0));
        smol::block_on(p.run(async {
            for t in tasks {
                t.await;
                *done.borrow_mut() += 1;
            }
        }));
        assert_eq!(*done.borrow(), games + door);
        let order = log.lock().unwrap();
        order.clone()
    }

    #[test]
    fn game_tasks_run_before_door_tasks_spawned_earlier() {
        let cases: &[(usize, usize, &str)] = &[
            (3, 3, "gggddd"),
            (0, 2, "dd"),
            (2, 0, "gg"),
            // After GAMES_TICKS_MAX game tasks in a row, one door task.
            (20, 2, "ggggggggggggggggdggggd"),
            // More game tasks than GAMES_TICKS_MAX with the door empty: all run.
            (40, 0, &"g".repeat(40)),
        ];
        for &(games, door, want) in cases {
            let got: String = order(games, door).into_iter().collect();
            assert_eq!(got, want, "{games} game tasks, {door} door tasks");
        }
    }

    /// A game task woken by a timer runs on time after many game ticks with the door
    /// idle (the door's turn must not wait for a door task).
    #[test]
    fn a_timer_wakes_a_game_task_while_the_door_is_idle() {
        use std::time::{Duration, Instant};
        let p = Arc::new(Priorities::default());
        let rounds = 3 * GAMES_TICKS_MAX as usize;
        let t = p.games.spawn(async move {
            let mut late = Duration::ZERO;
            for _ in 0..rounds {
                let at = Instant::now() + Duration::from_millis(2);
                async_io::Timer::at(at).await;
                late = late.max(Instant::now() - at);
            }
            late
        });
        let door = p
            .door
            .spawn(async_io::Timer::after(Duration::from_secs(30)));
        let started = Instant::now();
        let late = smol::block_on(p.run(t));
        drop(door);
        // Lost wake-ups left the task waiting for the 30 s door timer; this bound is
        // far above any scheduling noise and far below that.
        assert!(started.elapsed() < Duration::from_secs(10), "{late:?}");
    }
}
