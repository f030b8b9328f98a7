//! Protocol transcripts: replays every `fixtures/protocol/*.jsonl` through [`Server`].
//!
//! A transcript is a header line (configuration and seed) followed by one line per
//! input, each with the outputs that input must produce, in order and in number
//! (notes are ignored). Expected messages match partially (listed keys only) and
//! may bind variables (`"$tok"`) that later inputs reuse, so tokens, player ids,
//! lobby codes and AI request ids flow from outputs into inputs.
//! `fixtures/protocol/README.md` documents the format; this module is its only reader.
//! Client frames go through `wire::decode_client` and AI frames through
//! `wire::decode_ai_reply` exactly as a shell would, so junk is tested as junk.

// A test of the core, not the core: it reads the transcript files.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

use serde_json::{Map, Value};
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{BadFrame, ConnKind, Delivery, Input, Output};
use wizard_core::vocabulary::load::LoadSample;
use wizard_core::vocabulary::rng::Seed;
use wizard_core::vocabulary::wire::held::{HeldState, Taken};
use wizard_core::{Server, Time};

/// Keys a line may carry besides its one input.
const LINE_KEYS: [&str; 3] = ["at", "expect", "wake"];
/// The input keys; exactly one per line.
const INPUT_KEYS: [&str; 11] = [
    "open",
    "ai_open",
    "send",
    "ai_send",
    "binary",
    "too_large",
    "close",
    "sample",
    "tick",
    "run",
    "shutdown",
];
/// A `run` fails when one deadline fires more often than this in a row...
const RUN_REPEATS_MAX: u32 = 3;
/// ...or when it produces more outputs than this.
const RUN_OUTPUTS_MAX: usize = 200_000;
/// An array ending with this string matches any actual array that starts with the
/// elements before it.
const REST: &str = "$...";
/// Matches any value and binds nothing.
const ANY: &str = "$_";

/// Variables bound by expectations, by name without the `$`.
type Vars = BTreeMap<String, Value>;

/// One running transcript.
struct Replay {
    server: Server,
    now: Time,
    vars: Vars,
    /// The same server fed the same inputs, but whose clients all say
    /// `hello {deltas: true}` (PROTOCOL.md 7.5), and what each of its connections
    /// holds after the frames it received: always what `server` sent in full.
    twin: Server,
    held: BTreeMap<u64, HeldState>,
    /// Full states and deltas the twin sent, and their bytes, against those of
    /// `server`.
    tally: Tally,
}

/// Frames and bytes of the states sent with and without deltas.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    full: usize,
    deltas: usize,
    plain_bytes: usize,
    delta_bytes: usize,
}

/// Checks the twin's outputs of one input against the server's: the same frames, but
/// every `state` numbered or sent as a delta, which the connection's [`HeldState`]
/// turns into exactly the server's frame.
fn check_twin(
    plain: &[Output],
    twin: &[Output],
    held: &mut BTreeMap<u64, HeldState>,
    tally: &mut Tally,
) -> Result<(), String> {
    if plain.len() != twin.len() {
        return Err(format!(
            "with deltas {} outputs instead of {}",
            twin.len(),
            plain.len()
        ));
    }
    for (p, t) in plain.iter().zip(twin) {
        let (
            Output::Send {
                conn,
                text,
                delivery,
            },
            Output::Send {
                conn: tconn,
                text: ttext,
                delivery: tdelivery,
            },
        ) = (p, t)
        else {
            if p != t {
                return Err(format!("with deltas {t:?} instead of {p:?}"));
            }
            continue;
        };
        if conn != tconn || delivery != tdelivery {
            return Err(format!("with deltas {t:?} instead of {p:?}"));
        }
        if !text.starts_with(r#"{"type":"state","#) {
            if text != ttext {
                return Err(format!("with deltas {ttext} instead of {text}"));
            }
            continue;
        }
        let view = held.entry(conn.0).or_default();
        let before = view.seq();
        match view.take(ttext) {
            Ok(Taken::Full) => tally.full += 1,
            Ok(Taken::Delta) => tally.deltas += 1,
            other => return Err(format!("{other:?} for {ttext}")),
        }
        if view.seq() != Some(before.map_or(1, |s| s + 1)) {
            return Err(format!("seq after {before:?} in {ttext}"));
        }
        if view.text() != text {
            return Err(format!(
                "the view with deltas differs\n  plain: {text}\n  delta: {ttext}\n  held:  {}",
                view.text()
            ));
        }
        tally.plain_bytes += text.len();
        tally.delta_bytes += ttext.len();
    }
    Ok(())
}

