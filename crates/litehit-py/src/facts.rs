//! `Facts`: facts rows as Arrow record batches in [`facts_schema`], handed to pyarrow,
//! polars and DuckDB through `__arrow_c_stream__` without a copy; read from and written to
//! CSV or Parquet facts files through the core's reader and atomic writers. `FactsBatch`:
//! one batch (what `Replayer.feed` returns), through `__arrow_c_array__`.

use std::path::PathBuf;

use arrow_array::cast::AsArray as _;
use arrow_array::{Array as _, RecordBatch};
use litehit_core::facts::FactRecord;
use litehit_core::facts::arrow::{FactsBatchRows, facts_schema};
use litehit_core::facts::file::{
    FactsFileFormat, FactsFileWriter, FactsReader, ParquetFactsWriter,
};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use crate::arrow_ffi::{export_batch, export_stream, import_batches};
use crate::errors::{litehit_error, litehit_message};
use crate::rows::FactsSink;

/// Facts rows, in batches of the facts schema.
#[pyclass(frozen, module = "litehit._litehit", name = "Facts")]
pub struct Facts {
    batches: Vec<RecordBatch>,
}

impl Facts {
    /// Facts of these batches (each of [`facts_schema`]).
    pub fn new(batches: Vec<RecordBatch>) -> Self {
        Self { batches }
    }

    /// The batches, in order.
    pub fn batches(&self) -> &[RecordBatch] {
        &self.batches
    }
}

/// Every row of `path` (CSV or Parquet, as `query` reads it) as batches.
fn read_batches(path: &std::path::Path) -> PyResult<Vec<RecordBatch>> {
    let mut reader = FactsReader::open(path).map_err(|error| litehit_error(&error))?;
    let mut record = FactRecord::default();
    let mut sink = FactsSink::new(true);
    while reader
        .next_record(&mut record)
        .map_err(|error| litehit_error(&error))?
    {
        sink.push(&record.as_row());
    }
    Ok(sink.finish())
}

#[pymethods]
impl Facts {
    /// The Arrow PyCapsule stream interface: every batch, sharing its buffers.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // A consumer's requested schema is a hint the producer may ignore (the interface's
        // rule): facts have one schema.
        let _ = requested_schema;
        export_stream(py, facts_schema(), self.batches.clone())
    }

    /// Rows held.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    fn __len__(&self) -> usize {
        self.num_rows()
    }

    fn __repr__(&self) -> String {
        format!(
            "litehit.Facts(rows={}, batches={})",
            self.num_rows(),
            self.batches.len()
        )
    }

    /// Reads a facts file, CSV or Parquet (by its first bytes), or the one in a directory.
    #[staticmethod]
    fn read(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let path = litehit_core::facts::file::facts_input_path(&path);
        let batches = py.detach(|| read_batches(&path))?;
        Ok(Self::new(batches))
    }

    /// Facts from any Arrow stream or batch with the facts columns (by name; strings in any
    /// layout, integers signed or not). Batches already in the facts schema are kept as they
    /// are (their buffers shared); others are rebuilt. Every row is checked as a facts file's.
    #[staticmethod]
    fn from_arrow(py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<Self> {
        let Some(batches) = import_batches(source)? else {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "Facts.from_arrow takes an object with __arrow_c_stream__ or __arrow_c_array__",
            ));
        };
        py.detach(|| {
            let schema = facts_schema();
            let mut kept = Vec::new();
            let mut record = FactRecord::default();
            let mut row_number = 0_u64;
            for batch in batches {
                let batch = batch?;
                let rows = FactsBatchRows::new(&batch)
                    .map_err(|error| litehit_message(format!("Arrow facts: {error}")))?;
                let rebuild = batch.schema().fields() != schema.fields();
                let mut sink = FactsSink::new(false);
                for row in 0..rows.len() {
                    row_number += 1;
                    rows.read(row, &mut record).map_err(|error| {
                        litehit_message(format!("Arrow facts: row {row_number}: {error}"))
                    })?;
                    if rebuild {
                        sink.push(&record.as_row());
                    }
                }
                kept.push(if rebuild { sink.finish_one() } else { batch });
            }
            Ok(Self::new(kept))
        })
    }

    /// Writes the facts to `path` atomically (a temp file beside it, fsync, rename), as
    /// Parquet when it ends in `.parquet`, else as the CSV; the path written.
    fn write(&self, py: Python<'_>, path: PathBuf) -> PyResult<String> {
        py.detach(|| {
            let written = match FactsFileFormat::of_path(&path) {
                FactsFileFormat::Parquet => {
                    let mut writer = ParquetFactsWriter::create_file(&path)
                        .map_err(|error| litehit_error(&error))?;
                    for batch in &self.batches {
                        writer
                            .write_batch(batch)
                            .map_err(|error| litehit_error(&error))?;
                    }
                    writer.commit()
                }
                FactsFileFormat::Csv => {
                    let mut writer = FactsFileWriter::create_file(&path, FactsFileFormat::Csv)
                        .map_err(|error| litehit_error(&error))?;
                    let mut record = FactRecord::default();
                    for batch in &self.batches {
                        let rows = FactsBatchRows::new(batch)
                            .map_err(|error| litehit_message(error.to_string()))?;
                        for row in 0..rows.len() {
                            rows.read(row, &mut record)
                                .map_err(|error| litehit_message(error.to_string()))?;
                            writer.push(&record.as_row());
                            writer.flush_full().map_err(|error| litehit_error(&error))?;
                        }
                    }
                    writer.commit()
                }
            }
            .map_err(|error| litehit_error(&error))?;
            Ok(written.display().to_string())
        })
    }

    /// The addresses of each batch's curve buffers (`start`, `run` values), to check that a
    /// consumer shares them rather than copies (the tests).
    fn _curve_buffer_addresses(&self) -> Vec<(usize, usize)> {
        self.batches
            .iter()
            .map(|batch| {
                let curves = batch.column(6).as_list::<i32>();
                let segments = curves.values().as_struct();
                let address =
                    |index: usize| segments.column(index).to_data().buffers()[0].as_ptr() as usize;
                (address(0), address(1))
            })
            .collect()
    }
}

/// One batch of facts rows (a `Replayer.feed` answer): `__arrow_c_array__` for
/// `pyarrow.record_batch`, `__arrow_c_stream__` for everything else.
#[pyclass(frozen, module = "litehit._litehit", name = "FactsBatch")]
pub struct FactsBatch {
    batch: RecordBatch,
}

impl FactsBatch {
    /// Wraps one batch of the facts schema.
    pub fn new(batch: RecordBatch) -> Self {
        Self { batch }
    }
}

#[pymethods]
impl FactsBatch {
    /// The Arrow PyCapsule array interface: the batch as a struct array.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema;
        export_batch(py, &self.batch)
    }

    /// The Arrow PyCapsule stream interface: a stream of this one batch.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        export_stream(py, facts_schema(), vec![self.batch.clone()])
    }

    /// Rows held.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }

    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }
}
