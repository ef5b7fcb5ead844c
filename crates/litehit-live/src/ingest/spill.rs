//! The facts spill: every facts row so far, formatted, kept off the heap — when something can
//! read them.
//!
//! The pipeline hands each row to [`FactsSpill::push`], which formats it (with
//! `facts::file::append_fact_row`) into a small buffer that goes to the spill file once it
//! holds [`SPILL_BUFFER_BYTES`]. The spill file is a visible, named file beside the facts
//! destination (`.NAME.RANDOM.spill`, or in `--spill-dir`), removed when the monitor stops (and,
//! after a `kill -9`, by the next run for the same destination: the file's `flock` says whether
//! its run lives), so
//! what it takes on disk can be seen with `ls` / `du` and is shown on every surface; so the monitor's memory does not grow with the trace;
//! the writer later copies the file behind the header. Rows are retained only when a reader
//! exists (`--facts-out`, or the TUI's `s` without `--no-facts`): otherwise no file is created
//! and rows are only counted. A failed spill write stops retention for good, with the error
//! kept and shown: the buffer is dropped (never grown without bound), the file is closed, and
//! a later snapshot request is told why it cannot be complete.

use std::fs::File;
use std::io::{self, Write as _};

use litehit_core::facts::FactRow;
use litehit_core::facts::file::{append_fact_row, hold_owned_file, remove_unowned_files};

/// Facts rows are spilled to disk once this many bytes are buffered.
pub(super) const SPILL_BUFFER_BYTES: usize = 1 << 20;

/// How often [`FactsSpill::create`] makes a new spill file when a sweep removed the last.
const MAX_CREATE_ATTEMPTS: usize = 16;

/// The spill file's suffix: `.NAME.RANDOM.spill`.
const SPILL_SUFFIX: &str = ".spill";

/// Whether `file_name` is a spill of the facts destination `name`: `.{name}.RANDOM.spill`,
/// RANDOM alphanumeric (as `tempfile` draws it).
fn is_spill_name(file_name: &std::ffi::OsStr, name: &str) -> bool {
    let prefix = format!(".{name}.");
    file_name
        .as_encoded_bytes()
        .strip_prefix(prefix.as_bytes())
        .and_then(|rest| rest.strip_suffix(SPILL_SUFFIX.as_bytes()))
        .is_some_and(|random| !random.is_empty() && random.iter().all(u8::is_ascii_alphanumeric))
}

/// Formatted facts rows: a small buffer in memory, the rest in an unnamed-on-exit temp file.
pub(super) struct FactsSpill {
    /// The spill file; the snapshot writer reads it through a clone of the descriptor at
    /// explicit offsets. `None` when rows are not retained (no reader, or retention stopped).
    pub(super) file: Option<File>,
    /// Its name, removed on drop (the monitor stops) or when retention stops.
    path: Option<tempfile::TempPath>,
    pub(super) buffer: Vec<u8>,
    pub(super) on_disk_bytes: u64,
    /// Rows produced so far (retained or not).
    pub(super) rows: u64,
    /// Why retention stopped (a failed spill write).
    pub(super) error: Option<String>,
    /// Bytes a row needed that the buffer could not grow by (the run then stops, out of
    /// memory, as when the engine cannot grow).
    pub(super) out_of_memory: Option<usize>,
}

/// At most the bytes [`append_fact_row`] writes for a row with these string lengths and
/// curve segments (strings quoted with every character doubled, numbers of 20 digits).
pub(super) fn row_bytes_bound(trace_id: usize, instance_id: usize, segments: usize) -> usize {
    const NUMBERS: usize = 4 * 21;
    const FRAME: usize = 2 + 2 + 2 + 3 + 2 + 1;
    (trace_id + instance_id)
        .saturating_mul(2)
        .saturating_add(NUMBERS + FRAME)
        .saturating_add(segments.saturating_mul(2 * 20 + 4))
}

