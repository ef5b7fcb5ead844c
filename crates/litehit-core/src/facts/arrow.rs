//! Facts as Arrow record batches: the columns of `litehit_facts.csv`, with the hit curve as
//! `list<struct<start: uint64, run: uint64>>` instead of JSON in a string, so Parquet files,
//! DuckDB, Spark, polars and pyarrow read curves without parsing text.
//!
//! [`FactsBatchBuilder`] turns rows into batches (Parquet facts, the Python package);
//! [`FactsBatchRows`] reads a batch back into [`FactRecord`]s under the CSV reader's row rules,
//! so a fact means the same whichever file it came from.

use std::sync::{Arc, LazyLock};

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray as _;
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::{Array, ArrayRef, Int64Array, ListArray, RecordBatch, StructArray, UInt64Array};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};

use super::file::FactsRowError;
use super::{FactRecord, FactRow, HitCurveSegment};

/// The hit curve's struct member holding a run's first capacity in blocks.
pub const CURVE_START: &str = "start";
/// The hit curve's struct member holding a run's length in blocks.
pub const CURVE_RUN: &str = "run";

/// The column names, in the CSV header's order.
pub const FACTS_COLUMNS: [&str; 7] = [
    "trace_id",
    "instance_id",
    "timestamp_ns",
    "input_token_len",
    "block_size_tokens",
    "block_bytes",
    "hit_curve",
];

/// Rows per batch the builders of this crate make: large enough that per-batch costs vanish,
/// small enough that a batch's buffers stay a few MiB.
pub const FACTS_BATCH_ROWS: usize = 64 * 1024;

/// `struct<start: uint64, run: uint64>`, one arithmetic run of the curve.
fn segment_fields() -> Fields {
    Fields::from(vec![
        Field::new(CURVE_START, DataType::UInt64, false),
        Field::new(CURVE_RUN, DataType::UInt64, false),
    ])
}

/// The list's item: a segment, never null.
fn curve_item_field() -> Arc<Field> {
    Arc::new(Field::new(
        "item",
        DataType::Struct(segment_fields()),
        false,
    ))
}

static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new(FACTS_COLUMNS[0], DataType::Utf8, false),
        Field::new(FACTS_COLUMNS[1], DataType::Utf8, false),
        Field::new(FACTS_COLUMNS[2], DataType::Int64, false),
        Field::new(FACTS_COLUMNS[3], DataType::UInt64, false),
        Field::new(FACTS_COLUMNS[4], DataType::UInt64, false),
        Field::new(FACTS_COLUMNS[5], DataType::UInt64, false),
        Field::new(FACTS_COLUMNS[6], DataType::List(curve_item_field()), false),
    ]))
});

/// The schema of every facts batch this crate builds.
#[must_use]
pub fn facts_schema() -> SchemaRef {
    Arc::clone(&SCHEMA)
}

/// Appends facts rows and cuts them into record batches of [`facts_schema`].
#[derive(Debug)]
pub struct FactsBatchBuilder {
    trace_ids: StringBuilder,
    instance_ids: StringBuilder,
    timestamps_ns: Vec<i64>,
    input_token_lens: Vec<u64>,
    block_sizes_tokens: Vec<u64>,
    block_bytes: Vec<u64>,
    /// Where each row's segments end in `starts` / `runs` (Arrow list offsets).
    curve_offsets: Vec<i32>,
    starts: Vec<u64>,
    runs: Vec<u64>,
}

impl Default for FactsBatchBuilder {
    fn default() -> Self {
        Self {
            trace_ids: StringBuilder::new(),
            instance_ids: StringBuilder::new(),
            timestamps_ns: Vec::new(),
            input_token_lens: Vec::new(),
            block_sizes_tokens: Vec::new(),
            block_bytes: Vec::new(),
            curve_offsets: vec![0],
            starts: Vec::new(),
            runs: Vec::new(),
        }
    }
}

impl FactsBatchBuilder {
    /// An empty builder.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Rows appended since the last [`finish`](Self::finish).
    #[must_use]
    pub fn len(&self) -> usize {
        self.timestamps_ns.len()
    }

