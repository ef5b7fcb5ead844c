//! Splitting bytes into numbered lines, for the offline reader and the live tailer alike.
//!
//! Owns line boundaries and numbering: a line ends at `\n`, a trailing `\r` is stripped, lines
//! are numbered from 1 and blank lines count. [`LineSplitter`] works on a caller's buffer and
//! only ever takes *complete* lines, reporting how many bytes it consumed so a tailer can keep
//! a partial last line for later. [`TraceLines`] is the offline reader built on it: it reads at
//! least [`MIN_READ_BYTES`] at a time and yields the unterminated last line at end of file.
//! Owns the line-length rule too ([`line_too_long`], `--max-line-bytes`, default
//! [`DEFAULT_MAX_LINE_BYTES`]) and [`LineCapReader`], which enforces it under readers that
//! would hold a line of any length. Nothing here interprets a line's content.

use std::io::{self, Read};

/// The least number of bytes [`TraceLines`] asks the reader for in one `read` call.
pub const MIN_READ_BYTES: usize = 64 * 1024;

/// Default of `--max-line-bytes`, the longest line read (without its newline): far above any
/// real trace row, so that memory stays bounded whatever the input holds (typed as
/// [`crate::grammar::DEFAULT_MAX_LINE_BYTES_TEXT`]).
pub const DEFAULT_MAX_LINE_BYTES: u64 = 16 << 20;

/// The one rule for a line longer than `--max-line-bytes`, in every reader: offline it is an
/// error (naming the file, this line and the flag), live the line is skipped and counted as a
/// bad line with this reason. Readers stop holding such a line once it passes the cap, so
/// memory is bounded by the cap, not by the input.
#[must_use]
pub fn line_too_long(line_number: u64, max_line_bytes: u64) -> super::ParseError {
    super::ParseError {
        line_number,
        trace_id: None,
        field: None,
        message: line_too_long_reason(max_line_bytes),
    }
}

/// What [`line_too_long`] says, without the line number.
#[must_use]
pub fn line_too_long_reason(max_line_bytes: u64) -> String {
    format!(
        "longer than --max-line-bytes ({}); raise it to read longer lines",
        crate::display::bytes(max_line_bytes, crate::display::Precision::Significant(4))
    )
}

/// Whether a line of `len` bytes (without its newline) is over the cap.
#[must_use]
pub fn is_too_long(len: usize, max_line_bytes: u64) -> bool {
    u64::try_from(len).map_or(true, |len| len > max_line_bytes)
}

/// A reader that fails with [`line_too_long`] (as an `InvalidData` I/O error) as soon as a
/// line grows past `max_line_bytes`, for line readers that would otherwise hold a line of any
/// length (`BufRead::lines` in the `trace` converter).
#[derive(Debug)]
pub struct LineCapReader<R> {
    inner: R,
    max_line_bytes: u64,
    line_number: u64,
    /// Bytes of the current line seen so far.
    line_bytes: u64,
}

impl<R: Read> LineCapReader<R> {
    /// Wraps `inner`; `max_line_bytes` is the longest line let through (`--max-line-bytes`).
    pub fn new(inner: R, max_line_bytes: u64) -> Self {
        Self {
            inner,
            max_line_bytes,
            line_number: 1,
            line_bytes: 0,
        }
    }
}

impl<R: Read> Read for LineCapReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        let mut rest = &buf[..read];
        loop {
            let (segment, ends_line) = match memchr::memchr(b'\n', rest) {
                Some(newline) => (&rest[..newline], true),
                None => (rest, false),
            };
            self.line_bytes += segment.len() as u64;
            // A `\r` before the newline is no part of the line.
            let over = self.line_bytes - u64::from(ends_line && segment.ends_with(b"\r"));
            if over > self.max_line_bytes {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    line_too_long(self.line_number, self.max_line_bytes),
                ));
            }
            if !ends_line {
                return Ok(read);
            }
            self.line_number += 1;
            self.line_bytes = 0;
            rest = &rest[segment.len() + 1..];
        }
    }
}

/// One line without its terminator (`\n` or `\r\n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitLine<'b> {
    /// 1-based number of the line in the whole stream.
    pub line_number: u64,
    /// The line's bytes, borrowed from the reader's buffer (no copy per line).
    pub bytes: &'b [u8],
}

/// Numbers the lines of a stream that arrives in buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineSplitter {
    next_line_number: u64,
}

impl Default for LineSplitter {
    fn default() -> Self {
        Self::starting_at(1)
    }
}

impl LineSplitter {
    /// A splitter whose next line gets number `line_number` (for a tailer resuming mid-file).
    pub fn starting_at(line_number: u64) -> Self {
        Self {
            next_line_number: line_number,
        }
    }

