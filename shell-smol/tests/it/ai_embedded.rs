//! The real AI service on both transports, against a real server: over `/internal/ai`
//! (a separate service, `EMBEDDED_AI=0`) and embedded in process (`EMBEDDED_AI=1`).
//! Both play AI seats, note round trips, and shed load the same way; only the separate
//! one has a socket.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_io::Timer;
use futures_lite::FutureExt;
use wizard_ai::service::{self, ServiceOptions};
use wizard_core::vocabulary::config::AiServiceConfig;
use wizard_core::vocabulary::wire::ClientMessage;

use crate::client::{Player, TestServer, bounded, http, metric, my_move};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    /// `wizard_ai::service` connecting to `/internal/ai`.
    Websocket,
    /// `EMBEDDED_AI=1`: the service's pool linked to the core task.
    InProcess,
}

const SECRET: &str = "s3cret";

/// A server whose AI seats are played by the real service over `transport`, with the
/// service's settings in `ai` (`AI_*` names); the handle keeps a separate service alive.
fn start(
    transport: Transport,
    ai: &[(&str, &str)],
) -> (TestServer, Option<async_channel::Sender<()>>) {
    let mut pairs = vec![
        ("AI_SHARED_SECRET", SECRET),
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
        ("MESSAGE_RATE", "1000"),
        ("MESSAGE_BURST", "1000"),
        // The metrics polls open a socket each.
        ("SOCKET_RATE", "1000"),
        ("SOCKET_BURST", "1000"),
    ];
    pairs.extend_from_slice(ai);
    if transport == Transport::InProcess {
        pairs.push(("EMBEDDED_AI", "1"));
    }
    let server = TestServer::start(&pairs);
    let stop = (transport == Transport::Websocket).then(|| {
        let config = AiServiceConfig {
            server_url: format!("ws://{}/internal/ai", server.addr),
            ..AiServiceConfig::from_pairs(pairs.iter().copied()).unwrap()
        };
        let options = ServiceOptions {
            worker_nice: 0,
            seed: 7,
        };
        service::spawn(config, options).unwrap().0
    });
    bounded(20, wait_for_ai(server.addr));
    (server, stop)
}

/// Polls `/health` until the server has its AI connection.
async fn wait_for_ai(addr: SocketAddr) {
    loop {
        let (_, body) = http(addr, "GET", "/health", &[]).await;
        if wizard_core::vocabulary::wire::decode_health(&body)
            .unwrap()
            .ai
            .connections
            == 1
        {
            return;
        }
        Timer::after(Duration::from_millis(50)).await;
    }
}

/// Polls `/metrics` until `name` reads `want`; fails the test when it does not within
/// 10 s.
async fn wait_for_metric(addr: SocketAddr, name: &str, want: f64) {
    let poll = async {
        while metric(addr, name).await != want {
            Timer::after(Duration::from_millis(50)).await;
        }
    };
    poll.or(async {
        Timer::after(Duration::from_secs(10)).await;
        let got = metric(addr, name).await;
        panic!("{name} is {got}, not {want}");
    })
    .await;
}

/// `games` humans each host a game with three AI seats and play their own moves at
/// once, until `enough` says so.
async fn play_until(addr: SocketAddr, games: usize, enough: impl AsyncFn() -> bool) {
    let done = AtomicBool::new(false);
    let play = |_| async {
        let (mut host, _) = Player::hello(addr, None).await;
        host.create_lobby("Ann").await;
        for seats in 2..=4 {
            host.add_ai(seats).await;
        }
        let mut view = host.start_game().await;
        while !done.load(Ordering::Relaxed) {
            if let Some(action) = my_move(&view) {
                host.send(ClientMessage::Action { action }).await;
            }
            view = host.next_state().await;
        }
    };
    let players = futures_util::future::join_all((0..games).map(play));
    let watch = async {
        while !enough().await {
            Timer::after(Duration::from_millis(50)).await;
        }
        done.store(true, Ordering::Relaxed);
    };
    // The watch ends first; the players stop at their next state.
    watch
        .or(async {
            players.await;
        })
        .await;
}

