//! Shared request preprocessing: `formats` → **preprocess** → `hitcore`.
//!
//! Owns the length contract, coarsening (re-blocking) and prefix-hash chaining of REFERENCE
//! §2.2. It turns one raw request into the block keys the core replays and the token
//! denominator the hit rate divides by. It knows nothing about LRU state or capacities.

mod prefix_hash;

pub use prefix_hash::{apply_prefix_hash, apply_prefix_hash_in_place, prefix_hash_next};

/// Why a request violates the preprocessing contract (messages follow upstream's wording).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NormalizeError {
    /// A block of zero tokens would divide by zero.
    #[error("block_size_tokens must be positive")]
    ZeroBlockSize,
    /// A negative length has no block count.
    #[error("input_token_len must not be negative (found {input_token_len})")]
    NegativeInputLength {
        /// The length found.
        input_token_len: i64,
    },
    /// An analysis block must be whole trace blocks: keys cannot be split.
    #[error(
        "block_size_tokens {block_size_tokens} must be a multiple of the trace block size \
         {trace_block_size_tokens} (coarsening only)"
    )]
    NotCoarsening {
        /// The lane's analysis block size.
        block_size_tokens: u64,
        /// The trace's native block size.
        trace_block_size_tokens: u64,
    },
    /// The key count is not what the length says: the trace and its block size disagree.
    #[error(
        "expected {expected_keys} keys (floor(input_len {input_token_len} / trace block size \
         {trace_block_size_tokens})), found {found_keys}"
    )]
    LengthMismatch {
        /// `floor(input_len / trace block size)`.
        expected_keys: u64,
        /// The keys the row has.
        found_keys: usize,
        /// The row's input length.
        input_token_len: u64,
        /// The trace's native block size.
        trace_block_size_tokens: u64,
    },
}

impl NormalizeError {
    /// For a key count that does not match the length: [`block_size_hint`] (the contract
    /// counts full blocks only); empty for any other error.
    #[must_use]
    pub fn block_size_hint(&self) -> String {
        match *self {
            Self::LengthMismatch {
                found_keys,
                input_token_len,
                trace_block_size_tokens,
                ..
            } => block_size_hint(
                input_token_len,
                u64::try_from(found_keys).unwrap_or(u64::MAX),
                trace_block_size_tokens,
                false,
            ),
            _ => String::new(),
        }
    }
}

/// The hint appended to a key-count error: the block size the keys fit (see
/// `fitting_block_size`) and how to say so (the trace block size; the analysis size may
/// stay coarser), or nothing when no size fits unambiguously. One wording for every format.
#[must_use]
pub fn block_size_hint(
    input_len: u64,
    found: u64,
    block_size_tokens: u64,
    allow_partial_tail: bool,
) -> String {
    fitting_block_size(input_len, found, block_size_tokens, allow_partial_tail)
        .map(|tokens| {
            format!(
                " (they fit {tokens}-token blocks: --trace-block-size {tokens} or a config's \
                 block_size; --block-size can only be a multiple of it)"
            )
        })
        .unwrap_or_default()
}

/// The largest block size a key-count hint names.
const MAX_HINTED_BLOCK_TOKENS: u64 = 8192;

/// The block size at which `input_len` tokens make `found` keys — full blocks only, or also
/// counting a partial tail block when the format keeps one (`allow_partial_tail`): the likely
/// size of the trace's blocks when the one assumed is wrong (say, a Mooncake trace read at 256
/// instead of 512). Tried in order: `block_size_tokens` halved or doubled up to ten times,
/// then the powers of two up to 2^16 — first, if `block_size_tokens` is not one itself (1000
/// against a 256-token trace), since real block sizes are.
fn fitting_block_size(
    input_len: u64,
    found: u64,
    block_size_tokens: u64,
    allow_partial_tail: bool,
) -> Option<u64> {
    // One key (or none) fits almost any size: no hint rather than an absurd one. And no
    // size beyond any real block size.
    if found < 2 {
        return None;
    }
    let fits = |tokens: u64| {
        tokens > 0
            && tokens <= MAX_HINTED_BLOCK_TOKENS
            && (input_len / tokens == found
                || (allow_partial_tail && input_len.div_ceil(tokens) == found))
    };
    let power_of_two = || {
        (0..=16)
            .map(|power| 1_u64 << power)
            .find(|&tokens| fits(tokens))
    };
    let halved_or_doubled = || {
        (1..=10).find_map(|shift| {
            [
                block_size_tokens
                    .checked_shl(shift)
                    .filter(|&t| t >> shift == block_size_tokens),
                Some(block_size_tokens >> shift),
            ]
            .into_iter()
            .flatten()
            .find(|&tokens| fits(tokens))
        })
    };
    if block_size_tokens.is_power_of_two() {
        halved_or_doubled().or_else(power_of_two)
    } else {
        power_of_two().or_else(halved_or_doubled)
    }
}

