//! The live monitor's one error type: what can stop it from starting or reporting. Problems
//! with the trace itself are never errors here: they are skipped, counted and shown.

use std::io;

use litehit_core::engine::EngineError;

/// Why the live monitor could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The engine configuration was refused (the engine's error says why).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// An operating-system call failed; `doing` says which step, the source why.
    #[error("{doing}")]
    Io {
        doing: &'static str,
        #[source]
        source: io::Error,
    },
    /// The HTTP endpoint could not listen on its address (in use, not this host's).
    #[error("listening on {address}")]
    Listen {
        address: std::net::SocketAddr,
        #[source]
        source: io::Error,
    },
    /// A headless report line could not be encoded.
    #[error("encoding a report line")]
    Encode(#[source] serde_json::Error),
}

impl LiveError {
    /// Wraps an I/O error with the step that failed.
    pub(crate) fn io(doing: &'static str) -> impl FnOnce(io::Error) -> Self {
        move |source| Self::Io { doing, source }
    }
}

/// `Result` with [`LiveError`].
pub type Result<T, E = LiveError> = std::result::Result<T, E>;
