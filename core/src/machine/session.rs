//! The session registry: who a player is across reconnects.
//!
//! A session has a public `player_id` (12 hex characters, shown to others) and a secret
//! token the client keeps to resume it. The registry keeps only the token's SHA-256
//! digest, never the token (so neither memory nor a store holds it): a presented token
//! is hashed, looked up by the digest's first 8 bytes and then compared in full in
//! constant time. The registry is bounded by `MAX_SESSIONS`. On a sharded server
//! (`SHARD_ID`) a token is the shard's id followed by the encoded secret bytes; the id
//! is not secret and is not part of the digest.
//!
//! The registry also keeps the index of evictable sessions, ordered by their
//! [`Evict`] class and then by when they disconnected, so that a `hello` at
//! `MAX_SESSIONS` finds the one to forget in O(log n). Which sessions are evictable,
//! and in which class, is the server's rule; the registry only keeps the index exact
//! as sessions come and go.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use rand_chacha::ChaCha12Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::vocabulary::io::ConnId;
use crate::vocabulary::limiter::TokenBucket;
use crate::vocabulary::rng::{self, TOKEN_BYTES, TOKEN_CHARS, TokenBytes};
use crate::vocabulary::shard::{SHARDED_TOKEN_CHARS, ShardId};
use crate::vocabulary::time::Time;

/// A session, numbered by the registry; never reused. Stored and printed as its bare
/// number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(pub u64);

/// A lobby, numbered by the lobby manager; never reused. Stored and printed as its bare
/// number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LobbyId(pub u64);

impl SessionId {
    /// The id the registry numbers the session after this one with.
    pub fn next(self) -> SessionId {
        SessionId(self.0 + 1)
    }
}

impl LobbyId {
    /// The id the lobby manager numbers the lobby after this one with.
    pub fn next(self) -> LobbyId {
        LobbyId(self.0 + 1)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for LobbyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

const LOCATOR_BYTES: usize = 8;
/// Length of a public player id.
pub const PLAYER_ID_CHARS: usize = 12;

/// One player's identity.
#[derive(Clone, Debug)]
pub struct Session {
    pub id: SessionId,
    pub player_id: String,
    /// SHA-256 of the token.
    digest: TokenDigest,
    /// The name last used to create or join a lobby ("" before that).
    pub name: String,
    pub lobby: Option<LobbyId>,
    /// The lobby it watches as a spectator (never together with `lobby`; only while
    /// connected: spectating is not restored).
    pub watching: Option<LobbyId>,
    /// Its `CHAT_RATE` bucket, from its first chat line on.
    pub chat_bucket: Option<TokenBucket>,
    pub conn: Option<ConnId>,
    /// When the session lost its connection (for `SESSION_TTL`).
    pub disconnected_at: Option<Time>,
    /// Its key in the evictable index, while it is in it.
    evict_key: Option<(Evict, Time)>,
    /// The code of its lobby when the restore had to set that lobby's game aside (its
    /// records could not be replayed): told once, at its next `hello`.
    pub lost_lobby: Option<String>,
    /// The profile it is signed in with (by its `hello`'s `profile_key` or
    /// `create_profile`); not recorded: a client signs in again at every `hello`.
    pub profile: Option<String>,
}

/// How readily a disconnected session gives way to a new player at `MAX_SESSIONS`:
/// the index is ordered by class first, so every `Free` session goes before any
/// `AwayGame` one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Evict {
    /// Holds no seat in a running game that anyone plays: no lobby, a waiting or
    /// finished lobby, or a dormant game.
    Free,
    /// Seated in a running game whose humans are all disconnected, not yet dormant.
    AwayGame,
}

/// SHA-256 of a session token.
pub type TokenDigest = [u8; 32];

/// The digest the registry keeps of `token`.
pub fn token_digest(token: &TokenBytes) -> TokenDigest {
    Sha256::digest(token).into()
}

impl Session {
    /// The token's SHA-256 digest, in lower-case hex (for a store).
    pub fn digest_hex(&self) -> String {
        hex(&self.digest)
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]])
        .map(char::from)
        .collect()
}

