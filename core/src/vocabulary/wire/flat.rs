//! A JSON object with where its members are, read once: what a delta connection keeps
//! of the last `state` it was sent, so that the next patch compares member by member
//! instead of reading both texts again at every level ([`merge_patch::diff`] finds
//! each object's members anew, and a `state` nests its fields three objects deep).
//!
//! The members of objects nested less than [`OPENED_DEPTH`] deep are listed in
//! document order, with marks where such an object opens and closes; deeper values are
//! kept whole. When two states have the same members in the same places (every move of
//! a game), [`diff`] writes the same patch as [`merge_patch::diff`] comparing one slice
//! per member; otherwise it is [`merge_patch::diff`].
//!
//! A connection's next `state` mostly starts with the same bytes as its last (the same
//! `type` and, between a game's moves, the same `lobby`): [`Flat::new_after`] takes the
//! marks of such leading members from the last one instead of reading them again.

use super::merge_patch::{self, NotExpressible, changed_member, push_member, skip_ws};

/// Members that are objects are opened in objects nested less deep than this: the
/// state (0) opens `lobby` and `game`, they (1) open `options` and `observation`.
const OPENED_DEPTH: u8 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A member whose value is an object that is opened.
    Open,
    /// A member kept whole.
    Leaf,
    /// The end of the last opened object.
    Close,
}

/// One mark: the member's key (with its quotes) and value, as ranges of the text
/// (`Open` has no value of its own; `Close` has no key, and its value is the empty
/// range at the end of the object it closes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    kind: Kind,
    key: (u32, u32),
    value: (u32, u32),
}

/// A JSON object's text with its members marked (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flat {
    text: String,
    entries: Vec<Entry>,
}

/// A text longer than this is not marked (positions are kept in `u32`).
const TEXT_BYTES_MAX: usize = u32::MAX as usize;

impl Flat {
    /// Marks the object `text`; gives it back when it is not an object.
    pub fn new(text: String) -> Result<Flat, String> {
        if text.len() > TEXT_BYTES_MAX {
            return Err(text);
        }
        let mut entries = Vec::with_capacity(48);
        let b = text.as_bytes();
        match mark_object(b, skip_ws(b, 0), 0, &mut entries) {
            Some(end) if skip_ws(b, end) == b.len() => Ok(Flat { text, entries }),
            _ => Err(text),
        }
    }

    /// Marks the object `text` as [`Flat::new`] does, taking the marks of its leading
    /// top-level members from `last` while `text` has the same bytes as `last` up to
    /// just past each of them (where a number would end); the rest is read.
    pub fn new_after(text: String, last: &Flat) -> Result<Flat, String> {
        if text.len() > TEXT_BYTES_MAX {
            return Err(text);
        }
        let (b, old) = (text.as_bytes(), last.text.as_bytes());
        // Bytes `[0, same)` are the same in both; `taken` marks of `last` are reused.
        let (mut same, mut taken) = (0usize, 0usize);
        let mut member_end = None;
        while let Some((end, next)) = last.top_member_end(taken) {
            let upto = end + 1;
            if upto > b.len() || upto > old.len() || b[same..upto] != old[same..upto] {
                break;
            }
            (same, taken, member_end) = (upto, next, Some(end));
        }
        let Some(end) = member_end else {
            return Flat::new(text);
        };
        let mut entries = Vec::with_capacity(last.entries.len());
        entries.extend_from_slice(&last.entries[..taken]);
        let i = skip_ws(b, end);
        let object_end = match b.get(i) {
            Some(b',') => mark_members(b, skip_ws(b, i + 1), 0, &mut entries),
            Some(b'}') => Some(i + 1),
            _ => None,
        };
        match object_end {
            Some(e) if skip_ws(b, e) == b.len() => Ok(Flat { text, entries }),
            _ => Err(text),
        }
    }