/// The twin's input for a line: a client's `hello` asks for deltas.
fn twin_input_of(key: &str, arg: &Value, vars: &Vars) -> Result<Input, String> {
    if key == "send"
        && let Some(msg) = arg.get("msg")
        && msg["type"] == "hello"
    {
        let mut msg = substitute(msg, vars)?;
        msg["deltas"] = Value::Bool(true);
        let text = serde_json::to_string(&msg).map_err(|e| e.to_string())?;
        return Ok(Input::from_text(conn_of(arg)?, ConnKind::Player, &text));
    }
    input_of(key, arg, vars)
}

/// Where a line came from, for messages.
struct Place<'a> {
    file: &'a str,
    line: usize,
    text: &'a str,
}

impl Place<'_> {
    fn fail(&self, why: impl std::fmt::Display) -> String {
        format!("{}:{}: {why}\n  line: {}", self.file, self.line, self.text)
    }
}

/// A variable reference `$name` (letters, digits, `_`), with an optional `|lower` or
/// `|upper` in inputs; `None` for any other string.
fn var_ref(s: &str) -> Option<(&str, Option<&str>)> {
    let body = s.strip_prefix('$')?;
    let (name, modifier) = match body.split_once('|') {
        Some((n, m)) => (n, Some(m)),
        None => (body, None),
    };
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    ok.then_some((name, modifier))
}

/// Replaces every `"$name"` in an input by its bound value.
fn substitute(value: &Value, vars: &Vars) -> Result<Value, String> {
    Ok(match value {
        Value::String(s) => {
            if let Some(literal) = s.strip_prefix("$$") {
                return Ok(Value::String(format!("${literal}")));
            }
            let Some((name, modifier)) = var_ref(s) else {
                return Ok(value.clone());
            };
            let bound = vars
                .get(name)
                .ok_or_else(|| format!("variable ${name} is used before it is bound"))?;
            match (modifier, bound) {
                (None, v) => v.clone(),
                (Some("lower"), Value::String(t)) => Value::String(t.to_lowercase()),
                (Some("upper"), Value::String(t)) => Value::String(t.to_uppercase()),
                (Some(m), v) => return Err(format!("cannot apply |{m} to ${name} = {v}")),
            }
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute(v, vars))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), substitute(v, vars)?)))
                .collect::<Result<Map<_, _>, String>>()?,
        ),
        other => other.clone(),
    })
}

/// A value cut for a one-line message.
fn short(value: &Value) -> String {
    const CHARS_MAX: usize = 300;
    let text = value.to_string();
    if text.chars().count() <= CHARS_MAX {
        return text;
    }
    let cut: String = text.chars().take(CHARS_MAX).collect();
    format!("{cut} ...")
}

