//! What both stores share about rows: the key columns a record is stored with beside
//! its body, and the batched, multi-threaded decoding and counting of a restore's rows.

use std::sync::{Mutex, PoisonError};

use wizard_core::machine::records::Record;
use wizard_core::machine::records::liveness::{Liveness, RowCount, RowKey, RowKind};

use super::StoreError;

/// Rows a reader hands to a decoding thread at once.
pub(super) const LOAD_BATCH_ROWS: usize = 16 * 1024;

/// Rows read for a decoding thread: their bodies in one buffer (one allocation a batch,
/// not one a row).
#[derive(Default)]
pub(crate) struct Batch {
    seqs: Vec<u64>,
    ends: Vec<usize>,
    text: String,
}

impl Batch {
    pub(crate) fn push(&mut self, seq: u64, body: &str) {
        self.text.push_str(body);
        self.seqs.push(seq);
        self.ends.push(self.text.len());
    }

    fn len(&self) -> usize {
        self.seqs.len()
    }

    fn rows(&self) -> impl Iterator<Item = (u64, &str)> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        self.seqs
            .iter()
            .zip(starts.zip(&self.ends))
            .map(|(seq, (start, end))| (*seq, self.text.get(start..*end).unwrap_or_default()))
    }
}

/// Reads rows with `read_row` (which pushes one row into the batch it is given and
/// says whether there was one) on this thread, in batches that the other cores decode
/// while it reads the next; returns every record with its sequence number, in the
/// order read. `at` names the store in errors (a row that is not a record names its
/// sequence number). At most two batches per decoding thread wait for one. Shared by
/// the SQLite and the PostgreSQL store.
pub(crate) fn decode_in_batches(
    at: &str,
    mut read_row: impl FnMut(&mut Batch) -> Result<bool, StoreError>,
) -> Result<Vec<(u64, Record)>, StoreError> {
    type Decoded = (usize, Result<Vec<(u64, Record)>, StoreError>);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get().min(8))
        .max(2)
        - 1;
    let (batch_tx, batch_rx) = std::sync::mpsc::sync_channel::<(usize, Batch)>(threads * 2);
    let batch_rx = Mutex::new(batch_rx);
    let (done_tx, done_rx) = std::sync::mpsc::channel::<Decoded>();
    let decode = |batch: Batch| -> Result<Vec<(u64, Record)>, StoreError> {
        batch
            .rows()
            .map(|(seq, body)| {
                Record::decode(body)
                    .map(|r| (seq, r))
                    .map_err(|e| StoreError(format!("{at} record {seq}: {e}")))
            })
            .collect()
    };
    let read: Result<usize, StoreError> = std::thread::scope(|scope| {
        for _ in 0..threads {
            let (batch_rx, done_tx) = (&batch_rx, done_tx.clone());
            scope.spawn(move || {
                loop {
                    let next = batch_rx
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .recv();
                    let Ok((index, batch)) = next else { break };
                    if done_tx.send((index, decode(batch))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        let mut batches = 0;
        let mut batch = Batch::default();
        // Dropping the sender on every way out ends the decoding threads.
        let batch_tx = batch_tx;
        loop {
            let more = read_row(&mut batch)?;
            if batch.len() == LOAD_BATCH_ROWS || (!more && !batch.seqs.is_empty()) {
                let full = std::mem::take(&mut batch);
                batch_tx
                    .send((batches, full))
                    .map_err(|_| StoreError("a decoding thread stopped".into()))?;
                batches += 1;
            }
            if !more {
                return Ok(batches);
            }
        }
    });
    let batches = read?;
    let mut decoded: Vec<Option<Vec<(u64, Record)>>> = (0..batches).map(|_| None).collect();
    for (index, part) in done_rx.iter() {
        if let Some(slot) = decoded.get_mut(index) {
            *slot = Some(part?);
        }
    }
    let mut records = Vec::with_capacity(batches * LOAD_BATCH_ROWS);
    for part in decoded {
        records.extend(part.ok_or_else(|| StoreError("a decoding thread panicked".into()))?);
    }
    Ok(records)
}

/// A restore's records without their sequence numbers, oldest first, and their rows
/// counted live and dead (what the writer's compaction starts from). Shared by the
/// SQLite and the PostgreSQL store.
pub(crate) fn counted(records: Vec<(u64, Record)>) -> (Vec<Record>, Liveness<RowCount>) {
    let mut liveness = Liveness::<RowCount>::default();
    for (seq, record) in &records {
        liveness.add(*seq, record.row_key());
    }
    (records.into_iter().map(|(_, r)| r).collect(), liveness)
}

/// The key columns a record's row is stored with, beside its body: `(lobby, session,
/// kind, game_no)`, the same in SQLite and PostgreSQL. Compaction reads them back
/// with [`row_key_of`] instead of decoding bodies.
pub(crate) fn key_columns(key: RowKey) -> (Option<i64>, Option<i64>, &'static str, Option<i64>) {
    let id = Some(key.id as i64);
    let (lobby, session) = match key.kind {
        // A profile's rows keep its id in the session column (never read as one).
        // A game's rows (history) keep its id's number there too, and when it finished
        // in `game_no`.
        RowKind::Session
        | RowKind::SessionGone
        | RowKind::Profile
        | RowKind::ProfileGone
        | RowKind::Game => (None, id),
        RowKind::Lobby | RowKind::Move | RowKind::LobbyGone => (id, None),
    };
    let game_no = matches!(key.kind, RowKind::Lobby | RowKind::Move | RowKind::Game)
        .then_some(key.game_no as i64);
    (lobby, session, key.kind.name(), game_no)
}

/// A row's key from its stored columns ([`key_columns`]); `None` for a kind this build
/// does not know (compaction keeps such a row).
pub(crate) fn row_key_of(
    kind: &str,
    lobby: Option<i64>,
    session: Option<i64>,
    game_no: Option<i64>,
) -> Option<RowKey> {
    let kind = RowKind::from_name(kind)?;
    let id = match kind {
        RowKind::Session
        | RowKind::SessionGone
        | RowKind::Profile
        | RowKind::ProfileGone
        | RowKind::Game => session,
        _ => lobby,
    };
    Some(RowKey {
        kind,
        id: id.unwrap_or_default() as u64,
        game_no: game_no.unwrap_or_default() as u64,
    })
}
