//! A fuzzer of the HTTP head reader: random byte streams, cut into random chunks, go
//! through the server's own `read_head` and then the same parse, routing and upgrade
//! policy `http.rs` applies. Nothing panics, nothing is read past `HEAD_BYTES_MAX`, and
//! every stream ends in a response (a status) or a silent close.

use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_lite::io::AsyncRead;
use proptest::prelude::*;
use wizard_core::shell::upgrade::{Route, UpgradeRequest, check_upgrade, route};
use wizard_core::vocabulary::config::Config;
use wizard_server::head::{HEAD_BYTES_MAX, HEADERS_MAX, HeadError, read_head};

/// Hands out `chunks` one read at a time, then the end of the stream; counts the bytes
/// the reader took.
struct Chunks {
    chunks: Vec<Vec<u8>>,
    next: usize,
    offset: usize,
    taken: usize,
}

impl AsyncRead for Chunks {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        let me = &mut *self;
        let Some(chunk) = me.chunks.get(me.next) else {
            return Poll::Ready(Ok(0));
        };
        let rest = &chunk[me.offset..];
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        me.offset += n;
        if me.offset == chunk.len() {
            me.next += 1;
            me.offset = 0;
        }
        me.taken += n;
        Poll::Ready(Ok(n))
    }
}

/// How the server ends a stream: a status, an upgrade (101), or a silent close.
#[derive(Debug, PartialEq, Eq)]
enum End {
    Status(u16),
    Close,
}

fn serve(bytes: Vec<Vec<u8>>) -> (End, usize) {
    let mut reader = Chunks {
        chunks: bytes,
        next: 0,
        offset: 0,
        taken: 0,
    };
    let long = Duration::from_secs(30);
    let result = smol::block_on(read_head(&mut reader, long, long, || ()));
    let end = match result {
        Err(e) => e
            .response()
            .map_or(End::Close, |(status, _)| End::Status(status)),
        Ok(head) => {
            let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
            let mut request = httparse::Request::new(&mut headers);
            match request.parse(head.bytes()) {
                Ok(httparse::Status::Complete(_)) => {}
                other => panic!("read_head ended a head httparse does not: {other:?}"),
            }
            let (method, path) = (request.method.unwrap_or(""), request.path.unwrap_or(""));
            let target = route(method, path);
            match target {
                Route::PlayerWs | Route::AiWs => {
                    let pairs = request.headers.iter().map(|h| (h.name, h.value));
                    let peer = IpAddr::from([127, 0, 0, 1]);
                    let mut upgrade = UpgradeRequest::from_headers(path, peer, pairs);
                    upgrade.http_1_0 = request.version == Some(0);
                    match check_upgrade(&Config::default(), &upgrade) {
                        Ok(_) => End::Status(101),
                        Err(reject) => End::Status(reject.status),
                    }
                }
                _ => End::Status(200),
            }
        }
    };
    (end, reader.taken)
}

fn fragment() -> impl Strategy<Value = Vec<u8>> {
    let words: Vec<&'static [u8]> = vec![
        b"GET ",
        b"HEAD ",
        b"POST ",
        b"/ws",
        b"/health",
        b"/ready",
        b" HTTP/1.1",
        b" HTTP/1.0",
        b"\r\n",
        b"\n",
        b"\r",
        b"Upgrade: websocket",
        b"Connection: Upgrade",
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        b"Sec-WebSocket-Key: x",
        b"Sec-WebSocket-Version: 13",
        b"X-Forwarded-For: 1.2.3.4",
        b": ",
        b" ",
        b"\0",
    ];
    prop_oneof![
        3 => proptest::sample::select(words).prop_map(<[u8]>::to_vec),
        1 => proptest::collection::vec(any::<u8>(), 0..64),
        1 => (1usize..3000).prop_map(|n| vec![b'a'; n]),
    ]
}

fn stream() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop_oneof![
        proptest::collection::vec(fragment(), 0..40),
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..2048), 0..8),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_streams_end_in_a_response_or_a_close(chunks in stream()) {
        let total: usize = chunks.iter().map(Vec::len).sum();
        let (end, taken) = serve(chunks);
        prop_assert!(taken <= HEAD_BYTES_MAX, "read {taken} bytes");
        prop_assert!(taken <= total);
        if let End::Status(status) = end {
            prop_assert!([101, 200, 400, 403, 404, 426, 431].contains(&status), "{status}");
        }
    }
}

/// The cases the fuzzer must be able to reach, written out.
#[test]
fn known_streams() {
    let one = |bytes: &[u8]| serve(vec![bytes.to_vec()]).0;
    assert_eq!(one(b"GET /health HTTP/1.1\n\n"), End::Status(200));
    assert_eq!(one(b"GET /health HTTP/1.1\r\n"), End::Close);
    assert_eq!(one(b"\x16\x03\x01"), End::Status(400));
    // A method token that never ends is too large, not malformed.
    assert_eq!(one(&vec![b'a'; HEAD_BYTES_MAX + 10]), End::Status(431));
    let long = [
        b"GET / HTTP/1.1\r\nX: ".as_slice(),
        &vec![b'a'; HEAD_BYTES_MAX],
    ]
    .concat();
    assert_eq!(one(&long), End::Status(431));
    let good = b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    assert_eq!(one(good), End::Status(101));
    assert_eq!(one(b""), End::Close);
    assert_eq!(HeadError::Gone.response(), None);
}
