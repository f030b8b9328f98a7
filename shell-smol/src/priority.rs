//! The server's two task priorities: the games' work runs before the door's.
//!
//! Every executor thread ticks two executors. [`Priorities::games`] holds each admitted
//! socket's task: its request head, the HTTP answer (`/health` included) or the upgrade
//! handshake, and an upgraded websocket's readers and writers; and the load probe. The
//! core task is the future the main thread's run is driven with, polled before either.
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
//!
//! A pass polls the main future, then ticks the tasks until none is ready; if a task
//! woke the main future meanwhile (a reader that gave the core task a frame), the pass
//! polls it again at once, at most [`MAIN_POLLS_PER_PASS`] times. Before the main future was polled again within a pass,
//! such a wake-up went to `block_on`'s waker, which then made a reactor poll with a
//! zero timeout before polling again: five system calls for nothing (`timerfd_settime`,
//! `epoll_ctl`, `epoll_pwait`, `read`, `epoll_ctl`), on most wake-ups of a paced server.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use futures_lite::FutureExt;
use smol::Executor;

use wizard_core::shell::executor::{Class, Turns};
/// The rule's constants are the core's (`wizard_core::shell::executor`), which the simulator
/// runs its executor by too.
pub use wizard_core::shell::executor::{GAMES_TICKS_MAX, TICKS_PER_YIELD};

/// Polls of the main future in one pass of [`Priorities::run`] before a wake-up of it
/// goes to the thread's driver (which polls the reactor first): the reactor is not
/// starved by a main future and tasks that keep waking each other.
pub const MAIN_POLLS_PER_PASS: u32 = 4;

/// The main future's waker in [`Priorities::run`]: during a pass it only marks the
/// main future to be polled again; otherwise it wakes the thread's driver.
#[derive(Debug, Default)]
struct MainWake {
    /// Woken since its last poll began.
    woken: AtomicBool,
    /// A pass is under way and will look at `woken` before it ends.
    in_pass: AtomicBool,
    /// The driver's waker of the latest pass.
    outer: Mutex<Option<Waker>>,
}

impl MainWake {
    fn outer_is(&self, waker: &Waker) {
        let mut outer = self.outer.lock().unwrap_or_else(PoisonError::into_inner);
        if !outer.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *outer = Some(waker.clone());
        }
    }
}

impl Wake for MainWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Sequentially consistent on both sides: either the pass sees `woken` after it
        // cleared `in_pass`, or this sees `in_pass` cleared and wakes the driver.
        self.woken.store(true, Ordering::SeqCst);
        if !self.in_pass.load(Ordering::SeqCst) {
            let outer = self.outer.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(w) = outer.as_ref() {
                w.wake_by_ref();
            }
        }
    }
}

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
        let mut main = pin!(main);
        let mut ticks = pin!(self.ticks::<T>());
        let wake = Arc::new(MainWake::default());
        let main_waker = Waker::from(Arc::clone(&wake));
        std::future::poll_fn(move |cx| {
            wake.outer_is(cx.waker());
            wake.in_pass.store(true, Ordering::SeqCst);
            for _ in 0..MAIN_POLLS_PER_PASS {
                wake.woken.store(false, Ordering::SeqCst);
                if let Poll::Ready(t) = main.as_mut().poll(&mut Context::from_waker(&main_waker)) {
                    wake.in_pass.store(false, Ordering::SeqCst);
                    return Poll::Ready(t);
                }
                if let Poll::Ready(t) = ticks.as_mut().poll(cx) {
                    wake.in_pass.store(false, Ordering::SeqCst);
                    return Poll::Ready(t);
                }
                if !wake.woken.load(Ordering::SeqCst) {
                    break;
                }
            }
            // A wake-up that came after the last poll (from this thread after the
            // bound, or from another thread) is passed on now: none is lost.
            wake.in_pass.store(false, Ordering::SeqCst);
            if wake.woken.load(Ordering::SeqCst) {
                cx.waker().wake_by_ref();
            }
            Poll::Pending
        })
        .await
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

    /// A waker that counts its wake-ups: the thread's driver, as `block_on` would be.
    #[derive(Default)]
    struct CountingWake(std::sync::atomic::AtomicUsize);

    impl Wake for CountingWake {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The main future, woken by a game task during a pass (a reader giving
    /// the core task a frame), is polled again in that pass, without waking the driver
    /// (whose wake-up cost a reactor poll of five system calls); a wake-up from outside
    /// a pass still reaches the driver.
    #[test]
    fn a_main_future_woken_by_a_task_runs_again_in_the_same_pass() {
        let p = Arc::new(Priorities::default());
        let (tx, rx) = async_channel::bounded::<u32>(4);
        let sender = tx.clone();
        p.games
            .spawn(async move {
                sender.send(1).await.unwrap();
            })
            .detach();
        let driver = Arc::new(CountingWake::default());
        let waker = Waker::from(Arc::clone(&driver));
        let mut cx = Context::from_waker(&waker);
        let main = async {
            let mut got = Vec::new();
            for _ in 0..2 {
                got.push(rx.recv().await.unwrap());
            }
            got
        };
        let mut run = std::pin::pin!(p.run(main));
        // One pass: the main future waits, the task sends, the main future takes it.
        assert!(run.as_mut().poll(&mut cx).is_pending());
        assert_eq!(driver.0.load(Ordering::SeqCst), 0, "the driver was woken");
        // From outside a pass (another thread, a timer): the driver is woken.
        std::thread::spawn(move || tx.send_blocking(2).unwrap())
            .join()
            .unwrap();
        assert_eq!(driver.0.load(Ordering::SeqCst), 1);
        assert_eq!(run.as_mut().poll(&mut cx), Poll::Ready(vec![1, 2]));
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
