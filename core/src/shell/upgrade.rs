//! HTTP routing and the websocket upgrade policy, as pure functions over a parsed request.
//!
//! The shell parses the request head (with a real parser, under its own size and time
//! limits) and asks [`route`] where it goes; for the two websocket routes it asks
//! [`check_upgrade`] whether the upgrade is allowed and which client address the per-IP
//! limits should count. This module decides; it reads no socket and writes no response.
//!
//! The rules (PROTOCOL.md section 1):
//! - `/internal/ai` is refused with 403 when the request carries any forwarding header
//!   (`X-Forwarded-For`, `Forwarded`, `Via`: a proxy in front always adds one, so the
//!   route is unreachable through it), and when `Authorization: Bearer <secret>` does
//!   not match `AI_SHARED_SECRET` (compared in constant time; an empty secret disables
//!   the check).
//! - `/ws` is refused with 403 when `ALLOWED_ORIGINS` is set and the `Origin` header is
//!   not in it. A request without `Origin` is let through: browsers always send it, and
//!   a program that does not is free to send any value, so demanding it protects nothing.
//! - `/ws/<id>` (PROTOCOL.md section 6.3) is `/ws` on a server whose `SHARD_ID` is
//!   `<id>`; another shard's id is refused with 421 (Misdirected Request: the proxy in
//!   front sent it to the wrong server), anything else with 404, as is every `/ws/...`
//!   on a server without `SHARD_ID`.
//! - A handshake that repeats a header which may appear once (`Host`,
//!   `Sec-WebSocket-Key`, `Sec-WebSocket-Version`, `Origin`, `Authorization`: RFC 6455
//!   section 11.3, RFC 9110 and RFC 6454) is refused with 400: two keys or two origins
//!   leave it open which one was checked. `Upgrade`, `Connection` and
//!   `X-Forwarded-For` are lists, which HTTP lets a sender split over several lines.
//! - The client address is the TCP peer, unless the peer is in `TRUSTED_PROXIES`: then
//!   it is the right-most `X-Forwarded-For` entry that is not itself a trusted proxy.

use std::net::{IpAddr, SocketAddr};

use crate::vocabulary::config::Config;
use crate::vocabulary::io::ConnKind;
use crate::vocabulary::rng::constant_time_eq;
use crate::vocabulary::shard::ShardId;

/// Where a request goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route<'a> {
    /// `GET /` or `/index.html`: the web client's page.
    Index,
    /// `GET /<name>`: a static file of the web client; the shell knows which exist.
    /// `name` is a single path segment of `[A-Za-z0-9._-]` not starting with a dot.
    Asset(&'a str),
    /// `GET /health`.
    Health,
    /// `GET /metrics`.
    Metrics,
    /// `GET /ready` (PROTOCOL.md section 6.2).
    Ready,
    /// `GET /ws`: a player's websocket.
    PlayerWs,
    /// `GET /ws/<id>`: a player's websocket on shard `id` (one path segment, not
    /// checked here: [`check_upgrade`] compares it with `SHARD_ID`).
    ShardWs(&'a str),
    /// `GET /internal/ai`: the AI service's websocket.
    AiWs,
    /// `GET /leaderboard` (PROTOCOL.md 7.3).
    Leaderboard,
    /// `GET /profiles/<id>` (PROTOCOL.md 7.1): one path segment, looked up as given.
    Profile(&'a str),
    /// `GET /games/<id>` (PROTOCOL.md 7.4): a finished game, one path segment, looked
    /// up as given.
    Game(&'a str),
    /// A fixed route with a method it does not serve (405).
    MethodNotAllowed,
    /// Anything else (404).
    NotFound,
}

impl Route<'_> {
    /// Whether this route may be served from a reserve slot (see
    /// [`crate::shell::door`]): the probes an orchestrator needs.
    pub fn is_probe(&self) -> bool {
        matches!(self, Route::Health | Route::Metrics | Route::Ready)
    }
}

/// Longest asset name accepted by [`route`].
pub const ASSET_NAME_CHARS_MAX: usize = 64;

/// How [`route`] matches a path (the query string removed) against a [`RouteSpec`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathPattern {
    /// Exactly this path.
    Exact(&'static str),
    /// This prefix, then one non-empty path segment: the route's parameter.
    Segment(&'static str),
    /// `/`, then the name of a static file (the shell knows which exist): one segment of
    /// `[A-Za-z0-9._-]`, at most [`ASSET_NAME_CHARS_MAX`] long, not starting with a dot.
    File,
}

impl PathPattern {
    /// The parameter of a matching path (empty for an exact path), or `None`.
    fn matches<'a>(&self, path: &'a str) -> Option<&'a str> {
        match *self {
            PathPattern::Exact(p) => (path == p).then_some(""),
            PathPattern::Segment(prefix) => path
                .strip_prefix(prefix)
                .filter(|id| !id.is_empty() && !id.contains('/')),
            PathPattern::File => path.strip_prefix('/').filter(|name| is_asset_name(name)),
        }
    }
}

impl std::fmt::Display for PathPattern {
    /// `/health`, `/ws/{id}`, `/{file}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathPattern::Exact(p) => f.write_str(p),
            PathPattern::Segment(prefix) => write!(f, "{prefix}{{id}}"),
            PathPattern::File => f.write_str("/{file}"),
        }
    }
}

