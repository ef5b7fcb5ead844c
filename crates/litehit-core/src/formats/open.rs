//! Opening a trace file, decompressing `.gz` and `.zst` transparently.
//!
//! Owns compression detection: the magic bytes decide (gzip `1f 8b`, zstd `28 b5 2f fd`), so a
//! renamed file still opens; a `.gz`/`.zst` name on a file without the matching magic is an
//! error rather than a silent plain read. Multi-member gzip and multi-frame zstd (with
//! skippable frames) decode completely. It never splits lines or parses content.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const ZSTD_MAGIC: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];

/// How a trace file is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Plain text.
    None,
    /// gzip (magic `1f 8b`).
    Gzip,
    /// Zstandard (magic `28 b5 2f fd`), any number of frames.
    Zstd,
}

impl Compression {
    /// The compression whose magic number `first_bytes` starts with.
    pub fn from_magic(first_bytes: &[u8]) -> Self {
        if first_bytes.starts_with(GZIP_MAGIC) {
            Self::Gzip
        } else if first_bytes.starts_with(ZSTD_MAGIC) {
            Self::Zstd
        } else {
            Self::None
        }
    }

    /// The compression a file name's extension announces.
    pub fn from_extension(path: &Path) -> Self {
        match path.extension().and_then(|ext| ext.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("gz") => Self::Gzip,
            Some(ext) if ext.eq_ignore_ascii_case("zst") || ext.eq_ignore_ascii_case("zstd") => {
                Self::Zstd
            }
            _ => Self::None,
        }
    }
}

/// Opens a trace for streaming, decompressing gzip or zstd by magic bytes. `-` is standard
/// input. The input is read once, front to back, so a pipe works like a file.
pub fn open_trace(path: &Path) -> io::Result<Box<dyn Read + Send>> {
    let mut source: Box<dyn Read + Send> = if path == Path::new("-") {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(path)?)
    };
    let magic_bytes = read_magic(&mut source)?;
    let magic = Compression::from_magic(&magic_bytes);
    let rejoined: Box<dyn Read + Send> = Box::new(io::Cursor::new(magic_bytes).chain(source));
    let file = BufReader::with_capacity(super::lines::MIN_READ_BYTES, rejoined);
    let named = Compression::from_extension(path);
    if named != Compression::None && named != magic {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: expected {named:?} data (by its extension), found {} bytes",
                path.display(),
                match magic {
                    Compression::None => "uncompressed",
                    Compression::Gzip => "gzip",
                    Compression::Zstd => "zstd",
                }
            ),
        ));
    }
    Ok(match magic {
        Compression::None => Box::new(file),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(file)),
        Compression::Zstd => Box::new(ZstdFrames::new(file)),
    })
}

/// The first bytes of `source`, as many as a compression magic number has (fewer only at
/// the end of the input), read in full: a pipe may deliver one byte at first. They are
/// consumed; a caller that goes on reading puts them back in front.
pub fn read_magic(source: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut magic = Vec::with_capacity(MAGIC_BYTES);
    source.take(MAGIC_BYTES as u64).read_to_end(&mut magic)?;
    Ok(magic)
}

/// The longest compression magic number ([`ZSTD_MAGIC`]).
const MAGIC_BYTES: usize = 4;

/// What [`peek_first_line`] found at the start of a trace.
pub struct PeekedTrace {
    /// The first line with anything but whitespace (without its newline), `None` if the
    /// trace has none.
    pub first_line: Option<Vec<u8>>,
    /// The 1-based number of the last line looked at: the first non-blank one, if any.
    pub first_line_number: u64,
    /// That line was cut at [`MAX_PEEK_BYTES`] without reaching its end: it is longer than
    /// the limit (or the trace is no text), so `first_line` is only its start.
    pub first_line_cut: bool,
    /// That line ends in a newline (a growing file's first line may still be being written).
    pub first_line_complete: bool,
    /// Every byte of the trace again, the peeked ones first.
    pub reader: Box<dyn Read + Send>,
}

