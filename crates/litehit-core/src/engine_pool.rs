//! The serving engine's own KV pool (`--gpu-blocks N --gpu-block-size T`, or `--gpu-memory
//! SIZE`) as a capacity slot named [`ENGINE_SLOT_NAME`]: the number a user sees first is the
//! one at their own deployment's size.
//!
//! A pool of N engine blocks of T tokens holds N × T tokens, so ⌊N × T / block size⌋ analysis
//! blocks (an exact block count, [`Capacity::Blocks`]); a pool of SIZE bytes is that many KV
//! bytes, so ⌊SIZE / block bytes⌋ analysis blocks, converted by the projector as every byte
//! capacity is ([`Capacity::Gigabytes`] of SIZE / 2^30, exact below 2^53 bytes).

use crate::display::{self, Precision};
use crate::projector::{BYTES_PER_GIB, Capacity};

/// The name the engine's slot carries on every surface.
pub const ENGINE_SLOT_NAME: &str = "engine";

/// vLLM's default KV block size in tokens (`--block-size 16`), `--gpu-block-size`'s default.
pub const DEFAULT_GPU_BLOCK_SIZE_TOKENS: u64 = 16;

/// Bytes below which a byte count survives the trip through [`Capacity::Gigabytes`] exactly.
const EXACT_F64_BYTES: u64 = 1 << 53;

/// `--gpu-blocks` with lanes of different block sizes and different KV bytes per token: one
/// `engine` slot cannot be each lane's pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "--gpu-blocks: the config's lanes have different block sizes and KV bytes per token \
     ({}-token blocks of {} B, {}-token blocks of {} B), so one `engine` slot cannot hold \
     the pool's tokens in every lane; give --gpu-memory SIZE (each lane holds ⌊SIZE / its \
     block bytes⌋ blocks) or lanes of one block size",
    first.0, first.1, other.0, other.1
)]
pub struct MixedLanePool {
    /// The first lane's block size (tokens) and block bytes.
    pub first: (u64, u64),
    /// A lane that differs from it.
    pub other: (u64, u64),
}

/// The engine's KV pool, as the user gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnginePool {
    /// `--gpu-blocks N` of `--gpu-block-size T` tokens (vLLM's `num_gpu_blocks`, `block_size`).
    Blocks {
        /// The engine's blocks.
        gpu_blocks: u64,
        /// Tokens per engine block.
        gpu_block_size_tokens: u64,
    },
    /// `--gpu-memory SIZE`: KV bytes.
    Bytes(u64),
}

impl EnginePool {
    /// Tokens the pool holds (`None` for a pool given in bytes).
    #[must_use]
    pub fn tokens(self) -> Option<u64> {
        match self {
            Self::Blocks {
                gpu_blocks,
                gpu_block_size_tokens,
            } => Some(gpu_blocks.saturating_mul(gpu_block_size_tokens)),
            Self::Bytes(_) => None,
        }
    }

    /// The pool as a capacity of lanes with `block_size_tokens`-token analysis blocks:
    /// ⌊N × T / block size⌋ blocks, or SIZE bytes (the projector floors them to blocks).
    #[must_use]
    pub fn capacity(self, block_size_tokens: u64) -> Capacity {
        match self {
            Self::Blocks { .. } => Capacity::Blocks(
                self.tokens()
                    .unwrap_or(0)
                    .checked_div(block_size_tokens)
                    .unwrap_or(0),
            ),
            #[expect(clippy::cast_precision_loss, reason = "exact below 2^53 bytes")]
            Self::Bytes(bytes) => Capacity::Gigabytes(bytes as f64 / BYTES_PER_GIB as f64),
        }
    }

    /// The pool as the `engine` slot of lanes with these `(block_size_tokens, block_bytes)`,
    /// so that each lane holds its own ⌊pool tokens / block size⌋ blocks (or ⌊SIZE / block
    /// bytes⌋). One slot is one capacity for every lane: a block count when the lanes share a
    /// block size (or there are none yet); for lanes of different block sizes (a config's),
    /// the pool's KV bytes, N × T tokens × the lanes' common KV bytes per token, which the
    /// projector floors to each lane's ⌊N × T / block size⌋ (exact below 2^53 bytes).
    ///
    /// # Errors
    /// A pool of engine blocks for lanes of different block sizes whose KV bytes per token
    /// differ (or are no whole number): no one capacity is each lane's pool.
    pub fn slot_capacity(self, lanes: &[(u64, u64)]) -> Result<Capacity, MixedLanePool> {
        let Some(&(first_tokens, first_bytes)) = lanes.first() else {
            return Ok(self.capacity(0));
        };
        let (Some(tokens), true) = (
            self.tokens(),
            lanes
                .iter()
                .any(|&(block_tokens, _)| block_tokens != first_tokens),
        ) else {
            return Ok(self.capacity(first_tokens));
        };
        let per_token = |(block_tokens, block_bytes): (u64, u64)| {
            (block_tokens > 0 && block_bytes.is_multiple_of(block_tokens))
                .then(|| block_bytes / block_tokens)
        };
        let common = per_token((first_tokens, first_bytes))
            .filter(|&bytes| lanes.iter().all(|&lane| per_token(lane) == Some(bytes)));
        let pool_bytes = common
            .and_then(|bytes| tokens.checked_mul(bytes))
            .filter(|&bytes| bytes < EXACT_F64_BYTES);
        let Some(pool_bytes) = pool_bytes else {
            let other = lanes
                .iter()
                .copied()
                .find(|&lane| per_token(lane) != per_token((first_tokens, first_bytes)))
                .or_else(|| lanes.iter().copied().find(|&(t, _)| t != first_tokens))
                .unwrap_or((first_tokens, first_bytes));
            return Err(MixedLanePool {
                first: (first_tokens, first_bytes),
                other,
            });
        };
        #[expect(clippy::cast_precision_loss, reason = "below 2^53: exact")]
        Ok(Capacity::Gigabytes(
            pool_bytes as f64 / BYTES_PER_GIB as f64,
        ))
    }

