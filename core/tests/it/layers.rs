//! The wings' order, read from the sources: the vocabulary imports neither the machine
//! nor the shell contract, and the shell contract does not import the machine (a shell
//! reaches the machine only through `Server`, which it names itself).
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// Every `.rs` file under `dir`, sorted.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for entry in entries {
            let path = entry
                .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
                .path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The lines of `text` (outside comments) that name one of `wings`, as `line: text`.
fn naming(text: &str, wings: &[&str]) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .filter(|(_, line)| {
            wings.iter().any(|w| {
                line.contains(&format!("crate::{w}")) || line.contains(&format!("wizard_core::{w}"))
            })
        })
        .map(|(n, line)| format!("{}: {}", n + 1, line.trim()))
        .collect()
}

/// Every line under `wing` that names one of `forbidden`.
fn imports(wing: &str, forbidden: &[&str]) -> Vec<String> {
    let dir = Path::new(SRC).join(wing);
    let files = rust_files(&dir);
    assert!(
        files.len() >= 5,
        "{}: too few files, wrong folder?",
        dir.display()
    );
    let mut found = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for line in naming(&text, forbidden) {
            found.push(format!("{}:{line}", file.display()));
        }
    }
    found
}

#[test]
fn the_vocabulary_imports_neither_the_machine_nor_the_shell() {
    let found = imports("vocabulary", &["machine", "shell"]);
    assert!(
        found.is_empty(),
        "the vocabulary reaches up:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_shell_contract_does_not_import_the_machine() {
    let found = imports("shell", &["machine"]);
    assert!(
        found.is_empty(),
        "the shell contract reaches into the machine:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_line_naming_a_wing_is_found_and_a_comment_is_not() {
    let text = "//! see crate::machine::server\nuse crate::machine::server::Server;\nuse crate::vocabulary::time::Time;\n";
    assert_eq!(
        naming(text, &["machine"]),
        vec!["2: use crate::machine::server::Server;"]
    );
    assert_eq!(naming(text, &["shell"]), Vec::<String>::new());
}
