//! The AI service's settings: [`AiServiceConfig`] and its primary agent, [`AiAgent`].

use std::str::FromStr;

use super::raw::Raw;
use super::{Component, ConfigError, LogFormat};

/// The AI service's primary agent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AiAgent {
    #[default]
    Search,
    Heuristic,
    Random,
}

/// Everything the AI service reads from its environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AiServiceConfig {
    /// `ws://` URL of the server's `/internal/ai` endpoint (`wss://` is refused: the
    /// service has no TLS client).
    pub server_url: String,
    pub shared_secret: String,
    pub workers: usize,
    /// Requests in progress (waiting and computing) before refusing with `overloaded`.
    pub queue_max: usize,
    /// From this many other waiting requests, the heuristic decides.
    pub degrade_queue_min: usize,
    pub agent: AiAgent,
    pub log_level: String,
    pub log_format: LogFormat,
}

impl Default for AiServiceConfig {
    fn default() -> AiServiceConfig {
        AiServiceConfig {
            server_url: "ws://127.0.0.1:8000/internal/ai".to_owned(),
            shared_secret: String::new(),
            workers: 1,
            queue_max: 64,
            degrade_queue_min: 8,
            agent: AiAgent::Search,
            log_level: "info".to_owned(),
            log_format: LogFormat::Text,
        }
    }
}

impl AiServiceConfig {
    /// Reads the AI service's variables from `pairs` (typically the whole environment).
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<AiServiceConfig, ConfigError> {
        let mut c = AiServiceConfig::default();
        for (name, text) in pairs {
            let Some(v) = Raw::find(Component::AiService, name, text) else {
                continue;
            };
            match v.name {
                "AI_SERVER_URL" => c.server_url = v.ws_url()?,
                "AI_SHARED_SECRET" => c.shared_secret = v.text.to_owned(),
                "AI_WORKERS" => c.workers = v.count(1)?,
                "AI_MAX_QUEUE" => c.queue_max = v.count(1)?,
                "AI_DEGRADE_QUEUE" => c.degrade_queue_min = v.count(0)?,
                "AI_AGENT" => c.agent = v.parsed("is not search, heuristic or random")?,
                "LOG_LEVEL" => c.log_level = v.text.to_owned(),
                "LOG_FORMAT" => c.log_format = v.parsed("is not text or json")?,
                _ => {}
            }
        }
        Ok(c)
    }
}

impl FromStr for AiAgent {
    type Err = ();
    fn from_str(s: &str) -> Result<AiAgent, ()> {
        match s {
            "search" => Ok(AiAgent::Search),
            "heuristic" => Ok(AiAgent::Heuristic),
            "random" => Ok(AiAgent::Random),
            _ => Err(()),
        }
    }
}

impl AiAgent {
    pub fn name(self) -> &'static str {
        match self {
            AiAgent::Search => "search",
            AiAgent::Heuristic => "heuristic",
            AiAgent::Random => "random",
        }
    }
}
