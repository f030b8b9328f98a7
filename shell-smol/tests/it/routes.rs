//! HTTP routes and the upgrade policy over real sockets: health, metrics, 404, the 403s
//! of `/internal/ai` and `/ws`, and the slowloris handshake timeout.

use std::net::TcpStream;

use async_io::Async;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use wizard_core::vocabulary::wire::decode_health;

use crate::client::{TestServer, bounded, http, metric_in, ws};

#[test]
fn health_reports_the_protocol_fields() {
    let server = TestServer::start(&[]);
    let (status, body) = bounded(10, http(server.addr, "GET", "/health", &[]));
    assert_eq!(status, 200);
    let health = decode_health(&body).unwrap();
    assert_eq!(health.status, "ok");
    assert!(health.accepting_games);
    assert_eq!(
        (health.lobbies, health.active_games, health.connections),
        (0, 0, 0)
    );
    assert_eq!(health.version, env!("CARGO_PKG_VERSION"), "{body}");
    let value: serde_json::Value = serde_json::from_str(&body).unwrap();
    for field in [
        "status",
        "load",
        "loop_lag",
        "cpu",
        "throttled",
        "accepting_games",
        "lobbies",
        "active_games",
        "sessions",
        "connections",
        "ai_available",
        "ai",
        "version",
    ] {
        assert!(value.get(field).is_some(), "missing {field} in {body}");
    }
}

/// The tests' reading of `/metrics`: a bare name sums its labelled samples, labels pick
/// one, and a longer name that begins alike is another series.
#[test]
fn the_tests_read_a_series_as_the_sum_of_its_samples() {
    let body = "# TYPE wizard_fallbacks_total counter\n\
        wizard_fallbacks_total{reason=\"breaker_open\"} 0\n\
        wizard_fallbacks_total{reason=\"timeout\"} 3\n\
        wizard_fallbacks_total{reason=\"overloaded\"} 2\n\
        wizard_tcp_open 7\n\
        wizard_tcp_open_max 9\n\
        # EOF\n";
    for (series, want) in [
        ("wizard_fallbacks_total", 5.0),
        ("wizard_fallbacks_total{reason=\"timeout\"}", 3.0),
        ("wizard_fallbacks_total{reason=\"internal\"}", 0.0),
        ("wizard_tcp_open", 7.0),
        ("wizard_tcp_open_max", 9.0),
        ("wizard_tcp", 0.0),
        ("wizard_no_such_series", 0.0),
    ] {
        assert_eq!(metric_in(body, series), want, "{series}");
    }
}

