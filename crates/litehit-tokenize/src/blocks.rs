//! Full blocks of token ids → chained 64-bit keys.
//!
//! Key `i` is `xxh3_64_with_seed(block_i, seed = key_{i-1})`, where `block_i` is the block's
//! token ids as little-endian `u32` bytes and the root's seed is [`root_seed`] (the salt's
//! xxh3, or 0 without a salt). So two prompts share key `i` exactly when they share the salt
//! and their first `i + 1` blocks; a tenant's salt separates its keys from every other's at
//! the root. The partial tail has no key; it stays in `input_len`.

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

/// The seed of the first block: 0 without a salt, else the salt's xxh3.
pub fn root_seed(salt: Option<&str>) -> u64 {
    salt.map_or(0, |salt| xxh3_64(salt.as_bytes()))
}

/// Appends the chained keys of the full blocks of `tokens` to `keys` (two's-complement
/// `i64`, as standard traces write them). `scratch` is reused between calls.
pub fn block_keys(
    tokens: &[u32],
    block_size: usize,
    seed: u64,
    scratch: &mut Vec<u8>,
    keys: &mut Vec<i64>,
) {
    let mut parent = seed;
    for block in tokens.chunks_exact(block_size) {
        scratch.clear();
        for token in block {
            scratch.extend_from_slice(&token.to_le_bytes());
        }
        parent = xxh3_64_with_seed(scratch, parent);
        keys.push(i64::from_ne_bytes(parent.to_ne_bytes()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(tokens: &[u32], block_size: usize, salt: Option<&str>) -> Vec<i64> {
        let mut out = Vec::new();
        block_keys(
            tokens,
            block_size,
            root_seed(salt),
            &mut Vec::new(),
            &mut out,
        );
        out
    }

    #[test]
    fn tail_has_no_key() {
        assert_eq!(keys(&[1, 2, 3, 4, 5], 2, None).len(), 2);
        assert!(keys(&[1], 2, None).is_empty());
    }

    #[test]
    fn keys_chain_on_the_parent() {
        let a = keys(&[1, 2, 3, 4], 2, None);
        let b = keys(&[9, 9, 3, 4], 2, None);
        assert_ne!(a[1], b[1], "same second block, different parent");
        let c = keys(&[1, 2, 7, 7], 2, None);
        assert_eq!(a[0], c[0]);
        assert_ne!(a[1], c[1]);
    }

    #[test]
    fn salt_separates_at_the_root() {
        assert_ne!(keys(&[1, 2], 2, Some("a")), keys(&[1, 2], 2, Some("b")));
        assert_eq!(keys(&[1, 2], 2, Some("a")), keys(&[1, 2], 2, Some("a")));
    }

    #[test]
    fn first_key_is_xxh3_of_the_le_bytes() {
        let expected = xxh3_64_with_seed(&[1, 0, 0, 0, 2, 0, 0, 0], 0);
        assert_eq!(
            keys(&[1, 2], 2, None),
            [i64::from_ne_bytes(expected.to_ne_bytes())]
        );
    }
}
