//! What a replay says beside its ∞ hits about the serving engine (issue 31 §1, §3): each
//! instance's LRU hits at the engine's own pool (the `engine` slot, `--gpu-blocks` or
//! `--gpu-memory`), the hits the engine observed (`cached_tokens` in its request log), LRU at
//! ∞ over the same requests, and the **effective capacity**: the smallest LRU cache whose hit
//! tokens reach the observed ones (the share of the engine's pool that served as prefix
//! cache). Fed each facts row as the replay writes it; every capacity → hits conversion is
//! the projector's.
//!
//! With [`EngineComparison::with_request_report`], every request with an observation is kept
//! as a [`RequestGap`] for `replay --observed-report` (largest gap first).

use litehit_core::engine_pool::EnginePool;
use litehit_core::facts::FactRow;
use litehit_core::projector::{self, Capacity, CapacityAxisAccumulator};

use crate::lane_index::LaneIndex;

/// The sums a comparison keeps over its rows, the same for an instance and for the total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ComparisonSums {
    /// Rows.
    pub requests: u64,
    /// Σ `input_token_len` of every row.
    pub input_tokens: u64,
    /// Σ LRU hit tokens at the `engine` slot over every row (0 without a pool).
    pub engine_hit_tokens: u64,
    /// Rows that carried the engine's observed cached tokens.
    pub observed_requests: u64,
    /// Σ `input_token_len` of those rows.
    pub observed_input_tokens: u64,
    /// Σ the engine's cached tokens of those rows.
    pub observed_hit_tokens: u64,
    /// Σ LRU hit tokens at the `engine` slot over those rows.
    pub observed_rows_engine_hit_tokens: u64,
    /// Σ LRU hit tokens at ∞ over those rows.
    pub observed_rows_infinite_hit_tokens: u64,
    /// Σ OPT hit tokens at the `engine` slot over every row (0 without a pool or without
    /// OPT rows, [`EngineComparison::add_opt_row`]).
    pub opt_engine_hit_tokens: u64,
    /// Σ OPT hit tokens at the `engine` slot over the observed rows.
    pub observed_rows_opt_engine_hit_tokens: u64,
}

impl ComparisonSums {
    fn add(&mut self, other: &Self) {
        for (sum, value) in [
            (&mut self.requests, other.requests),
            (&mut self.input_tokens, other.input_tokens),
            (&mut self.engine_hit_tokens, other.engine_hit_tokens),
            (&mut self.observed_requests, other.observed_requests),
            (&mut self.observed_input_tokens, other.observed_input_tokens),
            (&mut self.observed_hit_tokens, other.observed_hit_tokens),
            (
                &mut self.observed_rows_engine_hit_tokens,
                other.observed_rows_engine_hit_tokens,
            ),
            (
                &mut self.observed_rows_infinite_hit_tokens,
                other.observed_rows_infinite_hit_tokens,
            ),
            (&mut self.opt_engine_hit_tokens, other.opt_engine_hit_tokens),
            (
                &mut self.observed_rows_opt_engine_hit_tokens,
                other.observed_rows_opt_engine_hit_tokens,
            ),
        ] {
            *sum = sum.wrapping_add(value);
        }
    }
}

/// One instance's comparison (or the total's, [`EngineComparison::rows`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComparisonRow {
    /// The instance, or `total`.
    pub instance_id: String,
    /// The `engine` slot in the instance's blocks (the total: their Σ; `None` without a pool).
    pub engine_capacity_blocks: Option<u64>,
    /// Its sums over the rows.
    pub sums: ComparisonSums,
    /// [`InstanceComparison::effective_capacity_blocks`] (the total: the Σ over instances,
    /// when every one has one).
    pub effective_capacity_blocks: Option<u64>,
}

