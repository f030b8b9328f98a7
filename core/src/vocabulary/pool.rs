//! What the core and a shell that keeps the shards' shared quick-play pool tell each
//! other (PROTOCOL.md 7.2, shards): the core's ticket changes out
//! (`Server::take_pool_changes`), the groups and matches the pool forms in
//! ([`crate::vocabulary::io::Input::Pool`]).

use crate::vocabulary::ids::SessionId;
use crate::vocabulary::shard::ShardId;

/// A change of this shard's part of the shared pool, for the shell to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PoolChange {
    /// The session waits for a table of `seats` (a ticket it held is replaced, keeping
    /// its place in time).
    Put {
        session: SessionId,
        seats: u8,
        rating_milli: i64,
    },
    /// The session's ticket is gone: cancelled, left, closed, matched or refused.
    Drop { session: SessionId },
    /// The group `group` formed here is seated in lobby `code`: its players on other
    /// shards may be told where to go.
    Seated { group: u64, code: String },
    /// The group `group` formed here could not be seated: its tickets from other shards
    /// go back to the pool.
    Refused { group: u64 },
}

/// What the shared pool decided, for the core to carry out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PoolEvent {
    /// This shard formed `group`, a table of `seats`: `local` (this shard's sessions,
    /// oldest ticket first) are seated here, `remote` seats are kept for players of
    /// other shards, and AI players fill the rest.
    Formed {
        group: u64,
        seats: u8,
        local: Vec<SessionId>,
        remote: u8,
    },
    /// Another shard seated this session's ticket at table `code` on `shard`.
    Matched {
        session: SessionId,
        code: String,
        shard: ShardId,
    },
}
