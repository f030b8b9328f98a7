//! Server frames (RFC 6455 section 5.2): unfragmented and unmasked, appended to a byte
//! buffer so that a writer can send a whole batch in one write.

use super::{CONTROL_PAYLOAD_MAX, opcode};

/// The bytes a frame with `payload_len` bytes of payload takes.
pub fn frame_len(payload_len: usize) -> usize {
    let head = match payload_len {
        0..=125 => 2,
        126..=0xFFFF => 4,
        _ => 10,
    };
    head + payload_len
}

/// Appends a final frame with `op` and `payload`.
fn frame(out: &mut Vec<u8>, op: u8, payload: &[u8]) {
    out.reserve(frame_len(payload.len()));
    out.push(0x80 | op);
    match payload.len() {
        // The match arm bounds the length, so these conversions cannot fail.
        len @ 0..=125 => out.push(u8::try_from(len).unwrap_or(125)),
        len @ 126..=0xFFFF => {
            out.push(126);
            out.extend_from_slice(&u16::try_from(len).unwrap_or(u16::MAX).to_be_bytes());
        }
        len => {
            out.push(127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
}

/// A text frame.
pub fn text(out: &mut Vec<u8>, text: &str) {
    frame(out, opcode::TEXT, text.as_bytes());
}

/// A ping; a payload over 125 bytes is cut to 125.
pub fn ping(out: &mut Vec<u8>, payload: &[u8]) {
    frame(out, opcode::PING, cut(payload, CONTROL_PAYLOAD_MAX));
}

/// A pong, echoing a ping's payload (cut to 125 bytes).
pub fn pong(out: &mut Vec<u8>, payload: &[u8]) {
    frame(out, opcode::PONG, cut(payload, CONTROL_PAYLOAD_MAX));
}

/// A close frame: empty for `None`, else the code and `reason`, cut at a character
/// boundary to the 123 bytes that fit.
pub fn close(out: &mut Vec<u8>, code: Option<u16>, reason: &str) {
    let Some(code) = code else {
        frame(out, opcode::CLOSE, &[]);
        return;
    };
    let mut end = reason.len().min(CONTROL_PAYLOAD_MAX - 2);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let mut payload = [0u8; CONTROL_PAYLOAD_MAX];
    payload[..2].copy_from_slice(&code.to_be_bytes());
    payload[2..2 + end].copy_from_slice(&reason.as_bytes()[..end]);
    frame(out, opcode::CLOSE, &payload[..2 + end]);
}

fn cut(bytes: &[u8], max: usize) -> &[u8] {
    &bytes[..bytes.len().min(max)]
}
