//! The store's record journal: the file each pass's records are copied into, through a
//! shared mapping of it, before that pass's frames go out; read back after a crash.
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
//! A generation is given its size when it is created (allocated, so that a full disk
//! shows then, not as a fault on a move's path) and mapped shared; a commit copies its
//! frame after the last one, with no syscall, and a frame that does not fit grows the
//! file first. Bytes stored into a shared mapping of a file are in the kernel's page
//! cache, as after a `write`, so a crash of the process loses nothing of them. The
//! unused rest of a generation is zeros: a frame header of length zero ends it (a
//! commit never writes a frame of no rows). A power loss can cut the newest frames or
//! leave garbage or zeros in their place: [`read`] stops at the first frame that is
//! incomplete, empty or whose checksum does not match, and says how many bytes that
//! are not zero it dropped.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use memmap2::MmapMut;
use rustix::fs::{FallocateFlags, fallocate};

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
    /// Bytes after the last whole frame up to the last one that is not zero (a cut or
    /// damaged tail), dropped. The zeros after them are the generation's unused rest.
    pub torn_bytes: usize,
}

/// Reads the frames in `bytes` up to the first one that is incomplete, empty (the
/// zeros after the last frame), fails its checksum or holds a malformed row. Nothing
/// after an empty frame is read: after a power loss, frames beyond a run of zeros may
/// not follow on from the ones before it.
pub fn read(bytes: &[u8]) -> Contents {
    let mut contents = Contents::default();
    let mut at = 0;
    while let Some((rows, frame_bytes)) = frame_at(&bytes[at..]) {
        contents.rows.extend(rows);
        at += frame_bytes;
    }
    contents.torn_bytes = bytes[at..]
        .iter()
        .rposition(|b| *b != 0)
        .map_or(0, |last| last + 1);
    contents
}

/// The rows of the frame at the start of `bytes` and the frame's length, or `None`
/// when it is not whole and sound, or empty (a payload length of zero).
fn frame_at(bytes: &[u8]) -> Option<(Vec<(u64, String)>, usize)> {
    let header = bytes.get(..FRAME_HEADER_BYTES)?;
    let payload_bytes = u32::from_le_bytes(header[..4].try_into().ok()?) as usize;
    if payload_bytes == 0 {
        return None;
    }
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

/// A generation being written: frames are copied in after the last one, through a
/// shared mapping of the whole file.
#[derive(Debug)]
pub struct Writer {
    file: File,
    /// The whole file, mapped shared; `None` once closed.
    map: Option<MmapMut>,
    number: u64,
    bytes: u64,
}

impl Writer {
    /// Creates generation `number` of the journal of `db` (mode 0600; it must not
    /// exist yet), `reserved_bytes` long, allocated, and maps it.
    pub fn create(db: &Path, number: u64, reserved_bytes: u64) -> io::Result<Writer> {
        let path = generation_path(db, number);
        let file = OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .mode(0o600)
            .open(&path)?;
        let mut writer = Writer {
            file,
            map: None,
            number,
            bytes: 0,
        };
        if let Err(e) = writer.grow_to(reserved_bytes.max(FRAME_HEADER_BYTES as u64)) {
            drop(writer);
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        Ok(writer)
    }

    /// Appends one frame: a copy into the mapping, no syscall, unless the frame does
    /// not fit in what is left of the file (then the file doubles, at least, first).
    pub fn append(&mut self, frame: &[u8]) -> io::Result<()> {
        debug_assert!(
            frame.len() > FRAME_HEADER_BYTES && frame[..4] != [0; 4],
            "an empty frame would end the generation for a reader"
        );
        let closed = || io::Error::other("the journal generation is closed");
        let start = self.bytes as usize;
        let end = start + frame.len();
        let mapped_bytes = self.map.as_ref().ok_or_else(closed)?.len();
        if end > mapped_bytes {
            self.grow_to((end as u64).max(2 * mapped_bytes as u64))?;
        }
        let map = self.map.as_mut().ok_or_else(closed)?;
        map[start..end].copy_from_slice(frame);
        self.bytes = end as u64;
        Ok(())
    }

    /// Makes the file `len` bytes long, allocated, and maps all of it anew.
    fn grow_to(&mut self, len: u64) -> io::Result<()> {
        let old_len = self.map.as_ref().map_or(0, |map| map.len() as u64);
        self.file.set_len(len)?;
        // Allocated now, so that a full disk is an error here rather than a SIGBUS when
        // a commit first touches a page. A file system that cannot allocate ahead
        // keeps the file sparse.
        match fallocate(&self.file, FallocateFlags::empty(), old_len, len - old_len) {
            Ok(()) | Err(rustix::io::Errno::OPNOTSUPP) => {}
            Err(e) => return Err(e.into()),
        }
        self.map = Some(map_shared(&self.file)?);
        Ok(())
    }

    /// Faults the mapping's first `bytes` in, writable (`MADV_POPULATE_WRITE`, Linux
    /// 5.14 and later), so that the commits that fill them take no page fault. The
    /// store's writer does this for a new generation before the core task writes to
    /// it: in one call the kernel maps each page for about what one fault costs, and
    /// not on the core task's thread. Only a speed-up: where the kernel cannot, each
    /// commit faults its pages in as before.
    pub fn prefault(&self, bytes: u64) -> io::Result<()> {
        let Some(map) = &self.map else {
            return Ok(());
        };
        let len = (bytes as usize).min(map.len());
        #[cfg(target_os = "linux")]
        {
            map.advise_range(memmap2::Advice::PopulateWrite, 0, len)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = len;
            Ok(())
        }
    }

    /// Unmaps the file (before it is deleted); a later append fails.
    pub fn close(&mut self) {
        self.map = None;
    }

    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes of frames appended so far (not the file's length).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Maps all of `file` shared and writable.
#[allow(unsafe_code)]
fn map_shared(file: &File) -> io::Result<MmapMut> {
    // SAFETY: the mapping is only sound while no one else changes the file's length or
    // bytes under it. The file is a journal generation this process created
    // (`create_new`, mode 0600) beside a store it holds the exclusive lock of; only its
    // `Writer` writes or resizes it, and the only other access is deleting it, once
    // this process has unmapped it (or is gone), which leaves a mapping valid anyway.
    unsafe { MmapMut::map_mut(file) }
}
