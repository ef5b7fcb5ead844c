//! One query over facts files: every row read in order, each accounted row projected and
//! handed to the caller (who writes its line, or nothing for `--summary-only`), then the
//! checks that need every row and the summary. With the pool lane recognised only at the end
//! and not the lane accumulated as it, its rows are read a second time.

use std::path::PathBuf;

use litehit_core::facts::FactRecord;

use super::QueryError;
use super::plan::{QueryPlan, QuerySlots};
use super::totals::{QuerySummary, QueryTotals};
use crate::facts_files::FactsFiles;
use crate::policy_pair::OptRows;
use crate::span::{EmptySpan, TimeRange, widen_span};

/// The rows a query read: their first and last `timestamp_ns`, and whether any was in the
/// accounted span.
#[derive(Debug, Clone, Copy, Default)]
struct SeenRows {
    span: Option<(i64, i64)>,
    accounted: bool,
}

/// A query over facts files, in two steps: [`Self::read_rows`] hands every accounted row
/// over with its hit blocks per slot, in input order; [`Self::finish`] checks what needs
/// every row and sums up.
#[derive(Debug)]
pub struct QueryRun {
    files: FactsFiles,
    totals: QueryTotals,
    range: TimeRange,
    seen: SeenRows,
    /// [`QueryPlan::kv_bytes_per_token`], for the pool's second read too.
    kv_bytes_per_token: Option<u64>,
    /// The OPT facts of the same trace, read in step ([`QueryPlan::opt`]).
    opt: Option<OptRows>,
    /// Their paths, one per facts file, for the pool's second read.
    opt_paths: Vec<PathBuf>,
}

impl QueryRun {
    /// Opens every file of `facts_paths` (shards of one run: their rows in order, the
    /// summaries add up every file) and checks its header before any row is read.
    pub fn open(
        facts_paths: &[PathBuf],
        slots: QuerySlots,
        plan: &QueryPlan,
    ) -> Result<Self, QueryError> {
        let opt = if plan.opt.is_empty() {
            None
        } else {
            Some(OptRows::open(&plan.opt, plan.kv_bytes_per_token)?)
        };
        let totals =
            QueryTotals::with_tiers(slots, plan.tiers.clone()).with_pool(plan.pool.clone());
        Ok(Self {
            files: FactsFiles::open(facts_paths)?.with_kv_bytes_per_token(plan.kv_bytes_per_token),
            totals: if opt.is_some() {
                totals.with_opt()
            } else {
                totals
            },
            range: plan.time_range,
            seen: SeenRows::default(),
            kv_bytes_per_token: plan.kv_bytes_per_token,
            opt,
            opt_paths: plan.opt.clone(),
        })
    }

    /// The slots, in output order.
    #[must_use]
    pub fn slots(&self) -> &QuerySlots {
        self.totals.slots()
    }

    /// Reads every row; each accounted one (in the plan's time range) is projected, summed
    /// and given to `on_row` with its hit blocks per slot. An error of `on_row` stops the
    /// reading and is returned as [`QueryError::Write`]. Any malformed row fails the query
    /// with an error naming the file and line (rows before it were already handed over).
    pub fn read_rows(
        &mut self,
        mut on_row: impl FnMut(&FactRecord, &[u64]) -> std::io::Result<()>,
    ) -> Result<(), QueryError> {
        let mut record = FactRecord::default();
        while self.files.next_record(&mut record)? {
            // Room for the row's lane first: memory may be short.
            self.totals
                .try_reserve_instance()
                .map_err(|_| self.files.out_of_memory())?;
            self.totals
                .observe_in_file(&record, self.files.file_index());
            self.seen.span = widen_span(self.seen.span, record.timestamp_ns);
            // Every row is paired, accounted or not: the two files go in step.
            let opt = match &mut self.opt {
                Some(opt) => {
                    Some(opt.next_for(&record, self.files.path(), self.files.line_number())?)
                }
                None => None,
            };
            if !self.range.contains(record.timestamp_ns) {
                continue;
            }
            self.seen.accounted = true;
            on_row(&record, self.totals.add_record_pair(&record, opt))
                .map_err(QueryError::Write)?;
        }
        if let Some(opt) = self.opt.take() {
            let first = self.files.paths().first().cloned().unwrap_or_default();
            opt.finish(&first)?;
        }
        Ok(())
    }

    /// The summary, once every row was read: refuses a file given twice (it would double
    /// every count in it) and an accounted span without a row, recognises the pool lane (and
    /// reads its rows again when it was not the lane accumulated as it).
    pub fn finish(mut self) -> Result<QuerySummary, QueryError> {
        let facts_paths = self.files.paths().to_vec();
        self.totals.check_no_repeated_rows(&facts_paths)?;
        if !self.range.is_everything() && !self.seen.accounted {
            return Err(EmptySpan {
                range: self.range,
                trace: self.seen.span,
            }
            .into());
        }
        let pool = self.totals.resolve_pool()?;
        if let Some(name) = &pool
            && !self.totals.is_pool(name)
        {
            reread_pool(
                (&facts_paths, &self.opt_paths),
                name,
                (self.range, self.kv_bytes_per_token),
                &mut self.totals,
            )?;
        }
        self.totals.try_into_summary(pool.as_deref())
    }
}

/// Reads the accounted rows of pool lane `name` a second time, into the pool's accumulation:
/// it was recognised only at the end, and was not the lane most likely to be it (a pool with
/// a name of its own and no `--pool NAME`). Only the files holding its rows are read, in
/// `range` and with the block bytes of `kv_bytes_per_token` as the first read; with OPT
/// facts (one per facts file, `opt_paths`), each file's OPT file is read in step with it.
fn reread_pool(
    (facts_paths, opt_paths): (&[PathBuf], &[PathBuf]),
    name: &str,
    (range, kv_bytes_per_token): (TimeRange, Option<u64>),
    totals: &mut QueryTotals,
) -> Result<(), QueryError> {
    totals.restart_pool(name);
    let mut record = FactRecord::default();
    for index in totals.files_of(name, facts_paths.len()) {
        let path = &facts_paths[index];
        let rereadable = |path: &PathBuf| {
            path.as_os_str() != "-" && std::fs::metadata(path).is_ok_and(|meta| meta.is_file())
        };
        if let Some(path) = std::iter::once(path)
            .chain(opt_paths.get(index))
            .find(|path| !rereadable(path))
        {
            return Err(QueryError::PoolNotRereadable {
                name: name.to_owned(),
                path: path.display().to_string(),
            });
        }
        let mut reader = FactsFiles::lazy(std::slice::from_ref(path))
            .with_kv_bytes_per_token(kv_bytes_per_token);
        let mut opt = opt_paths
            .get(index)
            .map(|opt_path| OptRows::open(std::slice::from_ref(opt_path), kv_bytes_per_token))
            .transpose()?;
        while reader.next_record(&mut record)? {
            // Every row is paired, as in the first read: the two files go in step.
            let opt_record = match &mut opt {
                Some(opt) => Some(opt.next_for(&record, path, reader.line_number())?),
                None => None,
            };
            if record.instance_id == name && range.contains(record.timestamp_ns) {
                totals.add_pool_row(&record, opt_record);
            }
        }
    }
    Ok(())
}
