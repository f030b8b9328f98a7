//! The batch step both shells drive the core with, and its bounds.
//!
//! After a wake-up a shell's core loop handles every input already queued, up to
//! [`BATCH_INPUTS_MAX`], all at one `now`; then, if a deadline is due, one
//! [`crate::vocabulary::io::Input::Timeout`]; only then does it route the outputs, so a burst of
//! moves costs one wake-up and each connection's writer is woken once per batch. The
//! queue in front of the loop holds at most [`INBOX_CAPACITY`] inputs; a reader whose
//! input finds it full waits (backpressure on the readers, not unbounded memory).

/// Inputs handled per wake-up at most before outputs are routed, so that a flood of
/// inputs cannot delay every send indefinitely.
pub const BATCH_INPUTS_MAX: usize = 1024;
/// Capacity of the core loop's inbox; readers wait when it is full.
pub const INBOX_CAPACITY: usize = 4096;
