//! The Arrow C data and stream interfaces through PyCapsules (the Arrow PyCapsule
//! interface): batches out as `arrow_array_stream` / `arrow_schema` + `arrow_array` capsules,
//! any `__arrow_c_stream__` or `__arrow_c_array__` object in. Buffers are shared, never
//! copied, both ways.
//!
//! The crate's only `unsafe`: taking a stream or array out of a capsule another library
//! made, which the interface defines as moving the struct (its `release` is cleared).
#![allow(unsafe_code)]

use std::ffi::CString;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{Array as _, RecordBatch, RecordBatchIterator, StructArray};
use arrow_schema::SchemaRef;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use crate::errors::litehit_message;

const STREAM: &std::ffi::CStr = c"arrow_array_stream";
const SCHEMA: &std::ffi::CStr = c"arrow_schema";
const ARRAY: &std::ffi::CStr = c"arrow_array";

/// `batches` as an `arrow_array_stream` capsule; the consumer takes the stream (and shares
/// the buffers), or dropping the capsule releases it.
pub fn export_stream(
    py: Python<'_>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> PyResult<Bound<'_, PyCapsule>> {
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    let stream = FFI_ArrowArrayStream::new(Box::new(reader));
    PyCapsule::new(py, stream, Some(CString::from(STREAM)))
}

/// One batch as the `(arrow_schema, arrow_array)` capsule pair of `__arrow_c_array__`.
pub fn export_batch<'py>(py: Python<'py>, batch: &RecordBatch) -> PyResult<Bound<'py, PyTuple>> {
    let data = StructArray::from(batch.clone()).into_data();
    let array = FFI_ArrowArray::new(&data);
    let schema = FFI_ArrowSchema::try_from(data.data_type())
        .map_err(|error| litehit_message(format!("exporting the facts schema: {error}")))?;
    let schema = PyCapsule::new(py, schema, Some(CString::from(SCHEMA)))?;
    let array = PyCapsule::new(py, array, Some(CString::from(ARRAY)))?;
    PyTuple::new(py, [schema.into_any(), array.into_any()])
}

/// The record batches of `source`: an object with `__arrow_c_stream__` (a pyarrow table or
/// reader, a polars or DuckDB frame, litehit's own `Facts`), or with `__arrow_c_array__` (a
/// pyarrow record batch) as one batch. `None` when it has neither.
pub fn import_batches(
    source: &Bound<'_, PyAny>,
) -> PyResult<Option<Box<dyn Iterator<Item = PyResult<RecordBatch>> + Send>>> {
    if source.hasattr("__arrow_c_stream__")? {
        let capsule = source.call_method0("__arrow_c_stream__")?;
        let capsule = capsule.cast::<PyCapsule>()?;
        let pointer = capsule.pointer_checked(Some(STREAM))?;
        // SAFETY: the capsule is an `arrow_array_stream` (checked by name), so it points to
        // an `ArrowArrayStream` struct, which `from_raw` moves out, marking it released.
        let stream = unsafe {
            FFI_ArrowArrayStream::from_raw(pointer.as_ptr().cast::<FFI_ArrowArrayStream>())
        };
        let reader = RecordBatchStreamReader::try_new(stream)
            .map_err(|error| litehit_message(format!("reading the Arrow stream: {error}")))?;
        return Ok(Some(Box::new(reader.map(|batch| {
            batch.map_err(|error| litehit_message(format!("reading the Arrow stream: {error}")))
        }))));
    }
    if source.hasattr("__arrow_c_array__")? {
        let pair = source.call_method0("__arrow_c_array__")?;
        let (schema, array): (Bound<'_, PyCapsule>, Bound<'_, PyCapsule>) = pair.extract()?;
        let schema_pointer = schema.pointer_checked(Some(SCHEMA))?;
        let array_pointer = array.pointer_checked(Some(ARRAY))?;
        // SAFETY: capsules named `arrow_schema` / `arrow_array` point to those C structs;
        // the array is moved out (its `release` cleared), the schema only borrowed.
        let data = unsafe {
            let array = FFI_ArrowArray::from_raw(array_pointer.as_ptr().cast::<FFI_ArrowArray>());
            let schema = &*schema_pointer.as_ptr().cast::<FFI_ArrowSchema>();
            arrow_array::ffi::from_ffi(array, schema)
        }
        .map_err(|error| litehit_message(format!("reading the Arrow array: {error}")))?;
        let array = arrow_array::make_array(data);
        let Some(columns) = array.as_any().downcast_ref::<StructArray>() else {
            return Err(PyTypeError::new_err(
                "an Arrow array of rows must be a struct array (a record batch)",
            ));
        };
        let batch = RecordBatch::from(columns.clone());
        return Ok(Some(Box::new(std::iter::once(Ok(batch)))));
    }
    Ok(None)
}
