//! Reading one HTTP request head under a size limit and two time limits, with the end
//! of the head found by `httparse` itself (so bare line feeds end a head as CRLF does,
//! and a malformed head is refused as soon as it is malformed, not at the timeout). A
//! head may start with one blank line (RFC 9112 section 2.2); a second one is no
//! request at all, refused at once (`httparse` would skip blank lines for ever).
//!
//! [`read_head`] is generic over the reader so that the fuzzer in the tests drives the
//! same code with random byte streams; [`head_end`] is the pure step it repeats.

use std::time::{Duration, Instant};

use async_io::Timer;
use futures_lite::io::{AsyncRead, AsyncReadExt};
use futures_lite::{FutureExt, future};

/// Largest request head accepted (request line and headers).
pub const HEAD_BYTES_MAX: usize = 8 * 1024;
/// Headers parsed per request at most.
pub const HEADERS_MAX: usize = 32;

/// Why reading a request head stopped without a head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadError {
    /// Not one byte within `FIRST_BYTE_TIMEOUT`.
    FirstByteTimeout,
    /// No complete head within `HANDSHAKE_TIMEOUT`.
    Timeout,
    /// More than [`HEAD_BYTES_MAX`] without the end of the head.
    TooLarge,
    /// More than [`HEADERS_MAX`] headers.
    TooManyHeaders,
    /// Not an HTTP/1.x request head.
    Malformed,
    /// The peer went away or the socket failed.
    Gone,
}

impl HeadError {
    /// The response the client gets: a status and a body, or `None` for a silent
    /// close (nobody is listening, or nothing was asked).
    pub fn response(self) -> Option<(u16, &'static str)> {
        match self {
            HeadError::TooLarge => Some((431, "request head too large\n")),
            HeadError::TooManyHeaders => Some((431, "too many headers\n")),
            HeadError::Malformed => Some((400, "bad request\n")),
            HeadError::FirstByteTimeout | HeadError::Timeout | HeadError::Gone => None,
        }
    }
}

/// A complete head: the bytes read (the head and whatever followed it) and the head's
/// length.
#[derive(Debug)]
pub struct Head {
    pub buf: Vec<u8>,
    pub len: usize,
}

impl Head {
    /// The head's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    /// What followed the head (the start of a websocket's first frames).
    pub fn rest(&self) -> &[u8] {
        self.buf.get(self.len..).unwrap_or(&[])
    }
}

/// Where the head in `buf` ends: `Ok(Some(len))` when complete, `Ok(None)` when more
/// is needed, or why it can never be one.
pub fn head_end(buf: &[u8]) -> Result<Option<usize>, HeadError> {
    let after_one_blank = buf
        .strip_prefix(b"\r\n")
        .or_else(|| buf.strip_prefix(b"\n"))
        .unwrap_or(buf);
    if after_one_blank.starts_with(b"\n") || after_one_blank.starts_with(b"\r\n") {
        return Err(HeadError::Malformed);
    }
    let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
    match httparse::Request::new(&mut headers).parse(buf) {
        Ok(httparse::Status::Complete(len)) => Ok(Some(len)),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => Err(HeadError::TooManyHeaders),
        Err(_) => Err(HeadError::Malformed),
    }
}

/// Reads until the end of a request head: the first byte within `first_byte`, the
/// whole head within `whole`, at most [`HEAD_BYTES_MAX`] bytes in all; `slow` runs
/// once, the first time part of the head is in and the rest is not (an honest client
/// sends its head whole: the shell tells the door, which cuts such a socket first).
pub async fn read_head(
    mut reader: impl AsyncRead + Unpin,
    first_byte: Duration,
    whole: Duration,
    slow: impl FnOnce(),
) -> Result<Head, HeadError> {
    let until = Instant::now() + whole;
    let mut buf = vec![0u8; HEAD_BYTES_MAX];
    let first = async {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => Err(HeadError::Gone),
            Ok(n) => Ok(n),
        }
    };
    let mut filled = first
        .or(async {
            Timer::after(first_byte.min(whole)).await;
            Err(HeadError::FirstByteTimeout)
        })
        .await?;
    let mut slow = Some(slow);
    let rest = async {
        loop {
            let seen = buf.get(..filled).unwrap_or(&[]);
            if let Some(len) = head_end(seen)? {
                buf.truncate(filled);
                return Ok(Head { buf, len });
            }
            let Some(free) = buf.get_mut(filled..).filter(|b| !b.is_empty()) else {
                return Err(HeadError::TooLarge);
            };
            // Until the head is known to be slow, a read that would wait says so first.
            let read = match slow.take() {
                None => reader.read(free).await,
                Some(slow) => match future::poll_once(reader.read(free)).await {
                    Some(read) => read,
                    None => {
                        slow();
                        reader.read(free).await
                    }
                },
            };
            match read {
                Ok(0) | Err(_) => return Err(HeadError::Gone),
                Ok(n) => filled += n,
            }
        }
    };
    rest.or(async {
        Timer::at(until).await;
        Err(HeadError::Timeout)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_end_where_httparse_says() {
        let crlf = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nrest";
        assert_eq!(head_end(crlf), Ok(Some(crlf.len() - 4)));
        let lf = b"GET /health HTTP/1.1\nHost: x\n\nrest";
        assert_eq!(head_end(lf), Ok(Some(lf.len() - 4)));
        assert_eq!(head_end(b"GET /health HTTP/1.1\r\nHost"), Ok(None));
        assert_eq!(
            head_end(b"\x16\x03\x01 tls hello"),
            Err(HeadError::Malformed)
        );
        let many = format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            "A: b\r\n".repeat(HEADERS_MAX + 1)
        );
        assert_eq!(head_end(many.as_bytes()), Err(HeadError::TooManyHeaders));
    }

    #[test]
    fn one_blank_line_may_come_first_and_two_are_no_request() {
        assert_eq!(head_end(b"\r\nGET / HTTP/1.1\r\n\r\n"), Ok(Some(20)));
        assert_eq!(head_end(b"\nGET / HTTP/1.1\n\n"), Ok(Some(17)));
        assert_eq!(head_end(b"\r\n"), Ok(None));
        assert_eq!(head_end(b"\r\n\r"), Ok(None));
        for blank in [
            &b"\r\n\r\n"[..],
            b"\n\n",
            b"\r\n\n",
            b"\n\r\nGET / HTTP/1.1\r\n\r\n",
        ] {
            assert_eq!(head_end(blank), Err(HeadError::Malformed), "{blank:?}");
        }
    }
}
