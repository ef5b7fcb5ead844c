//! The quota planner of `litehit query --quota-total`: the per-tenant quotas of one cache
//! that maximise the hit tokens of the isolated caches (an LRU per tenant, as `LMCache`'s
//! isolated LRU or Mooncake's tenant quotas), beside what one shared cache of the same total
//! (the pool lane) and an equal split give.
//!
//! Each lane of the facts is a tenant (`replay --lane-by tenant`); the pool lane, when the
//! facts have one, is the shared cache. Quotas live on a grid of `step` blocks (default: the
//! total / 512, at least one block); every tenant's hits at every grid point come from its
//! exact curve (`CapacityAxisAccumulator`, the projector), and [`best_split`] picks the split
//! exactly. Sizes become blocks only through the projector (`Capacity::blocks`), at the
//! tenants' one `block_bytes`.

mod split;

use litehit_core::projector::{Capacity, CapacityAxisAccumulator};
use serde::Serialize;

use crate::mrc::{InstanceCurve, MrcCurves};
use crate::ratio;

pub use split::{GridHits, Split, best_split};

/// Grid steps in the total when no `--quota-step` is given.
pub const DEFAULT_GRID_STEPS: u64 = 512;

/// What the planner is asked.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaRequest {
    /// The one cache to split (`--quota-total`).
    pub total: Capacity,
    /// Tenants' smallest quotas (`--quota-floor TENANT=SIZE`), rounded up to the grid.
    pub floors: Vec<(String, Capacity)>,
    /// The grid (`--quota-step`); `None`: the total / [`DEFAULT_GRID_STEPS`], at least a block.
    pub step: Option<Capacity>,
}

/// Why no split could be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuotaError {
    /// No tenant lane in the facts.
    #[error("the facts have no lane to give a quota to")]
    NoTenants,
    /// An unlimited total or step: there is nothing to split.
    #[error("--quota-{flag} must be a finite size (e.g. 80GiB or 3000b), not unlimited")]
    Unlimited {
        /// `total`, `step` or `floor`.
        flag: &'static str,
    },
    /// Tenants with different `block_bytes`: one size is a different number of blocks each.
    #[error(
        "the tenants' lanes have different block_bytes ({first} and {other}): a quota plan needs one block size"
    )]
    MixedBlockBytes {
        /// The first lane's `block_bytes`.
        first: u64,
        /// Another lane's.
        other: u64,
    },
    /// A step of zero blocks.
    #[error("--quota-step is less than one block ({block_bytes} bytes)")]
    StepBelowOneBlock {
        /// Bytes per block of the tenants.
        block_bytes: u64,
    },
    /// A total of less than one block: nothing to split.
    #[error("--quota-total is less than one block ({block_bytes} bytes): nothing to split")]
    TotalBelowOneBlock {
        /// Bytes per block of the tenants.
        block_bytes: u64,
    },
    /// A step larger than the total: the only grid point would be 0 for every tenant.
    #[error(
        "--quota-step of {step_blocks} blocks is larger than --quota-total's {total_blocks}: every quota would be 0 (take a smaller step)"
    )]
    StepExceedsTotal {
        /// The step in blocks.
        step_blocks: u64,
        /// The total in blocks.
        total_blocks: u64,
    },
    /// A floor for a lane that is not in the facts.
    #[error("--quota-floor {tenant}: no such lane in the facts (lanes: {lanes})")]
    UnknownTenant {
        /// The name as typed.
        tenant: String,
        /// The lanes there are.
        lanes: String,
    },
    /// The floors need more than the total.
    #[error(
        "the --quota-floor sizes need {floor_blocks} blocks (on the grid of {step_blocks}), more than --quota-total's {total_blocks}"
    )]
    FloorsExceedTotal {
        /// Σ floors, rounded up to the grid, in blocks.
        floor_blocks: u64,
        /// The grid step in blocks.
        step_blocks: u64,
        /// The total in blocks.
        total_blocks: u64,
    },
    /// The grid would need more steps than memory for the table allows.
    #[error(
        "--quota-step gives {steps} grid steps in the total; at most {max} (take a larger step)"
    )]
    TooManySteps {
        /// Steps asked.
        steps: u64,
        /// The most the planner takes.
        max: u64,
    },
}

/// The most grid steps (the table is tenants × steps²: 64 × 65536² is already too slow).
pub const MAX_GRID_STEPS: u64 = 65_536;

/// One tenant's quota in the chosen split.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantQuota {
    /// The tenant's lane.
    pub instance_id: String,
    /// Its quota in blocks (a multiple of the step).
    pub quota_blocks: u64,
    /// The same in bytes.
    pub quota_bytes: u64,
    /// Its hit tokens in an isolated LRU of that quota.
    pub hit_tokens: u64,
    /// `hit_tokens` / its input tokens.
    pub hit_rate: f64,
    /// Its input tokens (the rate's denominator).
    pub input_tokens: u64,
}

