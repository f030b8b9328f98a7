//! Settings: defaults as in PROTOCOL.md section 5, every variable parses, bad values name it.

// A test of the core, not the core: it reads the documentation it checks.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};

use proptest::prelude::*;
use wizard_core::vocabulary::config::{
    AiAgent, AiServiceConfig, Component, Config, ConfigError, IpCidr, LogFormat, SETTINGS,
    ShellConfig,
};
use wizard_core::vocabulary::load::LoadLevel;

const S: u64 = 1_000_000;

fn server(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::from_pairs(pairs.iter().copied())
}

fn ai(pairs: &[(&str, &str)]) -> Result<AiServiceConfig, ConfigError> {
    AiServiceConfig::from_pairs(pairs.iter().copied())
}

fn names(component: Component) -> Vec<&'static str> {
    SETTINGS
        .iter()
        .filter(|s| s.component == component)
        .map(|s| s.name)
        .collect()
}

#[test]
fn defaults_are_the_protocol_values() {
    let c = Config::default();
    assert_eq!(c.shell.bind, "0.0.0.0:8000".parse::<SocketAddr>().unwrap());
    assert!(c.allowed_origins.is_empty() && c.trusted_proxies.is_empty());
    assert_eq!(
        (c.ai_shared_secret.as_str(), c.shell.embedded_ai),
        ("", true)
    );
    assert_eq!(c.session_ttl_us, 1800 * S);
    assert_eq!(
        (c.lobbies_max, c.conns_max, c.conns_per_ip_max),
        (1000, 500, 10)
    );
    assert_eq!(
        (
            c.message_rate_per_sec,
            c.message_burst,
            c.rate_violations_max
        ),
        (10.0, 30, 50)
    );
    assert_eq!(
        (c.lobby_create_rate_per_min, c.active_games_max),
        (10.0, 50)
    );
    assert_eq!(
        (
            c.ai_move_delay_us,
            c.trick_pause_us,
            c.ai_decision_timeout_us
        ),
        (800_000, 1_800_000, 5 * S)
    );
    assert_eq!(
        (
            c.ai_inflight_max,
            c.ai_breaker_failures_max,
            c.ai_breaker_cooldown_us
        ),
        (64, 5, 30 * S)
    );
    assert_eq!(c.load_sample_interval_us, S);
    assert_eq!(
        (
            c.load_lag_busy_us,
            c.load_lag_overload_us,
            c.load_lag_severe_us
        ),
        (100_000, 250_000, S)
    );
    assert_eq!(
        (
            c.load_cpu_busy_share,
            c.load_cpu_overload_share,
            c.load_throttle_overload_share
        ),
        (0.7, 0.9, 0.5)
    );
    assert_eq!(
        (
            c.load_overload_samples,
            c.load_recover_samples,
            c.load_force_level
        ),
        (3, 10, None)
    );
    assert_eq!(
        (
            c.shell.keepalive_interval_us,
            c.shell.keepalive_timeout_us,
            c.shutdown_grace_us
        ),
        (20 * S, 60 * S, 10 * S)
    );
    assert_eq!(
        (c.shell.log_level.as_str(), c.shell.log_format),
        ("info", LogFormat::Text)
    );
    assert_eq!(
        (c.shell.handshake_timeout_us, c.shell.write_timeout_us),
        (10 * S, 10 * S)
    );
    assert_eq!(
        (
            c.message_bytes_max,
            c.shell.outbound_queue_messages_max,
            c.shell.outbound_queue_bytes_max
        ),
        (65_536, 256, 1_048_576)
    );
    assert_eq!((c.ip_table_entries_max, c.sessions_max), (10_000, 5_000));
    assert_eq!(
        (
            c.sockets_per_ip_max,
            c.shell.first_byte_timeout_us,
            c.shell.socket_send_buffer_bytes,
            c.shell.socket_recv_buffer_bytes
        ),
        (26, 2 * S, 65_536, 65_536)
    );
    assert_eq!(
        (c.lobby_idle_ttl_us, c.abandoned_game_ttl_us),
        (300 * S, 90 * S)
    );
    assert_eq!((c.lobbies_per_ip_max, c.games_per_ip_max), (10, 5));
    assert_eq!((c.reconnect_rate_per_min, c.reconnect_burst), (30.0, 20));
    assert_eq!((c.join_fail_rate_per_min, c.join_fail_burst), (10.0, 10));
    assert_eq!((c.socket_rate_per_sec, c.socket_burst), (20.0, 40));
    assert_eq!(c.shell.outbound_queue_chat_messages_max, 64);
    assert_eq!((c.chat_ip_rate_per_min, c.chat_ip_burst), (30.0, 20));
    assert_eq!((c.chat_lobby_rate_per_min, c.chat_lobby_burst), (60.0, 30));
    assert_eq!(c.chat_history_bytes_max, 16_384);
    assert_eq!(
        (c.chat_replay_rate_per_min, c.chat_replay_burst),
        (30.0, 20)
    );
    assert_eq!((c.spectate_rate_per_min, c.spectate_burst), (10.0, 10));
    assert_eq!(c.spectators_state_interval_us, S / 2);
    assert_eq!(
        (c.removed_player_ttl_us, c.removed_players_max),
        (600 * S, 20)
    );

    let a = AiServiceConfig::default();
    assert_eq!(a.server_url, "ws://127.0.0.1:8000/internal/ai");
    assert_eq!(
        (
            a.shared_secret.as_str(),
            a.workers,
            a.queue_max,
            a.degrade_queue_min
        ),
        ("", 1, 64, 8)
    );
    assert_eq!(a.agent, AiAgent::Search);
}

