//! The websocket frame layer, data-driven: every violation with its close code,
//! fragmentation, masking, any split of the bytes, the encoder, and the frame budget
//! with time advances.

use wizard_core::Time;
use wizard_core::shell::ws::{
    Charge, Control, Decoder, Event, FrameBudget, FrameReader, Limits, MESSAGE_FRAGMENTS_MAX, Read,
    encode,
};
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::io::BadFrame;

const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
const CONT: u8 = 0x0;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
const PONG: u8 = 0xA;
const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// A client frame: `first` is the whole first byte (FIN, RSV, opcode).
pub fn raw(first: u8, mask: Option<[u8; 4]>, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    wizard_core::shell::ws::encode::client_frame(&mut out, first, mask, payload);
    out
}

/// A masked client frame.
pub fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    raw(u8::from(fin) << 7 | opcode, Some(MASK), payload)
}

pub fn close_payload(code: u16, reason: &[u8]) -> Vec<u8> {
    let mut p = code.to_be_bytes().to_vec();
    p.extend_from_slice(reason);
    p
}

pub fn limits() -> Limits {
    Limits {
        message_bytes_max: 1000,
        fragments_max: MESSAGE_FRAGMENTS_MAX,
    }
}

/// Every event of `bytes` fed in pieces of `chunk` bytes, checking the decoder's
/// contract on the way (no event: everything used; memory within the limit).
pub fn events_in_chunks(bytes: &[u8], chunk: usize, limits: Limits) -> Vec<Event> {
    let mut decoder = Decoder::new(limits);
    let mut events = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        let mut at = 0;
        loop {
            let (used, event) = decoder.decode(&piece[at..]);
            at += used;
            assert!(at <= piece.len());
            assert!(decoder.heap_bytes() <= limits.message_bytes_max);
            match event {
                Some(event) => events.push(event),
                None => {
                    assert_eq!(at, piece.len(), "no event, yet bytes left");
                    break;
                }
            }
        }
    }
    events
}

/// The events of `bytes`, checked to be the same whole and one byte at a time.
fn events(bytes: &[u8]) -> Vec<Event> {
    let whole = events_in_chunks(bytes, bytes.len(), limits());
    let bytewise = events_in_chunks(bytes, 1, limits());
    assert_eq!(whole, bytewise, "one byte at a time differs");
    whole
}

fn text(s: &str) -> Event {
    Event::Text(s.to_owned())
}

fn control(bytes: &[u8]) -> Control {
    Control::new(bytes).unwrap()
}

