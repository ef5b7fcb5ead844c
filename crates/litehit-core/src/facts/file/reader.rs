//! Streaming facts reader with upstream's parsing rules (`ParseLiteHitFactRow`, REFERENCE §7,
//! §8.2): line-based, header must match exactly (after a UTF-8 byte-order mark, which a
//! spreadsheet's CSV export starts with), empty lines skipped, any malformed row is an error
//! naming the file and the 1-based physical line.

use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::path::{Path, PathBuf};

use super::{FACTS_FIELD_COUNT, FACTS_HEADER, FactsError, FactsRowError, HitCurveError, Result};
use crate::facts::{FactRecord, HitCurveSegment};

/// Read buffer: large enough that `read` syscalls do not show up in a profile.
const READ_BUFFER_BYTES: usize = 1 << 20;

/// Rows, and line bytes, read between two checks that memory is left
/// ([`crate::hitcore::headroom_left`]): what the commands build per row (an instance, curve
/// changes, a window) is at most a few hundred bytes plus a small multiple of the line, so
/// between checks it stays well inside the 8 MiB the check asks for, and no infallible
/// allocation of theirs meets an exhausted memory.
const ROWS_PER_MEMORY_CHECK: u64 = 1024;
const LINE_BYTES_PER_MEMORY_CHECK: u64 = 256 << 10;

/// Longest header excerpt quoted in a header-mismatch error.
const MAX_HEADER_EXCERPT_CHARS: usize = 200;

/// Reads facts rows one at a time, reusing the caller's record and its own buffers (no
/// allocation per row once warm). Lines are parsed in place in the read buffer; only a line
/// that straddles two buffer fills is copied.
pub struct FactsReader<R> {
    reader: BufReader<R>,
    path: PathBuf,
    /// The start of a line whose end is not in the buffer yet.
    partial_line: Vec<u8>,
    line_number: u64,
    parser: RowParser,
    /// Σ `input_token_len` of the rows read (and of earlier files, see
    /// [`FactsReader::continue_input_tokens`]); a row that would wrap it is refused.
    input_tokens_read: u64,
    /// Rows read, and rows and line bytes since memory was last checked.
    rows_read: u64,
    rows_unchecked: u64,
    line_bytes_unchecked: u64,
    /// Set for a Parquet facts file: rows come from here, and `line_number` counts rows.
    #[cfg(feature = "parquet")]
    parquet: Option<super::parquet_rows::ParquetRows>,
}

impl<R> std::fmt::Debug for FactsReader<R> {
    /// The source itself may not be `Debug` (a boxed decompressor): where and how far.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FactsReader")
            .field("path", &self.path)
            .field("line_number", &self.line_number)
            .finish_non_exhaustive()
    }
}

impl FactsReader<Box<dyn Read + Send>> {
    /// Opens `path` and checks its header. Like a trace: `.gz` / `.zst` (by their magic
    /// bytes) are decompressed, and `-` is standard input.
    ///
    /// A file starting with Parquet's magic bytes is read as Parquet facts
    /// (`facts::file::parquet`), under the same row rules; errors then name the row (1-based)
    /// where a CSV's name the line. A directory holding both `litehit_facts.csv` and
    /// `litehit_facts.parquet` (what [`super::facts_input_path`] leaves as it is) is an error
    /// naming both.
    pub fn open(path: &Path) -> Result<Self> {
        let is_stdin = path.as_os_str() == "-";
        if !is_stdin && let Some((csv, parquet)) = super::both_facts_files(path) {
            return Err(FactsError::BothFormats { csv, parquet });
        }
        #[cfg(feature = "parquet")]
        if !is_stdin && super::parquet::starts_as_parquet(path) {
            let file = std::fs::File::open(path).map_err(|source| FactsError::Open {
                path: path.to_path_buf(),
                source,
            })?;
            let rows = super::parquet_rows::ParquetRows::open(file, path)?;
            let mut this = Self::unread(Box::new(std::io::empty()), path);
            this.parquet = Some(rows);
            return Ok(this);
        }
        let reader = crate::formats::open_trace(path).map_err(|source| FactsError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_reader(reader, path)
    }
}

impl<R: Read> FactsReader<R> {
    /// Reads facts from `reader`; `display_name` names it in errors. Checks the header.
    pub fn from_reader(reader: R, display_name: impl Into<PathBuf>) -> Result<Self> {
        let mut this = Self::unread(reader, display_name);
        let header = this.with_next_line(|_, line| {
            // A spreadsheet's CSV export starts with a UTF-8 byte-order mark.
            let line = crate::formats::strip_bom(line);
            (line != FACTS_HEADER.as_bytes()).then(|| {
                String::from_utf8_lossy(line)
                    .chars()
                    .take(MAX_HEADER_EXCERPT_CHARS)
                    .collect::<String>()
            })
        })?;
        match header {
            None => Err(FactsError::Empty { path: this.path }),
            Some(Some(found)) => Err(FactsError::HeaderMismatch {
                path: this.path,
                found,
            }),
            Some(None) => Ok(this),
        }
    }

