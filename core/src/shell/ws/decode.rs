//! The incremental decoder of client frames (RFC 6455 section 5), server side.
//!
//! [`Decoder::decode`] takes whatever bytes arrived and returns at most one [`Event`] per
//! call, with the number of bytes it used; call it again with the rest until it returns
//! no event (then it used everything). Any split of a byte stream gives the same events.
//! Every check fails as early as the bytes allow: a bad first byte fails on that byte,
//! an oversized length on the header, invalid UTF-8 on the first byte that cannot
//! start or continue a character. After a failure or a close frame the decoder is done
//! and swallows everything.
//!
//! Memory: a 14-byte header buffer, a 125-byte control buffer and the text message being
//! assembled, reserved frame by frame from the headers and never past `message_bytes_max`.

use std::fmt;

use super::{CONTROL_PAYLOAD_MAX, MESSAGE_FRAGMENTS_MAX, close_code_is_valid, opcode};
use crate::vocabulary::config::Config;
use crate::vocabulary::io::BadFrame;

/// The limits of one connection's decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `MAX_MESSAGE_BYTES`: the largest message, over all its fragments.
    pub message_bytes_max: usize,
    /// The most frames one message may span.
    pub fragments_max: u32,
}

impl Limits {
    pub fn from_config(config: &Config) -> Limits {
        Limits {
            message_bytes_max: config.message_bytes_max,
            fragments_max: MESSAGE_FRAGMENTS_MAX,
        }
    }
}

/// The payload of a control frame: at most [`CONTROL_PAYLOAD_MAX`] bytes, inline.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Control {
    bytes: [u8; CONTROL_PAYLOAD_MAX],
    len: u8,
}

impl Control {
    pub const EMPTY: Control = Control {
        bytes: [0; CONTROL_PAYLOAD_MAX],
        len: 0,
    };

    /// The payload `bytes`, or `None` when it is longer than a control frame allows.
    pub fn new(bytes: &[u8]) -> Option<Control> {
        let mut control = Control::EMPTY;
        control.bytes.get_mut(..bytes.len())?.copy_from_slice(bytes);
        control.len = u8::try_from(bytes.len()).ok()?;
        Some(control)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl fmt::Debug for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Control({:?})", self.as_bytes())
    }
}

impl Default for Control {
    fn default() -> Control {
        Control::EMPTY
    }
}

/// What a client's bytes amounted to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A complete text message (valid UTF-8, within the limits).
    Text(String),
    /// The header of a continuation frame was read; its payload follows. Reported
    /// before the payload so that a budget can drop the frame (see
    /// [`Decoder::abandon_message`]) before anything is stored.
    Continuation,
    Ping(Control),
    Pong(Control),
    /// A valid close frame; the decoder is done. `code` is `None` for an empty payload.
    Close {
        code: Option<u16>,
        reason: String,
    },
    /// A violation; the decoder is done. The variant names the close code to send.
    Fail(BadFrame),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Header,
    Payload,
    Done,
}

/// The data message being assembled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Assembling {
    Nothing,
    Text,
    /// Dropped by the budget: the rest of its frames are read and discarded.
    Abandoned,
}

#[derive(Clone, Copy, Debug, Default)]
struct Frame {
    fin: bool,
    opcode: u8,
    mask: [u8; 4],
    len: u64,
    read: u64,
}

/// A client connection's frame decoder (see the module documentation).
#[derive(Clone, Debug)]
pub struct Decoder {
    limits: Limits,
    phase: Phase,
    head: [u8; 14],
    head_len: u8,
    /// How long the header in `head` is, known from its second byte on.
    head_need: u8,
    frame: Frame,
    control: Control,
    assembling: Assembling,
    /// The text message so far, unmasked.
    message: Vec<u8>,
    /// How many bytes of `message` are known to be valid UTF-8 (the rest, at most 3
    /// bytes, are the start of a character that continues in the next bytes).
    utf8_valid: usize,
    /// Payload bytes of the current message so far (also while abandoned).
    message_bytes: u64,
    fragments: u32,
}

impl Decoder {
    pub fn new(limits: Limits) -> Decoder {
        Decoder {
            limits,
            phase: Phase::Header,
            head: [0; 14],
            head_len: 0,
            head_need: 2,
            frame: Frame::default(),
            control: Control::EMPTY,
            assembling: Assembling::Nothing,
            message: Vec::new(),
            utf8_valid: 0,
            message_bytes: 0,
            fragments: 0,
        }
    }

