//! The facts file in the layout its path or flag asks for: one writer for `replay`, the
//! Python package and anything else that publishes rows as they come.

use std::path::{Path, PathBuf};

use super::{AtomicFactsWriter, FactsFileFormat, Result, append_fact_row};
use crate::facts::FactRow;

/// CSV rows are written in chunks of about this many bytes.
const CSV_CHUNK_BYTES: usize = 1 << 20;

/// Publishes a facts file, CSV or Parquet, all-or-nothing. [`push`](Self::push) only
/// buffers (a row callback cannot fail); [`flush_full`](Self::flush_full) writes what fills
/// a chunk; [`commit`](Self::commit) writes the rest and publishes.
#[derive(Debug)]
pub enum FactsFileWriter {
    /// `litehit_facts.csv`: rows formatted into `rows`, written in chunks.
    Csv {
        /// The publication.
        file: AtomicFactsWriter,
        /// Formatted rows not written yet.
        rows: Vec<u8>,
    },
    /// `litehit_facts.parquet`.
    #[cfg(feature = "parquet")]
    Parquet(Box<super::ParquetFactsWriter>),
}

impl FactsFileWriter {
    /// Starts publishing `facts_path` in `format` (creating its directory if missing).
    pub fn create_file(facts_path: &Path, format: FactsFileFormat) -> Result<Self> {
        match format {
            FactsFileFormat::Csv => Ok(Self::Csv {
                file: AtomicFactsWriter::create_file(facts_path)?,
                rows: Vec::with_capacity(CSV_CHUNK_BYTES + 4096),
            }),
            #[cfg(feature = "parquet")]
            FactsFileFormat::Parquet => Ok(Self::Parquet(Box::new(
                super::ParquetFactsWriter::create_file(facts_path)?,
            ))),
            #[cfg(not(feature = "parquet"))]
            FactsFileFormat::Parquet => Err(super::FactsError::Create {
                path: facts_path.to_path_buf(),
                source: std::io::Error::other(
                    "this build has no Parquet support (litehit-core's `parquet` feature)",
                ),
            }),
        }
    }

    /// Buffers one row.
    pub fn push(&mut self, row: &FactRow<'_>) {
        match self {
            Self::Csv { rows, .. } => append_fact_row(rows, row),
            #[cfg(feature = "parquet")]
            Self::Parquet(writer) => writer.push(row),
        }
    }

    /// Writes the buffered rows once they fill a chunk (a batch, for Parquet).
    pub fn flush_full(&mut self) -> Result<()> {
        match self {
            Self::Csv { file, rows } => {
                if rows.len() >= CSV_CHUNK_BYTES {
                    file.write_bytes(rows)?;
                    rows.clear();
                }
                Ok(())
            }
            #[cfg(feature = "parquet")]
            Self::Parquet(writer) => writer.flush_full(),
        }
    }

    /// The path the facts file is published at.
    #[must_use]
    pub fn final_path(&self) -> &Path {
        match self {
            Self::Csv { file, .. } => file.final_path(),
            #[cfg(feature = "parquet")]
            Self::Parquet(writer) => writer.final_path(),
        }
    }

    /// What dropping this writer unpublished removes, for a process about to exit.
    pub fn discard_on_exit(&self) -> Box<dyn FnOnce() + Send + 'static> {
        match self {
            Self::Csv { file, .. } => Box::new(file.discard_on_exit()),
            #[cfg(feature = "parquet")]
            Self::Parquet(writer) => Box::new(writer.discard_on_exit()),
        }
    }

    /// Writes the buffered rows, then publishes; the path published.
    pub fn commit(self) -> Result<PathBuf> {
        match self {
            Self::Csv { mut file, rows } => {
                file.write_bytes(&rows)?;
                file.commit()
            }
            #[cfg(feature = "parquet")]
            Self::Parquet(writer) => writer.commit(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::file::FactsReader;
    use crate::facts::{FactRecord, RequestFact};

    #[test]
    fn both_formats_publish_the_same_rows() {
        let dir = tempfile::tempdir().unwrap();
        let rows: Vec<FactRecord> = (0..3)
            .map(|index| FactRecord {
                trace_id: format!("r{index}"),
                instance_id: "i".into(),
                timestamp_ns: index,
                input_token_len: 40,
                block_size_tokens: 4,
                block_bytes: 64,
                fact: RequestFact::from_pairs(&[[2, 3]]),
            })
            .collect();
        let mut read_back = Vec::new();
        let formats: &[FactsFileFormat] = if cfg!(feature = "parquet") {
            &[FactsFileFormat::Csv, FactsFileFormat::Parquet]
        } else {
            &[FactsFileFormat::Csv, FactsFileFormat::Csv]
        };
        for &format in formats {
            let path = dir.path().join(format.file_name());
            let mut writer = FactsFileWriter::create_file(&path, format).unwrap();
            for row in &rows {
                writer.push(&row.as_row());
                writer.flush_full().unwrap();
            }
            assert_eq!(writer.final_path(), path);
            assert_eq!(writer.commit().unwrap(), path);
            let mut reader = FactsReader::open(&path).unwrap();
            let mut record = FactRecord::default();
            let mut back = Vec::new();
            while reader.next_record(&mut record).unwrap() {
                back.push(record.clone());
            }
            read_back.push(back);
        }
        assert_eq!(read_back[0], rows);
        assert_eq!(read_back[1], rows);
    }

    #[cfg(not(feature = "parquet"))]
    #[test]
    fn parquet_without_the_feature_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let error =
            FactsFileWriter::create_file(&dir.path().join("f.parquet"), FactsFileFormat::Parquet)
                .unwrap_err();
        assert!(
            crate::facts::file::FactsError::to_string(&error).contains("f.parquet"),
            "{error}"
        );
        assert!(
            std::error::Error::source(&error)
                .is_some_and(|source| source.to_string().contains("`parquet` feature")),
            "{error:?}"
        );
    }
}
