//! The Python package's pytest suite (`crates/litehit-py/tests/`), run by `cargo test`.
//!
//! It reuses the workspace's dev build: `cargo build -p litehit-py` (the cdylib; a no-op when
//! it is fresh), then a scratch copy of `crates/litehit-py/python/litehit` with the library
//! beside it as `_litehit.abi3.so`, on `PYTHONPATH`, and `python3 -m pytest`. The suite
//! compares with the CLI this test binary was built with (`LITEHIT_BIN`).
//!
//! Without python3 and its modules (pytest, pyarrow, polars, duckdb, pandas, pyspark, ray;
//! and `java`, for docs/SCALE.md's Spark recipe) and without `CI`, the
//! tests are compiled with `cfg(litehit_python_absent)` (the real-trace test:
//! `litehit_python_absent_beside_shared`) and ignored (`build.rs`); with `CI` set they run,
//! and a missing module fails them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::shared_file;

/// The workspace root (the root package's manifest directory).
fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Builds the extension in the profile this test binary was built in, and lays the package
/// out in `into`: `into/litehit/` (the pure-Python files) with `_litehit.abi3.so`.
fn lay_out_package(into: &Path) {
    let cli = Path::new(env!("CARGO_BIN_EXE_litehit"));
    let profile_dir = cli.parent().expect("the CLI is in a profile directory");
    let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    build
        .args(["build", "--locked", "--quiet", "-p", "litehit-py"])
        .current_dir(workspace());
    match profile_dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") => {}
        Some("release") => {
            build.arg("--release");
        }
        Some(other) => {
            build.args(["--profile", other]);
        }
        None => panic!("{}: no profile directory", profile_dir.display()),
    }
    let status = build.status().expect("running cargo build -p litehit-py");
    assert!(status.success(), "cargo build -p litehit-py failed");
    let package = into.join("litehit");
    std::fs::create_dir_all(&package).unwrap();
    let sources = workspace().join("crates/litehit-py/python/litehit");
    for entry in std::fs::read_dir(&sources).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, package.join(path.file_name().unwrap())).unwrap();
    }
    std::fs::copy(
        profile_dir.join("lib_litehit.so"),
        package.join("_litehit.abi3.so"),
    )
    .unwrap();
}

/// Runs the suite with `args` and `envs`; fails on any failed or skipped test (a skip would
/// hide a check).
fn run_pytest(args: &[&str], envs: &[(&str, String)]) {
    let scratch = tempfile::tempdir().unwrap();
    lay_out_package(scratch.path());
    let output = Command::new("python3")
        .args(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"])
        .args(args)
        .arg(workspace().join("crates/litehit-py/tests"))
        .env("PYTHONPATH", scratch.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("LITEHIT_BIN", env!("CARGO_BIN_EXE_litehit"))
        .envs(envs.iter().map(|(name, value)| (*name, value)))
        .current_dir(scratch.path())
        .output()
        .expect("running python3 -m pytest");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "pytest failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        summary.contains(" passed") && !summary.contains("skipped"),
        "every test must run and pass: {summary}\n{stdout}"
    );
}

#[cfg_attr(
    litehit_python_absent,
    ignore = "needs python3 with pytest, pyarrow, polars, duckdb, pandas, pyspark and ray, and \
              java (`python3 -m pip install pytest pyarrow polars duckdb 'pandas<3' \
              pyspark==4.3.0 'ray[data]==2.60.0'`, then `touch build.rs`); with CI set it runs"
)]
#[test]
fn the_python_package_passes_its_pytest_suite() {
    run_pytest(&["-m", "not shared"], &[]);
}

#[cfg_attr(litehit_shared_absent, ignore = "needs ../shared (the real traces)")]
#[cfg_attr(
    litehit_python_absent_beside_shared,
    ignore = "needs python3 with pytest, pyarrow, polars, duckdb, pandas, pyspark and ray, and \
              java (`python3 -m pip install pytest pyarrow polars duckdb 'pandas<3' \
              pyspark==4.3.0 'ray[data]==2.60.0'`, then `touch build.rs`); with CI set it runs"
)]
#[test]
fn python_replays_equal_the_clis_on_the_real_traces() {
    let traces: Vec<PathBuf> = [
        "traces/conversation_trace.jsonl",
        "traces/synthetic_trace.jsonl",
        "traces/event_publisher.log",
    ]
    .into_iter()
    .map(shared_file)
    .collect();
    let joined = std::env::join_paths(&traces).unwrap();
    run_pytest(
        &["-m", "shared"],
        &[(
            "LITEHIT_SHARED_TRACES",
            joined.to_string_lossy().into_owned(),
        )],
    );
}