#[test]
fn defaults_equal_parsing_nothing_and_the_documented_defaults() {
    assert_eq!(server(&[]), Ok(Config::default()));
    assert_eq!(ai(&[]), Ok(AiServiceConfig::default()));
    let documented: Vec<(&str, &str)> = SETTINGS.iter().map(|s| (s.name, s.default)).collect();
    assert_eq!(server(&documented), Ok(Config::default()));
    assert_eq!(ai(&documented), Ok(AiServiceConfig::default()));
}

#[test]
fn empty_values_and_unknown_names_mean_default() {
    for s in SETTINGS {
        assert_eq!(server(&[(s.name, "")]), Ok(Config::default()), "{}", s.name);
        assert_eq!(
            server(&[(s.name, "  ")]),
            Ok(Config::default()),
            "{}",
            s.name
        );
        assert_eq!(
            ai(&[(s.name, "")]),
            Ok(AiServiceConfig::default()),
            "{}",
            s.name
        );
    }
    let env = [
        ("PATH", "/usr/bin"),
        ("HOME", "garbage"),
        ("max_connections", "abc"),
        ("AI_CPUS", "x"),
    ];
    assert_eq!(server(&env), Ok(Config::default()));
    assert_eq!(ai(&env), Ok(AiServiceConfig::default()));
}

