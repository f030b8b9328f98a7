//! A connection's outbound queue, time-free: the one rule both shells queue frames by.
//!
//! Each frame comes with its [`Delivery`] ([`crate::vocabulary::io::Output::Send`]):
//! - `Newest`, a full `state` without events, replaces the `Newest` one queued before
//!   it, since only the newest view matters;
//! - `Chat`, a table chat line, gives way: beyond `chat_messages_max` queued chat
//!   lines, and before the queue would pass a limit, the oldest queued line is dropped.
//!   The first line dropped becomes a `chat_gap` note in its place (`{"type":"chat_gap",
//!   "missed":1}`), and every later line dropped while that note is still queued adds
//!   one to its `missed` (the note is always before the lines still queued, since the
//!   oldest go first). So a chat burst to a slow reader costs it lines, never the
//!   connection, and its client knows how many it missed;
//! - `Every` frame keeps its place (dropping a state with events would lose them).
//!
//! The frames of a connection that takes deltas (PROTOCOL.md 7.5) form a chain: each
//! `delta` builds on the numbered frame before it. There a replaced `Newest` frame is
//! never simply dropped: a replaced `delta` is merged into its successor in the chain
//! (the next numbered frame queued, or the new one), which then starts from the
//! replaced one's `base` with the two patches composed; a full `state` replaced by
//! one after it just goes. A full `state` followed by a `delta` stays (the delta needs
//! it), and so does a delta whose patch cannot be composed with its successor's; the
//! next `Newest` frame that may go goes instead, if any.
//!
//! A queue past `OUTBOUND_QUEUE_MESSAGES` frames or `OUTBOUND_QUEUE_BYTES` bytes once
//! no chat line is left to drop is overflowed: its reader is too slow, it drops what it
//! holds and the connection ends. After a close was asked for, or once overflowed,
//! nothing more is queued.
//!
//! The shells add only their mechanism: `shell-smol` a mutex, the writer's waker and
//! the pong slot; the simulator each frame's place in the stream (the `tag`) and the
//! socket's window.

use std::collections::VecDeque;

pub use crate::vocabulary::io::Delivery;
use crate::vocabulary::wire::held::{self, Link};
use crate::vocabulary::wire::{self, CloseCode, ServerMessage};

/// A queued frame, with whatever the shell keeps beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queued<T> {
    pub text: String,
    pub delivery: Delivery,
    pub tag: T,
    /// For a `chat_gap` note the queue made in place of dropped chat lines: how many
    /// it stands for (0 for any other frame). The note is delivered as `Every` frame.
    pub missed: u32,
}

/// What [`OutQueue::push`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Queued at the end; the queue now holds `frames` frames.
    Queued { frames: usize },
    /// Queued at the end after the older replaceable frame was dropped.
    Replaced { frames: usize },
    /// Past a limit with `frames` frames: the queue is now empty and overflowed.
    Overflowed { frames: usize },
    /// Not queued: a close was asked for, or the queue overflowed before.
    Refused,
}

/// One connection's outbound queue (see the module documentation).
#[derive(Clone, Debug)]
pub struct OutQueue<T> {
    frames: VecDeque<Queued<T>>,
    bytes: usize,
    messages_max: usize,
    bytes_max: usize,
    /// `Chat` frames queued now, and their bound (`u32`: every open connection pays for
    /// an idle queue).
    chat: u32,
    chat_messages_max: u32,
    close: Option<CloseCode>,
    overflowed: bool,
}

impl<T> OutQueue<T> {
    /// An empty queue bounded by `messages_max` frames and `bytes_max` bytes (each at
    /// least 1); chat lines give way only at those limits until
    /// [`with_chat_messages_max`](Self::with_chat_messages_max) sets their own bound.
    pub fn new(messages_max: usize, bytes_max: usize) -> OutQueue<T> {
        let messages_max = messages_max.max(1);
        OutQueue {
            frames: VecDeque::new(),
            bytes: 0,
            chat: 0,
            messages_max,
            bytes_max: bytes_max.max(1),
            chat_messages_max: u32::try_from(messages_max).unwrap_or(u32::MAX),
            close: None,
            overflowed: false,
        }
    }

    /// At most `chat_messages_max` chat lines queued at once (at least 1): beyond, the
    /// oldest gives way (`OUTBOUND_QUEUE_CHAT_MESSAGES`).
    pub fn with_chat_messages_max(mut self, chat_messages_max: usize) -> OutQueue<T> {
        self.chat_messages_max = u32::try_from(chat_messages_max.max(1)).unwrap_or(u32::MAX);
        self
    }

    /// Whether [`push`](Self::push) would queue a frame.
    pub fn accepting(&self) -> bool {
        self.close.is_none() && !self.overflowed
    }

