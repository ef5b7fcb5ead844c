//! The query's summaries and the `mrc` report in long form: one row per (instance, capacity)
//! (and tier), one row per window and capacity (or tier), one row per curve point or knee —
//! the tables a binding hands to data frames. Only a change of shape: every number is the
//! summary's, the windows' or the report's, and a capacity is put in bytes and blocks by the
//! projector's own conversion.

use litehit_core::display;
use litehit_core::projector::{Capacity, capacity_bytes_for_gb};

use crate::mrc::{Curve, CurvePoint, InstanceReport, MrcReport, TotalPoint};
use crate::query::{QuerySlots, SlotTotals, TierPlan, tier_miss_share};
use crate::ratio;
use crate::records_query::{LaneBlockBytes, RecordsSummary};
use crate::records_windows::RecordsWindows;

/// One (instance, capacity) or (instance, tier) of a query; `instance_id` `None` is the
/// total over instances (`litehit query`'s overall line: the pool lane's rows left out).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QueryTableRow {
    /// The lane, or `None` for the total.
    pub instance_id: Option<String>,
    /// With tiers (`--tiers`): the tier of a tier row (its capacity is the tier's size, its
    /// hits the blocks and tokens the tier served, its rate the tier's share); `None` on a
    /// capacity row.
    pub tier: Option<String>,
    /// The capacity in bytes; `None` when unlimited, or a block count over rows of several
    /// block sizes.
    pub capacity_bytes: Option<u64>,
    /// The capacity in blocks; `None` when unlimited, or a byte size over rows of several
    /// block sizes.
    pub capacity_blocks: Option<u64>,
    /// Σ `input_token_len`.
    pub total_input_tokens: u64,
    /// Hit blocks at this capacity.
    pub total_hit_blocks: u64,
    /// Hit tokens at this capacity.
    pub total_hit_tokens: u64,
    /// `total_hit_tokens / total_input_tokens` (0 without input tokens).
    pub hit_rate: f64,
    /// On a tier row: the share of the input tokens no tier served (`miss_share`).
    pub miss_share: Option<f64>,
    /// With OPT facts (`--opt`), on a capacity row: what a summary line's OPT fields hold
    /// at this capacity.
    pub opt: Option<OptCells>,
}

/// A capacity row's OPT fields (`query --opt`): `opt_hit_tokens`, `opt_hit_rates` and the
/// split of LRU's misses, at the row's capacity.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct OptCells {
    /// OPT's hit tokens.
    pub opt_hit_tokens: u64,
    /// OPT's token hit rate.
    pub opt_hit_rate: f64,
    /// Missed even at unlimited capacity.
    pub cold_miss_tokens: u64,
    /// Hit at unlimited capacity, missed by OPT at this capacity.
    pub capacity_miss_tokens: u64,
    /// Hit by OPT, missed by LRU (negative where OPT's curve is only a lower bound).
    pub policy_miss_tokens: i64,
}

/// One (window, capacity) or (window, tier) of `query --window`: the instances' rows of
/// that span of trace time (the pool lane's left out).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WindowTableRow {
    /// The window's first `timestamp_ns`.
    pub window_start_ns: i64,
    /// The window's end (`timestamp_ns`, excluded).
    pub window_end_ns: i64,
    /// Seconds from the first request to the window's start (`window_start_s`).
    pub window_start_s: f64,
    /// Seconds from the first request to the window's end (`window_end_s`).
    pub window_end_s: f64,
    /// The tier of a tier row (`--tiers`); `None` on a capacity row.
    pub tier: Option<String>,
    /// The capacity (a tier's size) in bytes; `None` when unlimited, or a block count over
    /// rows of several block sizes.
    pub capacity_bytes: Option<u64>,
    /// The capacity (a tier's size) in blocks; `None` when unlimited, or a byte size over
    /// rows of several block sizes.
    pub capacity_blocks: Option<u64>,
    /// Rows in the window.
    pub requests: u64,
    /// Σ `input_token_len` of those rows.
    pub total_input_tokens: u64,
    /// Hit tokens at the capacity, or served by the tier.
    pub total_hit_tokens: u64,
    /// `total_hit_tokens / total_input_tokens` (a tier's share).
    pub hit_rate: f64,
    /// On a tier row: the window's share of input tokens no tier served.
    pub miss_share: Option<f64>,
}

/// The capacity `slot` in bytes and blocks for rows of `block_bytes` (`None`: several).
fn capacity_in_both(slot: Capacity, block_bytes: Option<u64>) -> (Option<u64>, Option<u64>) {
    match slot {
        Capacity::Gigabytes(gb) => (
            capacity_bytes_for_gb(gb),
            block_bytes.and_then(|bytes| slot.blocks(bytes)),
        ),
        Capacity::Blocks(blocks) => (
            block_bytes.and_then(|bytes| blocks.checked_mul(bytes)),
            Some(blocks),
        ),
        Capacity::Infinite => (None, None),
    }
}

