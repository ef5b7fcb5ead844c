//! `LitehitError`, the one exception bad input raises, and the error text it carries.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    _litehit,
    LitehitError,
    PyValueError,
    "Bad input or a failed write: the message names the file, the line (or row) and the field."
);

/// An error with its causes, `: `-separated, as the CLI prints it.
pub fn chain_text(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `LitehitError(chain_text(error))`.
pub fn litehit_error(error: &dyn std::error::Error) -> PyErr {
    LitehitError::new_err(chain_text(error))
}

/// `LitehitError(text)`.
pub fn litehit_message(text: impl Into<String>) -> PyErr {
    LitehitError::new_err(text.into())
}