    /// Whether no row was appended since the last [`finish`](Self::finish).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.timestamps_ns.is_empty()
    }

    /// Appends one row. A batch holds fewer than 2^31 segments (Arrow's `i32` list offsets):
    /// [`FACTS_BATCH_ROWS`] rows of real curves stay far below, and the caller cuts batches
    /// by rows.
    pub fn push(&mut self, row: &FactRow<'_>) {
        self.trace_ids.append_value(row.trace_id);
        self.instance_ids.append_value(row.instance_id);
        self.timestamps_ns.push(row.timestamp_ns);
        self.input_token_lens.push(row.input_token_len);
        self.block_sizes_tokens.push(row.block_size_tokens);
        self.block_bytes.push(row.block_bytes);
        for segment in &row.fact.hit_curve {
            self.starts.push(segment.start_required_blocks);
            self.runs.push(segment.run_length);
        }
        let end = i32::try_from(self.starts.len())
            .expect("a facts batch holds fewer than 2^31 curve segments");
        self.curve_offsets.push(end);
    }

    /// The rows appended so far as one batch; the builder is empty again.
    pub fn finish(&mut self) -> RecordBatch {
        let taken = std::mem::take(self);
        let Self {
            mut trace_ids,
            mut instance_ids,
            timestamps_ns,
            input_token_lens,
            block_sizes_tokens,
            block_bytes,
            curve_offsets,
            starts,
            runs,
        } = taken;
        let segments = StructArray::new(
            segment_fields(),
            vec![
                Arc::new(UInt64Array::from(starts)) as ArrayRef,
                Arc::new(UInt64Array::from(runs)) as ArrayRef,
            ],
            None,
        );
        let curves = ListArray::new(
            curve_item_field(),
            OffsetBuffer::new(ScalarBuffer::from(curve_offsets)),
            Arc::new(segments),
            None,
        );
        let columns: Vec<ArrayRef> = vec![
            Arc::new(trace_ids.finish()),
            Arc::new(instance_ids.finish()),
            Arc::new(Int64Array::from(timestamps_ns)),
            Arc::new(UInt64Array::from(input_token_lens)),
            Arc::new(UInt64Array::from(block_sizes_tokens)),
            Arc::new(UInt64Array::from(block_bytes)),
            Arc::new(curves),
        ];
        RecordBatch::try_new(facts_schema(), columns)
            .expect("the builder's columns match facts_schema")
    }
}

/// Why a batch is no facts batch: a column is missing or of another type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactsSchemaError {
    /// A facts column is absent.
    #[error("no column {column:?} (facts columns: {})", FACTS_COLUMNS.join(", "))]
    MissingColumn {
        /// The column.
        column: &'static str,
    },
    /// A column holds another type than its facts type.
    #[error("column {column:?} is {found}, expected {expected}")]
    WrongType {
        /// The column.
        column: &'static str,
        /// Its type.
        found: String,
        /// What facts hold there.
        expected: &'static str,
    },
}

/// A string column in any of Arrow's string layouts.
#[derive(Debug)]
enum Strings {
    Utf8(arrow_array::StringArray),
    LargeUtf8(arrow_array::LargeStringArray),
    View(arrow_array::StringViewArray),
}

impl Strings {
    fn of(column: &'static str, array: &ArrayRef) -> Result<Self, FactsSchemaError> {
        match array.data_type() {
            DataType::Utf8 => Ok(Self::Utf8(array.as_string::<i32>().clone())),
            DataType::LargeUtf8 => Ok(Self::LargeUtf8(array.as_string::<i64>().clone())),
            DataType::Utf8View => Ok(Self::View(array.as_string_view().clone())),
            other => Err(wrong_type(column, other, "utf8")),
        }
    }

    fn value(&self, field: &'static str, row: usize) -> Result<&str, FactsRowError> {
        let (valid, value) = match self {
            Self::Utf8(array) => (array.is_valid(row), array.value(row)),
            Self::LargeUtf8(array) => (array.is_valid(row), array.value(row)),
            Self::View(array) => (array.is_valid(row), array.value(row)),
        };
        if valid {
            Ok(value)
        } else {
            Err(FactsRowError::Null { field })
        }
    }
}

/// An integer column: `uint64` as written here, or `int64` as Spark (which has no unsigned
/// types) writes it; a negative value in a `uint64` field is refused per row.
#[derive(Debug)]
enum Integers {
    Unsigned(UInt64Array),
    Signed(Int64Array),
}

impl Integers {
    fn of(column: &'static str, array: &dyn Array) -> Result<Self, FactsSchemaError> {
        match array.data_type() {
            DataType::UInt64 => Ok(Self::Unsigned(array.as_primitive::<UInt64Type>().clone())),
            DataType::Int64 => Ok(Self::Signed(array.as_primitive::<Int64Type>().clone())),
            other => Err(wrong_type(column, other, "uint64 or int64")),
        }
    }

    fn valid(&self, field: &'static str, row: usize) -> Result<(), FactsRowError> {
        let valid = match self {
            Self::Unsigned(array) => array.is_valid(row),
            Self::Signed(array) => array.is_valid(row),
        };
        if valid {
            Ok(())
        } else {
            Err(FactsRowError::Null { field })
        }
    }

