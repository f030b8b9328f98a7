//! The model of the world around the server: the virtual clock's event queue, seeded
//! distributions, the cost of each piece of work, the CPU quota, the network and the
//! per-connection table.

pub mod calibration;
pub mod conn_map;
pub mod cost;
pub mod cpu;
pub mod dist;
pub mod net;
pub mod queue;
