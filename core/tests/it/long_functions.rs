//! Production code stays short: every function in a workspace crate's `src/` (tests
//! and `#[cfg(test)]` code aside) has at most `BODY_LINES_MAX` body lines, unless it is
//! in `KEPT_WHOLE` with the reason splitting it would hurt reading (the list
//! `docs/ARCHITECTURE.md` gives under "Long functions kept whole") or in
//! `NOT_YET_SPLIT`, a list that only shrinks; and every source file there has at most
//! `FILE_LINES_MAX` lines, with no exception.

// A test of the core, not the core: it reads the repository's files it checks.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeSet;

use crate::layers::rust_files;
use std::path::{Path, PathBuf};

/// Lines between a function's opening brace and its closing brace, both excluded.
const BODY_LINES_MAX: usize = 70;

/// Lines of a production source file (its tests included), at most: a file that
/// grows past it is split by role.
const FILE_LINES_MAX: usize = 800;

/// The functions that stay long, as (file from the repository's root, function name,
/// why splitting would hurt reading).
const KEPT_WHOLE: &[(&str, &str, &str)] = &[
    (
        "ai-service/src/main.rs",
        "evaluate_args",
        "a match over every flag of `evaluate`, each arm one flag",
    ),
    (
        "bench-room/src/lib.rs",
        "on_text",
        "a match over every frame kind the bare room answers, each arm one reply",
    ),
    (
        "core/src/machine/server.rs",
        "new",
        "every part of the server built from the configuration, in one read top to bottom",
    ),
    (
        "core/src/machine/server/players.rs",
        "on_message",
        "the dispatch of every client message kind to its handler",
    ),
    (
        "core/src/vocabulary/config.rs",
        "default",
        "every server setting's default, one field a line",
    ),
    (
        "core/src/vocabulary/config.rs",
        "from_pairs",
        "a match over every server variable, each arm one setting",
    ),
    (
        "loadgen/src/lib.rs",
        "finish",
        "the run's history line: one JSON literal holding every figure",
    ),
    (
        "loadgen/src/violations.rs",
        "cases",
        "the table of hostile frames and the close each must get",
    ),
    (
        "shell-sim/src/runs/driver.rs",
        "dispatch",
        "the dispatch of every simulated event kind to its actor",
    ),
    (
        "shell-smol/src/metrics.rs",
        "new",
        "every metric registered with its help text, one after another",
    ),
    (
        "shell-smol/src/metrics.rs",
        "render",
        "the table of every figure copied into the registry",
    ),
    (
        "shell-smol/src/note_log.rs",
        "log_note",
        "a match over every note kind, each arm its log line",
    ),
];

/// The long functions not split yet, as (file, function name): the list only shrinks (a
/// function split is dropped from it, and nothing is added).
const NOT_YET_SPLIT: &[(&str, &str)] = &[];

/// The codemap's section listing `KEPT_WHOLE`.
const CODEMAP_SECTION: &str = "### Long functions kept whole";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The workspace's member folders, read from the root `Cargo.toml`.
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("root Cargo.toml");
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("a members line");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// `text` with comments, string and character literals blanked to spaces, newlines
/// kept: what is left has only the code's own braces, on their own lines.
pub(crate) fn code_only(text: &str) -> Vec<u8> {
    let src = text.as_bytes();
    let mut out = src.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let mut i = 0;
    while i < src.len() {
        let rest = &src[i..];
        let end = if rest.starts_with(b"//") {
            i + rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") {
            block_comment_end(src, i)
        } else if let Some(hashes) = raw_string_start(src, i) {
            raw_string_end(src, i, hashes)
        } else if rest[0] == b'"' {
            quoted_end(src, i, b'"')
        } else if rest[0] == b'\'' {
            match char_literal_end(src, i) {
                Some(end) => end,
                None => {
                    i += 1;
                    continue;
                }
            }
        } else {
            i += 1;
            continue;
        };
        blank(&mut out, i, end);
        i = end;
    }
    out
}

