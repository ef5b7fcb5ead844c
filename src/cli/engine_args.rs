//! `--engine ideal|vllm|sglang`: whose prefix-cache rules the facts follow, and the engine's
//! own KV pool (`--gpu-blocks`, `--gpu-memory`), the `engine` slot. The rules and the slot are
//! the core's (`litehit_core::facts::EngineRule`, `litehit_core::engine_pool`); this file only
//! reads what was typed.

use litehit_core::engine_pool::{DEFAULT_GPU_BLOCK_SIZE_TOKENS, EnginePool};
use litehit_core::facts::EngineRule;

/// The engine's KV pool of `replay`, `watch` and `demo`: a capacity slot named `engine`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::Args)]
pub struct EnginePoolFlags {
    /// The serving engine's KV pool in its own blocks (vLLM's num_gpu_blocks, in its startup
    /// log or vllm:cache_config_info): a capacity slot named `engine`, shown first, of ⌊N ×
    /// --gpu-block-size / block size⌋ analysis blocks. Not with --gpu-memory
    #[arg(long, value_name = "N", conflicts_with = "gpu_memory",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub gpu_blocks: Option<u64>,

    /// With --gpu-blocks: the engine's block size in tokens [default: 16]
    #[arg(long, value_name = "TOKENS", requires = "gpu_blocks",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub gpu_block_size: Option<u64>,

    /// The serving engine's KV pool in bytes (`34359738368`, `32GiB`): a capacity slot named
    /// `engine`, shown first, of ⌊SIZE / block bytes⌋ analysis blocks
    #[arg(long, value_name = "SIZE", value_parser = litehit_core::grammar::parse_byte_size)]
    pub gpu_memory: Option<u64>,
}

impl EnginePoolFlags {
    /// The pool given, if any.
    #[must_use]
    pub fn pool(&self) -> Option<EnginePool> {
        match (self.gpu_blocks, self.gpu_memory) {
            (Some(gpu_blocks), _) => Some(EnginePool::Blocks {
                gpu_blocks,
                gpu_block_size_tokens: self.gpu_block_size.unwrap_or(DEFAULT_GPU_BLOCK_SIZE_TOKENS),
            }),
            (None, Some(bytes)) => Some(EnginePool::Bytes(bytes)),
            (None, None) => None,
        }
    }
}

/// `--engine`.
pub fn parse_engine_rule(text: &str) -> Result<EngineRule, String> {
    EngineRule::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = EngineRule::ALL.iter().map(|rule| rule.name()).collect();
        format!("expected {}", names.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_names() {
        assert_eq!(parse_engine_rule("vllm"), Ok(EngineRule::Vllm));
        assert!(
            parse_engine_rule("trt")
                .unwrap_err()
                .contains("ideal, vllm, sglang")
        );
    }
}
