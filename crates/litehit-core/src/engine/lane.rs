//! One lane: a `LiteHit` core, its preprocessing parameters and its cumulative counters.

use crate::engine::CachePolicies;
use crate::engine::LaneSpec;
use crate::facts::{EngineRule, RequestFact};
use crate::hitcore::{LiteHit, OutOfMemory};
use crate::opt::OptCore;
use crate::preprocess::NormalizeParams;
use crate::projector::{Capacity, CapacityAxisAccumulator};

/// A lane's replay state and the cumulative integers the online path keeps.
#[derive(Debug, Clone)]
pub struct Lane {
    spec: LaneSpec,
    normalize: NormalizeParams,
    core: LiteHit,
    /// Whether the LRU core replays (off for `--policy opt` alone).
    lru: bool,
    /// The OPT core, when OPT facts are asked for.
    opt: Option<OptCore>,
    /// `None` when the engine does not track capacity curves (offline replay: facts only).
    accumulator: Option<CapacityAxisAccumulator>,
    /// OPT's facts on the capacity axis, beside LRU's (the live monitor with OPT): `None`
    /// without OPT or without capacity curves.
    opt_accumulator: Option<CapacityAxisAccumulator>,
    infinite_hit_blocks: u64,
    requests: u64,
    input_tokens: u64,
    request_blocks: u64,
    /// The shared pool lane ([`crate::engine::EngineConfig::pool`]).
    pool: bool,
    /// This lane's own clock: the latest timestamp its core has seen (lanes are independent
    /// caches, so each expires on its own rows' time, not on other instances').
    clock_ns: Option<i64>,
    /// Rows earlier than this lane's clock, replayed at the clock (live only: offline order is
    /// enforced). With a TTL, expiry is then approximate in this lane.
    clamped_timestamps: u64,
    /// The serving engine's rule on each fact (`--engine`): applied before anything reads it.
    engine_rule: EngineRule,
    /// Rows that said the engine's own cached tokens (`cached_tokens`), their input tokens
    /// and those cached tokens: the observed hits, beside the ideal.
    observed: ObservedCounts,
}

/// A lane's observed hits: the serving engine's own counts, summed as the trace said them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ObservedCounts {
    /// Rows that carried `cached_tokens`.
    pub requests: u64,
    /// Σ `input_token_len` of those rows.
    pub input_tokens: u64,
    /// Σ their `cached_tokens`.
    pub hit_tokens: u64,
}

impl Lane {
    pub(crate) fn new(spec: LaneSpec, trace_block_size_tokens: u64, capacity_curves: bool) -> Self {
        let normalize = NormalizeParams {
            block_size_tokens: spec.block_size_tokens,
            enable_prefix_hash: spec.enable_prefix_hash,
            trace_block_size_tokens,
        };
        Self {
            core: LiteHit::with_ttl_ns(spec.ttl_ns),
            lru: true,
            opt: None,
            spec,
            normalize,
            accumulator: capacity_curves.then(CapacityAxisAccumulator::new),
            opt_accumulator: None,
            infinite_hit_blocks: 0,
            requests: 0,
            input_tokens: 0,
            request_blocks: 0,
            pool: false,
            clock_ns: None,
            clamped_timestamps: 0,
            engine_rule: EngineRule::Ideal,
            observed: ObservedCounts::default(),
        }
    }

    /// Counts one replayed row that said the engine's cached tokens (wrapping, as the
    /// input-token sums the engine refuses before they could).
    pub(crate) fn count_observed(&mut self, input_token_len: u64, cached_tokens: u64) {
        self.observed.requests += 1;
        self.observed.input_tokens = self.observed.input_tokens.wrapping_add(input_token_len);
        self.observed.hit_tokens = self.observed.hit_tokens.wrapping_add(cached_tokens);
    }

    /// The engine's own observed hits on this lane's rows (see [`ObservedCounts`]).
    #[must_use]
    pub fn observed(&self) -> ObservedCounts {
        self.observed
    }

    pub(crate) fn set_engine_rule(&mut self, rule: EngineRule) {
        self.engine_rule = rule;
    }

    /// The time this lane's core replays a row of `timestamp_ns` at: the row's own, or this
    /// lane's clock when the row is earlier (clamped and counted: [`Self::clamped_timestamps`]).
    pub(crate) fn advance_clock(&mut self, timestamp_ns: i64) -> i64 {
        match self.clock_ns {
            Some(clock_ns) if timestamp_ns < clock_ns => {
                self.clamped_timestamps += 1;
                clock_ns
            }
            _ => {
                self.clock_ns = Some(timestamp_ns);
                timestamp_ns
            }
        }
    }