/// The best split and what it is compared with. Field names are the JSONL line's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuotaPlan {
    /// Always `true`: tells this line from `query`'s others.
    pub quota: bool,
    /// The total in blocks.
    pub quota_total_blocks: u64,
    /// The total in bytes (blocks × `block_bytes`).
    pub quota_total_bytes: u64,
    /// The grid step in blocks.
    pub quota_step_blocks: u64,
    /// Blocks of the total no tenant gains from (left over by the split).
    pub quota_spare_blocks: u64,
    /// Per tenant, in byte order of the lane name.
    pub tenants: Vec<TenantQuota>,
    /// Σ tenants' hit tokens at their quotas.
    pub isolated_hit_tokens: u64,
    /// `isolated_hit_tokens` / Σ tenants' input tokens.
    pub isolated_hit_rate: f64,
    /// The pool lane's hit tokens in one shared cache of the total (`None`: no pool lane).
    pub pooled_hit_tokens: Option<u64>,
    /// Its hit rate.
    pub pooled_hit_rate: Option<f64>,
    /// Σ hit tokens with every tenant at total / N (floored to a block).
    pub equal_split_hit_tokens: u64,
    /// Their rate.
    pub equal_split_hit_rate: f64,
    /// `pooled_hit_rate − isolated_hit_rate`: positive when sharing wins, negative when the
    /// best isolation wins (rate points, 0.01 = one point).
    pub isolation_cost_rate: Option<f64>,
    /// `pooled_hit_tokens − isolated_hit_tokens`, signed.
    pub isolation_cost_tokens: Option<i128>,
}

/// One tenant's exact curve as the planner reads it, borrowed: from a facts file's
/// [`InstanceCurve`] (`query`), or from a live lane's accumulator (`watch --quota-total`), so
/// both plan through the one [`plan_quota_split`].
#[derive(Debug, Clone, Copy)]
pub struct TenantCurve<'a> {
    /// The tenant's lane.
    pub instance_id: &'a str,
    /// Tokens per block of its rows.
    pub block_size_tokens: u64,
    /// Bytes per block of its rows (every tenant's must be the same).
    pub block_bytes: u64,
    /// Σ its rows' input tokens.
    pub input_tokens: u64,
    /// Its cumulative hits at any capacity, exactly.
    pub hits: &'a CapacityAxisAccumulator,
}

impl<'a> From<&'a InstanceCurve> for TenantCurve<'a> {
    fn from(curve: &'a InstanceCurve) -> Self {
        Self {
            instance_id: &curve.instance_id,
            block_size_tokens: curve.block_size_tokens,
            block_bytes: curve.block_bytes,
            input_tokens: curve.total_input_tokens,
            hits: &curve.hits,
        }
    }
}

/// The best split of `request.total` among the tenants (every lane of `curves` but the
/// pool), with the pooled and equal-split comparisons.
///
/// # Errors
/// See [`QuotaError`].
pub fn plan_quotas(curves: &MrcCurves, request: &QuotaRequest) -> Result<QuotaPlan, QuotaError> {
    let tenants: Vec<TenantCurve<'_>> = curves.instances.iter().map(TenantCurve::from).collect();
    plan_quota_split(
        &tenants,
        curves.pool.as_ref().map(TenantCurve::from),
        request,
    )
}

