//! Rows from Python → the engine: an iterable of dicts, or Arrow batches, with the columns of
//! a standard trace row (`instance_id`, `timestamp_ns`, `keys`, optional `input_len` and
//! `trace_id`). A bad value names the row (1-based, counted across batches) and the field.

use arrow_array::cast::AsArray as _;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use litehit_core::engine::{CachePolicies, CachePolicy, Engine};
use litehit_core::facts::FactRow;
use litehit_core::facts::arrow::{FACTS_BATCH_ROWS, FactsBatchBuilder};
use litehit_core::formats::{EventKind, TraceEvent};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::arrow_ffi::import_batches;
use crate::errors::{chain_text, litehit_message};
use crate::options::policy_order;

/// Dict rows converted per engine call (the GIL is held while converting, released while
/// replaying).
const DICT_ROWS_PER_CHUNK: usize = 16 * 1024;

/// Where facts rows go: one batch, or batches cut every [`FACTS_BATCH_ROWS`] rows.
#[derive(Debug, Default)]
pub struct FactsSink {
    builder: FactsBatchBuilder,
    batches: Vec<RecordBatch>,
    /// Cut a batch every [`FACTS_BATCH_ROWS`] rows (a replay), or keep one (a `feed`).
    cut: bool,
}

impl FactsSink {
    /// A sink cutting batches (`true`) or keeping one.
    pub fn new(cut: bool) -> Self {
        Self {
            cut,
            ..Self::default()
        }
    }

    /// Appends one row.
    pub fn push(&mut self, row: &FactRow<'_>) {
        self.builder.push(row);
        if self.cut && self.builder.len() >= FACTS_BATCH_ROWS {
            self.batches.push(self.builder.finish());
        }
    }

    /// Every batch, the last one cut here (an empty input gives none).
    pub fn finish(mut self) -> Vec<RecordBatch> {
        if !self.builder.is_empty() {
            self.batches.push(self.builder.finish());
        }
        self.batches
    }

    /// All rows as one batch (empty when none).
    pub fn finish_one(mut self) -> RecordBatch {
        debug_assert!(self.batches.is_empty());
        self.builder.finish()
    }
}

/// One [`FactsSink`] per eviction policy replayed, the primary policy's first.
#[derive(Debug)]
pub struct PolicySinks {
    policies: Vec<CachePolicy>,
    sinks: Vec<FactsSink>,
}

impl PolicySinks {
    /// A sink per policy of `policies`, cutting batches (`true`) or keeping one.
    pub fn new(policies: CachePolicies, cut: bool) -> Self {
        let policies = policy_order(policies);
        let sinks = policies.iter().map(|_| FactsSink::new(cut)).collect();
        Self { policies, sinks }
    }

    /// Appends one row of `policy`.
    pub fn push(&mut self, policy: CachePolicy, row: &FactRow<'_>) {
        if let Some(index) = self.policies.iter().position(|&p| p == policy) {
            self.sinks[index].push(row);
        }
    }

    /// Each policy's batches ([`FactsSink::finish`]), the primary policy's first.
    pub fn finish(self) -> Vec<(CachePolicy, Vec<RecordBatch>)> {
        self.policies
            .into_iter()
            .zip(self.sinks.into_iter().map(FactsSink::finish))
            .collect()
    }

    /// Each policy's rows as one batch ([`FactsSink::finish_one`]).
    pub fn finish_one(self) -> Vec<(CachePolicy, RecordBatch)> {
        self.policies
            .into_iter()
            .zip(self.sinks.into_iter().map(FactsSink::finish_one))
            .collect()
    }
}

/// A replay in progress over Python input: the engine, the next row number and where the
/// facts go.
pub struct RowReplay<'a> {
    /// The engine (its lanes persist across calls, as a `Replayer`'s).
    pub engine: &'a mut Engine,
    /// The number the next row gets (1-based, across every call).
    pub next_row: &'a mut u64,
    /// The facts of the rows replayed, per policy.
    pub sink: &'a mut PolicySinks,
    /// What errors call the input (`rows`, or the Arrow stream).
    pub source_name: &'static str,
}