    /// Rows of this lane that came earlier than its latest and were replayed at the latest:
    /// with a TTL, this lane's expiry (and so its hits) is approximate while this is not 0.
    /// For the pool lane, which takes every instance's rows, it counts the rows not in global
    /// time order.
    #[must_use]
    pub fn clamped_timestamps(&self) -> u64 {
        self.clamped_timestamps
    }

    pub(crate) fn mark_pool(&mut self) {
        self.pool = true;
    }

    /// Whether this is the shared pool lane, fed by every row (not an instance of its own:
    /// fleet totals leave it out).
    #[must_use]
    pub fn is_pool(&self) -> bool {
        self.pool
    }

    /// Sets the core's memory horizon (see [`LiteHit::with_memory_horizon_blocks`]), converted
    /// to blocks with this lane's `block_bytes`; infinite means none.
    pub(crate) fn set_memory_horizon(&mut self, horizon: Capacity) {
        let blocks = horizon.blocks(self.spec.block_bytes);
        self.core = std::mem::take(&mut self.core).with_memory_horizon_blocks(blocks);
    }

    /// The memory horizon in blocks, if one is set: results at larger capacities (and the ∞
    /// column) are lower bounds.
    #[must_use]
    pub fn memory_horizon_blocks(&self) -> Option<u64> {
        self.core.memory_horizon_blocks()
    }

    /// Chooses the policies this lane replays (before its first request).
    pub(crate) fn set_cache_policies(&mut self, policies: CachePolicies) {
        self.lru = policies.contains(crate::engine::CachePolicy::Lru);
        self.opt = policies
            .contains(crate::engine::CachePolicy::Opt)
            .then(OptCore::new);
        self.opt_accumulator =
            (self.opt.is_some() && self.accumulator.is_some()).then(CapacityAxisAccumulator::new);
    }

    /// The lane's OPT core, when it computes OPT facts.
    #[must_use]
    pub fn opt_core(&self) -> Option<&OptCore> {
        self.opt.as_ref()
    }

    pub(crate) fn drop_capacity_curve(&mut self) {
        self.accumulator = None;
        self.opt_accumulator = None;
    }

    pub(crate) fn normalize_params(&self) -> NormalizeParams {
        self.normalize
    }

    /// Hints the request this lane replays after the next [`Self::replay`] (see
    /// [`LiteHit::prefetch`]); results never change.
    pub(crate) fn prefetch_next(&mut self, next_block_keys: &[i64]) {
        self.core.prefetch(next_block_keys);
    }

    /// Replays one normalized request and folds its fact into the counters: `fact` gets the
    /// LRU curve (empty when LRU is off), `opt_fact` the OPT curve (empty when OPT is off).
    /// `block_keys` are the prompt's `prompt_blocks` keys, then its output's (`--cache-output`):
    /// the cores replay them as one request, so the output's blocks enter the cache with the
    /// prompt's (the tail least recent, as vLLM frees a finished request's blocks), and the
    /// facts keep the prompt's blocks only. A curve's first K blocks depend only on the state
    /// before the request, so they are the prompt's own curve.
    /// Out of memory, no counter changes (the core's state may be one request ahead of the
    /// accumulator).
    pub(crate) fn replay(
        &mut self,
        block_keys: &[i64],
        prompt_blocks: usize,
        input_token_len: u64,
        timestamp_ns: i64,
        fact: &mut RequestFact,
        opt_fact: &mut RequestFact,
    ) -> Result<(), OutOfMemory> {
        fact.hit_curve.clear();
        opt_fact.hit_curve.clear();
        if self.lru {
            self.core
                .try_process_request_into(block_keys, timestamp_ns, fact)?;
        }
        if let Some(opt) = &mut self.opt {
            opt.try_process_request_into(block_keys, timestamp_ns, opt_fact)?;
        }
        if prompt_blocks < block_keys.len() {
            fact.keep_first_blocks(prompt_blocks as u64);
            opt_fact.keep_first_blocks(prompt_blocks as u64);
        }
        // The serving engine's rule caps each policy's fact alike.
        let block_size_tokens = self.spec.block_size_tokens;
        self.engine_rule
            .apply(fact, input_token_len, block_size_tokens);
        self.engine_rule
            .apply(opt_fact, input_token_len, block_size_tokens);
        // OPT(∞) = LRU(∞): the ∞ column reads whichever curve there is.
        let infinite_fact = if self.lru { &*fact } else { &*opt_fact };
        // Both accumulators grow (fallibly) before either changes.
        for (accumulator, fact) in [
            (&mut self.accumulator, &*fact),
            (&mut self.opt_accumulator, &*opt_fact),
        ] {
            if let Some(accumulator) = accumulator {
                accumulator
                    .try_reserve_for(fact)
                    .map_err(|failed| OutOfMemory {
                        unique_blocks: self.core.tracked_keys() as u64,
                        needed_bytes: (self.core.memory_usage_bytes()
                            + accumulator.memory_usage_bytes())
                            as u64
                            + failed.bytes,
                    })?;
            }
        }
        if let Some(accumulator) = &mut self.accumulator {
            accumulator.add_fact(fact);
        }
        if let Some(opt_accumulator) = &mut self.opt_accumulator {
            opt_accumulator.add_fact(opt_fact);
        }
        self.infinite_hit_blocks += crate::projector::project_infinite(infinite_fact);
        self.requests += 1;
        self.input_tokens += input_token_len;
        self.request_blocks += prompt_blocks as u64;
        Ok(())
    }