/// Most bytes read while looking for the first line before giving up (a binary file with no
/// newline): they are kept for the replay, so this bounds the memory. A real first line can
/// be long (an 80 k-key request is ~1.2 MB), so the bound is generous.
pub const MAX_PEEK_BYTES: usize = 64 << 20;

/// Reads `reader` up to its first non-blank line (format detection needs it) and hands back
/// a reader that yields those bytes again before the rest, so the trace is opened and read
/// once: a pipe (`<(zcat t.gz)`, `-`) cannot be read twice.
pub fn peek_first_line(reader: Box<dyn Read + Send>) -> io::Result<PeekedTrace> {
    let mut buffered = BufReader::with_capacity(super::lines::MIN_READ_BYTES, reader);
    let mut peeked = Vec::new();
    let mut first_line = None;
    let mut first_line_number = 0;
    let mut first_line_complete = false;
    loop {
        first_line_number += 1;
        let line_start = peeked.len();
        let allowance = (MAX_PEEK_BYTES + 1).saturating_sub(line_start) as u64;
        let read = (&mut buffered)
            .take(allowance)
            .read_until(b'\n', &mut peeked)?;
        // A byte-order mark alone does not make a line (the parser skips it too).
        let line = super::strip_bom(&peeked[line_start..]);
        if line.iter().any(|b| !b.is_ascii_whitespace()) {
            first_line = Some(line.trim_ascii_end().to_vec());
            first_line_complete = peeked.ends_with(b"\n");
            break;
        }
        if read == 0 || peeked.len() > MAX_PEEK_BYTES {
            break;
        }
    }
    let first_line_cut = peeked.len() > MAX_PEEK_BYTES && !peeked.ends_with(b"\n");
    Ok(PeekedTrace {
        first_line,
        first_line_number,
        first_line_cut,
        first_line_complete,
        reader: Box::new(io::Cursor::new(peeked).chain(buffered)),
    })
}

/// Decodes every zstd frame of a stream in turn (ruzstd's `StreamingDecoder` reads one).
pub struct ZstdFrames<R> {
    source: R,
    decoder: FrameDecoder,
    /// A frame is open and may still yield bytes.
    in_frame: bool,
}

impl<R: BufRead> ZstdFrames<R> {
    /// Decodes `source` from its first frame on.
    pub fn new(source: R) -> Self {
        Self {
            source,
            decoder: FrameDecoder::new(),
            in_frame: false,
        }
    }

    /// Opens the next data frame, skipping skippable frames; `false` at end of input.
    fn open_next_frame(&mut self) -> io::Result<bool> {
        loop {
            if self.source.fill_buf()?.is_empty() {
                return Ok(false);
            }
            match self.decoder.reset(&mut self.source) {
                Ok(()) => return Ok(true),
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    let skipped = io::copy(
                        &mut (&mut self.source).take(u64::from(length)),
                        &mut io::sink(),
                    )?;
                    if skipped != u64::from(length) {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            format!(
                                "zstd skippable frame: expected {length} bytes, found {skipped}"
                            ),
                        ));
                    }
                }
                Err(err) => return Err(corrupt_zstd(&err)),
            }
        }
    }
}

/// A decoder error in the words a user needs first (the decoder's own detail after them).
fn corrupt_zstd(err: &dyn std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("zstd data is truncated or corrupt ({err})"),
    )
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if !self.in_frame {
                if !self.open_next_frame()? {
                    return Ok(0);
                }
                self.in_frame = true;
            }
            while self.decoder.can_collect() < buf.len() && !self.decoder.is_finished() {
                let wanted = buf.len() - self.decoder.can_collect();
                self.decoder
                    .decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBytes(wanted))
                    .map_err(|err| corrupt_zstd(&err))?;
            }
            let read = self.decoder.read(buf)?;
            if read > 0 {
                return Ok(read);
            }
            if self.decoder.is_finished() && self.decoder.can_collect() == 0 {
                self.in_frame = false;
            }
        }
    }
}
