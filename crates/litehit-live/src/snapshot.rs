//! The finished picture the ingest thread publishes once per frame.
//!
//! A [`LiveSnapshot`] holds every number the monitor shows, already computed by the engine
//! and the projector: per-instance × slot cumulative hit blocks (late slots included, from the
//! capacity-axis accumulator) and each slot's capacity in that lane's blocks (× N for the
//! shared pool, whose N it carries once), the sampled hit-vs-capacity curve, the totals over
//! the instances (the Σ of instance knees included), trace-time windows, gauges, the last
//! error and the status. Readers (TUI, headless, `/metrics`) only format it: none calls the
//! projector (`tests/it/snapshot_readers.rs` fails if one does); the one division they do is
//! [`ratio`], at output, on integer sums, and the one product `blocks × block_bytes`.
//!
//! The figures derived from the counts (slot capacities, the totals) are filled in one place,
//! [`LiveSnapshot::finished`], which the ingest's assembly calls on every snapshot it
//! publishes (and a test that builds a snapshot by hand calls too).

use std::time::Duration;

use litehit_core::projector::Capacity;
use litehit_core::projector::tiers::TierPlan;

use super::tail::{TailNotice, WakeSource};

/// Stable identity of a capacity slot (indices shift when a slot is removed).
pub type SlotId = u64;

/// `numerator / denominator`, `None` when the denominator is zero. Rates are formed only
/// here, from integer sums (Σ hit tokens / Σ input tokens).
pub use litehit_core::display::ratio;

/// One capacity slot of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    pub id: SlotId,
    pub capacity: Capacity,
}

/// The id of the `engine` slot (`--gpu-blocks`, `--gpu-memory`): the serving engine's own
/// pool, named `engine` on every surface and listed first. Typed slots count from 1.
pub const ENGINE_SLOT_ID: SlotId = 0;

impl Slot {
    /// Whether this is the `engine` slot.
    #[must_use]
    pub fn is_engine(&self) -> bool {
        self.id == ENGINE_SLOT_ID
    }

    /// The slot's name, when it has one (`engine`).
    #[must_use]
    pub fn name(&self) -> Option<&'static str> {
        self.is_engine()
            .then_some(litehit_core::engine_pool::ENGINE_SLOT_NAME)
    }

    /// The order slots are listed in: the `engine` slot first, then by capacity
    /// ([`Capacity::order_at`] at `block_bytes`).
    #[must_use]
    pub fn order_at(&self, other: &Self, block_bytes: Option<u64>) -> std::cmp::Ordering {
        other
            .is_engine()
            .cmp(&self.is_engine())
            .then_with(|| self.capacity.order_at(&other.capacity, block_bytes))
    }
}

/// One sampled point of a lane's cumulative hits-vs-capacity curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CurvePoint {
    pub capacity_blocks: u64,
    pub hit_blocks: u64,
}

/// The percentages of the unlimited-capacity hits whose smallest capacity each lane reports
/// (the knees of `litehit mrc`).
pub const CAPACITY_FRACTION_PERCENTS: [u32; 4] = [50, 90, 95, 99];

/// The smallest capacity whose cumulative hits reach `percent`% of the ∞ bound's (rounded up
/// to whole blocks of hits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FractionCapacity {
    pub percent: u32,
    pub capacity_blocks: u64,
    /// Cumulative hit blocks at `capacity_blocks`, exact from the accumulator (at least
    /// `percent`% of the ∞ bound's, often more: hits rise in steps), so a chart draws the knee
    /// at the rate it really has there.
    pub hit_blocks: u64,
}

/// One fraction of the Σ of instance knees ([`Totals::capacity_for_fraction`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TotalFractionCapacity {
    pub percent: u32,
    /// Σ over the instances of each one's knee in its own bytes (blocks × its block bytes).
    pub capacity_bytes: u64,
    /// Whether the Σ is only a lower bound (some instance's knee is, under a memory horizon).
    pub lower_bound: bool,
}

