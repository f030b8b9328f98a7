//! The web client's static files over real sockets: a strong `ETag`, `304` for a
//! matching `If-None-Match`, `no-cache` (the files are not versioned), gzip only when
//! the request accepts it and decoding to the very bytes, and `HEAD` without a body.

use std::io::Read as _;
use std::net::{SocketAddr, TcpStream};

use async_io::Async;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};

use crate::client::{TestServer, bounded};

/// A response as the client saw it.
#[derive(Debug)]
struct Got {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Got {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

async fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Got {
    let mut tcp = Async::<TcpStream>::connect(addr).await.unwrap();
    let mut text = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    tcp.write_all(text.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tcp.read_to_end(&mut raw).await.unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete head");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    Got {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// Every test here opens a socket per request, a few hundred in a second or two: far
/// more than a browser and past the default `SOCKET_RATE` (20 per second and address)
/// and `SOCKET_BURST` (40; a fast machine asks faster than 1000 a second for a while).
const SOCKETS: &[(&str, &str)] = &[("SOCKET_RATE", "1000"), ("SOCKET_BURST", "1000")];

/// The files as the server embeds them.
const FILES: &[(&str, &[u8])] = &[
    ("/", include_bytes!("../../web/index.html")),
    ("/index.html", include_bytes!("../../web/index.html")),
    ("/rules", include_bytes!("../../web/rules.html")),
    ("/rules.html", include_bytes!("../../web/rules.html")),
    ("/style.css", include_bytes!("../../web/style.css")),
    ("/app.js", include_bytes!("../../web/app.js")),
    ("/net.js", include_bytes!("../../web/net.js")),
    ("/cards.js", include_bytes!("../../web/cards.js")),
    ("/alerts.js", include_bytes!("../../web/alerts.js")),
    ("/chat.js", include_bytes!("../../web/chat.js")),
];

#[test]
fn static_files_carry_a_strong_etag_and_revalidate_with_304() {
    let server = TestServer::start(SOCKETS);
    bounded(20, async {
        for (path, bytes) in FILES {
            let got = request(server.addr, "GET", path, &[]).await;
            assert_eq!(got.status, 200, "{path}");
            assert_eq!(&got.body, bytes, "{path}");
            assert_eq!(
                got.header("Content-Encoding"),
                None,
                "{path}: not asked for"
            );
            assert_eq!(got.header("Cache-Control"), Some("no-cache"), "{path}");
            assert_eq!(got.header("Vary"), Some("Accept-Encoding"), "{path}");
            let etag = got.header("ETag").expect("an ETag").to_owned();
            assert!(
                etag.starts_with('"') && etag.len() > 2,
                "{path}: strong {etag}"
            );
            // Computed once, from the content: the same on every request.
            let again = request(server.addr, "GET", path, &[]).await;
            assert_eq!(again.header("ETag"), Some(etag.as_str()), "{path}");
            for inm in [etag.clone(), format!("\"nope\", {etag}"), "*".to_owned()] {
                let cached = request(server.addr, "GET", path, &[("If-None-Match", &inm)]).await;
                assert_eq!(cached.status, 304, "{path} with {inm}");
                assert!(cached.body.is_empty(), "{path}: a 304 has no body");
                assert_eq!(cached.header("ETag"), Some(etag.as_str()), "{path}");
            }
            let stale = request(server.addr, "GET", path, &[("If-None-Match", "\"old\"")]).await;
            assert_eq!(
                (stale.status, &stale.body),
                (200, &bytes.to_vec()),
                "{path}"
            );
        }
        // Other answers stay uncacheable.
        let health = request(server.addr, "GET", "/health", &[]).await;
        assert_eq!(health.header("Cache-Control"), Some("no-store"));
        assert_eq!(health.header("ETag"), None);
    });
}

#[test]
fn static_files_are_gzipped_only_when_the_request_accepts_it() {
    let server = TestServer::start(SOCKETS);
    bounded(20, async {
        let mut gzipped = 0;
        for (path, bytes) in FILES {
            let plain = request(server.addr, "GET", path, &[]).await;
            let got = request(
                server.addr,
                "GET",
                path,
                &[("Accept-Encoding", "gzip, deflate, br")],
            )
            .await;
            assert_eq!(got.status, 200, "{path}");
            assert_eq!(got.header("Vary"), Some("Accept-Encoding"), "{path}");
            let length: usize = got.header("Content-Length").unwrap().parse().unwrap();
            assert_eq!(length, got.body.len(), "{path}");
            if got.header("Content-Encoding") == Some("gzip") {
                gzipped += 1;
                assert_eq!(
                    &gunzip(&got.body),
                    bytes,
                    "{path}: gzip decodes to the file"
                );
                assert!(got.body.len() < bytes.len(), "{path}");
                // Another representation, another strong tag; a 304 for either.
                let tag = got.header("ETag").unwrap();
                assert_ne!(Some(tag), plain.header("ETag"), "{path}");
                let cached = request(
                    server.addr,
                    "GET",
                    path,
                    &[("Accept-Encoding", "gzip"), ("If-None-Match", tag)],
                )
                .await;
                assert_eq!((cached.status, cached.header("ETag")), (304, Some(tag)));
            } else {
                assert_eq!(&got.body, bytes, "{path}");
            }
            // Refused by weight, or not named: the bytes as they are.
            for refused in ["gzip;q=0", "identity", "br"] {
                let got = request(server.addr, "GET", path, &[("Accept-Encoding", refused)]).await;
                assert_eq!(got.header("Content-Encoding"), None, "{path} {refused}");
                assert_eq!(&got.body, bytes, "{path} {refused}");
            }
        }
        // The page, the stylesheet and the scripts are all text well above the minimum.
        assert_eq!(gzipped, FILES.len());
    });
}

#[test]
fn head_of_a_static_file_sends_the_headers_without_the_body() {
    let server = TestServer::start(SOCKETS);
    bounded(20, async {
        for encoding in ["", "gzip"] {
            let get = request(
                server.addr,
                "GET",
                "/app.js",
                &[("Accept-Encoding", encoding)],
            )
            .await;
            let head = request(
                server.addr,
                "HEAD",
                "/app.js",
                &[("Accept-Encoding", encoding)],
            )
            .await;
            assert_eq!(head.status, 200);
            assert!(head.body.is_empty(), "HEAD sent {} bytes", head.body.len());
            for name in [
                "Content-Length",
                "Content-Encoding",
                "ETag",
                "Cache-Control",
                "Vary",
            ] {
                assert_eq!(head.header(name), get.header(name), "{name} ({encoding:?})");
            }
            let tag = get.header("ETag").unwrap();
            let head = request(
                server.addr,
                "HEAD",
                "/app.js",
                &[("Accept-Encoding", encoding), ("If-None-Match", tag)],
            )
            .await;
            assert_eq!((head.status, head.body.len()), (304, 0));
        }
    });
}
