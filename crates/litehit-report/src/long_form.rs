//! The query's summaries and the `mrc` report in long form: one row per (instance, capacity),
//! one row per curve point or knee — the tables a binding hands to data frames. Only a change
//! of shape: every number is the summary's or the report's, and a capacity is put in bytes
//! and blocks by the projector's own conversion.

use litehit_core::projector::{Capacity, capacity_bytes_for_gb};

use crate::mrc::{Curve, CurvePoint, InstanceReport, MrcReport, TotalPoint};
use crate::query::QuerySlots;
use crate::records_query::{LaneBlockBytes, RecordsSummary};

/// One (instance, capacity) of a query; `instance_id` `None` is the total over instances
/// (`litehit query`'s overall line: the pool lane's rows left out).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTableRow {
    /// The lane, or `None` for the total.
    pub instance_id: Option<String>,
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

/// The rows of `records`' summary at `slots`: every instance's (in byte order of
/// `instance_id`), a row per slot in slot order, then the total's.
#[must_use]
pub fn query_table_rows(records: &RecordsSummary, slots: &QuerySlots) -> Vec<QueryTableRow> {
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
    let mut rows = Vec::with_capacity((summary.per_instance.len() + 1) * capacities.len());
    for (instance_id, totals, block_bytes) in lanes.chain(total) {
        let rates = totals.hit_rates();
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
