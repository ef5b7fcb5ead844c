//! Shared test helpers: the naive oracle and trace generators.
#![allow(dead_code, reason = "each test binary uses a subset")]

pub mod cli_bin;
pub mod oracle;

use std::path::PathBuf;

/// `../shared` next to the repository, or `None` (tests then skip with a message).
pub fn shared_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: {} is absent (real traces live outside the repository)",
            dir.display()
        );
        None
    }
}
