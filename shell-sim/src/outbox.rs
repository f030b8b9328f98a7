//! A connection's bounded outbound queue, as the shell's writer task keeps it
//! (shell-smol/src/outbox.rs `Outbox`): a frame the core marked replaceable (a `state`
//! without events) replaces the queued one before it (dropping events would lose what
//! happened, so the core never marks those), and
//! a queue over its message or byte limit marks the connection as overflowed, which
//! ends it (the reader is too slow).
//!
//! Below the queue sits the socket: the writer moves frames into it while the peer's
//! receive window (`window_bytes`) has room; a slow reader drains it at its own rate.

use std::collections::VecDeque;

use wizard_core::Time;

use wizard_core::wire::CloseCode;

/// A frame on its way to the peer, with its place in the connection's stream, so the
/// peer can check that frames arrive in order, once, and that none the core did not
/// mark replaceable went missing (a lost `state` with events would be a lost move).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub text: String,
    /// Position among the frames routed to this connection, from 1.
    pub seq: u64,
    /// `seq` of the last frame before this one that was not replaceable (0: none).
    pub kept_before: u64,
    /// The core marked it replaceable (a `state` without events).
    pub replaceable: bool,
}

/// The queue and the socket window of one connection.
#[derive(Clone, Debug)]
pub struct Outbox {
    frames: VecDeque<Frame>,
    /// `seq` of the newest frame routed here.
    routed_seq: u64,
    /// `seq` of the newest routed frame that was not replaceable.
    kept_seq: u64,
    bytes: usize,
    messages_max: usize,
    bytes_max: usize,
    pub close: Option<CloseCode>,
    pub overflowed: bool,
    /// Bytes written to the socket and not yet read by the peer.
    pub in_flight_bytes: usize,
    pub window_bytes: usize,
    /// Frames ever queued beyond the limits (for the report).
    pub frames_max_seen: usize,
    /// When the newest queued frames were routed: the loop computes a batch's outputs
    /// at the start of its CPU time and routes them when that time is spent, so nothing
    /// in the queue may reach the socket before this instant.
    pub ready_at: Time,
}

impl Outbox {
    pub fn new(messages_max: usize, bytes_max: usize, window_bytes: usize) -> Outbox {
        Outbox {
            frames: VecDeque::new(),
            routed_seq: 0,
            kept_seq: 0,
            bytes: 0,
            messages_max: messages_max.max(1),
            bytes_max: bytes_max.max(1),
            close: None,
            overflowed: false,
            in_flight_bytes: 0,
            window_bytes: window_bytes.max(1),
            frames_max_seen: 0,
            ready_at: Time::ZERO,
        }
    }

    /// Queues a frame; the shell's `Outbox::push`.
    pub fn push(&mut self, text: String, state: bool) {
        if self.close.is_some() || self.overflowed {
            return;
        }
        if state
            && let Some(old) = self.frames.iter().position(|f| f.replaceable)
            && let Some(old) = self.frames.remove(old)
        {
            self.bytes = self.bytes.saturating_sub(old.text.len());
        }
        self.bytes = self.bytes.saturating_add(text.len());
        self.routed_seq += 1;
        let frame = Frame {
            text,
            seq: self.routed_seq,
            kept_before: self.kept_seq,
            replaceable: state,
        };
        if !state {
            self.kept_seq = self.routed_seq;
        }
        self.frames.push_back(frame);
        self.frames_max_seen = self.frames_max_seen.max(self.frames.len());
        if self.frames.len() > self.messages_max || self.bytes > self.bytes_max {
            self.overflowed = true;
            self.frames = VecDeque::new();
            self.bytes = 0;
        }
    }

    /// Asks for a close after the queued frames.
    pub fn close(&mut self, code: CloseCode) {
        if self.close.is_none() {
            self.close = Some(code);
        }
    }

    /// Takes the frames that fit into the socket window now (all of them for a reader
    /// that keeps up). A frame larger than the whole window still goes when the window
    /// is empty.
    pub fn take_writable(&mut self) -> Vec<Frame> {
        let mut taken = Vec::new();
        while let Some(f) = self.frames.front() {
            let len = f.text.len();
            let fits = self.in_flight_bytes == 0 || self.in_flight_bytes + len <= self.window_bytes;
            if !fits {
                break;
            }
            self.in_flight_bytes += len;
            self.bytes = self.bytes.saturating_sub(len);
            if let Some(f) = self.frames.pop_front() {
                taken.push(f);
            }
        }
        taken
    }

    /// The peer read `bytes` from the socket.
    pub fn consumed(&mut self, bytes: usize) {
        self.in_flight_bytes = self.in_flight_bytes.saturating_sub(bytes);
    }

    /// Frames and bytes queued (not yet in the socket).
    pub fn len(&self) -> (usize, usize) {
        (self.frames.len(), self.bytes)
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Whether the queue is within its limits (the checker's view).
    pub fn within_caps(&self) -> bool {
        self.frames.len() <= self.messages_max && self.bytes <= self.bytes_max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_coalesce_and_overflow_marks() {
        let s1 = r#"{"x":1,"events":[]}"#.to_string();
        let s2 = r#"{"x":2,"events":[]}"#.to_string();
        let with_events = r#"{"events":[{}]}"#.to_string();
        let mut o = Outbox::new(4, 1000, 60);
        o.push(s1, true);
        o.push("e1".into(), false);
        o.push(with_events.clone(), false); // the core never marks a state with events
        o.push(s2.clone(), true);
        // s1 was replaced; the state with events stays.
        assert_eq!(o.len().0, 3);
        let taken = o.take_writable();
        let texts: Vec<&str> = taken.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts, ["e1", with_events.as_str(), s2.as_str()]);
        // Each frame names the last irreplaceable one before it; s1 (seq 1) is gone.
        let places: Vec<(u64, u64)> = taken.iter().map(|f| (f.seq, f.kept_before)).collect();
        assert_eq!(places, [(2, 0), (3, 2), (4, 3)]);
        for i in 0..5 {
            o.push(format!("e{i}"), false);
        }
        assert!(o.overflowed);
    }
}