impl ComparisonRow {
    fn add(&mut self, other: &Self) {
        self.engine_capacity_blocks = self
            .engine_capacity_blocks
            .zip(other.engine_capacity_blocks)
            .map(|(a, b)| a.saturating_add(b));
        self.effective_capacity_blocks = self
            .effective_capacity_blocks
            .zip(other.effective_capacity_blocks)
            .map(|(a, b)| a.saturating_add(b));
        self.sums.add(&other.sums);
    }
}

/// One instance's comparison.
#[derive(Debug, Clone, Default)]
pub struct InstanceComparison {
    /// The instance (a lane of the replay).
    pub instance_id: String,
    /// Tokens per analysis block of its rows.
    pub block_size_tokens: u64,
    /// The `engine` slot in this instance's blocks (`None` without a pool).
    pub engine_capacity_blocks: Option<u64>,
    /// Its sums over the rows.
    pub sums: ComparisonSums,
    /// The LRU curve of those rows (for the effective capacity).
    observed_rows_hits: CapacityAxisAccumulator,
}

impl InstanceComparison {
    /// The smallest LRU capacity, in blocks, whose hit tokens over the observed rows reach
    /// the observed ones; `None` without observations, or when even ∞ falls short (the
    /// engine hit more than an exact LRU of the same blocks can: another block size, or
    /// another rule).
    #[must_use]
    pub fn effective_capacity_blocks(&self) -> Option<u64> {
        if self.sums.observed_requests == 0 || self.block_size_tokens == 0 {
            return None;
        }
        let target_blocks = self
            .sums
            .observed_hit_tokens
            .div_ceil(self.block_size_tokens);
        self.observed_rows_hits
            .min_capacity_for_hit_blocks(target_blocks)
    }
}

/// One request with an observation, for `replay --observed-report`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestGap {
    /// The request's id.
    pub trace_id: String,
    /// Its instance.
    pub instance_id: String,
    /// Its time.
    pub timestamp_ns: i64,
    /// Its input tokens.
    pub input_tokens: u64,
    /// The engine's cached tokens.
    pub observed_hit_tokens: u64,
    /// LRU hit tokens at the `engine` slot (`None` without a pool).
    pub engine_hit_tokens: Option<u64>,
    /// LRU hit tokens at ∞.
    pub infinite_hit_tokens: u64,
}

impl RequestGap {
    /// How many tokens fewer the engine hit than LRU at its own pool (∞ without one); 0
    /// when it hit as many or more.
    #[must_use]
    pub fn gap_tokens(&self) -> u64 {
        self.engine_hit_tokens
            .unwrap_or(self.infinite_hit_tokens)
            .saturating_sub(self.observed_hit_tokens)
    }
}

/// The comparison, row by row.
#[derive(Debug, Clone, Default)]
pub struct EngineComparison {
    pool: Option<EnginePool>,
    index: LaneIndex,
    instances: Vec<InstanceComparison>,
    /// The shared pool lane (`replay --pool`): no instance of its own, left out.
    pool_lane: Option<String>,
    /// `Some` with [`Self::with_request_report`].
    requests: Option<Vec<RequestGap>>,
    /// Whether OPT rows came ([`Self::add_opt_row`]).
    has_opt: bool,
}

impl EngineComparison {
    /// A comparison at the engine's `pool` (`None`: no `engine` slot, only the observed
    /// hits against ∞).
    #[must_use]
    pub fn new(pool: Option<EnginePool>) -> Self {
        Self {
            pool,
            ..Self::default()
        }
    }

    /// Leaves out the rows of the shared pool lane `name` (`replay --pool`): it is no
    /// engine's, and every row is already an instance's.
    #[must_use]
    pub fn without_pool_lane(mut self, name: Option<String>) -> Self {
        self.pool_lane = name;
        self
    }

    /// Keeps every observed request for [`Self::request_gaps`].
    #[must_use]
    pub fn with_request_report(mut self) -> Self {
        self.requests = Some(Vec::new());
        self
    }

