//! The facts spill: every facts row so far, formatted, kept off the heap.
//!
//! The pipeline appends each row (formatted by `facts::file::append_fact_row`) to a small
//! buffer that goes to an unnamed temporary file once it holds [`SPILL_BUFFER_BYTES`], so the
//! monitor's memory does not grow with the trace; the writer later copies the file behind the
//! header. A failed spill is remembered, shown and never retried, so the rows on disk stay a
//! prefix of the facts.

use std::fs::File;
use std::io::{self, Write as _};

/// Facts rows are spilled to disk once this many bytes are buffered.
pub(super) const SPILL_BUFFER_BYTES: usize = 1 << 20;

/// Formatted facts rows: a small buffer in memory, the rest in an unnamed-on-exit temp file.
pub(super) struct FactsSpill {
    /// Unnamed (unlinked at once), so even a killed monitor leaves nothing behind; the
    /// snapshot writer reads it through a clone of the descriptor at explicit offsets.
    pub(super) file: File,
    pub(super) buffer: Vec<u8>,
    pub(super) on_disk_bytes: u64,
    pub(super) rows: u64,
    pub(super) error: Option<String>,
}

impl FactsSpill {
    pub(super) fn create(dir: Option<&std::path::Path>) -> io::Result<Self> {
        let file = match dir {
            Some(dir) => tempfile::tempfile_in(dir)?,
            None => tempfile::tempfile()?,
        };
        Ok(Self {
            file,
            buffer: Vec::with_capacity(SPILL_BUFFER_BYTES + 4096),
            on_disk_bytes: 0,
            rows: 0,
            error: None,
        })
    }

    pub(super) fn flush(&mut self) {
        if self.buffer.is_empty() || self.error.is_some() {
            return;
        }
        match self.file.write_all(&self.buffer) {
            Ok(()) => self.on_disk_bytes += self.buffer.len() as u64,
            Err(err) => {
                self.error = Some(format!("spilling facts to a temporary file: {err}"));
            }
        }
        self.buffer.clear();
    }
}