/// [`plan_quotas`] over borrowed curves: `tenants` (in any order: they are planned, and
/// listed, in byte order of `instance_id`, as `query` reads them) and the shared `pool`.
///
/// # Errors
/// See [`QuotaError`].
pub fn plan_quota_split(
    tenants: &[TenantCurve<'_>],
    pool: Option<TenantCurve<'_>>,
    request: &QuotaRequest,
) -> Result<QuotaPlan, QuotaError> {
    let mut tenants = tenants.to_vec();
    tenants.sort_by(|a, b| a.instance_id.as_bytes().cmp(b.instance_id.as_bytes()));
    let tenants = &tenants;
    let block_bytes = shared_block_bytes(tenants, pool.as_ref())?;
    let blocks = |capacity: Capacity, flag| {
        capacity
            .blocks(block_bytes)
            .ok_or(QuotaError::Unlimited { flag })
    };
    let total_blocks = blocks(request.total, "total")?;
    let step_blocks = match request.step {
        Some(step) => blocks(step, "step")?,
        None => (total_blocks / DEFAULT_GRID_STEPS).max(1),
    };
    let grid_steps = grid_steps(total_blocks, step_blocks, block_bytes)?;
    let floor_steps = floor_steps(tenants, &request.floors, step_blocks, &blocks)?;
    let budget = usize::try_from(grid_steps).expect("at most MAX_GRID_STEPS");
    let grid: Vec<GridHits> = tenants
        .iter()
        .map(|tenant| {
            (0..=grid_steps)
                .map(|k| hit_tokens_at(tenant, k * step_blocks))
                .collect()
        })
        .collect();
    let split = best_split(&grid, &floor_steps, budget).ok_or_else(|| {
        let floor_total = floor_steps
            .iter()
            .fold(0_u64, |sum, &steps| sum.saturating_add(steps as u64));
        QuotaError::FloorsExceedTotal {
            floor_blocks: floor_total.saturating_mul(step_blocks),
            step_blocks,
            total_blocks,
        }
    })?;
    let tenant_quotas: Vec<TenantQuota> = tenants
        .iter()
        .zip(&split.steps)
        .zip(&grid)
        .map(|((tenant, &steps), hits)| {
            let quota_blocks = steps as u64 * step_blocks;
            let hit_tokens = hits[steps];
            TenantQuota {
                instance_id: tenant.instance_id.to_owned(),
                quota_blocks,
                quota_bytes: quota_blocks.saturating_mul(block_bytes),
                hit_tokens,
                hit_rate: ratio(hit_tokens, tenant.input_tokens),
                input_tokens: tenant.input_tokens,
            }
        })
        .collect();
    let input_tokens = tenants
        .iter()
        .fold(0_u64, |sum, tenant| sum.wrapping_add(tenant.input_tokens));
    let assigned_blocks: u64 = tenant_quotas.iter().map(|t| t.quota_blocks).sum();
    let isolated_rate = ratio(split.hit_tokens, input_tokens);
    let equal_blocks = total_blocks / tenants.len() as u64;
    let equal_tokens = tenants.iter().fold(0_u64, |sum, tenant| {
        sum.saturating_add(hit_tokens_at(tenant, equal_blocks))
    });
    let pooled = pool.as_ref().map(|pool| {
        let tokens = hit_tokens_at(pool, total_blocks);
        (tokens, ratio(tokens, pool.input_tokens))
    });
    Ok(QuotaPlan {
        quota: true,
        quota_total_blocks: total_blocks,
        quota_total_bytes: total_blocks.saturating_mul(block_bytes),
        quota_step_blocks: step_blocks,
        quota_spare_blocks: total_blocks - assigned_blocks,
        tenants: tenant_quotas,
        isolated_hit_tokens: split.hit_tokens,
        isolated_hit_rate: isolated_rate,
        pooled_hit_tokens: pooled.map(|(tokens, _)| tokens),
        pooled_hit_rate: pooled.map(|(_, rate)| rate),
        equal_split_hit_tokens: equal_tokens,
        equal_split_hit_rate: ratio(equal_tokens, input_tokens),
        isolation_cost_rate: pooled.map(|(_, rate)| rate - isolated_rate),
        isolation_cost_tokens: pooled
            .map(|(tokens, _)| i128::from(tokens) - i128::from(split.hit_tokens)),
    })
}

/// The one `block_bytes` of every tenant and the pool.
fn shared_block_bytes(
    tenants: &[TenantCurve<'_>],
    pool: Option<&TenantCurve<'_>>,
) -> Result<u64, QuotaError> {
    let first = tenants.first().ok_or(QuotaError::NoTenants)?;
    let block_bytes = first.block_bytes;
    match tenants
        .iter()
        .chain(pool)
        .find(|tenant| tenant.block_bytes != block_bytes)
    {
        Some(other) => Err(QuotaError::MixedBlockBytes {
            first: block_bytes,
            other: other.block_bytes,
        }),
        None => Ok(block_bytes),
    }
}

/// A tenant's hit tokens in an isolated LRU of `capacity_blocks` (the projector's answer).
fn hit_tokens_at(tenant: &TenantCurve<'_>, capacity_blocks: u64) -> u64 {
    tenant
        .hits
        .hit_blocks_at(capacity_blocks)
        .saturating_mul(tenant.block_size_tokens)
}

/// The number of grid steps in the total, or why there is no grid to plan on.
fn grid_steps(total_blocks: u64, step_blocks: u64, block_bytes: u64) -> Result<u64, QuotaError> {
    if total_blocks == 0 {
        return Err(QuotaError::TotalBelowOneBlock { block_bytes });
    }
    if step_blocks == 0 {
        return Err(QuotaError::StepBelowOneBlock { block_bytes });
    }
    if step_blocks > total_blocks {
        return Err(QuotaError::StepExceedsTotal {
            step_blocks,
            total_blocks,
        });
    }
    let grid_steps = total_blocks / step_blocks;
    if grid_steps > MAX_GRID_STEPS {
        return Err(QuotaError::TooManySteps {
            steps: grid_steps,
            max: MAX_GRID_STEPS,
        });
    }
    Ok(grid_steps)
}

/// Each tenant's floor in grid steps, rounded up so the floor is met.
fn floor_steps(
    tenants: &[TenantCurve<'_>],
    floors: &[(String, Capacity)],
    step_blocks: u64,
    blocks: &dyn Fn(Capacity, &'static str) -> Result<u64, QuotaError>,
) -> Result<Vec<usize>, QuotaError> {
    let mut steps = vec![0; tenants.len()];
    for (name, size) in floors {
        let Some(index) = tenants.iter().position(|t| t.instance_id == *name) else {
            return Err(QuotaError::UnknownTenant {
                tenant: name.clone(),
                lanes: tenants
                    .iter()
                    .map(|t| t.instance_id)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        let floor = blocks(*size, "floor")?.div_ceil(step_blocks);
        steps[index] = usize::try_from(floor).unwrap_or(usize::MAX);
    }
    Ok(steps)
}