    /// Decodes from `input` until one event or the end of `input`. Returns the bytes
    /// used and the event; without an event, all of `input` was used.
    pub fn decode(&mut self, input: &[u8]) -> (usize, Option<Event>) {
        let mut used = 0;
        loop {
            match self.phase {
                Phase::Done => return (input.len(), None),
                Phase::Header => {
                    let Some(&byte) = input.get(used) else {
                        return (used, None);
                    };
                    used += 1;
                    if let Some(event) = self.header_byte(byte) {
                        return (used, Some(event));
                    }
                }
                Phase::Payload => {
                    let rest = input.get(used..).unwrap_or_default();
                    let left = self.frame.len - self.frame.read;
                    let take = usize::try_from(left).map_or(rest.len(), |l| l.min(rest.len()));
                    used += take;
                    if let Some(event) = self.payload(&rest[..take]) {
                        return (used, Some(event));
                    }
                    if self.frame.read == self.frame.len {
                        if let Some(event) = self.finish_frame() {
                            return (used, Some(event));
                        }
                    } else {
                        return (used, None);
                    }
                }
            }
        }
    }

    /// Drops the data message being assembled (its frame budget ran out): the rest of
    /// its frames are still read, and discarded.
    pub fn abandon_message(&mut self) {
        if self.assembling == Assembling::Text {
            self.assembling = Assembling::Abandoned;
            self.message = Vec::new();
            self.utf8_valid = 0;
        }
    }

    /// Ends decoding: everything after is swallowed.
    pub fn stop(&mut self) {
        self.phase = Phase::Done;
        self.message = Vec::new();
    }

    /// Whether the decoder has failed, seen a close frame or been stopped.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Heap bytes held now (the message being assembled).
    pub fn heap_bytes(&self) -> usize {
        self.message.capacity()
    }

    fn fail(&mut self, bad: BadFrame) -> Option<Event> {
        self.stop();
        Some(Event::Fail(bad))
    }

    fn header_byte(&mut self, byte: u8) -> Option<Event> {
        let at = usize::from(self.head_len);
        self.head[at] = byte;
        self.head_len += 1;
        match at {
            0 => self.first_byte(byte),
            1 => self.second_byte(byte),
            _ if self.head_len == self.head_need => self.start_frame(),
            _ => None,
        }
    }

    /// FIN, the reserved bits and the opcode, checked against the message in progress.
    fn first_byte(&mut self, byte: u8) -> Option<Event> {
        let fin = byte & 0x80 != 0;
        let op = byte & 0x0F;
        if byte & 0x70 != 0 {
            return self.fail(BadFrame::Protocol); // no extension was negotiated
        }
        let in_message = self.assembling != Assembling::Nothing;
        let bad = match op {
            opcode::CLOSE | opcode::PING | opcode::PONG => (!fin).then_some(BadFrame::Protocol),
            opcode::CONTINUATION => (!in_message).then_some(BadFrame::Protocol),
            opcode::TEXT if in_message => Some(BadFrame::Protocol),
            opcode::BINARY if in_message => Some(BadFrame::Protocol),
            opcode::TEXT => None,
            opcode::BINARY => Some(BadFrame::Binary), // the protocol is text only
            _ => Some(BadFrame::Protocol),
        };
        if let Some(bad) = bad {
            return self.fail(bad);
        }
        self.frame = Frame {
            fin,
            opcode: op,
            ..Frame::default()
        };
        None
    }