/// A valid value other than the default for every setting, all consistent with each other.
const OTHER: &[(&str, &str)] = &[
    ("BIND", "[::1]:9000"),
    ("BIND_WAIT", "2.5"),
    (
        "ALLOWED_ORIGINS",
        "https://a.example, https://b.example:8443/",
    ),
    ("TRUSTED_PROXIES", "10.0.0.0/8, 192.168.1.5, fd00::/8"),
    ("AI_SHARED_SECRET", "s3cret"),
    ("EMBEDDED_AI", "false"),
    ("SESSION_TTL", "60"),
    ("MAX_LOBBIES", "7"),
    ("MAX_CONNECTIONS", "8"),
    ("MAX_CONNECTIONS_PER_IP", "2"),
    ("MESSAGE_RATE", "2.5"),
    ("MESSAGE_BURST", "1"),
    ("MAX_RATE_VIOLATIONS", "3"),
    ("LOBBY_CREATE_RATE", "0.5"),
    ("PROFILE_CREATE_RATE", "2.5"),
    ("PROFILES_MAX", "9"),
    ("MAX_ACTIVE_GAMES", "4"),
    ("AI_MOVE_DELAY", "0"),
    ("TRICK_PAUSE", "0"),
    ("AI_DECISION_TIMEOUT", "0.25"),
    ("AI_MAX_INFLIGHT", "9"),
    ("AI_BREAKER_FAILURES", "1"),
    ("AI_BREAKER_COOLDOWN", "2"),
    ("LOAD_SAMPLE_INTERVAL", "0.5"),
    ("LOAD_LAG_BUSY", "0.05"),
    ("LOAD_LAG_OVERLOAD", "0.5"),
    ("LOAD_LAG_SEVERE", "2"),
    ("LOAD_CPU_BUSY", "0.6"),
    ("LOAD_CPU_OVERLOAD", "1"),
    ("LOAD_THROTTLE_OVERLOAD", "0"),
    ("LOAD_OVERLOAD_SAMPLES", "1"),
    ("LOAD_RECOVER_SAMPLES", "4"),
    ("LOAD_FORCE_LEVEL", "overloaded"),
    ("KEEPALIVE_INTERVAL", "15"),
    ("KEEPALIVE_TIMEOUT", "90"),
    ("SHUTDOWN_GRACE", "0"),
    ("LOG_LEVEL", "debug"),
    ("LOG_FORMAT", "json"),
    ("HANDSHAKE_TIMEOUT", "3"),
    ("WRITE_TIMEOUT", "4.5"),
    ("MAX_MESSAGE_BYTES", "1024"),
    ("OUTBOUND_QUEUE_MESSAGES", "16"),
    ("OUTBOUND_QUEUE_BYTES", "4096"),
    ("OUTBOUND_QUEUE_CHAT_MESSAGES", "5"),
    ("IP_TABLE_MAX", "100"),
    ("MAX_SESSIONS", "200"),
    ("MAX_SOCKETS_PER_IP", "25"),
    ("FIRST_BYTE_TIMEOUT", "1.5"),
    ("SOCKET_SEND_BUFFER_BYTES", "8192"),
    ("SOCKET_RECV_BUFFER_BYTES", "16384"),
    ("LISTEN_BACKLOG", "64"),
    ("EXECUTOR_THREADS", "3"),
    ("STORE", "sqlite:/var/lib/wizard/games.db"),
    ("STORE_SYNC_INTERVAL", "2.5"),
    ("STORE_INIT", "1"),
    ("STORE_BUSY_TIMEOUT", "1.5"),
    ("LOBBY_IDLE_TTL", "7"),
    ("ABANDONED_GAME_TTL", "0.5"),
    ("MAX_LOBBIES_PER_IP", "3"),
    ("MAX_GAMES_PER_IP", "2"),
    ("RECONNECT_RATE", "4.5"),
    ("RECONNECT_BURST", "6"),
    ("JOIN_FAIL_RATE", "2"),
    ("JOIN_FAIL_BURST", "3"),
    ("SOCKET_RATE", "7.5"),
    ("SOCKET_BURST", "9"),
    ("MAX_SPECTATORS", "0"),
    ("CHAT_RATE", "3"),
    ("CHAT_IP_RATE", "4.5"),
    ("CHAT_IP_BURST", "6"),
    ("CHAT_LOBBY_RATE", "7"),
    ("CHAT_LOBBY_BURST", "8"),
    ("CHAT_HISTORY_BYTES", "0"),
    ("CHAT_REPLAY_RATE", "2"),
    ("CHAT_REPLAY_BURST", "1"),
    ("SPECTATE_RATE", "0.5"),
    ("HISTORY_DAYS", "0"),
    ("HISTORY_PURGE_INTERVAL", "5"),
    ("HISTORY_PURGE_ROWS", "7"),
    ("GAMES_RATE", "2.5"),
    ("QUICK_PLAY_WAIT", "12"),
    ("QUICK_PLAY_INTERVAL", "0.25"),
    ("QUICK_PLAY_JOIN_WAIT", "7.5"),
    ("QUICK_PLAY_AWAY", "4.5"),
    ("QUICK_PLAY_SETTLE", "0.125"),
    ("QUICK_PLAY_MAX", "33"),
    ("LIST_TABLES_RATE", "1.5"),
    ("LIST_TABLES_BURST", "4"),
    ("SPECTATE_BURST", "2"),
    ("SPECTATORS_STATE_INTERVAL", "0"),
    ("REMOVED_PLAYER_TTL", "0"),
    ("REMOVED_PLAYERS_MAX", "0"),
    ("SHARD_ID", "K"),
    ("AI_SERVER_URL", "ws://game.example:9000/internal/ai"),
    ("AI_WORKERS", "2"),
    ("AI_MAX_QUEUE", "5"),
    ("AI_DEGRADE_QUEUE", "0"),
    ("AI_AGENT", "random"),
];

#[test]
fn every_setting_is_read_and_changes_its_struct() {
    let listed: BTreeSet<&str> = SETTINGS.iter().map(|s| s.name).collect();
    let other: BTreeSet<&str> = OTHER.iter().map(|(n, _)| *n).collect();
    assert_eq!(listed, other, "SETTINGS and this test's table differ");
    assert_eq!(
        SETTINGS.len(),
        listed.len() + 3,
        "only AI_SHARED_SECRET, LOG_LEVEL and LOG_FORMAT are listed twice"
    );
    for (name, value) in OTHER {
        if names(Component::Server).contains(name) {
            assert_ne!(
                server(&[(name, value)]).unwrap(),
                Config::default(),
                "{name}"
            );
        }
        if names(Component::AiService).contains(name) {
            assert_ne!(
                ai(&[(name, value)]).unwrap(),
                AiServiceConfig::default(),
                "{name}"
            );
        }
    }
}

