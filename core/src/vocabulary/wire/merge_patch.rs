//! JSON Merge Patch (RFC 7386) on JSON text, keeping every object's member order: the
//! `patch` of a `delta` frame (PROTOCOL.md 7.5) is built, applied and composed here
//! without building a tree of values.
//!
//! A merge patch replaces arrays and scalars whole, merges objects member by member and
//! deletes a member whose patch value is `null`. Two things it cannot say, so the
//! builder ([`diff`]) reports them as [`NotExpressible`] and the server sends a full
//! `state` instead: a member that becomes `null` (the patch would delete it), and an
//! object whose members change order. New members are appended at the end of their
//! object, as [`apply`] (and every JavaScript client) does.
//!
//! The text is JSON as the server writes it; whitespace between tokens is tolerated.
//! Keys are compared as written (the server's keys have no escapes).

/// What [`diff`] or [`compose`] cannot say as one merge patch (see the module
/// documentation): the caller sends a full `state`, or keeps both patches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotExpressible;

/// Not JSON as expected (the sender's fault): a value that does not parse, or a patch
/// that is not an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadJson;

pub(super) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The end of the string starting at `i` (a `"`), after its closing quote.
pub(super) fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The end of the value starting at `i` (no leading whitespace).
pub(super) fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// The members of the object `text` as (key with its quotes, value) slices, in order;
/// `None` when `text` is not an object.
pub fn members(text: &str) -> Option<Vec<(&str, &str)>> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut out = Vec::with_capacity(24);
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return (skip_ws(b, i + 1) == b.len()).then_some(out);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(b, i)?;
        let key = text.get(i..key_end)?;
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let end = value_end(b, i)?;
        out.push((key, text.get(i..end)?));
        i = skip_ws(b, end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return (skip_ws(b, i + 1) == b.len()).then_some(out),
            _ => return None,
        }
    }
}

fn is_object(v: &str) -> bool {
    v.starts_with('{')
}

fn is_null(v: &str) -> bool {
    v == "null"
}

/// Whether `v`, given whole as a patch value, would not arrive as written: an object
/// with a `null` member at any depth of objects (the patch would delete it instead).
/// Arrays are replaced whole, so nulls inside them are kept.
fn has_null_member(v: &str) -> bool {
    is_object(v)
        && members(v).is_none_or(|ms| {
            ms.iter()
                .any(|(_, m)| is_null(m) || (is_object(m) && has_null_member(m)))
        })
}

pub(super) fn push_member(out: &mut String, first: &mut bool, key: &str, value: &str) {
    if !*first {
        out.push(',');
    }
    *first = false;
    out.push_str(key);
    out.push(':');
    out.push_str(value);
}

/// Appends to `out` the members of a merge patch that turns the object `old` into the
/// object `new` (nothing when they are equal); `first` says whether no member was
/// written before in the object being built. Members of `skip` (keys with their
/// quotes) are left out on both sides.
fn diff_members(
    old: &str,
    new: &str,
    skip: &[&str],
    out: &mut String,
    first: &mut bool,
) -> Result<(), NotExpressible> {
    let old_ms = members(old).ok_or(NotExpressible)?;
    let new_ms = members(new).ok_or(NotExpressible)?;
    let kept = |k: &&str| !skip.contains(k);
    // The members both hold must keep their order, and new ones come after them all
    // (where `apply` appends them).
    let mut at = 0usize;
    let mut added = false;
    for (k, v) in new_ms.iter().filter(|(k, _)| kept(k)) {
        match old_ms[at..].iter().position(|(ok, _)| ok == k) {
            Some(p) if !added => {
                // Members the new object no longer holds, before this one.
                for (ok, _) in &old_ms[at..at + p] {
                    if kept(ok) {
                        push_member(out, first, ok, "null");
                    }
                }
                let ov = old_ms[at + p].1;
                at += p + 1;
                if ov != *v {
                    changed_member(k, ov, v, out, first)?;
                }
            }
            // A member the old object held later (reordered) or after a new one.
            Some(_) => return Err(NotExpressible),
            None if old_ms.iter().any(|(ok, _)| ok == k) => return Err(NotExpressible),
            None => {
                if is_null(v) || has_null_member(v) {
                    return Err(NotExpressible);
                }
                added = true;
                push_member(out, first, k, v);
            }
        }
    }
    for (ok, _) in &old_ms[at..] {
        if kept(ok) {
            push_member(out, first, ok, "null");
        }
    }
    Ok(())
}

/// Appends to `out` the patch member saying that member `key` (with its quotes) went
/// from `old` to `new` (they differ): objects merged member by member, anything else
/// whole; `first` as in [`diff_members`].
pub(super) fn changed_member(
    key: &str,
    old: &str,
    new: &str,
    out: &mut String,
    first: &mut bool,
) -> Result<(), NotExpressible> {
    if is_null(new) {
        return Err(NotExpressible);
    }
    if is_object(new) && is_object(old) {
        let mark = out.len();
        let was_first = *first;
        push_member(out, first, key, "{");
        let mut inner_first = true;
        diff_members(old, new, &[], out, &mut inner_first)?;
        if inner_first {
            out.truncate(mark);
            *first = was_first;
        } else {
            out.push('}');
        }
    } else if has_null_member(new) {
        return Err(NotExpressible);
    } else {
        push_member(out, first, key, new);
    }
    Ok(())
}