impl RowReplay<'_> {
    /// Replays every row of `source` (an Arrow stream or array, else an iterable of dicts).
    pub fn feed(&mut self, py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Some(batches) = import_batches(source)? {
            self.source_name = "Arrow rows";
            return py.detach(|| {
                let mut events = Vec::new();
                let mut lines = Vec::new();
                for batch in batches {
                    let batch = batch?;
                    events_of_batch(&batch, *self.next_row, &mut events, &mut lines).map_err(
                        |error| litehit_message(format!("{}: {error}", self.source_name)),
                    )?;
                    self.replay(&events, &lines)?;
                }
                Ok(())
            });
        }
        let iterator = source.try_iter().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "rows must be a path, an Arrow stream (an object with __arrow_c_stream__) or an \
                 iterable of dicts, not {}",
                source
                    .get_type()
                    .name()
                    .map_or_else(|_| "?".into(), |n| n.to_string())
            ))
        })?;
        let mut events: Vec<TraceEvent> = Vec::with_capacity(DICT_ROWS_PER_CHUNK);
        let mut lines = Vec::with_capacity(DICT_ROWS_PER_CHUNK);
        let mut used = 0;
        for item in iterator {
            let item = item?;
            if used == events.len() {
                events.push(TraceEvent::default());
            }
            let row = *self.next_row + lines.len() as u64;
            event_of_dict(&item, &mut events[used]).map_err(|error| {
                litehit_message(format!("{}: row {row}: {error}", self.source_name))
            })?;
            used += 1;
            lines.push(row);
            if used == DICT_ROWS_PER_CHUNK {
                py.detach(|| self.replay(&events[..used], &lines))?;
                used = 0;
                lines.clear();
            }
        }
        if used > 0 {
            py.detach(|| self.replay(&events[..used], &lines))?;
        }
        Ok(())
    }

    /// Replays `events` (numbered `lines`) into the sink.
    fn replay(&mut self, events: &[TraceEvent], lines: &[u64]) -> PyResult<()> {
        let sink = &mut *self.sink;
        let result = self
            .engine
            .process_events_by_policy(events, lines, &mut |policy, row| sink.push(policy, &row));
        *self.next_row += events.len() as u64;
        result.map_err(|error| {
            // The engine numbers lines; here they are rows.
            let text = chain_text(&error);
            let text = match text.strip_prefix("line ") {
                Some(rest) => format!("row {rest}"),
                None => text,
            };
            litehit_message(format!("{}: {text}", self.source_name))
        })
    }
}

/// Why one field of one row is refused.
#[derive(Debug)]
pub struct FieldError {
    field: &'static str,
    message: String,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "field \"{}\": {}", self.field, self.message)
    }
}

fn field_error(field: &'static str, message: impl Into<String>) -> FieldError {
    FieldError {
        field,
        message: message.into(),
    }
}

/// A 64-bit key as the trace readers take it: any integer in [-2^63, 2^64), unsigned ones
/// above 2^63 - 1 wrapping to their two's-complement bits.
fn key_of(value: &Bound<'_, PyAny>) -> Option<i64> {
    value
        .extract::<i64>()
        .ok()
        .or_else(|| value.extract::<u64>().ok().map(u64::cast_signed))
}

/// Fills `event` from one dict row.
fn event_of_dict(item: &Bound<'_, PyAny>, event: &mut TraceEvent) -> Result<(), FieldError> {
    let Ok(row) = item.cast::<PyDict>() else {
        return Err(field_error(
            "instance_id",
            "a row must be a dict of instance_id, timestamp_ns, keys, input_len (and trace_id)",
        ));
    };
    let get = |field: &'static str| row.get_item(field).ok().flatten();
    let text = |field: &'static str, value: &Bound<'_, PyAny>| -> Result<String, FieldError> {
        value
            .cast::<PyString>()
            .map_err(|_| field_error(field, "expected a string"))?
            .extract::<String>()
            .map_err(|_| field_error(field, "expected a UTF-8 string"))
    };
    event.kind = EventKind::Read;
    let instance = get("instance_id").ok_or_else(|| field_error("instance_id", "missing"))?;
    event.instance_id = Some(text("instance_id", &instance)?);
    event.trace_id.clear();
    if let Some(trace_id) = get("trace_id").filter(|value| !value.is_none()) {
        event.trace_id = text("trace_id", &trace_id)?;
    }
    event.timestamp_ns = get("timestamp_ns")
        .ok_or_else(|| field_error("timestamp_ns", "missing"))?
        .extract::<i64>()
        .map_err(|_| field_error("timestamp_ns", "expected a 64-bit integer"))?;
    event.input_token_len = match get("input_len").filter(|value| !value.is_none()) {
        None => 0,
        Some(value) => value
            .extract::<u64>()
            .ok()
            .and_then(|len| i64::try_from(len).ok())
            .ok_or_else(|| field_error("input_len", "expected an integer in [0, 2^63)"))?,
    };
    let keys = get("keys").ok_or_else(|| field_error("keys", "missing"))?;
    event.keys.clear();
    let expected = "expected a list of 64-bit integer keys";
    for key in keys.try_iter().map_err(|_| field_error("keys", expected))? {
        let key = key.map_err(|_| field_error("keys", expected))?;
        event
            .keys
            .push(key_of(&key).ok_or_else(|| field_error("keys", expected))?);
    }
    Ok(())
}