    /// The number the next line will get.
    pub fn next_line_number(&self) -> u64 {
        self.next_line_number
    }

    /// Takes the first complete line of `buf`, if any; returns it and the bytes it used
    /// (terminator included).
    #[inline]
    pub fn next_complete<'b>(&mut self, buf: &'b [u8]) -> Option<(SplitLine<'b>, usize)> {
        let newline = memchr::memchr(b'\n', buf)?;
        let line = SplitLine {
            line_number: self.next_line_number,
            bytes: strip_cr(&buf[..newline]),
        };
        self.next_line_number += 1;
        Some((line, newline + 1))
    }

    /// Iterates over the complete lines of `buf`; afterwards
    /// [`CompleteLines::consumed_bytes`] says where the unterminated remainder starts.
    pub fn complete_lines<'s, 'b>(&'s mut self, buf: &'b [u8]) -> CompleteLines<'s, 'b> {
        CompleteLines {
            splitter: self,
            buf,
            consumed_bytes: 0,
        }
    }

    /// At end of input: the unterminated remainder as the last line (`None` if it is empty).
    pub fn final_line<'b>(&mut self, rest: &'b [u8]) -> Option<SplitLine<'b>> {
        if rest.is_empty() {
            return None;
        }
        let line = SplitLine {
            line_number: self.next_line_number,
            bytes: strip_cr(rest),
        };
        self.next_line_number += 1;
        Some(line)
    }
}

/// The complete lines of one buffer (see [`LineSplitter::complete_lines`]).
#[derive(Debug)]
pub struct CompleteLines<'s, 'b> {
    splitter: &'s mut LineSplitter,
    buf: &'b [u8],
    consumed_bytes: usize,
}

impl CompleteLines<'_, '_> {
    /// Bytes of the buffer taken so far; the rest is a partial line to keep.
    pub fn consumed_bytes(&self) -> usize {
        self.consumed_bytes
    }
}

impl<'b> Iterator for CompleteLines<'_, 'b> {
    type Item = SplitLine<'b>;

    fn next(&mut self) -> Option<SplitLine<'b>> {
        let (line, used) = self
            .splitter
            .next_complete(&self.buf[self.consumed_bytes..])?;
        self.consumed_bytes += used;
        Some(line)
    }
}

/// Calls `on_line` for every complete line of `buf` and returns the bytes consumed; the
/// remainder (a partial last line) is left for the caller to keep.
pub fn split_complete_lines<'b>(
    splitter: &mut LineSplitter,
    buf: &'b [u8],
    mut on_line: impl FnMut(SplitLine<'b>),
) -> usize {
    let mut lines = splitter.complete_lines(buf);
    for line in lines.by_ref() {
        on_line(line);
    }
    lines.consumed_bytes()
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Reads numbered lines from a stream, at least [`MIN_READ_BYTES`] at a time, never holding
/// more than the longest line plus one read in memory.
#[derive(Debug)]
pub struct TraceLines<R> {
    reader: R,
    splitter: LineSplitter,
    buf: Vec<u8>,
    /// `buf[start..end]` holds bytes not yet yielded.
    start: usize,
    end: usize,
    at_eof: bool,
}

impl<R: Read> TraceLines<R> {
    /// Lines of `reader`, numbered from 1.
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            splitter: LineSplitter::default(),
            buf: vec![0; 2 * MIN_READ_BYTES],
            start: 0,
            end: 0,
            at_eof: false,
        }
    }

    /// The next line, or `None` at end of input. The last line need not end with `\n`.
    pub fn next_line(&mut self) -> io::Result<Option<SplitLine<'_>>> {
        // Bytes of `buf[start..end]` already known to hold no `\n`.
        let mut scanned = 0;
        loop {
            if let Some(newline) = memchr::memchr(b'\n', &self.buf[self.start + scanned..self.end])
            {
                let line_end = self.start + scanned + newline + 1;
                let (line, used) = self
                    .splitter
                    .next_complete(&self.buf[self.start..line_end])
                    .expect("the range ends with the newline just found");
                debug_assert_eq!(used, line_end - self.start);
                self.start = line_end;
                return Ok(Some(line));
            }
            scanned = self.end - self.start;
            if self.at_eof {
                let rest = &self.buf[self.start..self.end];
                self.start = self.end;
                return Ok(self.splitter.final_line(rest));
            }
            self.refill()?;
        }
    }

    /// Moves the partial line to the front, makes room for a full read and reads once.
    fn refill(&mut self) -> io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < MIN_READ_BYTES {
            let grown = (2 * self.buf.len()).max(self.end + MIN_READ_BYTES);
            // A line longer than memory is an error, not an abort.
            self.buf
                .try_reserve_exact(grown - self.buf.len())
                .map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::OutOfMemory,
                        format!(
                            "out of memory holding a {}-byte line",
                            self.end - self.start
                        ),
                    )
                })?;
            self.buf.resize(grown, 0);
        }
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.at_eof = true;
                    return Ok(());
                }
                Ok(read) => {
                    self.end += read;
                    return Ok(());
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
    }
}