    /// A reader of `reader` whose header is not read yet.
    fn unread(reader: R, display_name: impl Into<PathBuf>) -> Self {
        Self {
            reader: BufReader::with_capacity(READ_BUFFER_BYTES, reader),
            path: display_name.into(),
            partial_line: Vec::with_capacity(256),
            line_number: 0,
            parser: RowParser::default(),
            input_tokens_read: 0,
            rows_read: 0,
            rows_unchecked: 0,
            line_bytes_unchecked: 0,
            #[cfg(feature = "parquet")]
            parquet: None,
        }
    }

    /// Reads the next row into `record`; `Ok(false)` at the end of the file.
    pub fn next_record(&mut self, record: &mut FactRecord) -> Result<bool> {
        self.check_memory()?;
        #[cfg(feature = "parquet")]
        if let Some(rows) = &mut self.parquet {
            let Some(parsed) = rows.next(record, &self.path)? else {
                return Ok(false);
            };
            self.line_number += 1;
            // The row rules, `curve_fits_input` too, were applied where the row was decoded.
            return self.accept(parsed, record, 0);
        }
        loop {
            let mut line_bytes = 0;
            let parsed = self.with_next_line(|parser, line| {
                line_bytes = line.len() as u64;
                (!line.is_empty()).then(|| {
                    parser
                        .parse(line, record)
                        .and_then(|()| curve_fits_input(record))
                })
            })?;
            match parsed {
                None => return Ok(false),
                Some(None) => {} // an empty line is skipped
                Some(Some(parsed)) => return self.accept(parsed, record, line_bytes),
            }
        }
    }

    /// Counts a parsed row (its input tokens must not wrap the running total), or names the
    /// line (the row, in a Parquet file) that broke a rule.
    fn accept(
        &mut self,
        parsed: std::result::Result<(), FactsRowError>,
        record: &FactRecord,
        line_bytes: u64,
    ) -> Result<bool> {
        let checked = parsed.and_then(|()| {
            self.input_tokens_read
                .checked_add(record.input_token_len)
                .ok_or(FactsRowError::InputTokensOverflow {
                    input_token_len: record.input_token_len,
                    total_before: self.input_tokens_read,
                })
        });
        match checked {
            Ok(total) => {
                self.input_tokens_read = total;
                self.rows_read += 1;
                self.rows_unchecked += 1;
                self.line_bytes_unchecked += line_bytes;
                Ok(true)
            }
            Err(reason) => Err(self.row_error(reason)),
        }
    }

    /// The error for a row breaking a rule: by line in a CSV, by row in a Parquet file.
    fn row_error(&self, reason: FactsRowError) -> FactsError {
        #[cfg(feature = "parquet")]
        if self.parquet.is_some() {
            return FactsError::ParquetRow {
                path: self.path.clone(),
                row: self.line_number,
                reason,
            };
        }
        FactsError::Row {
            path: self.path.clone(),
            line: self.line_number,
            reason,
        }
    }

    /// Every [`ROWS_PER_MEMORY_CHECK`] rows or [`LINE_BYTES_PER_MEMORY_CHECK`] bytes: fails
    /// when less than [`crate::hitcore::GROWTH_HEADROOM_BYTES`] could still be allocated, so
    /// that what the caller built from the rows runs out here, with a message, rather than
    /// in an allocation that aborts.
    fn check_memory(&mut self) -> Result<()> {
        if self.rows_unchecked < ROWS_PER_MEMORY_CHECK
            && self.line_bytes_unchecked < LINE_BYTES_PER_MEMORY_CHECK
        {
            return Ok(());
        }
        self.rows_unchecked = 0;
        self.line_bytes_unchecked = 0;
        if crate::hitcore::headroom_left() {
            return Ok(());
        }
        Err(FactsError::OutOfMemory {
            path: self.path.clone(),
            line: self.line_number + 1,
            rows: self.rows_read,
        })
    }

    /// The error for a caller whose own table could not grow for the row just read.
    #[must_use]
    pub fn out_of_memory(&self) -> FactsError {
        FactsError::OutOfMemory {
            path: self.path.clone(),
            line: self.line_number,
            rows: self.rows_read,
        }
    }

    /// Σ `input_token_len` of the rows read so far (with the files before, when given).
    #[must_use]
    pub fn input_tokens_read(&self) -> u64 {
        self.input_tokens_read
    }

    /// Counts `input_tokens_before` (the rows of the files read before this one) in the
    /// running total, so that the rows of all the files together are refused as soon as
    /// their input tokens would pass 2^64 − 1: every sum the commands make over them (per
    /// instance, overall, per window and tier, the pool's, `mrc`'s) is then exact, and
    /// hit tokens, never more than a row's input tokens, cannot wrap either.
    pub fn continue_input_tokens(&mut self, input_tokens_before: u64) {
        self.input_tokens_read = input_tokens_before;
    }

    /// The name used in errors.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The 1-based physical line last read (the header is line 1).
    #[must_use]
    pub fn line_number(&self) -> u64 {
        self.line_number
    }

