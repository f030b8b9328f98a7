//! A connection's bounded outbound queue: the core's rule (`outqueue::OutQueue`, the
//! one the production shell's writer keeps too: a frame the core marked `Newest`
//! replaces the queued one before it; chat lines give way, oldest first, for a
//! `chat_gap` note; a queue over its message or byte limit is overflowed, which ends
//! the connection), with each frame's place in the stream.
//!
//! Below the queue sits the socket: the writer moves frames into it while the peer's
//! receive window (`window_bytes`) has room; a slow reader drains it at its own rate.

use wizard_core::Time;
use wizard_core::shell::outqueue::{Delivery, OutQueue, Pushed};
use wizard_core::vocabulary::wire::CloseCode;

/// A frame on its way to the peer, with its place in the connection's stream, so the
/// peer can check that frames arrive in order, once, and that none the core marked
/// `Every` went missing (a lost `state` with events would be a lost move).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub text: String,
    /// Position among the frames routed to this connection, from 1.
    pub seq: u64,
    /// `seq` of the last `Every` frame before this one (0: none).
    pub kept_before: u64,
    /// The queue may lose it: the core marked it `Chat` (a chat line, or the
    /// `chat_gap` note that took a dropped line's place), or `Newest` and it is a
    /// `state` without events. Judged from the text, not from the mark alone, so a
    /// `state` with events the core wrongly marked `Newest` counts as kept, and its loss
    /// in the queue is a lost frame to the client's stream check.
    pub lossy: bool,
}

/// What queueing one frame did, for the checkers and the coverage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queued {
    /// Queued (or refused after a close or an overflow).
    Plain,
    /// Queued in place of an older `Newest` frame, which the queue dropped.
    Replaced,
}

/// Whether a frame carries events: a `"events":` key followed by anything but `[]`.
/// A `state` with events must never be replaced (its events are not repeated).
pub fn carries_events(text: &str) -> bool {
    text.rfind("\"events\":")
        .is_some_and(|at| !text[at + 9..].starts_with("[]"))
}

/// A frame's place in its connection's stream, kept beside it in the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    seq: u64,
    kept_before: u64,
    lossy: bool,
}

/// The queue and the socket window of one connection.
#[derive(Clone, Debug)]
pub struct Outbox {
    /// The core's queueing rule; the simulator adds each frame's place.
    queue: OutQueue<Place>,
    /// `seq` of the newest frame routed here.
    routed_seq: u64,
    /// `seq` of the newest routed `Every` frame.
    kept_seq: u64,
    /// The close frame went out.
    close_sent: bool,
    /// Bytes written to the socket and not yet read by the peer.
    pub in_flight_bytes: usize,
    pub window_bytes: usize,
    /// When the newest queued frames were routed: the loop computes a batch's outputs
    /// at the start of its CPU time and routes them when that time is spent, so nothing
    /// in the queue may reach the socket before this instant.
    pub ready_at: Time,
    /// Since when frames wait behind a full window (the writer's write is blocked).
    pub blocked_since: Option<Time>,
}

impl Outbox {
    /// A queue of at most `messages_max` frames, `bytes_max` bytes and `chat_max` chat
    /// lines, above a socket window of `window_bytes`.
    pub fn new(
        (messages_max, bytes_max, chat_max): (usize, usize, usize),
        window_bytes: usize,
    ) -> Outbox {
        Outbox {
            queue: OutQueue::new(messages_max, bytes_max).with_chat_messages_max(chat_max),
            routed_seq: 0,
            kept_seq: 0,
            close_sent: false,
            in_flight_bytes: 0,
            window_bytes: window_bytes.max(1),
            ready_at: Time::ZERO,
            blocked_since: None,
        }
    }

    /// Queues a frame by the core's rule ([`OutQueue::push`]), numbered in the stream.
    pub fn push(&mut self, text: String, delivery: Delivery) -> Queued {
        if !self.queue.accepting() {
            return Queued::Plain;
        }
        self.routed_seq += 1;
        let lossy = match delivery {
            Delivery::Every => false,
            Delivery::Chat => true,
            Delivery::Newest => !carries_events(&text),
        };
        let place = Place {
            seq: self.routed_seq,
            kept_before: self.kept_seq,
            lossy,
        };
        if !lossy {
            self.kept_seq = self.routed_seq;
        }
        match self.queue.push(text, delivery, place) {
            Pushed::Replaced { .. } => Queued::Replaced,
            _ => Queued::Plain,
        }
    }

    /// Asks for a close after the queued frames.
    pub fn close(&mut self, code: CloseCode) {
        self.queue.close(code);
    }

