//! A profile as a store keeps it, and what a deployment's shared store says about
//! profiles (PROTOCOL.md 7.1: profiles across shards).
//!
//! A store keeps a profile's key only as its SHA-256 digest. A shell whose store is
//! shared by every shard (the PostgreSQL store) looks profiles up there before the core
//! sees a `hello` with a `profile_key` or a `create_profile`, and hands the answer to the
//! core as [`crate::vocabulary::io::Input::SharedProfiles`], so that a profile made on
//! one shard signs in on any other and a name taken anywhere is taken here too.

use serde::{Deserialize, Serialize};

use crate::vocabulary::figure::Figure;

/// A profile as a store keeps it: never the key, only its digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileRecord {
    pub id: String,
    pub name: String,
    pub key_sha256: String,
    pub mu: Figure,
    pub sigma: Figure,
    pub games: u32,
}

/// What the shared store answered about one message's profiles.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SharedProfiles {
    /// The profiles it holds that the message names: the one whose key digest was
    /// asked, or those holding a name that is the same as the one asked.
    pub found: Vec<ProfileRecord>,
    /// The key digest asked, in lower-case hex, when it answered: a profile this
    /// server holds with that digest and that is not in `found` was deleted elsewhere.
    pub asked_key_sha256: Option<String>,
    /// The name keys of a `create_profile` it was asked about ([`crate::vocabulary::names::keys`]),
    /// with what it says of them.
    pub names: Option<NameClaim>,
}

/// Whether a name asked about may be taken here now. A shard's shell claims a name's
/// keys in the shared store before the core sees `create_profile`; the claim is atomic
/// there, so two shards asking for the same name (or two look-alikes) at once get one
/// `Claimed` and one `HeldElsewhere`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameClaim {
    /// The name keys asked.
    pub keys: Vec<String>,
    /// What the shared store said of them.
    pub answer: ClaimAnswer,
}

/// The shared store's answer to a name's claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimAnswer {
    /// This shard holds the name's keys: it may create a profile with it.
    Claimed,
    /// Another shard's creation holds one of them: the name is taken.
    HeldElsewhere,
    /// The store did not answer (full queue, failure, timeout): nothing is known.
    Unanswered,
}