    /// Room for `additional` more bytes of a line that straddles buffer fills: a line
    /// without end (a broken or hostile file) is an error once memory runs out, not an abort.
    fn reserve_partial_line(&mut self, additional: usize, line: u64) -> Result<()> {
        if self.partial_line.try_reserve(additional).is_ok() {
            return Ok(());
        }
        Err(FactsError::Read {
            path: self.path.clone(),
            source: std::io::Error::new(
                ErrorKind::OutOfMemory,
                format!(
                    "line {line}: out of memory after {} bytes without a line end",
                    self.partial_line.len()
                ),
            ),
        })
    }

    /// Calls `handle` with the next physical line without its line end (`\n`, or the `\r\n`
    /// of a spreadsheet's CSV export); `None` at the end of the input.
    fn with_next_line<T>(
        &mut self,
        handle: impl FnOnce(&mut RowParser, &[u8]) -> T,
    ) -> Result<Option<T>> {
        loop {
            let available = match self.reader.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(FactsError::Read {
                        path: self.path.clone(),
                        source,
                    });
                }
            };
            if available.is_empty() {
                if self.partial_line.is_empty() {
                    return Ok(None);
                }
                // The last line has no `\n`.
                self.line_number += 1;
                let value = handle(&mut self.parser, without_cr(&self.partial_line));
                self.partial_line.clear();
                return Ok(Some(value));
            }
            let Some(end) = memchr::memchr(b'\n', available) else {
                let length = available.len();
                self.reserve_partial_line(length, self.line_number + 1)?;
                let available = self.reader.buffer();
                self.partial_line.extend_from_slice(available);
                self.reader.consume(length);
                continue;
            };
            self.line_number += 1;
            let value = if self.partial_line.is_empty() {
                handle(&mut self.parser, without_cr(&available[..end]))
            } else {
                self.reserve_partial_line(end, self.line_number)?;
                let available = self.reader.buffer();
                self.partial_line.extend_from_slice(&available[..end]);
                let value = handle(&mut self.parser, without_cr(&self.partial_line));
                self.partial_line.clear();
                value
            };
            self.reader.consume(end + 1);
            return Ok(Some(value));
        }
    }
}

/// `line` without a final `\r`: a CRLF line end counts as a line end (only there; a `\r`
/// anywhere else is the row's own).
fn without_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Beyond upstream's row rules (which `parse_fact_line` keeps exactly): a hit curve cannot
/// cover more blocks than the request's full blocks, or it would project to a hit rate over
/// 100 %. Checked where files are read for answers (`query`, `mrc`).
pub(super) fn curve_fits_input(record: &FactRecord) -> Result<(), FactsRowError> {
    let curve_blocks = record
        .fact
        .hit_curve
        .iter()
        .fold(0_u64, |sum, segment| sum.saturating_add(segment.run_length));
    let full_blocks = record.input_token_len / record.block_size_tokens;
    if curve_blocks > full_blocks {
        return Err(FactsRowError::CurveLongerThanInput {
            curve_blocks,
            full_blocks,
        });
    }
    Ok(())
}

/// Parses one facts line (no line end) into a new record.
pub fn parse_fact_line(line: &str) -> Result<FactRecord, FactsRowError> {
    let mut record = FactRecord::default();
    RowParser::default().parse(line.as_bytes(), &mut record)?;
    Ok(record)
}

/// Field splitter and parser with reusable scratch space.
#[derive(Debug, Default)]
struct RowParser {
    /// The unquoted bytes of every field, back to back.
    unquoted: Vec<u8>,
    /// End offset in `unquoted` of each of the first seven fields.
    field_ends: [usize; FACTS_FIELD_COUNT],
}

impl RowParser {
    fn parse(&mut self, line: &[u8], record: &mut FactRecord) -> Result<(), FactsRowError> {
        self.parse_with(line, record, true)
    }

    /// `allow_plain: false` takes the general path for every line (tests compare the two).
    fn parse_with(
        &mut self,
        line: &[u8],
        record: &mut FactRecord,
        allow_plain: bool,
    ) -> Result<(), FactsRowError> {
        let plain = if allow_plain { split_plain(line) } else { None };
        let fields = if let Some(fields) = plain {
            fields
        } else {
            self.split(line)?;
            self.fields()
        };
        let [
            trace_id,
            instance_id,
            timestamp_ns,
            input_token_len,
            block_size_tokens,
            block_bytes,
            hit_curve,
        ] = fields;
        let timestamp_ns = parse_i64_field("timestamp_ns", timestamp_ns)?;
        let input_token_len = parse_u64_field("input_token_len", input_token_len)?;
        let block_size_tokens = parse_u64_field("block_size_tokens", block_size_tokens)?;
        let block_bytes = parse_u64_field("block_bytes", block_bytes)?;
        // A segment takes at least 5 bytes (`[0,1]`) and a separator: room for as many as
        // the field could hold, fallibly (reused: no allocation once warm).
        let segments = hit_curve.len() / 6 + 1;
        let curve = &mut record.fact.hit_curve;
        if curve.capacity() < segments && curve.try_reserve(segments - curve.len()).is_err() {
            return Err(FactsRowError::OutOfMemory {
                line_bytes: line.len(),
            });
        }
        parse_hit_curve(hit_curve, curve)?;
        if block_bytes == 0 || block_size_tokens == 0 {
            return Err(FactsRowError::NonPositiveBlock);
        }
        if plain.is_none() || !set_plain_ids(line, trace_id.len(), instance_id.len(), record) {
            set_string("trace_id", &mut record.trace_id, trace_id)?;
            if record.instance_id.as_bytes() != instance_id {
                set_string("instance_id", &mut record.instance_id, instance_id)?;
            }
        }
        record.timestamp_ns = timestamp_ns;
        record.input_token_len = input_token_len;
        record.block_size_tokens = block_size_tokens;
        record.block_bytes = block_bytes;
        Ok(())
    }