#[test]
fn every_field_is_covered() {
    // Destructured without `..`: a new field fails to compile here until a setting covers it.
    let Config {
        shell:
            ShellConfig {
                bind,
                bind_wait_us,
                embedded_ai,
                keepalive_interval_us,
                keepalive_timeout_us,
                log_level,
                log_format,
                handshake_timeout_us,
                write_timeout_us,
                outbound_queue_messages_max,
                outbound_queue_bytes_max,
                outbound_queue_chat_messages_max,
                first_byte_timeout_us,
                socket_send_buffer_bytes,
                socket_recv_buffer_bytes,
                listen_backlog_max,
                executor_threads,
                store,
                store_sync_interval_us,
                store_init,
                store_busy_timeout_us,
                history_purge_interval_us,
                history_purge_rows_max,
                games_rate_per_min,
            },
        allowed_origins,
        trusted_proxies,
        ai_shared_secret,
        session_ttl_us,
        lobbies_max,
        conns_max,
        conns_per_ip_max,
        message_rate_per_sec,
        message_burst,
        rate_violations_max,
        lobby_create_rate_per_min,
        profile_create_rate_per_hour,
        profiles_max,
        history_days,
        active_games_max,
        ai_move_delay_us,
        trick_pause_us,
        ai_decision_timeout_us,
        ai_inflight_max,
        ai_breaker_failures_max,
        ai_breaker_cooldown_us,
        load_sample_interval_us,
        load_lag_busy_us,
        load_lag_overload_us,
        load_lag_severe_us,
        load_cpu_busy_share,
        load_cpu_overload_share,
        load_throttle_overload_share,
        load_overload_samples,
        load_recover_samples,
        load_force_level,
        shutdown_grace_us,
        message_bytes_max,
        ip_table_entries_max,
        sessions_max,
        sockets_per_ip_max,
        lobby_idle_ttl_us,
        abandoned_game_ttl_us,
        lobbies_per_ip_max,
        games_per_ip_max,
        reconnect_rate_per_min,
        reconnect_burst,
        join_fail_rate_per_min,
        join_fail_burst,
        socket_rate_per_sec,
        socket_burst,
        spectators_per_lobby_max,
        chat_rate_per_min,
        chat_ip_rate_per_min,
        chat_ip_burst,
        chat_lobby_rate_per_min,
        chat_lobby_burst,
        chat_history_bytes_max,
        chat_replay_rate_per_min,
        chat_replay_burst,
        spectate_rate_per_min,
        spectate_burst,
        spectators_state_interval_us,
        quick_play_wait_us,
        quick_play_interval_us,
        quick_play_max,
        quick_play_join_wait_us,
        quick_play_away_us,
        quick_play_settle_us,
        list_tables_rate_per_min,
        list_tables_burst,
        removed_player_ttl_us,
        removed_players_max,
        shard,
    } = server(OTHER).unwrap();
    assert_eq!((spectators_per_lobby_max, chat_rate_per_min), (0, 3));
    assert_eq!(outbound_queue_chat_messages_max, 5);
    assert_eq!((chat_ip_rate_per_min, chat_ip_burst), (4.5, 6));
    assert_eq!((chat_lobby_rate_per_min, chat_lobby_burst), (7.0, 8));
    assert_eq!(
        (
            chat_history_bytes_max,
            chat_replay_rate_per_min,
            chat_replay_burst
        ),
        (0, 2.0, 1)
    );
    assert_eq!((spectate_rate_per_min, spectate_burst), (0.5, 2));
    assert_eq!(spectators_state_interval_us, 0);
    assert_eq!(
        (quick_play_wait_us, quick_play_interval_us, quick_play_max),
        (12 * S, 250_000, Some(33))
    );
    assert_eq!(
        (
            quick_play_join_wait_us,
            quick_play_away_us,
            quick_play_settle_us
        ),
        (7_500_000, 4_500_000, 125_000)
    );
    assert_eq!((list_tables_rate_per_min, list_tables_burst), (1.5, 4));
    assert_eq!((removed_player_ttl_us, removed_players_max), (0, 0));
    assert_eq!(bind, "[::1]:9000".parse::<SocketAddr>().unwrap());
    assert_eq!(bind_wait_us, 2_500_000);
    assert_eq!(
        allowed_origins,
        ["https://a.example", "https://b.example:8443"]
    );
    let proxies: Vec<String> = trusted_proxies.iter().map(IpCidr::to_string).collect();
    assert_eq!(proxies, ["10.0.0.0/8", "192.168.1.5/32", "fd00::/8"]);
    assert_eq!(
        (ai_shared_secret.as_str(), embedded_ai, session_ttl_us),
        ("s3cret", false, 60 * S)
    );
    assert_eq!((lobbies_max, conns_max, conns_per_ip_max), (7, 8, 2));
    assert_eq!(
        (message_rate_per_sec, message_burst, rate_violations_max),
        (2.5, 1, 3)
    );
    assert_eq!((lobby_create_rate_per_min, active_games_max), (0.5, 4));
    assert_eq!((profile_create_rate_per_hour, profiles_max), (2.5, 9));
    assert_eq!(
        (
            history_days,
            history_purge_interval_us,
            history_purge_rows_max
        ),
        (0, 5 * S, 7)
    );
    assert_eq!(games_rate_per_min, 2.5);
    assert_eq!(
        (ai_move_delay_us, trick_pause_us, ai_decision_timeout_us),
        (0, 0, 250_000)
    );
    assert_eq!(
        (
            ai_inflight_max,
            ai_breaker_failures_max,
            ai_breaker_cooldown_us
        ),
        (9, 1, 2 * S)
    );
    assert_eq!(load_sample_interval_us, 500_000);
    assert_eq!(
        (load_lag_busy_us, load_lag_overload_us, load_lag_severe_us),
        (50_000, 500_000, 2 * S)
    );
    assert_eq!(
        (
            load_cpu_busy_share,
            load_cpu_overload_share,
            load_throttle_overload_share
        ),
        (0.6, 1.0, 0.0)
    );
    assert_eq!((load_overload_samples, load_recover_samples), (1, 4));
    assert_eq!(load_force_level, Some(LoadLevel::Overloaded));
    assert_eq!(
        (
            keepalive_interval_us,
            keepalive_timeout_us,
            shutdown_grace_us
        ),
        (15 * S, 90 * S, 0)
    );
    assert_eq!((log_level.as_str(), log_format), ("debug", LogFormat::Json));
    assert_eq!((handshake_timeout_us, write_timeout_us), (3 * S, 4_500_000));
    assert_eq!(
        (
            message_bytes_max,
            outbound_queue_messages_max,
            outbound_queue_bytes_max
        ),
        (1024, 16, 4096)
    );
    assert_eq!((ip_table_entries_max, sessions_max), (100, 200));
    assert_eq!(
        (
            sockets_per_ip_max,
            first_byte_timeout_us,
            socket_send_buffer_bytes,
            socket_recv_buffer_bytes
        ),
        (25, 1_500_000, 8192, 16_384)
    );
    assert_eq!((listen_backlog_max, executor_threads), (64, 3));
    assert_eq!(
        store,
        wizard_core::vocabulary::config::StoreSpec::Sqlite("/var/lib/wizard/games.db".into())
    );
    assert_eq!(store_sync_interval_us, 2_500_000);
    assert!(store_init);
    assert_eq!(store_busy_timeout_us, 1_500_000);
    assert_eq!((lobby_idle_ttl_us, abandoned_game_ttl_us), (7 * S, S / 2));
    assert_eq!((lobbies_per_ip_max, games_per_ip_max), (3, 2));
    assert_eq!((reconnect_rate_per_min, reconnect_burst), (4.5, 6));
    assert_eq!((join_fail_rate_per_min, join_fail_burst), (2.0, 3));
    assert_eq!((socket_rate_per_sec, socket_burst), (7.5, 9));
    assert_eq!(shard.map(|s| s.as_char()), Some('K'));

    let AiServiceConfig {
        server_url,
        shared_secret,
        workers,
        queue_max,
        degrade_queue_min,
        agent,
        log_level,
        log_format,
    } = ai(OTHER).unwrap();
    assert_eq!((log_level.as_str(), log_format), ("debug", LogFormat::Json));
    assert_eq!(
        (server_url.as_str(), shared_secret.as_str()),
        ("ws://game.example:9000/internal/ai", "s3cret")
    );
    assert_eq!(
        (workers, queue_max, degrade_queue_min, agent),
        (2, 5, 0, AiAgent::Random)
    );
}

