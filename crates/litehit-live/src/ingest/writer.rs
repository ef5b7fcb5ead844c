//! The facts writer: `s` (and `--facts-out` at the end or on quit) publishes the facts file.
//!
//! A write copies the header and the spill's rows so far into the facts file atomically
//! (`facts::file::write_atomically`: `.tmp`, fsync, rename), reading the spill through a
//! clone of its descriptor at explicit offsets, so the pipeline goes on appending meanwhile.
//! `s` runs it on a writer thread that reports back as [`IngestEvent::FactsWritten`] (a large
//! file never stalls ingest or the keys); the end-of-run write runs on the ingest thread. One
//! write at a time, since both read the same spill. The result, with the absolute path, is
//! shown as a [`FactsWrite`].

use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::path::PathBuf;

use litehit_core::facts::file::{FACTS_HEADER, FactsError, write_atomically};

use super::Ingest;
use crate::IngestEvent;
use crate::snapshot::FactsWrite;

impl Ingest {
    /// `s`: publishes every fact so far on a writer thread (the replay goes on meanwhile).
    pub(super) fn write_facts(&mut self) {
        if self.writing_facts {
            return;
        }
        let job = match self.facts_job() {
            Ok(job) => job,
            Err(failed) => {
                self.facts_write = failed;
                return;
            }
        };
        let (path, rows) = (job.display.clone(), job.rows);
        self.writing_facts = true;
        self.facts_write = FactsWrite::Writing {
            path: path.clone(),
            rows,
        };
        let tx = self.events_tx.clone();
        let spawned = std::thread::Builder::new()
            .name("litehit-facts-writer".to_owned())
            .spawn(move || {
                // The ingest thread may have ended (quit during a write): nobody to tell.
                let _ = tx.send(IngestEvent::FactsWritten(job.run()));
            });
        if let Err(err) = spawned {
            self.writing_facts = false;
            self.facts_write = FactsWrite::Failed {
                path,
                message: format!("starting the writer thread: {err}"),
            };
        }
    }

    /// At the end of a run that asked for it (`--facts-out`: at the end of input headless, on
    /// quit in the TUI): publishes every fact on this thread. A run that produced no fact publishes nothing (the status
    /// stays idle), as `replay` publishes no facts file of zero rows.
    pub(super) fn write_facts_at_end(&mut self) {
        // The TUI quits at any time, an `s` write perhaps still in flight: wait for it, since
        // two writes would share the temp file. Its writer thread always reports (the ingest
        // thread holds a sender, so the channel stays open); other events at shutdown are
        // dropped, as after it.
        while self.writing_facts {
            match self.events_rx.recv() {
                Ok(IngestEvent::FactsWritten(result)) => {
                    self.writing_facts = false;
                    self.facts_write = result;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        if self.pipeline.spill.rows == 0 {
            return;
        }
        self.facts_write = match self.facts_job() {
            Ok(job) => job.run(),
            Err(failed) => failed,
        };
    }

    /// Takes what a facts write needs from the spill (flushed first).
    fn facts_job(&mut self) -> Result<FactsJob, FactsWrite> {
        let path = self.config.facts_out.clone();
        // Absolute, so the message says where the file went whatever the working directory.
        let display = std::path::absolute(&path)
            .unwrap_or_else(|_| path.clone())
            .display()
            .to_string();
        let spill = &mut self.pipeline.spill;
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
                is_default: self.config.facts_out_is_default,
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
}

impl FactsJob {
    fn run(self) -> FactsWrite {
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

/// Writes the header and the first `spilled_bytes` of the spill to `path` atomically.
fn copy_facts(
    source: &File,
    spilled_bytes: u64,
    path: &std::path::Path,
) -> Result<u64, FactsError> {
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
