//! `GET /ready` (PROTOCOL.md section 6.2): whether the server accepts new games now, and
//! if not, why, from the gauges the shell already copies out after every batch.
//!
//! `/health` means "alive" (always 200); `/ready` means "send new players here". A load
//! balancer may take a server that is not ready out of rotation for new sessions, while
//! its running games go on.

use std::fmt;

use crate::machine::overload::LoadLevel;
use crate::vocabulary::stats::Gauges;

/// Why the server does not accept new games.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NotReady {
    /// The load level is overloaded.
    Overloaded,
    /// `MAX_ACTIVE_GAMES` games are running.
    MaxActiveGames,
    /// `MAX_LOBBIES` lobbies exist and none of them is idle (which a new lobby would
    /// replace): `create_lobby` is refused.
    MaxLobbies,
    /// SIGTERM was received.
    ShuttingDown,
    /// The shell has not published the core's first figures yet.
    Starting,
    /// The durable store cannot commit now (the shell's knowledge: the core's gauges
    /// never say it): nothing new is acknowledged until it can.
    Store,
}

impl NotReady {
    pub fn name(self) -> &'static str {
        match self {
            NotReady::Overloaded => "overloaded",
            NotReady::MaxActiveGames => "max_active_games",
            NotReady::MaxLobbies => "max_lobbies",
            NotReady::ShuttingDown => "shutting_down",
            NotReady::Starting => "starting",
            NotReady::Store => "store",
        }
    }
}

impl fmt::Display for NotReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Ready exactly when `accepting_games`; the reason is the first that holds of
/// shutting down, overloaded, the lobby limit (`lobbies_full`), and (otherwise) the
/// game limit.
pub fn readiness(g: &Gauges) -> Result<(), NotReady> {
    if g.accepting_games {
        Ok(())
    } else if g.shutting_down {
        Err(NotReady::ShuttingDown)
    } else if g.level == LoadLevel::Overloaded {
        Err(NotReady::Overloaded)
    } else if g.lobbies_full {
        Err(NotReady::MaxLobbies)
    } else {
        Err(NotReady::MaxActiveGames)
    }
}

/// The body of `/ready`: `{"ready":true}` or `{"ready":false,"reason":"..."}`.
pub fn encode_ready(ready: Result<(), NotReady>) -> String {
    match ready {
        Ok(()) => r#"{"ready":true}"#.to_owned(),
        Err(why) => format!(r#"{{"ready":false,"reason":"{}"}}"#, why.name()),
    }
}

/// The HTTP status of `/ready`: 200 when ready, 503 otherwise.
pub fn ready_status(ready: Result<(), NotReady>) -> u16 {
    if ready.is_ok() { 200 } else { 503 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_in_order() {
        let mut g = Gauges {
            accepting_games: true,
            ..Gauges::default()
        };
        assert_eq!(readiness(&g), Ok(()));
        assert_eq!(encode_ready(readiness(&g)), r#"{"ready":true}"#);
        g.accepting_games = false;
        assert_eq!(readiness(&g), Err(NotReady::MaxActiveGames));
        g.lobbies_full = true;
        assert_eq!(readiness(&g), Err(NotReady::MaxLobbies));
        assert_eq!(
            encode_ready(readiness(&g)),
            r#"{"ready":false,"reason":"max_lobbies"}"#
        );
        g.level = LoadLevel::Overloaded;
        assert_eq!(readiness(&g), Err(NotReady::Overloaded));
        g.shutting_down = true;
        assert_eq!(readiness(&g), Err(NotReady::ShuttingDown));
        let body = encode_ready(readiness(&g));
        assert_eq!(body, r#"{"ready":false,"reason":"shutting_down"}"#);
        assert_eq!(ready_status(readiness(&g)), 503);
        let value: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        assert_eq!(value["reason"], "shutting_down");
    }
}
