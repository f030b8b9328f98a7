//! The adversarial suite: every row of the attack table attacks the real server
//! over real sockets on 127.0.0.0/8 while honest games play beside it (2 games of 3
//! humans, a returning player per game, newcomers, a `/health` prober). A test fails
//! when an honest or returning player is refused or cut, a game goes 3 s without a
//! move, or `/health` fails or takes 1 s; where the contract states the server's answer
//! to the attack (a close code, a status, `retry_after_ms`), it checks that too.
//! Latency figures are not asserted: they come from release runs (docs/BENCHMARKS.md).

use std::time::Duration;

use serde_json::Value;

use crate::bench::bench_lib::{self, Attack, Pacing, Report, Settings};
use crate::client::{Player, TestServer, bounded, metric};
use wizard_core::vocabulary::wire::ClientMessage;

/// The honest games: 2 of 3 humans at 50 ms a move (each human sends at most 7
/// messages a second, under the default `MESSAGE_RATE`), a 1 s baseline, then the
/// attack for 4 s.
fn settings(server: &TestServer, attack: Attack) -> Settings {
    let mut s = Settings::new(server.addr);
    s.games = 2;
    s.humans = 3;
    s.seats = 3;
    s.pacing = Pacing::Full;
    s.think = Duration::from_millis(50);
    s.ramp = Duration::from_millis(200);
    s.warmup = Duration::from_millis(800);
    s.phases = 1;
    s.baseline_duration = Duration::from_secs(1);
    s.phase_duration = Duration::from_secs(4);
    s.stall_after = Duration::from_secs(3);
    s.health_every = Duration::from_millis(50);
    s.rejoin_every = Duration::from_secs(1);
    s.newcomer_every = Duration::from_millis(400);
    s.newcomer_lobby = true;
    s.attack = Some(attack);
    s.attack_conns = 4;
    s.attack_ips = 1;
    s.history = None;
    s
}

/// Starts a server with `env` (games move without trick pauses, no AI service), runs
/// the attack beside the honest games and returns the report.
fn run(attack: Attack, env: &[(&str, &str)], tweak: impl FnOnce(&mut Settings)) -> Report {
    let server = start(env);
    let report = run_on(&server, attack, tweak);
    drop(server);
    report
}

/// A server with `env` whose games move without trick pauses, with no AI service.
fn start(env: &[(&str, &str)]) -> TestServer {
    let mut pairs = vec![
        ("TRICK_PAUSE", "0"),
        ("EMBEDDED_AI", "0"),
        ("LOAD_FORCE_LEVEL", "normal"),
    ];
    pairs.extend_from_slice(env);
    TestServer::start(&pairs)
}

/// Runs the attack against `server` beside the honest games.
fn run_on(server: &TestServer, attack: Attack, tweak: impl FnOnce(&mut Settings)) -> Report {
    let mut s = settings(server, attack);
    s.server_pid = Some(std::process::id());
    tweak(&mut s);
    bench_lib::run(s).expect("the generator runs")
}

/// The honest side was served in every phase.
fn assert_honest(report: &Report) {
    let phases = report.line["phases"].as_array().expect("phased run");
    assert_eq!(phases.len(), 2);
    assert_eq!(report.stats.games_started, 2, "both honest games started");
    for p in phases {
        let kind = p["kind"].as_str().unwrap_or("?");
        let refused = &p["refused"];
        assert_eq!(
            p["honest_refused"], 0,
            "{kind}: an honest or returning player was refused or cut: {refused} {p}"
        );
        assert_eq!(
            p["stalled"], 0,
            "{kind}: a game went 3 s without a move: {p}"
        );
        assert_eq!(p["health_failed"], 0, "{kind}: /health failed: {p}");
        let health_max = p["health_latency_ms"]["max"].as_f64().unwrap_or(f64::MAX);
        assert!(health_max < 1000.0, "{kind}: /health took 1 s or more: {p}");
        assert!(
            p["human_moves"].as_u64() > Some(0),
            "{kind}: no honest move: {p}"
        );
    }
}

/// The attack phase's attack counters.
fn attack_stats(report: &Report) -> &Value {
    &report.line["phases"][1]["attack_stats"]
}

fn ending(report: &Report, how: &str) -> u64 {
    attack_stats(report)["endings"][how].as_u64().unwrap_or(0)
}

#[test]
fn row_1_a_never_final_message_is_closed_with_1008_while_games_go_on() {
    let report = run(Attack::FragmentFlood, &[], |s| {
        s.attack_conns = 2;
        s.attack_count = 3_000_000;
    });
    assert_honest(&report);
    let a = attack_stats(&report);
    assert!(
        ending(&report, "close 1008") > 0,
        "never closed with 1008: {a}"
    );
}

#[test]
fn row_2_silent_sockets_from_one_address_do_not_lock_players_out() {
    let report = run(Attack::Silent, &[("MAX_CONNECTIONS", "40")], |s| {
        s.attack_conns = 60;
        s.attack_ips = 1;
        s.attack_count = 2_000;
    });
    assert_honest(&report);
}