    /// How the pool was given, for a summary: `2,048 × 16-token blocks (32,768 tokens)` or
    /// `40.00 GiB of KV`.
    #[must_use]
    pub fn describe(self) -> String {
        match self {
            Self::Blocks {
                gpu_blocks,
                gpu_block_size_tokens,
            } => format!(
                "{} × {gpu_block_size_tokens}-token blocks ({} tokens)",
                display::count(gpu_blocks),
                display::count(self.tokens().unwrap_or(u64::MAX))
            ),
            Self::Bytes(bytes) => {
                format!("{} of KV", display::bytes(bytes, Precision::Decimals(2)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_floored_to_analysis_blocks() {
        let pool = EnginePool::Blocks {
            gpu_blocks: 1000,
            gpu_block_size_tokens: 16,
        };
        assert_eq!(pool.capacity(16), Capacity::Blocks(1000));
        // 16,000 tokens in 256-token blocks: 62.5, floored.
        assert_eq!(pool.capacity(256), Capacity::Blocks(62));
        assert_eq!(pool.capacity(0), Capacity::Blocks(0));
    }

    /// Lanes of different block sizes each hold their own ⌊N × T / block size⌋ blocks, also
    /// when the pool is too large for a `u32`; lanes whose bytes per token differ are refused.
    #[test]
    fn each_lane_holds_its_own_share_of_a_pool_of_blocks() {
        for (gpu_blocks, gpu_block_size_tokens) in [(1000, 16), (3, 7), (123_456_789, 16)] {
            let pool = EnginePool::Blocks {
                gpu_blocks,
                gpu_block_size_tokens,
            };
            let tokens = gpu_blocks * gpu_block_size_tokens;
            for bytes_per_token in [1, 131_072, 70_272] {
                let lanes: Vec<(u64, u64)> = [16, 32, 48, 512]
                    .iter()
                    .map(|&t| (t, t * bytes_per_token))
                    .collect();
                let slot = pool.slot_capacity(&lanes).unwrap();
                for &(block_tokens, block_bytes) in &lanes {
                    assert_eq!(slot.blocks(block_bytes), Some(tokens / block_tokens));
                }
            }
            // One block size: a block count, whatever the bytes.
            assert_eq!(
                pool.slot_capacity(&[(16, 100), (16, 200)]),
                Ok(Capacity::Blocks(tokens / 16))
            );
        }
        let pool = EnginePool::Blocks {
            gpu_blocks: 10,
            gpu_block_size_tokens: 16,
        };
        let refused = pool
            .slot_capacity(&[(16, 16 << 10), (32, 32 << 11)])
            .unwrap_err();
        assert_eq!(refused.other, (32, 32 << 11));
        assert!(refused.to_string().contains("--gpu-memory"), "{refused}");
        assert!(
            pool.slot_capacity(&[(16, 100), (32, 200)]).is_err(),
            "100 / 16 is no whole number"
        );
        // A pool in bytes is each lane's ⌊SIZE / block bytes⌋ already.
        let bytes = EnginePool::Bytes(1 << 30);
        let slot = bytes
            .slot_capacity(&[(16, 1 << 20), (32, 3 << 20)])
            .unwrap();
        assert_eq!(slot.blocks(1 << 20), Some(1024));
        assert_eq!(slot.blocks(3 << 20), Some(341));
        assert_eq!(pool.slot_capacity(&[]), Ok(Capacity::Blocks(0)));
    }

    #[test]
    fn bytes_become_blocks_in_the_projector() {
        let pool = EnginePool::Bytes(3 * (1 << 20) + 5);
        assert_eq!(pool.capacity(16).blocks(1 << 20), Some(3));
        assert_eq!(pool.capacity(16).blocks(1 << 19), Some(6));
    }
}
