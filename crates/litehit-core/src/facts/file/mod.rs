//! The upstream `litehit_facts.csv` format (REFERENCE §7): writer, atomic publish and reader.
//!
//! Owns the byte layout of a facts row and the rules for reading one back, byte-compatible
//! with the upstream C++ writer and `ParseLiteHitFactRow`. It does not project anything:
//! capacities meet facts only in `projector`.
//!
//! * [`append_fact_row`] formats one row into a caller's buffer (no allocation per row).
//! * [`AtomicFactsWriter`] publishes `<dir>/litehit_facts.csv` (or a named `.csv`, see
//!   [`replay_facts_path`]) all-or-nothing (a lock beside it, a fresh temp file, fsync,
//!   rename, fsync of the directory); [`write_atomically`] does the same for any file.
//! * [`FactsReader`] streams [`FactRecord`](crate::facts::FactRecord)s, reusing one record's
//!   buffers, with upstream's error messages plus the file name.

mod atomic;
mod lock;
#[cfg(feature = "parquet")]
mod parquet;
#[cfg(feature = "parquet")]
mod parquet_rows;
mod publish;
mod reader;
mod temp;
mod writer;

use std::io;
use std::path::PathBuf;

pub use atomic::{
    AtomicFactsWriter, AtomicFile, CreatedDirs, check_publishable, create_directory_of,
    directory_of, ends_in_separator, is_standard_output, is_temp_path, is_where_stdout_goes,
    resolve_symlinks, write_atomically,
};
pub use lock::{hold_owned_file, remove_unowned_files};
#[cfg(feature = "parquet")]
pub use parquet::{ParquetFactsWriter, starts_as_parquet};
pub use publish::FactsFileWriter;
pub use reader::{FactsReader, parse_fact_line};
pub use writer::{append_fact_row, append_hit_curve};

/// The exact header line of a facts file (without the line end).
pub const FACTS_HEADER: &str =
    "trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,block_bytes,hit_curve";

/// The file name the offline replay publishes inside its output directory.
pub const FACTS_FILE_NAME: &str = "litehit_facts.csv";

/// The file name `replay --out DIR --facts-format parquet` publishes inside `DIR`.
pub const PARQUET_FACTS_FILE_NAME: &str = "litehit_facts.parquet";

/// The two layouts of a facts file: the same rows and values either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FactsFileFormat {
    /// `litehit_facts.csv`, upstream's, the curve as JSON in a string.
    #[default]
    Csv,
    /// `litehit_facts.parquet`, the curve as `list<struct<start, run>>`
    /// (`facts::arrow`); needs the `parquet` feature to be written or read.
    Parquet,
}

impl FactsFileFormat {
    /// The format a file path asks for by its extension: `.parquet` (any case) is Parquet,
    /// anything else CSV.
    #[must_use]
    pub fn of_path(path: &std::path::Path) -> Self {
        if path
            .extension()
            .is_some_and(|extension| extension.eq_ignore_ascii_case("parquet"))
        {
            Self::Parquet
        } else {
            Self::Csv
        }
    }

    /// The file name published inside an output directory.
    #[must_use]
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Csv => FACTS_FILE_NAME,
            Self::Parquet => PARQUET_FACTS_FILE_NAME,
        }
    }

    /// The extension a file of this format ends in (without the dot).
    #[must_use]
    pub fn extension(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Parquet => "parquet",
        }
    }
}

/// Where the OPT facts go beside the LRU facts at `facts_path` (`replay --policy lru,opt`):
/// `NAME.csv` → `NAME.opt.csv`, `NAME.parquet` → `NAME.opt.parquet` (`litehit_facts.opt.csv`
/// in an output directory).
#[must_use]
pub fn opt_facts_path(facts_path: &std::path::Path) -> std::path::PathBuf {
    let mut name = facts_path
        .file_stem()
        .map(std::ffi::OsStr::to_os_string)
        .unwrap_or_default();
    name.push(".opt.");
    name.push(
        facts_path
            .extension()
            .unwrap_or(std::ffi::OsStr::new("csv")),
    );
    facts_path.with_file_name(name)
}

/// Where `litehit replay --out OUT` publishes the facts: `OUT` itself when it names a facts
/// file (ends in `.csv` or `.parquet` and is not an existing directory), else `format`'s file
/// name ([`FACTS_FILE_NAME`] or [`PARQUET_FACTS_FILE_NAME`]) inside the directory `OUT`
/// (upstream's output directory).
#[must_use]
pub fn replay_facts_path(out: &std::path::Path, format: FactsFileFormat) -> std::path::PathBuf {
    let names_a_facts_file = out.extension().is_some_and(|extension| {
        extension.eq_ignore_ascii_case("csv") || extension.eq_ignore_ascii_case("parquet")
    }) && !out.is_dir()
        && !ends_in_separator(out);
    if names_a_facts_file {
        out.to_path_buf()
    } else {
        out.join(format.file_name())
    }
}

