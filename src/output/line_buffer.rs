//! An output buffer written by index, for the query's hot loop.
//!
//! Small pieces (digits, `%g` numbers) are stored in place or as fixed-size copies into room
//! reserved beforehand, instead of one `memcpy` call per piece as `Vec::extend_from_slice`
//! does for a length unknown at compile time; that call dominated the per-row cost. The
//! `#[inline]`s keep these tiny methods in the row loop (measured with `benches/query.rs`).

use super::number_format::{
    G6_MAX_BYTES, INTEGER_MAX_BYTES, format_g6_into, write_i64_into, write_u64_into,
};

/// Bytes `0..len` are output; the rest is zeroed room for the next line.
#[derive(Debug, Default)]
pub(crate) struct LineBuffer {
    bytes: Vec<u8>,
    len: usize,
}

impl LineBuffer {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            bytes: vec![0; capacity],
            len: 0,
        }
    }

    /// Makes sure `additional` more bytes can be written without growing.
    pub(crate) fn reserve(&mut self, additional: usize) {
        if self.bytes.len() - self.len < additional {
            self.bytes.resize(self.len + additional, 0);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    #[inline]
    pub(crate) fn push(&mut self, byte: u8) {
        self.bytes[self.len] = byte;
        self.len += 1;
    }

    #[inline]
    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// Needs [`INTEGER_MAX_BYTES`] of room.
    #[inline]
    pub(crate) fn push_u64(&mut self, value: u64) {
        self.len += write_u64_into(
            &mut self.bytes[self.len..self.len + INTEGER_MAX_BYTES],
            value,
        );
    }

    /// Needs [`INTEGER_MAX_BYTES`] of room.
    #[inline]
    pub(crate) fn push_i64(&mut self, value: i64) {
        self.len += write_i64_into(
            &mut self.bytes[self.len..self.len + INTEGER_MAX_BYTES],
            value,
        );
    }

    /// Appends a formatted `%g` number kept from [`format_g6_into`]; needs
    /// [`G6_MAX_BYTES`] of room.
    #[inline]
    pub(crate) fn push_g6_text(&mut self, text: &[u8; G6_MAX_BYTES], length: usize) {
        self.bytes[self.len..self.len + G6_MAX_BYTES].copy_from_slice(text);
        self.len += length;
    }

    /// Needs [`G6_MAX_BYTES`] of room; returns the text for reuse.
    #[inline]
    pub(crate) fn push_g6(&mut self, value: f64) -> ([u8; G6_MAX_BYTES], usize) {
        let mut text = [0; G6_MAX_BYTES];
        let length = format_g6_into(&mut text, value);
        self.push_g6_text(&text, length);
        (text, length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_land_in_order_and_room_is_kept() {
        let mut buffer = LineBuffer::with_capacity(4);
        buffer.reserve(2 * INTEGER_MAX_BYTES + G6_MAX_BYTES + 8);
        buffer.extend(b"[");
        buffer.push_u64(u64::MAX);
        buffer.push(b',');
        buffer.push_i64(-42);
        buffer.push(b',');
        let (text, length) = buffer.push_g6(2.0 / 3.0);
        buffer.push(b',');
        buffer.push_g6_text(&text, length);
        buffer.push(b']');
        assert_eq!(
            buffer.as_bytes(),
            b"[18446744073709551615,-42,0.666667,0.666667]"
        );
        assert_eq!(buffer.len(), 44);
        buffer.clear();
        assert!(buffer.as_bytes().is_empty());
    }
}