#[test]
fn metrics_parse_as_prometheus_text() {
    let server = TestServer::start(&[]);
    let (status, body) = bounded(10, http(server.addr, "GET", "/metrics", &[]));
    assert_eq!(status, 200);
    assert!(body.ends_with("# EOF\n"), "{body}");
    let mut samples = 0;
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        let (name, value) = line.rsplit_once(' ').unwrap();
        assert!(value.parse::<f64>().is_ok(), "bad value in {line:?}");
        let bare = name.split('{').next().unwrap();
        assert!(
            (bare.starts_with("wizard_") || bare.starts_with("process_"))
                && bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "bad name in {line:?}"
        );
        samples += 1;
    }
    assert!(samples >= 20, "{body}");
    for wanted in [
        "wizard_connections ",
        "wizard_active_games ",
        "wizard_load_level ",
        "wizard_cpu_share ",
        "wizard_dormant_games ",
        "wizard_evictable_sessions ",
        "wizard_games_dormant_total ",
        "wizard_lobbies_idle_deleted_total ",
    ] {
        assert!(body.contains(wanted), "no {wanted} in {body}");
    }
    // The standard process metrics, read from the OS: this test's server runs in the
    // test process, which has memory, descriptors and threads.
    let sample = |name: &str| -> f64 {
        body.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {body}"))
    };
    assert!(sample("process_resident_memory_bytes") > 1e6);
    assert!(sample("process_virtual_memory_bytes") >= sample("process_resident_memory_bytes"));
    assert!(sample("process_open_fds") >= 3.0);
    assert!(sample("process_max_fds") >= sample("process_open_fds"));
    assert!(sample("process_threads") >= 2.0);
    assert!(sample("process_cpu_seconds_total") > 0.0);
    assert!(sample("process_start_time_seconds") > 1.7e9);
    // The build: this version and a commit (12 hex digits in a checkout).
    let info = body
        .lines()
        .find(|l| l.starts_with("wizard_build_info{"))
        .unwrap_or_else(|| panic!("no wizard_build_info in {body}"));
    let version = format!("version=\"{}\"", env!("CARGO_PKG_VERSION"));
    assert!(info.contains(&version), "{info}");
    assert!(info.ends_with("} 1"), "{info}");
    let commit = info
        .split("commit=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default();
    assert!(
        commit == "unknown"
            || (commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{info}"
    );
}

/// The core task's histograms: each input's `handle` time by kind, and the inputs per
/// pass, counted as a player says hello.
#[test]
fn core_histograms_count_what_the_core_handled() {
    let server = TestServer::start(&[]);
    let addr = server.addr;
    let count = |body: &str, series: &str| -> f64 {
        body.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in {body}"))
    };
    bounded(10, async {
        let (_, before) = http(addr, "GET", "/metrics", &[]).await;
        // Every kind is there from the start, at zero.
        assert_eq!(
            count(
                &before,
                r#"wizard_core_handle_seconds_count{input="message"}"#
            ),
            0.0
        );
        assert_eq!(
            count(
                &before,
                r#"wizard_core_handle_seconds_count{input="shutdown"}"#
            ),
            0.0
        );
        let (_player, _) = crate::client::Player::hello(addr, None).await;
        // The hello's answer went out after its pass was counted.
        let (_, after) = http(addr, "GET", "/metrics", &[]).await;
        assert!(
            count(
                &after,
                r#"wizard_core_handle_seconds_count{input="opened"}"#
            ) >= 1.0
        );
        assert!(
            count(
                &after,
                r#"wizard_core_handle_seconds_count{input="message"}"#
            ) >= 1.0
        );
        assert!(count(&after, "wizard_core_batch_inputs_count") >= 1.0);
        let all = r#"wizard_core_handle_seconds_bucket{le="+Inf",input="message"}"#;
        assert_eq!(
            count(&after, all),
            count(
                &after,
                r#"wizard_core_handle_seconds_count{input="message"}"#
            )
        );
    });
}

#[test]
fn unknown_routes_are_404_and_the_page_is_served() {
    let server = TestServer::start(&[]);
    bounded(10, async {
        assert_eq!(http(server.addr, "GET", "/nope", &[]).await.0, 404);
        assert_eq!(http(server.addr, "GET", "/a/b", &[]).await.0, 404);
        assert_eq!(http(server.addr, "POST", "/health", &[]).await.0, 405);
        let (status, body) = http(server.addr, "GET", "/", &[]).await;
        assert_eq!(status, 200);
        assert!(body.contains("Wizard"));
    });
}

#[test]
fn internal_ai_refuses_forwarded_requests_and_wrong_secrets() {
    let server = TestServer::start(&[("AI_SHARED_SECRET", "s3cret")]);
    let addr = server.addr;
    bounded(10, async {
        let right = ("Authorization", "Bearer s3cret");
        assert_eq!(
            ws(
                addr,
                "/internal/ai",
                &[right, ("X-Forwarded-For", "1.2.3.4")]
            )
            .await
            .err(),
            Some(403)
        );
        assert_eq!(
            ws(addr, "/internal/ai", &[right, ("Via", "1.1 proxy")])
                .await
                .err(),
            Some(403)
        );
        assert_eq!(
            ws(addr, "/internal/ai", &[("Authorization", "Bearer wrong")])
                .await
                .err(),
            Some(403)
        );
        assert_eq!(ws(addr, "/internal/ai", &[]).await.err(), Some(403));
        assert!(ws(addr, "/internal/ai", &[right]).await.is_ok());
    });
}

#[test]
fn origin_is_checked_when_origins_are_set() {
    let server = TestServer::start(&[("ALLOWED_ORIGINS", "https://good.example")]);
    let addr = server.addr;
    bounded(10, async {
        assert_eq!(
            ws(addr, "/ws", &[("Origin", "https://evil.example")])
                .await
                .err(),
            Some(403)
        );
        assert!(
            ws(addr, "/ws", &[("Origin", "https://good.example")])
                .await
                .is_ok()
        );
    });
}

#[test]
fn slowloris_is_closed_after_the_handshake_timeout() {
    let server = TestServer::start(&[("HANDSHAKE_TIMEOUT", "0.3")]);
    bounded(10, async {
        let mut tcp = Async::<TcpStream>::connect(server.addr).await.unwrap();
        tcp.write_all(b"GET /ws HTTP/1.1\r\nHost: loc")
            .await
            .unwrap();
        let started = std::time::Instant::now();
        let mut rest = Vec::new();
        let n = tcp.read_to_end(&mut rest).await.unwrap_or(0);
        assert_eq!(n, 0, "no response expected");
        assert!(started.elapsed() >= std::time::Duration::from_millis(250));
    });
}

#[test]
fn oversized_heads_are_refused() {
    let server = TestServer::start(&[]);
    let long = "x".repeat(9000);
    let (status, _) = bounded(
        10,
        http(server.addr, "GET", "/health", &[("X-Junk", &long)]),
    );
    assert_eq!(status, 431);
}