/// The digest of a hex string written by [`Session::digest_hex`].
pub fn digest_from_hex(text: &str) -> Option<TokenDigest> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks(2).enumerate() {
        out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

/// The registry is full (`MAX_SESSIONS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegistryFull;

/// A new session: its id and the token to hand to the client (the only copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    pub id: SessionId,
    pub token: String,
}

/// All sessions, by id, digest locator and player id.
#[derive(Debug)]
pub struct SessionRegistry {
    sessions: BTreeMap<SessionId, Session>,
    by_locator: BTreeMap<[u8; LOCATOR_BYTES], SessionId>,
    by_player: BTreeMap<String, SessionId>,
    /// `(class, disconnected_at, id)` of the sessions marked evictable.
    evictable: BTreeSet<(Evict, Time, SessionId)>,
    next_id: SessionId,
    sessions_max: usize,
    token_rng: ChaCha12Rng,
    id_rng: ChaCha12Rng,
    /// The server's `SHARD_ID`, put in front of every token it issues.
    shard: Option<ShardId>,
    /// Sessions removed since [`SessionRegistry::take_gone`] was last called.
    gone: Vec<SessionId>,
}

fn locator(digest: &TokenDigest) -> [u8; LOCATOR_BYTES] {
    let mut out = [0u8; LOCATOR_BYTES];
    out.copy_from_slice(&digest[..LOCATOR_BYTES]);
    out
}

impl SessionRegistry {
    pub fn new(
        sessions_max: usize,
        token_rng: ChaCha12Rng,
        id_rng: ChaCha12Rng,
        shard: Option<ShardId>,
    ) -> Self {
        SessionRegistry {
            sessions: BTreeMap::new(),
            by_locator: BTreeMap::new(),
            by_player: BTreeMap::new(),
            evictable: BTreeSet::new(),
            next_id: SessionId(1),
            sessions_max,
            token_rng,
            id_rng,
            shard,
            gone: Vec::new(),
        }
    }

    /// A new session with a fresh token and player id.
    pub fn create(&mut self) -> Result<Created, RegistryFull> {
        if self.sessions.len() >= self.sessions_max {
            return Err(RegistryFull);
        }
        // Collisions of 64-bit locators or 48-bit ids are vanishingly rare; drawing
        // again keeps the indexes exact anyway.
        let (token, digest) = loop {
            let t = rng::new_token(&mut self.token_rng);
            let d = token_digest(&t);
            if !self.by_locator.contains_key(&locator(&d)) {
                break (t, d);
            }
        };
        let player_id = loop {
            let id = rng::hex_id(&mut self.id_rng, PLAYER_ID_CHARS);
            if !self.by_player.contains_key(&id) {
                break id;
            }
        };
        let id = self.next_id;
        self.next_id = id.next();
        self.insert(id, player_id, digest);
        // The shard's id goes in front of the same random bytes, never in their place.
        let mut text = String::with_capacity(SHARDED_TOKEN_CHARS);
        if let Some(shard) = self.shard {
            text.push(shard.as_char());
        }
        text.push_str(&rng::encode_token(&token));
        Ok(Created { id, token: text })
    }

    fn insert(&mut self, id: SessionId, player_id: String, digest: TokenDigest) {
        self.by_locator.insert(locator(&digest), id);
        self.by_player.insert(player_id.clone(), id);
        self.sessions.insert(
            id,
            Session {
                id,
                player_id,
                digest,
                name: String::new(),
                lobby: None,
                watching: None,
                chat_bucket: None,
                conn: None,
                disconnected_at: None,
                evict_key: None,
                lost_lobby: None,
                profile: None,
            },
        );
    }

