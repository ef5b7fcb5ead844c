//! The serving engine's own rule on top of the ideal LRU (`--engine`): a transform of each
//! fact, applied where the lane builds it, so every answer (facts file, live slots, ∞) still
//! comes from the one projector.
//!
//! vLLM and SGLang must compute at least the prompt's last token (its logits give the first
//! output token), so a prompt never hits its last token: at most ⌊(input_len − 1) / block
//! size⌋ blocks hit, whatever the capacity. Where this is in their code:
//! - vLLM: `vllm/v1/core/kv_cache_manager.py`, `KVCacheManager.get_computed_blocks`, sets
//!   `max_cache_hit_length = request.num_tokens - 1` before
//!   `coordinator.find_longest_cache_hit`, whose full-attention search
//!   (`vllm/v1/core/single_type_kv_cache_manager.py`,
//!   `FullAttentionManager.find_longest_cache_hit`) looks at no more than
//!   `max_length // block_size` blocks.
//! - SGLang (sgl-project/sglang at fd3907ee4618e96b73ee94d9a836db78efb5d046):
//!   `python/sglang/srt/managers/schedule_batch.py`, `Req.init_next_round_input` sets
//!   `max_prefix_len = input_len - 1` ("the matched length is at most 1 less than the input
//!   length") and matches the radix cache on `self.fill_ids[:max_prefix_len]`; with a page
//!   size above 1 the radix cache matches whole pages only. (Older versions did the same in
//!   `Req.adjust_max_prefix_ids`.)
//!
//! The hit curve's thresholds rise along the prompt, so capping the hits at K blocks at every
//! capacity is keeping the curve's first K blocks. Only a prompt whose length is a whole
//! number of blocks loses one: otherwise ⌊(input_len − 1) / B⌋ = ⌊input_len / B⌋ already. The
//! cache state is the ideal LRU's (every block of the prompt is made most recent, the last
//! one included), which is what an engine does when it keeps its recomputed copy of the block.

use super::RequestFact;

/// Which engine's rules the facts follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineRule {
    /// The ideal prefix cache: every cached prefix block hits (upstream-compatible).
    #[default]
    Ideal,
    /// vLLM: the last prompt token is always computed.
    Vllm,
    /// SGLang: the last prompt token is always computed.
    Sglang,
}

impl EngineRule {
    /// Every rule, in the order the flag's help lists them.
    pub const ALL: [Self; 3] = [Self::Ideal, Self::Vllm, Self::Sglang];

    /// The flag's spelling.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Ideal => "ideal",
            Self::Vllm => "vllm",
            Self::Sglang => "sglang",
        }
    }

    /// `--engine NAME`.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|rule| rule.name() == name)
    }

    /// The most blocks a prompt of `input_token_len` tokens may hit, `None` for no limit.
    #[must_use]
    pub fn max_hit_blocks(self, input_token_len: u64, block_size_tokens: u64) -> Option<u64> {
        match self {
            Self::Ideal => None,
            Self::Vllm | Self::Sglang => {
                Some(input_token_len.saturating_sub(1) / block_size_tokens.max(1))
            }
        }
    }

    /// Caps `fact` at [`Self::max_hit_blocks`]: the curve keeps its first blocks.
    pub fn apply(self, fact: &mut RequestFact, input_token_len: u64, block_size_tokens: u64) {
        if let Some(blocks) = self.max_hit_blocks(input_token_len, block_size_tokens) {
            fact.keep_first_blocks(blocks);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_token_is_never_a_hit() {
        // 4 blocks of 16 tokens hit at 3..=4, 9..=10: 64 tokens may hit 3 blocks, 65 all 4.
        let fact = RequestFact::from_pairs(&[[3, 2], [9, 2]]);
        let capped = |rule: EngineRule, input_len| {
            let mut fact = fact.clone();
            rule.apply(&mut fact, input_len, 16);
            fact.to_pairs()
        };
        assert_eq!(capped(EngineRule::Vllm, 64), [[3, 2], [9, 1]]);
        assert_eq!(capped(EngineRule::Sglang, 64), [[3, 2], [9, 1]]);
        assert_eq!(capped(EngineRule::Vllm, 65), [[3, 2], [9, 2]]);
        assert_eq!(capped(EngineRule::Vllm, 48), [[3, 2]]);
        assert_eq!(capped(EngineRule::Vllm, 32), [[3, 1]]);
        assert_eq!(capped(EngineRule::Vllm, 16), Vec::<[u64; 2]>::new());
        assert_eq!(capped(EngineRule::Vllm, 0), Vec::<[u64; 2]>::new());
        assert_eq!(capped(EngineRule::Ideal, 64), [[3, 2], [9, 2]]);
        for rule in EngineRule::ALL {
            assert_eq!(EngineRule::from_name(rule.name()), Some(rule));
        }
    }
}