/// Partial match of `actual` against `expected`, binding variables on first sight.
/// Returns the path of the first difference.
fn matches(expected: &Value, actual: &Value, vars: &mut Vars, path: &str) -> Result<(), String> {
    let differ = || {
        Err(format!(
            "at {path}: expected {}, got {}",
            short(expected),
            short(actual)
        ))
    };
    match (expected, actual) {
        (Value::String(s), _) if s == ANY => Ok(()),
        (Value::String(s), _) if s.starts_with("$$") => {
            if actual.as_str() == Some(&s[1..]) {
                Ok(())
            } else {
                differ()
            }
        }
        (Value::String(s), _) if var_ref(s).is_some() => {
            let Some((name, None)) = var_ref(s) else {
                return Err(format!("at {path}: modifiers are for inputs only: {s}"));
            };
            match vars.get(name) {
                Some(bound) if bound == actual => Ok(()),
                Some(bound) => Err(format!(
                    "at {path}: ${name} is bound to {}, got {}",
                    short(bound),
                    short(actual)
                )),
                None => {
                    vars.insert(name.to_string(), actual.clone());
                    Ok(())
                }
            }
        }
        (Value::Object(want), Value::Object(got)) => {
            for (key, w) in want {
                let sub = format!("{path}.{key}");
                let Some(g) = got.get(key) else {
                    return Err(format!("at {sub}: missing (expected {w})"));
                };
                matches(w, g, vars, &sub)?;
            }
            Ok(())
        }
        (Value::Array(want), Value::Array(got)) => {
            // `"$..."` last: `want` is a prefix of `got`; first: a suffix.
            let is_rest = |v: &Value| v.as_str() == Some(REST);
            let (want, rest, suffix) = match (want.first(), want.last()) {
                (_, Some(last)) if is_rest(last) => (&want[..want.len() - 1], true, false),
                (Some(first), _) if is_rest(first) => (&want[1..], true, true),
                _ => (want.as_slice(), false, false),
            };
            if got.len() < want.len() || (!rest && got.len() != want.len()) {
                return Err(format!(
                    "at {path}: expected {} elements{}, got {}",
                    want.len(),
                    if rest { " or more" } else { "" },
                    got.len()
                ));
            }
            let skip = if suffix { got.len() - want.len() } else { 0 };
            for (i, (w, g)) in want.iter().zip(&got[skip..]).enumerate() {
                matches(w, g, vars, &format!("{path}[{}]", i + skip))?;
            }
            Ok(())
        }
        (Value::Number(w), Value::Number(g)) if w.as_f64() == g.as_f64() => Ok(()),
        _ if expected == actual => Ok(()),
        _ => differ(),
    }
}

/// An output as the transcript sees it: `{"conn","state","msg"}` for a frame (the
/// text parsed as JSON) or `{"conn","close"}` for a close. Notes are dropped.
///
/// Every frame is also checked here: its delivery is `Newest` exactly when it is a
/// `state` without events, since events must never be dropped by coalescing, and
/// `Chat` exactly when it is a `chat` line (shown as `"state": true` and `false`).
fn output_value(output: &Output) -> Option<Value> {
    match output {
        Output::Send {
            conn,
            text,
            delivery,
        } => {
            let msg = serde_json::from_str::<Value>(text).unwrap_or(Value::String(text.clone()));
            let snapshot =
                msg["type"] == "state" && msg["events"].as_array().is_some_and(Vec::is_empty);
            let newest = *delivery == Delivery::Newest;
            assert_eq!(newest, snapshot, "delivery of {text}");
            let chat = msg["type"] == "chat";
            assert_eq!(*delivery == Delivery::Chat, chat, "delivery of {text}");
            Some(serde_json::json!({"conn": conn.0, "state": newest, "msg": msg}))
        }
        // The transcripts open no in-process AI; shown apart from frames if one did.
        Output::AiRequest { conn, request, .. } => {
            Some(serde_json::json!({"conn": conn.0, "in_process": request}))
        }
        Output::Close { conn, code } => {
            Some(serde_json::json!({"conn": conn.0, "close": code.code()}))
        }
        Output::Note(_) => None,
    }
}

fn field<'a>(obj: &'a Value, key: &str) -> Result<&'a Value, String> {
    obj.get(key)
        .ok_or_else(|| format!("missing field {key:?} in {obj}"))
}

fn conn_of(obj: &Value) -> Result<ConnId, String> {
    field(obj, "conn")?
        .as_u64()
        .map(ConnId)
        .ok_or_else(|| format!("\"conn\" must be a number in {obj}"))
}