/// How a lane preprocesses requests: its analysis granularity and key shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NormalizeParams {
    /// The lane's analysis block size (tokens per block); hit tokens = hit blocks × this.
    pub block_size_tokens: u64,
    /// Chain raw per-block hashes with [`prefix_hash_next`] before re-blocking.
    pub enable_prefix_hash: bool,
    /// The trace's native block size; `0` means "same as `block_size_tokens`".
    pub trace_block_size_tokens: u64,
}

/// A request ready for the core: complete analysis blocks plus the token denominator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NormalizedRequest {
    /// Keys of the complete analysis blocks, in prefix order: what the core replays.
    pub block_keys: Vec<i64>,
    /// The original input token count, incomplete tail included (never changed by re-blocking).
    pub input_token_len: u64,
}

/// Normalizes one request (REFERENCE §2.2), allocating the result.
///
/// `input_token_len == 0` means "unknown": it is derived as `keys × trace block size`.
pub fn normalize_request(
    block_keys: &[i64],
    input_token_len: i64,
    block_size_tokens: u64,
    enable_prefix_hash: bool,
    trace_block_size_tokens: u64,
) -> Result<NormalizedRequest, NormalizeError> {
    let params = NormalizeParams {
        block_size_tokens,
        enable_prefix_hash,
        trace_block_size_tokens,
    };
    let mut out = NormalizedRequest::default();
    normalize_request_into(block_keys, input_token_len, params, &mut out)?;
    Ok(out)
}

/// Normalizes one request into `out`, reusing its key buffer (no allocation once warm).
pub fn normalize_request_into(
    block_keys: &[i64],
    input_token_len: i64,
    params: NormalizeParams,
    out: &mut NormalizedRequest,
) -> Result<(), NormalizeError> {
    let trace_block_size_tokens = check_params(params)?;
    let input_token_len =
        checked_input_len(block_keys.len(), input_token_len, trace_block_size_tokens)?;
    out.block_keys.clear();
    out.block_keys.extend_from_slice(block_keys);
    out.input_token_len = input_token_len;
    if params.enable_prefix_hash {
        apply_prefix_hash_in_place(&mut out.block_keys);
    }
    reblock_in_place(
        &mut out.block_keys,
        0,
        params.block_size_tokens / trace_block_size_tokens,
    );
    Ok(())
}

/// Normalizes a request whose keys already sit in `keys` (the zero-copy path of the engine).
/// Returns the token denominator.
pub fn normalize_keys_in_place(
    keys: &mut Vec<i64>,
    input_token_len: i64,
    params: NormalizeParams,
) -> Result<u64, NormalizeError> {
    normalize_appended_keys(keys, 0, input_token_len, params)
}

/// Normalizes a request whose keys are `keys[first..]` (appended to a batch of earlier
/// requests' keys, which stay as they are), so the keys are copied once. Returns the token
/// denominator; on error `keys` may hold partly normalized keys after `first`.
pub fn normalize_appended_keys(
    keys: &mut Vec<i64>,
    first: usize,
    input_token_len: i64,
    params: NormalizeParams,
) -> Result<u64, NormalizeError> {
    let trace_block_size_tokens = check_params(params)?;
    let input_token_len =
        checked_input_len(keys.len() - first, input_token_len, trace_block_size_tokens)?;
    if params.enable_prefix_hash {
        apply_prefix_hash_in_place(&mut keys[first..]);
    }
    reblock_in_place(
        keys,
        first,
        params.block_size_tokens / trace_block_size_tokens,
    );
    Ok(input_token_len)
}

