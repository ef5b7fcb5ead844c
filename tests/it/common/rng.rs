//! The tests' one random stream: xorshift64, seeded, no dependency.

/// A xorshift64 stream from its state (never 0).
pub struct Rng(pub u64);

impl Rng {
    /// A stream from any `seed`: spread over the bits, and odd, so never the all-zero state.
    pub fn seeded(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next state.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The next value below `bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    /// The next index below `len`.
    pub fn index(&mut self, len: usize) -> usize {
        usize::try_from(self.below(len as u64)).expect("below a usize")
    }
}