#[test]
fn value_forms() {
    let ok = |name: &str, value: &str| server(&[(name, value)]).unwrap();
    assert_eq!(ok("AI_MOVE_DELAY", "0.8").ai_move_delay_us, 800_000);
    assert_eq!(ok("AI_MOVE_DELAY", " 1e-3 ").ai_move_delay_us, 1_000);
    assert_eq!(ok("SESSION_TTL", "0.000001").session_ttl_us, 1);
    for (value, expected) in [
        ("1", true),
        ("TRUE", true),
        ("true", true),
        ("0", false),
        ("False", false),
    ] {
        assert_eq!(
            ok("EMBEDDED_AI", value).shell.embedded_ai,
            expected,
            "{value}"
        );
    }
    assert_eq!(
        ok("BIND", "127.0.0.1:1").shell.bind,
        SocketAddr::from(([127, 0, 0, 1], 1))
    );
    assert_eq!(
        ok("ALLOWED_ORIGINS", " , ,").allowed_origins,
        Vec::<String>::new()
    );
    for level in [LoadLevel::Normal, LoadLevel::Busy, LoadLevel::Overloaded] {
        assert_eq!(
            ok("LOAD_FORCE_LEVEL", level.name()).load_force_level,
            Some(level)
        );
    }
    for agent in [AiAgent::Search, AiAgent::Heuristic, AiAgent::Random] {
        assert_eq!(ai(&[("AI_AGENT", agent.name())]).unwrap().agent, agent);
    }
    // PostgreSQL, by either scheme; the URL is kept as written, and shown (logs) without
    // its password.
    use wizard_core::vocabulary::config::StoreSpec;
    for url in [
        "postgres://wizard@127.0.0.1:5432/wizard",
        "postgresql://wizard:secret@db:5432/wizard",
    ] {
        assert_eq!(
            ok("STORE", url).shell.store,
            StoreSpec::Postgres(url.into())
        );
    }
    let shown = |url: &str| StoreSpec::Postgres(url.into()).to_string();
    assert_eq!(
        shown("postgresql://wizard:secret@db:5432/wizard"),
        "postgresql://wizard:***@db:5432/wizard"
    );
    assert_eq!(
        shown("postgres://wizard@127.0.0.1:5432/wizard"),
        "postgres://wizard@127.0.0.1:5432/wizard"
    );
    assert_eq!(
        shown("postgres://a:b:c@h/d?x=@"),
        "postgres://a:***@h/d?x=@"
    );
    // The last of repeated names wins, as with a shell's environment.
    assert_eq!(
        server(&[("MAX_LOBBIES", "1"), ("MAX_LOBBIES", "2")])
            .unwrap()
            .lobbies_max,
        2
    );
}

