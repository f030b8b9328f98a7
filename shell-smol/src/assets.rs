//! The web client's static files, embedded in the binary, and how they are served: a
//! strong `ETag` (a digest of the bytes), `304 Not Modified` for a matching
//! `If-None-Match`, and a gzip body when the request's `Accept-Encoding` allows it.
//!
//! The files are not versioned: `index.html` loads `/style.css` and `/app.js` by fixed
//! names and `app.js` imports `./net.js`, `./cards.js`, `./alerts.js`, `./chat.js`,
//! `./replay.js`, `./profile.js` and `./pages.js`, so a file's name does not change
//! when its content does, and no file may be cached as immutable (a browser would keep an old `app.js` beside a new server). Every file therefore goes out with
//! `Cache-Control: no-cache`: the browser keeps its copy but asks on every load with
//! `If-None-Match`, and gets a `304` without a body until a new build changes the file.
//! The digests and the gzip bodies are computed once, when the server starts
//! ([`prepare`]), not per request.

use std::io::Write as _;
use std::sync::LazyLock;

use sha2::{Digest as _, Sha256};

/// A static file of the web client, embedded in the binary.
#[derive(Debug)]
pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of `web/` (a unit test checks none is missing).
pub const ASSETS: &[Asset] = &[
    Asset {
        name: "index.html",
        content_type: "text/html; charset=utf-8",
        body: include_bytes!("../web/index.html"),
    },
    Asset {
        name: "rules.html",
        content_type: "text/html; charset=utf-8",
        body: include_bytes!("../web/rules.html"),
    },
    Asset {
        name: "style.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../web/style.css"),
    },
    Asset {
        name: "app.js",
        content_type: JS,
        body: include_bytes!("../web/app.js"),
    },
    Asset {
        name: "net.js",
        content_type: JS,
        body: include_bytes!("../web/net.js"),
    },
    Asset {
        name: "cards.js",
        content_type: JS,
        body: include_bytes!("../web/cards.js"),
    },
    Asset {
        name: "alerts.js",
        content_type: JS,
        body: include_bytes!("../web/alerts.js"),
    },
    Asset {
        name: "chat.js",
        content_type: JS,
        body: include_bytes!("../web/chat.js"),
    },
    Asset {
        name: "replay.js",
        content_type: JS,
        body: include_bytes!("../web/replay.js"),
    },
    Asset {
        name: "profile.js",
        content_type: JS,
        body: include_bytes!("../web/profile.js"),
    },
    Asset {
        name: "pages.js",
        content_type: JS,
        body: include_bytes!("../web/pages.js"),
    },
];

/// Other names for a file: `/rules` is the rules page's address (links use it), and
/// `/rules.html` serves the same bytes with the same tags.
pub const ALIASES: &[(&str, &str)] = &[("rules", "rules.html")];

/// Files smaller than this go out as they are: gzip's header and the client's work
/// would cost more than the bytes saved.
pub const GZIP_BYTES_MIN: usize = 1024;

/// What every static response says about caching (see the module's comment).
pub const CACHE_CONTROL: &str = "no-cache";

/// One asset ready to serve: its bytes and, where it pays, its gzip form, each with its
/// own strong `ETag` (two representations of a file are different bytes).
#[derive(Debug)]
struct Prepared {
    asset: &'static Asset,
    etag: String,
    gzip: Option<(Vec<u8>, String)>,
}

static PREPARED: LazyLock<Vec<Prepared>> =
    LazyLock::new(|| ASSETS.iter().map(prepare_one).collect());

/// Computes every file's digests and gzip body now, so that the first page load does
/// not pay for it on the games' executor.
pub fn prepare() {
    LazyLock::force(&PREPARED);
}

/// A strong entity tag: the first 128 bits of the bytes' SHA-256, quoted.
fn etag(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut tag = String::with_capacity(34);
    tag.push('"');
    for b in digest.iter().take(16) {
        tag.push_str(&format!("{b:02x}"));
    }
    tag.push('"');
    tag
}

/// Text compresses; other types (none yet) would be served as they are.
fn compressible(content_type: &str) -> bool {
    content_type.starts_with("text/")
        || content_type.starts_with("application/json")
        || content_type.starts_with("image/svg+xml")
}

fn prepare_one(asset: &'static Asset) -> Prepared {
    let gzip = (compressible(asset.content_type) && asset.body.len() >= GZIP_BYTES_MIN)
        .then(|| gzip(asset.body))
        .flatten()
        // Kept only when it is smaller.
        .filter(|g| g.len() < asset.body.len())
        .map(|g| {
            let tag = etag(&g);
            (g, tag)
        });
    Prepared {
        asset,
        etag: etag(asset.body),
        gzip,
    }
}

fn gzip(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).ok()?;
    encoder.finish().ok()
}