#[test]
fn row_2_silent_sockets_from_many_addresses_let_returning_players_in() {
    // A storm from many addresses may hold the door for new players; returning
    // players of running games, the games and /health must still get through.
    let report = run(Attack::Silent, &[("MAX_CONNECTIONS", "40")], |s| {
        s.attack_conns = 60;
        s.attack_ips = 60;
        s.attack_count = 2_000;
        s.newcomer_every = Duration::ZERO;
    });
    assert_honest(&report);
}

#[test]
fn row_3_sessions_left_in_games_do_not_refuse_new_players_at_max_sessions() {
    // 75 sessions left in running games come first (the oldest), 75 left in waiting
    // lobbies after: the newcomers must take the place of the latter.
    let env = [
        ("MAX_SESSIONS", "120"),
        ("MAX_ACTIVE_GAMES", "200"),
        ("LOBBY_CREATE_RATE", "1000"),
    ];
    let report = run(Attack::SessionFill, &env, |s| {
        s.attack_conns = 8;
        s.attack_ips = 40;
        s.attack_count = 150;
        s.newcomer_lobby = false;
    });
    assert_honest(&report);
}

#[test]
fn row_4_games_abandoned_from_five_addresses_do_not_lock_game_creation() {
    let report = run(Attack::AbandonGames, &[], |s| {
        s.attack_conns = 5;
        s.attack_ips = 5;
        s.attack_count = 50;
    });
    assert_honest(&report);
}

#[test]
fn row_5_lobbies_abandoned_from_two_addresses_do_not_lock_lobby_creation() {
    // MAX_LOBBIES and its per-address share scaled down together (the defaults are
    // 1000 and 10): two addresses can hold at most half the table.
    let env = [
        ("MAX_LOBBIES", "20"),
        ("MAX_LOBBIES_PER_IP", "5"),
        ("LOBBY_CREATE_RATE", "1000"),
    ];
    let report = run(Attack::AbandonLobbies, &env, |s| {
        s.attack_conns = 2;
        s.attack_ips = 2;
        s.attack_count = 40;
    });
    assert_honest(&report);
}

#[test]
fn row_5_lobbies_abandoned_from_many_addresses_give_way_to_new_ones() {
    // Forty addresses fill MAX_LOBBIES with lobbies left at once. They are idle (no
    // running game, no human connected), so a new lobby takes the place of the one
    // idle longest: nobody honest is refused, long before LOBBY_IDLE_TTL (default
    // 5 min) would delete them.
    let env = [("MAX_LOBBIES", "20"), ("LOBBY_CREATE_RATE", "1000")];
    let report = run(Attack::AbandonLobbies, &env, |s| {
        s.attack_conns = 4;
        s.attack_ips = 40;
        s.attack_count = 200;
    });
    assert_honest(&report);
    let left = attack_stats(&report)["accepted"].as_u64().unwrap_or(0);
    assert!(
        left >= 40,
        "only {left} lobbies left: MAX_LOBBIES never filled twice"
    );
    assert_eq!(
        attack_stats(&report)["busy_without_retry_after"],
        0,
        "a busy without retry_after_ms"
    );
}

#[test]
fn row_6_a_ping_flood_that_never_reads_is_cut() {
    let report = run(Attack::PingFlood, &[], |s| {
        s.attack_conns = 4;
        s.attack_count = 400_000;
    });
    assert_honest(&report);
    let a = attack_stats(&report);
    assert!(a["cut"].as_u64() > Some(0), "no ping flooder was cut: {a}");
}

#[test]
fn row_7_a_client_that_never_reads_is_cut() {
    let env = [
        ("WRITE_TIMEOUT", "1"),
        ("MESSAGE_RATE", "1000"),
        ("MESSAGE_BURST", "1000"),
    ];
    let report = run(Attack::NoRead, &env, |s| {
        s.attack_conns = 2;
        s.attack_rate = 900.0;
        s.attack_count = 100_000;
    });
    assert_honest(&report);
    let a = attack_stats(&report);
    assert!(a["cut"].as_u64() > Some(0), "no deaf client was cut: {a}");
}

#[test]
fn row_8_reconnecting_after_every_1008_does_not_slow_honest_games() {
    let report = run(Attack::ReconnectFlood, &[], |s| {
        s.attack_conns = 4;
        s.attack_ips = 1;
        s.attack_count = 200_000;
    });
    assert_honest(&report);
    let a = attack_stats(&report);
    assert!(
        a["close_1008"].as_u64() > Some(0),
        "the flood was never closed: {a}"
    );
}

#[test]
fn row_9_guessing_lobby_codes_is_throttled_and_slows_nothing() {
    let report = run(Attack::CodeGuess, &[], |s| {
        s.attack_conns = 4;
        s.attack_count = 100_000;
    });
    assert_honest(&report);
    let a = attack_stats(&report);
    let throttled = a["rate_limited"].as_u64().unwrap_or(0) + a["cut"].as_u64().unwrap_or(0);
    assert!(throttled > 0, "guessing was never limited: {a}");
}