/// Each transport plays AI seats with the service's decisions and notes their round
/// trips; the separate service holds a socket (two TCP connections open while only the
/// metrics request and it are there), the embedded one none (one: the request).
#[test]
fn both_transports_play_ai_seats_and_only_the_websocket_opens_a_socket() {
    for (transport, sockets) in [(Transport::Websocket, 2.0), (Transport::InProcess, 1.0)] {
        let (server, _service) = start(transport, &[("AI_AGENT", "heuristic")]);
        let addr = server.addr;
        bounded(30, async {
            wait_for_metric(addr, "wizard_tcp_open", sockets).await;
            play_until(addr, 1, async || {
                metric(addr, "wizard_moves_total{by=\"ai\"}").await >= 6.0
            })
            .await;
            let answered = metric(addr, "wizard_ai_round_trip_seconds_count").await;
            assert!(answered >= 6.0, "{transport:?}: {answered} round trips");
            let fallbacks = metric(addr, "wizard_fallbacks_total").await;
            assert_eq!(
                fallbacks, 0.0,
                "{transport:?}: every AI move from the service"
            );
            // Every applied AI move is counted by the agent its reply names.
            // (One scrape: AI seats may still be moving.)
            let (_, body) = crate::client::http(addr, "GET", "/metrics", &[]).await;
            let value = |name: &str| {
                body.lines()
                    .find_map(|l| l.strip_prefix(name))
                    .and_then(|v| v.trim().parse::<f64>().ok())
            };
            let ai_moves = value("wizard_moves_total{by=\"ai\"}");
            let heuristic = value("wizard_ai_decisions_total{agent=\"heuristic\"}");
            assert!(ai_moves >= Some(6.0), "{transport:?}: {ai_moves:?}");
            assert_eq!(heuristic, ai_moves, "{transport:?}: decisions by agent");
        });
    }
}

/// One worker and room for one request, four games asking at once: the service sheds
/// with `overloaded`, the fallback moves for those seats, and the breaker stays closed
/// (shedding is not a failure), on either transport.
#[test]
fn an_overloaded_service_sheds_to_fallback_moves_on_both_transports() {
    let ai = [
        ("AI_AGENT", "search"),
        ("AI_WORKERS", "1"),
        ("AI_MAX_QUEUE", "1"),
    ];
    for transport in [Transport::Websocket, Transport::InProcess] {
        let (server, _service) = start(transport, &ai);
        let addr = server.addr;
        bounded(60, async {
            play_until(addr, 4, async || {
                metric(addr, "wizard_fallbacks_total{reason=\"overloaded\"}").await >= 3.0
                    && metric(addr, "wizard_moves_total{by=\"ai\"}").await >= 3.0
            })
            .await;
            let open = metric(addr, "wizard_ai_breaker_open").await;
            assert_eq!(open, 0.0, "{transport:?}: shedding opened the breaker");
            let other = metric(addr, "wizard_fallbacks_total{reason=\"internal\"}").await
                + metric(addr, "wizard_fallbacks_total{reason=\"timeout\"}").await
                + metric(addr, "wizard_fallbacks_total{reason=\"breaker_open\"}").await;
            assert_eq!(other, 0.0, "{transport:?}: only shedding, no failure");
        });
    }
}

/// Embedded, an answer that comes before its move is due waits in the link's queue for
/// the core task's next pass instead of waking it (`wizard_core::shell::reply_wait`): with a
/// move delay, the core wakes about once per AI move (to apply it, reading the next
/// seat's answer on the way), not once more for each answer.
#[test]
fn embedded_answers_before_their_move_is_due_do_not_wake_the_core() {
    let (server, _service) = start(
        Transport::InProcess,
        &[("AI_AGENT", "heuristic"), ("AI_MOVE_DELAY", "0.1")],
    );
    let addr = server.addr;
    bounded(60, async {
        play_until(addr, 1, async || {
            metric(addr, "wizard_moves_total{by=\"ai\"}").await >= 40.0
        })
        .await;
        let (_, body) = crate::client::http(addr, "GET", "/metrics", &[]).await;
        let value = |name: &str| {
            body.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or_else(|| panic!("no {name}"))
        };
        let ai = value("wizard_moves_total{by=\"ai\"}");
        let human = value("wizard_moves_total{by=\"human\"}");
        let answers = value("wizard_ai_round_trip_seconds_count");
        let wakeups = value("wizard_core_wakeups_total");
        assert!(answers >= 40.0, "{answers} answers");
        // A round trip ends when the worker answered, not when the core read the answer
        // (which is when the move may be applied, 0.1 s after it was asked).
        let mean_s = value("wizard_ai_round_trip_seconds_sum") / answers;
        assert!(mean_s < 0.05, "mean round trip {mean_s} s");
        let fallbacks = crate::client::metric_in(&body, "wizard_fallbacks_total");
        assert_eq!(fallbacks, 0.0, "every AI move from the service");
        // Each human move and each AI move takes a wake-up; the setup's frames and the
        // load samples a few more. Were every answer to wake the core, there would be
        // about one more per AI move.
        let own = wakeups - human;
        assert!(
            own <= 1.25 * ai + 20.0,
            "{wakeups} wake-ups for {ai} AI moves ({answers} answers) and {human} human moves"
        );
    });
}
