//! Cheap looks into the server's JSON frames, so that a simulated client decodes a full
//! `state` with `wire::decode_server` only when it has something to do with it (its
//! turn, its lobby, a move to confirm). A browser renders only the newest state too.

/// A `state` frame split into its parts, still encoded, so that a client decodes only
/// the parts it needs (the lobby when it changed, the game when it acts or confirms a
/// move). Each part it uses is then checked by its own decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateParts<'a> {
    pub lobby: &'a str,
    pub game: &'a str,
    pub events: &'a str,
}

/// Splits a `state` frame as the core lays it out (`None`: not one). Inside a JSON
/// string every `"` is escaped, and no nested object has a `game` or `events` key, so
/// the markers below can only be the top-level keys.
pub fn state_parts(text: &str) -> Option<StateParts<'_>> {
    let rest = text.strip_prefix("{\"type\":\"state\",\"lobby\":")?;
    let rest = rest.strip_suffix('}')?;
    let game_at = rest.find(",\"game\":")?;
    let events_at = rest.rfind(",\"events\":")?;
    Some(StateParts {
        lobby: rest.get(..game_at)?,
        game: rest.get(game_at + 8..events_at)?,
        events: rest.get(events_at + 10..)?,
    })
}

/// The `type` of a server frame.
pub fn frame_type(text: &str) -> &str {
    let rest = text.strip_prefix("{\"type\":\"").unwrap_or("");
    rest.split('"').next().unwrap_or("")
}

/// For a `state` frame of a running game: (the viewer's seat, the seat to act).
pub fn turn(text: &str) -> Option<(u8, Option<u8>)> {
    let at = text.find("\"game\":{\"you\":")?;
    let rest = text.get(at + 14..)?;
    let you = leading_number(rest)?;
    let at = rest.find("\"to_act\":")?;
    let rest = rest.get(at + 9..)?;
    Some((you, leading_number(rest)))
}

fn leading_number(s: &str) -> Option<u8> {
    let digits: &str = &s[..s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len())];
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peeks() {
        let s = r#"{"type":"state","lobby":null,"game":{"you":2,"observation":{"players":4,"to_act":3,"x":1}}}"#;
        assert_eq!(frame_type(s), "state");
        assert_eq!(turn(s), Some((2, Some(3))));
        let s = r#"{"type":"state","game":{"you":0,"observation":{"to_act":null}}}"#;
        assert_eq!(turn(s), Some((0, None)));
        assert_eq!(turn(r#"{"type":"state","game":null}"#), None);
        let p = state_parts(r#"{"type":"state","lobby":{"a":[1]},"game":null,"events":[]}"#);
        let p = p.unwrap();
        assert_eq!((p.lobby, p.game, p.events), (r#"{"a":[1]}"#, "null", "[]"));
        assert!(state_parts(r#"{"type":"state","lobby":null}"#).is_none());
    }
}