    /// Puts back a session read from a store, disconnected since `now`. Refused when
    /// its id, player id or digest locator is taken, or the registry is full.
    pub fn restore(
        &mut self,
        id: SessionId,
        player_id: String,
        digest: TokenDigest,
        now: Time,
    ) -> Result<(), RegistryFull> {
        let taken = self.sessions.contains_key(&id)
            || self.by_player.contains_key(&player_id)
            || self.by_locator.contains_key(&locator(&digest));
        if taken || self.sessions.len() >= self.sessions_max {
            return Err(RegistryFull);
        }
        self.insert(id, player_id, digest);
        if let Some(s) = self.sessions.get_mut(&id) {
            s.disconnected_at = Some(now);
        }
        self.next_id = self.next_id.max(id.next());
        Ok(())
    }

    /// The sessions removed since the last call, in order.
    pub fn take_gone(&mut self) -> Vec<SessionId> {
        std::mem::take(&mut self.gone)
    }

    /// The secret part of a token this registry may know: the whole token on an
    /// unsharded server; on a sharded one, what follows its own id, or a whole token of
    /// unsharded length (issued before the server had an id).
    fn secret_part<'t>(&self, token: &'t str) -> Option<&'t str> {
        match self.shard {
            Some(shard) if token.len() == SHARDED_TOKEN_CHARS => {
                token.strip_prefix(shard.as_char())
            }
            _ => (token.len() == TOKEN_CHARS).then_some(token),
        }
    }

    /// The session a client's token names, if the token is valid.
    pub fn find_by_token(&self, token: &str) -> Option<SessionId> {
        let digest = token_digest(&rng::decode_token(self.secret_part(token)?)?);
        let id = *self.by_locator.get(&locator(&digest))?;
        let session = self.sessions.get(&id)?;
        rng::constant_time_eq(&session.digest, &digest).then_some(id)
    }

    pub fn get(&self, id: SessionId) -> Option<&Session> {
        self.sessions.get(&id)
    }

    pub fn get_mut(&mut self, id: SessionId) -> Option<&mut Session> {
        self.sessions.get_mut(&id)
    }

    /// Forgets a session; its token and player id stop working.
    pub fn remove(&mut self, id: SessionId) -> Option<Session> {
        let session = self.sessions.remove(&id)?;
        if let Some((class, at)) = session.evict_key {
            self.evictable.remove(&(class, at, id));
        }
        self.gone.push(id);
        self.by_locator.remove(&locator(&session.digest));
        self.by_player.remove(&session.player_id);
        Some(session)
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Marks a session evictable in `class` (indexed by class, then by when it
    /// disconnected), or not at all with `None`. A connected session is never indexed,
    /// whatever `class` says.
    pub fn set_evictable(&mut self, id: SessionId, class: Option<Evict>) {
        let Some(s) = self.sessions.get_mut(&id) else {
            return;
        };
        let key = match (class, s.conn, s.disconnected_at) {
            (Some(class), None, Some(at)) => Some((class, at)),
            _ => None,
        };
        if s.evict_key == key {
            return;
        }
        if let Some((class, at)) = s.evict_key.take() {
            self.evictable.remove(&(class, at, id));
        }
        if let Some((class, at)) = key {
            s.evict_key = Some((class, at));
            self.evictable.insert((class, at, id));
        }
    }

    /// The session's class in the evictable index, if it is in it.
    pub fn evict_class(&self, id: SessionId) -> Option<Evict> {
        self.sessions
            .get(&id)
            .and_then(|s| s.evict_key.map(|(class, _)| class))
    }

    /// The evictable session to go first: of the lowest class, the one disconnected
    /// longest.
    pub fn first_evictable(&self) -> Option<SessionId> {
        self.evictable.first().map(|(_, _, id)| *id)
    }

    /// Sessions in the evictable index.
    pub fn evictable_len(&self) -> usize {
        self.evictable.len()
    }

    /// Every session id, in order (for checks).
    pub fn ids(&self) -> impl Iterator<Item = SessionId> + '_ {
        self.sessions.keys().copied()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

const _: () = assert!(TOKEN_BYTES >= 16, "at least 128 secret bits");
