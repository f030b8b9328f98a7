//! A connection's bounded outbound queue, as the shell's writer task keeps it
//! (shell-smol/src/conn.rs `Outbox`): a frame the core marked replaceable (a `state`
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

/// The queue and the socket window of one connection.
#[derive(Clone, Debug)]
pub struct Outbox {
    frames: VecDeque<(String, bool)>,
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
            && let Some(old) = self.frames.iter().position(|(_, replaceable)| *replaceable)
            && let Some((old_text, _)) = self.frames.remove(old)
        {
            self.bytes = self.bytes.saturating_sub(old_text.len());
        }
        self.bytes = self.bytes.saturating_add(text.len());
        self.frames.push_back((text, state));
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
    pub fn take_writable(&mut self) -> Vec<String> {
        let mut taken = Vec::new();
        while let Some((text, _)) = self.frames.front() {
            let fits =
                self.in_flight_bytes == 0 || self.in_flight_bytes + text.len() <= self.window_bytes;
            if !fits {
                break;
            }
            self.in_flight_bytes += text.len();
            self.bytes = self.bytes.saturating_sub(text.len());
            if let Some((text, _)) = self.frames.pop_front() {
                taken.push(text);
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
        assert_eq!(o.take_writable(), vec!["e1".to_string(), with_events, s2]);
        for i in 0..5 {
            o.push(format!("e{i}"), false);
        }
        assert!(o.overflowed);
    }
}
