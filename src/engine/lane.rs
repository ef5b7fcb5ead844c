//! One lane: a `LiteHit` core, its preprocessing parameters and its cumulative counters.

use crate::engine::LaneSpec;
use crate::facts::RequestFact;
use crate::hitcore::LiteHit;
use crate::preprocess::NormalizeParams;
use crate::projector::{Capacity, CapacityAxisAccumulator};

/// A lane's replay state and the cumulative integers the online path keeps.
#[derive(Debug, Clone)]
pub struct Lane {
    spec: LaneSpec,
    normalize: NormalizeParams,
    core: LiteHit,
    accumulator: CapacityAxisAccumulator,
    requests: u64,
    input_tokens: u64,
    request_blocks: u64,
}

impl Lane {
    pub(crate) fn new(spec: LaneSpec, trace_block_size_tokens: u64) -> Self {
        let normalize = NormalizeParams {
            block_size_tokens: spec.block_size_tokens,
            enable_prefix_hash: spec.enable_prefix_hash,
            trace_block_size_tokens,
        };
        Self {
            core: LiteHit::with_ttl_ns(spec.ttl_ns),
            spec,
            normalize,
            accumulator: CapacityAxisAccumulator::new(),
            requests: 0,
            input_tokens: 0,
            request_blocks: 0,
        }
    }

    pub(crate) fn normalize_params(&self) -> NormalizeParams {
        self.normalize
    }

    /// Replays one normalized request and folds its fact into the counters.
    pub(crate) fn replay(
        &mut self,
        block_keys: &[i64],
        input_token_len: u64,
        timestamp_ns: i64,
        fact: &mut RequestFact,
    ) {
        self.core
            .process_request_into(block_keys, timestamp_ns, fact);
        self.accumulator.add_fact(fact);
        self.requests += 1;
        self.input_tokens += input_token_len;
        self.request_blocks += block_keys.len() as u64;
    }

    pub(crate) fn advance_time(&mut self, now_ns: i64) {
        self.core.advance_time(now_ns);
    }

    #[must_use]
    pub fn spec(&self) -> &LaneSpec {
        &self.spec
    }

    /// Requests replayed (facts produced).
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Σ input tokens of those requests: the hit-rate denominator.
    #[must_use]
    pub fn input_tokens(&self) -> u64 {
        self.input_tokens
    }

    /// Block accesses replayed (complete analysis blocks).
    #[must_use]
    pub fn request_blocks(&self) -> u64 {
        self.request_blocks
    }

    #[must_use]
    pub fn accumulator(&self) -> &CapacityAxisAccumulator {
        &self.accumulator
    }

    #[must_use]
    pub fn core(&self) -> &LiteHit {
        &self.core
    }

    /// Cumulative hit blocks since the start of the trace at `capacity` (any capacity, also one
    /// first asked about now), converted with this lane's `block_bytes` by the projector.
    #[must_use]
    pub fn hit_blocks_at(&self, capacity: Capacity) -> u64 {
        match capacity.blocks(self.spec.block_bytes) {
            Some(capacity_blocks) => self.accumulator.hit_blocks_at(capacity_blocks),
            None => self.accumulator.infinite_hit_blocks(),
        }
    }

    /// Cumulative hit tokens at `capacity` (hit blocks × analysis block size).
    #[must_use]
    pub fn hit_tokens_at(&self, capacity: Capacity) -> u64 {
        self.hit_blocks_at(capacity) * self.spec.block_size_tokens
    }

    /// Heap bytes of the core state and the accumulator.
    #[must_use]
    pub fn memory_usage_bytes(&self) -> usize {
        self.core.memory_usage_bytes() + self.accumulator.memory_usage_bytes()
    }
}