    fn unsigned(&self, field: &'static str, row: usize) -> Result<u64, FactsRowError> {
        self.valid(field, row)?;
        match self {
            Self::Unsigned(array) => Ok(array.value(row)),
            Self::Signed(array) => {
                let value = array.value(row);
                u64::try_from(value).map_err(|_| FactsRowError::NotUnsignedInteger {
                    field,
                    value: value.to_string(),
                })
            }
        }
    }

    fn signed(&self, field: &'static str, row: usize) -> Result<i64, FactsRowError> {
        self.valid(field, row)?;
        match self {
            Self::Signed(array) => Ok(array.value(row)),
            Self::Unsigned(array) => {
                let value = array.value(row);
                i64::try_from(value).map_err(|_| FactsRowError::NotInteger {
                    field,
                    value: value.to_string(),
                })
            }
        }
    }
}

fn wrong_type(column: &'static str, found: &DataType, expected: &'static str) -> FactsSchemaError {
    FactsSchemaError::WrongType {
        column,
        found: found.to_string(),
        expected,
    }
}

/// The curve column as a `list` or a `large_list` (polars' layout).
#[derive(Debug)]
enum Curves {
    List(ListArray),
    Large(arrow_array::LargeListArray),
}

impl Curves {
    fn values(&self) -> &ArrayRef {
        match self {
            Self::List(list) => list.values(),
            Self::Large(list) => list.values(),
        }
    }

    fn is_null(&self, row: usize) -> bool {
        match self {
            Self::List(list) => list.is_null(row),
            Self::Large(list) => list.is_null(row),
        }
    }

    /// The segments of `row`, as indices into [`Self::values`].
    fn range(&self, row: usize) -> (usize, usize) {
        let (first, end) = match self {
            Self::List(list) => (
                i64::from(list.value_offsets()[row]),
                i64::from(list.value_offsets()[row + 1]),
            ),
            Self::Large(list) => (list.value_offsets()[row], list.value_offsets()[row + 1]),
        };
        (
            usize::try_from(first).unwrap_or_default(),
            usize::try_from(end).unwrap_or_default(),
        )
    }
}

/// The rows of one facts batch, read back into [`FactRecord`]s by column name (other columns
/// are ignored), under the rules the CSV reader applies to a row.
#[derive(Debug)]
pub struct FactsBatchRows {
    trace_ids: Strings,
    instance_ids: Strings,
    timestamps_ns: Integers,
    input_token_lens: Integers,
    block_sizes_tokens: Integers,
    block_bytes: Integers,
    curves: Curves,
    starts: Integers,
    runs: Integers,
    rows: usize,
}