impl FactsSpill {
    /// A spill that retains rows, in a new file `.{name}.RANDOM.spill` of `dir` (created
    /// exclusively, readable by this user only, and held with a `flock` while this run
    /// lives). The spills of killed runs for the same `name` in `dir` are removed first:
    /// those whose lock is free (`facts::file::remove_unowned_files`, the rule of the
    /// facts' own lock), never a live monitor's.
    pub(super) fn create(dir: &std::path::Path, name: &str) -> io::Result<Self> {
        remove_unowned_files(dir, |file_name| is_spill_name(file_name, name));
        for _ in 0..MAX_CREATE_ATTEMPTS {
            let (file, path) = tempfile::Builder::new()
                .prefix(&format!(".{name}."))
                .suffix(SPILL_SUFFIX)
                .tempfile_in(dir)?
                .into_parts();
            if hold_owned_file(&file, &path)? {
                return Ok(Self {
                    file: Some(file),
                    path: Some(path),
                    buffer: Vec::with_capacity(SPILL_BUFFER_BYTES + 4096),
                    ..Self::counting_only()
                });
            }
            // Another run's sweep removed it between its creation and our lock: another.
        }
        Err(io::Error::other(
            "the spill files created kept being removed by other runs",
        ))
    }

    /// Where the spill file is, while rows are retained.
    pub(super) fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    /// A spill that keeps nothing: nothing can read the rows (`--headless` without
    /// `--facts-out`, or `--no-facts`).
    pub(super) fn counting_only() -> Self {
        Self {
            file: None,
            path: None,
            buffer: Vec::new(),
            on_disk_bytes: 0,
            rows: 0,
            error: None,
            out_of_memory: None,
        }
    }

    /// Whether rows are being kept.
    pub(super) fn retaining(&self) -> bool {
        self.file.is_some()
    }

    /// Makes room in the buffer for a row of at most `bytes` (see [`row_bytes_bound`]) before
    /// the event that makes it is replayed; `Err(bytes)` when memory for it is not there.
    pub(super) fn reserve_row(&mut self, bytes: usize) -> Result<(), usize> {
        if !self.retaining() {
            return Ok(());
        }
        self.buffer.try_reserve(bytes).map_err(|_| bytes)
    }

    /// Counts a row, and keeps it while retaining (spilling a full buffer). A row the buffer
    /// cannot grow for (more than [`Self::reserve_row`] made room for, as a row fanned out
    /// to several instances) is not kept: [`Self::out_of_memory`] says so and the run stops.
    pub(super) fn push(&mut self, row: &FactRow<'_>) {
        self.rows += 1;
        if !self.retaining() || self.out_of_memory.is_some() {
            return;
        }
        let bound = row_bytes_bound(
            row.trace_id.len(),
            row.instance_id.len(),
            row.fact.hit_curve.len(),
        );
        if self.buffer.try_reserve(bound).is_err() {
            self.out_of_memory = Some(bound);
            return;
        }
        append_fact_row(&mut self.buffer, row);
        if self.buffer.len() >= SPILL_BUFFER_BYTES {
            self.flush();
        }
    }

    pub(super) fn flush(&mut self) {
        let Some(file) = &mut self.file else {
            return;
        };
        if self.buffer.is_empty() {
            return;
        }
        match file.write_all(&self.buffer) {
            Ok(()) => {
                self.on_disk_bytes += self.buffer.len() as u64;
                self.buffer.clear();
            }
            Err(err) => self.stop(format!(
                "facts retention stopped: spilling facts to a temporary file failed: {err}"
            )),
        }
    }

