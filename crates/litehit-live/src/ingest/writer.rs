//! The facts writer: `s` (and `--facts-out` at the end or on quit) publishes the facts file.
//!
//! A write copies the header and the spill's rows so far into the facts file atomically
//! (`facts::file::write_atomically`: `.tmp`, fsync, rename), reading the spill through a
//! clone of its descriptor at explicit offsets, so the pipeline goes on appending meanwhile.
//! `s` runs it on a writer thread that reports back as [`IngestEvent::FactsWritten`] (a large
//! file never stalls ingest or the keys); the end-of-run write runs on the ingest thread. One
//! write at a time, since both read the same spill. The result, with the absolute path, is
//! shown as a [`FactsWrite`]. [`FactsWriter`] owns all of it: the write in flight, its thread
//! and the status; it reads the spill it is handed and knows nothing of the loop.

use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use litehit_core::facts::FactRecord;
use litehit_core::facts::file::{
    FACTS_HEADER, FactsError, FactsFileFormat, FactsFileWriter, FactsReader, write_atomically,
};

use super::spill::FactsSpill;
use crate::IngestEvent;
use crate::snapshot::FactsWrite;

/// Publishes the facts file: one write at a time, its writer thread, and the status shown.
pub(super) struct FactsWriter {
    /// Where the facts go (`--facts-out`, or the default).
    path: PathBuf,
    /// `path` is the default, not one the user named: a failed write says how to name another.
    path_is_default: bool,
    /// With OPT (`watch --policy lru,opt`): where the OPT facts go (`NAME.opt.csv`), written
    /// by the same job right after the LRU facts.
    opt_path: Option<PathBuf>,
    /// A writer thread reports its result here, as [`IngestEvent::FactsWritten`].
    events_tx: Sender<IngestEvent>,
    /// The last write's status, shown in every snapshot.
    status: FactsWrite,
    /// When `status` last changed (its age is published, so a message can fade).
    status_since: Instant,
    /// The `s` write in flight: its thread, until its result is reported (the thread ends
    /// right after that, so it is left to end on its own). While it is there, a second `s`
    /// is ignored and the end-of-run write waits for its result.
    in_flight: Option<JoinHandle<()>>,
}

impl FactsWriter {
    /// Idle, for facts published at `path`; writer threads report on `events_tx`.
    pub(super) fn new(
        path: PathBuf,
        path_is_default: bool,
        events_tx: Sender<IngestEvent>,
    ) -> Self {
        Self {
            path,
            path_is_default,
            opt_path: None,
            events_tx,
            status: FactsWrite::Idle,
            status_since: Instant::now(),
            in_flight: None,
        }
    }

    /// Also publishes the OPT facts at `opt_path`, from the OPT spill each write is handed.
    pub(super) fn with_opt_path(mut self, opt_path: PathBuf) -> Self {
        self.opt_path = Some(opt_path);
        self
    }

    /// The last write's status.
    pub(super) fn status(&self) -> &FactsWrite {
        &self.status
    }

    /// How long ago the status last changed.
    pub(super) fn status_age(&self, now: Instant) -> Duration {
        now.duration_since(self.status_since)
    }

    /// Whether an `s` write is in flight.
    pub(super) fn is_writing(&self) -> bool {
        self.in_flight.is_some()
    }

    fn set_status(&mut self, status: FactsWrite) {
        self.status = status;
        self.status_since = Instant::now();
    }

    /// `s`: publishes every fact in `spill` so far on a writer thread (the replay goes on
    /// meanwhile), which reports as [`IngestEvent::FactsWritten`]. Ignored while a write is in
    /// flight.
    pub(super) fn start(&mut self, spill: &mut FactsSpill, opt_spill: Option<&mut FactsSpill>) {
        if self.is_writing() {
            return;
        }
        let job = match self.jobs(spill, opt_spill) {
            Ok(job) => job,
            Err(failed) => {
                self.set_status(failed);
                return;
            }
        };
        let (path, rows) = (job.display.clone(), job.rows);
        self.set_status(FactsWrite::Writing {
            path: path.clone(),
            rows,
        });
        let tx = self.events_tx.clone();
        let spawned = std::thread::Builder::new()
            .name("litehit-facts-writer".to_owned())
            .spawn(move || {
                // The ingest thread may have ended (quit during a write): nobody to tell.
                let _ = tx.send(IngestEvent::FactsWritten(job.run()));
            });
        match spawned {
            Ok(thread) => self.in_flight = Some(thread),
            Err(err) => self.set_status(FactsWrite::Failed {
                path,
                message: format!("starting the writer thread: {err}"),
            }),
        }
    }

