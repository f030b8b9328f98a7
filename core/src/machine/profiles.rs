//! The profile registry: names that last, with a rating (PROTOCOL.md section 7.1).
//!
//! A profile has a public id (12 hex characters), a name unique among profiles (two
//! names are the same when [`names::keys`] says so: case, look-alike letters, invisible
//! characters), a rating and the count of rated games it played. Its key is a secret
//! credential drawn from the server's seeded generator (`Purpose::ProfileKeys`, which
//! the shell seeds from OS entropy): [`PROFILE_KEY_BYTES`] random bytes, shown once to
//! its creator as URL-safe base64. The registry keeps only the key's SHA-256 digest: a
//! presented key is hashed, looked up by the digest's first 8 bytes and compared in
//! full in constant time. At most `PROFILES_MAX` profiles exist at once.

use std::collections::{BTreeMap, VecDeque};

use rand::Rng as _;
use rand_chacha::ChaCha12Rng;
use sha2::{Digest as _, Sha256};

use crate::machine::rating::{Figure, Rating};
use crate::vocabulary::names;
use crate::vocabulary::rng;

/// Bytes of a profile key: 240 random bits (40 characters of URL-safe base64).
pub const PROFILE_KEY_BYTES: usize = 30;
/// Characters of a profile's public id.
pub const PROFILE_ID_CHARS: usize = 12;
const LOCATOR_BYTES: usize = 8;
/// Bytes of an id the registry can key (a profile's id has [`PROFILE_ID_CHARS`]).
const ID_KEY_BYTES_MAX: usize = 16;
/// The ids of at most this many of the last changes are kept, for
/// [`ProfileRegistry::changed_since`]; older changes answer "maybe changed".
pub const CHANGES_KEPT_MAX: usize = 256;

pub use crate::vocabulary::ids::ProfileKey;
pub use crate::vocabulary::profile::ProfileRecord;

/// SHA-256 of a profile key's bytes.
pub type KeyDigest = [u8; 32];

/// One profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub id: String,
    pub name: String,
    digest: KeyDigest,
    pub rating: Rating,
    /// Rated games played.
    pub games: u32,
}