fn ip_of(obj: &Value, default: &str) -> Result<IpAddr, String> {
    let text = obj.get("ip").and_then(Value::as_str).unwrap_or(default);
    text.parse().map_err(|e| format!("bad ip {text:?}: {e}"))
}

/// The text of a frame: `"raw"` as is, or `"msg"` (after substitution) encoded.
fn frame_text(obj: &Value, vars: &Vars) -> Result<String, String> {
    if let Some(raw) = obj.get("raw") {
        return raw
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("\"raw\" must be a string in {obj}"));
    }
    let msg = substitute(field(obj, "msg")?, vars)?;
    serde_json::to_string(&msg).map_err(|e| e.to_string())
}

fn sample_of(obj: &Value) -> LoadSample {
    let us = |k: &str| obj.get(k).and_then(Value::as_u64).unwrap_or(0);
    let share = |k: &str| obj.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    LoadSample {
        lag_us_max: us("lag_us_max"),
        lag_us_p99: us("lag_us_p99"),
        cpu_share: share("cpu_share"),
        throttled_share: share("throttled_share"),
    }
}

/// Builds the core input of a line.
fn input_of(key: &str, arg: &Value, vars: &Vars) -> Result<Input, String> {
    Ok(match key {
        "open" | "ai_open" => Input::Opened {
            conn: conn_of(arg)?,
            kind: if key == "open" {
                ConnKind::Player
            } else {
                ConnKind::Ai
            },
            ip: ip_of(
                arg,
                if key == "open" {
                    "10.0.0.1"
                } else {
                    "127.0.0.1"
                },
            )?,
        },
        "send" => Input::from_text(conn_of(arg)?, ConnKind::Player, &frame_text(arg, vars)?),
        "ai_send" => {
            let text = frame_text(arg, vars)?;
            Input::from_text(conn_of(arg)?, ConnKind::Ai, &text)
        }
        "binary" | "too_large" => Input::BadFrame {
            conn: conn_of(arg)?,
            frame: if key == "binary" {
                BadFrame::Binary
            } else {
                BadFrame::TooLarge
            },
        },
        "close" => Input::Closed {
            conn: conn_of(arg)?,
        },
        "sample" => Input::LoadSample(sample_of(arg)),
        "tick" => Input::Timeout,
        "shutdown" => Input::Shutdown,
        other => return Err(format!("unknown input {other:?}")),
    })
}

fn ms_to_time(ms: &Value) -> Result<Time, String> {
    let ms = ms
        .as_f64()
        .filter(|m| *m >= 0.0)
        .ok_or("\"at\" must be a number of ms")?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(Time((ms * 1000.0).round() as u64))
}

/// Lists values for a failure message: long lists keep their ends, long values their
/// start.
fn render(values: &[Value]) -> String {
    const HEAD: usize = 6;
    const TAIL: usize = 6;
    const CHARS_MAX: usize = 4000;
    if values.is_empty() {
        return "    (none)".to_string();
    }
    let line = |i: usize, v: &Value| {
        let text = v.to_string();
        let cut: String = text.chars().take(CHARS_MAX).collect();
        let more = if cut.len() < text.len() { " ..." } else { "" };
        format!("    [{i}] {cut}{more}")
    };
    let n = values.len();
    let mut lines: Vec<String> = Vec::new();
    for (i, v) in values.iter().enumerate() {
        if n <= HEAD + TAIL || i < HEAD || i >= n - TAIL {
            lines.push(line(i, v));
        } else if i == HEAD {
            lines.push(format!("    ... {} more ...", n - HEAD - TAIL));
        }
    }
    lines.join("\n")
}

