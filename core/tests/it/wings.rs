//! The codemap, the crate doc and the folders agree: every file under `core/src` is
//! named by the core's part of `docs/ARCHITECTURE.md`'s codemap, and every file the
//! codemap's first column names exists; every wing and every module of a wing (a file
//! or a folder) is named by `core/src/lib.rs`'s crate doc; and the crate doc's drive
//! contract names every public method of `Server` that a shell (`shell-smol/src`,
//! `shell-sim/src`) calls.

// A test of the core, not the core: it reads the repository's files it checks.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::layers::rust_files;
use crate::long_functions::{code_only, matching_brace, word_at};

/// The core's wings, as folders under `core/src` and as modules.
const WINGS: [&str; 3] = ["machine", "vocabulary", "shell"];

/// The shells' sources, from the repository's root.
const SHELL_SOURCES: [&str; 2] = ["shell-smol/src", "shell-sim/src"];

/// The heading of the codemap in `docs/ARCHITECTURE.md`.
const CODEMAP_HEADING: &str = "\n## Codemap\n";

/// The heading of the crate doc's section listing what a shell calls.
const DRIVE_CONTRACT_HEADING: &str = "# The drive contract\n";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `.rs` file under `core/src`, as its path from there with `/` separators.
fn core_files(root: &Path) -> Vec<String> {
    let src = root.join("core/src");
    rust_files(&src)
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&src).expect("under core/src");
            rel.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect()
}

/// The core's part of the codemap: from its heading up to the first line that opens
/// with another crate's folder (`` `shell-smol/` ``), or the next section.
fn core_codemap(architecture: &str) -> &str {
    let (_, rest) = architecture
        .split_once(CODEMAP_HEADING)
        .expect("docs/ARCHITECTURE.md has a codemap");
    let mut end = 0;
    for line in rest.split_inclusive('\n') {
        let other_crate = line
            .strip_prefix('`')
            .and_then(|l| l.split_once('`'))
            .is_some_and(|(folder, _)| folder.ends_with('/') && folder != "core/");
        if line.starts_with("## ") || other_crate {
            break;
        }
        end += line.len();
    }
    &rest[..end]
}

/// The code spans of `line`: the text between pairs of backticks.
fn code_spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// Whether `codemap` names `file` (a path from `core/src`): a code span holding its
/// whole path, or a table row naming its folder (`dir/`) and its own name (a folder's
/// `mod.rs` by the folder alone).
fn codemap_names(codemap: &str, file: &str) -> bool {
    codemap.lines().any(|line| {
        let spans = code_spans(line);
        if spans.contains(&file) {
            return true;
        }
        let Some((dir, name)) = file.rsplit_once('/') else {
            return false;
        };
        let folder = format!("{dir}/");
        line.starts_with('|')
            && spans.contains(&folder.as_str())
            && (name == "mod.rs" || spans.contains(&name))
    })
}

/// The paths the codemap's first column names (code spans ending in `.rs` or `/`).
fn codemap_first_column(codemap: &str) -> Vec<String> {
    codemap
        .lines()
        .filter_map(|line| line.strip_prefix('|'))
        .filter_map(|row| row.split('|').next())
        .flat_map(code_spans)
        .filter(|span| span.ends_with(".rs") || span.ends_with('/'))
        .map(str::to_string)
        .collect()
}

/// The wings and each wing's modules (a file `wing/x.rs` or a folder `wing/x/`), as
/// module paths (`machine`, `machine::server`).
fn wing_modules(files: &[String]) -> BTreeSet<String> {
    let mut modules = BTreeSet::new();
    for file in files {
        let mut parts = file.split('/');
        let (Some(wing), Some(second)) = (parts.next(), parts.next()) else {
            continue;
        };
        if !WINGS.contains(&wing) {
            continue;
        }
        modules.insert(wing.to_string());
        let module = second.strip_suffix(".rs").unwrap_or(second);
        if module != "mod" {
            modules.insert(format!("{wing}::{module}"));
        }
    }
    modules
}

