//! Raw websocket frames: the client frames a fragment flooder builds (masked, as
//! RFC 6455 requires of a client, with the core's `ws::encode::client_frame`), and the
//! simulated reader task that reads them with the core's `wizard_core::shell::ws::FrameReader`
//! (the decoder and the per-frame budget shell-smol/src/conn.rs uses). Only
//! connections that send raw bytes get a reader, so honest clients keep sending whole
//! text messages (`Arrive::Text`) and the simulator's speed does not change.

use wizard_core::Time;
use wizard_core::shell::ws::{FrameReader, Read, opcode};
use wizard_core::vocabulary::io::{ConnId, Input};

use crate::host::core_task::Host;
use crate::model::net::Ev;
use crate::model::queue::EventQueue;

/// A masked client frame: `fin`, `op`, `payload`, masked with `mask` (the core's
/// client encoder).
pub fn client_frame(fin: bool, op: u8, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
    let mut out = Vec::new();
    let first = if fin { 0x80 } else { 0 } | (op & 0x0f);
    wizard_core::shell::ws::encode::client_frame(&mut out, first, Some(mask), payload);
    out
}

/// The first frame of a text message that never completes (no FIN).
pub fn open_message(mask: [u8; 4]) -> Vec<u8> {
    client_frame(false, opcode::TEXT, b"{\"type\":\"leave_", mask)
}

/// An empty continuation frame without FIN.
pub fn empty_continuation(mask: [u8; 4]) -> Vec<u8> {
    client_frame(false, opcode::CONTINUATION, &[], mask)
}

/// A mask for the `n`th frame on `conn` (a client draws it at random; any value works).
pub fn mask_for(conn: ConnId, n: u64) -> [u8; 4] {
    let x = conn
        .0
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(n.wrapping_mul(0x2545_f491_4f6c_dd1d));
    let b = x.to_le_bytes();
    [b[0], b[3], b[5], b[7]]
}

impl Host {
    /// A complete text message from `conn`, decoded as its reader task does (the
    /// core's one rule, [`Input::from_text`]).
    pub(crate) fn decode_text(&self, conn: ConnId, text: &str) -> Option<Input> {
        Some(Input::from_text(conn, self.kind(conn)?, text))
    }

    /// Raw frame bytes reached `conn`'s reader task: its `FrameReader` (made on the
    /// first bytes) turns them into the same inputs as whole messages. Fragments and
    /// frames the budget dropped never reach the core; each frame read costs the
    /// reader `read_us` (the per-message read cost, reused: a frame's header parse and
    /// the budget are cheaper than a JSON decode, so this overstates an attacker's cost
    /// to the server, the safe side).
    pub(crate) fn arrive_raw(
        &mut self,
        q: &mut EventQueue<Ev>,
        now: Time,
        conn: ConnId,
        bytes: &[u8],
    ) {
        if self.kind(conn).is_none() {
            return; // the reader is gone already
        }
        if self.readers.get(&conn).is_none() {
            let reader = FrameReader::new(self.server.config(), now);
            self.readers.insert(conn, reader);
        }
        let mut reads = Vec::new();
        let mut rest = bytes;
        while let Some(reader) = self.readers.get_mut(&conn) {
            let (used, read) = reader.read(now, rest);
            rest = rest.get(used..).unwrap_or_default();
            match read {
                Some(read) => reads.push(read),
                None => break,
            }
        }
        let mut frames = 0u64;
        let mut woke = false;
        for read in reads {
            let input = match read {
                Read::Text(text) => self.decode_text(conn, &text),
                Read::Fail(frame) => {
                    if frame == wizard_core::vocabulary::io::BadFrame::Flood {
                        self.frame_floods += 1;
                    }
                    Some(Input::BadFrame { conn, frame })
                }
                Read::Close(_) => Some(Input::Closed { conn }),
                // Nothing for the core (the flooders send no pings to answer).
                Read::Ping(_) | Read::Pong | Read::Fragment | Read::Dropped => {
                    frames += 1;
                    None
                }
            };
            if let Some(input) = input {
                self.enqueue(input);
                woke = true;
            }
        }
        if frames > 0 {
            // The reader's work on them, at its turns (`executor.rs`).
            self.exec.read(conn, frames);
            self.kick(q, now);
        }
        if woke {
            self.wake(q, now);
        }
    }
}
