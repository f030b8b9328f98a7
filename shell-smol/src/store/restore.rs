//! The SQLite store's restore at its open: what the journal a crashed process left
//! holds beyond SQLite's `folded_seq` folded in (as far as it runs on without a gap),
//! synced and deleted, then every record read back in order ([`super::sqlite`] says
//! why).

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension as _};
use tracing::{info, warn};
use wizard_core::machine::records::Record;
use wizard_core::machine::records::liveness::RowKey;

use super::StoreError;
use super::fold::{checkpoint, insert};
use super::journal;
use super::rows::decode_in_batches;
use super::sqlite::sql;

fn meta(conn: &Connection, key: &str) -> rusqlite::Result<Option<u64>> {
    conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| {
        r.get::<_, i64>(0)
    })
    .optional()
    .map(|v| v.map(|v| v as u64))
}

/// Folds into SQLite what the journal holds beyond SQLite's `folded_seq`, as far as it
/// runs on without a gap, syncs, and deletes the journal. Returns the next sequence
/// number and the number of the journal generation to write next.
pub(super) fn recover(conn: &mut Connection, path: &Path) -> Result<(u64, u64), StoreError> {
    let (folded_seq, journal_from) = folded(conn, path)?;
    let generations = journal::generations(path).map_err(|e| {
        StoreError(format!(
            "cannot list the journal of {}: {e}",
            path.display()
        ))
    })?;
    let tail = read_tail(&generations, journal_from, folded_seq + 1)?;
    if let Some(why) = &tail.cut {
        // Only a power loss or a damaged disk leaves this; what follows is dropped.
        warn!(store = %path.display(), why = %why, kept = tail.rows.len(), "The store's journal is cut");
    }
    let generation = generations
        .last()
        .map_or(journal_from, |(n, _)| (n + 1).max(journal_from))
        .max(1);
    let rows = tail
        .rows
        .iter()
        .map(|(seq, key, body)| (*seq, *key, body.as_bytes()));
    insert(conn, rows, generation).map_err(sql("cannot fold the journal into", path))?;
    checkpoint(conn).map_err(sql("cannot sync", path))?;
    for (_, file) in &generations {
        std::fs::remove_file(file)
            .map_err(|e| StoreError(format!("cannot delete {}: {e}", file.display())))?;
    }
    if !tail.rows.is_empty() {
        info!(store = %path.display(), records = tail.rows.len(), "Folded the journal left by the last process");
    }
    Ok((tail.next_seq, generation))
}

/// How far SQLite holds the journal: the last sequence number folded, and the first
/// generation not folded.
fn folded(conn: &Connection, path: &Path) -> Result<(u64, u64), StoreError> {
    // A file written before the journal existed has no `folded_seq`: everything in it
    // was committed to SQLite directly.
    let folded_seq = match meta(conn, "folded_seq").map_err(sql("cannot read", path))? {
        Some(seq) => seq,
        None => conn
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM records", [], |r| {
                r.get::<_, i64>(0)
            })
            .map_err(sql("cannot read", path))? as u64,
    };
    // Generations below it were folded before (one left behind, or brought back by a
    // power loss after its deletion, is stale).
    let journal_from = meta(conn, "journal_from")
        .map_err(sql("cannot read", path))?
        .unwrap_or(0);
    Ok((folded_seq, journal_from))
}

/// The journal's rows SQLite does not hold yet, read back from its generations.
#[derive(Debug)]
struct Tail {
    /// Each row's sequence number, key and body, in order.
    rows: Vec<(u64, RowKey, String)>,
    /// The sequence number after the last row.
    next_seq: u64,
    /// Why the journal stops short of its end, where it does (a gap, or a cut frame).
    cut: Option<String>,
}

/// Reads the rows from `next_seq` on out of the `generations` from `journal_from` on,
/// as far as they run on without a gap.
fn read_tail(
    generations: &[(u64, PathBuf)],
    journal_from: u64,
    mut next_seq: u64,
) -> Result<Tail, StoreError> {
    let mut rows = Vec::new();
    let mut cut: Option<String> = None;
    for (number, file) in generations.iter().filter(|(n, _)| *n >= journal_from) {
        if cut.is_some() {
            break;
        }
        let bytes = std::fs::read(file)
            .map_err(|e| StoreError(format!("cannot read {}: {e}", file.display())))?;
        let contents = journal::read(&bytes);
        for (seq, body) in contents.rows {
            if seq < next_seq {
                continue;
            }
            if seq > next_seq {
                cut = Some(format!(
                    "generation {number} jumps from record {next_seq} to {seq}"
                ));
                break;
            }
            let record = Record::decode(&body)
                .map_err(|e| StoreError(format!("{} record {seq}: {e}", file.display())))?;
            rows.push((seq, record.row_key(), body));
            next_seq += 1;
        }
        if contents.torn_bytes > 0 && cut.is_none() {
            cut = Some(format!(
                "generation {number} ends in {} bytes that are no whole record",
                contents.torn_bytes
            ));
        }
    }
    Ok(Tail {
        rows,
        next_seq,
        cut,
    })
}

/// Every record with its sequence number, oldest first. This thread reads the rows in
/// order, in batches that the other cores decode while it reads the next (a restart's
/// restore waits for it: 1.8 million records for 10 000 games). At most two batches
/// per decoding thread wait for one.
pub(super) fn load(conn: &Connection, path: &Path) -> Result<Vec<(u64, Record)>, StoreError> {
    let mut statement = conn
        .prepare("SELECT seq, body FROM records ORDER BY seq")
        .map_err(sql("cannot read", path))?;
    let mut rows = statement.query([]).map_err(sql("cannot read", path))?;
    let failed = sql("cannot read", path);
    let at = path.display().to_string();
    decode_in_batches(&at, |batch| {
        let Some(row) = rows.next().map_err(&failed)? else {
            return Ok(false);
        };
        let seq = row.get::<_, i64>(0).map_err(&failed)? as u64;
        let body = row.get_ref(1).map_err(&failed)?;
        let body = body.as_str().map_err(|e| failed(e.into()))?;
        batch.push(seq, body);
        Ok(true)
    })
}