#[test]
fn ip_cidrs() {
    let cidr = |s: &str| s.parse::<IpCidr>().unwrap();
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    assert!(cidr("10.0.0.0/8").contains(ip("10.255.1.2")));
    assert!(!cidr("10.0.0.0/8").contains(ip("11.0.0.1")));
    assert!(
        cidr("10.1.2.3/8").contains(ip("10.9.9.9")),
        "host bits are cleared"
    );
    assert_eq!(cidr("10.1.2.3/8").to_string(), "10.0.0.0/8");
    assert!(cidr("192.168.1.5").contains(ip("192.168.1.5")));
    assert!(!cidr("192.168.1.5").contains(ip("192.168.1.6")));
    assert!(cidr("0.0.0.0/0").contains(ip("203.0.113.9")));
    assert!(
        !cidr("0.0.0.0/0").contains(ip("::1")),
        "an IPv4 network holds no IPv6 address"
    );
    assert!(
        cidr("10.0.0.0/8").contains(ip("::ffff:10.0.0.1")),
        "IPv4-mapped addresses match"
    );
    assert!(cidr("fd00::/8").contains(ip("fd12:3456::1")));
    assert!(!cidr("fd00::/8").contains(ip("fe80::1")));
    assert!(cidr("::/0").contains(ip("2001:db8::1")));
    assert!(cidr("::1").contains(ip("::1")) && !cidr("::1").contains(ip("::2")));
    assert!(cidr("2001:db8::/127").contains(ip("2001:db8::1")));
    for bad in [
        "",
        "10.0.0.0/33",
        "::/129",
        "10.0.0.0/",
        "10.0.0.0/x",
        "10.0.0.0/+8",
        "10.0.0/8",
        "host",
        "1.2.3.4/8/8",
    ] {
        assert!(bad.parse::<IpCidr>().is_err(), "{bad:?}");
    }
}

