//! The store's record journal: the file each pass's records are appended to, with one
//! `write`, before that pass's frames go out; read back after a crash.
//!
//! A journal is a series of generation files beside the SQLite file, `PATH-records.N`
//! (N counting up, zero-padded so that names sort). Each commit is one frame:
//!
//! ```text
//! frame = payload length (u32 LE) · CRC-32 of the payload (u32 LE) · payload
//! payload = row*
//! row = sequence number (u64 LE) · body length (u32 LE) · body (the record, JSON)
//! ```
//!
//! A frame that returned from `write` is in the kernel's page cache, so a crash of the
//! process loses nothing of it. A power loss can cut the newest frames or leave
//! garbage after them: [`read`] stops at the first frame that is incomplete or whose
//! checksum does not match, and says how many bytes it dropped.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Bytes before each frame's payload: its length and its checksum.
pub const FRAME_HEADER_BYTES: usize = 8;
/// Bytes before each row's body: its sequence number and the body's length.
pub const ROW_HEADER_BYTES: usize = 12;

/// Builds one frame of `rows` (sequence number, body) into `frame`, which is cleared
/// first.
pub fn encode_frame<'a>(frame: &mut Vec<u8>, rows: impl IntoIterator<Item = (u64, &'a str)>) {
    frame.clear();
    push_frame(frame, rows, |body, out| {
        out.extend_from_slice(body.as_bytes())
    });
}

/// Appends one frame of `rows` to `frames`: each row's sequence number, then its body,
/// which `body` appends to the buffer it is given (so that a commit builds its frame
/// straight from the records, with no string per record). Returns where the frame
/// begins in `frames`.
pub fn push_frame<T>(
    frames: &mut Vec<u8>,
    rows: impl IntoIterator<Item = (u64, T)>,
    mut body: impl FnMut(T, &mut Vec<u8>),
) -> usize {
    let start = frames.len();
    frames.extend_from_slice(&[0; FRAME_HEADER_BYTES]);
    for (seq, row) in rows {
        frames.extend_from_slice(&seq.to_le_bytes());
        let length_at = frames.len();
        frames.extend_from_slice(&[0; 4]);
        body(row, frames);
        let body_bytes = (frames.len() - length_at - 4) as u32;
        frames[length_at..length_at + 4].copy_from_slice(&body_bytes.to_le_bytes());
    }
    let payload = start + FRAME_HEADER_BYTES;
    let payload_bytes = (frames.len() - payload) as u32;
    let crc = crc32fast::hash(&frames[payload..]);
    frames[start..start + 4].copy_from_slice(&payload_bytes.to_le_bytes());
    frames[start + 4..payload].copy_from_slice(&crc.to_le_bytes());
    start
}

/// The rows of frames this process built ([`push_frame`]) and still holds, in order,
/// without copying their bodies: (sequence number, body). Stops at the first frame or
/// row that is not whole (none, in frames built here).
pub fn rows(frames: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    let (mut at, mut frame_end) = (0, 0);
    std::iter::from_fn(move || {
        while at == frame_end {
            let header = frames.get(at..at + FRAME_HEADER_BYTES)?;
            let payload_bytes = u32::from_le_bytes(header[..4].try_into().ok()?) as usize;
            at += FRAME_HEADER_BYTES;
            frame_end = at + payload_bytes;
        }
        let start = at + ROW_HEADER_BYTES;
        let head = frames.get(at..start).filter(|_| start <= frame_end)?;
        let seq = u64::from_le_bytes(head[..8].try_into().ok()?);
        let body_bytes = u32::from_le_bytes(head[8..].try_into().ok()?) as usize;
        let body = frames
            .get(start..start + body_bytes)
            .filter(|_| start + body_bytes <= frame_end)?;
        at = start + body_bytes;
        Some((seq, body))
    })
}

/// What one generation file holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Contents {
    /// Every row of every whole frame, in order: (sequence number, body).
    pub rows: Vec<(u64, String)>,
    /// Bytes after the last whole frame (a cut or damaged tail), dropped.
    pub torn_bytes: usize,
}

/// Reads the frames in `bytes` up to the first one that is incomplete, fails its
/// checksum or holds a malformed row.
pub fn read(bytes: &[u8]) -> Contents {
    let mut contents = Contents::default();
    let mut at = 0;
    while at < bytes.len() {
        let Some(rows) = frame_at(&bytes[at..]) else {
            contents.torn_bytes = bytes.len() - at;
            break;
        };
        let (rows, frame_bytes) = rows;
        contents.rows.extend(rows);
        at += frame_bytes;
    }
    contents
}

/// The rows of the frame at the start of `bytes` and the frame's length, or `None`
/// when it is not whole and sound.
fn frame_at(bytes: &[u8]) -> Option<(Vec<(u64, String)>, usize)> {
    let header = bytes.get(..FRAME_HEADER_BYTES)?;
    let payload_bytes = u32::from_le_bytes(header[..4].try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(header[4..].try_into().ok()?);
    let payload = bytes.get(FRAME_HEADER_BYTES..FRAME_HEADER_BYTES + payload_bytes)?;
    if crc32fast::hash(payload) != crc {
        return None;
    }
    let mut rows = Vec::new();
    let mut at = 0;
    while at < payload.len() {
        let head = payload.get(at..at + ROW_HEADER_BYTES)?;
        let seq = u64::from_le_bytes(head[..8].try_into().ok()?);
        let body_bytes = u32::from_le_bytes(head[8..].try_into().ok()?) as usize;
        let start = at + ROW_HEADER_BYTES;
        let body = payload.get(start..start + body_bytes)?;
        rows.push((seq, String::from_utf8(body.to_vec()).ok()?));
        at = start + body_bytes;
    }
    Some((rows, FRAME_HEADER_BYTES + payload_bytes))
}

/// The path of generation `number` of the journal of the store at `db`.
pub fn generation_path(db: &Path, number: u64) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(format!("-records.{number:010}"));
    PathBuf::from(name)
}

/// The generations of the journal of the store at `db` that exist, oldest first.
pub fn generations(db: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let dir = match db.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(base) = db.file_name().and_then(|n| n.to_str()) else {
        return Ok(Vec::new());
    };
    let prefix = format!("{base}-records.");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(number) = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        found.push((number, generation_path(db, number)));
    }
    found.sort();
    Ok(found)
}

/// A generation being written: frames go to its end.
#[derive(Debug)]
pub struct Writer {
    file: File,
    number: u64,
    bytes: u64,
}

impl Writer {
    /// Creates generation `number` of the journal of `db` (mode 0600; it must not
    /// exist yet).
    pub fn create(db: &Path, number: u64) -> io::Result<Writer> {
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .mode(0o600)
            .open(generation_path(db, number))?;
        Ok(Writer {
            file,
            number,
            bytes: 0,
        })
    }

    /// Appends one frame (a single `write` unless the kernel takes it in parts).
    pub fn append(&mut self, frame: &[u8]) -> io::Result<()> {
        self.file.write_all(frame)?;
        self.bytes += frame.len() as u64;
        Ok(())
    }

    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes appended so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}
