//! wizard-server: the production shell that carries out wizard-core's outputs over
//! smol, HTTP and websockets.
//!
//! The shell arrives with its own issue; until then this crate only fixes its place in
//! the workspace (`wizard-server -> wizard-ai -> wizard-core`).