#[test]
fn every_violation_fails_with_its_close_code() {
    let hello = frame(false, TEXT, b"he");
    let with = |mut a: Vec<u8>, b: Vec<u8>| {
        a.extend(b);
        a
    };
    let mut len_top_bit = vec![0x81, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 1];
    len_top_bit.extend_from_slice(&MASK);
    let mut header_too_large = vec![0x81, 0x80 | 126, 0x03, 0xE9]; // 1001 > 1000
    header_too_large.extend_from_slice(&MASK);
    let cases: Vec<(&str, Vec<u8>, BadFrame)> = vec![
        ("unmasked text", raw(0x81, None, b"hi"), BadFrame::Protocol),
        ("rsv1", raw(0xC1, Some(MASK), b"hi"), BadFrame::Protocol),
        ("rsv2", raw(0xA1, Some(MASK), b"hi"), BadFrame::Protocol),
        ("rsv3", raw(0x91, Some(MASK), b"hi"), BadFrame::Protocol),
        ("opcode 3", frame(true, 0x3, b""), BadFrame::Protocol),
        ("opcode 7", frame(true, 0x7, b""), BadFrame::Protocol),
        ("opcode 0xB", frame(true, 0xB, b""), BadFrame::Protocol),
        ("opcode 0xF", frame(true, 0xF, b""), BadFrame::Protocol),
        (
            "fragmented ping",
            frame(false, PING, b""),
            BadFrame::Protocol,
        ),
        (
            "fragmented close",
            frame(false, CLOSE, b""),
            BadFrame::Protocol,
        ),
        (
            "ping of 126",
            frame(true, PING, &[0; 126]),
            BadFrame::Protocol,
        ),
        (
            "pong of 126",
            frame(true, PONG, &[0; 126]),
            BadFrame::Protocol,
        ),
        (
            "lone continuation",
            frame(true, CONT, b"x"),
            BadFrame::Protocol,
        ),
        (
            "text in a message",
            with(hello.clone(), frame(true, TEXT, b"x")),
            BadFrame::Protocol,
        ),
        (
            "binary in a message",
            with(hello.clone(), frame(true, BINARY, b"")),
            BadFrame::Protocol,
        ),
        ("length top bit", len_top_bit, BadFrame::Protocol),
        (
            "close of 1 byte",
            frame(true, CLOSE, &[3]),
            BadFrame::Protocol,
        ),
        ("binary", frame(true, BINARY, &[1, 2, 3]), BadFrame::Binary),
        (
            "invalid UTF-8",
            frame(true, TEXT, b"a\xffb"),
            BadFrame::InvalidUtf8,
        ),
        (
            "overlong UTF-8",
            frame(true, TEXT, b"\xc0\xaf"),
            BadFrame::InvalidUtf8,
        ),
        (
            "surrogate",
            frame(true, TEXT, b"\xed\xa0\x80"),
            BadFrame::InvalidUtf8,
        ),
        (
            "cut at the end",
            frame(true, TEXT, b"a\xe2\x82"),
            BadFrame::InvalidUtf8,
        ),
        (
            "cut at a message end",
            with(frame(false, TEXT, b"\xe2"), frame(true, CONT, b"\x82")),
            BadFrame::InvalidUtf8,
        ),
        (
            "close reason",
            frame(true, CLOSE, &close_payload(1000, b"\xff")),
            BadFrame::InvalidUtf8,
        ),
        (
            "header over the limit",
            header_too_large,
            BadFrame::TooLarge,
        ),
        (
            "fragments over the limit",
            with(
                frame(false, TEXT, &[b'a'; 600]),
                frame(true, CONT, &[b'a'; 401]),
            ),
            BadFrame::TooLarge,
        ),
    ];
    for (name, bytes, bad) in cases {
        let got = events(&bytes);
        assert_eq!(got.last(), Some(&Event::Fail(bad)), "{name}: {got:?}");
        // Nothing after a failure: the decoder swallows the rest.
        let mut stream = bytes.clone();
        stream.extend(frame(true, TEXT, b"after"));
        assert_eq!(events(&stream), got, "{name}: something after the failure");
    }
}

#[test]
fn violations_fail_before_the_payload_arrives() {
    // Each of these fails on its header (or first bad byte), with the payload unsent.
    let mut too_large = vec![0x81, 0x80 | 127, 0, 0, 0, 0, 0, 0x10, 0, 0]; // 1 MiB
    too_large.extend_from_slice(&MASK);
    let bad_utf8 = frame(true, TEXT, b"ok\xff and then a long rest of the message");
    let cases: Vec<(Vec<u8>, BadFrame)> = vec![
        (too_large, BadFrame::TooLarge),
        (bad_utf8[..2 + 4 + 3].to_vec(), BadFrame::InvalidUtf8),
        (vec![0x82], BadFrame::Binary),
        (vec![0xC1], BadFrame::Protocol),
        (vec![0x81, 0x05], BadFrame::Protocol), // unmasked, known on the second byte
        (vec![0x89, 0x80 | 126], BadFrame::Protocol),
    ];
    for (bytes, bad) in cases {
        let mut decoder = Decoder::new(limits());
        let (used, event) = decoder.decode(&bytes);
        assert_eq!((used, event), (bytes.len(), Some(Event::Fail(bad))));
        assert!(decoder.is_done());
        assert_eq!(decoder.heap_bytes(), 0);
    }
}

