//! The wire messages of PROTOCOL.md sections 2 and 4 as serde types.
