//! A bot's memory of the `state`s it got: it decodes only the parts it uses.

use wizard_core::vocabulary::game::Event;
use wizard_core::vocabulary::wire::{GameView, LobbyView, peek};

/// A bot's memory of the `state`s it got, so that it decodes only what it uses
/// (`wire::peek`): the lobby part when it changed, the events when it counts moves or
/// awaits its own, the game part on its turn. Decoding every part of every state made
/// the generator, not the server, the limit at full speed.
#[derive(Debug, Default)]
pub(super) struct Seen {
    lobby_raw: String,
    lobby: Option<LobbyView>,
}

/// The parts of one `state` a bot looked at.
pub(super) struct StateSeen<'s, 't> {
    pub lobby: Option<&'s LobbyView>,
    /// (the bot's seat, the seat to act) when the game part is a running game's.
    pub turn: Option<(u8, Option<u8>)>,
    /// The game part, still encoded: decoded only on the bot's turn.
    pub game: &'t str,
    /// Empty unless `want_events`.
    pub events: Vec<Event>,
}

impl StateSeen<'_, '_> {
    /// The game part when the bot has to act on it (or cannot tell without decoding).
    pub fn game_to_act_on(&self) -> Option<Option<GameView>> {
        match self.turn {
            Some((you, to_act)) if to_act != Some(you) => None,
            _ => serde_json::from_str(self.game).ok(),
        }
    }
}

impl Seen {
    pub fn state<'s, 't>(
        &'s mut self,
        text: &'t str,
        want_events: bool,
    ) -> Option<StateSeen<'s, 't>> {
        let parts = peek::state_parts(text, &self.lobby_raw)?;
        if !parts.lobby_known {
            self.lobby = serde_json::from_str(parts.lobby).ok()?;
            self.lobby_raw.clear();
            self.lobby_raw.push_str(parts.lobby);
        }
        let events = if want_events && parts.events != "[]" {
            serde_json::from_str(parts.events).ok()?
        } else {
            Vec::new()
        };
        Some(StateSeen {
            lobby: self.lobby.as_ref(),
            turn: peek::turn(parts.game),
            game: parts.game,
            events,
        })
    }
}
