//! Facts as a Parquet file (`litehit_facts.parquet`): the same rows as the CSV, in the
//! columns of [`crate::facts::arrow`], published through the same atomic writer and read back
//! through [`FactsReader`](super::FactsReader) under the same row rules (`parquet_rows`).

use std::fs::File;
use std::io::{BufWriter, Read as _, Write as _};
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::{AtomicFactsWriter, FactsError, Result};
use crate::facts::FactRow;
use crate::facts::arrow::{FACTS_BATCH_ROWS, FactsBatchBuilder, facts_schema};

/// The four bytes a Parquet file starts (and ends) with.
const PARQUET_MAGIC: &[u8; 4] = b"PAR1";

/// Whether the regular file at `path` starts with Parquet's magic bytes (what the reader
/// goes by, whatever the file is called). A file that cannot be read is left to the caller's
/// open, which says why.
#[must_use]
pub fn starts_as_parquet(path: &Path) -> bool {
    let Ok(mut file) = File::open(path) else {
        return false;
    };
    if !file.metadata().is_ok_and(|metadata| metadata.is_file()) {
        return false;
    }
    let mut magic = [0_u8; 4];
    file.read_exact(&mut magic).is_ok() && &magic == PARQUET_MAGIC
}

/// A file-level problem of a Parquet facts file (not Parquet, not facts columns).
pub(super) fn parquet_error(path: &Path, message: impl std::fmt::Display) -> FactsError {
    FactsError::Parquet {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

/// Publishes a Parquet facts file all-or-nothing: the rows go to the atomic writer's temp
/// file (lock, fsync, rename, as the CSV), cut into batches of [`FACTS_BATCH_ROWS`] and
/// compressed with Snappy (what Spark, DuckDB and pyarrow read and write by default).
pub struct ParquetFactsWriter {
    /// The publication: its temp file, lock and created directories.
    file: AtomicFactsWriter,
    /// Writes into a second handle of the temp file.
    parquet: ArrowWriter<BufWriter<File>>,
    builder: FactsBatchBuilder,
    rows_written: u64,
}

impl std::fmt::Debug for ParquetFactsWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetFactsWriter")
            .field("file", &self.file)
            .field("rows_written", &self.rows_written)
            .finish_non_exhaustive()
    }
}

impl ParquetFactsWriter {
    /// Publishes to `facts_path`: creates its directory if missing and its temp file.
    pub fn create_file(facts_path: &Path) -> Result<Self> {
        let mut file = AtomicFactsWriter::create_empty_file(facts_path)?;
        let write_error = |source| FactsError::Write {
            path: facts_path.to_path_buf(),
            source,
        };
        let handle = file.clone_handle().map_err(write_error)?;
        let properties = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build();
        let parquet =
            ArrowWriter::try_new(BufWriter::new(handle), facts_schema(), Some(properties))
                .map_err(|error| write_error(std::io::Error::other(error)))?;
        Ok(Self {
            file,
            parquet,
            builder: FactsBatchBuilder::new(),
            rows_written: 0,
        })
    }

    fn write_error(
        &self,
        error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> FactsError {
        FactsError::Write {
            path: self.file.final_path().to_path_buf(),
            source: std::io::Error::other(error),
        }
    }

    /// Appends one row to the batch being built (in memory until [`Self::flush_full`] or
    /// [`Self::commit`]), so a row callback cannot fail.
    pub fn push(&mut self, row: &FactRow<'_>) {
        self.builder.push(row);
    }

    /// Writes the rows pushed so far once they fill a batch of [`FACTS_BATCH_ROWS`].
    pub fn flush_full(&mut self) -> Result<()> {
        if self.builder.len() >= FACTS_BATCH_ROWS {
            let batch = self.builder.finish();
            self.write_rows(&batch)?;
        }
        Ok(())
    }

    /// Writes a batch of [`facts_schema`] (after the rows pushed before it).
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        if !self.builder.is_empty() {
            let pending = self.builder.finish();
            self.write_rows(&pending)?;
        }
        self.write_rows(batch)
    }

    fn write_rows(&mut self, batch: &RecordBatch) -> Result<()> {
        self.parquet
            .write(batch)
            .map_err(|error| self.write_error(error))?;
        self.rows_written += batch.num_rows() as u64;
        Ok(())
    }

    /// Rows written so far (pushed rows count once their batch is written).
    #[must_use]
    pub fn rows_written(&self) -> u64 {
        self.rows_written
    }

    /// The path the facts file is published at.
    #[must_use]
    pub fn final_path(&self) -> &Path {
        self.file.final_path()
    }