impl Replay {
    /// The server of a header line `{"config":{...},"seed":n}`.
    fn new(header: &Value) -> Result<Replay, String> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        if let Some(config) = header.get("config") {
            let config = config.as_object().ok_or("\"config\" must be an object")?;
            for (name, value) in config {
                let text = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                pairs.push((name.clone(), text));
            }
        }
        let config = Config::from_pairs(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())))
            .map_err(|e| format!("bad config: {e}"))?;
        let seed = header.get("seed").and_then(Value::as_u64).unwrap_or(1);
        Ok(Replay {
            server: Server::new(config.clone(), Seed::from_u64(seed), Time::ZERO),
            now: Time::ZERO,
            vars: Vars::new(),
            twin: Server::new(config, Seed::from_u64(seed), Time::ZERO),
            held: BTreeMap::new(),
            tally: Tally::default(),
        })
    }

    /// Feeds one input line and returns its outputs (notes dropped).
    fn feed(&mut self, line: &Map<String, Value>) -> Result<Vec<Value>, String> {
        for key in line.keys() {
            if !LINE_KEYS.contains(&key.as_str()) && !INPUT_KEYS.contains(&key.as_str()) {
                return Err(format!("unknown key {key:?}"));
            }
        }
        let inputs: Vec<&str> = INPUT_KEYS
            .iter()
            .copied()
            .filter(|k| line.contains_key(*k))
            .collect();
        let [key] = inputs.as_slice() else {
            return Err(format!("a line needs exactly one input of {INPUT_KEYS:?}"));
        };
        if let Some(at) = line.get("at") {
            let at = ms_to_time(at)?;
            if at < self.now {
                return Err(format!("time goes backwards: {at} < {}", self.now));
            }
            self.now = at;
        }
        let arg = line.get(*key).unwrap_or(&Value::Null);
        let mut out = Vec::new();
        if *key == "run" {
            self.run_until(ms_to_time(field(arg, "until")?)?, &mut out)?;
        } else {
            let input = input_of(key, arg, &self.vars)?;
            let twin_input = twin_input_of(key, arg, &self.vars)?;
            self.server.handle(self.now, input, &mut out);
            let mut twin_out = Vec::new();
            self.twin.handle(self.now, twin_input, &mut twin_out);
            check_twin(&out, &twin_out, &mut self.held, &mut self.tally)?;
        }
        Ok(out.iter().filter_map(output_value).collect())
    }

    /// Lets time pass like a shell's loop: every deadline up to `until` fires at its
    /// own instant, in order.
    fn run_until(&mut self, until: Time, out: &mut Vec<Output>) -> Result<(), String> {
        if until < self.now {
            return Err(format!(
                "\"until\" is before \"at\": {until} < {}",
                self.now
            ));
        }
        let mut last = None;
        let mut repeats = 0;
        while let Some((deadline, why)) = self.server.poll_timeout() {
            if deadline > until {
                break;
            }
            // A due deadline that stays put after it fired would spin a real shell.
            repeats = if last == Some(deadline) {
                repeats + 1
            } else {
                0
            };
            if repeats > RUN_REPEATS_MAX {
                return Err(format!("deadline {deadline} ({why:?}) keeps firing"));
            }
            last = Some(deadline);
            self.now = self.now.max(deadline);
            let from = out.len();
            self.server.handle(self.now, Input::Timeout, out);
            let mut twin_out = Vec::new();
            self.twin.handle(self.now, Input::Timeout, &mut twin_out);
            check_twin(&out[from..], &twin_out, &mut self.held, &mut self.tally)?;
            if out.len() > RUN_OUTPUTS_MAX {
                return Err(format!(
                    "more than {RUN_OUTPUTS_MAX} outputs before {until}"
                ));
            }
        }
        self.now = until;
        Ok(())
    }

    /// Checks `outputs` against the line's `expect`, then its `wake`.
    fn check(&mut self, line: &Map<String, Value>, outputs: &[Value]) -> Result<(), String> {
        if let Some(expect) = line.get("expect") {
            let list = expect.as_array().ok_or("\"expect\" must be a list")?;
            let actual = Value::Array(outputs.to_vec());
            if let Err(why) = matches(expect, &actual, &mut self.vars, "outputs") {
                return Err(format!(
                    "{why}\n  expected:\n{}\n  actual:\n{}",
                    render(list),
                    render(outputs)
                ));
            }
        }
        if let Some(wake) = line.get("wake") {
            let actual = self.server.poll_timeout().map(|(t, _)| t);
            let wanted = match wake {
                Value::Null => None,
                ms => Some(ms_to_time(ms)?),
            };
            if actual != wanted {
                return Err(format!("next wake: expected {wanted:?}, got {actual:?}"));
            }
        }
        Ok(())
    }
}

