//! The run history: one JSON line per run, and the comparison of the latest run with
//! earlier comparable ones.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

/// `git rev-parse --short HEAD`, when git and a repository are there.
pub fn commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| !o.stdout.is_empty());
    let hash = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    Some(if dirty { format!("{hash}-dirty") } else { hash })
}

/// Appends one line to `path` (creating it and its directory).
pub fn append(path: &Path, line: &Value) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = line.to_string();
    text.push('\n');
    file.write_all(text.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Every parseable line of the history.
pub fn load(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// What makes two runs comparable: the same shape of load against the same server
/// settings (label aside).
fn key(line: &Value) -> Value {
    let s = &line["settings"];
    serde_json::json!([
        s["mode"],
        s["games"],
        s["humans"],
        s["seats"],
        s["pacing"],
        s["think_ms"],
        s["arrival_rate"],
        s["attack"],
        s["idle"],
        s["server_env"],
        line["machine"]["nproc"]
    ])
}

fn f(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn row(line: &Value) -> String {
    let r = &line["results"];
    let lat = &r["move_latency_ms"];
    let server = &line["server"];
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        f(&line["ts"]),
        f(&line["commit"]),
        f(&line["settings"]["label"]),
        f(&r["accepted"]["moves_per_s"]),
        f(&lat["p50"]),
        f(&lat["p99"]),
        f(&lat["p999"]),
        f(&lat["max"]),
        f(&server["cpu_percent_of_core"]),
        f(&server["rss_mib_max"]),
        f(&r["refused"]["total"]),
    )
}

/// The latest run of `path` against up to `last` earlier comparable runs.
pub fn compare(path: &Path, last: usize) -> Result<String, String> {
    let lines = load(path)?;
    let Some(latest) = lines.last() else {
        return Err(format!("{}: no runs", path.display()));
    };
    let k = key(latest);
    let earlier: Vec<&Value> = lines[..lines.len() - 1]
        .iter()
        .filter(|l| key(l) == k)
        .collect();
    let skip = earlier.len().saturating_sub(last);
    let mut out = format!(
        "latest run: {} {} games {} humans {}/{} pacing {}\n{} earlier comparable run(s) in {}\n\n",
        f(&latest["settings"]["mode"]),
        f(&latest["settings"]["label"]),
        f(&latest["settings"]["games"]),
        f(&latest["settings"]["humans"]),
        f(&latest["settings"]["seats"]),
        f(&latest["settings"]["pacing"]),
        earlier.len(),
        path.display()
    );
    out.push_str(
        "| ts | commit | label | moves/s | p50 ms | p99 ms | p99.9 ms | max ms | server CPU % | RSS MiB | refused |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for line in earlier.iter().skip(skip) {
        out.push_str(&row(line));
        out.push('\n');
    }
    out.push_str(&row(latest));
    out.push_str(" <- latest\n");
    if let Some(prev) = earlier.last() {
        let delta = |a: &Value, b: &Value| match (a.as_f64(), b.as_f64()) {
            (Some(a), Some(b)) if b != 0.0 => format!("{:+.1} %", (a - b) / b * 100.0),
            _ => "-".into(),
        };
        out.push_str(&format!(
            "\nagainst the previous comparable run: p99 {}, server CPU {}, RSS {}, moves/s {}\n",
            delta(
                &latest["results"]["move_latency_ms"]["p99"],
                &prev["results"]["move_latency_ms"]["p99"]
            ),
            delta(
                &latest["server"]["cpu_percent_of_core"],
                &prev["server"]["cpu_percent_of_core"]
            ),
            delta(
                &latest["server"]["rss_mib_max"],
                &prev["server"]["rss_mib_max"]
            ),
            delta(
                &latest["results"]["accepted"]["moves_per_s"],
                &prev["results"]["accepted"]["moves_per_s"]
            ),
        ));
    }
    Ok(out)
}

/// A before/after table (clients, p95, refused) of the last `last` runs.
pub fn table(path: &Path, last: usize) -> Result<String, String> {
    let lines = load(path)?;
    let skip = lines.len().saturating_sub(last);
    let mut out = String::from("| run | clients | p95 | refused |\n|---|---|---|---|\n");
    for line in lines.iter().skip(skip) {
        out.push_str(&super::table_row(line));
        out.push('\n');
    }
    Ok(out)
}
