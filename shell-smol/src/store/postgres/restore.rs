//! The PostgreSQL store's restore: this shard's records streamed out of the table and
//! decoded on the other cores while they arrive, counted live and dead, and the last
//! sequence number the shard used.

use postgres::Client;
use wizard_core::machine::records::Record;
use wizard_core::machine::records::liveness::{Liveness, RowCount};

use super::super::StoreError;
use super::super::pg_copy::{self as copy, CopyError};
use super::super::rows::{counted, decode_in_batches};
use super::connection::pg;

/// A shard's records as the store opens it.
#[derive(Debug)]
pub(super) struct Restored {
    /// Every record, oldest first.
    pub(super) records: Vec<Record>,
    /// Live and dead rows, counted as the writer goes on counting them.
    pub(super) liveness: Liveness<RowCount>,
    /// The highest sequence number of the shard in the table (0 for none).
    pub(super) last_seq: u64,
}

/// Reads shard `shard`'s records (this process holds its lock); `shown` names the
/// store in errors.
pub(super) fn read_shard(
    client: &mut Client,
    shard: &str,
    shown: &str,
) -> Result<Restored, StoreError> {
    let records = load(client, shard, shown)?;
    let last_seq = records.last().map_or(0, |(seq, _)| *seq);
    // A row past the last one read cannot exist (this process holds the lock), but
    // numbering after the table's maximum costs one query and rules it out.
    let max_seq = max_seq(client, shard).map_err(pg("cannot read", shown))?;
    let (records, liveness) = counted(records);
    Ok(Restored {
        records,
        liveness,
        last_seq: last_seq.max(max_seq),
    })
}

/// The highest sequence number of shard `shard` in the table.
pub(super) fn max_seq(client: &mut Client, shard: &str) -> Result<u64, postgres::Error> {
    let max: i64 = client
        .query_one(
            "SELECT COALESCE(MAX(seq), 0) FROM wizard_records WHERE shard = $1",
            &[&shard],
        )?
        .get(0);
    Ok(max as u64)
}

/// This shard's records with their sequence numbers, oldest first: streamed (rows
/// arrive while earlier ones are decoded on the other cores) as `COPY ... TO STDOUT` in
/// PostgreSQL's binary format, which hands over the bytes as they come: a `Row` a
/// record (`query_raw`) cost about three times as much CPU as SQLite's read
/// (docs/BENCHMARKS.md, "From PostgreSQL").
fn load(client: &mut Client, shard: &str, shown: &str) -> Result<Vec<(u64, Record)>, StoreError> {
    let failed = pg("cannot read", shown);
    // COPY takes no parameters: the shard goes in as a literal (one character of the
    // shard alphabet or nothing; quoted and its quotes doubled all the same).
    let query = format!(
        "COPY (SELECT seq, body FROM wizard_records WHERE shard = '{}' AND kind <> 'game' ORDER BY seq) \
         TO STDOUT (FORMAT binary)",
        shard.replace('\'', "''")
    );
    let mut reader = client.copy_out(query.as_str()).map_err(&failed)?;
    let bad = |e: CopyError| StoreError(format!("cannot read {shown}: {e}"));
    copy::read_header(&mut reader).map_err(bad)?;
    let mut body = Vec::new();
    decode_in_batches(shown, |batch| {
        let Some(seq) = copy::read_row(&mut reader, &mut body).map_err(bad)? else {
            return Ok(false);
        };
        let text = std::str::from_utf8(&body)
            .map_err(|e| StoreError(format!("cannot read {shown}: record {seq}: {e}")))?;
        batch.push(seq, text);
        Ok(true)
    })
}