/// Normalizes a request whose prompt keys are `keys[first..first + prompt_keys]`, followed
/// by the keys of its output (the blocks the engine filled during decode, continuing the
/// prompt's chain), all appended to a batch as [`normalize_appended_keys`]. The length
/// contract holds for the prompt alone; the prompt and its output are chained and re-blocked
/// as one sequence, so an output block completes the prompt's partial tail exactly as the
/// engine's block does. Returns the token denominator and how many of the normalized keys
/// are the prompt's (the leading ones, the only ones a hit curve counts).
pub fn normalize_appended_request(
    keys: &mut Vec<i64>,
    first: usize,
    prompt_keys: usize,
    input_token_len: i64,
    params: NormalizeParams,
) -> Result<(u64, usize), NormalizeError> {
    let trace_block_size_tokens = check_params(params)?;
    let input_token_len = checked_input_len(prompt_keys, input_token_len, trace_block_size_tokens)?;
    if params.enable_prefix_hash {
        apply_prefix_hash_in_place(&mut keys[first..]);
    }
    let stride = params.block_size_tokens / trace_block_size_tokens;
    reblock_in_place(keys, first, stride);
    Ok((
        input_token_len,
        prompt_keys / usize::try_from(stride).unwrap_or(usize::MAX),
    ))
}

/// Checks the block sizes and returns the effective trace block size.
fn check_params(params: NormalizeParams) -> Result<u64, NormalizeError> {
    if params.block_size_tokens == 0 {
        return Err(NormalizeError::ZeroBlockSize);
    }
    let trace_block_size_tokens = if params.trace_block_size_tokens == 0 {
        params.block_size_tokens
    } else {
        params.trace_block_size_tokens
    };
    if !params
        .block_size_tokens
        .is_multiple_of(trace_block_size_tokens)
    {
        return Err(NormalizeError::NotCoarsening {
            block_size_tokens: params.block_size_tokens,
            trace_block_size_tokens,
        });
    }
    Ok(trace_block_size_tokens)
}

/// Applies the length contract at trace granularity and returns the token denominator.
fn checked_input_len(
    key_count: usize,
    input_token_len: i64,
    trace_block_size_tokens: u64,
) -> Result<u64, NormalizeError> {
    let Ok(given_len) = u64::try_from(input_token_len) else {
        return Err(NormalizeError::NegativeInputLength { input_token_len });
    };
    let key_count_u64 = u64::try_from(key_count).unwrap_or(u64::MAX);
    let input_token_len = if given_len > 0 {
        given_len
    } else {
        key_count_u64.saturating_mul(trace_block_size_tokens)
    };
    let expected_keys = input_token_len / trace_block_size_tokens;
    if expected_keys != key_count_u64 {
        return Err(NormalizeError::LengthMismatch {
            expected_keys,
            found_keys: key_count,
            input_token_len,
            trace_block_size_tokens,
        });
    }
    Ok(input_token_len)
}