    /// The end of the value of the top-level member whose marks start at `entries[at]`,
    /// and where the next member's marks start; `None` past the last.
    fn top_member_end(&self, at: usize) -> Option<(usize, usize)> {
        let first = self.entries.get(at)?;
        match first.kind {
            Kind::Leaf => Some((first.value.1 as usize, at + 1)),
            Kind::Close => None,
            Kind::Open => {
                let mut depth = 0usize;
                for (k, e) in self.entries.iter().enumerate().skip(at) {
                    match e.kind {
                        Kind::Open => depth += 1,
                        Kind::Close => {
                            depth -= 1;
                            if depth == 0 {
                                return Some((e.value.1 as usize, k + 1));
                            }
                        }
                        Kind::Leaf => {}
                    }
                }
                None
            }
        }
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn slice(&self, (from, to): (u32, u32)) -> &str {
        self.text.get(from as usize..to as usize).unwrap_or("")
    }

    /// The value of the top-level member `key` (with its quotes).
    pub fn top_member(&self, key: &str) -> Option<&str> {
        let mut depth = 0usize;
        for e in &self.entries {
            match e.kind {
                Kind::Leaf if depth == 0 && self.slice(e.key) == key => {
                    return Some(self.slice(e.value));
                }
                Kind::Leaf => {}
                Kind::Open => depth += 1,
                Kind::Close => depth = depth.saturating_sub(1),
            }
        }
        None
    }

    /// Whether both list the same members in the same places.
    fn same_shape(&self, other: &Flat) -> bool {
        self.entries.len() == other.entries.len()
            && self.entries.iter().zip(&other.entries).all(|(a, b)| {
                a.kind == b.kind
                    && (a.kind == Kind::Close || self.slice(a.key) == other.slice(b.key))
            })
    }
}

/// Marks the members of the object at `i` (nested `depth` deep) into `entries`;
/// returns the end of the object.
fn mark_object(b: &[u8], i: usize, depth: u8, entries: &mut Vec<Entry>) -> Option<usize> {
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    mark_members(b, i, depth, entries)
}

/// Marks the members of an object nested `depth` deep from the key at `i` on; returns
/// the end of the object.
fn mark_members(b: &[u8], mut i: usize, depth: u8, entries: &mut Vec<Entry>) -> Option<usize> {
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = merge_patch::string_end(b, i)?;
        let key = (i as u32, key_end as u32);
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let end = if depth < OPENED_DEPTH && b.get(i) == Some(&b'{') {
            entries.push(Entry {
                kind: Kind::Open,
                key,
                value: (0, 0),
            });
            let end = mark_object(b, i, depth + 1, entries)?;
            entries.push(Entry {
                kind: Kind::Close,
                key: (0, 0),
                value: (end as u32, end as u32),
            });
            end
        } else {
            let end = merge_patch::value_end(b, i)?;
            entries.push(Entry {
                kind: Kind::Leaf,
                key,
                value: (i as u32, end as u32),
            });
            end
        };
        i = skip_ws(b, end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The merge patch that turns `old` into `new`, leaving out their top-level members
/// named in `skip`: byte for byte what [`merge_patch::diff`] writes for their texts.
pub fn diff(old: &Flat, new: &Flat, skip: &[&str], out: &mut String) -> Result<(), NotExpressible> {
    if !old.same_shape(new) {
        return merge_patch::diff(&old.text, &new.text, skip, out);
    }
    let mark = out.len();
    let r = diff_same_shape(old, new, skip, out);
    if r.is_err() {
        out.truncate(mark);
    }
    r
}

fn diff_same_shape(
    old: &Flat,
    new: &Flat,
    skip: &[&str],
    out: &mut String,
) -> Result<(), NotExpressible> {
    out.push('{');
    let mut first = true;
    // Per opened object: where its member starts in `out` and `first` before it.
    let mut open: Vec<(usize, bool)> = Vec::with_capacity(OPENED_DEPTH as usize);
    // Depth inside a skipped top-level object (0: not skipping).
    let mut skipping = 0usize;
    for (o, n) in old.entries.iter().zip(&new.entries) {
        if skipping > 0 {
            match n.kind {
                Kind::Open => skipping += 1,
                Kind::Close => skipping -= 1,
                Kind::Leaf => {}
            }
            continue;
        }
        let key = new.slice(n.key);
        let skipped = open.is_empty() && skip.contains(&key);
        match n.kind {
            Kind::Open if skipped => skipping = 1,
            Kind::Open => {
                open.push((out.len(), first));
                push_member(out, &mut first, key, "{");
                first = true;
            }
            Kind::Close => {
                let (at, was_first) = open.pop().ok_or(NotExpressible)?;
                if first {
                    out.truncate(at);
                    first = was_first;
                } else {
                    out.push('}');
                    first = false;
                }
            }
            Kind::Leaf if skipped => {}
            Kind::Leaf => {
                let (ov, nv) = (old.slice(o.value), new.slice(n.value));
                if ov != nv {
                    changed_member(key, ov, nv, out, &mut first)?;
                }
            }
        }
    }
    out.push('}');
    Ok(())
}