/// One instance (lane), cumulative since the start of the trace.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LaneSnapshot {
    pub instance_id: String,
    pub block_size_tokens: u64,
    pub block_bytes: u64,
    /// `0` = no TTL.
    pub ttl_ns: u64,
    pub requests: u64,
    pub input_tokens: u64,
    /// Analysis blocks looked up (after re-blocking).
    pub request_blocks: u64,
    /// Resident distinct blocks at unlimited capacity (expired excluded).
    pub unique_blocks: u64,
    pub ttl_expired_blocks: u64,
    /// Rows earlier than this lane's latest, replayed at its latest (each lane keeps its own
    /// clock; for the pool, rows not in global time order). With a TTL (`ttl_ns` > 0) the
    /// lane's figures are approximate while this is not 0: [`Self::ttl_is_approximate`].
    pub clamped_timestamps: u64,
    /// The multiple of each slot's blocks this lane's slot figures are at: 1 for an
    /// instance, N (the instances) for the shared pool, the same total capacity as the N
    /// caches of the slot each. Filled by [`LiveSnapshot::finished`].
    pub shared_by: u64,
    /// Per slot, aligned with [`LiveSnapshot::slots`]: its capacity in this lane's blocks,
    /// at [`Self::shared_by`] × the slot (`None`: ∞). Filled by [`LiveSnapshot::finished`].
    pub slot_capacity_blocks: Vec<Option<u64>>,
    /// Cumulative hit blocks per slot, aligned with [`LiveSnapshot::slots`], each at
    /// [`Self::slot_capacity_blocks`].
    pub slot_hit_blocks: Vec<u64>,
    /// Cumulative hit blocks with unlimited capacity (the ∞ bound; OPT's as LRU's).
    pub infinite_hit_blocks: u64,
    /// With OPT (`watch --policy lru,opt`): OPT's cumulative hit blocks per slot, at
    /// [`Self::slot_capacity_blocks`] as LRU's; `None` without OPT.
    pub opt_slot_hit_blocks: Option<Vec<u64>>,
    /// The smallest capacity reaching the ∞ bound.
    pub saturation_capacity_blocks: u64,
    /// The cumulative curve sampled from capacity 0 to a little past saturation.
    pub curve: Vec<CurvePoint>,
    /// With OPT: OPT's cumulative curve sampled at the same capacities as [`Self::curve`]
    /// (the chart draws it beside LRU's); `None` without OPT.
    pub opt_curve: Option<Vec<CurvePoint>>,
    pub core_memory_bytes: u64,
    pub accumulator_memory_bytes: u64,
    /// The lane's memory horizon in blocks (`watch --memory-horizon`), if one is set: hits at
    /// larger capacities, and the ∞ bound, are lower bounds (keys deeper are forgotten).
    pub memory_horizon_blocks: Option<u64>,
    /// Cumulative hit blocks each tier served (`watch --tiers`), aligned with
    /// [`LiveSnapshot::tiers`]; empty without tiers. For the pool lane, its tiers are at N ×
    /// each tier's size (N = the instances), as its slots are.
    pub tier_hit_blocks: Vec<u64>,
    /// Per tier: its size in blocks on this lane (N × for the pool; `None`: unlimited).
    pub tier_capacity_blocks: Vec<Option<u64>>,
    /// Per tier: whether its hits are only a lower bound (its band reaches above the memory
    /// horizon, [`litehit_core::projector::tiers::TierBand::is_lower_bound`]).
    pub tier_lower_bounds: Vec<bool>,
    /// The smallest capacity (on this lane's own axis: for the pool, its total) reaching each
    /// of [`CAPACITY_FRACTION_PERCENTS`] of its ∞ bound's hits, exact from the accumulator
    /// (as `mrc`'s knees), in that order. Under a memory horizon they are lower bounds
    /// ([`Self::knees_are_lower_bounds`]).
    pub capacity_for_fraction: Vec<FractionCapacity>,
    /// The serving engine's own observed hits on this lane's rows (`cached_tokens`), as the
    /// engine counted them.
    pub observed: litehit_core::engine::ObservedCounts,
    /// The effective capacity: the smallest LRU cache (blocks) whose hits reach the observed
    /// ones, when every row of the lane said them; `None` otherwise, or when even ∞ falls
    /// short.
    pub observed_effective_capacity_blocks: Option<u64>,
}

impl LaneSnapshot {
    /// The engine's observed token hit rate over the rows that said it; `None` without one.
    #[must_use]
    pub fn observed_hit_rate(&self) -> Option<f64> {
        ratio(self.observed.hit_tokens, self.observed.input_tokens)
    }

    /// Whether this lane's TTL expiry ran on a clamped clock (some row came earlier than the
    /// lane's latest), so its hits are approximate (`replay` of the time-sorted rows is exact).
    #[must_use]
    pub fn ttl_is_approximate(&self) -> bool {
        self.ttl_ns > 0 && self.clamped_timestamps > 0
    }

    /// Cumulative hit tokens at slot `index` (`0` if out of range).
    #[must_use]
    pub fn slot_hit_tokens(&self, index: usize) -> u64 {
        self.slot_hit_blocks.get(index).copied().unwrap_or(0) * self.block_size_tokens
    }

    /// OPT's cumulative hit tokens at slot `index` (`None` without OPT).
    #[must_use]
    pub fn opt_slot_hit_tokens(&self, index: usize) -> Option<u64> {
        self.opt_slot_hit_blocks
            .as_ref()
            .map(|blocks| blocks.get(index).copied().unwrap_or(0) * self.block_size_tokens)
    }

    /// OPT's cumulative token hit rate at slot `index` (`None` without OPT or input).
    #[must_use]
    pub fn opt_slot_hit_rate(&self, index: usize) -> Option<f64> {
        ratio(self.opt_slot_hit_tokens(index)?, self.input_tokens)
    }

    /// The policy gap at slot `index`: OPT's hit rate minus LRU's (`None` without OPT or
    /// input).
    #[must_use]
    pub fn policy_gap_rate(&self, index: usize) -> Option<f64> {
        policy_gap(
            self.slot_hit_tokens(index),
            self.opt_slot_hit_tokens(index)?,
            self.input_tokens,
        )
    }

    /// Cumulative hit tokens with unlimited capacity.
    #[must_use]
    pub fn infinite_hit_tokens(&self) -> u64 {
        self.infinite_hit_blocks * self.block_size_tokens
    }

    /// Cumulative token hit rate at slot `index`.
    #[must_use]
    pub fn slot_hit_rate(&self, index: usize) -> Option<f64> {
        ratio(self.slot_hit_tokens(index), self.input_tokens)
    }

    /// Cumulative token hit rate with unlimited capacity.
    #[must_use]
    pub fn infinite_hit_rate(&self) -> Option<f64> {
        ratio(self.infinite_hit_tokens(), self.input_tokens)
    }

    /// Whether the hits at `capacity_blocks` (`None`: ∞) are only a lower bound: the lane has
    /// a memory horizon and the capacity lies above it.
    #[must_use]
    pub fn is_lower_bound(&self, capacity_blocks: Option<u64>) -> bool {
        self.memory_horizon_blocks
            .is_some_and(|horizon| capacity_blocks.is_none_or(|capacity| capacity > horizon))
    }