/// The facts file a reader opens for `path`: inside a directory (what `replay --out DIR` or
/// a config's `output_result_path` names) [`PARQUET_FACTS_FILE_NAME`] when it is the only
/// one there, else [`FACTS_FILE_NAME`]; a directory holding both stays as it is, for
/// [`FactsReader::open`] to refuse naming both. Any other `path` is used as it is (`-` stays
/// standard input).
#[must_use]
pub fn facts_input_path(path: &std::path::Path) -> std::path::PathBuf {
    // `-` is standard input, even with a directory of that name around.
    if path.as_os_str() == "-" || !path.is_dir() {
        return path.to_path_buf();
    }
    let csv = path.join(FACTS_FILE_NAME);
    let parquet = path.join(PARQUET_FACTS_FILE_NAME);
    match (csv.exists(), parquet.exists()) {
        (true, true) => path.to_path_buf(),
        (false, true) => parquet,
        _ => csv,
    }
}

/// The two facts files of directory `path` when it holds both (which one is meant cannot be
/// told).
#[must_use]
pub fn both_facts_files(path: &std::path::Path) -> Option<(PathBuf, PathBuf)> {
    if !path.is_dir() {
        return None;
    }
    let csv = path.join(FACTS_FILE_NAME);
    let parquet = path.join(PARQUET_FACTS_FILE_NAME);
    (csv.exists() && parquet.exists()).then_some((csv, parquet))
}

/// Where the monitor's `s` publishes the facts: `facts_out`, or [`FACTS_FILE_NAME`] inside it
/// when it names a directory — one that exists, or a path ending in `/` (as `replay --out
/// DIR` names a directory).
#[must_use]
pub fn facts_snapshot_path(facts_out: &std::path::Path) -> std::path::PathBuf {
    let names_a_directory = facts_out.is_dir() || ends_in_separator(facts_out);
    if names_a_directory {
        facts_out.join(FACTS_FILE_NAME)
    } else {
        facts_out.to_path_buf()
    }
}

/// Number of comma-separated fields in a facts row.
pub const FACTS_FIELD_COUNT: usize = 7;

/// Result alias for facts-file operations.
pub type Result<T, E = FactsError> = std::result::Result<T, E>;