/// An integer column in any of the widths a producer may pick.
fn integer_at(array: &ArrayRef, row: usize) -> Option<i128> {
    if array.is_null(row) {
        return None;
    }
    Some(match array.data_type() {
        DataType::Int64 => i128::from(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt64 => i128::from(array.as_primitive::<UInt64Type>().value(row)),
        DataType::Int32 => i128::from(array.as_primitive::<Int32Type>().value(row)),
        DataType::UInt32 => i128::from(array.as_primitive::<UInt32Type>().value(row)),
        _ => return None,
    })
}

fn is_integer(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int64 | DataType::UInt64 | DataType::Int32 | DataType::UInt32
    )
}

/// A string column's value in any layout; `None` for a null or another type.
fn string_at(array: &ArrayRef, row: usize) -> Option<&str> {
    if array.is_null(row) {
        return None;
    }
    match array.data_type() {
        DataType::Utf8 => Some(array.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => Some(array.as_string::<i64>().value(row)),
        DataType::Utf8View => Some(array.as_string_view().value(row)),
        _ => None,
    }
}

/// The keys of `row`: a `list` or `large_list` of 64- or 32-bit integers.
fn keys_at(array: &ArrayRef, row: usize, keys: &mut Vec<i64>) -> Option<()> {
    keys.clear();
    if array.is_null(row) {
        return None;
    }
    let values = match array.data_type() {
        DataType::List(_) => array.as_list::<i32>().value(row),
        DataType::LargeList(_) => array.as_list::<i64>().value(row),
        _ => return None,
    };
    if values.null_count() > 0 {
        return None;
    }
    match values.data_type() {
        DataType::UInt64 => keys.extend(
            values
                .as_primitive::<UInt64Type>()
                .values()
                .iter()
                .map(|&key| key.cast_signed()),
        ),
        DataType::Int64 => keys.extend(values.as_primitive::<Int64Type>().values().iter()),
        DataType::UInt32 => keys.extend(
            values
                .as_primitive::<UInt32Type>()
                .values()
                .iter()
                .map(|&key| i64::from(key)),
        ),
        DataType::Int32 => keys.extend(
            values
                .as_primitive::<Int32Type>()
                .values()
                .iter()
                .map(|&key| i64::from(key)),
        ),
        _ => return None,
    }
    Some(())
}

/// The events of one Arrow batch of trace rows, numbered from `first_row`.
fn events_of_batch(
    batch: &RecordBatch,
    first_row: u64,
    events: &mut Vec<TraceEvent>,
    lines: &mut Vec<u64>,
) -> Result<(), String> {
    let column = |name: &'static str| batch.column_by_name(name);
    let required = |name: &'static str| {
        column(name).ok_or_else(|| {
            format!(
                "no column \"{name}\" (trace rows need instance_id, timestamp_ns, keys; \
                 input_len and trace_id are optional)"
            )
        })
    };
    let instance_ids = required("instance_id")?;
    let timestamps = required("timestamp_ns")?;
    let keys = required("keys")?;
    let input_lens = column("input_len");
    let trace_ids = column("trace_id");
    for (name, array) in [
        ("timestamp_ns", Some(timestamps)),
        ("input_len", input_lens),
    ] {
        if let Some(array) = array
            && !is_integer(array.data_type())
        {
            return Err(format!(
                "column \"{name}\" is {}, expected an integer column",
                array.data_type()
            ));
        }
    }
    events.resize_with(batch.num_rows(), TraceEvent::default);
    lines.clear();
    for (index, event) in events.iter_mut().enumerate() {
        let row_number = first_row + index as u64;
        let bad = |error: FieldError| format!("row {row_number}: {error}");
        event.kind = EventKind::Read;
        let instance = string_at(instance_ids, index)
            .ok_or_else(|| bad(field_error("instance_id", "expected a string")))?;
        match &mut event.instance_id {
            Some(existing) if existing == instance => {}
            slot => *slot = Some(instance.to_owned()),
        }
        event.trace_id.clear();
        if let Some(trace_ids) = trace_ids
            && !trace_ids.is_null(index)
        {
            let trace_id = string_at(trace_ids, index)
                .ok_or_else(|| bad(field_error("trace_id", "expected a string")))?;
            event.trace_id.push_str(trace_id);
        }
        event.timestamp_ns = integer_at(timestamps, index)
            .and_then(|value| i64::try_from(value).ok())
            .ok_or_else(|| bad(field_error("timestamp_ns", "expected a 64-bit integer")))?;
        event.input_token_len = match input_lens {
            Some(array) if !array.is_null(index) => integer_at(array, index)
                .and_then(|value| i64::try_from(value).ok())
                .filter(|&value| value >= 0)
                .ok_or_else(|| bad(field_error("input_len", "expected an integer in [0, 2^63)")))?,
            _ => 0,
        };
        keys_at(keys, index, &mut event.keys).ok_or_else(|| {
            bad(field_error(
                "keys",
                "expected a list of 64-bit integer keys (list<uint64>)",
            ))
        })?;
        lines.push(row_number);
    }
    Ok(())
}