    /// What dropping this writer unpublished removes, for a process about to exit
    /// ([`AtomicFactsWriter::discard_on_exit`]).
    pub fn discard_on_exit(&self) -> impl FnOnce() + Send + 'static {
        self.file.discard_on_exit()
    }

    /// Writes the last rows and the footer, then publishes ([`AtomicFactsWriter::commit`]).
    pub fn commit(mut self) -> Result<PathBuf> {
        if !self.builder.is_empty() {
            let pending = self.builder.finish();
            self.write_rows(&pending)?;
        }
        let write_error = |path: &Path, error: parquet::errors::ParquetError| FactsError::Write {
            path: path.to_path_buf(),
            source: std::io::Error::other(error),
        };
        let path = self.file.final_path().to_path_buf();
        let mut handle = self
            .parquet
            .into_inner()
            .map_err(|error| write_error(&path, error))?;
        handle.flush().map_err(|source| FactsError::Write {
            path: path.clone(),
            source,
        })?;
        drop(handle);
        self.file.commit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::file::{FactsReader, PARQUET_FACTS_FILE_NAME};
    use crate::facts::{FactRecord, RequestFact};

    fn record(index: u64) -> FactRecord {
        FactRecord {
            trace_id: format!("t{index}"),
            instance_id: if index.is_multiple_of(2) { "a" } else { "b" }.into(),
            timestamp_ns: i64::try_from(index).unwrap() * 10,
            input_token_len: 16 * index,
            block_size_tokens: 4,
            block_bytes: 1024,
            fact: RequestFact::from_pairs(&[[1, index.min(2)]][..usize::from(index > 0)]),
        }
    }

    #[test]
    fn written_rows_read_back_through_the_facts_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join(PARQUET_FACTS_FILE_NAME);
        let records: Vec<FactRecord> = (0..(FACTS_BATCH_ROWS as u64 + 5)).map(record).collect();
        let mut writer = ParquetFactsWriter::create_file(&path).unwrap();
        for r in &records {
            writer.push(&r.as_row());
            writer.flush_full().unwrap();
        }
        assert!(!path.exists(), "nothing is published before commit");
        assert_eq!(writer.commit().unwrap(), path);
        assert!(starts_as_parquet(&path));
        let mut reader = FactsReader::open(&path).unwrap();
        let mut back = FactRecord::default();
        for expected in &records {
            assert!(reader.next_record(&mut back).unwrap());
            assert_eq!(&back, expected);
        }
        assert!(!reader.next_record(&mut back).unwrap());
        assert_eq!(
            reader.input_tokens_read(),
            records.iter().map(|r| r.input_token_len).sum::<u64>()
        );
    }

    #[test]
    fn a_dropped_writer_publishes_nothing_and_leaves_no_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new").join("f.parquet");
        let mut writer = ParquetFactsWriter::create_file(&path).unwrap();
        writer.push(&record(1).as_row());
        drop(writer);
        assert!(!dir.path().join("new").exists());
    }

    #[test]
    fn a_bad_row_is_named_by_its_row_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.parquet");
        let mut writer = ParquetFactsWriter::create_file(&path).unwrap();
        writer.push(&record(1).as_row());
        let mut long = record(2);
        long.input_token_len = 4; // one full block, a curve of two
        writer.push(&long.as_row());
        writer.commit().unwrap();
        let mut reader = FactsReader::open(&path).unwrap();
        let mut back = FactRecord::default();
        assert!(reader.next_record(&mut back).unwrap());
        let error = reader.next_record(&mut back).unwrap_err().to_string();
        assert!(
            error.contains("f.parquet: facts row 2: hit_curve covers 2 blocks"),
            "{error}"
        );
    }

    #[test]
    fn parquet_on_standard_input_is_refused_saying_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.parquet");
        let mut writer = ParquetFactsWriter::create_file(&path).unwrap();
        writer.push(&record(1).as_row());
        writer.commit().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let error = FactsReader::from_reader(&bytes[..], "-")
            .unwrap_err()
            .to_string();
        assert!(error.contains("not from standard input"), "{error}");
    }

    #[test]
    fn a_parquet_file_of_other_columns_is_refused_naming_the_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.parquet");
        let batch = RecordBatch::try_from_iter([(
            "x",
            std::sync::Arc::new(arrow_array::Int64Array::from(vec![1])) as arrow_array::ArrayRef,
        )])
        .unwrap();
        let mut writer =
            ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let error = FactsReader::open(&path).unwrap_err().to_string();
        assert!(error.contains("other.parquet"), "{error}");
        assert!(error.contains("no column \"trace_id\""), "{error}");
    }
}