/// Replays one transcript; the error names the file and line.
fn replay(path: &Path) -> Result<usize, String> {
    replay_tally(path).map(|(inputs, _)| inputs)
}

/// Replays one transcript and tallies its twin's deltas.
fn replay_tally(path: &Path) -> Result<(usize, Tally), String> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{file}: {e}"))?;
    let mut replay: Option<Replay> = None;
    let mut inputs = 0;
    for (i, raw) in text.lines().enumerate() {
        let place = Place {
            file: &file,
            line: i + 1,
            text: raw,
        };
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let value: Value = serde_json::from_str(trimmed).map_err(|e| place.fail(e))?;
        let Some(r) = replay.as_mut() else {
            replay = Some(Replay::new(&value).map_err(|e| place.fail(e))?);
            continue;
        };
        let line = value
            .as_object()
            .ok_or_else(|| place.fail("a line must be an object"))?;
        let outputs = r.feed(line).map_err(|e| place.fail(e))?;
        r.check(line, &outputs).map_err(|e| place.fail(e))?;
        inputs += 1;
    }
    if inputs == 0 {
        return Err(format!("{file}: no inputs"));
    }
    Ok((inputs, replay.map(|r| r.tally).unwrap_or_default()))
}

#[test]
fn protocol_transcripts_replay() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/protocol");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "transcripts present in {dir}: {files:?}");
    let failures: Vec<String> = files.iter().filter_map(|p| replay(p).err()).collect();
    assert!(
        failures.is_empty(),
        "{} transcript(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The twin of every transcript (above) checked each view it sent with deltas; here
/// most of the game's views must have gone as deltas (its turn timer's deadline
/// becomes `null` whenever an AI seat is to act, and each of those goes full).
#[test]
fn deltas_rebuild_every_view_of_the_game_transcript() {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/protocol/game.jsonl"
    ));
    let (_, tally) = replay_tally(path).unwrap();
    assert!(tally.deltas > tally.full, "{tally:?}");
    assert!(tally.delta_bytes < tally.plain_bytes * 2 / 3, "{tally:?}");
}

#[test]
fn matcher_binds_and_checks_variables() {
    let mut vars = Vars::new();
    let got = serde_json::json!({"type": "welcome", "token": "abc", "extra": [1, 2, 3]});
    let want = serde_json::json!({"type": "welcome", "token": "$tok", "extra": [1, "$..."]});
    assert_eq!(matches(&want, &got, &mut vars, "m"), Ok(()));
    assert_eq!(vars.get("tok"), Some(&Value::from("abc")));
    // Bound now: a different value fails, the same one passes.
    let other = serde_json::json!({"type": "welcome", "token": "xyz", "extra": [1]});
    assert!(matches(&want, &other, &mut vars, "m").is_err());
    assert!(
        matches(
            &serde_json::json!({"extra": [1, "$_", 3]}),
            &got,
            &mut vars,
            "m"
        )
        .is_ok()
    );
    assert!(matches(&serde_json::json!({"extra": [1, 2]}), &got, &mut vars, "m").is_err());
    assert!(matches(&serde_json::json!({"missing": null}), &got, &mut vars, "m").is_err());
    assert_eq!(
        substitute(
            &serde_json::json!({"token": "$tok", "code": "$tok|upper", "x": "$$tok"}),
            &vars
        ),
        Ok(serde_json::json!({"token": "abc", "code": "ABC", "x": "$tok"}))
    );
    assert!(substitute(&Value::from("$nope"), &vars).is_err());
}