    /// A writer thread's result ([`IngestEvent::FactsWritten`]): the write is over.
    pub(super) fn report(&mut self, result: FactsWrite) {
        self.in_flight = None;
        self.set_status(result);
    }

    /// At the end of a run that asked for it (`--facts-out`: at the end of input headless, on
    /// quit in the TUI): publishes every fact on this thread. A run that produced no fact
    /// publishes nothing (the status stays as it was), as `replay` publishes no facts file of
    /// zero rows.
    pub(super) fn write_at_end(
        &mut self,
        spill: &mut FactsSpill,
        opt_spill: Option<&mut FactsSpill>,
        events: &Receiver<IngestEvent>,
    ) {
        // The TUI quits at any time, an `s` write perhaps still in flight: wait for it, since
        // two writes would share the temp file. Its writer thread always reports (the ingest
        // thread holds a sender, so the channel stays open); other events at shutdown are
        // dropped, as after it.
        while self.is_writing() {
            match events.recv() {
                Ok(IngestEvent::FactsWritten(result)) => self.report(result),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        if spill.rows == 0 {
            return;
        }
        let status = match self.jobs(spill, opt_spill) {
            Ok(job) => job.run(),
            Err(failed) => failed,
        };
        self.set_status(status);
    }

    /// The write of `spill` to the facts path, then (with an OPT path) of `opt_spill` to it.
    fn jobs(
        &self,
        spill: &mut FactsSpill,
        opt_spill: Option<&mut FactsSpill>,
    ) -> Result<FactsJob, FactsWrite> {
        let mut job = self.job(&self.path, spill)?;
        if let (Some(opt_path), Some(opt_spill)) = (&self.opt_path, opt_spill) {
            job.then = Some(Box::new(self.job(opt_path, opt_spill)?));
        }
        Ok(job)
    }

    /// Takes what a facts write to `path` needs from the spill (flushed first).
    fn job(&self, path: &std::path::Path, spill: &mut FactsSpill) -> Result<FactsJob, FactsWrite> {
        let path = path.to_path_buf();
        // Absolute, so the message says where the file went whatever the working directory.
        let display = std::path::absolute(&path)
            .unwrap_or_else(|_| path.clone())
            .display()
            .to_string();
        spill.flush();
        if let Some(error) = &spill.error {
            return Err(FactsWrite::Failed {
                path: display,
                message: format!(
                    "{error}; the rows since then were not kept, so no complete facts snapshot \
                     can be written"
                ),
            });
        }
        let Some(file) = &spill.file else {
            return Err(FactsWrite::Failed {
                path: display,
                message: "facts are not kept in this run (--no-facts)".to_owned(),
            });
        };
        match file.try_clone() {
            Ok(source) => Ok(FactsJob {
                source,
                spilled_bytes: spill.on_disk_bytes,
                rows: spill.rows,
                path,
                display,
                is_default: self.path_is_default,
                then: None,
            }),
            Err(err) => Err(FactsWrite::Failed {
                path: display,
                message: format!("reopening the facts spill: {err}"),
            }),
        }
    }
}

/// One facts write: the spill's rows so far, to be published at `path`.
struct FactsJob {
    source: File,
    spilled_bytes: u64,
    rows: u64,
    path: PathBuf,
    /// `path` made absolute, for messages.
    display: String,
    /// `path` is the default (no `--facts-out` given).
    is_default: bool,
    /// The OPT facts' write, run after this one succeeds (`watch --policy lru,opt`).
    then: Option<Box<FactsJob>>,
}

impl FactsJob {
    /// This write, then the next one; the status is this one's, unless the next one failed.
    fn run(mut self) -> FactsWrite {
        let then = self.then.take();
        match (self.run_one(), then) {
            (done @ FactsWrite::Done { .. }, Some(then)) => match then.run() {
                FactsWrite::Done { .. } => done,
                failed => failed,
            },
            (status, _) => status,
        }
    }

    fn run_one(self) -> FactsWrite {
        match copy_facts(&self.source, self.spilled_bytes, &self.path) {
            Ok(bytes) => FactsWrite::Done {
                path: self.display,
                rows: self.rows,
                bytes,
            },
            Err(err) => FactsWrite::Failed {
                path: self.display,
                message: if self.is_default {
                    format!(
                        "{} (the default destination; name another with --facts-out)",
                        error_chain(&err)
                    )
                } else {
                    error_chain(&err)
                },
            },
        }
    }
}

/// Writes the header and the first `spilled_bytes` of the spill to `path` atomically: as
/// they are, or, for a `.parquet` path, read back and written as Parquet facts. The size
/// published.
fn copy_facts(
    source: &File,
    spilled_bytes: u64,
    path: &std::path::Path,
) -> Result<u64, FactsError> {
    if FactsFileFormat::of_path(path) == FactsFileFormat::Parquet {
        return convert_to_parquet(source, spilled_bytes, path);
    }
    let write_error = |source| FactsError::Write {
        path: path.to_path_buf(),
        source,
    };
    write_atomically(path, |out| -> Result<u64, FactsError> {
        out.write_all(FACTS_HEADER.as_bytes())
            .map_err(write_error)?;
        out.write_all(b"\n").map_err(write_error)?;
        // At explicit offsets: the descriptor's own offset is the spill writer's.
        let copied = io::copy(&mut OffsetReader::new(source).take(spilled_bytes), out)
            .map_err(write_error)?;
        if copied != spilled_bytes {
            return Err(write_error(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("facts spill ended after {copied} of {spilled_bytes} bytes"),
            )));
        }
        Ok(FACTS_HEADER.len() as u64 + 1 + copied)
    })
}

/// The spill's rows (CSV, as the engine wrote them) published as a Parquet facts file.
fn convert_to_parquet(
    source: &File,
    spilled_bytes: u64,
    path: &std::path::Path,
) -> Result<u64, FactsError> {
    let csv = io::Cursor::new(format!("{FACTS_HEADER}\n"))
        .chain(OffsetReader::new(source).take(spilled_bytes));
    let mut reader = FactsReader::from_reader(csv, "the facts spill")?;
    let mut writer = FactsFileWriter::create_file(path, FactsFileFormat::Parquet)?;
    let mut record = FactRecord::default();
    while reader.next_record(&mut record)? {
        writer.push(&record.as_row());
        writer.flush_full()?;
    }
    let published = writer.commit()?;
    std::fs::metadata(&published)
        .map(|metadata| metadata.len())
        .map_err(|source| FactsError::Write {
            path: published,
            source,
        })
}

/// Reads a file from its start with `pread`, leaving the descriptor's offset alone.
struct OffsetReader<'a> {
    file: &'a File,
    offset: u64,
}

