//! `mrc --opt`: OPT's curves (from the OPT facts of the same trace, [`crate::check_same_trace`])
//! beside LRU's, and at chosen total capacities (every instance its own cache of that size)
//! LRU's misses split by cause: cold (missed even at ∞), capacity (hit at ∞, missed by OPT)
//! and policy (hit by OPT, missed by LRU).

use serde::Serialize;

use super::curves::MrcCurves;
use super::report::MrcReport;
use crate::ratio;

/// OPT's report and the policy gap, the `opt` member of `mrc --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyReport {
    /// OPT's own report: its curves, knees and saturation, as LRU's.
    pub report: MrcReport,
    /// At LRU's and OPT's total knees (and saturations), by increasing capacity: both
    /// policies' totals and the miss split.
    pub gap: Vec<PolicyGapPoint>,
}

/// Both policies' totals at one per-instance cache size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PolicyGapPoint {
    /// The per-instance cache size.
    pub capacity_bytes: u64,
    /// `capacity_bytes / 2^30`.
    pub capacity_gb: f64,
    /// Only when all instances share one `block_bytes`.
    pub capacity_blocks: Option<u64>,
    /// Every instance's input tokens.
    pub total_input_tokens: u64,
    /// LRU's total hit tokens at that size.
    pub lru_hit_tokens: u64,
    /// OPT's.
    pub opt_hit_tokens: u64,
    /// Both policies' at unlimited capacity.
    pub infinite_hit_tokens: u64,
    /// `lru_hit_tokens / total_input_tokens`.
    pub lru_hit_rate: f64,
    /// `opt_hit_tokens / total_input_tokens`.
    pub opt_hit_rate: f64,
    /// `total_input_tokens − infinite_hit_tokens`.
    pub cold_miss_tokens: u64,
    /// `infinite_hit_tokens − opt_hit_tokens`.
    pub capacity_miss_tokens: u64,
    /// `opt_hit_tokens − lru_hit_tokens` (negative only where OPT's curve is a lower bound).
    pub policy_miss_tokens: i64,
}

impl MrcCurves {
    /// OPT's report beside these (LRU's) curves: `opt` are the curves of the OPT facts of the
    /// same trace, `lru` this report; curves of at most `max_curve_points` points.
    #[must_use]
    pub fn policy_report(
        &self,
        lru: &MrcReport,
        opt: &Self,
        max_curve_points: usize,
    ) -> PolicyReport {
        let report = opt.report(max_curve_points);
        let mut sizes: Vec<u64> = lru
            .total
            .knees
            .iter()
            .chain(&report.total.knees)
            .map(|knee| knee.point.capacity_bytes)
            .chain([
                lru.total.saturation.capacity_bytes,
                report.total.saturation.capacity_bytes,
            ])
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        let gap = sizes
            .into_iter()
            .map(|bytes| self.policy_gap_at(opt, bytes))
            .collect();
        PolicyReport { report, gap }
    }

    /// Both policies' totals at `capacity_bytes` per instance (`opt`: the OPT curves).
    #[must_use]
    pub fn policy_gap_at(&self, opt: &Self, capacity_bytes: u64) -> PolicyGapPoint {
        let (lru_point, opt_point) = (
            self.total_point(capacity_bytes),
            opt.total_point(capacity_bytes),
        );
        let total_input_tokens = self.total_input_tokens();
        let infinite_hit_tokens = self.total_infinite_hit_tokens();
        let (lru_hit_tokens, opt_hit_tokens) = (lru_point.hit_tokens, opt_point.hit_tokens);
        let signed = |tokens: u64| i64::try_from(tokens).unwrap_or(i64::MAX);
        PolicyGapPoint {
            capacity_bytes,
            capacity_gb: lru_point.capacity_gb,
            capacity_blocks: lru_point.capacity_blocks,
            total_input_tokens,
            lru_hit_tokens,
            opt_hit_tokens,
            infinite_hit_tokens,
            lru_hit_rate: ratio(lru_hit_tokens, total_input_tokens),
            opt_hit_rate: ratio(opt_hit_tokens, total_input_tokens),
            cold_miss_tokens: total_input_tokens.saturating_sub(infinite_hit_tokens),
            capacity_miss_tokens: infinite_hit_tokens.saturating_sub(opt_hit_tokens),
            policy_miss_tokens: if opt_hit_tokens >= lru_hit_tokens {
                signed(opt_hit_tokens - lru_hit_tokens)
            } else {
                -signed(lru_hit_tokens - opt_hit_tokens)
            },
        }
    }
}