/// The methods a route serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Methods {
    /// `GET` and `HEAD` (a plain HTTP route; `HEAD` is served like `GET`).
    Read,
    /// `GET` only (a websocket route).
    Get,
}

/// One route of the server.
#[derive(Clone, Copy, Debug)]
pub struct RouteSpec {
    pub pattern: PathPattern,
    pub methods: Methods,
    /// The [`Route`] of a request that matched, from the path's parameter.
    pub to: for<'a> fn(&'a str) -> Route<'a>,
}

/// Every route the server serves, in the order [`route`] tries them: whatever is not
/// here is 404. Anything that routes requests in front of the server (the proxy of
/// `deploy/Caddyfile`, its test `shell-smol/tests/it/proxy/routes.rs`) is checked
/// against this list, so a route added here cannot be forgotten there.
pub const ROUTES: &[RouteSpec] = &[
    RouteSpec {
        pattern: PathPattern::Exact("/"),
        methods: Methods::Read,
        to: |_| Route::Index,
    },
    RouteSpec {
        pattern: PathPattern::Exact("/index.html"),
        methods: Methods::Read,
        to: |_| Route::Index,
    },
    RouteSpec {
        pattern: PathPattern::Exact("/health"),
        methods: Methods::Read,
        to: |_| Route::Health,
    },
    RouteSpec {
        pattern: PathPattern::Exact("/metrics"),
        methods: Methods::Read,
        to: |_| Route::Metrics,
    },
    RouteSpec {
        pattern: PathPattern::Exact("/ready"),
        methods: Methods::Read,
        to: |_| Route::Ready,
    },
    RouteSpec {
        pattern: PathPattern::Exact("/ws"),
        methods: Methods::Get,
        to: |_| Route::PlayerWs,
    },
    RouteSpec {
        pattern: PathPattern::Segment("/ws/"),
        methods: Methods::Get,
        to: |id| Route::ShardWs(id),
    },
    RouteSpec {
        pattern: PathPattern::Exact("/internal/ai"),
        methods: Methods::Get,
        to: |_| Route::AiWs,
    },
    RouteSpec {
        pattern: PathPattern::Exact("/leaderboard"),
        methods: Methods::Read,
        to: |_| Route::Leaderboard,
    },
    RouteSpec {
        pattern: PathPattern::Segment("/profiles/"),
        methods: Methods::Read,
        to: |id| Route::Profile(id),
    },
    RouteSpec {
        pattern: PathPattern::Segment("/games/"),
        methods: Methods::Read,
        to: |id| Route::Game(id),
    },
    // Last: the fixed names above are not files.
    RouteSpec {
        pattern: PathPattern::File,
        methods: Methods::Read,
        to: |name| Route::Asset(name),
    },
];