#[test]
fn close_codes_follow_rfc_6455_section_7_4() {
    for code in [
        0u16, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535,
    ] {
        let bytes = frame(true, CLOSE, &close_payload(code, b""));
        assert_eq!(events(&bytes), [Event::Fail(BadFrame::Protocol)], "{code}");
    }
    for code in [
        1000u16, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1014, 3000, 4999,
    ] {
        let bytes = frame(true, CLOSE, &close_payload(code, "bye ✓".as_bytes()));
        let close = Event::Close {
            code: Some(code),
            reason: "bye ✓".to_owned(),
        };
        assert_eq!(events(&bytes), [close], "{code}");
    }
    let empty = Event::Close {
        code: None,
        reason: String::new(),
    };
    assert_eq!(
        events(&frame(true, CLOSE, b"")),
        std::slice::from_ref(&empty)
    );
    // The decoder is done after a close: what follows is not read.
    let mut after = frame(true, CLOSE, b"");
    after.extend(frame(true, TEXT, b"late"));
    after.extend(raw(0xFF, None, b"junk"));
    assert_eq!(events(&after), [empty]);
}

#[test]
fn fragments_assemble_with_control_frames_between_them() {
    let mut bytes = frame(false, TEXT, b"Hel");
    bytes.extend(frame(true, PING, b"p1"));
    bytes.extend(frame(false, CONT, b""));
    bytes.extend(frame(false, CONT, "lo wörld ".as_bytes()));
    bytes.extend(frame(true, PONG, b""));
    // A character split between two fragments: "€" is e2 82 ac.
    bytes.extend(frame(false, CONT, b"\xe2\x82"));
    bytes.extend(frame(true, CONT, b"\xac!"));
    bytes.extend(frame(true, TEXT, b""));
    assert_eq!(
        events(&bytes),
        [
            Event::Ping(control(b"p1")),
            Event::Continuation,
            Event::Continuation,
            Event::Pong(control(b"")),
            Event::Continuation,
            Event::Continuation,
            text("Hello wörld €!"),
            text(""),
        ]
    );
}

#[test]
fn any_mask_and_every_length_encoding_decode_alike() {
    for len in [0usize, 1, 125, 126, 127, 1000] {
        let body: String = "abcdefg".chars().cycle().take(len).collect();
        for mask in [[0, 0, 0, 0], MASK, [0xff; 4], [1, 2, 3, 4]] {
            let bytes = raw(0x81, Some(mask), body.as_bytes());
            assert_eq!(events(&bytes), [text(&body)], "len {len} mask {mask:?}");
        }
    }
    // 64-bit length encoding of a small frame is accepted (not required to be minimal).
    let mut long_form = vec![0x81, 0x80 | 127, 0, 0, 0, 0, 0, 0, 0, 2];
    long_form.extend_from_slice(&[0; 4]);
    long_form.extend_from_slice(b"ok");
    assert_eq!(events(&long_form), [text("ok")]);
}