/// Keeps every `stride`-th chained key (key `j·stride` encodes the first `j` coarse blocks) and
/// drops the incomplete tail.
/// Keeps every `stride`-th chained key of `keys[first..]` and drops the incomplete tail.
fn reblock_in_place(keys: &mut Vec<i64>, first: usize, stride: u64) {
    if stride <= 1 {
        return;
    }
    let stride = usize::try_from(stride).unwrap_or(usize::MAX);
    let request = &mut keys[first..];
    let coarse_len = request.len() / stride;
    for coarse_index in 0..coarse_len {
        request[coarse_index] = request[(coarse_index + 1) * stride - 1];
    }
    keys.truncate(first + coarse_len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_length_is_derived_from_keys() {
        let n = normalize_request(&[1, 2, 3], 0, 4, false, 0).unwrap();
        assert_eq!(n.input_token_len, 12);
        assert_eq!(n.block_keys, [1, 2, 3]);
    }

    #[test]
    fn tail_tokens_stay_in_denominator() {
        let n = normalize_request(&[1, 2, 3], 15, 4, false, 0).unwrap();
        assert_eq!(n.input_token_len, 15);
    }

    #[test]
    fn every_error_rule() {
        assert_eq!(
            normalize_request(&[], 0, 0, false, 0),
            Err(NormalizeError::ZeroBlockSize)
        );
        assert_eq!(
            normalize_request(&[1], -1, 4, false, 0),
            Err(NormalizeError::NegativeInputLength {
                input_token_len: -1
            })
        );
        assert_eq!(
            normalize_request(&[1], 4, 6, false, 4),
            Err(NormalizeError::NotCoarsening {
                block_size_tokens: 6,
                trace_block_size_tokens: 4
            })
        );
        // Refining (analysis finer than trace) is also "not coarsening".
        assert!(matches!(
            normalize_request(&[1], 8, 4, false, 8),
            Err(NormalizeError::NotCoarsening { .. })
        ));
        assert_eq!(
            normalize_request(&[1, 2], 13, 4, false, 0),
            Err(NormalizeError::LengthMismatch {
                expected_keys: 3,
                found_keys: 2,
                input_token_len: 13,
                trace_block_size_tokens: 4
            })
        );
        // Too many keys for the length is as wrong as too few.
        assert!(matches!(
            normalize_request(&[1, 2, 3], 11, 4, false, 0),
            Err(NormalizeError::LengthMismatch {
                expected_keys: 2,
                ..
            })
        ));
    }

    #[test]
    fn empty_request_with_zero_length_is_legal() {
        let n = normalize_request(&[], 0, 4, false, 0).unwrap();
        assert!(n.block_keys.is_empty());
        assert_eq!(n.input_token_len, 0);
        // Shorter than one trace block: no keys, tokens still counted.
        assert_eq!(
            normalize_request(&[], 3, 4, false, 0)
                .unwrap()
                .input_token_len,
            3
        );
    }

    #[test]
    fn reblocking_keeps_every_kth_chained_key_and_drops_tail() {
        let keys: Vec<i64> = (1..=10).collect();
        let n = normalize_request(&keys, 43, 16, false, 4).unwrap();
        assert_eq!(n.block_keys, [4, 8]);
        assert_eq!(
            n.input_token_len, 43,
            "denominator unchanged by re-blocking"
        );
    }

    #[test]
    fn reblocking_chains_before_sampling() {
        let raw = [1, 2, 3, 4, 5, 6, 7, 8];
        let n = normalize_request(&raw, 32, 16, true, 4).unwrap();
        let chained = apply_prefix_hash(&raw);
        assert_eq!(n.block_keys, [chained[3], chained[7]]);
        assert_eq!(n.block_keys[0], 527_151_483_457_094_799);
    }

    #[test]
    fn in_place_path_equals_allocating_path() {
        let raw: Vec<i64> = (0..37).map(|i| i * 7919 - 100).collect();
        for (len, bs, trace_bs, hash) in [
            (37 * 4 + 3, 8, 4, true),
            (37 * 4, 4, 0, false),
            (0, 12, 4, true),
        ] {
            let params = NormalizeParams {
                block_size_tokens: bs,
                enable_prefix_hash: hash,
                trace_block_size_tokens: trace_bs,
            };
            let expected = normalize_request(&raw, len, bs, hash, trace_bs).unwrap();
            let mut keys = raw.clone();
            let tokens = normalize_keys_in_place(&mut keys, len, params).unwrap();
            assert_eq!(
                (keys, tokens),
                (expected.block_keys.clone(), expected.input_token_len)
            );
            // Appended after an earlier request's keys: those stay, the new ones match.
            let earlier = [5_i64, 6, 7];
            let mut batch = earlier.to_vec();
            batch.extend_from_slice(&raw);
            let tokens = normalize_appended_keys(&mut batch, earlier.len(), len, params).unwrap();
            assert_eq!(batch[..earlier.len()], earlier);
            assert_eq!(
                (&batch[earlier.len()..], tokens),
                (&expected.block_keys[..], expected.input_token_len)
            );
        }
    }
}
