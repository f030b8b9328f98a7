//! Cheap looks into the server's JSON frames, so that a client decodes the parts of a
//! `state` only when it has something to do with them (its turn, its lobby, a move to
//! confirm): the simulator's players and the load generator's bots. They rely on the
//! layout the core writes (`{"type":"state","lobby":..,"game":..,"events":..}`), which
//! the tests of both keep honest by decoding every part they use.

/// A `state` frame split into its parts, still encoded, so that a client decodes only
/// the parts it needs (the lobby when it changed, the game when it acts or confirms a
/// move). Each part it uses is then checked by its own decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateParts<'a> {
    pub lobby: &'a str,
    pub game: &'a str,
    pub events: &'a str,
    /// The lobby part is the `known_lobby` given to [`state_parts`] (unchanged).
    pub lobby_known: bool,
}

/// Splits a `state` frame as the core lays it out (`None`: not one). Inside a JSON
/// string every `"` is escaped, and no nested object has a `game` or `events` key, so
/// the markers below can only be the top-level keys. `known_lobby`, the lobby part of
/// an earlier frame, spares the search when the lobby did not change.
pub fn state_parts<'a>(text: &'a str, known_lobby: &str) -> Option<StateParts<'a>> {
    const GAME: &str = ",\"game\":";
    let rest = text.strip_prefix("{\"type\":\"state\",\"lobby\":")?;
    let rest = rest.strip_suffix('}')?;
    // When the frame starts with the known lobby followed by the game's key, that key
    // is the first top-level one after the lobby, so the lobby part is the known one.
    let lobby_known = !known_lobby.is_empty()
        && rest
            .get(known_lobby.len()..)
            .is_some_and(|after| after.starts_with(GAME))
        && rest.starts_with(known_lobby);
    let game_at = if lobby_known {
        known_lobby.len()
    } else {
        find_near(rest, GAME)?
    };
    let events_at = rfind_near(rest, ",\"events\":")?;
    Some(StateParts {
        lobby: rest.get(..game_at)?,
        game: rest.get(game_at + GAME.len()..events_at)?,
        events: rest.get(events_at + 10..)?,
        lobby_known,
    })
}

/// The `type` of a server frame.
pub fn frame_type(text: &str) -> &str {
    let rest = text.strip_prefix("{\"type\":\"").unwrap_or("");
    rest.split('"').next().unwrap_or("")
}

/// For the game part of a `state` of a running game: (the viewer's seat, the seat to
/// act).
pub fn turn(game: &str) -> Option<(u8, Option<u8>)> {
    let rest = game.strip_prefix("{\"you\":")?;
    let you = leading_number(rest)?;
    let at = find_near(rest, "\"to_act\":")?;
    let rest = rest.get(at + 9..)?;
    Some((you, leading_number(rest)))
}

/// Whether each window of `hay` is `needle`, for a plain scan from either end: for a
/// match a few dozen bytes from that end it is far cheaper than building `str::find`'s
/// searcher. (`None` for an empty needle.)
fn windows_matching<'a>(
    hay: &'a str,
    needle: &'a str,
) -> Option<impl DoubleEndedIterator<Item = bool> + ExactSizeIterator + 'a> {
    let n = needle.as_bytes();
    let first = *n.first()?;
    Some(
        hay.as_bytes()
            .windows(n.len())
            .map(move |w| w[0] == first && w == n),
    )
}

/// `hay.find(needle)` for a needle expected near the start.
fn find_near(hay: &str, needle: &str) -> Option<usize> {
    windows_matching(hay, needle)?.position(|m| m)
}

/// `hay.rfind(needle)` for a needle expected near the end.
fn rfind_near(hay: &str, needle: &str) -> Option<usize> {
    windows_matching(hay, needle)?.rposition(|m| m)
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
        let s = r#"{"type":"state","lobby":{"a":[1]},"game":{"you":2,"observation":{"players":4,"to_act":3,"x":1}},"events":[]}"#;
        assert_eq!(frame_type(s), "state");
        let p = state_parts(s, "").unwrap();
        assert_eq!((p.lobby, p.events), (r#"{"a":[1]}"#, "[]"));
        assert_eq!(turn(p.game), Some((2, Some(3))));
        // A known lobby gives the same split; a wrong one is not trusted.
        assert!(!p.lobby_known);
        let known = StateParts {
            lobby_known: true,
            ..p
        };
        assert_eq!(state_parts(s, r#"{"a":[1]}"#), Some(known));
        assert_eq!(state_parts(s, r#"{"a":[2]}"#), Some(p));
        assert_eq!(state_parts(s, r#"{"a":"#), Some(p));
        assert_eq!(
            turn(r#"{"you":0,"observation":{"to_act":null}}"#),
            Some((0, None))
        );
        assert_eq!(turn("null"), None);
        let p = state_parts(
            r#"{"type":"state","lobby":null,"game":null,"events":[]}"#,
            "",
        );
        assert_eq!(p.map(|p| (p.lobby, p.game)), Some(("null", "null")));
        assert!(state_parts(r#"{"type":"state","lobby":null}"#, "").is_none());
    }

    #[test]
    fn near_searches_agree_with_str_find() {
        let hays = [
            "",
            "a",
            "abcabc",
            ",\"events\":[],\"events\":",
            "xx\"to_act\":3",
            "é\"to_act\"",
        ];
        for hay in hays {
            for needle in ["a", "bc", ",\"events\":", "\"to_act\":", "abcabcd"] {
                assert_eq!(
                    find_near(hay, needle),
                    hay.find(needle),
                    "{hay:?} {needle:?}"
                );
                assert_eq!(
                    rfind_near(hay, needle),
                    hay.rfind(needle),
                    "{hay:?} {needle:?}"
                );
            }
        }
    }
}
