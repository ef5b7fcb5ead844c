//! A `Content-Length` hyper cannot hold, answered 413 like any other body over `--max-body`.
//!
//! hyper keeps the two largest `u64` values for itself (chunked, close-delimited): a request
//! declaring `Content-Length: 18446744073709551614` or `…615` is answered by hyper itself, `431
//! Request Header Fields Too Large`, before the service sees it — the wrong reason, since the
//! length, not the headers, is too large. [`LengthGuard`] wraps the socket and, in request
//! heads only (from the connection's start, or the last reply, to the head's blank line),
//! lowers those two values in place to the largest hyper takes, `…613` (same digits, same
//! byte count), which `--max-body` then refuses with 413. No byte outside such a value is
//! ever changed (a longer number, which overflows `u64` and gets 400 either way, may have its
//! 20th digit lowered).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The header name, lower-case, with its colon.
const NAME: &[u8] = b"content-length:";
/// The largest `u64` but its last digit; a value with this prefix and a last digit of `4` or
/// `5` is one hyper refuses.
const OVER_PREFIX: &[u8] = b"1844674407370955161";
/// The last digit of the largest length hyper takes (`u64::MAX - 2`).
const LARGEST_TAKEN_LAST_DIGIT: u8 = b'3';

/// Where the scan of a head is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// At a line's start, `matched` bytes of [`NAME`] seen (and, with `blank`, a `\r` of a
    /// blank line).
    LineStart { matched: usize, blank: bool },
    /// In the value: `digits` seen so far, all matching [`OVER_PREFIX`] (or not).
    Value { digits: usize, over: bool },
    /// Elsewhere in a line.
    Rest,
    /// In a body, or past a pipelined head: nothing is scanned until the next reply.
    Body,
}

/// The socket, with heads' overflowing lengths lowered (see the module doc).
#[derive(Debug)]
pub(super) struct LengthGuard<T> {
    inner: T,
    scan: Scan,
}

impl<T> LengthGuard<T> {
    pub(super) fn new(inner: T) -> Self {
        Self {
            inner,
            scan: Scan::LineStart {
                matched: 0,
                blank: false,
            },
        }
    }

    /// Scans `bytes`, just read, lowering an overflowing length in place.
    fn scan(&mut self, bytes: &mut [u8]) {
        for slot in bytes.iter_mut() {
            self.scan = match (self.scan, *slot) {
                (Scan::Body, _) => return,
                (Scan::LineStart { blank: true, .. }, b'\n') => Scan::Body,
                (_, b'\n') => Scan::LineStart {
                    matched: 0,
                    blank: false,
                },
                (Scan::LineStart { matched: 0, .. }, b'\r') => Scan::LineStart {
                    matched: 0,
                    blank: true,
                },
                (Scan::LineStart { matched, .. }, byte)
                    if byte.to_ascii_lowercase() == NAME[matched] =>
                {
                    if matched + 1 == NAME.len() {
                        Scan::Value {
                            digits: 0,
                            over: true,
                        }
                    } else {
                        Scan::LineStart {
                            matched: matched + 1,
                            blank: false,
                        }
                    }
                }
                (Scan::Value { digits: 0, .. }, b' ' | b'\t') => self.scan,
                (Scan::Value { digits, over }, byte) if byte.is_ascii_digit() => {
                    if digits < OVER_PREFIX.len() {
                        Scan::Value {
                            digits: digits + 1,
                            over: over && byte == OVER_PREFIX[digits],
                        }
                    } else {
                        if digits == OVER_PREFIX.len() && over && matches!(byte, b'4' | b'5') {
                            *slot = LARGEST_TAKEN_LAST_DIGIT;
                        }
                        Scan::Rest
                    }
                }
                _ => Scan::Rest,
            };
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for LengthGuard<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let start = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if polled.is_ready() {
            let this = &mut *self;
            this.scan(&mut buf.filled_mut()[start..]);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for LengthGuard<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        // A reply: the client's next bytes are the next request's head.
        self.scan = Scan::LineStart {
            matched: 0,
            blank: false,
        };
        Pin::new(&mut self.inner).poll_write(cx, bytes)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        slices: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.scan = Scan::LineStart {
            matched: 0,
            blank: false,
        };
        Pin::new(&mut self.inner).poll_write_vectored(cx, slices)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `input` scanned in pieces of `piece` bytes.
    fn scanned(input: &[u8], piece: usize) -> Vec<u8> {
        let mut guard = LengthGuard::new(());
        let mut bytes = input.to_vec();
        for chunk in bytes.chunks_mut(piece) {
            guard.scan(chunk);
        }
        bytes
    }

    #[test]
    fn only_the_two_lengths_hyper_keeps_are_lowered_in_heads() {
        for piece in [1, 3, 1000] {
            for (sent, read) in [
                ("18446744073709551615", "18446744073709551613"),
                ("18446744073709551614", "18446744073709551613"),
                ("18446744073709551613", "18446744073709551613"),
                ("18446744073709551616", "18446744073709551616"),
                ("184467440737095516150", "184467440737095516130"),
                ("28446744073709551615", "28446744073709551615"),
                ("67108864", "67108864"),
            ] {
                let head = format!("POST / HTTP/1.1\r\nContent-LENGTH:  {sent}\r\n\r\n");
                let expected = format!("POST / HTTP/1.1\r\nContent-LENGTH:  {read}\r\n\r\n");
                assert_eq!(
                    scanned(head.as_bytes(), piece),
                    expected.as_bytes(),
                    "{sent} in pieces of {piece}"
                );
            }
        }
    }

    #[test]
    fn bodies_and_other_headers_are_never_changed() {
        let input = b"POST / HTTP/1.1\r\nX-Content-Length: 18446744073709551615\r\n\
                      Content-Length: 40\r\n\r\ncontent-length: 18446744073709551615\n";
        assert_eq!(scanned(input, 7), input);
    }
}
