//! Several facts files read as one stream of rows (`query FACTS...`, `mrc FACTS...`: the
//! shards of one replay, or files split by rows), in the order given.
//!
//! The one thing reading several files adds to reading one: the input tokens of every file's
//! rows are counted together ([`FactsReader::continue_input_tokens`]), so no sum over all the
//! rows can wrap (the reader refuses the row that would). That hand-off is done here, once,
//! for every pass that reads facts. And `--model` on `query`/`mrc`: each row's `block_bytes`
//! becomes the model's KV bytes per token × its `block_size_tokens`
//! ([`FactsFiles::with_kv_bytes_per_token`]), here, so every pass reads the same rows.

use std::io::Read;
use std::path::{Path, PathBuf};

use litehit_core::facts::FactRecord;
use litehit_core::facts::file::{FactsError, FactsReader, FactsRowError, facts_input_path};

/// A FACTS pattern that cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactsGlobError {
    /// Not a valid glob.
    #[error("{pattern}: not a valid glob: {why}")]
    Invalid {
        /// The pattern as given.
        pattern: String,
        /// The glob crate's reason.
        why: String,
    },
    /// A directory on the way could not be read.
    #[error("{pattern}: reading {}", path.display())]
    Unreadable {
        /// The pattern as given.
        pattern: String,
        /// What could not be read.
        path: PathBuf,
    },
    /// Matches nothing: an error, never an empty input.
    #[error(
        "{pattern}: the glob matches no file (quote it so that the shell passes it on; `*` \
         does not cross a /)"
    )]
    NoMatch {
        /// The pattern as given.
        pattern: String,
    },
}