/// (variable, value, words the reason must contain); the error names `variable`.
const BAD: &[(&str, &str, &str)] = &[
    ("MAX_CONNECTIONS", "abc", "not a whole number"),
    ("MAX_CONNECTIONS", "0", "at least 1"),
    ("MAX_CONNECTIONS", "1.5", "not a whole number"),
    ("MAX_CONNECTIONS", "-1", "not a whole number"),
    ("MAX_CONNECTIONS", "99999999999999999999999", "too large"),
    ("MESSAGE_BURST", "0", "at least 1"),
    ("MESSAGE_BURST", "5000000000", "too large"),
    ("MAX_LOBBIES", "0", "at least 1"),
    ("MAX_CONNECTIONS_PER_IP", "0", "at least 1"),
    ("MAX_RATE_VIOLATIONS", "0", "at least 1"),
    ("MAX_ACTIVE_GAMES", "0", "at least 1"),
    ("AI_MAX_INFLIGHT", "0", "at least 1"),
    ("AI_BREAKER_FAILURES", "0", "at least 1"),
    ("LOAD_OVERLOAD_SAMPLES", "0", "at least 1"),
    ("LOAD_RECOVER_SAMPLES", "0", "at least 1"),
    ("MAX_MESSAGE_BYTES", "0", "at least 1"),
    ("OUTBOUND_QUEUE_MESSAGES", "0", "at least 1"),
    ("OUTBOUND_QUEUE_BYTES", "0", "at least 1"),
    ("IP_TABLE_MAX", "0", "at least 1"),
    ("MAX_SESSIONS", "0", "at least 1"),
    ("CHAT_RATE", "0", "at least 1"),
    ("CHAT_RATE", "1.5", "not a whole number"),
    ("MAX_SPECTATORS", "-1", "not a whole number"),
    ("SESSION_TTL", "-1", "negative"),
    ("SESSION_TTL", "abc", "not a number of seconds"),
    ("SESSION_TTL", "0", "greater than 0"),
    ("SESSION_TTL", "inf", "not a number of seconds"),
    ("SESSION_TTL", "NaN", "not a number of seconds"),
    ("SESSION_TTL", "1e10", "too large"),
    ("SESSION_TTL", "30s", "not a number of seconds"),
    ("AI_MOVE_DELAY", "-0.1", "negative"),
    ("TRICK_PAUSE", "x", "not a number of seconds"),
    ("SHUTDOWN_GRACE", "-5", "negative"),
    ("AI_DECISION_TIMEOUT", "0", "greater than 0"),
    ("AI_BREAKER_COOLDOWN", "0", "greater than 0"),
    ("LOAD_SAMPLE_INTERVAL", "0.0000001", "greater than 0"),
    ("KEEPALIVE_INTERVAL", "0", "greater than 0"),
    ("KEEPALIVE_TIMEOUT", "0", "greater than 0"),
    ("HANDSHAKE_TIMEOUT", "0", "greater than 0"),
    ("WRITE_TIMEOUT", "-1", "negative"),
    ("LOAD_LAG_BUSY", "0", "greater than 0"),
    ("MESSAGE_RATE", "0", "greater than 0"),
    ("MESSAGE_RATE", "-3", "greater than 0"),
    ("MESSAGE_RATE", "fast", "not a number"),
    ("LOBBY_CREATE_RATE", "0", "greater than 0"),
    ("LOAD_CPU_BUSY", "1.5", "between 0 and 1"),
    ("LOAD_CPU_OVERLOAD", "-0.1", "between 0 and 1"),
    ("LOAD_THROTTLE_OVERLOAD", "2", "between 0 and 1"),
    ("EMBEDDED_AI", "yes", "1, 0, true or false"),
    ("BIND", "8000", "not an address"),
    ("BIND", "localhost:8000", "not an address"),
    ("LOAD_FORCE_LEVEL", "panic", "normal, busy or overloaded"),
    ("LOG_FORMAT", "xml", "text or json"),
    ("TRUSTED_PROXIES", "10.0.0.0/8,nonsense", "nonsense"),
    ("TRUSTED_PROXIES", "10.0.0.0/33", "prefix length"),
    (
        "ALLOWED_ORIGINS",
        "https://ok.example,example.com",
        "example.com",
    ),
    ("ALLOWED_ORIGINS", "https://a.example/path", "not an origin"),
    // Between variables: the first of the pair is named.
    (
        "LOAD_LAG_BUSY",
        "0.3",
        "must not exceed LOAD_LAG_OVERLOAD (0.25)",
    ),
    (
        "LOAD_LAG_OVERLOAD",
        "1.5",
        "must not exceed LOAD_LAG_SEVERE (1)",
    ),
    (
        "LOAD_CPU_BUSY",
        "0.95",
        "must not exceed LOAD_CPU_OVERLOAD (0.9)",
    ),
    (
        "KEEPALIVE_INTERVAL",
        "60",
        "less than KEEPALIVE_TIMEOUT (60)",
    ),
    // The door.
    ("MAX_SOCKETS_PER_IP", "0", "at least 1"),
    (
        "MAX_SOCKETS_PER_IP",
        "9",
        "not be less than MAX_CONNECTIONS_PER_IP (10)",
    ),
    (
        "FIRST_BYTE_TIMEOUT",
        "11",
        "must not exceed HANDSHAKE_TIMEOUT (10)",
    ),
    ("FIRST_BYTE_TIMEOUT", "0", "greater than 0"),
    ("SOCKET_SEND_BUFFER_BYTES", "1024", "at least 4096"),
    ("SOCKET_RECV_BUFFER_BYTES", "0", "at least 4096"),
    ("LISTEN_BACKLOG", "0", "at least 1"),
    (
        "STORE",
        "postgres:db/wizard",
        "is not memory, sqlite:PATH or postgres://USER@HOST:PORT/DB",
    ),
    (
        "STORE",
        "postgres://",
        "is not memory, sqlite:PATH or postgres://USER@HOST:PORT/DB",
    ),
    (
        "STORE",
        "mysql://db/wizard",
        "is not memory, sqlite:PATH or postgres://USER@HOST:PORT/DB",
    ),
    (
        "STORE",
        "sqlite:",
        "is not memory, sqlite:PATH or postgres://USER@HOST:PORT/DB",
    ),
    (
        "STORE",
        "disk",
        "is not memory, sqlite:PATH or postgres://USER@HOST:PORT/DB",
    ),
    // One character of the lobby-code alphabet, upper case: no 0/O/1/I, no pairs.
    (
        "SHARD_ID",
        "O",
        "is not one character of ABCDEFGHJKLMNPQRSTUVWXYZ23456789",
    ),
    ("SHARD_ID", "0", "is not one character of"),
    ("SHARD_ID", "1", "is not one character of"),
    ("SHARD_ID", "I", "is not one character of"),
    ("SHARD_ID", "a", "is not one character of"),
    ("SHARD_ID", "AB", "is not one character of"),
    ("SHARD_ID", "-", "is not one character of"),
    ("SHARD_ID", "é", "is not one character of"),
    ("STORE_SYNC_INTERVAL", "0", "greater than 0"),
];

