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

    #[test]
    fn bytes_become_blocks_in_the_projector() {
        let pool = EnginePool::Bytes(3 * (1 << 20) + 5);
        assert_eq!(pool.capacity(16).blocks(1 << 20), Some(3));
        assert_eq!(pool.capacity(16).blocks(1 << 19), Some(6));
    }
}
