//! Lean frames (PROTOCOL.md 7.5) on both ends: the frames the server sends a client
//! that takes deltas ([`numbered_state`], [`delta_frame`]) and the `state` such a
//! client holds ([`HeldState`]): full `state` frames replace it, `delta` frames patch
//! it. What it holds is laid out as the server lays out a `state` for a client without
//! deltas (no `seq`), so [`super::peek`] reads it and tests compare it byte for byte
//! with the frames such a client gets.

use super::flat::{self, Flat};
use super::merge_patch::{self, BadJson, NotExpressible};

/// The members of a `state` that a patch leaves out: the envelope and the events
/// (each frame carries its own).
const NOT_PATCHED: &[&str] = &["\"type\"", "\"events\""];

/// The full `state` `text` (as built for a client without deltas) numbered `seq`.
pub fn numbered_state(text: &str, seq: u64) -> String {
    let rest = text.strip_prefix(STATE_PREFIX).unwrap_or(text);
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(SEQ_PREFIX);
    out.push_str(itoa::Buffer::new().format(seq));
    out.push(',');
    out.push_str(rest);
    out
}

/// Writes to `out` the `delta` numbered `seq` that turns the `state` `last` (numbered
/// `seq - 1`) into the `state` `new` (both as built for a client without deltas), with
/// `new`'s events. `Err` when a merge patch cannot say the change: send `new` full.
pub fn delta_frame(
    last: &str,
    new: &str,
    seq: u64,
    out: &mut String,
) -> Result<(), NotExpressible> {
    let mark = out.len();
    out.push_str(r#"{"type":"delta","seq":"#);
    out.push_str(itoa::Buffer::new().format(seq));
    out.push_str(r#","base":"#);
    out.push_str(itoa::Buffer::new().format(seq.saturating_sub(1)));
    out.push_str(r#","patch":"#);
    let events = merge_patch::diff(last, new, NOT_PATCHED, out).and_then(|()| {
        merge_patch::members(new)
            .and_then(|ms| ms.into_iter().find(|(k, _)| *k == "\"events\""))
            .map(|(_, v)| v)
            .ok_or(NotExpressible)
    });
    match events {
        Ok(events) => {
            out.push_str(r#","events":"#);
            out.push_str(events);
            out.push('}');
            Ok(())
        }
        Err(e) => {
            out.truncate(mark);
            Err(e)
        }
    }
}

/// [`delta_frame`] from the states marked ([`Flat`]): the same frame, built comparing
/// one slice per member where both have the same members (what the server does).
pub fn delta_frame_flat(
    last: &Flat,
    new: &Flat,
    seq: u64,
    out: &mut String,
) -> Result<(), NotExpressible> {
    let mark = out.len();
    out.push_str(r#"{"type":"delta","seq":"#);
    out.push_str(itoa::Buffer::new().format(seq));
    out.push_str(r#","base":"#);
    out.push_str(itoa::Buffer::new().format(seq.saturating_sub(1)));
    out.push_str(r#","patch":"#);
    let events = flat::diff(last, new, NOT_PATCHED, out)
        .and_then(|()| new.top_member("\"events\"").ok_or(NotExpressible));
    match events {
        Ok(events) => {
            out.push_str(r#","events":"#);
            out.push_str(events);
            out.push('}');
            Ok(())
        }
        Err(e) => {
            out.truncate(mark);
            Err(e)
        }
    }
}

/// How a `state` starts, and how a numbered one does.
const STATE_PREFIX: &str = r#"{"type":"state","#;
const SEQ_PREFIX: &str = r#"{"type":"state","seq":"#;
const DELTA_PREFIX: &str = r#"{"type":"delta","#;

/// What [`HeldState::take`] did with a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    /// Not a `state` or `delta` frame: nothing changed.
    Other,
    /// A full `state` replaced what was held.
    Full,
    /// A `delta` patched it.
    Delta,
    /// A `delta` whose `base` is not the `seq` held: nothing changed; the client
    /// should send `resync` (once, until a full `state` comes).
    Gap,
}

/// The state held, and its `seq` (none before the first numbered `state`).
#[derive(Clone, Debug, Default)]
pub struct HeldState {
    seq: Option<u64>,
    text: String,
}

/// The number at the start of `s` and the rest.
fn leading_u64(s: &str) -> Option<(u64, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    Some((s.get(..end)?.parse().ok()?, s.get(end..)?))
}

impl HeldState {
    /// The state held, as a `state` frame without `seq` (empty before the first).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The `seq` of the state held.
    pub fn seq(&self) -> Option<u64> {
        self.seq
    }

    /// Takes one server frame (see [`Taken`]); `Err` when a `state` or `delta` frame
    /// does not parse.
    pub fn take(&mut self, frame: &str) -> Result<Taken, BadJson> {
        if let Some(rest) = frame.strip_prefix(SEQ_PREFIX) {
            let (seq, rest) = leading_u64(rest).ok_or(BadJson)?;
            let rest = rest.strip_prefix(',').ok_or(BadJson)?;
            self.text.clear();
            self.text.push_str(STATE_PREFIX);
            self.text.push_str(rest);
            self.seq = Some(seq);
            return Ok(Taken::Full);
        }
        if frame.starts_with(STATE_PREFIX) {
            self.text.clear();
            self.text.push_str(frame);
            self.seq = None;
            return Ok(Taken::Full);
        }
        if !frame.starts_with(DELTA_PREFIX) {
            return Ok(Taken::Other);
        }
        let members = merge_patch::members(frame).ok_or(BadJson)?;
        let get = |key: &str| {
            members
                .iter()
                .find(|(k, _)| k.get(1..k.len() - 1) == Some(key))
                .map(|(_, v)| *v)
                .ok_or(BadJson)
        };
        let number = |key: &str| get(key)?.parse::<u64>().map_err(|_| BadJson);
        let (seq, base) = (number("seq")?, number("base")?);
        if self.seq != Some(base) {
            return Ok(Taken::Gap);
        }
        let mut patched = String::with_capacity(self.text.len() + 64);
        merge_patch::apply(&self.text, get("patch")?, &mut patched)?;
        // The events are the frame's own: replaced whole, in their place.
        let mut events = String::with_capacity(get("events")?.len() + 12);
        events.push_str(r#"{"events":"#);
        events.push_str(get("events")?);
        events.push('}');
        self.text.clear();
        merge_patch::apply(&patched, &events, &mut self.text)?;
        self.seq = Some(seq);
        Ok(Taken::Delta)
    }
}

/// What kind of frame a slow reader's queue holds (`shell/outqueue.rs`): the frames
/// of a delta connection form a chain, each `delta` building on the frame before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// Not a numbered frame (a plain `state`, anything else).
    Plain,
    /// A numbered full `state`: needs nothing before it.
    Full,
    /// A `delta`: needs the frame numbered its `base`.
    Delta,
}

/// The [`Link`] of a frame, from how it starts.
pub fn link(frame: &str) -> Link {
    if frame.starts_with(DELTA_PREFIX) {
        Link::Delta
    } else if frame.starts_with(SEQ_PREFIX) {
        Link::Full
    } else {
        Link::Plain
    }
}

/// The `delta` with the effect of `first` and then `second` (whose `base` is
/// `first`'s `seq`): `first`'s `base`, `second`'s `seq` and events, the composed
/// patch ([`merge_patch::compose`]). `None` when they do not chain, `first` has events
/// (they would be lost), or one patch cannot say both.
pub fn merge_deltas(first: &str, second: &str) -> Option<String> {
    let a = merge_patch::members(first)?;
    let b = merge_patch::members(second)?;
    fn find<'a>(ms: &[(&str, &'a str)], key: &str) -> Option<&'a str> {
        ms.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
    if find(&a, "\"seq\"")? != find(&b, "\"base\"")? || find(&a, "\"events\"")? != "[]" {
        return None;
    }
    let mut out = String::with_capacity(first.len() + second.len());
    out.push_str(r#"{"type":"delta","seq":"#);
    out.push_str(find(&b, "\"seq\"")?);
    out.push_str(r#","base":"#);
    out.push_str(find(&a, "\"base\"")?);
    out.push_str(r#","patch":"#);
    merge_patch::compose(find(&a, "\"patch\"")?, find(&b, "\"patch\"")?, &mut out).ok()?;
    out.push_str(r#","events":"#);
    out.push_str(find(&b, "\"events\"")?);
    out.push('}');
    Some(out)
}