    /// Slot `index`'s capacity in this lane's blocks (× N for the pool; `None`: ∞, or no
    /// such slot).
    #[must_use]
    pub fn slot_capacity_blocks(&self, index: usize) -> Option<u64> {
        self.slot_capacity_blocks.get(index).copied().flatten()
    }

    /// Slot `index`'s capacity in bytes, whole blocks (`None`: ∞, or no such slot).
    #[must_use]
    pub fn slot_capacity_bytes(&self, index: usize) -> Option<u64> {
        self.slot_capacity_blocks(index)
            .map(|blocks| blocks.saturating_mul(self.block_bytes))
    }

    /// Whether the hits at slot `index` are only a lower bound: its capacity on this lane
    /// (for the pool, N × C: that is what meets the horizon, not C) lies above the horizon.
    #[must_use]
    pub fn slot_is_lower_bound(&self, index: usize) -> bool {
        self.slot_capacity_blocks
            .get(index)
            .is_some_and(|&blocks| self.is_lower_bound(blocks))
    }

    /// Whether [`Self::capacity_for_fraction`] are only lower bounds: under a memory horizon
    /// the curve is exact up to the horizon but the ∞ bound it is measured against is itself
    /// only a lower bound (forgotten keys would have hit deeper), so the true target is at
    /// least as high and the true knee at least as far right. (Whether any key was really
    /// forgotten is not tracked, so it is marked whenever there is a horizon, as the ∞ bound.)
    #[must_use]
    pub fn knees_are_lower_bounds(&self) -> bool {
        self.is_lower_bound(None)
    }

    /// The memory horizon in bytes (`horizon blocks × block_bytes`), if one is set.
    #[must_use]
    pub fn memory_horizon_bytes(&self) -> Option<u64> {
        self.memory_horizon_blocks
            .map(|blocks| blocks.saturating_mul(self.block_bytes))
    }

    /// Cumulative hit tokens each tier served.
    #[must_use]
    pub fn tier_hit_tokens(&self) -> Vec<u64> {
        self.tier_hit_blocks
            .iter()
            .map(|&blocks| blocks * self.block_size_tokens)
            .collect()
    }

    /// Whether the miss share (what no tier served) is only an upper bound: some tier is a
    /// lower bound.
    #[must_use]
    pub fn tier_miss_is_upper_bound(&self) -> bool {
        litehit_core::projector::tiers::miss_is_upper_bound(&self.tier_lower_bounds)
    }

    /// KV bytes the unique blocks would need (`unique × block_bytes`).
    #[must_use]
    pub fn unique_kv_bytes(&self) -> u64 {
        self.unique_blocks.saturating_mul(self.block_bytes)
    }
}

/// The sum over every instance (not the pool), each projected with its own `block_bytes`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Totals {
    pub requests: u64,
    pub input_tokens: u64,
    pub slot_hit_tokens: Vec<u64>,
    /// With OPT: Σ OPT's hit tokens per slot; `None` without OPT.
    pub opt_slot_hit_tokens: Option<Vec<u64>>,
    /// Per slot: whether its Σ is only a lower bound (it is for some instance).
    pub slot_lower_bounds: Vec<bool>,
    /// Per slot: the per-instance size typed, in bytes, for a GB slot (`None` for block and
    /// ∞ slots, whose bytes differ between instances).
    pub slot_capacity_bytes: Vec<Option<u64>>,
    pub infinite_hit_tokens: u64,
    /// Whether the Σ ∞ bound (and the unique blocks) are only lower bounds (some instance
    /// has a memory horizon).
    pub infinite_is_lower_bound: bool,
    pub unique_blocks: u64,
    pub unique_kv_bytes: u64,
    /// The **Σ of instance knees**: per fraction of [`CAPACITY_FRACTION_PERCENTS`], Σ over
    /// the instances of each one's own smallest capacity reaching it (each its own cache, so
    /// every one reaches the target and so the fleet's tokens do). Not `litehit mrc`'s
    /// equal-share knee (the smallest equal per-instance size whose total reaches it). A
    /// fraction no instance has a knee for yet (no instance yet) is absent.
    pub capacity_for_fraction: Vec<TotalFractionCapacity>,
    /// Hit tokens each tier served, Σ over lanes (each with its own tier bands).
    pub tier_hit_tokens: Vec<u64>,
    /// Per tier: whether the Σ is only a lower bound (it is for some lane).
    pub tier_lower_bounds: Vec<bool>,
    /// Σ over the instances of their observed hits (`cached_tokens`).
    pub observed: litehit_core::engine::ObservedCounts,
}

impl Totals {
    /// Whether the Σ miss share is only an upper bound (some tier is a lower bound).
    #[must_use]
    pub fn tier_miss_is_upper_bound(&self) -> bool {
        litehit_core::projector::tiers::miss_is_upper_bound(&self.tier_lower_bounds)
    }
}

/// OPT's hit tokens less LRU's, as a share of `input_tokens` (negative only where OPT's curve
/// is a lower bound below LRU's); `None` before the first input token.
fn policy_gap(lru_hit_tokens: u64, opt_hit_tokens: u64, input_tokens: u64) -> Option<f64> {
    let (opt, lru) = (
        ratio(opt_hit_tokens, input_tokens)?,
        ratio(lru_hit_tokens, input_tokens)?,
    );
    Some(opt - lru)
}