    fn fields(&self) -> [&[u8]; FACTS_FIELD_COUNT] {
        let mut start = 0;
        self.field_ends.map(|end| {
            let field = &self.unquoted[start..end];
            start = end;
            field
        })
    }

    /// Splits honouring quotes: a `"` outside quotes (anywhere in a field) starts quoted mode,
    /// `""` inside quotes is one literal quote, the next lone `"` ends quoted mode.
    fn split(&mut self, line: &[u8]) -> Result<(), FactsRowError> {
        self.unquoted.clear();
        // The unquoted fields are never longer than the line: room once, fallibly.
        if self.unquoted.try_reserve(line.len()).is_err() {
            return Err(FactsRowError::OutOfMemory {
                line_bytes: line.len(),
            });
        }
        let mut field_count = 0_usize;
        let mut rest = line;
        loop {
            // Outside quotes: copy up to the next `,` or `"`.
            let Some(at) = memchr::memchr2(b',', b'"', rest) else {
                self.unquoted.extend_from_slice(rest);
                break;
            };
            self.unquoted.extend_from_slice(&rest[..at]);
            if rest[at] == b',' {
                self.end_field(field_count);
                field_count += 1;
                rest = &rest[at + 1..];
                continue;
            }
            // Inside quotes: copy up to the closing quote, unescaping `""`.
            rest = &rest[at + 1..];
            loop {
                let Some(quote) = memchr::memchr(b'"', rest) else {
                    return Err(FactsRowError::UnterminatedQuote);
                };
                self.unquoted.extend_from_slice(&rest[..quote]);
                if rest.get(quote + 1) == Some(&b'"') {
                    self.unquoted.push(b'"');
                    rest = &rest[quote + 2..];
                } else {
                    rest = &rest[quote + 1..];
                    break;
                }
            }
        }
        self.end_field(field_count);
        field_count += 1;
        if field_count == FACTS_FIELD_COUNT {
            Ok(())
        } else {
            Err(FactsRowError::FieldCount { found: field_count })
        }
    }

    fn end_field(&mut self, index: usize) {
        if let Some(end) = self.field_ends.get_mut(index) {
            *end = self.unquoted.len();
        }
    }
}

/// The common case without copying: six unquoted fields, then the curve either unquoted or
/// wrapped in one pair of quotes with none inside. `None` sends the line to the general
/// splitter, which gives the same fields for every line this accepts.
fn split_plain(line: &[u8]) -> Option<[&[u8]; FACTS_FIELD_COUNT]> {
    let mut fields = [&line[..0]; FACTS_FIELD_COUNT];
    let mut rest = line;
    for field in &mut fields[..FACTS_FIELD_COUNT - 1] {
        // Fields are short: a plain scan beats a `memchr2` call here.
        let at = rest.iter().position(|&b| b == b',' || b == b'"')?;
        if rest[at] == b'"' {
            return None;
        }
        *field = &rest[..at];
        rest = &rest[at + 1..];
    }
    fields[FACTS_FIELD_COUNT - 1] = match rest {
        [b'"', inner @ .., b'"'] if memchr::memchr(b'"', inner).is_none() => inner,
        _ if memchr::memchr2(b',', b'"', rest).is_none() => rest,
        _ => return None,
    };
    Some(fields)
}

/// Sets both ids of a line [`split_plain`] accepted with one UTF-8 check instead of two:
/// there they are the line's first `trace_id_len + 1 + instance_id_len` bytes
/// (`trace_id,instance_id`), and the `,` between them is a char boundary. `false` (not
/// UTF-8) leaves the record to [`set_string`], which names the field.
fn set_plain_ids(
    line: &[u8],
    trace_id_len: usize,
    instance_id_len: usize,
    record: &mut FactRecord,
) -> bool {
    let Ok(ids) = std::str::from_utf8(&line[..trace_id_len + 1 + instance_id_len]) else {
        return false;
    };
    let (trace_id, instance_id) = (&ids[..trace_id_len], &ids[trace_id_len + 1..]);
    record.trace_id.clear();
    record.trace_id.push_str(trace_id);
    if record.instance_id != instance_id {
        record.instance_id.clear();
        record.instance_id.push_str(instance_id);
    }
    true
}

