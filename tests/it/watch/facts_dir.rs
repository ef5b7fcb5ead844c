//! `watch --facts-out` into a directory that does not exist yet: created at start, as
//! `replay --out` creates its own (the same facts bytes land there); a path that cannot be a
//! directory fails at start, naming it; a run that publishes nothing leaves no directory
//! behind; and a symlink planted by another user at the published name is not followed.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::Path;

use crate::common::cli_bin::{Run, generate, ok, replay_to, run_in, standard_trace, write_file};
use litehit_core::workload::WorkloadConfig;

const FACTS: &str = "litehit_facts.csv";

fn trace(dir: &Path) -> std::path::PathBuf {
    let config = WorkloadConfig {
        seed: 99,
        block_size_tokens: 256,
        ..WorkloadConfig::default()
    };
    write_file(dir, "trace.jsonl", &standard_trace(&generate(config, 300)))
}

/// `watch TRACE --headless --exit-at-eof --facts-out FACTS_OUT`.
fn watch_to(trace: &Path, facts_out: &OsStr) -> Run {
    run_in(
        None,
        [
            OsStr::new("watch"),
            trace.as_os_str(),
            OsStr::new("--headless"),
            OsStr::new("--exit-at-eof"),
            OsStr::new("--facts-out"),
            facts_out,
        ],
    )
}

#[test]
fn watch_facts_out_creates_a_missing_directory_as_replay_out_does() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    ok(replay_to(
        &trace,
        &dir.path().join("replayed/deep"),
        &["--quiet"],
    ));
    let replayed = fs::read(dir.path().join("replayed/deep").join(FACTS)).unwrap();

    // A directory named with a trailing `/`, two levels missing.
    let out = dir.path().join("watched/deep");
    let spelled = format!("{}/", out.display());
    let run = watch_to(&trace, OsStr::new(&spelled));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(fs::read(out.join(FACTS)).unwrap(), replayed);

    // A named file in a missing directory.
    let named = dir.path().join("named/facts.csv");
    let run = watch_to(&trace, named.as_os_str());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(fs::read(&named).unwrap(), replayed);
}

#[test]
fn watch_facts_out_under_a_file_fails_at_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let file = write_file(dir.path(), "plain", "not a directory\n");
    let facts_out = format!("{}/sub/", file.display());
    let run = watch_to(&trace, OsStr::new(&facts_out));
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stdout.is_empty(),
        "no line before the error: {}",
        run.stdout
    );
    assert!(
        run.stderr.contains(&format!("--facts-out {facts_out}"))
            && run.stderr.contains(&file.display().to_string()),
        "{}",
        run.stderr
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), "not a directory\n");
}

#[test]
fn watch_facts_out_directory_is_removed_when_nothing_was_published() {
    let dir = tempfile::tempdir().unwrap();
    // No get/request event: no facts are written, and the run fails as `replay`'s would.
    let trace = write_file(dir.path(), "empty.jsonl", "");
    let out = dir.path().join("never/made");
    let run = watch_to(&trace, OsStr::new(&format!("{}/", out.display())));
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        !dir.path().join("never").exists(),
        "an empty directory was left behind: {}",
        run.stderr
    );
}

/// A symlink planted at the published name by another user, in a sticky world-writable
/// directory, is refused at start (the publication rules of `replay`): its target is never
/// written. Needs root to give the link another owner; skipped otherwise, unless `CI` is set.
#[test]
fn watch_facts_out_never_follows_a_planted_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let shared = dir.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = write_file(dir.path(), "victim.txt", "precious\n");
    let link = shared.join(FACTS);
    symlink(&victim, &link).unwrap();
    if std::os::unix::fs::lchown(&link, Some(65_534), Some(65_534)).is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "giving a symlink another owner needs root"
        );
        eprintln!("skipping: giving a symlink another owner needs root");
        return;
    }
    let run = watch_to(&trace, OsStr::new(&format!("{}/", shared.display())));
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("not following it"), "{}", run.stderr);
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
}