/// Each tier's share of `input_tokens` (what it served), then the miss share (what no tier
/// served); `None` before the first input token.
#[must_use]
pub fn tier_shares(tier_hit_tokens: &[u64], input_tokens: u64) -> (Vec<Option<f64>>, Option<f64>) {
    let shares = tier_hit_tokens
        .iter()
        .map(|&tokens| ratio(tokens, input_tokens))
        .collect();
    let served = tier_hit_tokens.iter().sum::<u64>();
    (
        shares,
        ratio(input_tokens.saturating_sub(served), input_tokens),
    )
}

impl Totals {
    /// Σ over `lanes` (the instances, their slot capacities filled), slots aligned with
    /// `slots`.
    #[must_use]
    pub fn of(lanes: &[LaneSnapshot], slots: &[Slot]) -> Self {
        let mut totals = Self {
            slot_hit_tokens: vec![0; slots.len()],
            slot_lower_bounds: vec![false; slots.len()],
            slot_capacity_bytes: slots
                .iter()
                .map(|slot| match slot.capacity {
                    Capacity::Gigabytes(gb) => litehit_core::projector::capacity_bytes_for_gb(gb),
                    Capacity::Blocks(_) | Capacity::Infinite => None,
                })
                .collect(),
            ..Self::default()
        };
        for lane in lanes {
            if lane.opt_slot_hit_blocks.is_some() {
                let sums = totals
                    .opt_slot_hit_tokens
                    .get_or_insert_with(|| vec![0; slots.len()]);
                for (index, sum) in sums.iter_mut().enumerate() {
                    *sum += lane.opt_slot_hit_tokens(index).unwrap_or(0);
                }
            }
            totals.requests += lane.requests;
            totals.input_tokens += lane.input_tokens;
            totals.observed.requests += lane.observed.requests;
            totals.observed.input_tokens = totals
                .observed
                .input_tokens
                .wrapping_add(lane.observed.input_tokens);
            totals.observed.hit_tokens = totals
                .observed
                .hit_tokens
                .wrapping_add(lane.observed.hit_tokens);
            for (index, sum) in totals.slot_hit_tokens.iter_mut().enumerate() {
                *sum += lane.slot_hit_tokens(index);
            }
            for (index, any) in totals.slot_lower_bounds.iter_mut().enumerate() {
                *any |= lane.slot_is_lower_bound(index);
            }
            totals.infinite_hit_tokens += lane.infinite_hit_tokens();
            totals.infinite_is_lower_bound |= lane.is_lower_bound(None);
            for knee in &lane.capacity_for_fraction {
                let sums = &mut totals.capacity_for_fraction;
                let index = sums
                    .iter()
                    .position(|sum| sum.percent == knee.percent)
                    .unwrap_or_else(|| {
                        sums.push(TotalFractionCapacity {
                            percent: knee.percent,
                            ..TotalFractionCapacity::default()
                        });
                        sums.len() - 1
                    });
                let sum = &mut sums[index];
                sum.capacity_bytes = sum
                    .capacity_bytes
                    .saturating_add(knee.capacity_blocks.saturating_mul(lane.block_bytes));
                sum.lower_bound |= lane.knees_are_lower_bounds();
            }
            totals.unique_blocks += lane.unique_blocks;
            totals.unique_kv_bytes = totals
                .unique_kv_bytes
                .saturating_add(lane.unique_kv_bytes());
            let lane_tiers = lane.tier_hit_tokens();
            if totals.tier_hit_tokens.len() < lane_tiers.len() {
                totals.tier_hit_tokens.resize(lane_tiers.len(), 0);
            }
            for (sum, tokens) in totals.tier_hit_tokens.iter_mut().zip(lane_tiers) {
                *sum += tokens;
            }
            if totals.tier_lower_bounds.len() < lane.tier_lower_bounds.len() {
                totals
                    .tier_lower_bounds
                    .resize(lane.tier_lower_bounds.len(), false);
            }
            for (any, &bound) in totals
                .tier_lower_bounds
                .iter_mut()
                .zip(&lane.tier_lower_bounds)
            {
                *any |= bound;
            }
        }
        totals
    }

    #[must_use]
    pub fn slot_hit_rate(&self, index: usize) -> Option<f64> {
        ratio(
            self.slot_hit_tokens.get(index).copied().unwrap_or(0),
            self.input_tokens,
        )
    }

    /// OPT's Σ token hit rate at slot `index` (`None` without OPT or input).
    #[must_use]
    pub fn opt_slot_hit_rate(&self, index: usize) -> Option<f64> {
        let tokens = self.opt_slot_hit_tokens.as_ref()?;
        ratio(tokens.get(index).copied().unwrap_or(0), self.input_tokens)
    }

    /// The Σ policy gap at slot `index`: OPT's hit rate minus LRU's (`None` without OPT or
    /// input).
    #[must_use]
    pub fn policy_gap_rate(&self, index: usize) -> Option<f64> {
        let opt = self.opt_slot_hit_tokens.as_ref()?;
        policy_gap(
            self.slot_hit_tokens.get(index).copied().unwrap_or(0),
            opt.get(index).copied().unwrap_or(0),
            self.input_tokens,
        )
    }

    #[must_use]
    pub fn infinite_hit_rate(&self) -> Option<f64> {
        ratio(self.infinite_hit_tokens, self.input_tokens)
    }

    /// The engine's observed token hit rate over the rows that said it; `None` without one.
    #[must_use]
    pub fn observed_hit_rate(&self) -> Option<f64> {
        ratio(self.observed.hit_tokens, self.observed.input_tokens)
    }
}

/// One lane's part of a time window.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LaneWindow {
    pub input_tokens: u64,
    /// Hit tokens per slot in this window; `None` for a slot added during or after it.
    pub slot_hit_tokens: Vec<Option<u64>>,
    pub infinite_hit_tokens: u64,
}

