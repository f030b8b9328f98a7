//! A connection's outbound queue, time-free: the one rule both shells queue frames by.
//!
//! The core marks a frame replaceable when it is a full `state` without events
//! ([`crate::io::Output::Send`]); such a frame replaces the replaceable one queued
//! before it, since only the newest view matters, while every other frame keeps its
//! place (dropping a state with events would lose them). A queue past
//! `OUTBOUND_QUEUE_MESSAGES` frames or `OUTBOUND_QUEUE_BYTES` bytes is overflowed: its
//! reader is too slow, it drops what it holds and the connection ends. After a close was
//! asked for, or once overflowed, nothing more is queued.
//!
//! The shells add only their mechanism: `shell-smol` a mutex, the writer's waker and
//! the pong slot; the simulator each frame's place in the stream (the `tag`) and the
//! socket's window.

use std::collections::VecDeque;

use crate::wire::CloseCode;

/// A queued frame, with whatever the shell keeps beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queued<T> {
    pub text: String,
    pub replaceable: bool,
    pub tag: T,
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
    close: Option<CloseCode>,
    overflowed: bool,
}

impl<T> OutQueue<T> {
    /// An empty queue bounded by `messages_max` frames and `bytes_max` bytes (each at
    /// least 1).
    pub fn new(messages_max: usize, bytes_max: usize) -> OutQueue<T> {
        OutQueue {
            frames: VecDeque::new(),
            bytes: 0,
            messages_max: messages_max.max(1),
            bytes_max: bytes_max.max(1),
            close: None,
            overflowed: false,
        }
    }

    /// Whether [`push`](Self::push) would queue a frame.
    pub fn accepting(&self) -> bool {
        self.close.is_none() && !self.overflowed
    }

    /// Queues `text` (see the module documentation for replacement and overflow).
    pub fn push(&mut self, text: String, replaceable: bool, tag: T) -> Pushed {
        if !self.accepting() {
            return Pushed::Refused;
        }
        let mut replaced = false;
        if replaceable
            && let Some(old) = self.frames.iter().position(|f| f.replaceable)
            && let Some(old) = self.frames.remove(old)
        {
            self.bytes = self.bytes.saturating_sub(old.text.len());
            replaced = true;
        }
        self.bytes = self.bytes.saturating_add(text.len());
        self.frames.push_back(Queued {
            text,
            replaceable,
            tag,
        });
        let frames = self.frames.len();
        if frames > self.messages_max || self.bytes > self.bytes_max {
            self.overflowed = true;
            // A fresh deque, not a cleared one: an ended connection keeps no buffer.
            self.frames = VecDeque::new();
            self.bytes = 0;
            return Pushed::Overflowed { frames };
        }
        if replaced {
            Pushed::Replaced { frames }
        } else {
            Pushed::Queued { frames }
        }
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
        Some(f)
    }

    /// Frames and bytes queued now.
    pub fn len(&self) -> (usize, usize) {
        (self.frames.len(), self.bytes)
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Whether the queue is within its limits (always, unless the rule is broken).
    pub fn within_caps(&self) -> bool {
        self.frames.len() <= self.messages_max && self.bytes <= self.bytes_max
    }
}
