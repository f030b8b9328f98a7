//! Server frames (RFC 6455 section 5.2): unfragmented and unmasked, appended to a byte
//! buffer so that a writer can send a whole batch in one write; and [`client_frame`],
//! any frame a client may send, valid or not, for the load generator, the simulator
//! and the tests.

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

/// Appends a frame's first byte, then its length (with the mask bit `mask_bit`).
fn header(out: &mut Vec<u8>, first: u8, mask_bit: u8, len: usize) {
    out.push(first);
    match len {
        // The match arm bounds the length, so these conversions cannot fail.
        0..=125 => out.push(mask_bit | u8::try_from(len).unwrap_or(125)),
        126..=0xFFFF => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&u16::try_from(len).unwrap_or(u16::MAX).to_be_bytes());
        }
        _ => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
}

/// Appends a final frame with `op` and `payload`.
fn frame(out: &mut Vec<u8>, op: u8, payload: &[u8]) {
    out.reserve(frame_len(payload.len()));
    header(out, 0x80 | op, 0, payload.len());
    out.extend_from_slice(payload);
}

/// Appends a client's frame: `first` is the whole first byte (FIN, RSV, opcode), taken
/// as it is, and `mask` masks the payload (`None` sends it unmasked, which a server must
/// refuse). Nothing is checked: attackers and tests send broken frames on purpose.
pub fn client_frame(out: &mut Vec<u8>, first: u8, mask: Option<[u8; 4]>, payload: &[u8]) {
    out.reserve(frame_len(payload.len()) + 4);
    header(
        out,
        first,
        if mask.is_some() { 0x80 } else { 0 },
        payload.len(),
    );
    match mask {
        Some(key) => {
            out.extend_from_slice(&key);
            out.extend(payload.iter().zip(key.iter().cycle()).map(|(b, k)| b ^ k));
        }
        None => out.extend_from_slice(payload),
    }
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