    /// The mask bit and the 7-bit length.
    fn second_byte(&mut self, byte: u8) -> Option<Event> {
        if byte & 0x80 == 0 {
            return self.fail(BadFrame::Protocol); // client frames must be masked
        }
        let len7 = byte & 0x7F;
        if self.frame.opcode >= opcode::CLOSE && usize::from(len7) > CONTROL_PAYLOAD_MAX {
            return self.fail(BadFrame::Protocol);
        }
        let extended = match len7 {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        self.head_need = 2 + extended + 4;
        None
    }

    /// The whole header is in: its length checked against the limits, then the payload.
    fn start_frame(&mut self) -> Option<Event> {
        let head = self.head;
        let len7 = head[1] & 0x7F;
        let (len, mask_at) = match len7 {
            126 => (u64::from(u16::from_be_bytes([head[2], head[3]])), 4),
            127 => {
                let mut bytes = [0u8; 8];
                bytes.copy_from_slice(&head[2..10]);
                (u64::from_be_bytes(bytes), 10)
            }
            n => (u64::from(n), 2),
        };
        if len >> 63 != 0 {
            return self.fail(BadFrame::Protocol);
        }
        self.frame.len = len;
        self.frame.mask.copy_from_slice(&head[mask_at..mask_at + 4]);
        self.head_len = 0;
        self.head_need = 2;
        self.phase = Phase::Payload;
        self.control = Control::EMPTY;
        match self.frame.opcode {
            opcode::TEXT => {
                self.assembling = Assembling::Text;
                self.fragments = 1;
                self.message_bytes = 0;
                self.utf8_valid = 0;
                self.grow(len)
            }
            opcode::CONTINUATION => {
                self.fragments += 1;
                if self.fragments > self.limits.fragments_max {
                    return self.fail(BadFrame::TooLarge);
                }
                self.grow(len).or(Some(Event::Continuation))
            }
            _ => None, // a control frame: its length was checked on the second byte
        }
    }

    /// Counts `len` more bytes of the current message against the limit, and reserves
    /// room for them when the message is kept.
    fn grow(&mut self, len: u64) -> Option<Event> {
        let total = self.message_bytes.saturating_add(len);
        let max = u64::try_from(self.limits.message_bytes_max).unwrap_or(u64::MAX);
        if total > max {
            return self.fail(BadFrame::TooLarge);
        }
        self.message_bytes = total;
        if self.assembling == Assembling::Text {
            // `total` <= max, which is a usize.
            self.message
                .reserve_exact(usize::try_from(len).unwrap_or(0));
        }
        None
    }

    /// Unmasks and stores `chunk` of the current frame's payload.
    fn payload(&mut self, chunk: &[u8]) -> Option<Event> {
        let offset = usize::try_from(self.frame.read % 4).unwrap_or(0);
        self.frame.read += chunk.len() as u64;
        let mask = self.frame.mask;
        let unmask = |i: usize, b: &u8| b ^ mask[(offset + i) % 4];
        if self.frame.opcode >= opcode::CLOSE {
            let at = usize::from(self.control.len);
            for (i, b) in chunk.iter().enumerate() {
                self.control.bytes[at + i] = unmask(i, b);
            }
            // A control payload is at most 125 bytes, checked on the second byte.
            self.control.len += u8::try_from(chunk.len()).unwrap_or(0);
            return None;
        }
        if self.assembling != Assembling::Text {
            return None;
        }
        self.message
            .extend(chunk.iter().enumerate().map(|(i, b)| unmask(i, b)));
        match std::str::from_utf8(&self.message[self.utf8_valid..]) {
            Ok(_) => self.utf8_valid = self.message.len(),
            Err(e) if e.error_len().is_some() => return self.fail(BadFrame::InvalidUtf8),
            Err(e) => self.utf8_valid += e.valid_up_to(),
        }
        None
    }

    fn finish_frame(&mut self) -> Option<Event> {
        self.phase = Phase::Header;
        let control = self.control;
        match self.frame.opcode {
            opcode::PING => Some(Event::Ping(control)),
            opcode::PONG => Some(Event::Pong(control)),
            opcode::CLOSE => Some(self.close_frame(control.as_bytes())),
            _ if !self.frame.fin => None,
            _ => self.finish_message(),
        }
    }

    fn finish_message(&mut self) -> Option<Event> {
        let kept = self.assembling == Assembling::Text;
        self.assembling = Assembling::Nothing;
        self.fragments = 0;
        self.message_bytes = 0;
        if !kept {
            return None;
        }
        let message = std::mem::take(&mut self.message);
        if self.utf8_valid != message.len() {
            return self.fail(BadFrame::InvalidUtf8); // it ends inside a character
        }
        self.utf8_valid = 0;
        match String::from_utf8(message) {
            Ok(text) => Some(Event::Text(text)),
            Err(_) => self.fail(BadFrame::InvalidUtf8),
        }
    }

    fn close_frame(&mut self, payload: &[u8]) -> Event {
        self.stop();
        let (code, reason) = match payload {
            [] => {
                return Event::Close {
                    code: None,
                    reason: String::new(),
                };
            }
            [_] => return Event::Fail(BadFrame::Protocol),
            [hi, lo, reason @ ..] => (u16::from_be_bytes([*hi, *lo]), reason),
        };
        if !close_code_is_valid(code) {
            return Event::Fail(BadFrame::Protocol);
        }
        match std::str::from_utf8(reason) {
            Ok(reason) => Event::Close {
                code: Some(code),
                reason: reason.to_owned(),
            },
            Err(_) => Event::Fail(BadFrame::InvalidUtf8),
        }
    }
}