/// A merge patch that turns the object `old` into the object `new`, leaving out the
/// members named in `skip` (keys with their quotes, e.g. `"\"events\""`): `{}` when
/// they are equal. Applied to `old` (without those members) it gives `new` (without
/// them) byte for byte.
pub fn diff(old: &str, new: &str, skip: &[&str], out: &mut String) -> Result<(), NotExpressible> {
    let mark = out.len();
    out.push('{');
    let mut first = true;
    match diff_members(old, new, skip, out, &mut first) {
        Ok(()) => {
            out.push('}');
            Ok(())
        }
        Err(e) => {
            out.truncate(mark);
            Err(e)
        }
    }
}

/// Applies `patch` to the value `target` as RFC 7386 says, writing the result
/// compactly: members keep their place, new ones are appended, `null` deletes.
pub fn apply(target: &str, patch: &str, out: &mut String) -> Result<(), BadJson> {
    if !is_object(patch) {
        let b = patch.as_bytes();
        let end = value_end(b, 0).ok_or(BadJson)?;
        out.push_str(patch.get(..end).ok_or(BadJson)?);
        return Ok(());
    }
    let patch_ms = members(patch).ok_or(BadJson)?;
    let target_ms = if is_object(target) {
        members(target).ok_or(BadJson)?
    } else {
        Vec::new()
    };
    out.push('{');
    let mut first = true;
    for (k, v) in &target_ms {
        match patch_ms.iter().find(|(pk, _)| pk == k) {
            None => push_member(out, &mut first, k, v),
            Some((_, pv)) if is_null(pv) => {}
            Some((_, pv)) => {
                if !first {
                    out.push(',');
                }
                first = false;
                out.push_str(k);
                out.push(':');
                apply(v, pv, out)?;
            }
        }
    }
    for (k, pv) in &patch_ms {
        if is_null(pv) || target_ms.iter().any(|(tk, _)| tk == k) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(k);
        out.push(':');
        apply("null", pv, out)?;
    }
    out.push('}');
    Ok(())
}

/// One merge patch with the effect of applying `first` and then `second`, for every
/// target: a slow reader's queued delta merged into its successor. `Err` when no single
/// merge patch has that effect (a member deleted or set to a scalar by `first` and set
/// again by `second`, where its place or its merging would differ); then both are kept.
pub fn compose(first: &str, second: &str, out: &mut String) -> Result<(), NotExpressible> {
    let mark = out.len();
    let r = compose_into(first, second, out);
    if r.is_err() {
        out.truncate(mark);
    }
    r
}

fn compose_into(first: &str, second: &str, out: &mut String) -> Result<(), NotExpressible> {
    if !is_object(second) {
        out.push_str(second);
        return Ok(());
    }
    if !is_object(first) {
        // `first` replaced the value (or deleted it): `second` then merges into that
        // value, which one patch cannot say for every target.
        return Err(NotExpressible);
    }
    let a = members(first).ok_or(NotExpressible)?;
    let b = members(second).ok_or(NotExpressible)?;
    out.push('{');
    let mut f = true;
    for (k, av) in &a {
        match b.iter().find(|(bk, _)| bk == k) {
            None => push_member(out, &mut f, k, av),
            Some((_, bv)) => {
                if is_null(av) && !is_null(bv) {
                    // Deleted, then added again at the end of its object.
                    return Err(NotExpressible);
                }
                if !f {
                    out.push(',');
                }
                f = false;
                out.push_str(k);
                out.push(':');
                if is_object(bv) {
                    compose_into(av, bv, out)?;
                } else {
                    out.push_str(bv);
                }
            }
        }
    }
    for (k, bv) in &b {
        if !a.iter().any(|(ak, _)| ak == k) {
            push_member(out, &mut f, k, bv);
        }
    }
    out.push('}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(t: &str, p: &str) -> String {
        let mut s = String::new();
        apply(t, p, &mut s).unwrap();
        s
    }

    #[test]
    fn rfc_7386_examples() {
        assert_eq!(applied(r#"{"a":"b"}"#, r#"{"a":"c"}"#), r#"{"a":"c"}"#);
        assert_eq!(
            applied(r#"{"a":"b"}"#, r#"{"b":"c"}"#),
            r#"{"a":"b","b":"c"}"#
        );
        assert_eq!(applied(r#"{"a":"b"}"#, r#"{"a":null}"#), r#"{}"#);
        assert_eq!(
            applied(r#"{"a":[{"b":"c"}]}"#, r#"{"a":[1]}"#),
            r#"{"a":[1]}"#
        );
        assert_eq!(
            applied(r#"{"e":null}"#, r#"{"a":1}"#),
            r#"{"e":null,"a":1}"#
        );
        assert_eq!(applied(r#"[1,2]"#, r#"{"a":"b","c":null}"#), r#"{"a":"b"}"#);
        assert_eq!(
            applied(r#"{}"#, r#"{"a":{"bb":{"ccc":null}}}"#),
            r#"{"a":{"bb":{}}}"#
        );
    }

    #[test]
    fn a_value_becoming_null_is_not_expressible() {
        let mut s = String::new();
        assert_eq!(
            diff(r#"{"a":1}"#, r#"{"a":null}"#, &[], &mut s),
            Err(NotExpressible)
        );
        assert_eq!(s, "");
        assert_eq!(
            diff(r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1}"#, &[], &mut s),
            Err(NotExpressible)
        );
        diff(r#"{"a":null}"#, r#"{"a":{"x":1}}"#, &[], &mut s).unwrap();
        assert_eq!(s, r#"{"a":{"x":1}}"#);
    }
}