/// The shared pool lane's part of a time window (`watch --pool`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PoolWindow {
    /// N, the instances the pool is shared by in this window: its slot figures are the pool
    /// at N × each slot's blocks, as [`LiveSnapshot::pool`]'s. In a window where an instance
    /// was born (N changed) they are `None`: the window's start was marked at the old N, and
    /// a difference of two capacities is no figure (the ∞ bound is still exact).
    pub shared_by: u64,
    pub lane: LaneWindow,
}

/// One window of trace time (`[start_ns, start_ns + window_ns)`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Window {
    pub start_ns: i64,
    /// Per lane, aligned with [`LiveSnapshot::lanes`] (lanes born later are missing). The
    /// instances only: the pool is [`Self::pool`], so Σ over `lanes` never counts it.
    pub lanes: Vec<LaneWindow>,
    /// The shared pool lane's part, with `watch --pool`.
    pub pool: Option<PoolWindow>,
    /// Whether the window is still open (its numbers grow).
    pub open: bool,
}

impl Window {
    /// `(hit tokens, input tokens)` of `lane` (or of every lane when `None`) at `slot`
    /// (`None` = unlimited). `None` when the slot did not exist for the whole window.
    #[must_use]
    pub fn hit_tokens(&self, lane: Option<usize>, slot: Option<usize>) -> Option<(u64, u64)> {
        let lanes: &[LaneWindow] = match lane {
            Some(index) => self.lanes.get(index).map_or(&[], std::slice::from_ref),
            None => &self.lanes,
        };
        let mut hits = 0;
        let mut input = 0;
        for lane in lanes {
            input += lane.input_tokens;
            hits += match slot {
                Some(index) => lane.slot_hit_tokens.get(index).copied().flatten()?,
                None => lane.infinite_hit_tokens,
            };
        }
        Some((hits, input))
    }

    /// `(hit tokens, input tokens)` of the shared pool at `slot` (at N × its blocks; `None` =
    /// unlimited). `None` without a pool, or when the slot has no figure for the window.
    #[must_use]
    pub fn pool_hit_tokens(&self, slot: Option<usize>) -> Option<(u64, u64)> {
        let pool = &self.pool.as_ref()?.lane;
        let hits = match slot {
            Some(index) => pool.slot_hit_tokens.get(index).copied().flatten()?,
            None => pool.infinite_hit_tokens,
        };
        Some((hits, pool.input_tokens))
    }
}

/// Hit rates over trace time.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Timeline {
    /// Window width in trace nanoseconds: `--window-seconds`, doubled each time the trace
    /// outgrows the windows kept (pairs of windows are merged, so the whole trace stays).
    pub window_ns: i64,
    /// The trace time of the first event (the chart's zero), `None` before it.
    pub origin_ns: Option<i64>,
    /// Oldest first; the last one may be open.
    pub windows: Vec<Window>,
}

/// Heap bytes, honestly counted from container capacities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryGauge {
    /// Σ `LiteHit` core state over lanes.
    pub core_bytes: u64,
    /// Σ capacity-axis accumulators over lanes.
    pub accumulator_bytes: u64,
    /// Facts rows formatted but not yet spilled to the temporary file.
    pub facts_buffer_bytes: u64,
    /// Facts rows spilled to disk (not in memory).
    pub facts_on_disk_bytes: u64,
    /// The monitor's own buffers (read buffer, time windows).
    pub monitor_bytes: u64,
}

impl MemoryGauge {
    /// Everything held in memory.
    #[must_use]
    pub fn resident_bytes(&self) -> u64 {
        self.core_bytes + self.accumulator_bytes + self.facts_buffer_bytes + self.monitor_bytes
    }
}

/// Ingest throughput, measured over the last second of wall time.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct IngestRate {
    pub requests_per_s: f64,
    pub blocks_per_s: f64,
    pub bytes_per_s: f64,
}

/// A rejected line, as shown to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineErrorView {
    /// 1-based line of the file generation it came from.
    pub line_number: u64,
    pub message: String,
}

/// What is wrong or odd with the input so far.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InputHealth {
    /// Lines skipped: the parser or the engine rejected them.
    pub bad_lines: u64,
    pub last_error: Option<LineErrorView>,
    /// Timestamps earlier than one already seen (clamped for TTL).
    pub out_of_order_timestamps: u64,
    pub read_events: u64,
    pub write_events: u64,
    pub last_timestamp_ns: Option<i64>,
    /// Lone surrogate escapes (`"\ud800"`, as Python's `json.dumps` writes them) that an
    /// OpenAI request log's lines held, read as U+FFFD (`watch --format openai`; the lines
    /// are kept, as `trace`/`replay --format openai` keep and count them).
    pub lone_surrogates: u64,
}

/// What the tailer is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FollowState {
    /// The file does not exist yet.
    #[default]
    Waiting,
    /// Behind the end of the file, draining at full speed.
    CatchingUp,
    /// At the end of the file, following appends.
    Following,
    /// Ingestion paused by the user (the backlog grows).
    Paused,
    /// `--exit-at-eof` reached the end.
    Finished,
    /// Stopped before the end: quit, SIGTERM / SIGINT / SIGHUP, or a closed standard output
    /// (the last snapshot of such a run says so, not `Following`).
    Stopped,
    /// Reading the file failed (shown; retried).
    Failed,
}

