//! wizard-sim: the deterministic discrete-event simulator that drives the same
//! wizard-core `Server` the production shell drives.
//!
//! The simulator arrives with its own issue; until then this crate only fixes its place
//! in the workspace (`wizard-sim -> wizard-ai, wizard-core`).
