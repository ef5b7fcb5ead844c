//! The live monitor's machinery, shared by the TUI and `--headless`: tail → ingest → snapshot.
//!
//! Owns following the trace file as it grows, the HTTP ingest endpoint for sidecars, the
//! ingest thread that owns the `Engine` and feeds it, the facts spill and the atomic facts write behind `s`, the published
//! [`LiveSnapshot`], and the JSON-lines report of `--headless`. The UI reads
//! `Arc<LiveSnapshot>` from a `watch` channel (latest wins) and sends [`Command`]s through a
//! [`LiveHandle`]; it never touches engine state.
//!
//! What it must never do: draw, set up a terminal or read keys (that is `litehit-tui`), parse
//! command-line flags (the binary), or compute a number itself. Every hit count, hit rate and
//! curve point comes from the engine and the projector in `litehit-core`; this crate only
//! samples them, takes differences of the engine's cumulative integers (trace-time windows),
//! and divides once at output ([`snapshot::ratio`]). What it measures itself is the monitor,
//! not the trace: read throughput, lag and memory.
//!
//! ```text
//! tail      the trace file, followed like `tail -F`: complete lines, rotation, truncation
//! ingest/   the ingest thread: loop, line pipeline, snapshot assembly, timeline,
//!           rate meter, facts spill and facts writer (one file each)
//! snapshot  LiveSnapshot: the finished numbers one frame shows
//! headless  `--headless`: one JSON line per interval from the same snapshot
//! headless_output  the lines' bounded queue and writer thread (a stalled reader drops
//!           lines, counted, and never blocks the run)
//! http/     `watch --listen`: POST /v1/trace hands each body to the ingest thread;
//!           `--metrics-listen`: GET /metrics; limits (connections, idle time, body
//!           memory) and admission (Host, Origin, Content-Type, bearer token)
//! metrics   the latest snapshot in the Prometheus text format (names, labels, help)
//! error     LiveError: what stops the monitor from starting (trace problems never do)
//! ```
//!
//! Data flows one way: [`tail`] or [`http`] → [`ingest`] → [`snapshot`] → the TUI or
//! [`headless`].

pub mod engine_metrics;
mod error;
pub mod headless;
pub mod headless_output;
pub mod http;
pub mod ingest;
mod labels;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod signals;
pub mod snapshot;
pub mod tail;

pub use error::{LiveError, Result};
pub use snapshot::{LiveSnapshot, SlotId};

use litehit_core::engine::LaneSet;
use litehit_core::projector::Capacity;

/// The monitor's slots checked by the one slot policy ([`litehit_core::slots::check`]) at
/// the block bytes of `lanes` (`None`: not known yet, so only what is empty or the same at
/// any block size is refused): at start by `watch`, and again by the ingest thread when a
/// trace's first line names its format and so its lanes' block bytes, so a slot the add-slot
/// dialog would refuse (`0.01` GB at 64 MiB blocks) is refused whenever the block bytes
/// become known.
///
/// # Errors
/// The first refused slot's reason, after `--capacity-gb: `.
pub fn check_slots(slots: &[Capacity], lanes: Option<&LaneSet>) -> std::result::Result<(), String> {
    let block_bytes: Vec<u64> = match lanes {
        Some(LaneSet::Configured(specs)) => specs.iter().map(|spec| spec.block_bytes).collect(),
        Some(LaneSet::OnTheFly(template)) => vec![template.block_bytes],
        None => Vec::new(),
    };
    litehit_core::slots::check(slots, &block_bytes)
        .map_err(|error| format!("--capacity-gb: {error}"))
}

/// What the UI asks of the ingest thread.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Add a capacity slot; its numbers are exact since the start of the trace.
    AddSlot(Capacity),
    /// Remove the slot with this id.
    RemoveSlot(SlotId),
    /// Pause or resume reading the file (the backlog grows while paused).
    TogglePause,
    /// Write every fact so far to the facts file, in the background.
    WriteFacts,
    /// Finish (state `Finished`) once the end of the file is reached, as `--exit-at-eof`.
    StopAtEof,
    /// Assume this many KV bytes per block in every lane from now on (the monitor's `b`):
    /// GB slots, KV bytes and the geometry re-project at once from the accumulators (which
    /// are in blocks), with no replay; the facts rows keep the block bytes the run started
    /// with, and timeline windows before the change have no figure for GB slots.
    SetBlockBytes(u64),
    /// Publish snapshots at most once per this period (the monitor's `+` / `-`).
    SetFramePeriod(std::time::Duration),
    /// Stop ingesting and end the thread.
    Shutdown,
}

/// One input of the ingest thread, on one channel.
#[derive(Debug)]
pub enum IngestEvent {
    /// A user command.
    Command(Command),
    /// The file system reported a change to the followed file.
    FileChanged,
    /// The background facts writer finished (`Done` or `Failed`).
    FactsWritten(snapshot::FactsWrite),
    /// A body posted to the HTTP endpoint, read through the same pipeline as file lines and
    /// answered on its reply channel.
    HttpBatch(http::HttpBatch),
    /// One `--engine-metrics` scrape of endpoint `index`: its counters, or why not.
    EngineScrape {
        index: usize,
        result: std::result::Result<engine_metrics::EngineCounters, String>,
    },
}

/// Sends commands to the ingest thread from any thread.
#[derive(Debug, Clone)]
pub struct Commander(std::sync::mpsc::Sender<IngestEvent>);

impl Commander {
    pub fn send(&self, command: Command) {
        // A closed channel means the ingest thread already ended: nothing left to command.
        let _ = self.0.send(IngestEvent::Command(command));
    }
}

/// The UI's end of a running ingest thread.
#[derive(Debug)]
pub struct LiveHandle {
    events: std::sync::mpsc::Sender<IngestEvent>,
    snapshots: tokio::sync::watch::Receiver<std::sync::Arc<LiveSnapshot>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LiveHandle {
    /// Wraps the channels of an ingest thread (or of a test's hand-made publisher).
    pub fn new(
        events: std::sync::mpsc::Sender<IngestEvent>,
        snapshots: tokio::sync::watch::Receiver<std::sync::Arc<LiveSnapshot>>,
        thread: Option<std::thread::JoinHandle<()>>,
    ) -> Self {
        Self {
            events,
            snapshots,
            thread,
        }
    }

    /// Sends a command to the ingest thread.
    pub fn send(&self, command: Command) {
        // A closed channel means the ingest thread already ended: nothing left to command.
        let _ = self.events.send(IngestEvent::Command(command));
    }

    /// A sender of commands for another thread.
    pub fn commander(&self) -> Commander {
        Commander(self.events.clone())
    }

    /// A receiver of published snapshots (latest wins).
    pub fn snapshots(&self) -> tokio::sync::watch::Receiver<std::sync::Arc<LiveSnapshot>> {
        self.snapshots.clone()
    }

    /// The latest published snapshot.
    pub fn latest(&self) -> std::sync::Arc<LiveSnapshot> {
        std::sync::Arc::clone(&self.snapshots.borrow())
    }

    /// Stops the ingest thread, waits for it and returns the final snapshot.
    pub fn shutdown(mut self) -> std::sync::Arc<LiveSnapshot> {
        self.stop();
        self.latest()
    }

    fn stop(&mut self) {
        self.send(Command::Shutdown);
        if let Some(thread) = self.thread.take() {
            // A panicked ingest thread has already reported through the panic hook.
            let _ = thread.join();
        }
    }
}

impl Drop for LiveHandle {
    fn drop(&mut self) {
        self.stop();
    }
}
