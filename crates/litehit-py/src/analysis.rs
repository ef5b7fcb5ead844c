//! `query` and `mrc` over `Facts`: `litehit-report`'s analysis (the numbers `litehit query`
//! and `litehit mrc` print), handed to Python as columns of the long-form tables. Nothing is
//! computed here: records go in, the report crate's rows come out.

use arrow_array::RecordBatch;
use litehit_core::facts::FactRecord;
use litehit_core::facts::arrow::FactsBatchRows;
use litehit_core::grammar::{parse_tier_plan, parse_window_ns};
use litehit_core::projector::tiers::TierMode;
use litehit_report::{
    MrcBuilder, PolicyPairError, PoolRule, QueryError, QueryPlan, QuerySlots, RecordsQuery,
    TierPlan, mrc_table_rows, query_table_rows, records_windows, window_table_rows,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{litehit_error, litehit_message};
use crate::facts::Facts;

/// The rows of a `Facts`, one at a time (so that two can be read in step).
struct RecordCursor<'a> {
    batches: std::slice::Iter<'a, RecordBatch>,
    rows: Option<FactsBatchRows>,
    next_row: usize,
    row_number: u64,
}

impl<'a> RecordCursor<'a> {
    fn new(facts: &'a Facts) -> Self {
        Self {
            batches: facts.batches().iter(),
            rows: None,
            next_row: 0,
            row_number: 0,
        }
    }

    /// Reads the next row into `record`; `false` after the last.
    fn next(&mut self, record: &mut FactRecord) -> PyResult<bool> {
        loop {
            if let Some(rows) = &self.rows
                && self.next_row < rows.len()
            {
                self.row_number += 1;
                rows.read(self.next_row, record).map_err(|error| {
                    litehit_message(format!("facts: row {}: {error}", self.row_number))
                })?;
                self.next_row += 1;
                return Ok(true);
            }
            let Some(batch) = self.batches.next() else {
                return Ok(false);
            };
            self.rows = Some(
                FactsBatchRows::new(batch)
                    .map_err(|error| litehit_message(format!("facts: {error}")))?,
            );
            self.next_row = 0;
        }
    }
}

/// Hands every row of `facts` to `on_record`, in order.
fn each_record(facts: &Facts, on_record: &mut dyn FnMut(&FactRecord)) -> PyResult<()> {
    let mut record = FactRecord::default();
    let mut rows = RecordCursor::new(facts);
    while rows.next(&mut record)? {
        on_record(&record);
    }
    Ok(())
}

/// A query error as Python sees it.
struct QueryFailed(PyErr);

impl From<QueryError> for QueryFailed {
    fn from(error: QueryError) -> Self {
        Self(litehit_error(&error))
    }
}

/// `litehit query`'s question as keyword arguments: `--tiers` (its entries), `--tier-mode`,
/// `--window` and `--opt` (OPT facts of the same trace).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct QueryAsked<'py> {
    tiers: Option<Vec<String>>,
    tier_mode: String,
    window: Option<String>,
    opt: Option<PyRef<'py, Facts>>,
}

/// `--tiers` and `--tier-mode` as the CLI reads them.
fn tier_plan(asked: &QueryAsked<'_>) -> PyResult<Option<TierPlan>> {
    let mode = match asked.tier_mode.as_str() {
        "exclusive" => TierMode::Exclusive,
        "inclusive" => TierMode::Inclusive,
        other => {
            return Err(PyValueError::new_err(format!(
                "tier_mode {other:?}: \"exclusive\" (a hierarchy whose sizes add up) or \
                 \"inclusive\" (independent LRUs of each size)"
            )));
        }
    };
    asked
        .tiers
        .as_deref()
        .map(|entries| {
            parse_tier_plan(entries, mode)
                .map_err(|error| PyValueError::new_err(format!("invalid tiers: {error}")))
        })
        .transpose()
}

