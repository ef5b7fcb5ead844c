//! `watch --headless` as the systemd unit of `docs/OPERATIONS.md` runs it: a service user
//! (no write access to its working directory, `/` under systemd) and no `--facts-out`. It
//! must start, and write nothing where nothing was asked
//! ([#27](https://github.com/litehit/litehit/issues/27), High 2).
//!
//! As root, the monitor runs as uid/gid 65534 through `setpriv` (util-linux), since root
//! writes everywhere; otherwise as the test's own user, in a directory made read-only.

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::cli_bin::{NO_CONFIG_HOME, generate, standard_trace};
use litehit_core::workload::WorkloadConfig;

/// The unprivileged user (`nobody`) the monitor runs as when the tests run as root.
const NOBODY: &str = "65534";

/// A place the unprivileged user can run the binary from, and a read-only directory.
struct Setup {
    root: tempfile::TempDir,
    binary: PathBuf,
    read_only: PathBuf,
    trace: PathBuf,
    requests: usize,
}

impl Setup {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        // Every directory on the way is searchable by anyone (a tempdir is 0700).
        fs::set_permissions(root.path(), fs::Permissions::from_mode(0o755)).unwrap();
        // The test binary's own path may not be reachable by another user: a link (or a copy)
        // of the binary, mode 0755, in the tempdir.
        let binary = root.path().join("litehit");
        if fs::hard_link(env!("CARGO_BIN_EXE_litehit"), &binary).is_err() {
            fs::copy(env!("CARGO_BIN_EXE_litehit"), &binary).unwrap();
        }
        fs::set_permissions(&binary, fs::Permissions::from_mode(0o755)).unwrap();
        let requests = generate(WorkloadConfig::default(), 300);
        let trace = root.path().join("trace.jsonl");
        fs::write(&trace, standard_trace(&requests)).unwrap();
        fs::set_permissions(&trace, fs::Permissions::from_mode(0o644)).unwrap();
        let read_only = root.path().join("cwd");
        fs::create_dir(&read_only).unwrap();
        fs::set_permissions(&read_only, fs::Permissions::from_mode(0o555)).unwrap();
        Self {
            root,
            binary,
            read_only,
            trace,
            requests: requests.len(),
        }
    }

    /// `litehit ARGS` in `cwd` as a user who cannot write there.
    fn unprivileged(&self, cwd: &Path, args: &[&str]) -> (Option<i32>, String, String) {
        let mut command = if rustix::process::geteuid().is_root() {
            let mut command = Command::new("setpriv");
            command
                .args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups"])
                .arg(&self.binary);
            command
        } else {
            Command::new(&self.binary)
        };
        let output = command
            .args(args)
            .current_dir(cwd)
            .env("XDG_CONFIG_HOME", NO_CONFIG_HOME)
            .env("NO_COLOR", "1")
            .env_remove("LITEHIT_CONFIG")
            .output()
            .expect("setpriv (util-linux) and the binary run");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        // Writable again, so the tempdir can be removed.
        let _ = fs::set_permissions(&self.read_only, fs::Permissions::from_mode(0o755));
    }
}

/// The last JSON line's `state` and its total requests.
fn last_line(stdout: &str) -> (String, u64) {
    let last: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("a JSON line")).unwrap();
    (
        last["state"].as_str().unwrap().to_owned(),
        last["total"]["requests"].as_u64().unwrap(),
    )
}

#[test]
fn the_documented_unit_starts_in_a_read_only_working_directory() {
    let setup = Setup::new();
    let trace = setup.trace.to_str().unwrap();
    // The unit's command line (docs/OPERATIONS.md), its metrics port 0, reading to the end.
    let unit = [
        "watch",
        trace,
        "--headless",
        "--capacity-gb",
        "10,40,80",
        "--interval",
        "60",
        "--metrics-listen",
        "127.0.0.1:0",
        "--exit-at-eof",
        // The generated trace's blocks.
        "--block-size",
        "16",
    ];
    for (cwd, extra) in [
        (Path::new("/"), &[][..]),
        (setup.read_only.as_path(), &[][..]),
        (setup.read_only.as_path(), &["--no-facts"][..]),
    ] {
        let args: Vec<&str> = unit.iter().chain(extra).copied().collect();
        let (code, stdout, stderr) = setup.unprivileged(cwd, &args);
        assert_eq!(code, Some(0), "in {}: {stderr}", cwd.display());
        assert!(!stderr.contains("--facts-out"), "{stderr}");
        assert_eq!(
            last_line(&stdout),
            ("finished".to_owned(), setup.requests as u64)
        );
    }
    assert_eq!(
        fs::read_dir(&setup.read_only).unwrap().count(),
        0,
        "nothing is written where nothing was asked"
    );
}

#[test]
fn a_facts_out_that_cannot_be_written_names_the_flag() {
    let setup = Setup::new();
    let facts = setup.read_only.join("facts.csv");
    let (code, _, stderr) = setup.unprivileged(
        setup.root.path(),
        &[
            "watch",
            setup.trace.to_str().unwrap(),
            "--headless",
            "--exit-at-eof",
            "--block-size",
            "16",
            "--facts-out",
            facts.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("--facts-out {}", facts.display()))
            && stderr.contains("Permission denied"),
        "{stderr}"
    );
}

/// `s` to the default destination in a directory it cannot write says which flag names
/// another (the run itself goes on).
#[test]
fn a_failed_write_to_the_default_destination_names_the_flag() {
    use litehit_core::config::{SingleInstanceFlags, resolve_single_instance};
    use litehit_live::Command as LiveCommand;
    use litehit_live::ingest::IngestConfig;
    use litehit_live::snapshot::FactsWrite;
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    fs::write(
        &trace,
        "{\"type\":\"get\",\"instance_id\":\"a\",\"timestamp_ns\":1,\"keys\":[1],\"input_len\":4}\n",
    )
    .unwrap();
    let flags = SingleInstanceFlags {
        block_size_tokens: Some(4),
        ..SingleInstanceFlags::default()
    };
    let mut config = IngestConfig::new(&trace, resolve_single_instance(&flags).unwrap().engine);
    // A destination that cannot be written (its directory is gone), as the default is.
    config.facts_out = dir.path().join("gone").join("litehit_facts.csv");
    config.facts_out_is_default = true;
    config.spill_dir = Some(dir.path().to_path_buf());
    let live = litehit_live::ingest::spawn(config).unwrap();
    let mut snapshots = live.snapshots();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let written = runtime.block_on(async {
        let wait = async {
            loop {
                let snap = std::sync::Arc::clone(&snapshots.borrow_and_update());
                if snap.health.read_events == 1 && snap.facts_write == FactsWrite::Idle {
                    live.send(LiveCommand::WriteFacts);
                }
                if let FactsWrite::Failed { message, .. } = &snap.facts_write {
                    return message.clone();
                }
                assert!(snapshots.changed().await.is_ok(), "the ingest thread ended");
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(60), wait)
            .await
            .expect("a failed write within 60 s")
    });
    assert!(
        written.contains("name another with --facts-out"),
        "{written}"
    );
    live.shutdown();
}
