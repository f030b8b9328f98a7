//! Attack rows 1 and 2 in the simulator: fragment flooders read by the core's
//! `ws::FrameReader` and silent sockets held by the core's `overload::door::Door`,
//! beside honest games whose players keep coming back through the storm.

use wizard_core::shell::door::Door;
use wizard_core::vocabulary::io::ConnId;

use crate::common::{assert_clean, run, scenario};

#[test]
fn fragment_floods_are_cut_and_silent_sockets_never_lock_players_out() {
    let s = scenario("door_and_frames");
    let caps = Door::for_config(&s.config().unwrap()).caps();
    for seed in [1, 2] {
        let r = run(s.clone(), seed);
        println!("{}", r.render());
        // Honest games finish their moves, nothing is lost, liveness holds.
        assert_clean(&r, &[]);
        let count = |k: &str| r.counters.get(k).copied().unwrap_or(0);
        // Row 1: the frame budget, not KEEPALIVE_TIMEOUT, ends each flooder, with 1008.
        assert!(count("frame_floods") > 10, "few frame floods: {r:?}");
        assert!(
            r.coverage.get("frame_flood_closed").copied().unwrap_or(0) >= count("frame_floods"),
            "a frame flood was not closed with 1008"
        );
        // Row 2: the storm filled the door, silent sockets were evicted or timed out,
        // and no honest player (new or coming back) was refused or answered 503.
        assert!(
            count("sockets_open_max") >= caps.cap as u64,
            "the storm never filled the door"
        );
        assert!(count("sockets_evicted") > 100, "few evictions");
        assert!(count("first_byte_timeouts") > 0, "no first-byte timeout");
        assert_eq!(count("honest_sockets_refused"), 0);
        assert!(count("moves_human") > 300, "too few moves");
    }
}

/// The flooder's frames are valid client frames: a masked whole text frame (also with a
/// 16-bit length) reads as that text, and the message without FIN followed by empty
/// continuation frames ends in `Read::Fail(BadFrame::Flood)` after the burst and
/// `MAX_RATE_VIOLATIONS` drops (nothing else fails first, no text comes out).
#[test]
fn the_flooders_frames_read_as_the_core_reads_them() {
    use wizard_core::Time;
    use wizard_core::shell::ws::{FrameReader, Read, opcode};
    use wizard_core::vocabulary::config::Config;
    use wizard_core::vocabulary::io::BadFrame;
    use wizard_sim::host::frames::{client_frame, empty_continuation, mask_for, open_message};

    let config = Config::default();
    let mut reader = FrameReader::new(&config, Time::ZERO);
    for text in ["{\"type\":\"leave_lobby\"}".to_string(), "x".repeat(300)] {
        let bytes = client_frame(true, opcode::TEXT, text.as_bytes(), mask_for(ConnId(7), 1));
        let (used, read) = reader.read(Time::ZERO, &bytes);
        assert_eq!((used, read), (bytes.len(), Some(Read::Text(text))));
    }
    let mut reader = FrameReader::new(&config, Time::ZERO);
    assert_eq!(
        reader
            .read(Time::ZERO, &open_message(mask_for(ConnId(7), 0)))
            .1,
        None
    );
    let mut reads = Vec::new();
    for n in 1..=200 {
        let bytes = empty_continuation(mask_for(ConnId(7), n));
        if let (_, Some(read)) = reader.read(Time::ZERO, &bytes) {
            reads.push(read);
        }
        if reader.is_done() {
            break;
        }
    }
    let frames = config.message_burst + config.rate_violations_max;
    assert_eq!(reads.len(), frames as usize);
    assert_eq!(reads.last(), Some(&Read::Fail(BadFrame::Flood)));
    assert!(
        reads[..reads.len() - 1]
            .iter()
            .all(|r| matches!(r, Read::Fragment | Read::Dropped))
    );
}

/// The same storms of sockets with the start of a head and never the rest (slowloris,
/// from one address, from 400 and from 10): the door cuts them before anyone else
/// (`Door::slow`), so they never lock an honest player out, and the door's bounds hold.
#[test]
fn slow_head_storms_never_lock_players_out() {
    use wizard_sim::runs::scenario::AttackKind;
    let mut s = scenario("door_and_frames");
    s.attacks.retain(|a| a.kind == AttackKind::Silent);
    for attack in &mut s.attacks {
        attack.kind = AttackKind::SlowHead;
    }
    let caps = Door::for_config(&s.config().unwrap()).caps();
    let r = run(s, 1);
    println!("{}", r.render());
    assert_clean(&r, &[]);
    let count = |k: &str| r.counters.get(k).copied().unwrap_or(0);
    assert!(
        count("sockets_open_max") >= caps.cap as u64,
        "the storm never filled the door"
    );
    assert!(count("sockets_evicted") > 100, "few evictions");
    assert_eq!(count("honest_sockets_refused"), 0);
    assert!(count("moves_human") > 300, "too few moves");
}
