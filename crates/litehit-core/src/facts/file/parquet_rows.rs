//! Reading a Parquet facts file row by row for [`FactsReader`](super::FactsReader), under the
//! CSV reader's row rules ([`FactsBatchRows`]).
//!
//! Parquet's decompression, level decoding and the rows' conversion into [`FactRecord`]s run
//! on a thread of their own, in chunks, while the caller (a query, an `mrc`) works on the
//! rows of the chunk before: on a second core they cost the caller no wall time, which is
//! what a columnar file can offer over a CSV read line after line. The lead is bounded (a
//! decoded batch's chunks wait at most), the chunks' buffers go back to the thread to be
//! reused, and a thread that stopped without saying the file ended (a panic on a corrupt
//! file) is an error, never a short read. With one thread allowed
//! ([`crate::threads::available`]), under an address-space limit, or with no thread
//! startable, the same chunks are decoded inline. A batch is decoded only while memory is
//! left, as the CSV reader reads a line.

use std::fs::File;
use std::io::Seek as _;
use std::mem;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};

use arrow_array::{RecordBatch, RecordBatchReader as _};
use parquet::arrow::arrow_reader::{
    ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
};

use super::parquet::parquet_error;
use super::reader::curve_fits_input;
use super::{FactsError, FactsRowError, Result};
use crate::facts::FactRecord;
use crate::facts::arrow::FactsBatchRows;

/// Rows per chunk handed from the decoding thread. Small enough that the chunks in flight
/// stay in the caches between the two threads (16 Ki-row chunks cost a fifth more CPU on the
/// 1 M-row benchmark of docs/PERFORMANCE.md), large enough that a hand-over per chunk costs
/// nothing.
const CHUNK_ROWS: usize = 2048;

/// Rows per batch decoded from the file: a batch is decoded in one go, so a small one keeps
/// the chunks coming evenly (a large one would leave the caller waiting while it decodes).
const DECODED_BATCH_ROWS: usize = 4 * CHUNK_ROWS;

/// Chunks decoded ahead of the caller, at most (besides the one it reads and the one being
/// decoded): a decoded batch's worth, so the caller reads on while the next batch decodes.
const CHUNKS_AHEAD: usize = DECODED_BATCH_ROWS / CHUNK_ROWS;

/// Rows converted into records, each with its row rules' verdict (the CSV reader's, and the
/// curve's length against the input's).
#[derive(Default)]
struct Chunk {
    /// Kept at its largest length, so the records' buffers are reused; `rows` are filled.
    records: Vec<FactRecord>,
    verdicts: Vec<std::result::Result<(), FactsRowError>>,
    rows: usize,
}

/// What the decoder hands over: a chunk, the end of the file, or why the file cannot be read
/// on (the message of [`parquet_error`]).
enum Decoded {
    Chunk(Chunk),
    End,
    Failed(String),
    /// Decoding the next batch would leave less than the headroom the CSV reader keeps
    /// ([`crate::hitcore::headroom_left`]).
    OutOfMemory,
}

/// Turns the file's record batches into chunks of records.
struct Decoder {
    batches: ParquetRecordBatchReader,
    batch: Option<FactsBatchRows>,
    next_in_batch: usize,
}

impl Decoder {
    /// Fills `chunk` with the next rows (reusing its records).
    fn decode(&mut self, mut chunk: Chunk) -> Decoded {
        chunk.rows = 0;
        while chunk.rows < CHUNK_ROWS {
            let Some(batch) = self.batch.as_ref().filter(|b| self.next_in_batch < b.len()) else {
                // Parquet's decoder allocates without a way to fail: it starts a batch only
                // while memory is left, so a limit ends the read with a message.
                if !crate::hitcore::headroom_left() {
                    return Decoded::OutOfMemory;
                }
                match self.batches.next() {
                    None => break,
                    Some(Err(error)) => return Decoded::Failed(error.to_string()),
                    Some(Ok(batch)) => match FactsBatchRows::new(&batch) {
                        Ok(rows) => self.batch = Some(rows),
                        Err(error) => return Decoded::Failed(error.to_string()),
                    },
                }
                self.next_in_batch = 0;
                continue;
            };
            if chunk.rows == chunk.records.len() {
                chunk.records.push(FactRecord::default());
                chunk.verdicts.push(Ok(()));
            }
            let record = &mut chunk.records[chunk.rows];
            chunk.verdicts[chunk.rows] = batch
                .read(self.next_in_batch, record)
                .and_then(|()| curve_fits_input(record));
            self.next_in_batch += 1;
            chunk.rows += 1;
        }
        if chunk.rows == 0 {
            Decoded::End
        } else {
            Decoded::Chunk(chunk)
        }
    }