/// The followed source.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceStatus {
    pub path: String,
    pub state: FollowState,
    pub wake: WakeSource,
    /// Bytes behind the end of the file, but for `unterminated_bytes`.
    pub backlog_bytes: u64,
    /// A last line without its newline yet (everything before it read): it is taken once
    /// the newline comes, or at quit / `--exit-at-eof`, as `replay` takes it.
    pub unterminated_bytes: u64,
    /// Bytes of complete lines consumed from the current file.
    pub consumed_bytes: u64,
    /// Seconds until the backlog is drained at the current rate.
    pub catch_up_eta: Option<Duration>,
    /// The last truncation/replacement/creation, and how long ago.
    pub last_notice: Option<(TailNotice, Duration)>,
    /// The last read error, if reading currently fails.
    pub read_error: Option<String>,
    /// The file being read now (in a rotation or a directory, which generation).
    pub reading: Option<String>,
    /// Generations (rotated files, a directory's files) queued behind it.
    pub queued: usize,
    /// Bytes that could not be read: old content lost to a truncation (found in no copy),
    /// files deleted before their turn. Never silently dropped: shown and reported.
    pub lost_bytes: u64,
    /// Queued files deleted before their turn.
    pub lost_files: u64,
    /// The trace format (given, or told by the first good line; `None` until then).
    pub format: Option<litehit_core::formats::TraceFormat>,
    /// The input's own format when its lines are converted to trace lines before they are
    /// parsed (`openai`: request logs tokenized into standard rows); `None`: they are trace
    /// lines.
    pub converted_from: Option<&'static str>,
}

impl Default for SourceStatus {
    fn default() -> Self {
        Self {
            path: String::new(),
            state: FollowState::Waiting,
            wake: WakeSource::Events,
            backlog_bytes: 0,
            unterminated_bytes: 0,
            consumed_bytes: 0,
            catch_up_eta: None,
            last_notice: None,
            read_error: None,
            reading: None,
            queued: 0,
            lost_bytes: 0,
            lost_files: 0,
            format: None,
            converted_from: None,
        }
    }
}

/// The HTTP ingest endpoint (`watch --listen`): what came in over it so far.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpStatus {
    /// The address it listens on (`127.0.0.1:8080`).
    pub listen: String,
    /// Batches (`POST /v1/trace` bodies) read into the engine.
    pub requests: u64,
    /// Lines of those batches that were read (blank lines are neither read nor rejected).
    pub accepted_lines: u64,
    /// Lines of those batches that were skipped as bad (counted in `health.bad_lines` too).
    pub rejected_lines: u64,
    /// Batches waiting for the monitor to resume (paused), their clients still waiting.
    pub held_requests: u64,
}

/// The HTTP servers' budgets and checks (`watch --listen`, `--metrics-listen`): what they
/// refused so far, one counter per reason, and what they hold now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HttpRefusals {
    /// Connections open now.
    pub open_connections: u64,
    /// Connections refused over `--max-connections` (503).
    pub connection_cap: u64,
    /// Requests with a foreign `Host` or `Origin` (403).
    pub host_or_origin: u64,
    /// Posts without the `--listen-token-file` bearer token (401).
    pub token: u64,
    /// Posts whose `Content-Type` is not JSON lines (415).
    pub content_type: u64,
    /// Connections closed idle or half-sent, and bodies that paused, past
    /// `--http-idle-timeout` (408).
    pub timeout: u64,
    /// Bodies over `--max-body` (413).
    pub body_size: u64,
    /// Bodies refused over `--max-body-total`, or that memory could not hold (503).
    pub body_memory: u64,
    /// Bytes the bodies being read hold now, against `--max-body-total`.
    pub body_bytes_held: u64,
}

/// The background facts snapshot (`s`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FactsWrite {
    #[default]
    Idle,
    Writing {
        path: String,
        rows: u64,
    },
    Done {
        path: String,
        rows: u64,
        bytes: u64,
    },
    Failed {
        path: String,
        message: String,
    },
}

/// Whether facts rows are kept for a facts write.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FactsRetention {
    /// Rows are spilled to disk (`--facts-out`, or the TUI's `s`).
    #[default]
    Retaining,
    /// Nothing can read them (`--headless` without `--facts-out`, or `--no-facts`): counted,
    /// not kept.
    Off,
    /// A spill write failed: retention stopped, the numbers go on.
    Stopped { message: String },
}

