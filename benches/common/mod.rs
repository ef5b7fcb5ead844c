//! What every bench shares: the smoke switch and the rule for inputs from `../shared`.
//!
//! **Smoke mode** (`LITEHIT_BENCH_SMOKE=1`, or `--smoke` after `cargo bench --`) runs each bench
//! on tiny inputs, in a few seconds, through the same code and the same correctness checks
//! (digest and row-count assertions still abort on a mismatch). Its figures are not
//! measurements; CI runs it so that a bench that no longer runs is noticed.
//!
//! **Inputs from `../shared`** (the real traces, kept outside the repository): a bench uses
//! them when present and says so when absent; with `CI` set, an absent input is an error
//! (exit code 1), never a silent pass.

use std::path::{Path, PathBuf};

use litehit_core::workload::{KeyStyle, WorkloadConfig};

/// How a bench run was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The documented measurement.
    Full,
    /// Tiny inputs, same code paths and checks.
    Smoke,
}

impl Mode {
    /// `Smoke` when `LITEHIT_BENCH_SMOKE` is set to anything but empty or `0`, or when
    /// `--smoke` is among the arguments; prints one line saying so.
    pub fn from_env_and_args() -> Self {
        let by_env =
            std::env::var_os("LITEHIT_BENCH_SMOKE").is_some_and(|v| !v.is_empty() && v != "0");
        let by_arg = std::env::args().skip(1).any(|arg| arg == "--smoke");
        if by_env || by_arg {
            println!(
                "smoke mode: tiny inputs, same checks; the figures below are not measurements"
            );
            Self::Smoke
        } else {
            Self::Full
        }
    }

    /// `full` in a measurement, `smoke` in smoke mode.
    pub fn pick<T>(self, full: T, smoke: T) -> T {
        match self {
            Self::Full => full,
            Self::Smoke => smoke,
        }
    }
}

/// The bench's arguments after the program name, without the ones cargo and this module
/// consume (`--bench`, `--smoke`).
pub fn bench_args() -> Vec<String> {
    std::env::args()
        .skip(1)
        .filter(|arg| arg != "--bench" && arg != "--smoke")
        .collect()
}

/// `../shared/traces/<name>` when it exists. When it is absent: `None` after one line saying
/// what is skipped, or, with `CI` set, a message and exit code 1 (CI always has the traces, so
/// a missing one must fail the run rather than pass it with a check left out).
pub fn shared_trace(name: &str, skipped: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/traces")
        .join(name);
    if path.is_file() {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() {
        eprintln!(
            "error: {} is absent and CI is set: {skipped} cannot run (the benches need ../shared beside the repository)",
            path.display()
        );
        std::process::exit(1);
    }
    println!("skipping {skipped}: {} is absent", path.display());
    None
}

/// The generated *large* workload (dense ids, ≈ 76 block accesses and ≈ 17 new keys per
/// request): the core bench replays it from memory, the pipeline bench writes it as a
/// Mooncake trace (512-token blocks) and replays the file end to end, so the two measure the
/// same accesses.
#[allow(dead_code, reason = "not every bench uses the large workload")]
pub fn large_workload_config() -> WorkloadConfig {
    WorkloadConfig {
        seed: 2026,
        key_style: KeyStyle::Dense,
        system_prompt_count: 64,
        system_prompt_blocks: (4, 48),
        live_conversations: 200_000,
        zipf_exponent: 0.6,
        new_conversation_probability: 0.25,
        fresh_request_probability: 0.02,
        turn_growth_blocks: (1, 32),
        max_request_blocks: 400,
        ..WorkloadConfig::default()
    }
}