#[test]
fn every_split_of_a_stream_gives_the_same_events() {
    let mut bytes = frame(true, TEXT, br#"{"type":"hello","token":null}"#);
    bytes.extend(frame(false, TEXT, "naïve ".as_bytes()));
    bytes.extend(frame(true, PING, b"12345"));
    bytes.extend(frame(true, CONT, &[b'x'; 300]));
    bytes.extend(frame(true, CLOSE, &close_payload(1000, b"done")));
    let expected = events(&bytes);
    assert_eq!(expected.len(), 5);
    for split in 0..=bytes.len() {
        let mut decoder = Decoder::new(limits());
        let mut got = Vec::new();
        for part in [&bytes[..split], &bytes[split..]] {
            let mut at = 0;
            while let (used, Some(event)) = decoder.decode(&part[at..]) {
                at += used;
                got.push(event);
            }
        }
        assert_eq!(got, expected, "split at {split}");
    }
}

/// A server frame as a client would send it: the same frame, masked.
fn masked(server_frame: &[u8]) -> Vec<u8> {
    let first = server_frame[0];
    let len7 = server_frame[1] & 0x7F;
    let head = match len7 {
        126 => 4,
        127 => 10,
        _ => 2,
    };
    raw(first, Some(MASK), &server_frame[head..])
}

#[test]
fn the_encoder_writes_unmasked_final_frames_the_decoder_reads_back() {
    for (len, head) in [
        (0usize, 2usize),
        (125, 2),
        (126, 4),
        (65_535, 4),
        (65_536, 10),
    ] {
        let body = "z".repeat(len);
        let mut out = Vec::new();
        encode::text(&mut out, &body);
        assert_eq!(out.len(), head + len);
        assert_eq!(out.len(), encode::frame_len(len));
        assert_eq!(out[0], 0x81);
        assert_eq!(out[1] & 0x80, 0, "server frames are unmasked");
        let big = Limits {
            message_bytes_max: 70_000,
            fragments_max: 1,
        };
        assert_eq!(events_in_chunks(&masked(&out), 999, big), [text(&body)]);
    }
    let mut out = Vec::new();
    encode::ping(&mut out, b"");
    assert_eq!(out, [0x89, 0x00]);
    out.clear();
    encode::pong(&mut out, &[7; 200]);
    assert_eq!(out.len(), 2 + 125, "control payloads are cut to 125 bytes");
    out.clear();
    encode::close(&mut out, None, "ignored");
    assert_eq!(out, [0x88, 0x00]);
    // A reason cut at a character boundary to the 123 bytes that fit.
    out.clear();
    let reason = "é".repeat(100); // 200 bytes
    encode::close(&mut out, Some(1008), &reason);
    assert_eq!(out.len(), 2 + 2 + 122);
    let close = Event::Close {
        code: Some(1008),
        reason: "é".repeat(61),
    };
    assert_eq!(events(&masked(&out)), [close]);
}

fn config(pairs: &[(&str, &str)]) -> Config {
    Config::from_pairs(pairs.iter().copied()).unwrap()
}

#[test]
fn the_frame_budget_drops_then_reports_a_flood() {
    let config = config(&[
        ("MESSAGE_RATE", "10"),
        ("MESSAGE_BURST", "3"),
        ("MAX_RATE_VIOLATIONS", "3"),
    ]);
    let mut budget = FrameBudget::new(&config, Time::ZERO);
    let t0 = Time::ZERO;
    let charges: Vec<Charge> = (0..5).map(|_| budget.charge(t0)).collect();
    use Charge::{Drop, Flood, Pass};
    assert_eq!(charges, [Pass, Pass, Pass, Drop, Drop]);
    // 99 ms later the token is not back yet: the third drop floods.
    assert_eq!(budget.charge(Time::from_millis(99)), Flood);
    let mut budget = FrameBudget::new(&config, Time::ZERO);
    for _ in 0..3 {
        assert_eq!(budget.charge(t0), Pass);
    }
    assert_eq!(budget.charge(Time::from_millis(100)), Pass);
    assert_eq!(budget.charge(Time::from_millis(100)), Drop);
    assert_eq!(budget.charge(Time::from_millis(150)), Drop);
    assert_eq!(budget.charge(Time::from_millis(199)), Flood);
    assert_eq!(budget.drops(), 3);
}

#[test]
fn frames_at_the_rate_are_never_dropped() {
    let config = config(&[("MESSAGE_RATE", "10"), ("MESSAGE_BURST", "1")]);
    let mut reader = FrameReader::new(&config, Time::ZERO);
    let ping = frame(true, PING, b"hi");
    for i in 0..1000u64 {
        let (used, read) = reader.read(Time::from_millis(100 * i), &ping);
        assert_eq!((used, read), (ping.len(), Some(Read::Ping(control(b"hi")))));
    }
    assert_eq!(reader.budget().drops(), 0);
}

/// Every `Read` of `bytes` at `now`.
fn reads(reader: &mut FrameReader, now: Time, bytes: &[u8]) -> Vec<Read> {
    let mut out = Vec::new();
    let mut at = 0;
    while let (used, Some(read)) = reader.read(now, &bytes[at..]) {
        at += used;
        out.push(read);
    }
    out
}

#[test]
fn a_ping_flood_is_answered_within_the_burst_then_closed() {
    let config = config(&[("MESSAGE_BURST", "30"), ("MAX_RATE_VIOLATIONS", "50")]);
    let mut reader = FrameReader::new(&config, Time::ZERO);
    let pings: Vec<u8> = (0..200).flat_map(|_| frame(true, PING, b"")).collect();
    let got = reads(&mut reader, Time::ZERO, &pings);
    let answered = got.iter().filter(|r| matches!(r, Read::Ping(_))).count();
    let dropped = got.iter().filter(|r| **r == Read::Dropped).count();
    assert_eq!((answered, dropped), (30, 49));
    assert_eq!(got.last(), Some(&Read::Fail(BadFrame::Flood)));
    assert_eq!(got.len(), 80, "nothing is read after the flood");
    assert!(reader.is_done());
}

#[test]
fn empty_continuations_forever_are_closed_as_a_flood() {
    // Attack row 1: a text frame without FIN, then empty continuations.
    let config = config(&[("MESSAGE_BURST", "30"), ("MAX_RATE_VIOLATIONS", "50")]);
    let mut reader = FrameReader::new(&config, Time::ZERO);
    let mut bytes = frame(false, TEXT, b"{");
    // Fewer than MESSAGE_FRAGMENTS_MAX, so that the budget is what stops it.
    for _ in 0..20 {
        bytes.extend(frame(false, CONT, b""));
    }
    let got = reads(&mut reader, Time::ZERO, &bytes);
    assert_eq!(got, vec![Read::Fragment; 20]);
    assert!(
        got.iter().all(|r| !r.proves_life()),
        "fragments keep nothing alive"
    );
    // The 31st frame has no token: the message is abandoned; its end yields nothing.
    let mut more: Vec<u8> = (0..10).flat_map(|_| frame(false, CONT, b"")).collect();
    more.extend(frame(true, CONT, b"}"));
    let got = reads(&mut reader, Time::ZERO, &more);
    assert_eq!(got[..10], vec![Read::Fragment; 10]);
    assert_eq!(got[10..], [Read::Dropped]);
    // The connection can go on: a new message after 100 ms (the core charges it).
    let hello = frame(true, TEXT, b"{}");
    let got = reads(&mut reader, Time::from_millis(100), &hello);
    assert_eq!(got, [Read::Text("{}".to_owned())]);
    // A flood of fragments from now on ends at MAX_RATE_VIOLATIONS drops.
    let mut flood = frame(false, TEXT, b"");
    for _ in 0..(MESSAGE_FRAGMENTS_MAX - 2) {
        flood.extend(frame(false, CONT, b""));
    }
    flood.extend(frame(true, CONT, b""));
    let mut now = Time::from_millis(100);
    let mut all = Vec::new();
    while !reader.is_done() {
        all.extend(reads(&mut reader, now, &flood));
        assert!(all.len() < 10_000);
        now = now.plus_us(1000);
    }
    assert_eq!(all.last(), Some(&Read::Fail(BadFrame::Flood)));
    assert_eq!(reader.budget().drops(), 50);
}

#[test]
fn a_message_in_too_many_fragments_is_too_large() {
    let config = config(&[("MESSAGE_BURST", "1000")]);
    let mut reader = FrameReader::new(&config, Time::ZERO);
    let mut bytes = frame(false, TEXT, b"a");
    for _ in 0..MESSAGE_FRAGMENTS_MAX {
        bytes.extend(frame(false, CONT, b"a"));
    }
    let got = reads(&mut reader, Time::ZERO, &bytes);
    let fragments = usize::try_from(MESSAGE_FRAGMENTS_MAX).unwrap() - 1;
    assert_eq!(got[..fragments], vec![Read::Fragment; fragments]);
    assert_eq!(got[fragments..], [Read::Fail(BadFrame::TooLarge)]);
}

#[test]
fn what_proves_life() {
    let alive = [
        Read::Text(String::new()),
        Read::Ping(Control::EMPTY),
        Read::Pong,
    ];
    assert!(alive.iter().all(Read::proves_life));
    let not = [
        Read::Fragment,
        Read::Dropped,
        Read::Close(None),
        Read::Fail(BadFrame::Flood),
    ];
    assert!(!not.iter().any(Read::proves_life));
}
