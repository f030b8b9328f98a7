//! Row 11 of the attack table, protocol violations: malformed frames, malformed upgrades and
//! messages before `hello`, each on a fresh connection, with what the server answered
//! against the RFC 6455 / PROTOCOL.md target. Row 12, look-alike names: which of them
//! a lobby accepts next to `Host`.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use wizard_core::vocabulary::wire::{ClientMessage, ServerMessage, decode_server};

use super::absent::{Answer, answer};
use super::net::{Ws, source_ip};
use super::raw::{self, Reader, frame, text};
use crate::Ctx;
use crate::attack::Window;
use crate::game::{open, send};

const MASK: Option<[u8; 4]> = Some([0x0f, 0xf0, 0x55, 0xaa]);

/// What a case sends.
enum Send {
    /// Frames after a valid upgrade and `hello`.
    Frames(Vec<u8>),
    /// A whole HTTP request instead of the valid upgrade.
    Upgrade(String),
    /// One text frame as the first message (no `hello`).
    BeforeHello(&'static str),
}

/// One violation and its target answer: `close N`, `http N`, `error CODE`, `answered`
/// (any answer, not silence), alternatives split by `|`; empty: reported only.
struct Case {
    name: &'static str,
    send: Send,
    expect: &'static str,
}

fn upgrade_with(line: &str, headers: &[(&str, &str)], eol: &str) -> String {
    let mut r = format!("{line}{eol}");
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}{eol}"));
    }
    r.push_str(eol);
    r
}

fn upgrade(headers: &[(&str, &str)], skip: &str) -> String {
    let all = [
        ("Host", "localhost"),
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("Sec-WebSocket-Version", "13"),
    ];
    let mut list: Vec<(&str, &str)> = all.into_iter().filter(|(k, _)| *k != skip).collect();
    for (k, v) in headers {
        list.retain(|(n, _)| n != k);
        list.push((k, v));
    }
    upgrade_with("GET /ws HTTP/1.1", &list, "\r\n")
}

