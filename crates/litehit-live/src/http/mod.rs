//! `watch --listen`: the HTTP ingest endpoint for sidecars, `POST /v1/trace`.
//!
//! Owns the listening socket, the request checks (path, method, encoding, size) and the
//! reply. A body is trace lines in any format the monitor reads (plain, or with
//! `Content-Encoding: gzip`); the handler hands the whole body to the ingest thread as one
//! [`IngestEvent::HttpBatch`] with a reply channel and answers with the thread's
//! [`BatchReport`]. The ingest thread reads it through the same pipeline and engine as file
//! lines, between two file chunks, so the facts, counters and snapshot are exactly as if the
//! lines had been appended to a followed file. One connection's requests are answered one
//! after the other (HTTP/1.1), so its rows are read in the order it sent them.
//!
//! With `--metrics-listen` it also (or only) serves `GET /metrics`: the latest published
//! snapshot in the Prometheus text format ([`crate::metrics`]); one server serves both when
//! `--listen` and `--metrics-listen` name the same address.
//!
//! What it must never do: parse a trace line or touch engine state (that is the ingest
//! thread's), or stop the monitor: a bad request gets a 4xx, a bad line is a `rejected`
//! entry of a 200 reply, and a body memory cannot hold is a 503. Every budget is bounded
//! ([`limits`]: open connections, idle time, body memory across connections) and browsers are
//! kept out (`admission.rs`: `Host`, `Origin`, `Content-Type`, the optional bearer token); see
//! docs/OPERATIONS.md for the budgets and `docs/SIDECAR.md` for a proxy in front.
//!
//! ```text
//! 200  {"accepted":N,"rejected":M,"rejected_lines":[{"line":3,"reason":"…"}]}
//! 400  the body could not be read, or is not valid gzip
//! 401  --listen-token-file given, and no `Authorization: Bearer TOKEN` or the wrong one
//! 403  a foreign Host (loopback binds) or Origin
//! 404  another path          405  another method (Allow: POST)
//! 408  the body paused longer than --http-idle-timeout
//! 413  over --max-body (as sent, or once decompressed; a Content-Length hyper cannot hold
//!      too, see `length_guard.rs`)
//! 415  a Content-Type other than JSON lines, or a Content-Encoding other than gzip or identity
//! 503  over --max-connections or --max-body-total (Retry-After), the monitor is stopping,
//!      or finished (--exit-at-eof)
//! ```

use serde::Serialize;
use tokio::sync::oneshot;

#[cfg(feature = "http")]
mod admission;
#[cfg(feature = "http")]
mod length_guard;
pub mod limits;
#[cfg(feature = "http")]
mod server;

#[cfg(feature = "http")]
pub use admission::ACCEPTED_CONTENT_TYPES;
#[cfg(feature = "http")]
pub use server::{Endpoints, HttpListener, HttpOptions, HttpServer};

/// The one endpoint.
pub const TRACE_PATH: &str = "/v1/trace";
/// The scrape path (`--metrics-listen`, with the `metrics` feature).
pub const METRICS_PATH: &str = "/metrics";
/// Default of `--max-body`.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 64 << 20;
/// Default of `--max-body-total`, in bodies of `--max-body` bytes.
pub const DEFAULT_BODIES_IN_MEMORY: u64 = 4;
/// The reply to one posted body.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct BatchReport {
    /// Lines read into the engine (blank lines are neither accepted nor rejected).
    pub accepted: u64,
    /// Lines skipped as bad, as the monitor skips bad lines of a file.
    pub rejected: u64,
    /// Each rejected line, in body order.
    pub rejected_lines: Vec<RejectedLine>,
}

/// A rejected line of a posted body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RejectedLine {
    /// 1-based line number within the body.
    pub line: u64,
    /// The reason the monitor shows for the line.
    pub reason: String,
}

/// Why the ingest thread did not read a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchRefused {
    /// The run has finished (`--exit-at-eof`): nothing more is read.
    Finished,
}

/// A posted body on its way to the ingest thread, with the channel for its answer.
#[derive(Debug)]
pub struct HttpBatch {
    pub body: Vec<u8>,
    pub reply: oneshot::Sender<std::result::Result<BatchReport, BatchRefused>>,
}
