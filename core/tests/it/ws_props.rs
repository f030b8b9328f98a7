//! A fuzzer of the real frame decoder and reader: random byte streams never panic and
//! stay within their memory bound; random valid frame sequences, masked with random
//! keys and split at random points, decode to exactly the messages that were encoded.

use proptest::prelude::*;
use wizard_core::Time;
use wizard_core::shell::ws::{Control, Event, FrameReader, Limits, Read};
use wizard_core::vocabulary::config::Config;

use crate::ws::{close_payload, events_in_chunks, limits, raw};

/// Bytes that look like frames often enough to reach past the first checks: random
/// headers with mostly-plausible first and second bytes, random payloads.
fn framey_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = (
        prop::sample::select(vec![0x81u8, 0x01, 0x80, 0x00, 0x89, 0x8A, 0x88, 0x82, 0xC1]),
        any::<u8>(),
        prop::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(first, second, rest)| {
            let mut v = vec![first, second | 0x80];
            v.extend(rest);
            v
        });
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..600),
        prop::collection::vec(piece, 0..20).prop_map(|v| v.concat()),
    ]
}

/// One client frame of a valid stream and what it should decode to.
#[derive(Clone, Debug)]
enum Part {
    /// A text message, sent in the given pieces (one frame each).
    Message(Vec<String>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        3 => prop::collection::vec("[a-z0-9 ]{0,20}|\\PC{0,8}", 1..5).prop_map(Part::Message),
        1 => prop::collection::vec(any::<u8>(), 0..=125).prop_map(Part::Ping),
        1 => prop::collection::vec(any::<u8>(), 0..=125).prop_map(Part::Pong),
    ]
}

/// The bytes of `parts` (masked with keys from `keys`), a control frame put between
/// the fragments of a message when `interleave`, and the events they must give.
fn stream(parts: &[Part], keys: &[[u8; 4]], interleave: bool) -> (Vec<u8>, Vec<Event>) {
    let mut bytes = Vec::new();
    let mut expected = Vec::new();
    let mut key = keys.iter().cycle();
    let mut put = |first: u8, payload: &[u8], bytes: &mut Vec<u8>| {
        bytes.extend(raw(first, Some(*key.next().unwrap()), payload));
    };
    for part in parts {
        match part {
            Part::Message(pieces) => {
                // Split at byte level, so that characters may span fragments.
                let whole = pieces.concat();
                let raw_bytes = whole.as_bytes();
                let mut cuts: Vec<usize> = pieces
                    .iter()
                    .scan(0, |at, p| {
                        *at += p.len();
                        Some(*at)
                    })
                    .collect();
                cuts.insert(0, 0);
                for (i, w) in cuts.windows(2).enumerate() {
                    let fin = i + 2 == cuts.len();
                    let opcode = if i == 0 { 0x1 } else { 0x0 };
                    // Shift each cut by one byte where possible, to split characters.
                    let (from, to) = (w[0].saturating_sub(usize::from(i > 0)), w[1]);
                    let to = if fin {
                        raw_bytes.len()
                    } else {
                        to.saturating_sub(1)
                    };
                    let payload = &raw_bytes[from.min(to)..to];
                    put(u8::from(fin) << 7 | opcode, payload, &mut bytes);
                    if i > 0 {
                        expected.push(Event::Continuation);
                    }
                    if interleave && !fin {
                        put(0x89, b"mid", &mut bytes);
                        expected.push(Event::Ping(Control::new(b"mid").unwrap()));
                    }
                }
                expected.push(Event::Text(whole));
            }
            Part::Ping(p) => {
                put(0x89, p, &mut bytes);
                expected.push(Event::Ping(Control::new(p).unwrap()));
            }
            Part::Pong(p) => {
                put(0x8A, p, &mut bytes);
                expected.push(Event::Pong(Control::new(p).unwrap()));
            }
        }
    }
    (bytes, expected)
}

fn generous() -> Limits {
    Limits {
        message_bytes_max: 1 << 20,
        fragments_max: 64,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_bytes_never_panic_and_stay_bounded(
        bytes in framey_bytes(),
        chunk in 1usize..64,
    ) {
        // events_in_chunks asserts the memory bound and the "no event: all used" rule.
        let whole = events_in_chunks(&bytes, bytes.len(), limits());
        let pieces = events_in_chunks(&bytes, chunk, limits());
        prop_assert_eq!(&whole, &pieces);
        // At most one terminal event, and it is the last.
        let ends = whole
            .iter()
            .filter(|e| matches!(e, Event::Fail(_) | Event::Close { .. }))
            .count();
        prop_assert!(ends <= 1);
        if ends == 1 {
            let last_ends = matches!(whole.last(), Some(Event::Fail(_) | Event::Close { .. }));
            prop_assert!(last_ends);
        }
    }

    #[test]
    fn random_bytes_through_the_reader_never_panic(
        bytes in framey_bytes(),
        chunk in 1usize..64,
        step_us in 0u64..200_000,
    ) {
        let config = Config::from_pairs([("MESSAGE_BURST", "3"), ("MAX_RATE_VIOLATIONS", "4")])
            .unwrap();
        let mut reader = FrameReader::new(&config, Time::ZERO);
        let mut now = Time::ZERO;
        let mut dropped = 0u32;
        for piece in bytes.chunks(chunk) {
            let mut at = 0;
            while let (used, Some(read)) = reader.read(now, &piece[at..]) {
                at += used;
                dropped += u32::from(read == Read::Dropped);
                prop_assert!(reader.heap_bytes() <= config.message_bytes_max);
            }
            now = now.plus_us(step_us);
        }
        prop_assert!(dropped < 4, "a flood ends the connection at MAX_RATE_VIOLATIONS");
    }

    #[test]
    fn valid_streams_decode_to_what_was_encoded(
        parts in prop::collection::vec(part(), 0..12),
        keys in prop::collection::vec(any::<[u8; 4]>(), 1..4),
        interleave in any::<bool>(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let (bytes, expected) = stream(&parts, &keys, interleave);
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        cuts.push(0);
        cuts.push(bytes.len());
        cuts.sort_unstable();
        let mut decoder = wizard_core::shell::ws::Decoder::new(generous());
        let mut got = Vec::new();
        for w in cuts.windows(2) {
            let part = &bytes[w[0]..w[1]];
            let mut at = 0;
            while let (used, Some(event)) = decoder.decode(&part[at..]) {
                at += used;
                got.push(event);
            }
        }
        prop_assert_eq!(&got, &expected);
        prop_assert_eq!(decoder.heap_bytes(), 0, "nothing held between messages");
        // The same stream, then a close: the close ends it.
        let mut closed = bytes.clone();
        closed.extend(raw(0x88, Some(keys[0]), &close_payload(1000, b"")));
        let events = events_in_chunks(&closed, 7, generous());
        prop_assert_eq!(&events[..expected.len()], &expected[..]);
        let close = Event::Close { code: Some(1000), reason: String::new() };
        prop_assert_eq!(&events[expected.len()..], &[close][..]);
    }
}