/// What the request says about caches and encodings.
#[derive(Clone, Copy, Debug, Default)]
pub struct Conditions<'a> {
    /// The `If-None-Match` header, as sent.
    pub if_none_match: Option<&'a str>,
    /// Whether `Accept-Encoding` allows gzip.
    pub gzip_ok: bool,
}

impl<'a> Conditions<'a> {
    /// Reads `If-None-Match` and every `Accept-Encoding` header.
    pub fn from_headers(headers: &[httparse::Header<'a>]) -> Conditions<'a> {
        let mut c = Conditions::default();
        for h in headers {
            let Ok(value) = std::str::from_utf8(h.value) else {
                continue;
            };
            if h.name.eq_ignore_ascii_case("if-none-match") {
                c.if_none_match = Some(value);
            } else if h.name.eq_ignore_ascii_case("accept-encoding") {
                c.gzip_ok |= accepts_gzip(value);
            }
        }
        c
    }
}

/// Whether an `Accept-Encoding` value lists `gzip` (or `*`) without `q=0`.
pub fn accepts_gzip(value: &str) -> bool {
    value.split(',').any(|item| {
        let mut parts = item.split(';').map(str::trim);
        let coding = parts.next().unwrap_or("");
        let named = coding.eq_ignore_ascii_case("gzip")
            || coding.eq_ignore_ascii_case("x-gzip")
            || coding == "*";
        let refused = parts.any(|p| {
            p.strip_prefix("q=")
                .or_else(|| p.strip_prefix("Q="))
                .and_then(|q| q.parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        named && !refused
    })
}

/// Whether `If-None-Match` names `tag` (weak comparison, as RFC 9110 asks for it) or is
/// `*`.
fn none_match(if_none_match: &str, tag: &str) -> bool {
    if_none_match.split(',').map(str::trim).any(|t| {
        let t = t.strip_prefix("W/").unwrap_or(t);
        t == "*" || t == tag
    })
}

/// A static file's response: the head, and the body a `GET` gets (none for a `304`).
#[derive(Debug)]
pub struct Response {
    pub head: String,
    pub body: Option<&'static [u8]>,
}

/// The response to a `GET` or `HEAD` of the file `name`; `None` when there is no such
/// file.
pub fn respond(name: &str, c: Conditions<'_>) -> Option<Response> {
    let name = ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, file)| file);
    let p: &'static Prepared = PREPARED.iter().find(|p| p.asset.name == name)?;
    // The representation the request gets: gzip when it may.
    let (body, tag, encoding) = match &p.gzip {
        Some((bytes, tag)) if c.gzip_ok => (bytes.as_slice(), tag.as_str(), Some("gzip")),
        _ => (p.asset.body, p.etag.as_str(), None),
    };
    let common =
        format!("Cache-Control: {CACHE_CONTROL}\r\nVary: Accept-Encoding\r\nConnection: close\r\n");
    if let Some(inm) = c.if_none_match {
        // The copy the client holds is still current when it names either form; the
        // `304` repeats the tag it matched, so the client's copy keeps its own tag.
        let held = [
            Some(p.etag.as_str()),
            p.gzip.as_ref().map(|(_, t)| t.as_str()),
        ]
        .into_iter()
        .flatten()
        .find(|t| none_match(inm, t));
        if let Some(held) = held {
            return Some(Response {
                head: format!("HTTP/1.1 304 Not Modified\r\nETag: {held}\r\n{common}\r\n"),
                body: None,
            });
        }
    }
    let encoding = encoding.map_or(String::new(), |e| format!("Content-Encoding: {e}\r\n"));
    Some(Response {
        head: format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\n{encoding}ETag: {tag}\r\n{common}\r\n",
            p.asset.content_type,
            body.len(),
        ),
        body: Some(body),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file added to `web/` but not to [`ASSETS`] would be a 404 in production.
    #[test]
    fn every_web_file_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            assert!(
                ASSETS.iter().any(|a| a.name == name),
                "web/{name} is not embedded in assets.rs ASSETS"
            );
        }
        for asset in ASSETS {
            assert!(!asset.body.is_empty(), "{} is empty", asset.name);
        }
        for (alias, file) in ALIASES {
            assert!(
                ASSETS.iter().any(|a| a.name == *file),
                "alias {alias}: no {file}"
            );
        }
    }

    #[test]
    fn accept_encoding_is_read_with_its_weights() {
        for (value, gzip) in [
            ("gzip", true),
            ("gzip, deflate, br", true),
            ("br;q=1.0, GZIP;q=0.5", true),
            ("*", true),
            ("identity", false),
            ("br", false),
            ("gzip;q=0", false),
            ("gzip; q=0.000, br", false),
            ("", false),
        ] {
            assert_eq!(accepts_gzip(value), gzip, "{value:?}");
        }
    }
}
