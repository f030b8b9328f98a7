//! A lobby's audience (PROTOCOL.md 6.4): its spectators and its table chat history.
//!
//! Spectators are connections, not seats: they hold no seat, are never recorded in a
//! durable store and are not restored, so a spectator who loses its connection simply
//! stops watching. A lobby has at most `MAX_SPECTATORS` of them. The chat history keeps
//! the last [`CHAT_HISTORY_LINES_MAX`] lines already encoded as `chat` frames; with the
//! length bound of a line ([`CHAT_CHARS_MAX`]) that bounds it in bytes too. The history
//! lives in memory only: a restart starts every lobby's chat afresh.
//!
//! This module is plain bookkeeping; the server decides who may watch or chat and sends
//! the frames (`server/watch.rs`).

use std::collections::VecDeque;

use crate::machine::session::SessionId;

/// Longest chat line, in characters (not bytes) after cleaning
/// ([`crate::vocabulary::names::clean_text`]).
pub const CHAT_CHARS_MAX: usize = 200;
/// Lines of chat a lobby keeps and sends to whoever joins or spectates.
pub const CHAT_HISTORY_LINES_MAX: usize = 50;

/// One spectator: its session and the name shown in `lobby.spectators`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spectator {
    pub session: SessionId,
    pub name: String,
}

/// The spectators and chat history of one lobby.
#[derive(Clone, Debug, Default)]
pub struct Audience {
    /// In the order they came.
    spectators: Vec<Spectator>,
    /// Encoded `chat` frames, oldest first, at most [`CHAT_HISTORY_LINES_MAX`].
    history: VecDeque<String>,
    /// `CHAT_LOBBY_RATE`: the spectators' chat lines of this lobby, made at its first
    /// spectator's line.
    pub spectator_chat: Option<crate::vocabulary::limiter::TokenBucket>,
}

impl Audience {
    pub fn spectators(&self) -> &[Spectator] {
        &self.spectators
    }

    /// The spectators' names, in the order they came.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.spectators.iter().map(|s| s.name.as_str())
    }

    /// Adds a spectator unless `spectators_max` are watching; false when full.
    pub fn add(&mut self, session: SessionId, name: String, spectators_max: usize) -> bool {
        if self.spectators.len() >= spectators_max {
            return false;
        }
        self.spectators.push(Spectator { session, name });
        true
    }

    /// Removes `session`; false when it was not watching.
    pub fn remove(&mut self, session: SessionId) -> bool {
        let before = self.spectators.len();
        self.spectators.retain(|s| s.session != session);
        self.spectators.len() != before
    }

    /// The chat frames kept, oldest first.
    pub fn history(&self) -> impl Iterator<Item = &str> + '_ {
        self.history.iter().map(String::as_str)
    }

    /// The kept lines a replay of at most `bytes_max` bytes sends: how many of the
    /// oldest it leaves out, and the newest that fit, oldest first.
    pub fn replay(&self, bytes_max: usize) -> (usize, impl Iterator<Item = &str> + '_) {
        let mut bytes = 0usize;
        let fit = self
            .history
            .iter()
            .rev()
            .take_while(|line| {
                bytes = bytes.saturating_add(line.len());
                bytes <= bytes_max
            })
            .count();
        let skipped = self.history.len() - fit;
        (
            skipped,
            self.history.iter().skip(skipped).map(String::as_str),
        )
    }

    /// Lines kept now.
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    /// Keeps an encoded `chat` frame, forgetting the oldest past the bound.
    pub fn push_line(&mut self, frame: String) {
        while self.history.len() >= CHAT_HISTORY_LINES_MAX {
            self.history.pop_front();
        }
        self.history.push_back(frame);
    }

    /// Neither spectators nor chat: nothing worth keeping.
    pub fn is_empty(&self) -> bool {
        self.spectators.is_empty() && self.history.is_empty()
    }
}