    /// Adds one facts row, with the engine's cached tokens when its log said them.
    pub fn add_row(&mut self, row: &FactRow<'_>, observed_hit_tokens: Option<u64>) {
        if self.pool_lane.as_deref() == Some(row.instance_id) {
            return;
        }
        let (index, new) = self.index.index_or_insert(row.instance_id);
        if new {
            let capacity = self.pool.map(|pool| pool.capacity(row.block_size_tokens));
            self.instances.push(InstanceComparison {
                instance_id: row.instance_id.to_owned(),
                block_size_tokens: row.block_size_tokens,
                engine_capacity_blocks: capacity
                    .and_then(|capacity| capacity.blocks(row.block_bytes)),
                ..InstanceComparison::default()
            });
        }
        let instance = &mut self.instances[index];
        let tokens = |blocks: u64| blocks.saturating_mul(row.block_size_tokens);
        let engine_hit_tokens = instance
            .engine_capacity_blocks
            .map(|capacity| tokens(projector::project_blocks(row.fact, capacity)));
        instance.sums.requests += 1;
        instance.sums.input_tokens = instance.sums.input_tokens.wrapping_add(row.input_token_len);
        instance.sums.engine_hit_tokens = instance
            .sums
            .engine_hit_tokens
            .wrapping_add(engine_hit_tokens.unwrap_or(0));
        let Some(observed) = observed_hit_tokens else {
            return;
        };
        let infinite_hit_tokens = tokens(projector::project_infinite(row.fact));
        instance.sums.observed_requests += 1;
        instance.sums.observed_input_tokens = instance
            .sums
            .observed_input_tokens
            .wrapping_add(row.input_token_len);
        instance.sums.observed_hit_tokens =
            instance.sums.observed_hit_tokens.wrapping_add(observed);
        instance.sums.observed_rows_engine_hit_tokens = instance
            .sums
            .observed_rows_engine_hit_tokens
            .wrapping_add(engine_hit_tokens.unwrap_or(0));
        instance.sums.observed_rows_infinite_hit_tokens = instance
            .sums
            .observed_rows_infinite_hit_tokens
            .wrapping_add(infinite_hit_tokens);
        instance.observed_rows_hits.add_fact(row.fact);
        if let Some(requests) = &mut self.requests {
            requests.push(RequestGap {
                trace_id: row.trace_id.to_owned(),
                instance_id: row.instance_id.to_owned(),
                timestamp_ns: row.timestamp_ns,
                input_tokens: row.input_token_len,
                observed_hit_tokens: observed,
                engine_hit_tokens,
                infinite_hit_tokens,
            });
        }
    }

    /// Adds OPT's facts row of a request whose LRU row [`Self::add_row`] took before (`replay
    /// --policy lru,opt`): OPT at the `engine` slot beside LRU — how much of the gap to the
    /// observed hits an eviction policy could close at the engine's size. A row of an
    /// instance LRU never saw (OPT alone) is left out: the comparison is LRU's.
    pub fn add_opt_row(&mut self, row: &FactRow<'_>, observed_hit_tokens: Option<u64>) {
        let Some(index) = self.index.get(row.instance_id) else {
            return;
        };
        self.has_opt = true;
        let instance = &mut self.instances[index];
        let Some(capacity) = instance.engine_capacity_blocks else {
            return;
        };
        let opt_hit_tokens =
            projector::project_blocks(row.fact, capacity).saturating_mul(row.block_size_tokens);
        let sums = &mut instance.sums;
        sums.opt_engine_hit_tokens = sums.opt_engine_hit_tokens.wrapping_add(opt_hit_tokens);
        if observed_hit_tokens.is_some() {
            sums.observed_rows_opt_engine_hit_tokens = sums
                .observed_rows_opt_engine_hit_tokens
                .wrapping_add(opt_hit_tokens);
        }
    }

    /// Whether OPT rows were added ([`Self::add_opt_row`]).
    #[must_use]
    pub fn has_opt(&self) -> bool {
        self.has_opt
    }

    /// The engine's pool, as given.
    #[must_use]
    pub fn pool(&self) -> Option<EnginePool> {
        self.pool
    }

