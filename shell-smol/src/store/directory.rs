//! Profiles across shards (PROTOCOL.md 7.1): the PostgreSQL store's shared profile
//! tables and the directory that reads them.
//!
//! - **Tables.** `wizard_profiles` holds every profile of the deployment, whichever
//!   shard made or rated it last: `id`, the key's SHA-256 digest (`key_sha256`,
//!   indexed; never the key), the rated games and the record's JSON.
//!   `wizard_profile_names` holds each profile's two name keys (`names::keys`: the
//!   look-alike skeleton and the case-folded name) with its id. The PostgreSQL
//!   writer keeps both in the same transaction as the records it commits
//!   ([`apply`]): a profile's creation, each rated game's new rating (committed with
//!   the game's last move) and its deletion. A rating only replaces one of fewer or as
//!   many rated games, so a shard's older copy never undoes a newer one.
//! - **Lookups.** Before the core sees a player's `hello` with a `profile_key`, or a
//!   `create_profile`, the connection's reader asks the [`Directory`]: the profile
//!   whose digest is the key's, or the profiles holding a name that is the same as the
//!   one asked. The answer goes to the core first
//!   ([`Input::SharedProfiles`](wizard_core::vocabulary::io::Input::SharedProfiles)), then
//!   the message: a profile made on shard A signs in on shard B and is rated there, a
//!   profile deleted on A is forgotten by B when its key is shown there, and a name
//!   taken on any shard is taken on every shard.
//! - **Bounds.** One thread and one connection per process answer lookups in turn;
//!   at most [`LOOKUPS_QUEUED_MAX`] wait, and a reader waits [`LOOKUP_WAIT`] at most.
//!   A key's lookup that finds the queue full, times out or fails is skipped: the
//!   message goes on with what this shard holds (a key it does not know signs in as a
//!   guest, which PROTOCOL.md 7.1 allows); a name's is answered `Unanswered`. Only a key of the right shape (its 30 bytes
//!   decode) and a name the name rules accept are looked up. The per-address budgets
//!   (`JOIN_FAIL_RATE` for failed keys, `PROFILE_CREATE_RATE`) stay the core's.
//! - **Name claims.** A `create_profile`'s lookup first claims the name's keys in
//!   `wizard_profile_name_claims` for this shard (one `INSERT ... ON CONFLICT`, the
//!   keys in sorted order, so that two claims never wait on each other in a cycle), then reads the
//!   profiles holding them, in one transaction. PostgreSQL's unique key makes the claim
//!   atomic: of two shards asking for the same name (or two look-alikes) at once, one
//!   holds every key and the other finds one held and claims nothing (its transaction
//!   is rolled back). The answer tells the core (`NameClaim`): `Claimed`, or
//!   `HeldElsewhere` (the name is taken: `not_allowed`), or `Unanswered` when the
//!   lookup was skipped (the core answers `busy`: a name is never created unchecked).
//!   A claim is this shard's for [`CLAIM_HOLD`] from its first taking: the writer
//!   drops it when the profile's names are committed, and a claim whose profile was
//!   never made (refused by the core's own limits) frees the name once that time is
//!   over. A shard asking again for a name it holds keeps it without extending it, and
//!   may not take it again for another [`CLAIM_HOLD`] after it expired, when any other
//!   shard may: a client repeating a `create_profile` its shard refuses holds a name
//!   for at most [`CLAIM_HOLD`] at a time. Claims are deleted by the next claim two
//!   holds after their taking. A profile's names are committed after its claim, so a
//!   claim made after that commit finds them in the same transaction.

use std::time::Duration;

use async_channel::{Receiver, Sender, TrySendError};
use futures_lite::FutureExt as _;
use postgres::Client;
use sha2::{Digest as _, Sha256};
use tracing::warn;
use wizard_core::machine::profiles::{PROFILE_KEY_BYTES, ProfileRecord};
use wizard_core::machine::records::Record;
use wizard_core::vocabulary::names;
use wizard_core::vocabulary::profile::{ClaimAnswer, NameClaim, SharedProfiles};
use wizard_core::vocabulary::rng;
use wizard_core::vocabulary::shard::ShardId;
use wizard_core::vocabulary::wire::ClientMessage;

use super::postgres::connect;

/// Lookups waiting for the directory's thread at most; past it a lookup is skipped.
pub const LOOKUPS_QUEUED_MAX: usize = 256;
/// How long a reader waits for a lookup's answer before it goes on without it.
pub const LOOKUP_WAIT: Duration = Duration::from_secs(2);
/// How long a name's claim holds it for its shard: far longer than a profile's records
/// take to be committed (the store's writer commits within its sync interval).
pub const CLAIM_HOLD: Duration = Duration::from_secs(30);