/// The rows of `records`' summary at `slots` (and `tiers`, the query's): every instance's (in
/// byte order of `instance_id`), a row per slot in slot order then one per tier, then the
/// total's.
#[must_use]
pub fn query_table_rows(
    records: &RecordsSummary,
    slots: &QuerySlots,
    tiers: Option<&TierPlan>,
) -> Vec<QueryTableRow> {
    let capacities = slots.capacities();
    let summary = &records.summary;
    let lanes = summary.per_instance.iter().map(|(instance_id, totals)| {
        let block_bytes = records
            .lane_block_bytes
            .get(instance_id)
            .and_then(|lane| lane.one());
        (Some(instance_id.as_str()), totals, block_bytes)
    });
    let total_block_bytes = records.all_block_bytes.and_then(LaneBlockBytes::one);
    let total = std::iter::once((None, &summary.overall, total_block_bytes));
    let tier_count = tiers.map_or(0, |plan| plan.names.len());
    let mut rows =
        Vec::with_capacity((summary.per_instance.len() + 1) * (capacities.len() + tier_count));
    for (instance_id, totals, block_bytes) in lanes.chain(total) {
        let rates = totals.hit_rates();
        let opt = opt_cells(totals);
        for (slot, &capacity) in capacities.iter().enumerate() {
            let (capacity_bytes, capacity_blocks) = capacity_in_both(capacity, block_bytes);
            rows.push(QueryTableRow {
                instance_id: instance_id.map(str::to_owned),
                capacity_bytes,
                capacity_blocks,
                total_input_tokens: totals.total_input_tokens,
                total_hit_blocks: totals.total_hit_blocks[slot],
                total_hit_tokens: totals.total_hit_tokens[slot],
                hit_rate: rates[slot],
                opt: opt.as_ref().map(|cells| cells[slot]),
                ..QueryTableRow::default()
            });
        }
        let Some(plan) = tiers else { continue };
        let (shares, miss_share) = totals.tier_shares();
        for (tier, (name, &capacity)) in plan.names.iter().zip(&plan.capacities).enumerate() {
            let (capacity_bytes, capacity_blocks) = capacity_in_both(capacity, block_bytes);
            rows.push(QueryTableRow {
                instance_id: instance_id.map(str::to_owned),
                tier: Some(name.clone()),
                capacity_bytes,
                capacity_blocks,
                total_input_tokens: totals.total_input_tokens,
                total_hit_blocks: totals.tier_hit_blocks[tier],
                total_hit_tokens: totals.tier_hit_tokens[tier],
                hit_rate: shares[tier],
                miss_share: Some(miss_share),
                opt: None,
            });
        }
    }
    rows
}

/// Per slot, `totals`' OPT fields, with OPT facts read beside.
fn opt_cells(totals: &SlotTotals) -> Option<Vec<OptCells>> {
    let (opt, rates, split) = (
        totals.opt.as_ref()?,
        totals.opt_hit_rates()?,
        totals.miss_split()?,
    );
    Some(
        (0..opt.hit_tokens.len())
            .map(|slot| OptCells {
                opt_hit_tokens: opt.hit_tokens[slot],
                opt_hit_rate: rates[slot],
                cold_miss_tokens: split.cold_miss_tokens,
                capacity_miss_tokens: split.capacity_miss_tokens[slot],
                policy_miss_tokens: split.policy_miss_tokens[slot],
            })
            .collect(),
    )
}

/// The rows of `records`' windows: per window (in time order), a row per slot in slot
/// order, or with tiers a row per tier.
#[must_use]
pub fn window_table_rows(records: &RecordsWindows) -> Vec<WindowTableRow> {
    let windows = &records.windows;
    let block_bytes = records.all_block_bytes.and_then(LaneBlockBytes::one);
    let seconds = |ns: i64| {
        display::seconds_of_ns(i128::from(ns) - i128::from(records.first_ns))
            .parse::<f64>()
            .unwrap_or(f64::NAN)
    };
    let capacities = windows.slots().capacities();
    let mut rows = Vec::new();
    for (start_ns, end_ns, window) in windows.windows() {
        let row = WindowTableRow {
            window_start_ns: start_ns,
            window_end_ns: end_ns,
            window_start_s: seconds(start_ns),
            window_end_s: seconds(end_ns),
            requests: window.requests,
            total_input_tokens: window.input_tokens,
            ..WindowTableRow::default()
        };
        if let Some(plan) = windows.tiers() {
            let miss_share = tier_miss_share(window.input_tokens, &window.tier_hit_tokens);
            for ((name, &capacity), &tokens) in plan
                .names
                .iter()
                .zip(&plan.capacities)
                .zip(&window.tier_hit_tokens)
            {
                let (capacity_bytes, capacity_blocks) = capacity_in_both(capacity, block_bytes);
                rows.push(WindowTableRow {
                    tier: Some(name.clone()),
                    capacity_bytes,
                    capacity_blocks,
                    total_hit_tokens: tokens,
                    hit_rate: ratio(tokens, window.input_tokens),
                    miss_share: Some(miss_share),
                    ..row.clone()
                });
            }
            continue;
        }
        for (&capacity, &tokens) in capacities.iter().zip(&window.hit_tokens) {
            let (capacity_bytes, capacity_blocks) = capacity_in_both(capacity, block_bytes);
            rows.push(WindowTableRow {
                capacity_bytes,
                capacity_blocks,
                total_hit_tokens: tokens,
                hit_rate: ratio(tokens, window.input_tokens),
                ..row.clone()
            });
        }
    }
    rows
}

