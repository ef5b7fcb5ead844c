//! The prefix-chaining hash that turns per-block hashes into prefix-chained keys.
//!
//! Bit-identical with the upstream Python producer (`prefix_hash.py::hash_int64_func`): all
//! arithmetic is wrapping `u64` with a *logical* right shift, so negative intermediate values
//! behave exactly as in Python's `& (2**64 - 1)` world (REFERENCE §2.1).

/// The 64-bit golden-ratio constant of the Jenkins-style mixing step.
const GOLDEN_RATIO_64: u64 = 0x9e37_79b9_7f4a_7c15;

/// Chains one raw per-block hash onto the hash of the prefix before it.
#[inline]
#[must_use]
pub fn prefix_hash_next(prev_key: i64, raw_block_hash: i64) -> i64 {
    // Two's-complement reinterpretation is the documented contract, not a lossy cast.
    #[expect(clippy::cast_sign_loss, reason = "two's-complement reinterpretation")]
    let (prev, raw) = (prev_key as u64, raw_block_hash as u64);
    let rhs = raw
        .wrapping_add(GOLDEN_RATIO_64)
        .wrapping_add(prev << 12)
        .wrapping_add(prev >> 32);
    #[expect(
        clippy::cast_possible_wrap,
        reason = "two's-complement reinterpretation"
    )]
    let chained = (prev ^ rhs) as i64;
    chained
}

/// Rewrites `keys` in place from raw per-block hashes into prefix-chained keys.
pub fn apply_prefix_hash_in_place(keys: &mut [i64]) {
    let mut prev_key = 0_i64;
    for key in keys {
        prev_key = prefix_hash_next(prev_key, *key);
        *key = prev_key;
    }
}

/// Returns the prefix-chained keys of `raw_block_hashes` (`key_j` encodes blocks `1..=j`).
#[must_use]
pub fn apply_prefix_hash(raw_block_hashes: &[i64]) -> Vec<i64> {
    let mut keys = raw_block_hashes.to_vec();
    apply_prefix_hash_in_place(&mut keys);
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_upstream_python_golden_vectors() {
        assert_eq!(
            apply_prefix_hash(&[1, 2, 3]),
            [
                -7_046_029_254_386_353_130,
                -8_366_447_756_632_839_738,
                8_024_461_590_772_477_417
            ]
        );
        assert_eq!(
            apply_prefix_hash(&[-5, 7]),
            [-7_046_029_254_386_353_136, -8_366_447_756_632_880_699]
        );
        assert_eq!(apply_prefix_hash(&[42]), [-7_046_029_254_386_353_089]);
        assert_eq!(prefix_hash_next(0, 0), -7_046_029_254_386_353_131);
        assert_eq!(apply_prefix_hash(&[]), Vec::<i64>::new());
        assert_eq!(
            apply_prefix_hash(&[7, 8]),
            [-7_046_029_254_386_353_124, -8_366_447_756_632_798_774]
        );
        assert_eq!(apply_prefix_hash(&[1, 2, 3, 4])[3], 527_151_483_457_094_799);
    }

    #[test]
    fn negative_intermediates_use_logical_shift() {
        // A negative prefix would differ under an arithmetic (signed) shift.
        let prev = -1_i64;
        let signed_shift_variant = {
            let rhs = 5_i64
                .wrapping_add(i64::from_ne_bytes(0x9e37_79b9_7f4a_7c15_u64.to_ne_bytes()))
                .wrapping_add(prev << 12)
                .wrapping_add(prev >> 32);
            prev ^ rhs
        };
        assert_ne!(prefix_hash_next(prev, 5), signed_shift_variant);
    }
}
