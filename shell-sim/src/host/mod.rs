//! The simulated shell around the real `wizard_core::Server`, as shell-smol has it: the
//! core task's loop, the executor, the door, frame readers, outbound queues and writers,
//! the load probe, the shell's own endings of connections and of the process, and the
//! process killed and restored from its durable store.

pub mod core_task;
pub mod door;
pub mod executor;
pub mod frames;
pub mod lifecycle;
pub mod outbox;
pub mod probe;
pub mod restart;
pub mod writer;