/// `litehit query FACTS - GB… --capacity-blocks B… [--tiers T --tier-mode M] [--opt OPT]`'s
/// summaries in long form, or with a window `--window W`'s lines: the columns of
/// `litehit.query`'s table.
#[pyfunction]
#[pyo3(signature = (facts, capacity_gb, capacity_blocks, asked))]
pub fn query_table<'py>(
    py: Python<'py>,
    facts: &Facts,
    capacity_gb: Vec<f64>,
    capacity_blocks: Vec<u64>,
    asked: QueryAsked<'py>,
) -> PyResult<Bound<'py, PyDict>> {
    let slots = QuerySlots {
        capacity_gb,
        capacity_blocks,
    };
    let tiers = tier_plan(&asked)?;
    if let Some(text) = &asked.window {
        if asked.opt.is_some() {
            return Err(PyValueError::new_err(
                "window= with opt=: the windows have no OPT sums (as `litehit query --window \
                 --opt` refuses); run a second query for them",
            ));
        }
        if tiers.is_some() && !slots.is_empty() {
            return Err(PyValueError::new_err(
                "window= with tiers= gives one row per window and tier, not per capacity: \
                 leave out the capacities (or run a second query for them)",
            ));
        }
        let width_ns = parse_window_ns(text).map_err(|_| {
            PyValueError::new_err(format!(
                "invalid window: {text:?} (a duration such as \"10m\" or \"600s\", or \
                 seconds)"
            ))
        })?;
        return window_columns(py, facts, slots, tiers, width_ns);
    }
    let plan = QueryPlan {
        pool: Some(PoolRule::from_flag(None)),
        tiers: tiers.clone(),
        ..QueryPlan::default()
    };
    let opt = asked.opt.as_deref();
    let rows = py.detach(|| {
        let mut query = RecordsQuery::new(slots.clone(), &plan);
        match opt {
            None => each_record(facts, &mut |record| query.add(record))?,
            Some(opt) => {
                query = query.with_opt();
                add_pairs(&mut query, facts, opt)?;
            }
        }
        let summary = query
            .finish(|again| each_record(facts, again).map_err(QueryFailed))
            .map_err(|QueryFailed(error)| error)?;
        Ok::<_, PyErr>(query_table_rows(&summary, &slots, tiers.as_ref()))
    })?;
    let columns = PyDict::new(py);
    set_column(&columns, "instance_id", &rows, |r| r.instance_id.clone())?;
    if tiers.is_some() {
        set_column(&columns, "tier", &rows, |r| r.tier.clone())?;
    }
    set_column(&columns, "capacity_bytes", &rows, |r| r.capacity_bytes)?;
    set_column(&columns, "capacity_blocks", &rows, |r| r.capacity_blocks)?;
    set_column(&columns, "total_input_tokens", &rows, |r| {
        r.total_input_tokens
    })?;
    set_column(&columns, "total_hit_blocks", &rows, |r| r.total_hit_blocks)?;
    set_column(&columns, "total_hit_tokens", &rows, |r| r.total_hit_tokens)?;
    set_column(&columns, "hit_rate", &rows, |r| r.hit_rate)?;
    if tiers.is_some() {
        set_column(&columns, "miss_share", &rows, |r| r.miss_share)?;
    }
    if opt.is_some() {
        set_column(&columns, "opt_hit_tokens", &rows, |r| {
            r.opt.map(|cells| cells.opt_hit_tokens)
        })?;
        set_column(&columns, "opt_hit_rate", &rows, |r| {
            r.opt.map(|cells| cells.opt_hit_rate)
        })?;
        set_column(&columns, "cold_miss_tokens", &rows, |r| {
            r.opt.map(|cells| cells.cold_miss_tokens)
        })?;
        set_column(&columns, "capacity_miss_tokens", &rows, |r| {
            r.opt.map(|cells| cells.capacity_miss_tokens)
        })?;
        set_column(&columns, "policy_miss_tokens", &rows, |r| {
            r.opt.map(|cells| cells.policy_miss_tokens)
        })?;
    }
    Ok(columns)
}

/// Every row of `facts` with the row of `opt` in the same place, into `query` (both of one
/// replay with `policy="lru,opt"`: refused otherwise, as `litehit query --opt` refuses).
fn add_pairs(query: &mut RecordsQuery, facts: &Facts, opt: &Facts) -> PyResult<()> {
    let pair_error = |error: PolicyPairError| litehit_error(&error);
    RecordsQuery::check_opt_rows(row_count(facts), row_count(opt)).map_err(pair_error)?;
    let (mut lru_rows, mut opt_rows) = (RecordCursor::new(facts), RecordCursor::new(opt));
    let (mut record, mut opt_record) = (FactRecord::default(), FactRecord::default());
    let mut row = 0_u64;
    while lru_rows.next(&mut record)? && opt_rows.next(&mut opt_record)? {
        row += 1;
        query
            .add_pair(&record, &opt_record, row)
            .map_err(pair_error)?;
    }
    Ok(())
}

/// Rows of `facts`.
fn row_count(facts: &Facts) -> u64 {
    facts
        .batches()
        .iter()
        .map(|batch| batch.num_rows() as u64)
        .sum()
}