    /// The reader was too slow: the queue overflowed.
    pub fn overflowed(&self) -> bool {
        self.queue.overflowed()
    }

    /// The close to send now, once: asked for, not yet sent, nothing left queued.
    pub fn take_close(&mut self) -> Option<CloseCode> {
        if self.close_sent || !self.queue.is_empty() {
            return None;
        }
        let code = self.queue.close_code()?;
        self.close_sent = true;
        Some(code)
    }

    /// Whether a close is asked for and not yet sent.
    pub fn close_pending(&self) -> bool {
        !self.close_sent && self.queue.close_code().is_some()
    }

    /// Takes the frames that fit into the socket window now (all of them for a reader
    /// that keeps up). A frame larger than the whole window still goes when the window
    /// is empty.
    pub fn take_writable(&mut self) -> Vec<Frame> {
        let mut taken = Vec::new();
        while let Some(f) = self.queue.front() {
            let len = f.text.len();
            let fits = self.in_flight_bytes == 0 || self.in_flight_bytes + len <= self.window_bytes;
            if !fits {
                break;
            }
            self.in_flight_bytes += len;
            if let Some(f) = self.queue.pop_front() {
                taken.push(Frame {
                    text: f.text,
                    seq: f.tag.seq,
                    kept_before: f.tag.kept_before,
                    lossy: f.tag.lossy,
                });
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
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Whether the queue is within its limits (the checker's view).
    pub fn within_caps(&self) -> bool {
        self.queue.within_caps()
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
        let mut o = Outbox::new((4, 1000, 4), 60);
        o.push(s1, Delivery::Newest);
        o.push("e1".into(), Delivery::Every);
        o.push(with_events.clone(), Delivery::Every); // never Newest with events
        o.push(s2.clone(), Delivery::Newest);
        // s1 was replaced; the state with events stays.
        assert_eq!(o.len().0, 3);
        let taken = o.take_writable();
        let texts: Vec<&str> = taken.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts, ["e1", with_events.as_str(), s2.as_str()]);
        // Each frame names the last irreplaceable one before it; s1 (seq 1) is gone.
        let places: Vec<(u64, u64)> = taken.iter().map(|f| (f.seq, f.kept_before)).collect();
        assert_eq!(places, [(2, 0), (3, 2), (4, 3)]);
        for i in 0..5 {
            o.push(format!("e{i}"), Delivery::Every);
        }
        assert!(o.overflowed());
    }

    #[test]
    fn a_dropped_chat_line_leaves_a_lossy_gap_note_and_the_stream_checks_out() {
        let mut o = Outbox::new((10, 10_000, 2), 10_000);
        o.push("e1".into(), Delivery::Every);
        for i in 0..4 {
            o.push(format!("c{i}"), Delivery::Chat);
        }
        o.push("e2".into(), Delivery::Every);
        let taken = o.take_writable();
        let texts: Vec<&str> = taken.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(
            texts,
            ["e1", r#"{"type":"chat_gap","missed":2}"#, "c2", "c3", "e2"]
        );
        // The note took the place of c0 (seq 2), lossy like it; e2 names e1 before it.
        let places: Vec<(u64, u64, bool)> = taken
            .iter()
            .map(|f| (f.seq, f.kept_before, f.lossy))
            .collect();
        assert_eq!(
            places,
            [
                (1, 0, false),
                (2, 1, true),
                (4, 1, true),
                (5, 1, true),
                (6, 1, false)
            ]
        );
    }

    /// A `state` with events wrongly marked `Newest` is replaced by the queue, and the
    /// stream shows the loss: its place is judged from its text, so the next frame
    /// still names it as the last kept one and the client sees it missing.
    #[test]
    fn a_replaced_state_with_events_shows_as_a_lost_frame() {
        let with_events = r#"{"type":"state","lobby":{},"game":null,"events":[{"type":"x"}]}"#;
        let without = r#"{"type":"state","lobby":{},"game":null,"events":[]}"#;
        assert!(carries_events(with_events));
        assert!(!carries_events(without));
        let mut o = Outbox::new((10, 10_000, 4), 10_000);
        assert_eq!(o.push(with_events.into(), Delivery::Newest), Queued::Plain);
        assert_eq!(o.push(without.into(), Delivery::Newest), Queued::Replaced);
        let taken = o.take_writable();
        let places: Vec<(u64, u64, bool)> = taken
            .iter()
            .map(|f| (f.seq, f.kept_before, f.lossy))
            .collect();
        // Frame 1 (with events) is gone, and frame 2 says it came after it.
        assert_eq!(places, [(2, 1, true)]);
    }
}
