//! Idle connections (server RSS per idle websocket) and the text summaries of a run.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use async_io::Timer;
use async_tungstenite::tungstenite::Message;
use futures_lite::{FutureExt, StreamExt};
use serde_json::{Value, json};
use wizard_core::vocabulary::wire::{ClientMessage, ServerMessage, decode_server};

use super::net::source_ip;
use crate::game::{open, send};
use crate::{Ctx, procfs};

/// Opens `idle` connections that say hello and then idle; the server's RSS growth per
/// connection.
pub(super) async fn idle_run(ctx: &Rc<Ctx>, server: &procfs::Sampler) -> Value {
    let s = &ctx.settings;
    Timer::after(Duration::from_millis(500)).await;
    let before = server.sample();
    let done = Rc::new(Cell::new(0usize));
    let mut conns = Vec::new();
    for i in 0..s.idle {
        if Instant::now() >= ctx.deadline {
            break;
        }
        let Some(mut ws) = open(ctx, source_ip(0, i / s.per_ip), false).await else {
            continue;
        };
        let _ = send(
            &mut ws,
            &ClientMessage::Hello {
                token: None,
                deltas: false,
                profile_key: None,
            },
        )
        .await;
        // Read up to the state that follows welcome and server_status.
        let ok = async {
            while let Some(Ok(m)) = ws.next().await {
                if let Message::Text(t) = m {
                    match decode_server(t.as_str()) {
                        Ok(ServerMessage::State { .. }) => return true,
                        Ok(ServerMessage::Error { .. }) => return false,
                        _ => {}
                    }
                }
            }
            false
        }
        .or(async {
            Timer::after(Duration::from_secs(5)).await;
            false
        })
        .await;
        if ok {
            done.set(done.get() + 1);
            ctx.stats.borrow_mut().welcomed += 1;
        }
        conns.push(ws);
    }
    Timer::after(Duration::from_secs(2)).await;
    let after = server.sample();
    let n = done.get();
    let result = match (before, after) {
        (Some(b), Some(a)) => {
            let delta = a.rss_kib as f64 - b.rss_kib as f64;
            json!({
                "connections": n,
                "rss_kib_before": b.rss_kib,
                "rss_kib_after": a.rss_kib,
                "rss_kib_per_connection": if n > 0 { (delta / n as f64 * 100.0).round() / 100.0 } else { 0.0 },
            })
        }
        _ => json!({ "connections": n, "error": "no --server-pid: RSS not measured" }),
    };
    for mut ws in conns {
        let _ = ws.close(None).await;
    }
    result
}

/// A before/after row for one run: clients, p95, refused.
pub fn table_row(line: &Value) -> String {
    let r = &line["results"];
    let s = &line["settings"];
    let clients = if s["arrival_rate"].as_f64().unwrap_or(0.0) > 0.0 {
        format!("{} games/s", s["arrival_rate"])
    } else {
        format!("{} games", s["games"])
    };
    let p95 = if r["start_latency_ms"]["count"].as_u64().unwrap_or(0) > 0 {
        format!(
            "start {} ms, move {} ms",
            r["start_latency_ms"]["p95"], r["move_latency_ms"]["p95"]
        )
    } else {
        format!("move {} ms", r["move_latency_ms"]["p95"])
    };
    format!(
        "| {} | {} | {} | {} |",
        s["label"].as_str().unwrap_or(""),
        clients,
        p95,
        r["refused"]["total"]
    )
}

/// A human-readable summary of a report.
pub fn summary(line: &Value) -> String {
    let r = &line["results"];
    let s = &line["settings"];
    let mut out = String::new();
    let lat = &r["move_latency_ms"];
    out.push_str(&format!(
        "mode {} games {} humans {}/{} pacing {} window {} s\n",
        s["mode"], s["games"], s["humans"], s["seats"], s["pacing"], r["window_s"]
    ));
    out.push_str(&format!(
        "accepted: lobbies {} games started {} finished {} moves {} ({}/s), human moves {}\n",
        r["accepted"]["lobbies"],
        r["accepted"]["games_started"],
        r["accepted"]["games_finished"],
        r["accepted"]["moves"],
        r["accepted"]["moves_per_s"],
        r["accepted"]["human_moves"]
    ));
    out.push_str(&format!("refused: {}\n", r["refused"]));
    if r["errors"].as_object().is_some_and(|o| !o.is_empty()) {
        out.push_str(&format!("other errors: {}\n", r["errors"]));
    }
    out.push_str(&format!(
        "move latency ms (from intended send): n {} p50 {} p95 {} p99 {} p99.9 {} max {}\n",
        lat["count"], lat["p50"], lat["p95"], lat["p99"], lat["p999"], lat["max"]
    ));
    let st = &r["start_latency_ms"];
    if st["count"].as_u64().unwrap_or(0) > 0 {
        out.push_str(&format!(
            "new-game latency ms (arrival to game start): n {} p50 {} p95 {} p99 {} max {}\n",
            st["count"], st["p50"], st["p95"], st["p99"], st["max"]
        ));
    }
    if !r["attack"].is_null() {
        out.push_str(&format!("attack: {}\n", r["attack"]));
    }
    out.push_str(&format!("server: {}\n", line["server"]));
    out.push_str(&format!("generator: {}\n", line["generator"]));
    if !r["moves_per_core_second"].is_null() {
        out.push_str(&format!(
            "server moves per core-second {}, CPU per move {} us\n",
            r["moves_per_core_second"], r["server_cpu_us_per_move"]
        ));
    }
    out.push_str("| run | clients | p95 | refused |\n|---|---|---|---|\n");
    out.push_str(&table_row(line));
    out.push('\n');
    out
}