    /// Queues `text` (see the module documentation for replacement, chat lines giving
    /// way, and overflow).
    pub fn push(&mut self, text: String, delivery: Delivery, tag: T) -> Pushed {
        if !self.accepting() {
            return Pushed::Refused;
        }
        let mut text = text;
        let replaced = delivery == Delivery::Newest && self.replace_newest(&mut text);
        self.bytes = self.bytes.saturating_add(text.len());
        if delivery == Delivery::Chat {
            self.chat = self.chat.saturating_add(1);
        }
        self.frames.push_back(Queued {
            text,
            delivery,
            tag,
            missed: 0,
        });
        while self.chat > self.chat_messages_max && self.drop_oldest_chat() {}
        while !self.within_caps() && self.drop_oldest_chat() {}
        let frames = self.frames.len();
        if !self.within_caps() {
            self.overflowed = true;
            // A fresh deque, not a cleared one: an ended connection keeps no buffer.
            self.frames = VecDeque::new();
            self.bytes = 0;
            self.chat = 0;
            return Pushed::Overflowed { frames };
        }
        if replaced {
            Pushed::Replaced { frames }
        } else {
            Pushed::Queued { frames }
        }
    }

    /// Makes way for the `Newest` frame `text`: the oldest queued `Newest` frame that
    /// may go goes (see the module documentation); false when none may.
    fn replace_newest(&mut self, text: &mut String) -> bool {
        let mut from = 0;
        while let Some(at) = self
            .frames
            .iter()
            .skip(from)
            .position(|f| f.delivery == Delivery::Newest)
            .map(|p| p + from)
        {
            from = at + 1;
            let old = held::link(&self.frames[at].text);
            // Its successor in the chain: the next numbered frame, or the new one.
            let next = self
                .frames
                .iter()
                .skip(at + 1)
                .position(|f| held::link(&f.text) != Link::Plain)
                .map(|p| p + at + 1);
            let next_link = held::link(next.map_or(text.as_str(), |n| &self.frames[n].text));
            match (old, next_link) {
                (Link::Plain, _) | (_, Link::Plain) | (Link::Full | Link::Delta, Link::Full) => {}
                (Link::Delta, Link::Delta) => {
                    let next_text = next.map_or(text.as_str(), |n| &self.frames[n].text);
                    let Some(merged) = held::merge_deltas(&self.frames[at].text, next_text) else {
                        continue;
                    };
                    match next {
                        Some(n) => {
                            let f = &mut self.frames[n];
                            self.bytes = self
                                .bytes
                                .saturating_sub(f.text.len())
                                .saturating_add(merged.len());
                            f.text = merged;
                        }
                        None => *text = merged,
                    }
                }
                // A full state cannot go before a delta that builds on it.
                (Link::Full, Link::Delta) => continue,
            }
            if let Some(old) = self.frames.remove(at) {
                self.bytes = self.bytes.saturating_sub(old.text.len());
            }
            return true;
        }
        false
    }

    /// Drops the oldest queued chat line: it becomes the `chat_gap` note, or, when one
    /// is queued (it is then before every chat line), adds one to it. False when no
    /// chat line is queued.
    fn drop_oldest_chat(&mut self) -> bool {
        let Some(at) = self
            .frames
            .iter()
            .position(|f| f.delivery == Delivery::Chat)
        else {
            return false;
        };
        self.chat -= 1;
        let note = self.frames.iter().position(|f| f.missed > 0);
        match note {
            Some(note) if note < at => {
                if let Some(line) = self.frames.remove(at) {
                    self.bytes = self.bytes.saturating_sub(line.text.len());
                }
                let missed = self.frames[note].missed.saturating_add(1);
                self.set_gap(note, missed);
            }
            _ => {
                self.frames[at].delivery = Delivery::Every;
                self.set_gap(at, 1);
            }
        }
        true
    }

    /// Makes the frame at `at` the `chat_gap` note of `missed` lines.
    fn set_gap(&mut self, at: usize, missed: u32) {
        let text = wire::encode(&ServerMessage::ChatGap { missed });
        let f = &mut self.frames[at];
        self.bytes = self
            .bytes
            .saturating_sub(f.text.len())
            .saturating_add(text.len());
        f.text = text;
        f.missed = missed;
    }

    /// Asks for a close with `code` after the frames already queued (the first code
    /// asked for stays).
    pub fn close(&mut self, code: CloseCode) {
        if self.close.is_none() {
            self.close = Some(code);
        }
    }

    /// The close asked for, if any.
    pub fn close_code(&self) -> Option<CloseCode> {
        self.close
    }

    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Takes every queued frame, in order.
    pub fn take_all(&mut self) -> VecDeque<Queued<T>> {
        self.bytes = 0;
        self.chat = 0;
        // Taking the deque (not draining it) leaves an idle connection no allocation.
        std::mem::take(&mut self.frames)
    }

    /// The oldest queued frame.
    pub fn front(&self) -> Option<&Queued<T>> {
        self.frames.front()
    }

    /// Takes the oldest queued frame.
    pub fn pop_front(&mut self) -> Option<Queued<T>> {
        let f = self.frames.pop_front()?;
        self.bytes = self.bytes.saturating_sub(f.text.len());
        if f.delivery == Delivery::Chat {
            self.chat -= 1;
        }
        Some(f)
    }

    /// Frames and bytes queued now.
    pub fn len(&self) -> (usize, usize) {
        (self.frames.len(), self.bytes)
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Whether the queue is within its limits (always, between pushes, unless the rule
    /// is broken).
    pub fn within_caps(&self) -> bool {
        self.frames.len() <= self.messages_max
            && self.bytes <= self.bytes_max
            && self.chat <= self.chat_messages_max
    }
}