/// FACTS arguments with their globs expanded (`'shards/*/litehit_facts.csv'`, quoted so that
/// the shell leaves it alone): a path that exists, `-`, or one without `*`, `?` or `[` is kept
/// as given; a pattern becomes every path it matches, in name order (a matched directory
/// means its `litehit_facts.csv`). A pattern that matches nothing is an error.
pub fn expand_facts_globs(paths: &[PathBuf]) -> Result<Vec<PathBuf>, FactsGlobError> {
    let mut expanded = Vec::with_capacity(paths.len());
    for path in paths {
        let text = path.to_string_lossy();
        let is_pattern = text.contains(['*', '?', '[']);
        if !is_pattern || path.as_os_str() == "-" || path.exists() {
            expanded.push(path.clone());
            continue;
        }
        let matches = glob::glob(&text)
            .map_err(|error| FactsGlobError::Invalid {
                pattern: text.to_string(),
                why: error.to_string(),
            })?
            .map(|entry| {
                entry.map_err(|error| FactsGlobError::Unreadable {
                    pattern: text.to_string(),
                    path: error.path().to_path_buf(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if matches.is_empty() {
            return Err(FactsGlobError::NoMatch {
                pattern: text.to_string(),
            });
        }
        expanded.extend(matches.iter().map(|path| facts_input_path(path)));
    }
    Ok(expanded)
}

/// One file's reader.
type Reader = FactsReader<Box<dyn Read + Send>>;

/// The rows of several facts files, file by file in the order given.
#[derive(Debug)]
pub struct FactsFiles {
    paths: Vec<PathBuf>,
    /// Every file's reader, opened up front ([`Self::open`]), else opened one at a time.
    opened: Vec<Reader>,
    /// The file being read and its index.
    current: Option<(usize, Reader)>,
    /// The next file to open.
    next: usize,
    /// Σ `input_token_len` of the files before the current one.
    input_tokens_before: u64,
    /// `--model`'s KV bytes per token: each row's `block_bytes` is this × its block size.
    kv_bytes_per_token: Option<u64>,
}

impl FactsFiles {
    /// Opens every file and checks its header before any row is read (so a missing shard is
    /// the error, not the rows written before it).
    pub fn open(paths: &[PathBuf]) -> Result<Self, FactsError> {
        let mut opened = paths
            .iter()
            .map(|path| FactsReader::open(path))
            .collect::<Result<Vec<_>, _>>()?;
        opened.reverse();
        Ok(Self {
            opened,
            ..Self::lazy(paths)
        })
    }

    /// Opens each file only when the rows before it are read.
    #[must_use]
    pub fn lazy(paths: &[PathBuf]) -> Self {
        Self {
            paths: paths.to_vec(),
            opened: Vec::new(),
            current: None,
            next: 0,
            input_tokens_before: 0,
            kv_bytes_per_token: None,
        }
    }

    /// Reads every row as if replayed for a model of `kv_bytes_per_token` (`query`/`mrc
    /// --model`): its `block_bytes` becomes that × its `block_size_tokens`; `None` keeps the
    /// facts' own. A product past `u64` is an error naming the file and line.
    #[must_use]
    pub fn with_kv_bytes_per_token(mut self, kv_bytes_per_token: Option<u64>) -> Self {
        self.kv_bytes_per_token = kv_bytes_per_token;
        self
    }

    /// Counts `input_tokens_before` (the input tokens of rows read elsewhere, e.g. an earlier
    /// call over other shards) as read before the first file.
    #[must_use]
    pub fn after_input_tokens(mut self, input_tokens_before: u64) -> Self {
        self.input_tokens_before = input_tokens_before;
        self
    }

    /// The next row into `record` (its buffers reused); `false` after the last file's last
    /// row. An error names the file and line.
    pub fn next_record(&mut self, record: &mut FactRecord) -> Result<bool, FactsError> {
        loop {
            if let Some((_, reader)) = &mut self.current {
                if reader.next_record(record)? {
                    if let Some(kv_bytes_per_token) = self.kv_bytes_per_token {
                        record.block_bytes = record
                            .block_size_tokens
                            .checked_mul(kv_bytes_per_token)
                            .ok_or_else(|| FactsError::Row {
                                path: reader.path().to_path_buf(),
                                line: reader.line_number(),
                                reason: FactsRowError::ModelBlockBytesOverflow {
                                    block_size_tokens: record.block_size_tokens,
                                    kv_bytes_per_token,
                                },
                            })?;
                    }
                    return Ok(true);
                }
                self.input_tokens_before = reader.input_tokens_read();
                self.current = None;
            }
            if self.next == self.paths.len() {
                return Ok(false);
            }
            let mut reader = match self.opened.pop() {
                Some(reader) => reader,
                None => FactsReader::open(&self.paths[self.next])?,
            };
            // The rows of every file together: no total can wrap (the reader refuses).
            reader.continue_input_tokens(self.input_tokens_before);
            self.current = Some((self.next, reader));
            self.next += 1;
        }
    }

    /// Index (in the order given) of the file the last row came from.
    #[must_use]
    pub fn file_index(&self) -> usize {
        self.current.as_ref().map_or(0, |(index, _)| *index)
    }

    /// Σ `input_token_len` of every row read so far (and of [`Self::after_input_tokens`]).
    #[must_use]
    pub fn input_tokens_read(&self) -> u64 {
        self.current
            .as_ref()
            .map_or(self.input_tokens_before, |(_, reader)| {
                reader.input_tokens_read()
            })
    }

    /// The error for running out of memory at the last row read (file and line named).
    #[must_use]
    pub fn out_of_memory(&self) -> FactsError {
        match &self.current {
            Some((_, reader)) => reader.out_of_memory(),
            None => FactsError::OutOfMemory {
                path: self.paths.first().cloned().unwrap_or_default(),
                line: 0,
                rows: 0,
            },
        }
    }

    /// The file the last row came from.
    #[must_use]
    pub fn path(&self) -> &Path {
        self.current
            .as_ref()
            .map_or(Path::new(""), |(_, reader)| reader.path())
    }

    /// The line number of the last row read, in its file.
    #[must_use]
    pub fn line_number(&self) -> u64 {
        self.current
            .as_ref()
            .map_or(0, |(_, reader)| reader.line_number())
    }

    /// The files, in the order given.
    #[must_use]
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }
}
