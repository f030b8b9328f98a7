//! The websocket frame layer of a server connection (RFC 6455), pure: bytes in, events
//! out, no IO and no clock (time comes in as [`Time`](crate::Time) values).
//!
//! - [`decode`]: an incremental decoder of client frames. It is fed byte slices as they
//!   arrive, checks everything RFC 6455 asks of a server (masking, reserved bits,
//!   opcodes, control frames, fragmentation, lengths, UTF-8, close codes) and reports a
//!   violation as the [`BadFrame`](crate::vocabulary::io::BadFrame) whose close code the core sends.
//!   Its memory is a fixed header and control buffer plus the message being assembled
//!   (at most `MAX_MESSAGE_BYTES`).
//! - [`encode`]: server frames (unmasked): text, ping, pong, close.
//! - [`budget`]: the per-frame token bucket for every frame the core never sees as a
//!   message (pings, pongs, fragments after a message's first), and [`FrameReader`],
//!   the decoder and the budget together: the one rule both shells use.
//!
//! What it deliberately is not: an HTTP upgrade handler (see [`crate::shell::upgrade`]) or a
//! client-side codec (clients use tungstenite).

pub mod budget;
pub mod decode;
pub mod encode;

pub use budget::{Charge, FrameBudget, FrameReader, Read};
pub use decode::{Control, Decoder, Event, Limits};

/// Fragments (frames) one message may span; one more closes the connection with 1009,
/// like a message over `MAX_MESSAGE_BYTES`. Browsers and tungstenite send every message
/// as one frame, so this only bounds a message that never completes.
pub const MESSAGE_FRAGMENTS_MAX: u32 = 128;

/// The largest payload of a control frame (ping, pong, close).
pub const CONTROL_PAYLOAD_MAX: usize = 125;

/// Frame opcodes (RFC 6455 section 5.2).
pub mod opcode {
    pub const CONTINUATION: u8 = 0x0;
    pub const TEXT: u8 = 0x1;
    pub const BINARY: u8 = 0x2;
    pub const CLOSE: u8 = 0x8;
    pub const PING: u8 = 0x9;
    pub const PONG: u8 = 0xA;
}

/// Whether a peer may send `code` in a close frame (RFC 6455 section 7.4 and the IANA
/// registry): 1000-1003, 1007-1014 and the application ranges 3000-4999. 1004-1006 and
/// 1015 are reserved or must never be sent; 1016-2999 are unassigned.
pub fn close_code_is_valid(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}
