//! `query` and `mrc` over `Facts`: `litehit-report`'s analysis (the numbers `litehit query`
//! and `litehit mrc` print), handed to Python as columns of the long-form tables. Nothing is
//! computed here: records go in, the report crate's rows come out.

use litehit_core::facts::FactRecord;
use litehit_core::facts::arrow::FactsBatchRows;
use litehit_report::{
    MrcBuilder, PoolRule, QueryError, QueryPlan, QuerySlots, RecordsQuery, mrc_table_rows,
    query_table_rows,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{litehit_error, litehit_message};
use crate::facts::Facts;

/// Hands every row of `facts` to `on_record`, in order.
fn each_record(facts: &Facts, on_record: &mut dyn FnMut(&FactRecord)) -> PyResult<()> {
    let mut record = FactRecord::default();
    let mut row_number = 0_u64;
    for batch in facts.batches() {
        let rows = FactsBatchRows::new(batch)
            .map_err(|error| litehit_message(format!("facts: {error}")))?;
        for row in 0..rows.len() {
            row_number += 1;
            rows.read(row, &mut record)
                .map_err(|error| litehit_message(format!("facts: row {row_number}: {error}")))?;
            on_record(&record);
        }
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

/// `litehit query FACTS - GB… --capacity-blocks B…`'s summaries in long form: the columns of
/// `litehit.query`'s table.
#[pyfunction]
#[pyo3(signature = (facts, capacity_gb, capacity_blocks))]
pub fn query_table<'py>(
    py: Python<'py>,
    facts: &Facts,
    capacity_gb: Vec<f64>,
    capacity_blocks: Vec<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let slots = QuerySlots {
        capacity_gb,
        capacity_blocks,
    };
    let plan = QueryPlan {
        pool: Some(PoolRule::from_flag(None)),
        ..QueryPlan::default()
    };
    let rows = py.detach(|| {
        let mut query = RecordsQuery::new(slots.clone(), &plan);
        each_record(facts, &mut |record| query.add(record))?;
        let summary = query
            .finish(|again| each_record(facts, again).map_err(QueryFailed))
            .map_err(|QueryFailed(error)| error)?;
        Ok::<_, PyErr>(query_table_rows(&summary, &slots))
    })?;
    let columns = PyDict::new(py);
    set_column(&columns, "instance_id", &rows, |r| r.instance_id.clone())?;
    set_column(&columns, "capacity_bytes", &rows, |r| r.capacity_bytes)?;
    set_column(&columns, "capacity_blocks", &rows, |r| r.capacity_blocks)?;
    set_column(&columns, "total_input_tokens", &rows, |r| {
        r.total_input_tokens
    })?;
    set_column(&columns, "total_hit_blocks", &rows, |r| r.total_hit_blocks)?;
    set_column(&columns, "total_hit_tokens", &rows, |r| r.total_hit_tokens)?;
    set_column(&columns, "hit_rate", &rows, |r| r.hit_rate)?;
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