fn set_string(field: &'static str, target: &mut String, bytes: &[u8]) -> Result<(), FactsRowError> {
    let text = std::str::from_utf8(bytes).map_err(|_| FactsRowError::NotUtf8 { field })?;
    target.clear();
    target.push_str(text);
    Ok(())
}

/// C `isspace` in the "C" locale.
fn is_c_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// Splits `strtoll`/`strtoull` input into (negative, digits) after leading white space and an
/// optional sign; `None` unless the rest of the field is one non-empty digit run.
fn c_integer_parts(field: &[u8]) -> Option<(bool, &[u8])> {
    let start = field.iter().position(|&b| !is_c_space(b))?;
    let mut rest = &field[start..];
    let negative = rest.first() == Some(&b'-');
    if matches!(rest.first(), Some(b'-' | b'+')) {
        rest = &rest[1..];
    }
    (!rest.is_empty() && rest.iter().all(u8::is_ascii_digit)).then_some((negative, rest))
}

/// Accumulates a digit run; `None` on overflow.
fn digits_to_u64(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0_u64, |value, &digit| {
        value.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
    })
}

/// Fast path: 1 to 19 plain digits (which cannot overflow a `u64`), else `None`.
fn plain_digits(field: &[u8]) -> Option<u64> {
    if field.is_empty() || field.len() > 19 {
        return None;
    }
    let mut value = 0_u64;
    for &byte in field {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value * 10 + u64::from(digit);
    }
    Some(value)
}