/// Calls `on_line(line_number, line)` for every line of `reader` (the unterminated last line
/// included) and returns the number of lines. Stops at the first error; I/O errors convert
/// into the caller's error type.
pub fn for_each_line<R: Read, E: From<io::Error>>(
    reader: R,
    mut on_line: impl FnMut(u64, &[u8]) -> Result<(), E>,
) -> Result<u64, E> {
    let mut lines = TraceLines::new(reader);
    let mut count = 0;
    while let Some(line) = lines.next_line()? {
        on_line(line.line_number, line.bytes)?;
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect_lines(input: &[u8]) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        for_each_line(input, |number, line| {
            out.push((number, line.to_vec()));
            Ok::<(), io::Error>(())
        })
        .unwrap();
        out
    }

    #[test]
    fn the_line_cap_reader_fails_on_the_first_line_past_the_cap() {
        let mut text = String::new();
        let read = |input: &[u8], cap| {
            let mut text = String::new();
            LineCapReader::new(input, cap)
                .read_to_string(&mut text)
                .map(|_| text)
        };
        assert_eq!(read(b"abc\r\nde\nfgh", 3).unwrap(), "abc\r\nde\nfgh");
        let error = read(b"abc\nde\nfghi\n", 3).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert_eq!(
            error.to_string(),
            "line 3: longer than --max-line-bytes (3 B); raise it to read longer lines"
        );
        // Byte by byte, the same line at fault.
        let mut capped = LineCapReader::new(Trickle(b"ab\r\nabc\nabcd"), 3);
        let error = capped.read_to_string(&mut text).unwrap_err();
        assert!(error.to_string().starts_with("line 3: "), "{error}");
    }

    #[test]
    fn final_line_without_newline_is_yielded() {
        assert_eq!(
            collect_lines(b"a\r\n\nb"),
            [(1, b"a".to_vec()), (2, b"".to_vec()), (3, b"b".to_vec())]
        );
        assert_eq!(collect_lines(b"a\n"), [(1, b"a".to_vec())]);
        assert!(collect_lines(b"").is_empty());
    }

    #[test]
    fn lines_longer_than_the_buffer_survive_refills() {
        let long = vec![b'x'; 5 * MIN_READ_BYTES + 17];
        let mut input = long.clone();
        input.extend_from_slice(b"\nshort\n");
        input.extend_from_slice(&long);
        let lines = collect_lines(&input);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].1, long);
        assert_eq!(lines[1], (2, b"short".to_vec()));
        assert_eq!(lines[2].1, long);
    }

    /// A reader that hands out one byte per call, to exercise every split point.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let Some((&first, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            buf[0] = first;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn byte_by_byte_reads_give_the_same_lines() {
        let input = b"{\"a\":1}\r\n\n  \nlast";
        let mut lines = TraceLines::new(Trickle(input));
        let mut got = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            got.push((line.line_number, line.bytes.to_vec()));
        }
        assert_eq!(got, collect_lines(input));
        assert_eq!(got.len(), 4);
    }

    #[test]
    fn splitter_keeps_the_partial_tail_for_a_tailer() {
        let mut splitter = LineSplitter::default();
        let mut seen = Vec::new();
        let consumed = split_complete_lines(&mut splitter, b"one\ntwo\r\nthr", |line| {
            seen.push((line.line_number, line.bytes.to_vec()));
        });
        assert_eq!(consumed, 9);
        assert_eq!(seen, [(1, b"one".to_vec()), (2, b"two".to_vec())]);
        // The tailer appends more bytes to the kept remainder.
        let mut lines = splitter.complete_lines(b"ee\nfour");
        assert_eq!(
            lines.next(),
            Some(SplitLine {
                line_number: 3,
                bytes: b"ee"
            })
        );
        assert_eq!(lines.next(), None);
        assert_eq!(lines.consumed_bytes(), 3);
        assert_eq!(splitter.next_line_number(), 4);
        assert_eq!(
            splitter.final_line(b"four"),
            Some(SplitLine {
                line_number: 4,
                bytes: b"four"
            })
        );
    }
}
