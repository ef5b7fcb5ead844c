//! Shared test helpers: the naive oracle, the binary's runners and trace generators, and the
//! one way to reach the real traces beside the repository.

pub mod cli_bin;
pub mod headless;
pub mod http;
pub mod npm_tokenizers;
pub mod opt_oracle;
pub mod oracle;
pub mod rng;
pub mod traces;

use std::path::{Path, PathBuf};

/// `../shared/<relative>` beside the repository, where the real traces live (never copied
/// into it); panics, failing the test, when that file is missing.
///
/// Every test that calls this carries `#[cfg_attr(litehit_shared_absent, ignore = "needs
/// ../shared, …")]`. The build script sets that cfg when `../shared` is absent and `CI` is
/// unset, so there such a test is reported and counted as ignored instead of passing unseen;
/// with `CI` set it runs and fails here. `shared_data_guard` fails the suite when a test
/// reaches this helper (directly or through others) without that attribute, or when any
/// other source spells the path. (The script does not watch a missing `../shared`,
/// which would rebuild the package on every build: once it is there, `touch build.rs`.)
pub fn shared_file(relative: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .join(relative);
    assert!(
        path.is_file(),
        "{} is missing; with CI set, the tests that need the real traces fail instead of skipping",
        path.display()
    );
    path
}
