//! The shared pool lane at the fleet's total capacity: its rows on the capacity axis while
//! reading (N, the instances besides it, is known only at the end), then its hits at N × each
//! slot and tier, through the projector's pooled capacities.

use litehit_core::facts::FactRecord;
use litehit_core::projector::tiers::accumulated_tier_hit_blocks;
use litehit_core::projector::{self, Capacity};

use super::QueryError;
use super::plan::TierPlan;
use super::totals::{OptTotals, SlotTotals};

/// The shared pool at the fleet's total capacity, beside the instances' own caches: with N
/// instances (every instance id but the pool's), slot C compares the pool at N × C with the
/// N caches of C each (the overall line, which leaves the pool out).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolSummary {
    /// The pool lane's `instance_id`.
    pub name: String,
    /// N: the instances besides the pool.
    pub instances: u64,
    /// Per slot: the pool's capacity in blocks, N × the slot's blocks; `None` = unlimited.
    pub pool_capacity_blocks: Vec<Option<u64>>,
    /// The pool's requests, input tokens and hits at `pool_capacity_blocks`; with `--tiers`,
    /// the hits each tier of N × its size served.
    pub pool: SlotTotals,
    /// Per tier (with `--tiers`): N × the tier's size in blocks; `None` = unlimited.
    pub pool_tier_capacity_blocks: Vec<Option<u64>>,
}

/// The pool lane's facts on the capacity axis: N is known only at the end, and the
/// accumulator answers N × C then, exactly, for every row seen.
#[derive(Debug, Clone)]
pub(crate) struct PoolTotals {
    /// The lane accumulated.
    pub(crate) name: String,
    accumulator: projector::CapacityAxisAccumulator,
    requests: u64,
    input_tokens: u64,
    /// `(block_size_tokens, block_bytes)` of the pool's rows, once one was seen.
    geometry: Option<(u64, u64)>,
    /// A second `block_bytes` among the pool's rows (an error at the end).
    other_block_bytes: Option<u64>,
    /// OPT's facts of the same rows (`query --opt`): the pool's OPT at N × C.
    opt: Option<projector::CapacityAxisAccumulator>,
}

impl PoolTotals {
    pub(crate) fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            accumulator: projector::CapacityAxisAccumulator::new(),
            requests: 0,
            input_tokens: 0,
            geometry: None,
            other_block_bytes: None,
            opt: None,
        }
    }

    /// Also accumulates OPT's rows ([`Self::add`] with the OPT row of each).
    pub(crate) fn with_opt(mut self) -> Self {
        self.opt = Some(projector::CapacityAxisAccumulator::new());
        self
    }

    /// Adds a row of the pool lane, with OPT's row of the same request when OPT facts are
    /// read beside.
    pub(crate) fn add(&mut self, record: &FactRecord, opt: Option<&FactRecord>) {
        if let (Some(accumulator), Some(opt)) = (&mut self.opt, opt) {
            accumulator.add_fact(&opt.fact);
        }
        match self.geometry {
            None => self.geometry = Some((record.block_size_tokens, record.block_bytes)),
            Some((_, block_bytes)) if block_bytes != record.block_bytes => {
                self.other_block_bytes.get_or_insert(record.block_bytes);
            }
            Some(_) => {}
        }
        self.accumulator.add_fact(&record.fact);
        self.requests += 1;
        self.input_tokens = self.input_tokens.wrapping_add(record.input_token_len);
    }

    /// The comparison at `capacities`, with `instance_count` instance ids with accounted
    /// rows (the pool's among them); `None` when the pool has no accounted rows.
    pub(crate) fn summary(
        &self,
        capacities: &[Capacity],
        tiers: Option<&TierPlan>,
        instance_count: usize,
    ) -> Result<Option<PoolSummary>, QueryError> {
        let name = &self.name;
        let Some((block_size_tokens, block_bytes)) = self.geometry else {
            return Ok(None);
        };
        if let Some(other) = self.other_block_bytes {
            return Err(QueryError::PoolGeometry {
                name: name.clone(),
                first: block_bytes,
                other,
            });
        }
        let instances = instance_count as u64 - 1;
        let pool_capacity_blocks: Vec<Option<u64>> = capacities
            .iter()
            .map(|&capacity| projector::pooled_capacity_blocks(capacity, block_bytes, instances))
            .collect();
        let total_hit_blocks: Vec<u64> = pool_capacity_blocks
            .iter()
            .map(|capacity| match *capacity {
                Some(blocks) => self.accumulator.hit_blocks_at(blocks),
                None => self.accumulator.infinite_hit_blocks(),
            })
            .collect();
        let tokens = |blocks: &[u64]| -> Vec<u64> {
            blocks
                .iter()
                .map(|&blocks| blocks.wrapping_mul(block_size_tokens))
                .collect()
        };
        let total_hit_tokens = tokens(&total_hit_blocks);
        let opt = self.opt.as_ref().map(|accumulator| OptTotals {
            hit_tokens: tokens(
                &pool_capacity_blocks
                    .iter()
                    .map(|capacity| match *capacity {
                        Some(blocks) => accumulator.hit_blocks_at(blocks),
                        None => accumulator.infinite_hit_blocks(),
                    })
                    .collect::<Vec<u64>>(),
            ),
            infinite_hit_tokens: accumulator
                .infinite_hit_blocks()
                .wrapping_mul(block_size_tokens),
        });
        // The tiers at N × each size: bands of the pooled sizes on the pool's own axis.
        let pool_tier_capacity_blocks = tiers.map_or_else(Vec::new, |plan| {
            plan.pooled_capacity_blocks(block_bytes, instances)
        });
        let tier_hit_blocks = tiers.map_or_else(Vec::new, |plan| {
            accumulated_tier_hit_blocks(
                &self.accumulator,
                &plan.pooled_bands(block_bytes, instances),
            )
        });
        let tier_hit_tokens = tokens(&tier_hit_blocks);
        Ok(Some(PoolSummary {
            name: name.clone(),
            instances,
            pool_capacity_blocks,
            pool: SlotTotals {
                requests: self.requests,
                total_input_tokens: self.input_tokens,
                total_hit_blocks,
                total_hit_tokens,
                tier_hit_blocks,
                tier_hit_tokens,
                opt,
            },
            pool_tier_capacity_blocks,
        }))
    }
}
