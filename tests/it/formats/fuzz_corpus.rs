//! The checked-in fuzz corpus, replayed with the stable toolchain: every file of
//! `fuzz/corpus/<target>/` goes through the body of the fuzz target of that name (the very
//! function `cargo fuzz run <target>` calls), so an input that once crashed a reader, and every
//! seed, keeps passing. A missing or empty corpus folder fails the test: nothing passes by
//! finding nothing.

#[path = "../../../fuzz/src/targets.rs"]
mod targets;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// The corpus files of `target`, sorted; panics if there are none.
fn corpus_files(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("corpus folder {}: {error}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a readable corpus folder").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "corpus folder {} is empty",
        dir.display()
    );
    files
}

#[test]
fn every_corpus_file_passes_its_fuzz_target() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for &(target, body) in targets::TARGETS {
        for path in corpus_files(target) {
            let data = std::fs::read(&path).expect("a readable corpus file");
            if catch_unwind(AssertUnwindSafe(|| body(&data))).is_err() {
                failures.push(path.display().to_string());
            }
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "fuzz targets panicked on: {failures:#?}"
    );
    println!("{checked} corpus files passed");
}

#[test]
fn every_target_has_a_corpus_folder_and_nothing_else_is_there() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut folders: Vec<String> = std::fs::read_dir(&corpus)
        .unwrap_or_else(|error| panic!("corpus {}: {error}", corpus.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let mut names: Vec<String> = targets::TARGETS
        .iter()
        .map(|(name, _)| (*name).to_owned())
        .collect();
    names.sort();
    assert_eq!(folders, names, "one corpus folder per fuzz target");
    // Each target also has its cargo-fuzz entry point.
    for name in &names {
        let target = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/fuzz_targets")
            .join(format!("{name}.rs"));
        let source = std::fs::read_to_string(&target)
            .unwrap_or_else(|error| panic!("{}: {error}", target.display()));
        assert!(
            source.contains(&format!("litehit_fuzz::targets::{name}(data)")),
            "{} calls targets::{name}",
            target.display()
        );
    }
}