/// Reading or writing a facts file failed.
#[derive(Debug, thiserror::Error)]
pub enum FactsError {
    /// The file could not be opened (missing, unreadable).
    #[error("failed to open facts file: {}", path.display())]
    Open {
        /// The facts file.
        path: PathBuf,
        /// Why the system refused it.
        #[source]
        source: io::Error,
    },
    /// Reading stopped part way: the rows read so far are not a whole file.
    #[error("I/O error while reading facts file: {}", path.display())]
    Read {
        /// The facts file.
        path: PathBuf,
        /// Why the system refused it.
        #[source]
        source: io::Error,
    },
    /// A file without even the header is no facts file, and no empty result either.
    #[error("{}: facts file is empty", path.display())]
    Empty {
        /// The facts file.
        path: PathBuf,
    },
    /// The first line is not the facts header, so the columns cannot be trusted.
    #[error(
        "{}: facts file header mismatch: expected {FACTS_HEADER:?}, found {found:?}{}",
        path.display(),
        if found.trim_start().starts_with('{') {
            " (this looks like a trace: `litehit replay` it first to get its facts)"
        } else if found.starts_with("PAR1") {
            " (Parquet facts are read from a file, not from standard input)"
        } else {
            ""
        }
    )]
    HeaderMismatch {
        /// The facts file.
        path: PathBuf,
        /// Its first line, to show what the file is instead.
        found: String,
    },
    /// What reading builds (instances, curves, windows) left less than
    /// [`crate::hitcore::GROWTH_HEADROOM_BYTES`] free: a clean stop while one is possible.
    #[error(
        "{}: facts line {line}: out of memory after {rows} rows (what they built leaves less \
         than 8 MiB free)",
        path.display()
    )]
    OutOfMemory {
        /// The facts file.
        path: PathBuf,
        /// The line being read (1-based).
        line: u64,
        /// Rows read before it.
        rows: u64,
    },
    /// One row is malformed; the whole file is refused rather than a partial answer given.
    #[error("{}: facts line {line}: {reason}", path.display())]
    Row {
        /// The facts file.
        path: PathBuf,
        /// 1-based physical line (the header is line 1).
        line: u64,
        /// What is wrong with the row.
        reason: FactsRowError,
    },
    /// A directory given as facts holds both formats' files: which one is meant is unknown.
    #[error(
        "{} and {} are both there: the same facts twice, or two different runs; name the one \
         to read",
        csv.display(),
        parquet.display()
    )]
    BothFormats {
        /// The CSV facts file.
        csv: PathBuf,
        /// The Parquet facts file beside it.
        parquet: PathBuf,
    },
    /// A Parquet facts file could not be read as one (not Parquet, other columns, a broken
    /// page).
    #[error("{}: {message}", path.display())]
    Parquet {
        /// The facts file.
        path: PathBuf,
        /// What the Parquet reader or the column check said.
        message: String,
    },
    /// One row of a Parquet facts file breaks a row rule; the whole file is refused.
    #[error("{}: facts row {row}: {reason}", path.display())]
    ParquetRow {
        /// The facts file.
        path: PathBuf,
        /// 1-based row number.
        row: u64,
        /// What is wrong with the row.
        reason: FactsRowError,
    },
    /// The temporary file or the lock beside the target could not be created.
    #[error("failed to create {}", path.display())]
    Create {
        /// The file being published.
        path: PathBuf,
        /// Why the system refused it.
        #[source]
        source: io::Error,
    },
    /// A write failed (say, a full disk): nothing is published.
    #[error("failed to write {}", path.display())]
    Write {
        /// The file being published.
        path: PathBuf,
        /// Why the system refused it.
        #[source]
        source: io::Error,
    },
    /// Another process is publishing the same file (it holds the lock beside it).
    #[error(
        "{}: another writer ({}) is publishing this file (it holds {}); wait for it to \
         finish or choose another path",
        path.display(),
        holder,
        lock.display()
    )]
    Busy {
        /// The file being published.
        path: PathBuf,
        /// The lock file beside it, named so the user can see who holds it.
        lock: PathBuf,
        /// `pid N, COMMAND` (the command when the system says), as the lock file says.
        holder: String,
    },
    /// The finished temporary file could not be renamed over the target.
    #[error("failed to publish {} as {}", from.display(), to.display())]
    Publish {
        /// The finished temporary file.
        from: PathBuf,
        /// The target it could not replace.
        to: PathBuf,
        /// Why the system refused it.
        #[source]
        source: io::Error,
    },
}

/// Why one facts row could not be parsed (upstream's messages, verbatim).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactsRowError {
    /// Upstream's column count (7); any other is a different file.
    #[error("expected 7 fields, got {found}")]
    FieldCount {
        /// The fields found.
        found: usize,
    },
    /// A quote opened and never closed: the rest of the line is one field.
    #[error("unterminated quoted field")]
    UnterminatedQuote,
    /// A required field holds nothing.
    #[error("{field} is empty")]
    EmptyField {
        /// The column.
        field: &'static str,
    },
    /// A field that must be an integer is not.
    #[error("{field} is not a valid integer: {value}")]
    NotInteger {
        /// The column.
        field: &'static str,
        /// What it holds.
        value: String,
    },
    /// A field that must be a non-negative integer is not.
    #[error("{field} is not a valid unsigned integer: {value}")]
    NotUnsignedInteger {
        /// The column.
        field: &'static str,
        /// What it holds.
        value: String,
    },
    /// A text field is no UTF-8, so it could not be shown or compared.
    #[error("{field} is not valid UTF-8")]
    NotUtf8 {
        /// The column.
        field: &'static str,
    },
    /// The `hit_curve` field is malformed.
    #[error(transparent)]
    HitCurve(#[from] HitCurveError),
    /// A block of 0 tokens or bytes cannot be projected.
    #[error("block_bytes/block_size_tokens must be positive")]
    NonPositiveBlock,
    /// Not an upstream check: such a row would project to a hit rate over 100 %.
    #[error(
        "hit_curve covers {curve_blocks} blocks, more than the {full_blocks} full blocks of \
         input_token_len / block_size_tokens"
    )]
    CurveLongerThanInput {
        /// The blocks the curve counts as hits at unlimited capacity.
        curve_blocks: u64,
        /// The request's full blocks.
        full_blocks: u64,
    },
    /// A value of an Arrow or Parquet row is null (a CSV field cannot be).
    #[error("{field} is null")]
    Null {
        /// The column.
        field: &'static str,
    },
    /// A line too long for the memory left (a broken or hostile file).
    #[error("out of memory reading a line of {line_bytes} bytes")]
    OutOfMemory {
        /// The line's length so far.
        line_bytes: usize,
    },
    /// Not an upstream check: every total (per instance, overall, per window, per tier, the
    /// pool's, `mrc`'s) is a sum of these, and a wrapped sum is no parity (issue #27).
    #[error(
        "input_token_len {input_token_len} takes the sum of input_token_len over the rows \
         read ({total_before} before this row) past 2^64 - 1; every total over them would wrap"
    )]
    InputTokensOverflow {
        /// The row's `input_token_len`.
        input_token_len: u64,
        /// The sum over the rows before it.
        total_before: u64,
    },
    /// `query`/`mrc --model`: the model's block bytes for this row do not fit a `u64`.
    #[error(
        "block_size_tokens {block_size_tokens} × the model's {kv_bytes_per_token} KV bytes \
         per token is past 2^64 - 1 bytes per block"
    )]
    ModelBlockBytesOverflow {
        /// The row's `block_size_tokens`.
        block_size_tokens: u64,
        /// `--model`'s KV bytes per token.
        kv_bytes_per_token: u64,
    },
}

