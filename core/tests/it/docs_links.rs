//! References into the benchmark pages resolve: every `BENCHMARKS.md#anchor` and every
//! quoted section name after `BENCHMARKS.md` or `benchmarks-history.md`, in any text file
//! of the repository, names a heading of that page; and the pages speak of what was
//! measured, not of the tracker's issue or session numbers.

// A test of the core, not the core: it reads the repository's files it checks.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};

/// The pages whose sections are referred to, by the file name a reference uses.
const PAGES: [&str; 2] = ["BENCHMARKS.md", "benchmarks-history.md"];

/// Files larger than this are data, not prose (the `.jsonl` histories are skipped anyway).
const FILE_BYTES_MAX: u64 = 1 << 20;

/// Characters between a page's name and the quote that opens a section name:
/// `` docs/BENCHMARKS.md`, (" `` at most.
const GAP_CHARS_MAX: usize = 4;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The headings of a markdown page, without their `#`s.
fn headings(page: &str) -> Vec<String> {
    page.lines()
        .filter(|line| line.starts_with('#'))
        .map(|line| line.trim_start_matches('#').trim().to_string())
        .collect()
}

/// GitHub's anchor for a heading: lower case, spaces to `-`, punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// Whether `name` is a heading, or the start of one that goes on after a comma, a
/// colon or a parenthesis ("Realistic pacing" for "Realistic pacing, 1 human + ...").
fn names_a_heading(name: &str, headings: &[String]) -> bool {
    headings.iter().any(|h| {
        h == name
            || h.strip_prefix(name).is_some_and(|rest| {
                rest.starts_with(',') || rest.starts_with(':') || rest.starts_with(" (")
            })
    })
}

/// The text with every line's indentation and comment marker taken off and the lines
/// joined by one space, so that a reference wrapped over two comment lines reads whole.
fn joined(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let line = line.trim_start();
        let line = ["//!", "///", "//", "#", "*"]
            .iter()
            .find_map(|marker| line.strip_prefix(marker))
            .unwrap_or(line)
            .trim();
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(line);
    }
    out
}

/// Every reference to a section of `page` in `text`: (the anchor or the quoted name,
/// whether it is an anchor).
fn references<'t>(text: &'t str, page: &str) -> Vec<(&'t str, bool)> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices(page) {
        let after = &text[at + page.len()..];
        if let Some(rest) = after.strip_prefix('#') {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
                .unwrap_or(rest.len());
            found.push((&rest[..end], true));
            continue;
        }
        let gap = after
            .char_indices()
            .take(GAP_CHARS_MAX + 1)
            .find(|&(_, c)| !matches!(c, '`' | ',' | ' ' | '(' | ')'))
            .map(|(i, _)| i);
        if let Some(i) = gap.filter(|&i| after[i..].starts_with('"')) {
            // An opening quote: a closing one (`"...BENCHMARKS.md" next`) has a space after it.
            let name = &after[i + 1..];
            let opens = name.chars().next().is_some_and(|c| !c.is_whitespace());
            if let Some(end) = name.find('"').filter(|_| opens) {
                found.push((&name[..end], false));
            }
        }
    }
    found
}

/// The text files of the repository (no build output, no version control, no data).
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            let skipped = name.starts_with("target") || name == "node_modules";
            if !skipped && (name == ".ci" || !name.starts_with('.')) {
                text_files(&path, out);
            }
        } else if kind.is_file()
            && !name.ends_with(".jsonl")
            && name != "docs_links.rs" // this file's examples are not references
            && entry.metadata().is_ok_and(|m| m.len() <= FILE_BYTES_MAX)
        {
            out.push(path);
        }
    }
}

#[test]
fn references_to_the_benchmark_pages_name_their_headings() {
    let root = repo_root();
    let pages: Vec<(&str, Vec<String>)> = PAGES
        .iter()
        .map(|page| {
            let text = std::fs::read_to_string(root.join("docs").join(page))
                .unwrap_or_else(|e| panic!("docs/{page}: {e}"));
            (*page, headings(&text))
        })
        .collect();
    let mut files = Vec::new();
    text_files(&root, &mut files);
    let mut checked = 0;
    let mut broken = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue; // not UTF-8: not prose
        };
        let text = joined(&text);
        for (page, heads) in &pages {
            for (target, is_anchor) in references(&text, page) {
                checked += 1;
                let ok = if is_anchor {
                    heads.iter().any(|h| anchor(h) == target)
                } else {
                    names_a_heading(target, heads)
                };
                if !ok {
                    let shown = file.strip_prefix(&root).unwrap_or(file).display();
                    broken.push(format!("{shown}: {page} \"{target}\""));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "references to no heading:\n{}",
        broken.join("\n")
    );
    // The repository refers to these pages' sections: finding none means the search broke.
    assert!(checked >= 10, "only {checked} references found");
}

#[test]
fn the_benchmark_pages_name_no_issue_or_session_number() {
    for page in PAGES {
        let text = std::fs::read_to_string(repo_root().join("docs").join(page))
            .unwrap_or_else(|e| panic!("docs/{page}: {e}"));
        let lower = text.to_lowercase();
        for word in ["issue ", "session ", "issues ", "sessions "] {
            for (at, _) in lower.match_indices(word) {
                let before = lower[..at].chars().next_back();
                let next = lower[at + word.len()..].chars().next();
                let a_word = !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
                assert!(
                    !(a_word && next.is_some_and(|c| c.is_ascii_digit())),
                    "docs/{page} points at a tracker: {:?}",
                    &text[at..(at + word.len() + 4).min(text.len())]
                );
            }
        }
    }
}

#[test]
fn anchors_and_references_are_read_as_a_reader_reads_them() {
    assert_eq!(
        anchor("The store's cost per move"),
        "the-stores-cost-per-move"
    );
    assert_eq!(
        anchor("The bare room (`wizard-bench-room`)"),
        "the-bare-room-wizard-bench-room"
    );
    let text = joined(
        "see (`docs/BENCHMARKS.md`,\n/// \"Fewer wake-ups\n/// per move\") and BENCHMARKS.md#attacks, BENCHMARKS.md alone",
    );
    assert_eq!(
        references(&text, "BENCHMARKS.md"),
        vec![("Fewer wake-ups per move", false), ("attacks", true)]
    );
    let text = joined("echo \"see docs/BENCHMARKS.md\" done; \"MAX_SESSIONS 300\"");
    assert_eq!(references(&text, "BENCHMARKS.md"), vec![]);
    let heads = vec!["Realistic pacing, 1 human + 3 AI per game".to_string()];
    assert!(names_a_heading("Realistic pacing", &heads));
    assert!(!names_a_heading("Realistic", &heads));
}
