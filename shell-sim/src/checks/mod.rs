//! The checkers of the server's promises: the per-input checker, what each game's
//! players are shown (the oracle, the views, leaks), progress, session expiry,
//! what a player resumes with after a restart, and the quick-play pool.

pub mod checker;
pub mod expiry;
pub mod game_log;
pub mod games;
pub mod leak;
pub mod oracle;
pub mod progress;
pub mod quick;
pub mod resume;
pub mod seat_view;