/// The shared tables, created with the records' table.
pub const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS wizard_profiles (
    id text PRIMARY KEY,
    key_sha256 text NOT NULL,
    games integer NOT NULL,
    body text NOT NULL
);
CREATE INDEX IF NOT EXISTS wizard_profiles_key ON wizard_profiles (key_sha256);
CREATE TABLE IF NOT EXISTS wizard_profile_names (
    name_key text PRIMARY KEY,
    id text NOT NULL
);
CREATE INDEX IF NOT EXISTS wizard_profile_names_id ON wizard_profile_names (id);
CREATE TABLE IF NOT EXISTS wizard_profile_name_claims (
    name_key text PRIMARY KEY,
    shard text NOT NULL,
    claimed_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS wizard_profile_name_claims_at
    ON wizard_profile_name_claims (claimed_at);";

/// A change to the shared tables that a committed record makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProfileChange {
    /// A profile as it now is (created, rated, or taken from another shard).
    Keep(Box<ProfileRecord>),
    /// A profile deleted.
    Gone(String),
}

impl ProfileChange {
    /// The change `record` makes, if it is about a profile.
    pub fn of(record: &Record) -> Option<ProfileChange> {
        match record {
            Record::Profile(p) => Some(ProfileChange::Keep(Box::new(p.clone()))),
            Record::ProfileGone { profile } => Some(ProfileChange::Gone(profile.clone())),
            _ => None,
        }
    }
}

/// Applies `changes`, in order, inside the writer's transaction.
pub fn apply<'a>(
    tx: &mut impl postgres::GenericClient,
    changes: impl Iterator<Item = &'a ProfileChange>,
) -> Result<(), postgres::Error> {
    for change in changes {
        match change {
            ProfileChange::Keep(p) => {
                let body = serde_json::to_string(p.as_ref()).unwrap_or_default();
                let games = i32::try_from(p.games).unwrap_or(i32::MAX);
                tx.execute(
                    "INSERT INTO wizard_profiles (id, key_sha256, games, body)
                     VALUES ($1, $2, $3, $4)
                     ON CONFLICT (id) DO UPDATE SET games = EXCLUDED.games, body = EXCLUDED.body
                     WHERE wizard_profiles.games <= EXCLUDED.games",
                    &[&p.id, &p.key_sha256, &games, &body],
                )?;
                let keys: Vec<String> = names::keys(&p.name).into();
                tx.execute(
                    "INSERT INTO wizard_profile_names (name_key, id)
                     SELECT k, $2 FROM unnest($1::text[]) AS k
                     ON CONFLICT (name_key) DO NOTHING",
                    &[&keys, &p.id],
                )?;
                tx.execute(
                    "DELETE FROM wizard_profile_name_claims WHERE name_key = ANY($1)",
                    &[&keys],
                )?;
            }
            ProfileChange::Gone(id) => {
                tx.execute("DELETE FROM wizard_profiles WHERE id = $1", &[id])?;
                tx.execute("DELETE FROM wizard_profile_names WHERE id = $1", &[id])?;
            }
        }
    }
    Ok(())
}

/// What a lookup asks.
#[derive(Debug)]
enum Query {
    /// The profile whose key digest is this (lower-case hex).
    Key(String),
    /// The profiles holding any of these name keys, after claiming them.
    Names(Vec<String>),
}

/// A lookup's answer: the profiles found, and for a name whether this shard holds it.
struct Found {
    profiles: Vec<ProfileRecord>,
    claimed: bool,
}

struct Ask {
    query: Query,
    answer: Sender<Found>,
}

/// The lookups of one process: a thread with its own connection to the shared store.
#[derive(Debug)]
pub struct Directory {
    asks: Sender<Ask>,
}

impl std::fmt::Debug for Ask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ask").field("query", &self.query).finish()
    }
}

impl Directory {
    /// Starts the directory's thread for the store at `url` (it connects when first
    /// asked, and again after a failure). The thread ends with the last handle.
    pub fn start(url: &str, shard: Option<ShardId>) -> std::io::Result<Directory> {
        let (asks, queue) = async_channel::bounded(LOOKUPS_QUEUED_MAX);
        let url = url.to_owned();
        std::thread::Builder::new()
            .name("wizard-profiles".into())
            .spawn(move || serve(&url, shard, &queue))?;
        Ok(Directory { asks })
    }

    /// Asks the shared store about the profiles `message` names: `None` when there is
    /// nothing to ask or the queue is full.
    pub fn lookup(&self, message: &ClientMessage) -> Option<Pending> {
        let (query, asked, names) = match message {
            ClientMessage::Hello {
                profile_key: Some(key),
                ..
            } => {
                let bytes: [u8; PROFILE_KEY_BYTES] = rng::decode_b64url(&key.0)?;
                let digest: String = Sha256::digest(bytes)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                (Query::Key(digest.clone()), Some(digest), None)
            }
            ClientMessage::CreateProfile { name } => {
                let name = names::clean(name).ok()?;
                let mut keys: Vec<String> = names::keys(&name).into();
                keys.sort();
                keys.dedup();
                (Query::Names(keys.clone()), None, Some(keys))
            }
            _ => return None,
        };
        let (answer, answered) = async_channel::bounded(1);
        let pending = Pending {
            answered,
            asked,
            names,
        };
        match self.asks.try_send(Ask { query, answer }) {
            Ok(()) => Some(pending),
            // A name is answered `Unanswered` (its sender is gone); a key is not looked up.
            Err(TrySendError::Full(_) | TrySendError::Closed(_)) => {
                pending.names.is_some().then_some(pending)
            }
        }
    }
}