/// The end of the (nestable) block comment opening at `at`.
fn block_comment_end(src: &[u8], at: usize) -> usize {
    let mut depth = 0;
    let mut i = at;
    while i < src.len() {
        if src[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if src[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    src.len()
}

/// The number of `#`s if a raw string (`r"`, `r#"`, `br#"`) opens at `at`.
fn raw_string_start(src: &[u8], at: usize) -> Option<usize> {
    let ident_before = at > 0 && (src[at - 1].is_ascii_alphanumeric() || src[at - 1] == b'_');
    if ident_before {
        return None;
    }
    let mut i = at;
    if src.get(i) == Some(&b'b') || src.get(i) == Some(&b'c') {
        i += 1;
    }
    if src.get(i) != Some(&b'r') {
        return None;
    }
    i += 1;
    let hashes = src[i..].iter().take_while(|&&b| b == b'#').count();
    (src.get(i + hashes) == Some(&b'"')).then_some(hashes)
}

/// The end of the raw string opening at `at` with `hashes` `#`s.
fn raw_string_end(src: &[u8], at: usize, hashes: usize) -> usize {
    let open = at + src[at..].iter().position(|&b| b == b'"').unwrap_or(0) + 1;
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    src[open..]
        .windows(close.len())
        .position(|w| w == close.as_slice())
        .map_or(src.len(), |p| open + p + close.len())
}

/// The end of the literal opening with `quote` at `at`, escapes skipped.
fn quoted_end(src: &[u8], at: usize, quote: u8) -> usize {
    let mut i = at + 1;
    while i < src.len() {
        match src[i] {
            b'\\' => i += 2,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    src.len()
}

/// The end of the character literal opening at `at`, or `None` for a lifetime.
fn char_literal_end(src: &[u8], at: usize) -> Option<usize> {
    if src.get(at + 1) == Some(&b'\\') {
        return Some(quoted_end(src, at, b'\''));
    }
    let width = std::str::from_utf8(&src[at + 1..(at + 5).min(src.len())])
        .or_else(|e| std::str::from_utf8(&src[at + 1..at + 1 + e.valid_up_to()]))
        .ok()
        .and_then(|s| s.chars().next())
        .map_or(1, char::len_utf8);
    (src.get(at + 1 + width) == Some(&b'\'')).then_some(at + 2 + width)
}

/// One function found: its name, the line of its `fn` (from 1), its body's lines.
#[derive(Debug, PartialEq)]
struct Function {
    name: String,
    line: usize,
    body_lines: usize,
}

/// The index just past the brace that closes the one at `open`.
pub(crate) fn matching_brace(code: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, &b) in code.iter().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether the word `word` starts at `at` in `code`, not inside a longer identifier.
pub(crate) fn word_at(code: &[u8], at: usize, word: &[u8]) -> bool {
    code[at..].starts_with(word)
        && (at == 0 || !is_ident(code[at - 1]))
        && code.get(at + word.len()).is_none_or(|&b| !is_ident(b))
}

/// The functions with a body in `text`, outside items marked `#[cfg(test)]`.
fn functions(text: &str) -> Vec<Function> {
    let code = code_only(text);
    let line_of = |at: usize| code[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    let mut found = Vec::new();
    let mut i = 0;
    while i < code.len() {
        if code[i..].starts_with(b"#[cfg(test)]") {
            i = past_item(&code, i);
        } else if word_at(&code, i, b"fn") {
            let name_at = i
                + 2
                + code[i + 2..]
                    .iter()
                    .take_while(|b| b.is_ascii_whitespace())
                    .count();
            let name_len = code[name_at..].iter().take_while(|&&b| is_ident(b)).count();
            let body = code[name_at..]
                .iter()
                .position(|&b| b == b'{' || b == b';')
                .map(|p| name_at + p)
                .filter(|&p| code[p] == b'{');
            if name_len > 0
                && let Some(open) = body
            {
                let close = matching_brace(&code, open);
                found.push(Function {
                    name: String::from_utf8_lossy(&code[name_at..name_at + name_len]).into_owned(),
                    line: line_of(i),
                    body_lines: (line_of(close) - line_of(open)).saturating_sub(1),
                });
            }
            i = name_at + name_len;
        } else {
            i += 1;
        }
    }
    found
}

/// The index just past the item that starts at the attribute at `at`: its block, or its
/// `;` if it has none.
fn past_item(code: &[u8], at: usize) -> usize {
    match code[at..].iter().position(|&b| b == b'{' || b == b';') {
        Some(p) if code[at + p] == b'{' => matching_brace(code, at + p),
        Some(p) => at + p + 1,
        None => code.len(),
    }
}

/// Every production source file (a workspace crate's `src/`), as its path from the root
/// and its text.
fn production_files(root: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for member in members(root) {
        for file in rust_files(&root.join(&member).join("src")) {
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let path = file
                .strip_prefix(root)
                .expect("under the root")
                .to_string_lossy()
                .into_owned();
            files.push((path, text));
        }
    }
    files
}

/// Every production function over the bound, as `path name (lines)`, path from the root.
fn long_functions(root: &Path) -> Vec<(String, String, usize)> {
    let mut long = Vec::new();
    for (path, text) in production_files(root) {
        for f in functions(&text) {
            if f.body_lines > BODY_LINES_MAX {
                long.push((path.clone(), f.name, f.body_lines));
            }
        }
    }
    long.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    long
}

/// The files among `files` (path, text) over `lines_max` lines, as `path: N lines`,
/// longest first.
fn long_files(files: &[(String, String)], lines_max: usize) -> Vec<String> {
    let mut long: Vec<(usize, &str)> = files
        .iter()
        .map(|(path, text)| (text.lines().count(), path.as_str()))
        .filter(|(lines, _)| *lines > lines_max)
        .collect();
    long.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    long.into_iter()
        .map(|(lines, path)| format!("{path}: {lines} lines"))
        .collect()
}

/// The (path, name) pairs the codemap lists: lines `` - `path` `name`: reason `` under
/// its section.
fn codemap_listed(codemap: &str) -> BTreeSet<(String, String)> {
    let mut listed = BTreeSet::new();
    let section = codemap
        .split_once(CODEMAP_SECTION)
        .map(|(_, rest)| rest)
        .expect("the codemap has a section on long functions");
    for line in section.lines().skip(1) {
        if line.starts_with('#') {
            break;
        }
        let Some(item) = line.strip_prefix("- `") else {
            continue;
        };
        let mut ticks = item.split('`');
        if let (Some(path), Some(_), Some(name)) = (ticks.next(), ticks.next(), ticks.next()) {
            listed.insert((path.to_string(), name.to_string()));
        }
    }
    listed
}

fn not_yet_split() -> BTreeSet<(String, String)> {
    NOT_YET_SPLIT
        .iter()
        .map(|(path, name)| (path.to_string(), name.to_string()))
        .collect()
}

fn kept_whole() -> BTreeSet<(String, String)> {
    KEPT_WHOLE
        .iter()
        .map(|(path, name, _)| (path.to_string(), name.to_string()))
        .collect()
}

#[test]
fn no_production_function_is_long_unless_kept_whole() {
    let mut kept = kept_whole();
    kept.extend(not_yet_split());
    let over: Vec<String> = long_functions(&repo_root())
        .into_iter()
        .filter(|(path, name, _)| !kept.contains(&(path.clone(), name.clone())))
        .map(|(path, name, lines)| format!("{path} {name}: {lines} lines"))
        .collect();
    assert!(
        over.is_empty(),
        "functions over {BODY_LINES_MAX} body lines (split them, or keep them whole in \
         KEPT_WHOLE and the codemap with the reason):\n{}",
        over.join("\n")
    );
}

#[test]
fn every_function_listed_is_still_long() {
    let long: BTreeSet<(String, String)> = long_functions(&repo_root())
        .into_iter()
        .map(|(path, name, _)| (path, name))
        .collect();
    let mut listed = kept_whole();
    listed.extend(not_yet_split());
    let stale: Vec<String> = listed
        .difference(&long)
        .map(|(path, name)| format!("{path} {name}"))
        .collect();
    assert!(
        stale.is_empty(),
        "listed but no longer long (or gone): drop them from NOT_YET_SPLIT, or from \
         KEPT_WHOLE and the codemap:\n{}",
        stale.join("\n")
    );
    assert!(
        KEPT_WHOLE.iter().all(|(_, _, why)| why.len() >= 20),
        "every function kept whole says why"
    );
}

#[test]
fn no_production_file_is_over_the_line_bound() {
    let files = production_files(&repo_root());
    assert!(
        files.len() >= 100,
        "only {} production files found: wrong folder?",
        files.len()
    );
    let over = long_files(&files, FILE_LINES_MAX);
    assert!(
        over.is_empty(),
        "production source files over {FILE_LINES_MAX} lines (split them by role):\n{}",
        over.join("\n")
    );
}

#[test]
fn a_file_is_measured_by_its_lines_and_named_when_long() {
    let files = vec![
        ("a/src/short.rs".to_string(), "fn a() {}\n".repeat(3)),
        ("b/src/long.rs".to_string(), "// line\n".repeat(5)),
        ("c/src/longer.rs".to_string(), "x\n".repeat(6)),
    ];
    assert_eq!(
        long_files(&files, 4),
        vec!["c/src/longer.rs: 6 lines", "b/src/long.rs: 5 lines"]
    );
    assert!(long_files(&files, 6).is_empty());
}

#[test]
fn the_codemap_lists_the_functions_kept_whole() {
    let codemap = std::fs::read_to_string(repo_root().join("docs/ARCHITECTURE.md"))
        .expect("docs/ARCHITECTURE.md");
    assert_eq!(codemap_listed(&codemap), kept_whole());
}

#[test]
fn a_function_is_measured_by_its_body_and_test_code_is_skipped() {
    let text = r##"//! fn commented() {
fn short(a: &str) -> char {
    let b = "}}}";
    let c = '{';
    let d: &'static str = r#"{"#;
    /* } */
    c
}
#[cfg(test)]
mod tests {
    fn hidden() {
    }
}
trait T { fn declared(&self); }
fn outer() {
    fn inner() {}
}
"##;
    let found = functions(text);
    let summary: Vec<(&str, usize, usize)> = found
        .iter()
        .map(|f| (f.name.as_str(), f.line, f.body_lines))
        .collect();
    assert_eq!(
        summary,
        vec![("short", 2, 5), ("outer", 15, 1), ("inner", 16, 0)]
    );
}

#[test]
fn the_codemap_section_is_read_up_to_the_next_heading() {
    let codemap = "# Map\n### Long functions kept whole\n\nIntro.\n\n- `a/src/x.rs` `run`: a match over every kind.\n- `b/src/y.rs` `table`: a table.\n## Next\n- `c/src/z.rs` `no`: elsewhere.\n";
    let listed: Vec<(String, String)> = codemap_listed(codemap).into_iter().collect();
    assert_eq!(
        listed,
        vec![
            ("a/src/x.rs".to_string(), "run".to_string()),
            ("b/src/y.rs".to_string(), "table".to_string())
        ]
    );
}
