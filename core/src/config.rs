//! Server and AI service settings (PROTOCOL.md section 5), parsed from (name, value) pairs.