    pub(crate) fn advance_time(&mut self, now_ns: i64) {
        self.core.advance_time(now_ns);
    }

    /// The parameters this lane was created with; facts rows copy its block size and bytes.
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

    /// The capacity-axis accumulator of every fact so far; `None` when the engine runs
    /// without capacity curves ([`crate::engine::Engine::without_capacity_curves`]).
    #[must_use]
    pub fn accumulator(&self) -> Option<&CapacityAxisAccumulator> {
        self.accumulator.as_ref()
    }

    /// OPT's capacity-axis accumulator (the live monitor with OPT); `None` without OPT or
    /// without capacity curves.
    #[must_use]
    pub fn opt_accumulator(&self) -> Option<&CapacityAxisAccumulator> {
        self.opt_accumulator.as_ref()
    }

    /// Cumulative hit blocks with unlimited capacity (always tracked).
    #[must_use]
    pub fn infinite_hit_blocks(&self) -> u64 {
        self.infinite_hit_blocks
    }

    /// The lane's capacity-free LRU core, read for the live monitor's unique-block, expiry and
    /// memory figures.
    #[must_use]
    pub fn core(&self) -> &LiteHit {
        &self.core
    }

    /// Cumulative hit blocks since the start of the trace at `capacity` (any capacity, also one
    /// first asked about now), converted with this lane's `block_bytes` by the projector.
    /// `None` for a finite capacity when capacity curves are off.
    #[must_use]
    pub fn hit_blocks_at(&self, capacity: Capacity) -> Option<u64> {
        match capacity.blocks(self.spec.block_bytes) {
            Some(capacity_blocks) => self
                .accumulator
                .as_ref()
                .map(|accumulator| accumulator.hit_blocks_at(capacity_blocks)),
            None => Some(self.infinite_hit_blocks),
        }
    }

    /// Cumulative hit tokens at `capacity` (hit blocks × analysis block size).
    #[must_use]
    pub fn hit_tokens_at(&self, capacity: Capacity) -> Option<u64> {
        self.hit_blocks_at(capacity)
            .map(|blocks| blocks * self.spec.block_size_tokens)
    }

    /// Distinct keys resident at unlimited capacity: the LRU core's, or the OPT core's when
    /// LRU is off.
    #[must_use]
    pub fn unique_blocks(&self) -> u64 {
        match (&self.opt, self.lru) {
            (Some(opt), false) => opt.current_unique_blocks(),
            _ => self.core.current_unique_blocks(),
        }
    }

    /// Heap bytes of the cores that replay (LRU, OPT or both), without the accumulator.
    #[must_use]
    pub fn core_memory_usage_bytes(&self) -> usize {
        let lru = if self.lru {
            self.core.memory_usage_bytes()
        } else {
            0
        };
        lru + self.opt.as_ref().map_or(0, OptCore::memory_usage_bytes)
    }

    /// Keys the lane's core holds (its unique blocks, less those a horizon or TTL forgot).
    #[must_use]
    pub fn tracked_keys(&self) -> u64 {
        self.core.tracked_keys() as u64
    }

    /// Heap bytes of the core states and the accumulator.
    #[must_use]
    pub fn memory_usage_bytes(&self) -> usize {
        self.core.memory_usage_bytes()
            + self.opt.as_ref().map_or(0, OptCore::memory_usage_bytes)
            + self
                .accumulator
                .as_ref()
                .map_or(0, CapacityAxisAccumulator::memory_usage_bytes)
            + self
                .opt_accumulator
                .as_ref()
                .map_or(0, CapacityAxisAccumulator::memory_usage_bytes)
    }
}