#[test]
fn row_10_busy_says_when_to_retry_and_naive_retriers_slow_nothing() {
    // The honest games hold both game slots: every create_lobby is `busy`.
    let report = run(Attack::BusyRetry, &[("MAX_ACTIVE_GAMES", "2")], |s| {
        s.attack_conns = 20;
        s.attack_ips = 20;
        s.attack_count = 20_000;
        s.newcomer_lobby = false;
    });
    assert_honest(&report);
    let a = attack_stats(&report);
    assert!(a["busy"].as_u64() > Some(0), "no busy answer: {a}");
    assert_eq!(
        a["busy_without_retry_after"], 0,
        "busy without retry_after_ms: {a}"
    );
}

#[test]
fn row_11_protocol_violations_get_their_rfc_answers() {
    let report = run(Attack::Violations, &[], |s| {
        s.attack_conns = 8;
        s.attack_ips = 200;
        s.attack_count = 400;
    });
    assert_honest(&report);
    let a = attack_stats(&report);
    for case in bench_lib::violation_cases() {
        assert!(
            a["cases"].get(case).is_some(),
            "case {case:?} never ran: {a}"
        );
    }
    let mismatches = a["mismatches"].as_object().expect("mismatches");
    assert!(
        mismatches.is_empty(),
        "answers that are not the target:\n{}",
        serde_json::to_string_pretty(mismatches).unwrap_or_default()
    );
}

#[test]
fn row_12_look_alike_names_are_not_accepted_next_to_host() {
    let report = run(Attack::Names, &[], |s| {
        s.attack_conns = 1;
    });
    assert_honest(&report);
    let a = attack_stats(&report);
    assert_eq!(a["cases"].as_object().map(|c| c.len()), Some(5), "{a}");
    let mismatches = a["mismatches"].as_object().expect("mismatches");
    assert!(
        mismatches.is_empty(),
        "look-alikes accepted: {mismatches:?}"
    );
}

/// The quick-play rows' server: the test polls `/metrics` from one address as fast as
/// it is answered once the attack is over; room for every game the walkers' tables
/// start (each holds a `MAX_ACTIVE_GAMES` slot for `ABANDONED_GAME_TTL`, as in row 4:
/// capacity, not the pool, which is what these rows test).
const QUICK_ENV: [(&str, &str); 3] = [
    ("SOCKET_RATE", "100000"),
    ("SOCKET_BURST", "100000"),
    ("MAX_ACTIVE_GAMES", "1000"),
];

/// Honest groups of 3 queue for quick play every 500 ms beside the games.
fn quick_groups(s: &mut Settings) {
    s.quick_every = Duration::from_millis(500);
}

/// After a quick-play row: honest quick players were seated in both phases, the pool
/// empties, and three honest players who come then are seated together, alone.
fn assert_pool_clean(server: &TestServer, report: &Report) {
    for p in report.line["phases"].as_array().expect("phased run") {
        assert!(
            p["quick_seated"].as_u64() > Some(0),
            "no honest quick player seated: {p}"
        );
    }
    bounded(30, async {
        while metric(server.addr, "wizard_quick_play_tickets").await != 0.0 {}
        let mut honest = Vec::new();
        for name in ["Ann", "Bob", "Cat"] {
            let (mut p, _) = Player::hello(server.addr, None).await;
            p.send(ClientMessage::QuickPlay {
                name: name.to_owned(),
                seats: Some(3),
            })
            .await;
            honest.push(p);
        }
        for p in honest.iter_mut() {
            let view = p.state_where(|v| v.game.is_some()).await;
            let lobby = view.lobby.expect("a lobby");
            let names: Vec<&str> = lobby.players.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, ["Ann", "Bob", "Cat"], "a table of the three alone");
            assert!(lobby.players.iter().all(|s| !s.is_ai), "no AI seat");
        }
    });
}

#[test]
fn row_13a_one_address_queueing_and_cancelling_is_rate_limited_and_leaves_no_ticket() {
    let server = start(&QUICK_ENV);
    let report = run_on(&server, Attack::QuickCancel, |s| {
        quick_groups(s);
        s.attack_conns = 4;
        s.attack_ips = 1;
        s.attack_count = 200_000;
    });
    assert_honest(&report);
    let a = attack_stats(&report);
    assert!(a["accepted"].as_u64() > Some(0), "no ticket queued: {a}");
    assert!(
        a["rate_limited"].as_u64() > Some(0),
        "the loop never got rate_limited: {a}"
    );
    assert_pool_clean(&server, &report);
}

#[test]
fn row_13b_many_addresses_queueing_and_walking_away_leave_no_ticket() {
    let server = start(&QUICK_ENV);
    let report = run_on(&server, Attack::QuickWalk, |s| {
        quick_groups(s);
        s.attack_conns = 8;
        s.attack_ips = 8;
        s.attack_count = 100;
    });
    assert_honest(&report);
    let a = attack_stats(&report);
    assert!(a["accepted"].as_u64() > Some(0), "no ticket queued: {a}");
    assert_pool_clean(&server, &report);
}
