//! What `mrc --tiers` and `mrc --from/--to/--exclude-warmup` add to the report: the split of
//! each instance's hits among cache tiers, and the span of trace time the report covers.
//!
//! Tier hits come from `projector::tiers` over each instance's accumulator. The total gives
//! every instance its own tiers of the same sizes, as the rest of the report does; the shared
//! pool lane (`replay --pool`) has its tiers at N × each size, as `query`'s pool line.

use std::fmt::Write as _;

use serde::Serialize;

use super::mrc::{MrcCurves, MrcReport};
use super::query_jsonl::{TierPlan, TimeRange};
use super::summary::ratio;
use litehit_core::projector::tiers::{TierMode, accumulated_tier_hit_blocks, tier_bands};

/// One row of the tier split: served tokens per tier, their shares of the input tokens and
/// the miss share.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TierRow {
    /// `None` for the total.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    pub total_input_tokens: u64,
    pub tier_hit_tokens: Vec<u64>,
    pub tier_shares: Vec<f64>,
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
    pub tier_mode: &'static str,
    pub tier_names: Vec<String>,
    pub tier_sizes: Vec<String>,
    pub instances: Vec<TierRow>,
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

/// The span of trace time a report accounts (only when it is not the whole trace).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpanReport {
    /// Seconds since the first request; `None` = from the start.
    pub from_s: Option<f64>,
    /// `None` = to the end.
    pub to_s: Option<f64>,
    pub from_ns: Option<i64>,
    pub to_ns: Option<i64>,
}

impl SpanReport {
    /// The span of `range` in a trace starting at `first_ns`; `None` for the whole trace.
    #[must_use]
    pub fn new(range: TimeRange, first_ns: i64) -> Option<Self> {
        if range.is_everything() {
            return None;
        }
        #[expect(clippy::cast_precision_loss, reason = "seconds, for display")]
        let seconds = |ns: i64| (i128::from(ns) - i128::from(first_ns)) as f64 / 1e9;
        let from_ns = (range.from_ns != i64::MIN).then_some(range.from_ns);
        let to_ns = (range.to_ns != i64::MAX).then_some(range.to_ns);
        Some(Self {
            from_s: from_ns.map(seconds),
            to_s: to_ns.map(seconds),
            from_ns,
            to_ns,
        })
    }

    /// `trace time 120 s – end`, for the table and the plot subtitle.
    #[must_use]
    pub fn describe(&self) -> String {
        let end =
            |s: Option<f64>, open: &str| s.map_or_else(|| open.to_owned(), |s| format!("{s} s"));
        format!(
            "trace time {} – {}",
            end(self.from_s, "start"),
            end(self.to_s, "end")
        )
    }
}

/// `mrc --json` with the optional tier split and span after the usual fields (the usual
/// bytes without them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedReport<'a> {
    #[serde(flatten)]
    pub report: &'a MrcReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accounted_span: Option<SpanReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiers: Option<TierReport>,
}

/// The tier table: one row per instance and the total, a column per tier and the misses.
#[must_use]
pub fn render_tier_table(report: &TierReport) -> String {
    let mut out = format!("tiers ({}):\n", report.tier_mode);
    let mut header = vec!["instance".to_owned()];
    header.extend(
        report
            .tier_names
            .iter()
            .zip(&report.tier_sizes)
            .map(|(name, size)| format!("{name} {size}")),
    );
    header.push("miss".to_owned());
    let row = |id: &str, r: &TierRow| {
        let mut cells = vec![id.to_owned()];
        cells.extend(r.tier_shares.iter().map(|s| format!("{:.2}%", s * 100.0)));
        cells.push(format!("{:.2}%", r.miss_share * 100.0));
        cells
    };
    let mut rows = vec![header];
    for instance in &report.instances {
        rows.push(row(instance.instance_id.as_deref().unwrap_or(""), instance));
    }
    rows.push(row("total", &report.total));
    if let Some(pool) = &report.pool {
        let id = pool.row.instance_id.as_deref().unwrap_or("");
        rows.push(row(
            &format!("{id} (shared, ×{})", pool.shared_by),
            &pool.row,
        ));
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for cells in rows {
        let line: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, &w))| {
                if c == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    if let Some(pool) = &report.pool {
        let _ = writeln!(
            out,
            "the shared pool's tiers are {} × each size (the {} instances' tiers together)",
            pool.shared_by, pool.shared_by
        );
    }
    out
}
