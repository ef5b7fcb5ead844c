//! The live monitor's machinery, shared by the TUI and `--headless`: tail → ingest → snapshot.
//!
//! Owns following the trace file ([`tail`]), the ingest thread that owns the `Engine`
//! ([`ingest`]), the published [`LiveSnapshot`] ([`snapshot`]) and the JSON-lines report
//! ([`headless`]). It holds no analysis logic: every number comes from `engine` and
//! `projector`. The UI reads `Arc<LiveSnapshot>` from a `watch` channel and sends
//! [`Command`]s; it never touches engine state.

pub mod snapshot;
pub mod tail;

pub use snapshot::{LiveSnapshot, SlotId};

use crate::projector::Capacity;

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
    /// Stop ingesting and end the thread.
    Shutdown,
}