/// Everything the monitor shows, published by the ingest thread.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LiveSnapshot {
    /// Increases with every publication.
    pub sequence: u64,
    /// Wall time since the monitor started.
    pub uptime: Duration,
    pub source: SourceStatus,
    /// The trace format read (given, or detected from the first line; `None` before it):
    /// the input's own (`openai`) when its lines are converted before parsing.
    pub trace_format: Option<&'static str>,
    /// The HTTP ingest endpoint, with `--listen`.
    pub http: Option<HttpStatus>,
    /// What the HTTP servers refused, with `--listen` or `--metrics-listen`.
    pub http_refused: Option<HttpRefusals>,
    pub slots: Vec<Slot>,
    /// The cache tiers each lane's hits are split among (`watch --tiers`).
    pub tiers: Option<TierPlan>,
    /// Lanes in order of first appearance (the instances; not the shared pool).
    pub lanes: Vec<LaneSnapshot>,
    /// Σ over [`Self::lanes`] (filled by [`Self::finished`]).
    pub totals: Totals,
    /// The shared pool lane (`watch --pool`): one cache fed by every instance's rows. Its
    /// slots are at N × each slot's blocks (N, its `shared_by`, = the instances), the same
    /// total capacity as the `total` of N caches of the slot each. Not in `lanes`, the totals
    /// or the timeline's `lanes` (its windows are each [`Window::pool`]).
    pub pool: Option<LaneSnapshot>,
    pub timeline: Timeline,
    pub memory: MemoryGauge,
    pub rate: IngestRate,
    pub health: InputHealth,
    pub facts_write: FactsWrite,
    /// Time since `facts_write` last changed (a finished write's message fades).
    pub facts_write_age: Duration,
    /// Facts rows produced so far.
    pub facts_rows: u64,
    /// Whether they are kept (spilled, `memory.facts_on_disk_bytes`) for a facts write.
    pub facts_retention: FactsRetention,
    /// A configuration or startup problem that stops ingestion (shown, never a crash).
    pub fatal: Option<String>,
    /// Where the facts rows are spilled, while they are retained (a named file beside the
    /// facts destination, or in `--spill-dir`).
    pub facts_spill_path: Option<String>,
    /// The engine ran out of memory: nothing after that line was replayed (the run ends with
    /// exit 1 once the facts so far are written).
    pub out_of_memory: Option<String>,
    /// KV bytes per block set live (`b`), replacing every lane's in the projections; the
    /// lanes' `block_bytes` already hold it.
    pub assumed_block_bytes: Option<u64>,
    /// The memory horizon every lane was given (`--memory-horizon`; never `Infinite`):
    /// results above it, and the ∞ bound, are lower bounds. `None`: exact at every capacity.
    pub memory_horizon: Option<Capacity>,
    /// [`Self::memory_horizon`] in bytes when it was given in GB (`None` in blocks or
    /// without one), as the readers show it. Filled by [`Self::finished`].
    pub memory_horizon_bytes: Option<u64>,
    /// `--headless` report lines dropped so far because standard output was not read.
    pub headless_lines_dropped: u64,
    /// `--model`: the model whose KV size per token made the lanes' block bytes, and its
    /// windowed layers (not modelled), named on every surface.
    pub model: Option<litehit_core::config::ModelKvSize>,
    /// `--engine`: whose prefix-cache rule the facts follow (`ideal` by default), named on
    /// every surface.
    pub engine_rule: litehit_core::facts::EngineRule,
    /// `--engine-metrics`: each endpoint's scrapes and its last window beside LiteHit's.
    pub engine_metrics: Vec<EngineMetricsView>,
    /// `watch --quota-total`: the best split of the total among the tenant lanes now.
    pub quota: Option<QuotaView>,
}

/// `watch --quota-total`'s plan at this snapshot: `query --quota-total`'s, over the lanes so
/// far (each instance lane a tenant, the pool the shared cache), from `litehit_report`'s one
/// planner, run by the ingest's assembly.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaView {
    /// The total as typed.
    pub total: Capacity,
    /// The plan, or why there is none yet (no lane yet, a floor's tenant not seen yet, ...).
    pub plan: Result<litehit_report::QuotaPlan, litehit_report::QuotaError>,
}

impl QuotaView {
    /// The plan's tenants, largest quota first (ties by id): the ones the screen lists.
    #[must_use]
    pub fn largest_quotas(&self, count: usize) -> Vec<&litehit_report::TenantQuota> {
        let Ok(plan) = &self.plan else {
            return Vec::new();
        };
        let mut tenants: Vec<&litehit_report::TenantQuota> = plan.tenants.iter().collect();
        tenants.sort_by(|a, b| {
            b.quota_blocks
                .cmp(&a.quota_blocks)
                .then_with(|| a.instance_id.cmp(&b.instance_id))
        });
        tenants.truncate(count);
        tenants
    }
}

/// One `--engine-metrics` endpoint as the surfaces show it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EngineMetricsView {
    /// Its instance, else its URL.
    pub label: String,
    pub url: String,
    /// The lane it compares with (`None`: every instance).
    pub instance_id: Option<String>,
    /// Scrapes read, and scrapes that failed (each one shown: `last_error`).
    pub scrapes: u64,
    pub failed_scrapes: u64,
    /// Why the last scrape failed; `None` once one succeeds.
    pub last_error: Option<String>,
    /// The engine's cumulative prefix-cache query and hit tokens, at the last scrape.
    pub query_tokens: Option<u64>,
    pub hit_tokens: Option<u64>,
    /// `vllm:cache_config_info`'s `num_gpu_blocks` and `block_size`, when said.
    pub pool: Option<(u64, u64)>,
    /// The last window between two scrapes, the engine's and LiteHit's tokens.
    pub window: Option<EngineWindow>,
    /// LiteHit's side is at the `engine` slot (else at ∞).
    pub compared_at_engine_slot: bool,
}

/// The engine's and LiteHit's tokens over one window between two scrapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EngineWindow {
    pub engine_query_tokens: u64,
    pub engine_hit_tokens: u64,
    pub litehit_input_tokens: u64,
    pub litehit_hit_tokens: u64,
}

impl EngineWindow {
    /// The engine's hit rate over the window.
    #[must_use]
    pub fn engine_hit_rate(&self) -> Option<f64> {
        ratio(self.engine_hit_tokens, self.engine_query_tokens)
    }

    /// LiteHit's hit rate over the window.
    #[must_use]
    pub fn litehit_hit_rate(&self) -> Option<f64> {
        ratio(self.litehit_hit_tokens, self.litehit_input_tokens)
    }
}

/// A slot's capacity in blocks of `block_bytes`, at `shared_by` × the slot (1 for an
/// instance, N for the shared pool; `None`: ∞): the one place a live slot becomes blocks,
/// for the hits the ingest reads at it (cumulative and per window) and for the capacities
/// the readers show.
#[must_use]
pub fn slot_blocks(capacity: Capacity, block_bytes: u64, shared_by: u64) -> Option<u64> {
    litehit_core::projector::pooled_capacity_blocks(capacity, block_bytes, shared_by)
}