    /// Decodes chunk after chunk into `chunks`, reusing those that come back on `spent`,
    /// until the end of the file, an error, or the reader is gone.
    fn run(mut self, chunks: &SyncSender<Decoded>, spent: &Receiver<Chunk>) {
        loop {
            let decoded = self.decode(spent.try_recv().unwrap_or_default());
            let last = !matches!(decoded, Decoded::Chunk(_));
            // A send error: the reader stopped early (an error of its own); so do we.
            if chunks.send(decoded).is_err() || last {
                return;
            }
        }
    }
}

/// Where the chunks come from.
enum Source {
    /// Boxed: it moves to the thread, and holds the Parquet reader's state (a KiB).
    Inline(Box<Decoder>),
    Ahead {
        chunks: Receiver<Decoded>,
        spent: Sender<Chunk>,
    },
}

impl Source {
    /// Moves the decoder onto a thread of its own, if one starts (a process or memory limit
    /// may refuse it: then it stays inline).
    fn decode_ahead(&mut self) {
        // The decoder is handed over once the thread runs.
        let (hand_over, handed) = mpsc::sync_channel::<Box<Decoder>>(1);
        let (chunk_sender, chunks) = mpsc::sync_channel(CHUNKS_AHEAD);
        let (spent, spent_chunks) = mpsc::channel();
        let started = std::thread::Builder::new()
            .name("litehit-parquet".into())
            .spawn(move || {
                if let Ok(decoder) = handed.recv() {
                    decoder.run(&chunk_sender, &spent_chunks);
                }
            });
        if started.is_err() {
            return;
        }
        if let Self::Inline(decoder) = mem::replace(self, Self::Ahead { chunks, spent })
            && let Err(mpsc::SendError(decoder)) = hand_over.send(decoder)
        {
            *self = Self::Inline(decoder);
        }
    }

    /// The chunk after `spent` (whose buffers are reused).
    fn next(&mut self, spent: Chunk) -> Decoded {
        match self {
            Self::Inline(decoder) => decoder.decode(spent),
            Self::Ahead {
                chunks,
                spent: spent_sender,
            } => {
                // The thread may have ended already; then the chunk is simply dropped.
                let _ = spent_sender.send(spent);
                chunks.recv().unwrap_or_else(|_| {
                    Decoded::Failed(
                        "the Parquet decoding thread stopped before the end of the file".into(),
                    )
                })
            }
        }
    }
}

/// Whether the process runs under an address-space limit (`ulimit -v`, `RLIMIT_AS`). A new
/// thread's first allocation makes glibc reserve an arena of 64 MiB of address space (twice
/// that while aligning it); under a limit that can fail, and Rust aborts on a failed
/// allocation. So under a limit the rows are decoded inline, where every allocation the
/// reader makes is checked (docs/OPERATIONS.md, "Memory limits"). A container's memory limit
/// counts pages used, not address space, and leaves the thread be.
fn address_space_limited() -> bool {
    rustix::process::getrlimit(rustix::process::Resource::As)
        .current
        .is_some()
}

/// Streams the rows of a Parquet facts file.
pub(super) struct ParquetRows {
    source: Source,
    /// Decode on a thread of its own, from the first row asked for: a file opened beside
    /// others (`query` opens every shard first, to check it) takes a thread and memory only
    /// once it is read.
    decode_ahead: bool,
    chunk: Chunk,
    next_in_chunk: usize,
    /// The end of the file (or a failure) was handed over: nothing more comes.
    done: bool,
    /// Rows handed to the caller so far.
    rows_read: u64,
}

impl ParquetRows {
    /// Opens `file` (named `path` in errors) and checks its columns; decodes ahead on a
    /// thread when a second one is allowed and the address space is not limited.
    pub(super) fn open(file: File, path: &Path) -> Result<Self> {
        let ahead = crate::threads::available(None).is_ok_and(|threads| threads.get() > 1)
            && !address_space_limited();
        Self::open_decoding(file, path, ahead)
    }