/// Routes a request line through [`ROUTES`]: the first whose pattern matches the path
/// decides. The query string is ignored. A method the route does not serve gets
/// [`Route::MethodNotAllowed`], except on [`PathPattern::File`]: whether a file exists is
/// the shell's business, so other methods get 404 there.
pub fn route<'a>(method: &str, path: &'a str) -> Route<'a> {
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let Some((spec, param)) = ROUTES
        .iter()
        .find_map(|spec| Some((spec, spec.pattern.matches(path)?)))
    else {
        return Route::NotFound;
    };
    let allowed = match spec.methods {
        Methods::Read => method == "GET" || method == "HEAD",
        Methods::Get => method == "GET",
    };
    match (allowed, spec.pattern) {
        (true, _) => (spec.to)(param),
        (false, PathPattern::File) => Route::NotFound,
        (false, _) => Route::MethodNotAllowed,
    }
}

fn is_asset_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= ASSET_NAME_CHARS_MAX
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// What [`check_upgrade`] needs from a websocket upgrade request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpgradeRequest<'a> {
    /// The request target, query string included or not.
    pub path: &'a str,
    /// The TCP peer's address; `None` only in tests that do not care.
    pub peer: Option<IpAddr>,
    /// `Origin`; `Some("")` when present but not UTF-8.
    pub origin: Option<&'a str>,
    /// `Authorization`; `Some("")` when present but not UTF-8.
    pub authorization: Option<&'a str>,
    /// Every `X-Forwarded-For` value in order of appearance (several headers form one
    /// list); a value that is not UTF-8 is kept as `""`.
    pub x_forwarded_for: Vec<&'a str>,
    /// Whether a `Forwarded` header is present.
    pub forwarded: bool,
    /// Whether a `Via` header is present.
    pub via: bool,
    /// Whether `Upgrade` names `websocket` and `Connection` names `upgrade`.
    pub upgrade_websocket: bool,
    /// `Sec-WebSocket-Key`.
    pub websocket_key: Option<&'a str>,
    /// `Sec-WebSocket-Version`.
    pub websocket_version: Option<&'a str>,
    /// The request line said `HTTP/1.0` (RFC 6455 section 4.1 asks for 1.1 or later);
    /// the shell sets it from its parser, [`UpgradeRequest::from_headers`] cannot know.
    pub http_1_0: bool,
    /// The first header that may appear once but came more than once.
    pub duplicate: Option<Singleton>,
}

/// A header a handshake may carry at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Singleton {
    Host,
    WebSocketKey,
    WebSocketVersion,
    Origin,
    Authorization,
}

impl Singleton {
    /// The header's name and the 400 for a request that repeats it.
    fn reject(self) -> Reject {
        let reason = match self {
            Singleton::Host => "more than one Host header",
            Singleton::WebSocketKey => "more than one Sec-WebSocket-Key header",
            Singleton::WebSocketVersion => "more than one Sec-WebSocket-Version header",
            Singleton::Origin => "more than one Origin header",
            Singleton::Authorization => "more than one Authorization header",
        };
        Reject {
            status: 400,
            reason,
        }
    }
}

impl<'a> UpgradeRequest<'a> {
    /// Collects the relevant headers (names compared case-insensitively, as HTTP says)
    /// from `headers`, e.g. `httparse`'s parsed list.
    pub fn from_headers(
        path: &'a str,
        peer: IpAddr,
        headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> UpgradeRequest<'a> {
        let mut request = UpgradeRequest {
            path,
            peer: Some(peer),
            ..UpgradeRequest::default()
        };
        let (mut upgrade, mut connection) = (false, false);
        let (mut host, mut duplicate) = (None, None);
        // Keeps the first of a header that may appear once, and notes a second.
        let mut once = |slot: &mut Option<&'a str>, text: &'a str, which: Singleton| match slot {
            Some(_) => duplicate = duplicate.or(Some(which)),
            None => *slot = Some(text),
        };
        for (name, value) in headers {
            let text = std::str::from_utf8(value).unwrap_or("").trim();
            let is = |known: &str| name.eq_ignore_ascii_case(known);
            if is("host") {
                once(&mut host, text, Singleton::Host);
            } else if is("origin") {
                once(&mut request.origin, text, Singleton::Origin);
            } else if is("authorization") {
                once(&mut request.authorization, text, Singleton::Authorization);
            } else if is("x-forwarded-for") {
                request.x_forwarded_for.push(text);
            } else if is("forwarded") {
                request.forwarded = true;
            } else if is("via") {
                request.via = true;
            } else if is("upgrade") {
                upgrade |= has_token(text, "websocket");
            } else if is("connection") {
                connection |= has_token(text, "upgrade");
            } else if is("sec-websocket-key") {
                once(&mut request.websocket_key, text, Singleton::WebSocketKey);
            } else if is("sec-websocket-version") {
                once(
                    &mut request.websocket_version,
                    text,
                    Singleton::WebSocketVersion,
                );
            }
        }
        request.upgrade_websocket = upgrade && connection;
        request.duplicate = duplicate;
        request
    }