    /// Stops retention: the rows kept so far are released, the file closed.
    fn stop(&mut self, error: String) {
        self.error = Some(error);
        self.file = None;
        self.path = None; // the file's name goes with it
        self.buffer = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use litehit_core::facts::FactRecord;

    fn fact() -> FactRecord {
        FactRecord {
            trace_id: "t".to_owned(),
            instance_id: "i".to_owned(),
            ..FactRecord::default()
        }
    }

    #[test]
    fn the_row_bound_holds_for_the_widest_rows() {
        use litehit_core::facts::HitCurveSegment;
        let record = FactRecord {
            trace_id: "\"".repeat(7),
            instance_id: ",x\"".to_owned(),
            timestamp_ns: i64::MIN,
            input_token_len: u64::MAX,
            block_size_tokens: u64::MAX,
            block_bytes: u64::MAX,
            fact: litehit_core::facts::RequestFact {
                hit_curve: vec![
                    HitCurveSegment {
                        start_required_blocks: u64::MAX,
                        run_length: u64::MAX,
                    };
                    5
                ],
            },
        };
        let mut out = Vec::new();
        append_fact_row(&mut out, &record.as_row());
        let bound = row_bytes_bound(7, 3, 5);
        assert!(out.len() <= bound, "{} > {bound}", out.len());
    }

    #[test]
    fn only_spills_of_dead_runs_for_the_same_destination_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        // A killed run's spill: no process holds its lock.
        std::fs::write(path(".facts.csv.Ab12cD.spill"), "rows").unwrap();
        // Not spills of `facts.csv`: another destination's, a user's files, a symlink.
        std::fs::write(path(".other.csv.Ab12cD.spill"), "rows").unwrap();
        std::fs::write(path(".facts.csv.spill"), "mine").unwrap();
        std::fs::write(path("facts.csv.Ab12cD.spill"), "mine").unwrap();
        std::os::unix::fs::symlink(path("target"), path(".facts.csv.Zz99zZ.spill")).unwrap();
        let live = FactsSpill::create(dir.path(), "facts.csv").unwrap();
        let live_path = live.path().unwrap().to_owned();
        assert!(!path(".facts.csv.Ab12cD.spill").exists());
        let next = FactsSpill::create(dir.path(), "facts.csv").unwrap();
        assert!(live_path.exists(), "a live spill (its lock held) is kept");
        for kept in [
            ".other.csv.Ab12cD.spill",
            ".facts.csv.spill",
            "facts.csv.Ab12cD.spill",
        ] {
            assert!(path(kept).exists(), "{kept}");
        }
        assert!(path(".facts.csv.Zz99zZ.spill").symlink_metadata().is_ok());
        drop((live, next));
        assert!(!live_path.exists(), "removed when its run ends");
    }

    #[test]
    fn a_counting_spill_keeps_nothing() {
        let mut spill = FactsSpill::counting_only();
        for _ in 0..10 {
            spill.push(&fact().as_row());
        }
        spill.flush();
        assert_eq!(spill.rows, 10);
        assert!(spill.buffer.is_empty());
        assert_eq!(spill.on_disk_bytes, 0);
        assert!(!spill.retaining());
    }

    #[test]
    fn a_failed_spill_write_stops_retention_and_frees_the_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let mut spill = FactsSpill::create(dir.path(), "facts.csv").unwrap();
        let spill_path = spill.path().unwrap().to_owned();
        assert!(spill_path.exists(), "a visible, named spill file");
        // A read-only descriptor: every write fails, as on a full disk.
        spill.file = Some(File::open(dir.path()).unwrap());
        spill.push(&fact().as_row());
        spill.flush();
        assert!(!spill.retaining());
        assert!(!spill_path.exists(), "removed when retention stops");
        assert!(
            spill
                .error
                .as_deref()
                .unwrap()
                .contains("facts retention stopped"),
            "{:?}",
            spill.error
        );
        assert_eq!(spill.buffer.capacity(), 0);
        for _ in 0..1000 {
            spill.push(&fact().as_row());
        }
        assert_eq!(spill.rows, 1001);
        assert_eq!(
            spill.buffer.capacity(),
            0,
            "no row is kept after the failure"
        );
    }
}