/// The crate doc of `lib`: its `//!` lines without the marker.
fn crate_doc(lib: &str) -> String {
    lib.lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crate doc's drive contract: from its heading up to the next heading.
fn drive_contract(doc: &str) -> &str {
    let (_, rest) = doc
        .split_once(DRIVE_CONTRACT_HEADING)
        .expect("the crate doc has a drive contract");
    rest.split_once("\n# ").map_or(rest, |(section, _)| section)
}

/// Whether `text` names `method` as the drive contract does: called (`.m(`, `::m(`)
/// or in code (`` `m` ``).
fn contract_names(text: &str, method: &str) -> bool {
    [
        format!(".{method}("),
        format!("::{method}("),
        format!("`{method}`"),
    ]
    .iter()
    .any(|form| text.contains(form.as_str()))
}

/// The index of the first `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The names of the `pub fn`s in the `impl Server` blocks of `text`.
fn server_methods(text: &str) -> BTreeSet<String> {
    let code = code_only(text);
    let mut names = BTreeSet::new();
    let mut i = 0;
    while let Some(p) = find(&code[i..], b"impl Server {") {
        let open = i + p + b"impl Server ".len();
        let close = matching_brace(&code, open);
        let block = &code[open..close];
        let mut j = 0;
        while let Some(q) = find(&block[j..], b"pub fn ") {
            let at = j + q;
            let name_at = at + b"pub fn ".len();
            let name_len = block[name_at..]
                .iter()
                .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'_')
                .count();
            if word_at(block, at, b"pub") && name_len > 0 {
                names.insert(String::from_utf8_lossy(&block[name_at..name_at + name_len]).into());
            }
            j = name_at;
        }
        i = close;
    }
    names
}

/// Which of `methods` `text` calls (`.m(` or `Server::m(`), outside comments and
/// string literals.
fn called(text: &str, methods: &BTreeSet<String>) -> BTreeSet<String> {
    let code = String::from_utf8_lossy(&code_only(text)).into_owned();
    methods
        .iter()
        .filter(|m| code.contains(&format!(".{m}(")) || code.contains(&format!("Server::{m}(")))
        .cloned()
        .collect()
}

/// Every public method of `Server`, read from `core/src/machine/server.rs` and the
/// files of its folder.
fn all_server_methods(root: &Path) -> BTreeSet<String> {
    let machine = root.join("core/src/machine");
    let mut files = vec![machine.join("server.rs")];
    files.extend(rust_files(&machine.join("server")));
    files
        .iter()
        .flat_map(|f| server_methods(&read(f)))
        .collect()
}

/// The public methods of `Server` the shells call.
fn called_by_shells(root: &Path) -> BTreeSet<String> {
    let methods = all_server_methods(root);
    SHELL_SOURCES
        .iter()
        .flat_map(|dir| rust_files(&root.join(dir)))
        .flat_map(|f| called(&read(&f), &methods))
        .collect()
}

#[test]
fn the_codemap_names_every_file_of_the_core() {
    let root = repo_root();
    let architecture = read(&root.join("docs/ARCHITECTURE.md"));
    let codemap = core_codemap(&architecture);
    let files = core_files(&root);
    assert!(files.len() >= 50, "too few files under core/src: {files:?}");
    let missing: Vec<&String> = files
        .iter()
        .filter(|f| !codemap_names(codemap, f))
        .collect();
    assert_none(
        "files under core/src the codemap of docs/ARCHITECTURE.md does not name (a row \
         naming the path, or its folder `dir/` and the file's name)",
        &missing,
    );
}

#[test]
fn every_file_the_codemap_lists_exists() {
    let root = repo_root();
    let architecture = read(&root.join("docs/ARCHITECTURE.md"));
    let listed = codemap_first_column(core_codemap(&architecture));
    assert!(listed.len() >= 50, "too few rows in the core's codemap");
    let src = root.join("core/src");
    let gone: Vec<&String> = listed.iter().filter(|p| !src.join(p).exists()).collect();
    assert_none(
        "the core's codemap lists paths core/src does not hold",
        &gone,
    );
}

