//! A run: scenarios, the driver that pops events and hands them to their actors, the
//! phases and the timeline, the report, quick-play players, and the swarm of random scenarios.

pub mod driver;
pub mod feed;
pub mod phase;
pub mod quick;
pub mod report;
pub mod restart;
pub mod scenario;
pub mod swarm;