/// `strtoll(field, &end, 10)` that must consume the whole field (out of range is an error).
fn parse_c_i64(field: &[u8]) -> Option<i64> {
    if let Some(value) = plain_digits(field)
        && let Ok(value) = i64::try_from(value)
    {
        return Some(value);
    }
    let (negative, digits) = c_integer_parts(field)?;
    let magnitude = digits_to_u64(digits)?;
    if negative {
        0_i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// `strtoull(field, &end, 10)` that must consume the whole field. As in C, a leading `-`
/// negates modulo 2^64 (`-1` is `u64::MAX`); out of range is an error.
fn parse_c_u64(field: &[u8]) -> Option<u64> {
    if let Some(value) = plain_digits(field) {
        return Some(value);
    }
    let (negative, digits) = c_integer_parts(field)?;
    let magnitude = digits_to_u64(digits)?;
    Some(if negative {
        magnitude.wrapping_neg()
    } else {
        magnitude
    })
}

fn parse_i64_field(field: &'static str, bytes: &[u8]) -> Result<i64, FactsRowError> {
    if bytes.is_empty() {
        return Err(FactsRowError::EmptyField { field });
    }
    parse_c_i64(bytes).ok_or_else(|| FactsRowError::NotInteger {
        field,
        value: String::from_utf8_lossy(bytes).into_owned(),
    })
}

fn parse_u64_field(field: &'static str, bytes: &[u8]) -> Result<u64, FactsRowError> {
    if bytes.is_empty() {
        return Err(FactsRowError::EmptyField { field });
    }
    parse_c_u64(bytes).ok_or_else(|| FactsRowError::NotUnsignedInteger {
        field,
        value: String::from_utf8_lossy(bytes).into_owned(),
    })
}

/// The writer's exact form (`[]` or `[[s,r],[s,r]]`: no white space, at most 19 digits per
/// number) without the general tokenizer; `false` (curve unspecified) sends the field to the
/// general parser, which accepts everything this does, with the same result.
fn parse_compact_hit_curve(bytes: &[u8], hit_curve: &mut Vec<HitCurveSegment>) -> bool {
    /// Reads digits up to `terminator`; returns the value and the rest after it.
    fn number_until(bytes: &[u8], terminator: u8) -> Option<(u64, &[u8])> {
        let end = bytes.iter().take(20).position(|&b| b == terminator)?;
        Some((plain_digits(&bytes[..end])?, &bytes[end + 1..]))
    }
    hit_curve.clear();
    let Some(mut rest) = bytes.strip_prefix(b"[") else {
        return false;
    };
    if rest == b"]" {
        return true;
    }
    loop {
        let Some(segment) = rest.strip_prefix(b"[") else {
            return false;
        };
        let Some((start_required_blocks, segment)) = number_until(segment, b',') else {
            return false;
        };
        let Some((run_length, after)) = number_until(segment, b']') else {
            return false;
        };
        hit_curve.push(HitCurveSegment {
            start_required_blocks,
            run_length,
        });
        match after {
            [b']'] => return true,
            [b',', tail @ ..] => rest = tail,
            _ => return false,
        }
    }
}

/// A cursor over a `hit_curve` field; white space is allowed between any two tokens.
struct CurveCursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl CurveCursor<'_> {
    fn peek(&mut self) -> Option<u8> {
        while self.bytes.get(self.at).is_some_and(|&b| is_c_space(b)) {
            self.at += 1;
        }
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn number(&mut self) -> Option<u64> {
        self.peek();
        let start = self.at;
        let digits = self.bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        self.at += digits;
        if digits == 0 {
            None
        } else {
            digits_to_u64(&self.bytes[start..self.at])
        }
    }
}

/// Parses `[[start,run],...]` into `hit_curve` (cleared first).
fn parse_hit_curve(
    bytes: &[u8],
    hit_curve: &mut Vec<HitCurveSegment>,
) -> Result<(), HitCurveError> {
    if parse_compact_hit_curve(bytes, hit_curve) {
        return Ok(());
    }
    parse_hit_curve_tokens(bytes, hit_curve)
}

/// The general `hit_curve` parser: upstream's grammar and messages, white space anywhere.
fn parse_hit_curve_tokens(
    bytes: &[u8],
    hit_curve: &mut Vec<HitCurveSegment>,
) -> Result<(), HitCurveError> {
    hit_curve.clear();
    let mut cursor = CurveCursor { bytes, at: 0 };
    if !cursor.eat(b'[') {
        return Err(HitCurveError::MissingOpen);
    }
    if !cursor.eat(b']') {
        loop {
            if !cursor.eat(b'[') {
                return Err(HitCurveError::SegmentMissingOpen);
            }
            let start_required_blocks = cursor.number().ok_or(HitCurveError::SegmentStart)?;
            if !cursor.eat(b',') {
                return Err(HitCurveError::SegmentMissingComma);
            }
            let run_length = cursor.number().ok_or(HitCurveError::SegmentLength)?;
            if !cursor.eat(b']') {
                return Err(HitCurveError::SegmentMissingClose);
            }
            hit_curve.push(HitCurveSegment {
                start_required_blocks,
                run_length,
            });
            if cursor.eat(b',') {
                continue;
            }
            if cursor.eat(b']') {
                break;
            }
            return Err(HitCurveError::MissingClose);
        }
    }
    if cursor.peek().is_some() {
        return Err(HitCurveError::TrailingCharacters);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(line: &str) -> String {
        parse_fact_line(line).unwrap_err().to_string()
    }

    #[test]
    fn upstream_asserted_rejects() {
        assert_eq!(reason("a,b,c"), "expected 7 fields, got 3");
        assert_eq!(
            reason("t,i,1,2,3,4,\"[[1]]\""),
            "hit_curve segment expects ','"
        );
        assert_eq!(
            reason("t,i,x,2,3,4,\"[]\""),
            "timestamp_ns is not a valid integer: x"
        );
    }

    #[test]
    fn field_errors_in_upstream_order() {
        let cases = [
            ("t,i,1,2,3,4,\"[]", "unterminated quoted field"),
            ("\"t,i,1,2,3,4,[]", "unterminated quoted field"),
            ("t,i,1,2,3,4,[],x", "expected 7 fields, got 8"),
            ("t,i,,2,3,4,[]", "timestamp_ns is empty"),
            ("t,i,1,,3,4,[]", "input_token_len is empty"),
            ("t,i,1,2,,4,[]", "block_size_tokens is empty"),
            ("t,i,1,2,3,,[]", "block_bytes is empty"),
            ("t,i,1,2,3,4,", "hit_curve must start with '['"),
            ("t,i,1 ,2,3,4,[]", "timestamp_ns is not a valid integer: 1 "),
            (
                "t,i,9223372036854775808,2,3,4,[]",
                "timestamp_ns is not a valid integer: 9223372036854775808",
            ),
            (
                "t,i,1,2x,3,4,[]",
                "input_token_len is not a valid unsigned integer: 2x",
            ),
            (
                "t,i,1,2,3,18446744073709551616,[]",
                "block_bytes is not a valid unsigned integer: 18446744073709551616",
            ),
            (
                "t,i,1,2,3,-,[]",
                "block_bytes is not a valid unsigned integer: -",
            ),
            (
                "t,i,1,2,0,4,[]",
                "block_bytes/block_size_tokens must be positive",
            ),
            (
                "t,i,1,2,3,0,[]",
                "block_bytes/block_size_tokens must be positive",
            ),
            ("t,i,1,2,0,4,x", "hit_curve must start with '['"),
            (
                "t,i,1,2,3,4,\"[x]\"",
                "hit_curve segment must start with '['",
            ),
            (
                "t,i,1,2,3,4,\"[[x,1]]\"",
                "hit_curve segment start is not a valid integer",
            ),
            (
                "t,i,1,2,3,4,\"[[-1,1]]\"",
                "hit_curve segment start is not a valid integer",
            ),
            (
                "t,i,1,2,3,4,\"[[1,]]\"",
                "hit_curve segment length is not a valid integer",
            ),
            (
                "t,i,1,2,3,4,\"[[1,2,3]]\"",
                "hit_curve segment must end with ']'",
            ),
            ("t,i,1,2,3,4,\"[[1,2]\"", "hit_curve must end with ']'"),
            ("t,i,1,2,3,4,\"[[1,2];\"", "hit_curve must end with ']'"),
            (
                "t,i,1,2,3,4,\"[[1,2]]]\"",
                "hit_curve has trailing characters",
            ),
            ("t,i,1,2,3,4,\"[] x\"", "hit_curve has trailing characters"),
            (
                "t,i,1,2,3,4,\"[[99999999999999999999,1]]\"",
                "hit_curve segment start is not a valid integer",
            ),
        ];
        for (line, expected) in cases {
            assert_eq!(reason(line), expected, "line {line:?}");
        }
    }

    #[test]
    fn c_integer_quirks() {
        let record = parse_fact_line("t,i, -5,-1,+3, 7,\"[]\"").unwrap();
        assert_eq!(record.timestamp_ns, -5);
        assert_eq!(
            record.input_token_len,
            u64::MAX,
            "strtoull negates modulo 2^64"
        );
        assert_eq!(record.block_size_tokens, 3);
        assert_eq!(record.block_bytes, 7);
        assert_eq!(parse_c_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_c_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_c_i64(b"-9223372036854775809"), None);
        assert_eq!(parse_c_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_c_u64(b"-0"), Some(0));
        assert_eq!(parse_c_u64(b" "), None);
        assert_eq!(parse_c_u64(b"+"), None);
        assert_eq!(parse_c_u64(b"--1"), None);
    }

    #[test]
    fn quotes_anywhere_and_doubled_quotes() {
        let record =
            parse_fact_line("a\"b,c\"d,\"x\"\"y\",1,2,3,4,\"[ [ 1 , 2 ] ,\t[4,1] ]\"").unwrap();
        assert_eq!(record.trace_id, "ab,cd");
        assert_eq!(record.instance_id, "x\"y");
        assert_eq!(record.fact.to_pairs(), vec![[1, 2], [4, 1]]);
    }

    #[test]
    fn trailing_carriage_return_is_white_space_in_the_curve() {
        let record = parse_fact_line("t,i,1,2,3,4,\"[[1,2]]\"\r").unwrap();
        assert_eq!(record.fact.to_pairs(), vec![[1, 2]]);
        assert_eq!(
            reason("t,i,1,2,3,4\r,\"[]\""),
            "block_bytes is not a valid unsigned integer: 4\r"
        );
    }

    proptest::proptest! {
        #[test]
        fn plain_split_agrees_with_general_split(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![3 => proptest::strategy::Just(","), 1 => proptest::strategy::Just("\""), 2 => proptest::strategy::Just("a1"), 1 => proptest::strategy::Just("[")],
                0..30,
            )
        ) {
            let line = pieces.concat();
            let mut parser = RowParser::default();
            if let Some(plain) = split_plain(line.as_bytes()) {
                parser.split(line.as_bytes()).unwrap();
                proptest::prop_assert_eq!(plain, parser.fields());
            }
        }
    }

    proptest::proptest! {
        /// The plain path (no copy, one UTF-8 check for both ids) gives the general path's
        /// record or error on any line, including ids that are not UTF-8 and records that
        /// held other ids before.
        #[test]
        fn plain_parse_agrees_with_general_parse(
            ids in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::prop_oneof![
                        1 => proptest::strategy::Just(&b","[..]),
                        1 => proptest::strategy::Just(&b"\""[..]),
                        4 => proptest::strategy::Just(&b"id"[..]),
                        2 => proptest::strategy::Just(&b"7"[..]),
                        1 => proptest::strategy::Just(&b"\xc3\xa9"[..]),
                        1 => proptest::strategy::Just(&b"\xff"[..]),
                        1 => proptest::strategy::Just(&b"\xc3"[..]),
                    ],
                    0..3,
                ),
                2,
            ),
            numbers in proptest::collection::vec(
                proptest::prop_oneof![
                    8 => proptest::strategy::Just(&b"7"[..]),
                    1 => proptest::strategy::Just(&b"0"[..]),
                    1 => proptest::strategy::Just(&b"x"[..]),
                ],
                4,
            ),
            curve in proptest::prop_oneof![
                proptest::strategy::Just(&b"[]"[..]),
                proptest::strategy::Just(&b"\"[[1,2]]\""[..]),
                proptest::strategy::Just(&b"[[1,2]]"[..]),
                proptest::strategy::Just(&b"\"[x]\""[..]),
            ],
            previous_instance in proptest::prop_oneof![
                proptest::strategy::Just(""),
                proptest::strategy::Just("id"),
                proptest::strategy::Just("idid"),
            ],
        ) {
            let fields: Vec<Vec<u8>> = ids
                .iter()
                .map(|pieces| pieces.concat())
                .chain(numbers.iter().map(|number| number.to_vec()))
                .chain([curve.to_vec()])
                .collect();
            let line = fields.join(&b","[..]);
            let fresh = || FactRecord {
                trace_id: "old".into(),
                instance_id: previous_instance.into(),
                ..FactRecord::default()
            };
            let (mut plain, mut general) = (fresh(), fresh());
            let plain_result = RowParser::default().parse_with(&line, &mut plain, true);
            let general_result = RowParser::default().parse_with(&line, &mut general, false);
            proptest::prop_assert_eq!(&plain_result, &general_result);
            if plain_result.is_ok() {
                proptest::prop_assert_eq!(plain, general);
            }
        }
    }

    #[test]
    fn compact_curve_parser_agrees_with_the_general_one() {
        let cases = [
            "[]",
            "[[1,2]]",
            "[[1,2],[4,1]]",
            "[[0,0]]",
            "[[007,1]]",
            "[[1,2],]",
            "[[1,2]",
            "[[1]]",
            "[[,1]]",
            "[[1,2]]x",
            "[[1,2]] ",
            " []",
            "[[18446744073709551615,1]]",
            "[[18446744073709551616,1]]",
            "[[1,2][3,4]]",
            "[",
            "]",
            "",
            "[[1,2],[3,4],[5,6]]",
        ];
        for case in cases {
            let (mut compact, mut general) = (Vec::new(), Vec::new());
            let general_result = parse_hit_curve_tokens(case.as_bytes(), &mut general);
            if parse_compact_hit_curve(case.as_bytes(), &mut compact) {
                assert_eq!(general_result, Ok(()), "{case:?}");
                assert_eq!(compact, general, "{case:?}");
            }
        }
        let mut curve = Vec::new();
        assert!(parse_compact_hit_curve(b"[[1,2],[4,1]]", &mut curve));
        assert!(!parse_compact_hit_curve(b"[ [1,2]]", &mut curve));
    }

    /// Hands out its bytes a few at a time, so lines straddle buffer fills.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.1 = self.1 % 3 + 1;
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn lines_straddling_reads_are_reassembled() {
        let text = format!("{FACTS_HEADER}\nt1,i,1,6,3,4,\"[[1,2]]\"\n\n\"t,2\",i,5,6,7,8,\"[]\"");
        let mut reader = FactsReader::from_reader(Trickle(text.as_bytes(), 0), "trickle").unwrap();
        let mut record = FactRecord::default();
        assert!(reader.next_record(&mut record).unwrap());
        assert_eq!(
            (record.trace_id.as_str(), record.fact.to_pairs()),
            ("t1", vec![[1, 2]])
        );
        assert!(reader.next_record(&mut record).unwrap());
        assert_eq!((record.trace_id.as_str(), record.block_bytes), ("t,2", 8));
        assert_eq!(reader.line_number(), 4);
        assert!(!reader.next_record(&mut record).unwrap());
    }

    #[test]
    fn a_curve_longer_than_the_request_is_refused_where_files_are_read() {
        let row = "t,i,1,100,512,4,\"[[5,1]]\"";
        assert!(
            parse_fact_line(row).is_ok(),
            "upstream's row rules accept it"
        );
        let text = format!("{FACTS_HEADER}\n{row}\n");
        let mut reader = FactsReader::from_reader(text.as_bytes(), "f.csv").unwrap();
        let error = reader.next_record(&mut FactRecord::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "f.csv: facts line 2: hit_curve covers 1 blocks, more than the 0 full blocks of \
             input_token_len / block_size_tokens"
        );
    }

    /// Issue #27 (Low): a facts CSV exported by a spreadsheet starts with a UTF-8 byte-order
    /// mark; its header is the header all the same, and its rows are read.
    #[test]
    fn a_byte_order_mark_before_the_header_is_skipped() {
        let text = format!("\u{feff}{FACTS_HEADER}\n1,a,5,32,16,1048576,\"[[0,2]]\"\n");
        let mut reader = FactsReader::from_reader(text.as_bytes(), "facts.csv").unwrap();
        let mut record = FactRecord::default();
        assert!(reader.next_record(&mut record).unwrap());
        assert_eq!(record.instance_id, "a");
        assert_eq!(record.fact.hit_curve.len(), 1);
        assert!(!reader.next_record(&mut record).unwrap());
        // Only before the header: a mark anywhere else is the header mismatch it always was.
        let text = format!("{FACTS_HEADER}\u{feff}\n");
        assert!(matches!(
            FactsReader::from_reader(text.as_bytes(), "facts.csv"),
            Err(FactsError::HeaderMismatch { .. })
        ));
    }

    #[test]
    fn reused_record_is_fully_overwritten() {
        let mut parser = RowParser::default();
        let mut record = FactRecord::default();
        parser
            .parse(b"long-trace-id,inst,1,2,3,4,\"[[1,2],[5,6]]\"", &mut record)
            .unwrap();
        parser.parse(b"t,i,7,8,9,10,\"[]\"", &mut record).unwrap();
        assert_eq!(record.trace_id, "t");
        assert_eq!(record.instance_id, "i");
        assert_eq!(
            (
                record.timestamp_ns,
                record.input_token_len,
                record.block_size_tokens,
                record.block_bytes
            ),
            (7, 8, 9, 10)
        );
        assert!(record.fact.hit_curve.is_empty());
    }
}
