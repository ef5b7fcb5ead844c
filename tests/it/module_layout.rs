//! The module layout keeps imports one way (issue #28, item 4): each pair that once imported
//! the other keeps the name that made the cycle in a home both reach. And the binary computes
//! nothing (issue #28, item 1): no file under `src/output/` or `src/commands/` calls the
//! projector or the accumulator; the analysis is `litehit-report`'s. Code lines only
//! (comments may name the other file, or the functions).

use std::path::{Path, PathBuf};

/// `(file, a path its code must not name, where the shared name lives now)`.
const ONE_WAY: &[(&str, &str, &str)] = &[
    (
        "crates/litehit-tui/src/app.rs",
        "render::status",
        "the notice model is crates/litehit-tui/src/notice.rs",
    ),
    (
        "crates/litehit-report/src/query/totals.rs",
        "windows",
        "the query plan is crates/litehit-report/src/query/plan.rs",
    ),
    (
        "src/cli/trace_args.rs",
        "commands::",
        "DEFAULT_BLOCK_SIZE is defined beside --block-size",
    ),
];

#[test]
fn no_two_files_import_each_other_through_a_misplaced_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for &(file, forbidden, home) in ONE_WAY {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let named: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim_start().starts_with("//"))
            .filter(|(_, line)| line.contains(forbidden))
            .map(|(index, line)| (index + 1, line))
            .collect();
        assert!(
            named.is_empty(),
            "{file} names {forbidden} ({home}): {named:?}"
        );
    }
}

/// The projector's and the accumulator's names: whoever calls one computes hits. An
/// identifier starting with `project_` (`project_blocks`, `project_tiers`, ...) or equal to
/// one of the others.
const ANALYSIS_PREFIX: &str = "project_";
const ANALYSIS_NAMES: &[&str] = &[
    "hit_blocks_at",
    "knee_capacity_blocks",
    "CapacityAxisAccumulator",
    "pooled_capacity_blocks",
    "capacity_blocks_for_bytes",
];

/// The analysis names `code` uses, with their 1-based line: whole identifiers, outside
/// `//` comments.
fn analysis_names_in(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in code.lines().enumerate() {
        let code_part = line.split("//").next().unwrap_or_default();
        for word in code_part.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if word.starts_with(ANALYSIS_PREFIX) || ANALYSIS_NAMES.contains(&word) {
                found.push((index + 1, word.to_owned()));
            }
        }
    }
    found
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn the_binary_encodes_and_glues_and_computes_no_hit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for folder in ["src/output", "src/commands"] {
        rust_files(&root.join(folder), &mut files);
    }
    assert!(
        files
            .iter()
            .any(|file| file.ends_with("output/plot/mod.rs")),
        "the plot encoder is among the files read: {files:?}"
    );
    for file in files {
        let code = std::fs::read_to_string(&file).unwrap();
        let found = analysis_names_in(&code);
        assert!(
            found.is_empty(),
            "{} computes hits (the analysis is litehit-report's): {found:?}",
            file.display()
        );
    }
}

#[test]
fn a_call_of_the_projector_or_the_accumulator_is_found() {
    let code = "let hits = projector::project_blocks(&fact, 8);\n\
                // project_blocks in a comment is fine\n\
                let at = curve.hits.hit_blocks_at(blocks); // and here\n\
                let fine = curve.hit_blocks_at_bytes(bytes) + project(1);\n\
                let acc = litehit_core::projector::CapacityAxisAccumulator::new();\n";
    assert_eq!(
        analysis_names_in(code),
        [
            (1, "project_blocks".to_owned()),
            (3, "hit_blocks_at".to_owned()),
            (5, "CapacityAxisAccumulator".to_owned()),
        ]
    );
}