/// `query --window`'s lines as the columns of `litehit.query(window=)`'s table.
fn window_columns<'py>(
    py: Python<'py>,
    facts: &Facts,
    slots: QuerySlots,
    tiers: Option<TierPlan>,
    width_ns: i64,
) -> PyResult<Bound<'py, PyDict>> {
    let tiered = tiers.is_some();
    let rows = py.detach(|| {
        let windows = records_windows(slots, tiers, width_ns, |each| {
            each_record(facts, each).map_err(QueryFailed)
        })
        .map_err(|QueryFailed(error)| error)?;
        Ok::<_, PyErr>(window_table_rows(&windows))
    })?;
    let columns = PyDict::new(py);
    set_column(&columns, "window_start_ns", &rows, |r| r.window_start_ns)?;
    set_column(&columns, "window_end_ns", &rows, |r| r.window_end_ns)?;
    set_column(&columns, "window_start_s", &rows, |r| r.window_start_s)?;
    set_column(&columns, "window_end_s", &rows, |r| r.window_end_s)?;
    if tiered {
        set_column(&columns, "tier", &rows, |r| r.tier.clone())?;
    }
    set_column(&columns, "capacity_bytes", &rows, |r| r.capacity_bytes)?;
    set_column(&columns, "capacity_blocks", &rows, |r| r.capacity_blocks)?;
    set_column(&columns, "requests", &rows, |r| r.requests)?;
    set_column(&columns, "total_input_tokens", &rows, |r| {
        r.total_input_tokens
    })?;
    set_column(&columns, "total_hit_tokens", &rows, |r| r.total_hit_tokens)?;
    set_column(&columns, "hit_rate", &rows, |r| r.hit_rate)?;
    if tiered {
        set_column(&columns, "miss_share", &rows, |r| r.miss_share)?;
    }
    Ok(columns)
}

/// `litehit mrc FACTS --json`'s curve points, knees and saturation points in long form: the
/// columns of `litehit.mrc`'s table.
#[pyfunction]
#[pyo3(signature = (facts, max_curve_points))]
pub fn mrc_table<'py>(
    py: Python<'py>,
    facts: &Facts,
    max_curve_points: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let rows = py.detach(|| {
        let mut builder = MrcBuilder::new().with_pool(PoolRule::from_flag(None));
        let mut mismatch = None;
        let mut row_number = 0_u64;
        each_record(facts, &mut |record| {
            row_number += 1;
            if mismatch.is_none()
                && let Err(found) = builder.add_record(record)
            {
                mismatch = Some(format!(
                    "facts: row {row_number}: instance {:?} mixes block geometry: expected \
                     block_size_tokens {} and block_bytes {} (as in its first row), found {} \
                     and {}",
                    record.instance_id,
                    found.expected_block_size_tokens,
                    found.expected_block_bytes,
                    record.block_size_tokens,
                    record.block_bytes
                ));
            }
        })?;
        if let Some(message) = mismatch {
            return Err(litehit_message(message));
        }
        let curves = builder
            .try_finish()
            .map_err(|error| litehit_error(&error))?;
        if curves.instances.is_empty() {
            return Err(litehit_message(
                "facts: no facts rows, so there is no curve to draw",
            ));
        }
        Ok(mrc_table_rows(&curves.report(max_curve_points)))
    })?;
    let columns = PyDict::new(py);
    set_column(&columns, "instance_id", &rows, |r| r.instance_id.clone())?;
    set_column(&columns, "kind", &rows, |r| r.kind.name())?;
    set_column(&columns, "percent", &rows, |r| r.percent)?;
    set_column(&columns, "target_hit_rate", &rows, |r| r.target_hit_rate)?;
    set_column(&columns, "capacity_blocks", &rows, |r| r.capacity_blocks)?;
    set_column(&columns, "capacity_bytes", &rows, |r| r.capacity_bytes)?;
    set_column(&columns, "capacity_gb", &rows, |r| r.capacity_gb)?;
    set_column(&columns, "hit_blocks", &rows, |r| r.hit_blocks)?;
    set_column(&columns, "hit_tokens", &rows, |r| r.hit_tokens)?;
    set_column(&columns, "hit_rate", &rows, |r| r.hit_rate)?;
    Ok(columns)
}

/// Sets `columns[name]` to the column `value` takes over `rows`.
fn set_column<'py, R, V>(
    columns: &Bound<'py, PyDict>,
    name: &str,
    rows: &[R],
    value: impl Fn(&R) -> V,
) -> PyResult<()>
where
    Vec<V>: IntoPyObject<'py>,
{
    columns.set_item(name, rows.iter().map(value).collect::<Vec<_>>())
}

/// A capacity as `litehit query` reads a CAPACITY_GB argument (`40`, `40GB`, `4TB`, `-1`,
/// `inf`), in binary GB (negative: unlimited).
#[pyfunction]
pub fn parse_capacity_gb(text: &str) -> PyResult<f64> {
    litehit_core::grammar::parse_capacity_gb(text).map_err(|error| {
        pyo3::exceptions::PyValueError::new_err(format!(
            "capacity {text:?}: {error} (binary GB such as 40, 0.5 or \"40GB\", TB such as \
             \"4TB\"; -1 or \"inf\" = unlimited; block counts go in capacities_blocks=)"
        ))
    })
}
