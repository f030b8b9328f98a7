//! Lean frames (PROTOCOL.md 7.5): for a connection whose `hello` said `deltas: true`,
//! every `state` the server sends is numbered with `seq`, and after the first full one
//! a change goes out as `delta {seq, base, patch, events}` instead: `patch` is the JSON
//! Merge Patch from the `lobby` and `game` of the last state sent on the connection to
//! the new ones. The last state is kept with its members marked ([`Flat`]), so a patch
//! compares one slice per member of the observation instead of reading both texts at
//! every level (`merge_patch::diff`, which it equals byte for byte).
//!
//! The views are built as before (the same text for every connection); this module
//! turns a delta connection's `state` frames into numbered ones or deltas as the last
//! step of [`Server::handle`], so no path that sends a state can forget it. A full
//! `state` goes instead of a delta after `hello`, `create_lobby`, `join_lobby`,
//! `spectate` and `resync`, and whenever a merge patch cannot say the change (a value
//! that becomes `null`, members that change order).

use crate::vocabulary::ids::ConnId;
use crate::vocabulary::io::Output;
use crate::vocabulary::wire::flat::Flat;
use crate::vocabulary::wire::held;

use super::Server;

/// What a delta connection last received: the `state` it holds.
#[derive(Debug, Default)]
pub(super) struct DeltaView {
    /// The `seq` of the last `state` or `delta` sent (0: none yet).
    seq: u64,
    /// That state as the server built it, without `seq`, its members marked; `None`
    /// sends the next one full.
    last: Option<Flat>,
}

/// How every `state` frame the views build starts.
const STATE_PREFIX: &str = r#"{"type":"state","#;

impl DeltaView {
    /// The frame to send for the full `state` `text` (as the views build it), and what
    /// to keep of it.
    fn frame(&mut self, text: String) -> String {
        self.seq += 1;
        // Marked from the last state where they start alike (the lobby, between moves).
        let marked = match &self.last {
            Some(last) => Flat::new_after(text, last),
            None => Flat::new(text),
        };
        let new = match marked {
            Ok(new) => new,
            Err(text) => {
                // Not an object (the views never build one): full, and so is the next.
                self.last = None;
                return held::numbered_state(&text, self.seq);
            }
        };
        let mut frame = String::new();
        let delta = self.last.as_ref().map(|last| {
            frame.reserve(new.text().len() / 4 + 64);
            held::delta_frame_flat(last, &new, self.seq, &mut frame)
        });
        let frame = match delta {
            Some(Ok(())) => frame,
            _ => held::numbered_state(new.text(), self.seq),
        };
        self.last = Some(new);
        frame
    }
}

impl Server {
    /// Sets whether `conn` takes deltas (its `hello`).
    pub(super) fn set_deltas(&mut self, conn: ConnId, on: bool) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.deltas = on.then(Box::default);
        }
    }

    /// The next `state` sent on `conn` goes full (after a join, a spectate, a resync).
    pub(super) fn send_full_next(&mut self, conn: ConnId) {
        if let Some(d) = self.conns.get_mut(&conn).and_then(|c| c.deltas.as_mut()) {
            d.last = None;
        }
    }

    /// Numbers the `state` frames of delta connections among `outputs` and turns those
    /// that can be into deltas, in order (see the module documentation).
    pub(super) fn frame_states(&mut self, outputs: &mut [Output]) {
        for o in outputs {
            let Output::Send { conn, text, .. } = o else {
                continue;
            };
            if !text.starts_with(STATE_PREFIX) {
                continue;
            }
            let Some(d) = self.conns.get_mut(conn).and_then(|c| c.deltas.as_mut()) else {
                continue;
            };
            *text = d.frame(std::mem::take(text));
        }
    }
}
