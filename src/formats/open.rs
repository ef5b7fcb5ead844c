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
    None,
    Gzip,
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

/// Opens a trace for streaming, decompressing gzip or zstd by magic bytes.
pub fn open_trace(path: &Path) -> io::Result<Box<dyn Read + Send>> {
    let mut file = BufReader::with_capacity(super::lines::MIN_READ_BYTES, File::open(path)?);
    let magic = Compression::from_magic(file.fill_buf()?);
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

/// Decodes every zstd frame of a stream in turn (ruzstd's `StreamingDecoder` reads one).
pub struct ZstdFrames<R> {
    source: R,
    decoder: FrameDecoder,
    /// A frame is open and may still yield bytes.
    in_frame: bool,
}

impl<R: BufRead> ZstdFrames<R> {
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
                Err(err) => return Err(io::Error::new(io::ErrorKind::InvalidData, err)),
            }
        }
    }
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
                    .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))?;
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
