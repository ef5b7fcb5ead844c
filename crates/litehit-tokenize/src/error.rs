//! The one error type of the bridge: every variant names what was being read.

use std::path::PathBuf;

/// Errors of loading a tokenizer or template, and of converting a log line.
#[derive(Debug, thiserror::Error)]
pub enum TokenizeError {
    /// The tokenizer file is missing or not a tokenizer.
    #[error("{path}: cannot load tokenizer: {message}", path = path.display())]
    LoadTokenizer { path: PathBuf, message: String },
    /// `tiktoken:NAME` with a name we do not embed.
    #[error("unknown tiktoken encoding {name:?}: expected o200k_base or cl100k_base")]
    UnknownEncoding { name: String },
    /// The chat template is missing, does not parse, or fails on a probe conversation.
    #[error("{source_name}: chat template: {message}")]
    Template {
        source_name: String,
        message: String,
    },
    /// A `--template-kwarg` that is not `NAME=VALUE`.
    #[error("--template-kwarg {text:?}: expected NAME=VALUE (the value JSON or a bare string)")]
    TemplateKwarg { text: String },
    /// A line that is not a JSON object.
    #[error("{path}:{line}: failed to parse JSON: {message}", path = path.display())]
    Json {
        path: PathBuf,
        line: u64,
        message: String,
    },
    /// A line whose field is missing or of the wrong shape.
    #[error("{path}:{line}: field {field:?}: {message}", path = path.display())]
    Field {
        path: PathBuf,
        line: u64,
        field: String,
        message: String,
    },
    /// Reading the log or writing the trace failed.
    #[error("{path}: {source}", path = path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The bridge's result.
pub type Result<T> = std::result::Result<T, TokenizeError>;

impl TokenizeError {
    /// The message without the file and line (which a live monitor shows apart): `field
    /// "messages": ...` for a bad field, the whole message otherwise.
    pub fn reason(&self) -> String {
        match self {
            Self::Json { message, .. } => format!("failed to parse JSON: {message}"),
            Self::Field { field, message, .. } => format!("field {field:?}: {message}"),
            other => other.to_string(),
        }
    }
}