impl Profile {
    /// The key's digest in lower-case hex (for a store).
    pub fn digest_hex(&self) -> String {
        self.digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Why a profile was not created (the asker's fault, or the deployment is full).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateError {
    /// Another profile has the same name.
    NameTaken,
    /// `PROFILES_MAX` profiles exist.
    Full,
}

/// A profile id as the registry keys it: its bytes packed big-endian into one number
/// (zero-padded), so that a lookup compares numbers, not strings. A lobby's view looks
/// up every seated profile at each move, and with thousands of profiles the string
/// comparisons of a tree keyed by `String` cost a tenth of the server's CPU at 1000
/// paced games. For ids of at most [`ID_KEY_BYTES_MAX`] bytes without a zero byte the
/// order is the ids' own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct IdKey(u128);

impl IdKey {
    /// `None` for an id no profile can have (too long, or holding a zero byte).
    fn of(id: &str) -> Option<IdKey> {
        let bytes = id.as_bytes();
        if bytes.len() > ID_KEY_BYTES_MAX || bytes.contains(&0) {
            return None;
        }
        let mut packed = [0u8; ID_KEY_BYTES_MAX];
        packed[..bytes.len()].copy_from_slice(bytes);
        Some(IdKey(u128::from_be_bytes(packed)))
    }
}

/// All profiles, by id, key locator and name key.
#[derive(Debug)]
pub struct ProfileRegistry {
    profiles: BTreeMap<IdKey, Profile>,
    by_locator: BTreeMap<[u8; LOCATOR_BYTES], String>,
    /// Each of a profile's two name keys ([`names::keys`]) to its id.
    by_name: BTreeMap<String, String>,
    profiles_max: usize,
    key_rng: ChaCha12Rng,
    id_rng: ChaCha12Rng,
    /// Changes made so far: each creation, rating, restore and deletion of a profile.
    changes: u64,
    /// The ids of the last changes (at most [`CHANGES_KEPT_MAX`]), the newest last.
    changed: VecDeque<IdKey>,
}

fn locator(digest: &KeyDigest) -> [u8; LOCATOR_BYTES] {
    let mut out = [0u8; LOCATOR_BYTES];
    out.copy_from_slice(&digest[..LOCATOR_BYTES]);
    out
}

fn digest_from_hex(text: &str) -> Option<KeyDigest> {
    crate::machine::session::digest_from_hex(text)
}

impl ProfileRegistry {
    pub fn new(profiles_max: usize, key_rng: ChaCha12Rng, id_rng: ChaCha12Rng) -> Self {
        ProfileRegistry {
            profiles: BTreeMap::new(),
            by_locator: BTreeMap::new(),
            by_name: BTreeMap::new(),
            profiles_max,
            key_rng,
            id_rng,
            changes: 0,
            changed: VecDeque::with_capacity(CHANGES_KEPT_MAX),
        }
    }

    /// How many changes the registry has had: a mark for [`Self::changed_since`].
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Whether the profile `id` may have changed (been created, rated, replaced or
    /// deleted) since the registry had `mark` changes: true when it did, or when the
    /// changes since are more than are kept.
    pub fn changed_since(&self, id: &str, mark: u64) -> bool {
        let since = self.changes.saturating_sub(mark);
        if since == 0 {
            return false;
        }
        let Some(key) = IdKey::of(id) else {
            return true;
        };
        match usize::try_from(since) {
            Ok(n) if n <= self.changed.len() => {
                self.changed.iter().rev().take(n).any(|k| *k == key)
            }
            _ => true,
        }
    }

    fn note_change(&mut self, key: IdKey) {
        self.changes = self.changes.saturating_add(1);
        if self.changed.len() >= CHANGES_KEPT_MAX {
            self.changed.pop_front();
        }
        self.changed.push_back(key);
    }

    pub fn len(&self) -> usize {
        self.profiles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.profiles.is_empty()
    }

    pub fn get(&self, id: &str) -> Option<&Profile> {
        self.profiles.get(&IdKey::of(id)?)
    }

    /// Every profile, by id.
    pub fn iter(&self) -> impl Iterator<Item = &Profile> {
        self.profiles.values()
    }

    /// Whether a profile other than `except` has a name that is the same as `name`.
    pub fn name_taken(&self, name: &str, except: Option<&str>) -> bool {
        names::keys(name)
            .iter()
            .filter_map(|k| self.by_name.get(k))
            .any(|id| Some(id.as_str()) != except)
    }

    /// A new profile named `name` (already cleaned) with a new rating, and its key
    /// (the only copy).
    pub fn create(&mut self, name: &str) -> Result<(Profile, String), CreateError> {
        if self.name_taken(name, None) {
            return Err(CreateError::NameTaken);
        }
        if self.profiles.len() >= self.profiles_max {
            return Err(CreateError::Full);
        }
        let mut key = [0u8; PROFILE_KEY_BYTES];
        let (id, digest) = loop {
            self.key_rng.fill_bytes(&mut key);
            let digest: KeyDigest = Sha256::digest(key).into();
            let id = rng::hex_id(&mut self.id_rng, PROFILE_ID_CHARS);
            if !self.by_locator.contains_key(&locator(&digest)) && self.get(&id).is_none() {
                break (id, digest);
            }
        };
        let profile = Profile {
            id,
            name: name.to_owned(),
            digest,
            rating: Rating::NEW,
            games: 0,
        };
        self.insert(profile.clone());
        Ok((profile, rng::encode_b64url(&key)))
    }

    /// Keeps `profile`, whose id [`IdKey::of`] accepts (created here, or checked by
    /// [`ProfileRegistry::restore`]).
    fn insert(&mut self, profile: Profile) {
        let Some(key) = IdKey::of(&profile.id) else {
            return;
        };
        self.by_locator
            .insert(locator(&profile.digest), profile.id.clone());
        for k in names::keys(&profile.name) {
            self.by_name.insert(k, profile.id.clone());
        }
        self.profiles.insert(key, profile);
        self.note_change(key);
    }

    /// The profile whose key is `key`, compared in constant time; `None` for anything
    /// else (not a key's shape, unknown, deleted).
    pub fn find_by_key(&self, key: &str) -> Option<&Profile> {
        let bytes: [u8; PROFILE_KEY_BYTES] = rng::decode_b64url(key)?;
        let digest: KeyDigest = Sha256::digest(bytes).into();
        let id = self.by_locator.get(&locator(&digest))?;
        let profile = self.get(id)?;
        rng::constant_time_eq(&profile.digest, &digest).then_some(profile)
    }

    /// Removes a profile: its key, name and rating. True when it existed.
    pub fn delete(&mut self, id: &str) -> bool {
        let Some(key) = IdKey::of(id) else {
            return false;
        };
        let Some(profile) = self.profiles.remove(&key) else {
            return false;
        };
        self.note_change(key);
        self.by_locator.remove(&locator(&profile.digest));
        for k in names::keys(&profile.name) {
            if self.by_name.get(&k).is_some_and(|x| *x == profile.id) {
                self.by_name.remove(&k);
            }
        }
        true
    }

    /// Sets a profile's rating after a rated game and counts the game.
    pub fn rated(&mut self, id: &str, rating: Rating) -> Option<&Profile> {
        let key = IdKey::of(id)?;
        if !self.profiles.contains_key(&key) {
            return None;
        }
        self.note_change(key);
        let p = self.profiles.get_mut(&key)?;
        p.rating = rating;
        p.games = p.games.saturating_add(1);
        Some(p)
    }

    /// A profile as a restore reads it (its newest record); replaces an older one.
    /// Refused when the digest is not one, or over `PROFILES_MAX`.
    pub fn restore(&mut self, record: &ProfileRecord) -> Result<(), String> {
        let digest = digest_from_hex(&record.key_sha256)
            .ok_or_else(|| format!("profile {}: not a key digest", record.id))?;
        if IdKey::of(&record.id).is_none() {
            return Err(format!("profile {:?}: not a profile id", record.id));
        }
        self.delete(&record.id);
        if self.profiles.len() >= self.profiles_max {
            return Err(format!("profile {}: over PROFILES_MAX", record.id));
        }
        self.insert(Profile {
            id: record.id.clone(),
            name: record.name.clone(),
            digest,
            rating: Rating {
                mu: record.mu.0,
                sigma: record.sigma.0,
            },
            games: record.games,
        });
        Ok(())
    }

    /// A profile as the deployment's shared store holds it: taken when this registry
    /// has no copy or an older one (fewer rated games), or when a same-named profile
    /// with another id should give way to it. True when the registry changed.
    pub fn learn(&mut self, record: &ProfileRecord) -> bool {
        match self.get(&record.id) {
            Some(p) if p.games > record.games => return false,
            Some(p) if self.record(&p.id).as_ref() == Some(record) => return false,
            _ => {}
        }
        self.restore(record).is_ok()
    }

    /// The id of the profile whose key digest is `key_sha256` (lower-case hex).
    pub fn id_by_digest(&self, key_sha256: &str) -> Option<&str> {
        let digest = digest_from_hex(key_sha256)?;
        let id = self.by_locator.get(&locator(&digest))?;
        let profile = self.get(id)?;
        rng::constant_time_eq(&profile.digest, &digest).then_some(profile.id.as_str())
    }

    /// The record that keeps `id` as it now is.
    pub fn record(&self, id: &str) -> Option<ProfileRecord> {
        let p = self.get(id)?;
        Some(ProfileRecord {
            id: p.id.clone(),
            name: p.name.clone(),
            key_sha256: p.digest_hex(),
            mu: Figure(p.rating.mu),
            sigma: Figure(p.rating.sigma),
            games: p.games,
        })
    }
}

/// The number a store keys a profile's rows by: its id's 48 bits.
pub fn row_id(id: &str) -> u64 {
    u64::from_str_radix(id, 16).unwrap_or(0)
}