#[test]
fn the_crate_doc_names_every_wing_and_module() {
    let root = repo_root();
    let doc = crate_doc(&read(&root.join("core/src/lib.rs")));
    let modules = wing_modules(&core_files(&root));
    assert!(
        WINGS.iter().all(|w| modules.contains(*w)) && modules.len() >= 30,
        "the wings' modules were not found: {modules:?}"
    );
    let missing: Vec<&String> = modules
        .iter()
        .filter(|m| !doc.contains(&format!("`{m}`")))
        .collect();
    assert_none(
        "modules the crate doc of core/src/lib.rs does not name (as [`wing::module`])",
        &missing,
    );
}

#[test]
fn the_drive_contract_names_every_server_method_a_shell_calls() {
    let root = repo_root();
    let doc = crate_doc(&read(&root.join("core/src/lib.rs")));
    let contract = drive_contract(&doc);
    let calls = called_by_shells(&root);
    assert!(
        ["handle", "poll_timeout", "new"]
            .iter()
            .all(|m| calls.contains(*m)),
        "the shells' calls were not found: {calls:?}"
    );
    let missing: Vec<&String> = calls
        .iter()
        .filter(|m| !contract_names(contract, m))
        .collect();
    assert_none(
        "methods of Server the shells call that the drive contract of core/src/lib.rs \
         does not name",
        &missing,
    );
}

/// Fails with `what`, then each of `found` on a line, unless `found` is empty.
fn assert_none(what: &str, found: &[&String]) {
    let lines: Vec<&str> = found.iter().map(|x| x.as_str()).collect();
    assert!(found.is_empty(), "{what}:\n{}", lines.join("\n"));
}

#[test]
fn a_file_is_named_by_its_path_or_by_its_folder_and_name() {
    let codemap = "| `a/b.rs`, `a/b/` | x (`c.rs`) |\n| `d/` | the rest |\nprose `e/` `f.rs`\n";
    assert!(codemap_names(codemap, "a/b.rs"));
    assert!(codemap_names(codemap, "a/b/c.rs"));
    assert!(codemap_names(codemap, "d/mod.rs"));
    assert!(!codemap_names(codemap, "a/b/z.rs"));
    assert!(!codemap_names(codemap, "d/g.rs"));
    assert!(
        !codemap_names(codemap, "e/f.rs"),
        "only a table row names by folder"
    );
    assert_eq!(codemap_first_column(codemap), vec!["a/b.rs", "a/b/", "d/"]);
}

#[test]
fn the_core_codemap_ends_at_the_next_crate() {
    let architecture = "# A\n## Codemap\n`core/` (x;\n`core/tests/t.rs` holds it):\n| `lib.rs` | y |\n`shell-smol/` (z):\n| `main.rs` | w |\n";
    let codemap = core_codemap(architecture);
    assert!(codemap_names(codemap, "lib.rs"));
    assert!(!codemap_names(codemap, "main.rs"));
}

#[test]
fn public_methods_of_server_and_their_calls_are_found() {
    let core = "impl Server {\n    pub fn handle(&mut self) { let s = \"pub fn fake(\"; }\n    pub(super) fn inner(&self) {}\n    // pub fn commented()\n}\nimpl Other {\n    pub fn other(&self) {}\n}\nimpl Server {\n    pub fn restore() {}\n}\n";
    let methods = server_methods(core);
    assert_eq!(
        methods.iter().map(String::as_str).collect::<Vec<_>>(),
        vec!["handle", "restore"]
    );
    let shell = "// server.restore(x)\nlet s = Server::restore(a);\nserver.handle(now);\n";
    assert_eq!(called(shell, &methods), methods);
    assert_eq!(called("// server.handle(now)\n", &methods), BTreeSet::new());
    assert!(contract_names("server.handle(now)", "handle"));
    assert!(contract_names("calls `check` too", "check"));
    assert!(!contract_names("handled", "handle"));
}

#[test]
fn the_wings_modules_are_read_from_the_files() {
    let files: Vec<String> = [
        "lib.rs",
        "machine/mod.rs",
        "machine/server.rs",
        "machine/server/a.rs",
        "shell/ws/x.rs",
    ]
    .iter()
    .map(|f| f.to_string())
    .collect();
    let modules: Vec<String> = wing_modules(&files).into_iter().collect();
    assert_eq!(
        modules,
        vec!["machine", "machine::server", "shell", "shell::ws"]
    );
}