    /// [`Self::open`], decoding on a thread of its own (`ahead`) or inline.
    fn open_decoding(mut file: File, path: &Path, ahead: bool) -> Result<Self> {
        file.rewind().map_err(|source| FactsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        // The types follow the Parquet schema alone (an embedded Arrow schema may ask for
        // dictionaries or views), so every writer's file reads the same way.
        let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
        let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(file, options)
            .map_err(|error| parquet_error(path, error))?;
        let batches = builder
            .with_batch_size(DECODED_BATCH_ROWS)
            .build()
            .map_err(|error| parquet_error(path, error))?;
        // An empty batch of the file's schema checks the columns before any row is read.
        let empty = RecordBatch::new_empty(batches.schema());
        FactsBatchRows::new(&empty).map_err(|error| parquet_error(path, error))?;
        Ok(Self {
            source: Source::Inline(Box::new(Decoder {
                batches,
                batch: None,
                next_in_batch: 0,
            })),
            decode_ahead: ahead,
            chunk: Chunk::default(),
            next_in_chunk: 0,
            done: false,
            rows_read: 0,
        })
    }

    /// Reads the next row into `record` (whose buffers go back to the decoder); `Ok(None)`
    /// at the end of the file, `Ok(Some(Err))` for a row breaking a row rule (the caller
    /// names the row).
    pub(super) fn next(
        &mut self,
        record: &mut FactRecord,
        path: &Path,
    ) -> Result<Option<std::result::Result<(), FactsRowError>>> {
        loop {
            if self.next_in_chunk < self.chunk.rows {
                let row = self.next_in_chunk;
                self.next_in_chunk += 1;
                self.rows_read += 1;
                mem::swap(record, &mut self.chunk.records[row]);
                let verdict = mem::replace(&mut self.chunk.verdicts[row], Ok(()));
                return Ok(Some(verdict));
            }
            if self.done {
                return Ok(None);
            }
            if mem::take(&mut self.decode_ahead) {
                self.source.decode_ahead();
            }
            match self.source.next(mem::take(&mut self.chunk)) {
                Decoded::Chunk(chunk) => {
                    self.chunk = chunk;
                    self.next_in_chunk = 0;
                }
                Decoded::End => {
                    self.done = true;
                    return Ok(None);
                }
                Decoded::Failed(message) => {
                    self.done = true;
                    return Err(parquet_error(path, message));
                }
                Decoded::OutOfMemory => {
                    self.done = true;
                    return Err(FactsError::OutOfMemory {
                        path: path.to_path_buf(),
                        line: self.rows_read + 1,
                        rows: self.rows_read,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::RequestFact;
    use crate::facts::file::ParquetFactsWriter;

    /// Rows past several chunks and decoded batches (and their ends not aligned).
    const ROWS: u64 = (CHUNK_ROWS * (CHUNKS_AHEAD + 3) + DECODED_BATCH_ROWS + 7) as u64;

    fn record(index: u64) -> FactRecord {
        FactRecord {
            trace_id: format!("t{index}"),
            instance_id: format!("engine-{}", index % 3),
            timestamp_ns: i64::try_from(index).unwrap(),
            input_token_len: 64,
            block_size_tokens: 4,
            block_bytes: 1024,
            fact: RequestFact::from_pairs(&[[1 + index % 5, 1 + index % 3]]),
        }
    }

    /// Writes `rows` as a Parquet facts file in `dir`.
    fn write(dir: &Path, rows: impl Iterator<Item = FactRecord>) -> std::path::PathBuf {
        let path = dir.join("f.parquet");
        let mut writer = ParquetFactsWriter::create_file(&path).unwrap();
        for row in rows {
            writer.push(&row.as_row());
            writer.flush_full().unwrap();
        }
        writer.commit().unwrap()
    }

    /// Every row's verdict, in order, up to the end or a file-level error.
    fn read_all(
        path: &Path,
        ahead: bool,
    ) -> (Vec<std::result::Result<FactRecord, String>>, Option<String>) {
        let mut rows = ParquetRows::open_decoding(File::open(path).unwrap(), path, ahead).unwrap();
        let mut record = FactRecord::default();
        let mut read = Vec::new();
        loop {
            match rows.next(&mut record, path) {
                Ok(None) => return (read, None),
                Ok(Some(verdict)) => read.push(
                    verdict
                        .map(|()| record.clone())
                        .map_err(|reason| reason.to_string()),
                ),
                Err(error) => return (read, Some(error.to_string())),
            }
        }
    }

    #[test]
    fn rows_decoded_ahead_are_the_rows_decoded_inline_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), (0..ROWS).map(record));
        let expected: Vec<_> = (0..ROWS).map(|index| Ok(record(index))).collect();
        for ahead in [true, false] {
            let (read, failed) = read_all(&path, ahead);
            assert_eq!(failed, None, "ahead: {ahead}");
            assert!(read == expected, "ahead: {ahead}: the rows differ");
        }
    }

    #[test]
    fn facts_compressed_as_polars_and_others_write_them_are_read() {
        use parquet::arrow::ArrowWriter;
        use parquet::basic::{Compression, ZstdLevel};
        use parquet::file::properties::WriterProperties;

        let dir = tempfile::tempdir().unwrap();
        let rows: Vec<FactRecord> = (0..100).map(record).collect();
        let mut builder = crate::facts::arrow::FactsBatchBuilder::new();
        for row in &rows {
            builder.push(&row.as_row());
        }
        let batch = builder.finish();
        // Zstandard is polars' default; LZ4 (raw, and Hadoop's framing) others'.
        for compression in [
            Compression::ZSTD(ZstdLevel::default()),
            Compression::LZ4_RAW,
            Compression::LZ4,
            Compression::UNCOMPRESSED,
        ] {
            let path = dir.path().join("f.parquet");
            let properties = WriterProperties::builder()
                .set_compression(compression)
                .build();
            let mut writer = ArrowWriter::try_new(
                File::create(&path).unwrap(),
                batch.schema(),
                Some(properties),
            )
            .unwrap();
            writer.write(&batch).unwrap();
            writer.close().unwrap();
            let (read, failed) = read_all(&path, true);
            assert_eq!(failed, None, "{compression:?}");
            assert!(
                read.into_iter()
                    .map(Result::unwrap)
                    .eq(rows.iter().cloned()),
                "{compression:?}"
            );
        }
    }

    #[test]
    fn a_file_takes_its_decoding_thread_only_once_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), (0..ROWS).map(record));
        // As `query` opens every shard before reading the first.
        let mut opened: Vec<ParquetRows> = (0..64)
            .map(|_| ParquetRows::open_decoding(File::open(&path).unwrap(), &path, true).unwrap())
            .collect();
        assert!(
            opened
                .iter()
                .all(|rows| matches!(rows.source, Source::Inline(_)))
        );
        let mut record = FactRecord::default();
        assert!(opened[0].next(&mut record, &path).unwrap().is_some());
        assert!(matches!(opened[0].source, Source::Ahead { .. }));
        assert!(
            opened[1..]
                .iter()
                .all(|rows| matches!(rows.source, Source::Inline(_)))
        );
    }

    #[test]
    fn a_bad_row_deep_in_the_file_keeps_its_place_decoded_ahead_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let bad = ROWS - 3;
        let path = write(
            dir.path(),
            (0..ROWS).map(|index| {
                let mut row = record(index);
                if index == bad {
                    row.block_bytes = 0;
                }
                row
            }),
        );
        for ahead in [true, false] {
            let (read, failed) = read_all(&path, ahead);
            assert_eq!(failed, None);
            let verdicts: Vec<bool> = read.iter().map(std::result::Result::is_ok).collect();
            let expected: Vec<bool> = (0..ROWS).map(|index| index != bad).collect();
            assert_eq!(verdicts, expected, "ahead: {ahead}");
        }
    }

    #[test]
    fn a_damaged_file_reads_whole_or_fails_the_same_decoded_ahead_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), (0..ROWS).map(record));
        let intact = std::fs::read(&path).unwrap();
        let mut failures = 0;
        // Damage at eight places between the magic and the footer: a page's bytes may
        // still decode (Parquet has no checksum by default), a header's do not.
        for eighth in 1..8 {
            let mut bytes = intact.clone();
            let at = intact.len() * eighth / 10;
            for byte in &mut bytes[at..at + 16] {
                *byte = !*byte;
            }
            std::fs::write(&path, &bytes).unwrap();
            let Ok(file) = File::open(&path) else {
                continue;
            };
            if ParquetRows::open_decoding(file, &path, false).is_err() {
                continue;
            }
            let (read, failed) = read_all(&path, true);
            assert_eq!(
                (&read, &failed),
                (&read_all(&path, false).0, &read_all(&path, false).1)
            );
            match failed {
                None => assert_eq!(read.len() as u64, ROWS, "a short read at {at}"),
                Some(error) => {
                    assert!(error.contains("f.parquet"), "{error}");
                    failures += 1;
                }
            }
        }
        assert!(
            failures > 0,
            "no damage was noticed: the test damages nothing"
        );
    }
}
