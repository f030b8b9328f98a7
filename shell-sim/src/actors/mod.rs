//! The actors around the server: players' clients and what they play (quick-play
//! players among them), abusers, the AI service, and the context they act on.

pub mod ai;
pub mod attack;
pub mod client;
pub mod client_recv;
pub mod ctx;
pub mod play;
pub mod quick;
