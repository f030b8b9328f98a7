//! wizard-ai: the AI agents, the AI service's admission machine and its websocket client.
//!
//! The service arrives with its own issue; the cheap heuristic player it degrades to
//! already lives in `wizard_core::game::bot`.