/// [`slot_blocks`] of each of `slots`.
#[must_use]
pub fn slot_capacity_blocks(slots: &[Slot], block_bytes: u64, shared_by: u64) -> Vec<Option<u64>> {
    slots
        .iter()
        .map(|slot| slot_blocks(slot.capacity, block_bytes, shared_by))
        .collect()
}

impl LiveSnapshot {
    /// The snapshot with the figures derived from its counts filled: each lane's
    /// `shared_by` (1; the pool's N = the instances) and slot capacities in its blocks, and
    /// the [`Totals`]. The ingest calls it on every snapshot it publishes, so a reader finds
    /// them there and derives nothing; a snapshot built by hand (tests, benchmarks) calls it
    /// to read as a published one.
    #[must_use]
    pub fn finished(mut self) -> Self {
        let shared_by = self.lanes.len() as u64;
        let slots = &self.slots;
        let fill = |lane: &mut LaneSnapshot, shared_by: u64| {
            lane.shared_by = shared_by;
            lane.slot_capacity_blocks = slot_capacity_blocks(slots, lane.block_bytes, shared_by);
        };
        for lane in &mut self.lanes {
            fill(lane, 1);
        }
        if let Some(pool) = &mut self.pool {
            fill(pool, shared_by);
        }
        self.totals = Totals::of(&self.lanes, &self.slots);
        self.memory_horizon_bytes = match self.memory_horizon {
            Some(Capacity::Gigabytes(gb)) => litehit_core::projector::capacity_bytes_for_gb(gb),
            Some(Capacity::Blocks(_) | Capacity::Infinite) | None => None,
        };
        self
    }

    /// Whether the ∞ bound (of some lane) is only a lower bound, under a memory horizon.
    #[must_use]
    pub fn infinite_is_lower_bound(&self) -> bool {
        self.memory_horizon.is_some() || self.lanes.iter().any(|lane| lane.is_lower_bound(None))
    }

    /// Any lane has a TTL.
    #[must_use]
    pub fn has_ttl(&self) -> bool {
        self.lanes.iter().any(|lane| lane.ttl_ns > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(
        block_size_tokens: u64,
        input_tokens: u64,
        slot_hit_blocks: Vec<u64>,
        infinite: u64,
    ) -> LaneSnapshot {
        LaneSnapshot {
            block_size_tokens,
            input_tokens,
            slot_hit_blocks,
            infinite_hit_blocks: infinite,
            ..LaneSnapshot::default()
        }
    }

    #[test]
    fn totals_sum_tokens_not_rates() {
        // 2 hits × 4 tokens of 10 and 1 hit × 16 tokens of 100: (8 + 16) / 110, not the mean.
        let lanes = [lane(4, 10, vec![2], 2), lane(16, 100, vec![1], 3)];
        let slots = [Slot {
            id: 1,
            capacity: Capacity::Blocks(1),
        }];
        let totals = Totals::of(&lanes, &slots);
        assert_eq!(totals.slot_hit_tokens, vec![24]);
        assert_eq!(totals.infinite_hit_tokens, 8 + 48);
        assert_eq!(totals.slot_hit_rate(0), Some(24.0 / 110.0));
    }

    #[test]
    fn rates_need_a_denominator() {
        assert_eq!(ratio(0, 0), None);
        assert_eq!(lane(4, 0, vec![0], 0).slot_hit_rate(0), None);
    }

    #[test]
    fn window_without_the_slot_has_no_rate() {
        let window = Window {
            start_ns: 0,
            lanes: vec![
                LaneWindow {
                    input_tokens: 10,
                    slot_hit_tokens: vec![Some(4), None],
                    infinite_hit_tokens: 6,
                },
                LaneWindow {
                    input_tokens: 5,
                    slot_hit_tokens: vec![Some(1), None],
                    infinite_hit_tokens: 2,
                },
            ],
            pool: None,
            open: false,
        };
        assert_eq!(window.hit_tokens(None, Some(0)), Some((5, 15)));
        assert_eq!(window.hit_tokens(Some(1), None), Some((2, 5)));
        assert_eq!(window.hit_tokens(None, Some(1)), None);
        assert_eq!(window.hit_tokens(Some(7), Some(0)), Some((0, 0)));
        assert_eq!(window.pool_hit_tokens(None), None, "no pool");
    }

    #[test]
    fn the_pool_window_is_apart_from_the_instances_sum() {
        let lane = |input_tokens, slot, infinite| LaneWindow {
            input_tokens,
            slot_hit_tokens: vec![slot],
            infinite_hit_tokens: infinite,
        };
        let window = Window {
            start_ns: 0,
            lanes: vec![lane(10, Some(2), 4), lane(6, Some(1), 3)],
            pool: Some(PoolWindow {
                shared_by: 2,
                lane: lane(16, Some(9), 12),
            }),
            open: true,
        };
        assert_eq!(window.hit_tokens(None, Some(0)), Some((3, 16)));
        assert_eq!(window.hit_tokens(None, None), Some((7, 16)));
        assert_eq!(window.pool_hit_tokens(Some(0)), Some((9, 16)));
        assert_eq!(window.pool_hit_tokens(None), Some((12, 16)));
        assert_eq!(window.pool_hit_tokens(Some(1)), None, "no such slot");
        let born = Window {
            pool: Some(PoolWindow {
                shared_by: 3,
                lane: lane(16, None, 12),
            }),
            ..window
        };
        assert_eq!(
            born.pool_hit_tokens(Some(0)),
            None,
            "N changed in the window"
        );
        assert_eq!(born.pool_hit_tokens(None), Some((12, 16)));
    }
}