impl FactsBatchRows {
    /// Checks that `batch` has the facts columns, of their types (strings in any layout,
    /// integers signed or not).
    pub fn new(batch: &RecordBatch) -> Result<Self, FactsSchemaError> {
        let column = |name: &'static str| {
            batch
                .column_by_name(name)
                .ok_or(FactsSchemaError::MissingColumn { column: name })
        };
        // The first missing column in the CSV header's order is the one named.
        for name in FACTS_COLUMNS {
            column(name)?;
        }
        let [
            trace_id,
            instance_id,
            timestamp_ns,
            input_token_len,
            block_size_tokens,
            bytes,
            curve,
        ] = FACTS_COLUMNS;
        let curve_array = column(curve)?;
        let curve_type = "list<struct<start: uint64, run: uint64>>";
        let curves = if let Some(list) = curve_array.as_list_opt::<i32>() {
            Curves::List(list.clone())
        } else if let Some(list) = curve_array.as_list_opt::<i64>() {
            Curves::Large(list.clone())
        } else {
            return Err(wrong_type(curve, curve_array.data_type(), curve_type));
        };
        let segments = curves
            .values()
            .as_struct_opt()
            .ok_or_else(|| wrong_type(curve, curve_array.data_type(), curve_type))?;
        let member = |name: &'static str| {
            segments
                .column_by_name(name)
                .ok_or_else(|| wrong_type(curve, curve_array.data_type(), curve_type))
        };
        Ok(Self {
            trace_ids: Strings::of(trace_id, column(trace_id)?)?,
            instance_ids: Strings::of(instance_id, column(instance_id)?)?,
            timestamps_ns: Integers::of(timestamp_ns, column(timestamp_ns)?)?,
            input_token_lens: Integers::of(input_token_len, column(input_token_len)?)?,
            block_sizes_tokens: Integers::of(block_size_tokens, column(block_size_tokens)?)?,
            block_bytes: Integers::of(bytes, column(bytes)?)?,
            starts: Integers::of(curve, member(CURVE_START)?)?,
            runs: Integers::of(curve, member(CURVE_RUN)?)?,
            curves,
            rows: batch.num_rows(),
        })
    }

    /// Rows in the batch.
    #[must_use]
    pub fn len(&self) -> usize {
        self.rows
    }

    /// The curves' starts and runs as slices, when both are `uint64` without a null (then
    /// every value passes the row rules as it is).
    fn plain_segments(&self) -> Option<(&[u64], &[u64])> {
        match (&self.starts, &self.runs) {
            (Integers::Unsigned(starts), Integers::Unsigned(runs))
                if starts.null_count() == 0 && runs.null_count() == 0 =>
            {
                Some((starts.values(), runs.values()))
            }
            _ => None,
        }
    }

    /// Whether the batch holds no row.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Reads row `row` into `record`, reusing its buffers: a null is refused, and so is a
    /// block of 0 tokens or bytes, as in a CSV row.
    pub fn read(&self, row: usize, record: &mut FactRecord) -> Result<(), FactsRowError> {
        let [
            trace_id,
            instance_id,
            timestamp_ns,
            input_token_len,
            block_size_tokens,
            bytes,
            curve,
        ] = FACTS_COLUMNS;
        record.trace_id.clear();
        record
            .trace_id
            .push_str(self.trace_ids.value(trace_id, row)?);
        let instance = self.instance_ids.value(instance_id, row)?;
        record.instance_id.clear();
        record.instance_id.push_str(instance);
        record.timestamp_ns = self.timestamps_ns.signed(timestamp_ns, row)?;
        record.input_token_len = self.input_token_lens.unsigned(input_token_len, row)?;
        record.block_size_tokens = self.block_sizes_tokens.unsigned(block_size_tokens, row)?;
        record.block_bytes = self.block_bytes.unsigned(bytes, row)?;
        if self.curves.is_null(row) {
            return Err(FactsRowError::Null { field: curve });
        }
        let (first, end) = self.curves.range(row);
        let hit_curve = &mut record.fact.hit_curve;
        hit_curve.clear();
        if hit_curve.try_reserve(end.saturating_sub(first)).is_err() {
            return Err(FactsRowError::OutOfMemory {
                line_bytes: end.saturating_sub(first) * 16,
            });
        }
        if let Some((starts, runs)) = self.plain_segments() {
            // Unsigned and without nulls (what LiteHit writes): the values as they lie.
            hit_curve.extend(starts[first..end].iter().zip(&runs[first..end]).map(
                |(&start_required_blocks, &run_length)| HitCurveSegment {
                    start_required_blocks,
                    run_length,
                },
            ));
        } else {
            for segment in first..end {
                hit_curve.push(HitCurveSegment {
                    start_required_blocks: self.starts.unsigned(curve, segment)?,
                    run_length: self.runs.unsigned(curve, segment)?,
                });
            }
        }
        if record.block_bytes == 0 || record.block_size_tokens == 0 {
            return Err(FactsRowError::NonPositiveBlock);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::RequestFact;

    fn record(trace_id: &str, pairs: &[[u64; 2]]) -> FactRecord {
        FactRecord {
            trace_id: trace_id.into(),
            instance_id: "a,b".into(),
            timestamp_ns: -5,
            input_token_len: 64,
            block_size_tokens: 4,
            block_bytes: 4096,
            fact: RequestFact::from_pairs(pairs),
        }
    }

    #[test]
    fn rows_come_back_as_they_went_in() {
        let records = [
            record("x", &[[1, 2], [5, 3]]),
            record("", &[]),
            record("\"q\"\n", &[[u64::MAX - 1, 1]]),
        ];
        let mut builder = FactsBatchBuilder::new();
        for r in &records {
            builder.push(&r.as_row());
        }
        assert_eq!(builder.len(), 3);
        let batch = builder.finish();
        assert!(builder.is_empty());
        assert_eq!(batch.schema(), facts_schema());
        let rows = FactsBatchRows::new(&batch).unwrap();
        let mut back = FactRecord::default();
        for (index, expected) in records.iter().enumerate() {
            rows.read(index, &mut back).unwrap();
            assert_eq!(&back, expected);
        }
    }

    #[test]
    fn a_missing_column_or_a_zero_block_is_refused() {
        let mut builder = FactsBatchBuilder::new();
        let mut zero = record("z", &[]);
        zero.block_bytes = 0;
        builder.push(&zero.as_row());
        let batch = builder.finish();
        let rows = FactsBatchRows::new(&batch).unwrap();
        assert_eq!(
            rows.read(0, &mut FactRecord::default()),
            Err(FactsRowError::NonPositiveBlock)
        );
        let without_curve = batch.project(&[0, 1, 2, 3, 4, 5]).unwrap();
        assert_eq!(
            FactsBatchRows::new(&without_curve).unwrap_err(),
            FactsSchemaError::MissingColumn {
                column: "hit_curve"
            }
        );
    }
}