/// What a row of the `mrc` table is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MrcRowKind {
    /// A point of the curve (an exact breakpoint or an exact sample).
    Curve,
    /// The knee at `percent` % of the unlimited-capacity hit rate.
    Knee,
    /// The smallest capacity reaching the unlimited-capacity hit rate.
    Saturation,
}

impl MrcRowKind {
    /// `curve`, `knee` or `saturation`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Curve => "curve",
            Self::Knee => "knee",
            Self::Saturation => "saturation",
        }
    }
}

/// One point of an `mrc` report; `instance_id` `None` is the total (every instance with its
/// own cache of the same size in bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct MrcTableRow {
    /// The lane (the shared pool lane's own curve included), or `None` for the total.
    pub instance_id: Option<String>,
    /// Curve point, knee or saturation.
    pub kind: MrcRowKind,
    /// The knee's level in percent (knees only).
    pub percent: Option<u32>,
    /// The knee's target: `percent` % of the unlimited-capacity hit rate (knees only).
    pub target_hit_rate: Option<f64>,
    /// The capacity in blocks (the total's only when every instance has one block size).
    pub capacity_blocks: Option<u64>,
    /// The capacity in bytes.
    pub capacity_bytes: u64,
    /// The capacity in binary GB.
    pub capacity_gb: f64,
    /// Hit blocks (per instance only: the total adds lanes of different block sizes).
    pub hit_blocks: Option<u64>,
    /// Hit tokens.
    pub hit_tokens: u64,
    /// Cumulative token hit rate.
    pub hit_rate: f64,
}

/// A knee's level and target hit rate.
type KneeLevel = Option<(u32, f64)>;

fn instance_row(
    instance_id: &str,
    kind: MrcRowKind,
    knee: KneeLevel,
    point: &CurvePoint,
) -> MrcTableRow {
    MrcTableRow {
        instance_id: Some(instance_id.to_owned()),
        kind,
        percent: knee.map(|(percent, _)| percent),
        target_hit_rate: knee.map(|(_, target)| target),
        capacity_blocks: Some(point.capacity_blocks),
        capacity_bytes: point.capacity_bytes,
        capacity_gb: point.capacity_gb,
        hit_blocks: Some(point.hit_blocks),
        hit_tokens: point.hit_tokens,
        hit_rate: point.hit_rate,
    }
}

fn total_row(kind: MrcRowKind, knee: KneeLevel, point: &TotalPoint) -> MrcTableRow {
    MrcTableRow {
        instance_id: None,
        kind,
        percent: knee.map(|(percent, _)| percent),
        target_hit_rate: knee.map(|(_, target)| target),
        capacity_blocks: point.capacity_blocks,
        capacity_bytes: point.capacity_bytes,
        capacity_gb: point.capacity_gb,
        hit_blocks: None,
        hit_tokens: point.hit_tokens,
        hit_rate: point.hit_rate,
    }
}

fn push_instance(rows: &mut Vec<MrcTableRow>, instance: &InstanceReport) {
    let id = &instance.instance_id;
    let Curve { points, .. } = &instance.curve;
    rows.extend(
        points
            .iter()
            .map(|point| instance_row(id, MrcRowKind::Curve, None, point)),
    );
    rows.extend(instance.knees.iter().map(|knee| {
        let level = Some((knee.percent, knee.target_hit_rate));
        instance_row(id, MrcRowKind::Knee, level, &knee.point)
    }));
    rows.push(instance_row(
        id,
        MrcRowKind::Saturation,
        None,
        &instance.saturation,
    ));
}

/// The rows of `report`: per instance (in its order; then the pool lane's own curve) its
/// curve points, knees and saturation, then the total's.
#[must_use]
pub fn mrc_table_rows(report: &MrcReport) -> Vec<MrcTableRow> {
    let mut rows = Vec::new();
    for instance in &report.instances {
        push_instance(&mut rows, instance);
    }
    if let Some(pool) = &report.pool {
        push_instance(&mut rows, &pool.own);
    }
    let total = &report.total;
    rows.extend(
        total
            .curve
            .points
            .iter()
            .map(|point| total_row(MrcRowKind::Curve, None, point)),
    );
    rows.extend(total.knees.iter().map(|knee| {
        let level = Some((knee.percent, knee.target_hit_rate));
        total_row(MrcRowKind::Knee, level, &knee.point)
    }));
    rows.push(total_row(MrcRowKind::Saturation, None, &total.saturation));
    rows
}