    /// The `engine` slot as a capacity of `block_size_tokens`-token blocks.
    #[must_use]
    pub fn engine_capacity(&self, block_size_tokens: u64) -> Option<Capacity> {
        self.pool.map(|pool| pool.capacity(block_size_tokens))
    }

    /// Whether any row carried an observation.
    #[must_use]
    pub fn has_observations(&self) -> bool {
        self.instances
            .iter()
            .any(|instance| instance.sums.observed_requests > 0)
    }

    /// Every instance, in byte order of `instance_id` (as `query`'s summaries).
    #[must_use]
    pub fn instances(&self) -> Vec<&InstanceComparison> {
        let mut instances: Vec<&InstanceComparison> = self.instances.iter().collect();
        instances.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
        instances
    }

    /// A row per instance (byte order of `instance_id`), then with several the `total`.
    #[must_use]
    pub fn rows(&self) -> Vec<ComparisonRow> {
        let mut rows: Vec<ComparisonRow> = self
            .instances()
            .into_iter()
            .map(|instance| ComparisonRow {
                instance_id: instance.instance_id.clone(),
                engine_capacity_blocks: instance.engine_capacity_blocks,
                sums: instance.sums,
                effective_capacity_blocks: instance.effective_capacity_blocks(),
            })
            .collect();
        if rows.len() > 1 {
            let mut total = ComparisonRow {
                instance_id: "total".to_owned(),
                engine_capacity_blocks: Some(0),
                effective_capacity_blocks: Some(0),
                ..ComparisonRow::default()
            };
            for row in &rows {
                total.add(row);
            }
            rows.push(total);
        }
        rows
    }

    /// The observed requests, largest [`RequestGap::gap_tokens`] first (ties in input
    /// order); empty without [`Self::with_request_report`].
    #[must_use]
    pub fn request_gaps(&self) -> Vec<RequestGap> {
        let mut requests = self.requests.clone().unwrap_or_default();
        // A stable sort: equal gaps stay in input order.
        requests.sort_by_key(|request| std::cmp::Reverse(request.gap_tokens()));
        requests
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use litehit_core::facts::RequestFact;

    fn row<'a>(trace_id: &'a str, fact: &'a RequestFact) -> FactRow<'a> {
        FactRow {
            trace_id,
            instance_id: "a",
            timestamp_ns: 1,
            input_token_len: 64,
            block_size_tokens: 16,
            block_bytes: 1024,
            observed_cached_tokens: None,
            fact,
        }
    }

    #[test]
    fn effective_capacity_is_the_smallest_reaching_the_observed_hits() {
        let pool = EnginePool::Blocks {
            gpu_blocks: 10,
            gpu_block_size_tokens: 16,
        };
        let mut comparison = EngineComparison::new(Some(pool)).with_request_report();
        // Block 1 hits from capacity 2, block 2 from capacity 5, block 3 from capacity 20.
        let fact = RequestFact::from_pairs(&[[2, 1], [5, 1], [20, 1]]);
        comparison.add_row(&row("r1", &fact), Some(32));
        let instance = &comparison.instances()[0];
        assert_eq!(instance.engine_capacity_blocks, Some(10));
        assert_eq!(instance.sums.engine_hit_tokens, 32);
        assert_eq!(instance.sums.observed_rows_infinite_hit_tokens, 48);
        assert_eq!(instance.effective_capacity_blocks(), Some(5));
        // 17 tokens need 2 blocks of hits as well.
        let mut more = EngineComparison::new(None);
        more.add_row(&row("r1", &fact), Some(17));
        assert_eq!(more.instances()[0].effective_capacity_blocks(), Some(5));
        // More than ∞: no capacity reaches it.
        let mut beyond = EngineComparison::new(None);
        beyond.add_row(&row("r1", &fact), Some(49));
        assert_eq!(beyond.instances()[0].effective_capacity_blocks(), None);
        assert_eq!(comparison.request_gaps()[0].gap_tokens(), 0);
    }
}
