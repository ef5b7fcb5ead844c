//! `docs/ARCHITECTURE.md` names every source file (issue #28): a file added without a line in
//! the code map fails here, naming it.
//!
//! The rule, kept simple so a reader can apply it by eye. Every `.rs` file under `src/` and
//! `crates/*/src/` has a *home* and a *name*:
//! * a file in a folder under its crate's `src/` has the folder's path under `src/` as its home
//!   (`hitcore/`, `facts/file/`, `output/plot/`) and its file name as its name (`key_store.rs`);
//! * a file directly in a crate's `src/` has that `src/` path as its home
//!   (`crates/litehit-live/src/`, or `src/` for the binary package) and its file name as its name.
//!
//! A file is named when one line of the document holds both its home and its name, each at the
//! start of a word: not preceded by a letter, digit, `_`, `-` or `.` (nor, for the home, by `/`). So
//! `` `hitcore/` … `key_store.rs` `` and `` `hitcore/key_store.rs` `` both name
//! `crates/litehit-core/src/hitcore/key_store.rs`, while `crates/litehit-core/src/` does not
//! count as `src/`, and `headless_output.rs` does not name `output.rs`.

use std::path::{Path, PathBuf};

const DOC: &str = "docs/ARCHITECTURE.md";

/// Every `.rs` file under `dir`, recursively, in name order.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

/// `(source root relative to the repository, e.g. "crates/litehit-core/src/")`, the binary's
/// `src/` first.
fn source_roots(root: &Path) -> Vec<String> {
    let mut roots = vec!["src/".to_owned()];
    let mut crates: Vec<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| root.join("crates").join(name).join("src").is_dir())
        .collect();
    crates.sort();
    roots.extend(crates.into_iter().map(|name| format!("crates/{name}/src/")));
    roots
}

/// Whether `needle` occurs in `line` at the start of a word: not preceded by a letter, a digit
/// or one of `joiners` (see the module doc).
fn occurs_at_word_start(line: &str, needle: &str, joiners: &str) -> bool {
    line.match_indices(needle).any(|(at, _)| {
        line[..at]
            .chars()
            .next_back()
            .is_none_or(|before| !(before.is_alphanumeric() || joiners.contains(before)))
    })
}

/// `(home, name)` of a file at `relative` (a path under its crate's source root `src_root`).
fn home_and_name(src_root: &str, relative: &str) -> (String, String) {
    match relative.rsplit_once('/') {
        Some((folder, name)) => (format!("{folder}/"), name.to_owned()),
        None => (src_root.to_owned(), relative.to_owned()),
    }
}

fn is_named(doc: &str, home: &str, name: &str) -> bool {
    doc.lines().any(|line| {
        occurs_at_word_start(line, home, "_-./") && occurs_at_word_start(line, name, "_-.")
    })
}

#[test]
fn every_source_file_is_named_in_the_architecture_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join(DOC)).unwrap();
    let mut checked = 0;
    let mut missing = Vec::new();
    for src_root in source_roots(root) {
        let mut files = Vec::new();
        rust_files(&root.join(&src_root), &mut files);
        for file in files {
            let relative = file
                .strip_prefix(root.join(&src_root))
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let (home, name) = home_and_name(&src_root, &relative);
            checked += 1;
            if !is_named(&doc, &home, &name) {
                missing.push(format!(
                    "{src_root}{relative} (write `{home}` and `{name}` on one line)"
                ));
            }
        }
    }
    // The workspace has over a hundred source files; finding few means the walk is wrong.
    assert!(checked > 100, "only {checked} source files found");
    assert!(
        missing.is_empty(),
        "{DOC} does not name these source files:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn the_rule_reads_homes_and_names_at_word_starts() {
    assert_eq!(
        home_and_name("crates/litehit-core/src/", "hitcore/key_store.rs"),
        ("hitcore/".to_owned(), "key_store.rs".to_owned())
    );
    assert_eq!(
        home_and_name("src/", "main.rs"),
        ("src/".to_owned(), "main.rs".to_owned())
    );
    assert!(is_named(
        "- `hitcore/`: `key_store.rs` the store",
        "hitcore/",
        "key_store.rs"
    ));
    assert!(is_named(
        "see `hitcore/key_store.rs`",
        "hitcore/",
        "key_store.rs"
    ));
    // The name on another line does not count.
    assert!(!is_named(
        "`hitcore/`\n`key_store.rs`",
        "hitcore/",
        "key_store.rs"
    ));
    // `crates/litehit-core/src/` is not the binary's `src/`.
    assert!(!is_named(
        "`crates/litehit-core/src/` `lib.rs`",
        "src/",
        "lib.rs"
    ));
    assert!(is_named("`src/`: `lib.rs`, `main.rs`", "src/", "main.rs"));
    // A longer file name does not name a shorter one it ends with.
    assert!(!is_named(
        "`crates/litehit-live/src/` `headless_output.rs`",
        "crates/litehit-live/src/",
        "output.rs"
    ));
}