    /// Whether any forwarding header is present.
    pub fn is_forwarded(&self) -> bool {
        !self.x_forwarded_for.is_empty() || self.forwarded || self.via
    }
}

/// Whether the comma-separated header value `list` holds `token` (case-insensitive).
fn has_token(list: &str, token: &str) -> bool {
    list.split(',')
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Why an upgrade is refused: the HTTP status to answer with and a short reason for the
/// body and the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reject {
    pub status: u16,
    pub reason: &'static str,
}

impl std::fmt::Display for Reject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status, self.reason)
    }
}

impl std::error::Error for Reject {}

const NOT_FOUND: Reject = Reject {
    status: 404,
    reason: "not found",
};
const NOT_WEBSOCKET: Reject = Reject {
    status: 400,
    reason: "not a websocket handshake",
};
const BAD_KEY: Reject = Reject {
    status: 400,
    reason: "Sec-WebSocket-Key is not 16 bytes in base64",
};
const OLD_HTTP: Reject = Reject {
    status: 400,
    reason: "websocket handshakes need HTTP/1.1",
};
const BAD_VERSION: Reject = Reject {
    status: 426,
    reason: "websocket version 13 required",
};
const FORWARDED_AI: Reject = Reject {
    status: 403,
    reason: "forwarded requests may not open /internal/ai",
};
const BAD_SECRET: Reject = Reject {
    status: 403,
    reason: "wrong or missing AI shared secret",
};
const BAD_ORIGIN: Reject = Reject {
    status: 403,
    reason: "origin not allowed",
};
const OTHER_SHARD: Reject = Reject {
    status: 421,
    reason: "this server is another shard",
};
const NO_PEER: Reject = Reject {
    status: 400,
    reason: "no peer address",
};

/// Decides whether a websocket upgrade may go ahead: `Ok` with the route's connection
/// kind and the client address for the per-IP limits, or the HTTP status to refuse with.
///
/// Checks, in order: the path is a websocket route (404; 421 for another shard's
/// `/ws/<id>`), no header that may appear once is repeated (400), the request is a
/// websocket handshake over HTTP/1.1 with a key of 16 base64-encoded bytes (400) of
/// version 13 (426), then the route's security rule (403).
pub fn check_upgrade(
    config: &Config,
    request: &UpgradeRequest<'_>,
) -> Result<(ConnKind, IpAddr), Reject> {
    let kind = match route("GET", request.path) {
        Route::PlayerWs => ConnKind::Player,
        Route::ShardWs(id) => match (config.shard, id.parse::<ShardId>()) {
            (Some(own), Ok(id)) if id == own => ConnKind::Player,
            (Some(_), Ok(_)) => return Err(OTHER_SHARD),
            _ => return Err(NOT_FOUND),
        },
        Route::AiWs => ConnKind::Ai,
        _ => return Err(NOT_FOUND),
    };
    if let Some(header) = request.duplicate {
        return Err(header.reject());
    }
    if !request.upgrade_websocket || request.websocket_key.is_none_or(str::is_empty) {
        return Err(NOT_WEBSOCKET);
    }
    if request.http_1_0 {
        return Err(OLD_HTTP);
    }
    if !request.websocket_key.is_some_and(is_websocket_key) {
        return Err(BAD_KEY);
    }
    if request.websocket_version != Some("13") {
        return Err(BAD_VERSION);
    }
    let peer = request.peer.ok_or(NO_PEER)?.to_canonical();
    match kind {
        ConnKind::Ai | ConnKind::AiInProcess => {
            if request.is_forwarded() {
                return Err(FORWARDED_AI);
            }
            if !secret_matches(&config.ai_shared_secret, request.authorization) {
                return Err(BAD_SECRET);
            }
            Ok((kind, peer))
        }
        ConnKind::Player => {
            if !origin_allowed(&config.allowed_origins, request.origin) {
                return Err(BAD_ORIGIN);
            }
            Ok((kind, client_ip(config, peer, &request.x_forwarded_for)))
        }
    }
}