impl<'a> OffsetReader<'a> {
    fn new(file: &'a File) -> Self {
        Self { file, offset: 0 }
    }
}

impl io::Read for OffsetReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::unix::fs::FileExt as _;
        let read = self.file.read_at(buf, self.offset)?;
        self.offset += read as u64;
        Ok(read)
    }
}

/// An error with its causes, `: `-separated.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn fact() -> FactRecord {
        FactRecord {
            trace_id: "t".to_owned(),
            instance_id: "i".to_owned(),
            ..FactRecord::default()
        }
    }

    /// The writer thread's report, waited for at most a minute (it comes in milliseconds).
    fn reported(events: &Receiver<IngestEvent>) -> FactsWrite {
        match events.recv_timeout(Duration::from_secs(60)) {
            Ok(IngestEvent::FactsWritten(result)) => result,
            other => panic!("expected the writer's report, got {other:?}"),
        }
    }

    #[test]
    fn one_write_at_a_time_and_its_report_ends_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("facts.csv");
        let mut spill = FactsSpill::create(dir.path(), "facts.csv").unwrap();
        spill.push(&fact().as_row());
        let (tx, rx) = mpsc::channel();
        let mut writer = FactsWriter::new(out.clone(), false, tx);
        assert_eq!(writer.status(), &FactsWrite::Idle);

        writer.start(&mut spill, None);
        assert!(writer.is_writing());
        assert!(matches!(
            writer.status(),
            FactsWrite::Writing { rows: 1, .. }
        ));
        // A second `s` while the first is in flight starts nothing: its rows are not taken.
        spill.push(&fact().as_row());
        writer.start(&mut spill, None);
        assert!(matches!(
            writer.status(),
            FactsWrite::Writing { rows: 1, .. }
        ));

        writer.report(reported(&rx));
        assert!(!writer.is_writing());
        assert!(matches!(writer.status(), FactsWrite::Done { rows: 1, .. }));
        assert!(
            rx.try_recv().is_err(),
            "the second `s` started no writer thread"
        );
        assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 2);

        // Once it is over, the next `s` writes every row so far.
        writer.start(&mut spill, None);
        writer.report(reported(&rx));
        assert!(matches!(writer.status(), FactsWrite::Done { rows: 2, .. }));
        assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 3);
    }

    #[test]
    fn the_end_write_waits_for_the_write_in_flight_then_writes_every_row() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("facts.csv");
        let mut spill = FactsSpill::create(dir.path(), "facts.csv").unwrap();
        spill.push(&fact().as_row());
        let (tx, rx) = mpsc::channel();
        let mut writer = FactsWriter::new(out.clone(), false, tx);
        writer.start(&mut spill, None);
        spill.push(&fact().as_row());
        // The writer thread reports on the channel, after any other event.
        writer.events_tx.send(IngestEvent::FileChanged).unwrap();
        writer.write_at_end(&mut spill, None, &rx);
        assert!(!writer.is_writing());
        assert!(matches!(writer.status(), FactsWrite::Done { rows: 2, .. }));
        assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 3);
    }

    #[test]
    fn a_parquet_facts_out_gets_the_spilled_rows_as_parquet() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("facts.parquet");
        let mut spill = FactsSpill::create(dir.path(), "facts.parquet").unwrap();
        let rows: Vec<FactRecord> = (0..3)
            .map(|index| FactRecord {
                trace_id: format!("t,{index}"),
                instance_id: "i".to_owned(),
                timestamp_ns: index,
                input_token_len: 20,
                block_size_tokens: 4,
                block_bytes: 512,
                fact: litehit_core::facts::RequestFact::from_pairs(&[[1, 2], [7, 1]]),
            })
            .collect();
        for row in &rows {
            spill.push(&row.as_row());
        }
        let (tx, rx) = mpsc::channel();
        let mut writer = FactsWriter::new(out.clone(), false, tx);
        writer.write_at_end(&mut spill, None, &rx);
        assert!(
            matches!(writer.status(), FactsWrite::Done { rows: 3, .. }),
            "{:?}",
            writer.status()
        );
        let mut reader = FactsReader::open(&out).unwrap();
        let mut record = FactRecord::default();
        let mut back = Vec::new();
        while reader.next_record(&mut record).unwrap() {
            back.push(record.clone());
        }
        assert_eq!(back, rows);
    }

    #[test]
    fn a_run_without_kept_facts_says_so_and_starts_no_thread() {
        let dir = tempfile::tempdir().unwrap();
        let mut spill = FactsSpill::counting_only();
        let (tx, rx) = mpsc::channel();
        let mut writer = FactsWriter::new(dir.path().join("facts.csv"), false, tx);
        writer.start(&mut spill, None);
        assert!(!writer.is_writing());
        assert!(
            matches!(writer.status(), FactsWrite::Failed { message, .. } if message.contains("--no-facts"))
        );
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn with_opt_one_write_publishes_both_files_and_a_failed_opt_write_is_the_status() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("facts.csv");
        let opt_out = dir.path().join("facts.opt.csv");
        let mut spill = FactsSpill::create(dir.path(), "facts.csv").unwrap();
        let mut opt_spill = FactsSpill::create(dir.path(), "facts.opt.csv").unwrap();
        spill.push(&fact().as_row());
        let mut opt_fact = fact();
        opt_fact.trace_id = "opt".to_owned();
        opt_spill.push(&opt_fact.as_row());
        let (tx, rx) = mpsc::channel();
        let mut writer = FactsWriter::new(out.clone(), false, tx).with_opt_path(opt_out.clone());
        writer.start(&mut spill, Some(&mut opt_spill));
        writer.report(reported(&rx));
        assert!(matches!(writer.status(), FactsWrite::Done { rows: 1, .. }));
        let opt_text = std::fs::read_to_string(&opt_out).unwrap();
        assert!(
            opt_text.lines().nth(1).unwrap().starts_with("opt,"),
            "{opt_text}"
        );
        assert!(!std::fs::read_to_string(&out).unwrap().contains("opt,"));

        // The OPT destination cannot be written (a directory stands there): the status says
        // so, naming it, though the LRU facts were written.
        std::fs::remove_file(&opt_out).unwrap();
        std::fs::create_dir(&opt_out).unwrap();
        writer.write_at_end(&mut spill, Some(&mut opt_spill), &rx);
        assert!(
            matches!(writer.status(), FactsWrite::Failed { path, .. } if path.ends_with("facts.opt.csv")),
            "{:?}",
            writer.status()
        );
    }
}