const BAD_AI: &[(&str, &str, &str)] = &[
    (
        "AI_SERVER_URL",
        "http://127.0.0.1:8000/internal/ai",
        "ws://",
    ),
    ("AI_SERVER_URL", "ws://", "ws://"),
    (
        "AI_SERVER_URL",
        "wss://game.example/internal/ai",
        "is wss://, which the AI service does not speak",
    ),
    ("AI_WORKERS", "0", "at least 1"),
    ("AI_MAX_QUEUE", "0", "at least 1"),
    ("AI_DEGRADE_QUEUE", "-1", "not a whole number"),
    ("AI_AGENT", "smart", "search, heuristic or random"),
];

fn check_bad(name: &str, value: &str, words: &str, result: Result<(), ConfigError>) {
    let err = result.expect_err(&format!("{name}={value:?} was accepted"));
    assert_eq!(err.variable, name, "{err}");
    let text = err.to_string();
    assert!(text.starts_with(&format!("{name}: \"")), "{text}");
    assert!(text.contains(words), "{name}={value:?}: {text}");
}

#[test]
fn bad_values_name_their_variable() {
    let err = server(&[("MAX_CONNECTIONS", "abc")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "MAX_CONNECTIONS: \"abc\" is not a whole number"
    );
    assert_eq!(err.value, "abc");
    for (name, value, words) in BAD {
        check_bad(name, value, words, server(&[(name, value)]).map(drop));
    }
    for (name, value, words) in BAD_AI {
        check_bad(name, value, words, ai(&[(name, value)]).map(drop));
    }
    // A bad value is found even among many good ones.
    let mut env: Vec<(&str, &str)> = OTHER.to_vec();
    env.push(("MAX_SESSIONS", "lots"));
    check_bad(
        "MAX_SESSIONS",
        "lots",
        "not a whole number",
        server(&env).map(drop),
    );
}

proptest! {
    #[test]
    fn arbitrary_values_never_panic(index in 0..SETTINGS.len(), value in prop_oneof![any::<String>(), "[-+0-9.e, :/a-z]{0,24}"]) {
        let name = SETTINGS[index].name;
        if let Err(err) = Config::from_pairs([(name, value.as_str())]) {
            prop_assert!(names(Component::Server).contains(&err.variable));
            prop_assert!(!err.to_string().is_empty());
        }
        if let Err(err) = AiServiceConfig::from_pairs([(name, value.as_str())]) {
            prop_assert_eq!(err.variable, name);
        }
    }

    #[test]
    fn durations_round_to_microseconds(us in 0u64..1_000_000_000_000) {
        let text = format!("{}.{:06}", us / S, us % S);
        let config = Config::from_pairs([("SHUTDOWN_GRACE", text.as_str())]).unwrap();
        prop_assert_eq!(config.shutdown_grace_us, us);
    }
}

/// docs/OPERATIONS.md lists every setting the binaries read, and nothing else that
/// looks like one.
#[test]
fn operations_doc_lists_every_setting() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/OPERATIONS.md"
    ))
    .expect("docs/OPERATIONS.md");
    for setting in wizard_core::vocabulary::config::SETTINGS {
        assert!(
            doc.contains(&format!("| `{}` |", setting.name)),
            "docs/OPERATIONS.md has no row for {}",
            setting.name
        );
    }
}

/// Unset, the door's settings follow the ones they depend on; set, they are checked.
#[test]
fn door_defaults_follow_their_partners() {
    let c = server(&[
        ("MAX_CONNECTIONS_PER_IP", "7"),
        ("HANDSHAKE_TIMEOUT", "0.5"),
    ])
    .unwrap();
    assert_eq!(
        (c.sockets_per_ip_max, c.shell.first_byte_timeout_us),
        (23, 500_000)
    );
    // Twice MAX_CONNECTIONS_PER_IP once that is more than the page-load headroom.
    let c = server(&[("MAX_CONNECTIONS_PER_IP", "40")]).unwrap();
    assert_eq!(c.sockets_per_ip_max, 80);
    let c = server(&[("MAX_CONNECTIONS_PER_IP", "7"), ("MAX_SOCKETS_PER_IP", "7")]).unwrap();
    assert_eq!(
        (c.sockets_per_ip_max, c.shell.first_byte_timeout_us),
        (7, 2 * S)
    );
    let c = server(&[("HANDSHAKE_TIMEOUT", "3"), ("FIRST_BYTE_TIMEOUT", "3")]).unwrap();
    assert_eq!(c.shell.first_byte_timeout_us, 3 * S);
}
