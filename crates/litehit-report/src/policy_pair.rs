//! An LRU and an OPT facts file of one replay (`replay --policy lru,opt`), read side by side
//! for `query --opt` and `mrc --opt`: row k of one is row k of the other, or the two are not
//! of the same trace and comparing them would mean nothing.
//!
//! A pair of rows must agree on everything but the hit curve: `trace_id`, `instance_id`,
//! `timestamp_ns`, `input_token_len` and the block geometry; and, since both policies hit
//! every key seen before when nothing is ever evicted, on the hits at unlimited capacity.

use std::path::{Path, PathBuf};

use litehit_core::facts::FactRecord;
use litehit_core::facts::file::{FactsError, opt_facts_path};
use litehit_core::projector;

use crate::facts_files::FactsFiles;

/// The two files are not an LRU and an OPT facts file of the same replay.
#[derive(Debug, thiserror::Error)]
pub enum PolicyPairError {
    /// A facts file could not be read, or a row is malformed (file and line named).
    #[error(transparent)]
    Facts(#[from] FactsError),
    /// One has more rows than the other.
    #[error(transparent)]
    RowCount(Box<RowCountMismatch>),
    /// Row k differs in a field the policy cannot change.
    #[error(transparent)]
    Mismatch(Box<RowMismatch>),
}

/// The LRU and the OPT facts have different row counts.
#[derive(Debug, thiserror::Error)]
#[error(
    "{}: the OPT facts have {opt_rows} rows and the LRU facts {} {lru_rows}{}: not the same \
     trace (pass the OPT file of the same `replay --policy lru,opt`)",
    opt.display(), lru.display(), if *lru_rows_more { " or more" } else { "" }
)]
pub struct RowCountMismatch {
    /// The LRU facts (the first file).
    pub lru: PathBuf,
    /// The OPT facts (the first file).
    pub opt: PathBuf,
    /// Rows of the LRU facts read.
    pub lru_rows: u64,
    /// Rows of the OPT facts read.
    pub opt_rows: u64,
    /// The LRU facts have rows beyond `lru_rows`.
    pub lru_rows_more: bool,
}

/// Row k of the LRU and of the OPT facts differ in a field the policy cannot change.
#[derive(Debug, thiserror::Error)]
#[error(
    "{}: line {opt_line}: {field} {opt_value} where {} line {lru_line} has {lru_value}: not \
     the same trace (pass the OPT file of the same `replay --policy lru,opt`)",
    opt.display(), lru.display()
)]
pub struct RowMismatch {
    /// The LRU facts file of the row.
    pub lru: PathBuf,
    /// Its line.
    pub lru_line: u64,
    /// The OPT facts file of the row.
    pub opt: PathBuf,
    /// Its line.
    pub opt_line: u64,
    /// The field (`trace_id`, ..., `hit blocks at unlimited capacity`).
    pub field: &'static str,
    /// The LRU row's value.
    pub lru_value: String,
    /// The OPT row's value.
    pub opt_value: String,
}

/// The OPT facts of `lru_paths` beside them (`NAME.opt.csv` for each `NAME.csv`), when every
/// one has its sibling; `None` otherwise (standard input has none).
#[must_use]
pub fn opt_siblings(lru_paths: &[PathBuf]) -> Option<Vec<PathBuf>> {
    if lru_paths.is_empty() {
        return None;
    }
    lru_paths
        .iter()
        .map(|path| {
            let sibling = opt_facts_path(path);
            (path.as_os_str() != "-" && sibling != *path && sibling.is_file()).then_some(sibling)
        })
        .collect()
}

/// The OPT rows, read in step with the LRU rows a caller reads.
#[derive(Debug)]
pub struct OptRows {
    files: FactsFiles,
    record: FactRecord,
    rows: u64,
}

impl OptRows {
    /// Opens every file of `opt_paths` (header checked); with `kv_bytes_per_token` (`--model`)
    /// every row's block bytes are replaced as the LRU rows' are
    /// ([`FactsFiles::with_kv_bytes_per_token`]).
    pub fn open(
        opt_paths: &[PathBuf],
        kv_bytes_per_token: Option<u64>,
    ) -> Result<Self, FactsError> {
        Ok(Self {
            files: FactsFiles::open(opt_paths)?.with_kv_bytes_per_token(kv_bytes_per_token),
            record: FactRecord::default(),
            rows: 0,
        })
    }

