//! PostgreSQL's binary `COPY` format for rows of `(seq bigint, body text)`
//! (<https://www.postgresql.org/docs/15/sql-copy.html>, "Binary Format"), as the
//! PostgreSQL store's restore streams them ([`super::postgres`]).

use std::io::Read;

/// Why a `COPY` stream could not be read.
#[derive(Debug)]
pub(super) enum CopyError {
    Io(std::io::Error),
    /// Bytes that are not what the binary format of `(bigint, text)` rows says.
    Format(String),
}

impl std::fmt::Display for CopyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CopyError::Io(e) => write!(f, "{e}"),
            CopyError::Format(what) => write!(f, "COPY stream: {what}"),
        }
    }
}

const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";
/// A record's body larger than this is refused as damage, not read into memory.
pub(super) const BODY_BYTES_MAX: usize = 16 << 20;

fn exact<const N: usize>(r: &mut impl Read) -> Result<[u8; N], CopyError> {
    let mut b = [0u8; N];
    r.read_exact(&mut b).map_err(CopyError::Io)?;
    Ok(b)
}

/// The signature, the flags (none may be critical: bits 16 to 31) and the header
/// extension, skipped.
pub(super) fn read_header(r: &mut impl Read) -> Result<(), CopyError> {
    if &exact::<11>(r)? != SIGNATURE {
        return Err(CopyError::Format("no PGCOPY signature".into()));
    }
    let flags = u32::from_be_bytes(exact(r)?);
    if flags & 0xFFFF_0000 != 0 {
        return Err(CopyError::Format(format!("critical flags {flags:#x}")));
    }
    let extension = u32::from_be_bytes(exact(r)?);
    std::io::copy(&mut r.take(u64::from(extension)), &mut std::io::sink())
        .map_err(CopyError::Io)?;
    Ok(())
}

/// The next row's `seq`, its body in `body` (replaced); `None` at the trailer.
pub(super) fn read_row(r: &mut impl Read, body: &mut Vec<u8>) -> Result<Option<u64>, CopyError> {
    let fields = i16::from_be_bytes(exact(r)?);
    if fields == -1 {
        return Ok(None);
    }
    if fields != 2 {
        return Err(CopyError::Format(format!(
            "{fields} fields in a row, not 2"
        )));
    }
    if i32::from_be_bytes(exact(r)?) != 8 {
        return Err(CopyError::Format("seq is not an 8-byte bigint".into()));
    }
    let seq = i64::from_be_bytes(exact(r)?);
    let seq = u64::try_from(seq).map_err(|_| CopyError::Format(format!("negative seq {seq}")))?;
    let len = i32::from_be_bytes(exact(r)?);
    let len = usize::try_from(len)
        .ok()
        .filter(|&n| n <= BODY_BYTES_MAX)
        .ok_or_else(|| CopyError::Format(format!("record {seq}: body length {len}")))?;
    body.clear();
    body.resize(len, 0);
    r.read_exact(body).map_err(CopyError::Io)?;
    Ok(Some(seq))
}

#[cfg(test)]
mod tests {
    use super::{BODY_BYTES_MAX, read_header, read_row};

    fn header() -> Vec<u8> {
        let mut b = b"PGCOPY\n\xff\r\n\0".to_vec();
        b.extend(0u32.to_be_bytes());
        b.extend(4u32.to_be_bytes());
        b.extend(b"ext!");
        b
    }

    fn row(seq: i64, body: &[u8]) -> Vec<u8> {
        let mut b = 2i16.to_be_bytes().to_vec();
        b.extend(8i32.to_be_bytes());
        b.extend(seq.to_be_bytes());
        b.extend((body.len() as i32).to_be_bytes());
        b.extend(body);
        b
    }

    const TRAILER: [u8; 2] = (-1i16).to_be_bytes();

    /// Reads the whole stream: the rows, or the first error's text.
    fn read_all(bytes: &[u8]) -> Result<Vec<(u64, Vec<u8>)>, String> {
        let mut r = bytes;
        read_header(&mut r).map_err(|e| e.to_string())?;
        let mut rows = Vec::new();
        let mut body = Vec::new();
        while let Some(seq) = read_row(&mut r, &mut body).map_err(|e| e.to_string())? {
            rows.push((seq, body.clone()));
        }
        Ok(rows)
    }

    #[test]
    fn binary_copy_streams_read_as_rows_or_fail_with_the_reason() {
        let good = [
            header(),
            row(1, b"[2,\"a\"]"),
            row(7, b""),
            TRAILER.to_vec(),
        ]
        .concat();
        assert_eq!(
            read_all(&good),
            Ok(vec![(1, b"[2,\"a\"]".to_vec()), (7, Vec::new())])
        );
        let mut bad_signature = good.clone();
        bad_signature[0] = b'X';
        let mut critical = good.clone();
        critical[11] = 0x01;
        let three_fields = [header(), {
            let mut r = row(1, b"x");
            r[1] = 3;
            r
        }]
        .concat();
        let mut huge = [header(), row(3, b"")].concat();
        let at = huge.len() - 4;
        huge[at..].copy_from_slice(&((BODY_BYTES_MAX + 1) as i32).to_be_bytes());
        let cases: [(&str, Vec<u8>, &str); 7] = [
            ("signature", bad_signature, "no PGCOPY signature"),
            ("critical flags", critical, "critical flags"),
            ("three fields", three_fields, "3 fields in a row"),
            (
                "negative seq",
                [header(), row(-5, b"x")].concat(),
                "negative seq -5",
            ),
            ("oversized body", huge, "body length"),
            (
                "cut in a body",
                good[..good.len() - 6].to_vec(),
                "failed to fill whole buffer",
            ),
            (
                "no trailer",
                good[..good.len() - 2].to_vec(),
                "failed to fill whole buffer",
            ),
        ];
        for (name, bytes, expected) in cases {
            let got = read_all(&bytes);
            assert!(
                got.as_ref().is_err_and(|e| e.contains(expected)),
                "{name}: {got:?}"
            );
        }
    }
}