/// A lookup on its way.
#[derive(Debug)]
pub struct Pending {
    answered: Receiver<Found>,
    asked: Option<String>,
    /// The name keys asked, for a `create_profile`.
    names: Option<Vec<String>>,
}

impl Pending {
    /// The answer, or `None` when a key's lookup failed or took longer than
    /// [`LOOKUP_WAIT`]; a name's lookup always answers (`Unanswered` then).
    pub async fn news(self) -> Option<SharedProfiles> {
        let answered = self.answered;
        let found = async { answered.recv().await.ok() }
            .or(async {
                async_io::Timer::after(LOOKUP_WAIT).await;
                None
            })
            .await;
        let names = self.names.map(|keys| NameClaim {
            keys,
            answer: match &found {
                Some(f) if f.claimed => ClaimAnswer::Claimed,
                Some(_) => ClaimAnswer::HeldElsewhere,
                None => ClaimAnswer::Unanswered,
            },
        });
        if found.is_none() && names.is_none() {
            return None;
        }
        Some(SharedProfiles {
            found: found.map(|f| f.profiles).unwrap_or_default(),
            asked_key_sha256: self.asked,
            names,
        })
    }
}

/// The directory's thread: answers lookups in turn until every handle is gone.
fn serve(url: &str, shard: Option<ShardId>, queue: &Receiver<Ask>) {
    let mut client: Option<Client> = None;
    while let Ok(ask) = queue.recv_blocking() {
        if client.is_none() {
            match connect(url, shard) {
                Ok(c) => client = Some(c),
                Err(e) => {
                    warn!(error = %e.0, "Profile lookups: cannot connect to the store");
                    continue;
                }
            }
        }
        let Some(c) = client.as_mut() else { continue };
        match lookup(c, shard, &ask.query) {
            Ok(found) => {
                let _ = ask.answer.try_send(found);
            }
            Err(e) => {
                warn!(error = %e, "Profile lookups: a lookup failed; connecting again");
                client = None;
            }
        }
    }
}

fn lookup(
    client: &mut Client,
    shard: Option<ShardId>,
    query: &Query,
) -> Result<Found, postgres::Error> {
    let (rows, claimed) = match query {
        Query::Key(digest) => (
            client.query(
                "SELECT body FROM wizard_profiles WHERE key_sha256 = $1",
                &[digest],
            )?,
            false,
        ),
        Query::Names(keys) => claim(client, shard, keys)?,
    };
    let profiles = rows
        .iter()
        .filter_map(|r| serde_json::from_str(r.get::<_, &str>(0)).ok())
        .collect();
    Ok(Found { profiles, claimed })
}

/// Claims `keys` (sorted) for `shard` and reads the profiles holding them, in one
/// transaction: the profiles' rows, and whether every key is this shard's. The claim
/// stays only when every key is and no profile holds one.
fn claim(
    client: &mut Client,
    shard: Option<ShardId>,
    keys: &[String],
) -> Result<(Vec<postgres::Row>, bool), postgres::Error> {
    let me = shard.map(|s| s.to_string()).unwrap_or_default();
    let hold_s = CLAIM_HOLD.as_secs_f64();
    let mut tx = client.transaction()?;
    tx.execute(
        "DELETE FROM wizard_profile_name_claims
         WHERE claimed_at < now() - 2 * make_interval(secs => $1)",
        &[&hold_s],
    )?;
    // A new key is taken; another shard's expired claim is taken anew; a live claim
    // (this shard's too: it is not extended) and this shard's expired one stay.
    tx.execute(
        "INSERT INTO wizard_profile_name_claims (name_key, shard, claimed_at)
         SELECT k, $2, now() FROM unnest($1::text[]) WITH ORDINALITY AS u(k, i) ORDER BY i
         ON CONFLICT (name_key) DO UPDATE
         SET shard = EXCLUDED.shard, claimed_at = EXCLUDED.claimed_at
         WHERE wizard_profile_name_claims.shard <> EXCLUDED.shard
           AND wizard_profile_name_claims.claimed_at
               < EXCLUDED.claimed_at - make_interval(secs => $3)",
        &[&keys, &me, &hold_s],
    )?;
    // Every key must be this shard's by a live claim.
    let held = tx.query_one(
        "SELECT count(*) FROM wizard_profile_name_claims
         WHERE name_key = ANY($1) AND shard = $2
           AND claimed_at >= now() - make_interval(secs => $3)",
        &[&keys, &me, &hold_s],
    )?;
    let claimed = usize::try_from(held.get::<_, i64>(0)).is_ok_and(|n| n == keys.len());
    let rows = tx.query(
        "SELECT p.body FROM wizard_profile_names n JOIN wizard_profiles p ON p.id = n.id
         WHERE n.name_key = ANY($1)",
        &[&keys],
    )?;
    // A name a profile holds is taken: nothing to keep the claim for.
    if claimed && rows.is_empty() {
        tx.commit()?;
    } else {
        tx.rollback()?;
    }
    Ok((rows, claimed))
}
