//! The machine: the server's state machines, driven only through [`server::Server`].
//!
//! [`server`] is the top-level machine and owns every other one: [`session`] (who a
//! player is across reconnects), [`lobby`] (a table before, during and after its game),
//! [`turns`] (whose move is due and until when), [`matchmaker`] (the quick-play pool), [`ai_bridge`] (requests to the AI
//! service), [`audience`] (a lobby's spectators and chat), [`removed`] (players a host
//! removed), [`records`] (what a durable store keeps), [`timers`] (the one ordered set
//! of deadlines), and [`overload`] (the load levels, connection limits, circuit breaker
//! and retry policy). A shell calls none of these directly except through `Server` and
//! the record types it stores.

pub mod ai_bridge;
pub mod audience;
pub mod lobby;
pub mod matchmaker;
pub mod name_holds;
pub mod overload;
pub mod profiles;
pub mod rating;
pub mod records;
pub mod removed;
pub mod server;
pub mod session;
pub mod timers;
pub mod turns;