/// Whether `key` is the base64 encoding (with padding) of exactly 16 bytes, as RFC 6455
/// section 4.1 requires of `Sec-WebSocket-Key`: 22 base64 characters, the last of which
/// carries only 2 data bits (so its low 4 bits are zero), then `==`.
pub fn is_websocket_key(key: &str) -> bool {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let value = |c: u8| ALPHABET.iter().position(|&a| a == c);
    let bytes = key.as_bytes();
    let [data @ .., last, b'=', b'='] = bytes else {
        return false;
    };
    data.len() == 21
        && data.iter().all(|&c| value(c).is_some())
        && value(*last).is_some_and(|v| v & 0x0f == 0)
}

/// Whether `authorization` is `Bearer <secret>`; always true for an empty secret.
fn secret_matches(secret: &str, authorization: Option<&str>) -> bool {
    if secret.is_empty() {
        return true;
    }
    let Some((scheme, token)) = authorization.and_then(|a| a.trim().split_once(' ')) else {
        return false;
    };
    // Both comparisons run whatever the scheme, so timing says nothing about the token.
    let scheme_ok = scheme.eq_ignore_ascii_case("bearer");
    let token_ok = constant_time_eq(token.trim().as_bytes(), secret.as_bytes());
    scheme_ok & token_ok
}

/// Whether `origin` may open `/ws`: any origin when the list is empty, no origin at all
/// (not a browser), or one of the list (case-insensitive, trailing slash ignored).
fn origin_allowed(allowed: &[String], origin: Option<&str>) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let origin = origin.strip_suffix('/').unwrap_or(origin);
    allowed.is_empty() || allowed.iter().any(|a| a.eq_ignore_ascii_case(origin))
}

/// The client address for the per-IP limits: `peer`, or, when `peer` is a trusted proxy,
/// the right-most `X-Forwarded-For` entry that is not a trusted proxy.
///
/// Walking from the right, each trusted hop vouches for the entry to its left. When an
/// entry does not parse, the last trusted address is used (what that hop said is
/// garbage); when every entry is trusted, the left-most one is.
pub fn client_ip(config: &Config, peer: IpAddr, x_forwarded_for: &[&str]) -> IpAddr {
    let peer = peer.to_canonical();
    let trusted = |ip: IpAddr| config.trusted_proxies.iter().any(|c| c.contains(ip));
    if !trusted(peer) {
        return peer;
    }
    let entries = x_forwarded_for.iter().flat_map(|v| v.split(','));
    let mut client = peer;
    for entry in entries.rev() {
        let Some(ip) = parse_forwarded_ip(entry) else {
            return client;
        };
        client = ip;
        if !trusted(ip) {
            return ip;
        }
    }
    client
}

/// One `X-Forwarded-For` entry: an address, possibly with a port (`1.2.3.4:80`,
/// `[::1]:80`) or brackets.
fn parse_forwarded_ip(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    let ip = entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<SocketAddr>().ok().map(|s| s.ip()))
        .or_else(|| {
            let inner = entry.strip_prefix('[')?.strip_suffix(']')?;
            inner.parse::<IpAddr>().ok()
        })?;
    Some(ip.to_canonical())
}
