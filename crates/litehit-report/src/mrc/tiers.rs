//! What `mrc --tiers` adds to the report: the split of each instance's hits among cache
//! tiers.
//!
//! Tier hits come from `projector::tiers` over each instance's accumulator. The total gives
//! every instance its own tiers of the same sizes, as the rest of the report does; the shared
//! pool lane (`replay --pool`) has its tiers at N × each size, as `query`'s pool line.

use serde::Serialize;

use super::curves::MrcCurves;
use crate::query::TierPlan;
use crate::ratio;
use litehit_core::projector::tiers::{TierMode, accumulated_tier_hit_blocks, tier_bands};

/// One row of the tier split: served tokens per tier, their shares of the input tokens and
/// the miss share.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TierRow {
    /// `None` for the total.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// Σ `input_token_len`.
    pub total_input_tokens: u64,
    /// Per tier: hit tokens it served.
    pub tier_hit_tokens: Vec<u64>,
    /// Per tier: its share of the input tokens.
    pub tier_shares: Vec<f64>,
    /// The share no tier served.
    pub miss_share: f64,
}

impl TierRow {
    fn new(
        instance_id: Option<String>,
        total_input_tokens: u64,
        tier_hit_tokens: Vec<u64>,
    ) -> Self {
        let served = tier_hit_tokens
            .iter()
            .fold(0_u64, |sum, &tokens| sum.wrapping_add(tokens));
        Self {
            instance_id,
            total_input_tokens,
            tier_shares: tier_hit_tokens
                .iter()
                .map(|&tokens| ratio(tokens, total_input_tokens))
                .collect(),
            miss_share: ratio(
                total_input_tokens.saturating_sub(served),
                total_input_tokens,
            ),
            tier_hit_tokens,
        }
    }
}

/// `mrc --tiers`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TierReport {
    /// `exclusive` or `inclusive`.
    pub tier_mode: &'static str,
    /// Per tier, as typed.
    pub tier_names: Vec<String>,
    /// Per tier: its size as typed.
    pub tier_sizes: Vec<String>,
    /// Per instance, in byte order of `instance_id`.
    pub instances: Vec<TierRow>,
    /// Every instance with its own tiers of the same sizes.
    pub total: TierRow,
    /// The shared pool lane's split, its tiers at N × each size (only with a pool lane).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolTierRow>,
}

/// The pool's tier split: one LRU hierarchy shared by the N instances, each tier N × its
/// size (the instances' tiers of that size together).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PoolTierRow {
    /// N: the instances the pool is shared by.
    pub shared_by: u64,
    /// Per tier: N × its size in the pool's blocks (`null`: unlimited).
    pub pool_tier_capacity_blocks: Vec<Option<u64>>,
    #[serde(flatten)]
    /// The pool's split.
    pub row: TierRow,
}

/// The tier split of every instance of `curves`, and of the total.
#[must_use]
pub fn tier_report(curves: &MrcCurves, plan: &TierPlan) -> TierReport {
    let mut total_tokens = vec![0_u64; plan.capacities.len()];
    let mut total_input = 0_u64;
    let instances = curves
        .instances
        .iter()
        .map(|curve| {
            let bands = tier_bands(&plan.capacities, curve.block_bytes, plan.mode);
            let tokens: Vec<u64> = accumulated_tier_hit_blocks(&curve.hits, &bands)
                .iter()
                .map(|blocks| blocks.wrapping_mul(curve.block_size_tokens))
                .collect();
            for (sum, t) in total_tokens.iter_mut().zip(&tokens) {
                *sum = sum.wrapping_add(*t);
            }
            total_input = total_input.wrapping_add(curve.total_input_tokens);
            TierRow::new(
                Some(curve.instance_id.clone()),
                curve.total_input_tokens,
                tokens,
            )
        })
        .collect();
    let pool = curves.pool.as_ref().map(|curve| {
        let shared_by = curves.instances.len() as u64;
        let bands = plan.pooled_bands(curve.block_bytes, shared_by);
        let tokens = accumulated_tier_hit_blocks(&curve.hits, &bands)
            .iter()
            .map(|blocks| blocks.wrapping_mul(curve.block_size_tokens))
            .collect();
        PoolTierRow {
            shared_by,
            pool_tier_capacity_blocks: plan.pooled_capacity_blocks(curve.block_bytes, shared_by),
            row: TierRow::new(
                Some(curve.instance_id.clone()),
                curve.total_input_tokens,
                tokens,
            ),
        }
    });
    TierReport {
        tier_mode: match plan.mode {
            TierMode::Exclusive => "exclusive",
            TierMode::Inclusive => "inclusive",
        },
        tier_names: plan.names.clone(),
        tier_sizes: plan.sizes_text.clone(),
        instances,
        total: TierRow::new(None, total_input, total_tokens),
        pool,
    }
}
