//! `litehit._litehit`, the native module under the pure-Python `litehit` package
//! (`python/litehit/__init__.py`): replays, facts as Arrow and Parquet, the streaming
//! replayer. It wraps the library crates, never the binary: what it computes is
//! `litehit-core`'s, so it equals the CLI's value by value.
//!
//! Every long call releases the GIL (`Python::detach`); errors are `LitehitError` (a
//! `ValueError`) naming the file, line (or row) and field, as the CLI's do.

#![allow(
    clippy::needless_pass_by_value,
    reason = "#[pyfunction] and #[pymethods] arguments are extracted into owned values"
)]

use pyo3::prelude::*;

mod analysis;
mod arrow_ffi;
mod errors;
mod facts;
mod options;
mod replay;
mod replayer;
mod rows;

pub use errors::LitehitError;

#[pymodule]
fn _litehit(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("LitehitError", module.py().get_type::<LitehitError>())?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_class::<facts::Facts>()?;
    module.add_class::<facts::FactsBatch>()?;
    module.add_class::<replayer::Replayer>()?;
    module.add_function(wrap_pyfunction!(replay::replay_path, module)?)?;
    module.add_function(wrap_pyfunction!(replay::replay_rows, module)?)?;
    module.add_function(wrap_pyfunction!(analysis::query_table, module)?)?;
    module.add_function(wrap_pyfunction!(analysis::mrc_table, module)?)?;
    module.add_function(wrap_pyfunction!(analysis::parse_capacity_gb, module)?)?;
    Ok(())
}