    /// The OPT row paired with `lru`, the LRU row read from `lru_path` at `lru_line`;
    /// refused when there is none or it is not the same request.
    pub fn next_for(
        &mut self,
        lru: &FactRecord,
        lru_path: &Path,
        lru_line: u64,
    ) -> Result<&FactRecord, PolicyPairError> {
        if !self.files.next_record(&mut self.record)? {
            return Err(PolicyPairError::RowCount(Box::new(RowCountMismatch {
                lru: lru_path.to_path_buf(),
                opt: self.first_path(),
                lru_rows: self.rows + 1,
                opt_rows: self.rows,
                lru_rows_more: true,
            })));
        }
        self.rows += 1;
        if let Some((field, lru_value, opt_value)) = first_difference(lru, &self.record) {
            return Err(PolicyPairError::Mismatch(Box::new(RowMismatch {
                lru: lru_path.to_path_buf(),
                lru_line,
                opt: self.files.path().to_path_buf(),
                opt_line: self.files.line_number(),
                field,
                lru_value,
                opt_value,
            })));
        }
        Ok(&self.record)
    }

    /// Once the LRU rows are all read (`lru_rows` of them, in `lru_path` first): refused when
    /// the OPT facts have more.
    pub fn finish(mut self, lru_path: &Path) -> Result<(), PolicyPairError> {
        let lru_rows = self.rows;
        let mut opt_rows = self.rows;
        while self.files.next_record(&mut self.record)? {
            opt_rows += 1;
        }
        if opt_rows == lru_rows {
            return Ok(());
        }
        Err(PolicyPairError::RowCount(Box::new(RowCountMismatch {
            lru: lru_path.to_path_buf(),
            opt: self.first_path(),
            lru_rows,
            opt_rows,
            lru_rows_more: false,
        })))
    }

    fn first_path(&self) -> PathBuf {
        self.files.paths().first().cloned().unwrap_or_default()
    }
}

/// Checks that `opt_paths` hold the OPT facts of the trace `lru_paths` hold (a pass over
/// both); `mrc --opt` runs it before building the two sets of curves.
pub fn check_same_trace(
    lru_paths: &[PathBuf],
    opt_paths: &[PathBuf],
) -> Result<(), PolicyPairError> {
    let mut lru = FactsFiles::open(lru_paths)?;
    let mut opt = OptRows::open(opt_paths, None)?;
    let mut record = FactRecord::default();
    while lru.next_record(&mut record)? {
        opt.next_for(&record, lru.path(), lru.line_number())?;
    }
    opt.finish(lru_paths.first().map_or(Path::new(""), PathBuf::as_path))
}

/// The first field in which the OPT row `opt` differs from the LRU row `lru`, with both
/// values; `None` when they are the same request.
pub(crate) fn first_difference(
    lru: &FactRecord,
    opt: &FactRecord,
) -> Option<(&'static str, String, String)> {
    let differs = |field: &'static str, a: &dyn std::fmt::Display, b: &dyn std::fmt::Display| {
        Some((field, a.to_string(), b.to_string()))
    };
    if lru.trace_id != opt.trace_id {
        return differs(
            "trace_id",
            &format!("{:?}", lru.trace_id),
            &format!("{:?}", opt.trace_id),
        );
    }
    if lru.instance_id != opt.instance_id {
        return differs(
            "instance_id",
            &format!("{:?}", lru.instance_id),
            &format!("{:?}", opt.instance_id),
        );
    }
    if lru.timestamp_ns != opt.timestamp_ns {
        return differs("timestamp_ns", &lru.timestamp_ns, &opt.timestamp_ns);
    }
    if lru.input_token_len != opt.input_token_len {
        return differs(
            "input_token_len",
            &lru.input_token_len,
            &opt.input_token_len,
        );
    }
    if lru.block_size_tokens != opt.block_size_tokens {
        return differs(
            "block_size_tokens",
            &lru.block_size_tokens,
            &opt.block_size_tokens,
        );
    }
    if lru.block_bytes != opt.block_bytes {
        return differs("block_bytes", &lru.block_bytes, &opt.block_bytes);
    }
    let (lru_infinite, opt_infinite) = (
        projector::project_infinite(&lru.fact),
        projector::project_infinite(&opt.fact),
    );
    if lru_infinite != opt_infinite {
        return differs(
            "hit blocks at unlimited capacity",
            &lru_infinite,
            &opt_infinite,
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use litehit_core::facts::RequestFact;

    fn row(trace_id: &str, pairs: &[[u64; 2]]) -> FactRecord {
        FactRecord {
            trace_id: trace_id.into(),
            instance_id: "i".into(),
            timestamp_ns: 1,
            input_token_len: 16,
            block_size_tokens: 4,
            block_bytes: 64,
            fact: RequestFact::from_pairs(pairs),
        }
    }

    #[test]
    fn a_row_pair_differs_in_trace_id_or_in_its_unlimited_hits_but_not_in_its_curve() {
        assert!(first_difference(&row("a", &[[3, 2]]), &row("a", &[[1, 2]])).is_none());
        assert_eq!(
            first_difference(&row("a", &[]), &row("b", &[])).map(|d| d.0),
            Some("trace_id")
        );
        assert_eq!(
            first_difference(&row("a", &[[1, 2]]), &row("a", &[[1, 3]])).map(|d| d.0),
            Some("hit blocks at unlimited capacity")
        );
    }
}