fn cases() -> Vec<Case> {
    let f = |fin, rsv, op, mask, p: &[u8]| frame(fin, rsv, op, mask, p);
    let two = |a: Vec<u8>, b: Vec<u8>| [a, b].concat();
    let big = "a".repeat(70 * 1024);
    let mut huge_len = vec![0x81, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 0];
    huge_len.extend_from_slice(&[0, 0, 0, 0]);
    let fragments: Vec<u8> = (0..20)
        .flat_map(|k| f(false, 0, if k == 0 { 1 } else { 0 }, MASK, &[b' '; 4096]))
        .collect();
    use Send::*;
    let c = |name, send, expect| Case { name, send, expect };
    vec![
        c(
            "invalid utf-8 text",
            Frames(f(true, 0, 1, MASK, &[0xff, 0xfe])),
            "close 1007",
        ),
        c(
            "invalid utf-8 across fragments",
            Frames(two(
                f(false, 0, 1, MASK, &[0xe2, 0x82]),
                f(true, 0, 0, MASK, &[0x28]),
            )),
            "close 1007",
        ),
        c("rsv1 set", Frames(f(true, 4, 1, MASK, b"{}")), "close 1002"),
        c("rsv3 set", Frames(f(true, 1, 1, MASK, b"{}")), "close 1002"),
        c(
            "unmasked frame",
            Frames(f(true, 0, 1, None, b"{}")),
            "close 1002",
        ),
        c(
            "reserved opcode 0x3",
            Frames(f(true, 0, 3, MASK, b"x")),
            "close 1002",
        ),
        c(
            "reserved opcode 0xb",
            Frames(f(true, 0, 0xb, MASK, b"x")),
            "close 1002",
        ),
        c(
            "fragmented ping",
            Frames(f(false, 0, 9, MASK, b"x")),
            "close 1002",
        ),
        c(
            "ping of 126 bytes",
            Frames(f(true, 0, 9, MASK, &[1; 126])),
            "close 1002",
        ),
        c(
            "continuation first",
            Frames(f(true, 0, 0, MASK, b"x")),
            "close 1002",
        ),
        c(
            "text inside a fragmented message",
            Frames(two(f(false, 0, 1, MASK, b"{"), f(true, 0, 1, MASK, b"}"))),
            "close 1002",
        ),
        c(
            "close code 999",
            Frames(f(true, 0, 8, MASK, &[0x03, 0xe7])),
            "close 1002",
        ),
        c(
            "close code 1005",
            Frames(f(true, 0, 8, MASK, &[0x03, 0xed])),
            "close 1002",
        ),
        c(
            "close payload of 1 byte",
            Frames(f(true, 0, 8, MASK, &[0x03])),
            "close 1002",
        ),
        c(
            "close reason invalid utf-8",
            Frames(f(true, 0, 8, MASK, &[0x03, 0xe8, 0xff])),
            "close 1007",
        ),
        c(
            "64-bit length, top bit set",
            Frames(huge_len),
            "close 1002|close 1009",
        ),
        c(
            "binary frame",
            Frames(f(true, 0, 2, MASK, &[1, 2, 3])),
            "close 1003",
        ),
        c("text of 70 KiB", Frames(text(&big)), "close 1009"),
        c(
            "fragments of 80 KiB, never final",
            Frames(fragments),
            "close 1009",
        ),
        c(
            "bad Sec-WebSocket-Key",
            Upgrade(upgrade(&[("Sec-WebSocket-Key", "abc")], "")),
            "http 400",
        ),
        c(
            "no Sec-WebSocket-Key",
            Upgrade(upgrade(&[], "Sec-WebSocket-Key")),
            "http 400",
        ),
        c(
            "Sec-WebSocket-Version 8",
            Upgrade(upgrade(&[("Sec-WebSocket-Version", "8")], "")),
            "http 400|http 426",
        ),
        c(
            "no Upgrade header",
            Upgrade(upgrade(&[], "Upgrade")),
            "http 400|http 426",
        ),
        c(
            "upgrade over HTTP/1.0",
            Upgrade(upgrade(&[], "").replacen("HTTP/1.1", "HTTP/1.0", 1)),
            "http 400",
        ),
        c(
            "upgrade with POST",
            Upgrade(upgrade(&[], "").replacen("GET", "POST", 1)),
            "http 400|http 405",
        ),
        c(
            "head with bare line feeds",
            Upgrade(upgrade(&[], "").replace("\r\n", "\n")),
            "answered",
        ),
        c(
            "header of 20 KiB",
            Upgrade(upgrade(&[("X-Pad", &"p".repeat(20 * 1024))], "")),
            "http 400|http 431",
        ),
        c(
            "create_lobby before hello",
            BeforeHello(r#"{"type":"create_lobby","name":"Early"}"#),
            "error hello_required",
        ),
        c(
            "create_lobby without its name before hello",
            BeforeHello(r#"{"type":"create_lobby"}"#),
            "error hello_required",
        ),
        c(
            "action without its action before hello",
            BeforeHello(r#"{"type":"action"}"#),
            "error hello_required",
        ),
        c(
            "unknown type before hello",
            BeforeHello(r#"{"type":"dance"}"#),
            "",
        ),
        c("not JSON before hello", BeforeHello("hello?"), ""),
    ]
}

/// The names of the row-11 cases, in the order they run.
pub fn violation_cases() -> Vec<&'static str> {
    cases().iter().map(|c| c.name).collect()
}

/// Whether `outcome` is what `expect` asks for.
fn meets(outcome: &str, expect: &str) -> bool {
    expect.is_empty()
        || expect.split('|').any(|e| {
            e == outcome || (e == "answered" && outcome != "none" && !outcome.starts_with("none"))
        })
}

/// Runs case `k`; what the server did, as a name.
async fn run_case(ctx: &Ctx, case: &Case, from: IpAddr, until: Instant) -> String {
    let s = &ctx.settings;
    let within = until.saturating_duration_since(Instant::now());
    let Some(mut tcp) = raw::tcp(s.addr, from, within).await else {
        return "connect failed".into();
    };
    match &case.send {
        Send::Upgrade(request) => {
            match raw::request_status(&mut tcp, request.as_bytes(), until).await {
                None => "none".into(),
                Some(0) => "closed without a status".into(),
                Some(status) => format!("http {status}"),
            }
        }
        Send::Frames(bytes) => {
            match raw::request_status(&mut tcp, raw::upgrade_request(&s.path).as_bytes(), until)
                .await
            {
                Some(101) => {}
                other => return format!("upgrade refused: {other:?}"),
            }
            let hello = raw::text(raw::HELLO);
            // A write may fail half-way when the server closes early: read anyway.
            let _ = raw::write(&mut tcp, &[hello, bytes.clone()].concat(), until).await;
            Reader::default().ending(&mut tcp, until).await.name()
        }
        Send::BeforeHello(message) => {
            match raw::request_status(&mut tcp, raw::upgrade_request(&s.path).as_bytes(), until)
                .await
            {
                Some(101) => {}
                other => return format!("upgrade refused: {other:?}"),
            }
            let _ = raw::write(&mut tcp, &raw::text(message), until).await;
            let mut reader = Reader::keeping_texts();
            let ending = reader
                .ending(&mut tcp, Instant::now() + Duration::from_millis(500))
                .await;
            match reader.texts.first().map(|t| decode_server(t)) {
                Some(Ok(ServerMessage::Error { code, .. })) => format!("error {}", code.name()),
                Some(_) => "an answer that is not an error".into(),
                None => ending.name(),
            }
        }
    }
}

/// Row 11: every case in turn, each on a fresh connection (from attack address k mod
/// `--attack-ips`) with 2 s to answer.
pub(super) async fn violations(ctx: &Ctx, i: usize, w: Window) {
    let all = cases();
    // The tasks start spread over the catalogue, so that a short window covers it.
    let mut k = i * all.len() / ctx.settings.attack_conns.max(1);
    while ctx.attack_budget(w) {
        let case = &all[k % all.len()];
        k += 1;
        // Each case from its own address: per-address limits must not answer for it.
        let from = {
            let mut st = ctx.stats.borrow_mut();
            st.attack.attempts += 1;
            source_ip(
                1,
                st.attack.attempts as usize % ctx.settings.attack_ips.max(1),
            )
        };
        let until = (Instant::now() + Duration::from_secs(2)).min(w.end);
        let outcome = run_case(ctx, case, from, until).await;
        if outcome == "none" && Instant::now() >= w.end {
            break; // cut short by the window, not an answer
        }
        let mut st = ctx.stats.borrow_mut();
        if meets(&outcome, case.expect) {
            st.attack.mismatches.remove(case.name);
        } else {
            let wanted = format!("{outcome} (target: {})", case.expect);
            st.attack.mismatches.insert(case.name.to_owned(), wanted);
        }
        st.attack.cases.insert(case.name.to_owned(), outcome);
    }
}

/// Look-alikes of `Host`: the target (NFKC, case folding, no invisible or bidi
/// controls) refuses or renames the first four; the Cyrillic one is reported only,
/// since NFKC leaves it distinct.
const LOOK_ALIKES: [(&str, &str, bool); 5] = [
    ("lower case", "host", true),
    ("full width", "\u{ff28}\u{ff4f}\u{ff53}\u{ff54}", true),
    ("zero-width space", "Ho\u{200b}st", true),
    ("right-to-left override", "\u{202e}Host", true),
    ("Cyrillic o", "H\u{043e}st", false),
];

/// Row 12: a host `Host`, then each look-alike joins its lobby from its own address.
/// Only task 0 runs it, once a window.
pub(super) async fn names(ctx: &Ctx, i: usize, w: Window) {
    if i != 0 || !ctx.attack_budget(w) {
        return;
    }
    ctx.stats.borrow_mut().attack.attempts += 1;
    let until = (Instant::now() + Duration::from_secs(5)).min(w.end);
    let Some(mut host) = open(ctx, source_ip(1, 0), true).await else {
        return;
    };
    let Some(code) = host_lobby(&mut host, until).await else {
        ctx.stats.borrow_mut().closed();
        return;
    };
    let mut guests = Vec::new();
    for (k, (case, name, checked)) in LOOK_ALIKES.into_iter().enumerate() {
        ctx.stats.borrow_mut().attack.attempts += 1;
        let Some(mut ws) = open(ctx, source_ip(1, 1 + k), true).await else {
            continue;
        };
        let outcome = join_as(&mut ws, &code, name, until).await;
        let mut st = ctx.stats.borrow_mut();
        if outcome == "accepted as sent" {
            st.attack.accepted += 1;
            if checked {
                st.attack.mismatches.insert(
                    case.to_owned(),
                    format!("{name:?} accepted next to \"Host\""),
                );
            }
        }
        st.attack.cases.insert(case.to_owned(), outcome);
        guests.push(ws);
    }
    for mut ws in guests.into_iter().chain([host]) {
        let _ = ws.close(None).await;
        ctx.stats.borrow_mut().closed();
    }
}

/// The host says hello and creates its lobby: the lobby's code, or `None` if none came
/// by `until`.
async fn host_lobby(host: &mut Ws, until: Instant) -> Option<String> {
    let _ = send(
        host,
        &ClientMessage::Hello {
            token: None,
            deltas: false,
            profile_key: None,
        },
    )
    .await;
    let _ = send(
        host,
        &ClientMessage::CreateLobby {
            name: "Host".into(),
            public: false,
        },
    )
    .await;
    while let Answer::Message(m) = answer(host, until).await {
        if let ServerMessage::State { lobby: Some(l), .. } = m {
            return Some(l.code);
        }
    }
    None
}

/// A look-alike says hello and joins the lobby `code` as `name`: what became of its
/// name (accepted as sent, renamed, refused, closed, or no answer by `until`).
async fn join_as(ws: &mut Ws, code: &str, name: &str, until: Instant) -> String {
    let _ = send(
        ws,
        &ClientMessage::Hello {
            token: None,
            deltas: false,
            profile_key: None,
        },
    )
    .await;
    let join = ClientMessage::JoinLobby {
        code: code.to_owned(),
        name: name.into(),
    };
    let _ = send(ws, &join).await;
    let mut id = None;
    loop {
        match answer(ws, until).await {
            Answer::Message(ServerMessage::Welcome { player_id, .. }) => id = Some(player_id),
            Answer::Message(ServerMessage::Error { code, .. }) => {
                return format!("refused: {}", code.name());
            }
            Answer::Message(ServerMessage::State { lobby: Some(l), .. }) => {
                if let Some(p) = l.players.iter().find(|p| Some(&p.id) == id.as_ref()) {
                    return if p.name == name.trim() {
                        "accepted as sent".to_owned()
                    } else {
                        format!("renamed to {:?}", p.name)
                    };
                }
            }
            Answer::Message(_) => {}
            Answer::Closed(c) => return format!("closed {c}"),
            Answer::Timeout => return "none".to_owned(),
        }
    }
}