/// Why a `hit_curve` field could not be parsed (upstream's messages, verbatim).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HitCurveError {
    /// The field is no bracketed list.
    #[error("hit_curve must start with '['")]
    MissingOpen,
    /// A segment is no bracketed pair.
    #[error("hit_curve segment must start with '['")]
    SegmentMissingOpen,
    /// A segment's start (required blocks) is no integer.
    #[error("hit_curve segment start is not a valid integer")]
    SegmentStart,
    /// A segment's two numbers are not separated by a comma.
    #[error("hit_curve segment expects ','")]
    SegmentMissingComma,
    /// A segment's run length is no integer.
    #[error("hit_curve segment length is not a valid integer")]
    SegmentLength,
    /// A segment is not closed.
    #[error("hit_curve segment must end with ']'")]
    SegmentMissingClose,
    /// The list is not closed.
    #[error("hit_curve must end with ']'")]
    MissingClose,
    /// Something follows the closing bracket.
    #[error("hit_curve has trailing characters")]
    TrailingCharacters,
}

#[cfg(test)]
mod snapshot_path_tests {
    use super::*;

    #[test]
    fn a_directory_as_facts_out_gets_the_facts_file_inside() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            facts_snapshot_path(dir.path()),
            dir.path().join(FACTS_FILE_NAME)
        );
        let not_yet = dir.path().join("later/");
        assert_eq!(facts_snapshot_path(&not_yet), not_yet.join(FACTS_FILE_NAME));
        let file = dir.path().join("snap.csv");
        assert_eq!(
            facts_snapshot_path(&file),
            file,
            "a file path is used as it is"
        );
    }

    #[test]
    fn replay_out_is_a_directory_unless_it_names_a_csv_file() {
        let dir = tempfile::tempdir().unwrap();
        let csv = FactsFileFormat::Csv;
        let plain = dir.path().join("out");
        assert_eq!(replay_facts_path(&plain, csv), plain.join(FACTS_FILE_NAME));
        assert_eq!(
            replay_facts_path(&plain, FactsFileFormat::Parquet),
            plain.join(PARQUET_FACTS_FILE_NAME)
        );
        let named = dir.path().join("run.CSV");
        assert_eq!(replay_facts_path(&named, csv), named);
        let parquet = dir.path().join("run.parquet");
        assert_eq!(replay_facts_path(&parquet, csv), parquet);
        let slash = dir.path().join("run.csv/");
        assert_eq!(replay_facts_path(&slash, csv), slash.join(FACTS_FILE_NAME));
        let existing = dir.path().join("old.csv");
        std::fs::create_dir(&existing).unwrap();
        assert_eq!(
            replay_facts_path(&existing, csv),
            existing.join(FACTS_FILE_NAME)
        );
        assert_eq!(
            facts_input_path(dir.path()),
            dir.path().join(FACTS_FILE_NAME)
        );
        assert_eq!(
            facts_input_path(&named),
            named,
            "missing paths are left to the reader"
        );
    }

    #[test]
    fn a_directory_of_parquet_facts_reads_them_and_one_of_both_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(PARQUET_FACTS_FILE_NAME), b"").unwrap();
        assert_eq!(
            facts_input_path(dir.path()),
            dir.path().join(PARQUET_FACTS_FILE_NAME)
        );
        assert_eq!(both_facts_files(dir.path()), None);
        std::fs::write(dir.path().join(FACTS_FILE_NAME), b"").unwrap();
        assert_eq!(facts_input_path(dir.path()), dir.path());
        let error = FactsReader::open(&facts_input_path(dir.path()))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(FACTS_FILE_NAME) && error.contains(PARQUET_FACTS_FILE_NAME),
            "{error}"
        );
    }
}
