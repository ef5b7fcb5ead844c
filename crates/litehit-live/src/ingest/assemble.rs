//! Snapshot assembly: the engine's state, the tailer's and the run's, as one `LiveSnapshot`.
//!
//! The only place a [`LiveSnapshot`] is built. Every hit number is read from the engine, its
//! lanes and their capacity-axis accumulators (a slot added late is exact since the start of
//! the trace), and the hit-vs-capacity curve is the accumulator sampled at
//! [`CURVE_SAMPLES_PER_DOUBLING`] capacities per doubling, up to [`curve_end_blocks`] (OPT's
//! accumulator, with `--policy lru,opt`, at the same capacities); the
//! rest is the tailer's lag, the rate meter, the memory gauges and the facts writer's status;
//! with `--quota-total`, the best split of it among the lanes (`litehit_report`'s planner).
//! [`LiveSnapshot::finished`] then fills the figures derived from those counts (slot
//! capacities, totals). Readers (TUI, headless, `/metrics`) then only format it.

use litehit_core::projector::sampling::{log_spaced, sample_at};
use litehit_core::projector::tiers::accumulated_tier_hit_blocks;
use std::sync::Arc;
use std::time::{Duration, Instant};

use litehit_core::engine::Lane;

use super::Ingest;
use super::pipeline::{Pipeline, strip_line_prefix};
use super::timeline::block_bytes_of;
use crate::snapshot::{
    CAPACITY_FRACTION_PERCENTS, CurvePoint, FactsRetention, FollowState, FractionCapacity,
    HttpStatus, InputHealth, LaneSnapshot, LineErrorView, LiveSnapshot, MemoryGauge, QuotaView,
    SourceStatus, slot_capacity_blocks,
};
use litehit_report::{TenantCurve, plan_quota_split};

/// Samples of the hits-vs-capacity curve per doubling of capacity (the chart's capacity axis
/// is logarithmic).
const CURVE_SAMPLES_PER_DOUBLING: u32 = 12;

/// Where a lane's sampled curve ends: the power of two at or above a little past both its
/// saturation point and its largest slot (a slot far past saturation counts as 64 times the
/// saturation point: the curve is flat there). It only ever doubles as the trace grows, so
/// the chart's capacity axis, which ends there, does not jump with every frame.
fn curve_end_blocks(saturation_blocks: u64, largest_slot_blocks: u64) -> u64 {
    let past_saturation = saturation_blocks.saturating_add(saturation_blocks / 16);
    let wanted = past_saturation
        .max(largest_slot_blocks.min(saturation_blocks.saturating_mul(64)))
        .max(2);
    wanted.checked_next_power_of_two().unwrap_or(u64::MAX)
}

impl Pipeline {
    fn capacity_for_fraction(lane: &Lane) -> Vec<FractionCapacity> {
        let accumulator = lane
            .accumulator()
            .expect("the live engine keeps capacity curves");
        CAPACITY_FRACTION_PERCENTS
            .iter()
            .map(|&percent| {
                let capacity_blocks = accumulator.knee_capacity_blocks(percent);
                FractionCapacity {
                    percent,
                    capacity_blocks,
                    hit_blocks: accumulator.hit_blocks_at(capacity_blocks),
                }
            })
            .collect()
    }

    fn lane_snapshot(&self, lane: &Lane) -> LaneSnapshot {
        self.lane_snapshot_at(lane, 1)
    }

    /// [`Self::lane_snapshot`] with each slot at `instances` × its blocks: the shared pool
    /// at the same total capacity as the `instances` caches of the slot each.
    fn lane_snapshot_at(&self, lane: &Lane, instances: u64) -> LaneSnapshot {
        let spec = lane.spec();
        let block_bytes = block_bytes_of(lane, self.assumed_block_bytes);
        let accumulator = lane
            .accumulator()
            .expect("the live engine keeps capacity curves");
        let saturation = accumulator.saturation_capacity_blocks();
        // At `instances` × each tier's size (× 1: the tiers as typed).
        let tier_bands = self
            .tiers
            .as_ref()
            .map_or_else(Vec::new, |plan| plan.pooled_bands(block_bytes, instances));
        let largest_slot = self
            .slots
            .iter()
            .filter_map(|slot| slot.capacity.blocks(block_bytes))
            .max()
            .unwrap_or(0);
        let capacities: Vec<u64> = log_spaced(
            curve_end_blocks(saturation, largest_slot),
            CURVE_SAMPLES_PER_DOUBLING,
        )
        .collect();
        let points = |hits| -> Vec<CurvePoint> {
            sample_at(hits, capacities.iter().copied())
                .into_iter()
                .map(|(capacity_blocks, hit_blocks)| CurvePoint {
                    capacity_blocks,
                    hit_blocks,
                })
                .collect()
        };
        let curve = points(accumulator);
        // OPT's at LRU's capacities, so the chart's axis is the same for both.
        let opt_curve = lane.opt_accumulator().map(points);
        LaneSnapshot {
            observed: lane.observed(),
            // The smallest LRU cache whose hits reach the engine's observed ones, when every
            // row said them (the curve is then over the same rows).
            observed_effective_capacity_blocks: (lane.observed().requests == lane.requests()
                && lane.requests() > 0)
                .then(|| {
                    accumulator.min_capacity_for_hit_blocks(
                        lane.observed()
                            .hit_tokens
                            .div_ceil(spec.block_size_tokens.max(1)),
                    )
                })
                .flatten(),
            instance_id: spec.instance_id.clone(),
            block_size_tokens: spec.block_size_tokens,
            block_bytes,
            ttl_ns: spec.ttl_ns,
            requests: lane.requests(),
            input_tokens: lane.input_tokens(),
            request_blocks: lane.request_blocks(),
            unique_blocks: lane.core().current_unique_blocks(),
            ttl_expired_blocks: lane.core().ttl_expired_blocks(),
            clamped_timestamps: lane.clamped_timestamps(),
            // `shared_by` and `slot_capacity_blocks` are filled by `LiveSnapshot::finished`,
            // from the same conversion.
            slot_hit_blocks: slot_capacity_blocks(&self.slots, block_bytes, instances)
                .into_iter()
                .map(|blocks| match blocks {
                    Some(blocks) => accumulator.hit_blocks_at(blocks),
                    None => lane.infinite_hit_blocks(),
                })
                .collect(),
            infinite_hit_blocks: lane.infinite_hit_blocks(),
            opt_slot_hit_blocks: lane.opt_accumulator().map(|opt| {
                slot_capacity_blocks(&self.slots, block_bytes, instances)
                    .into_iter()
                    .map(|blocks| match blocks {
                        Some(blocks) => opt.hit_blocks_at(blocks),
                        None => lane.infinite_hit_blocks(),
                    })
                    .collect()
            }),
            saturation_capacity_blocks: saturation,
            curve,
            opt_curve,
            // The OPT core and its accumulator, with OPT, count too.
            core_memory_bytes: lane.core_memory_usage_bytes() as u64,
            accumulator_memory_bytes: (accumulator.memory_usage_bytes()
                + lane.opt_accumulator().map_or(
                    0,
                    litehit_core::projector::CapacityAxisAccumulator::memory_usage_bytes,
                )) as u64,
            memory_horizon_blocks: lane.memory_horizon_blocks(),
            // The same bands as `query --tiers` (the pool's at N × each tier, as its
            // summary line's), over the lane's whole history.
            tier_hit_blocks: accumulated_tier_hit_blocks(accumulator, &tier_bands),
            tier_capacity_blocks: self.tiers.as_ref().map_or_else(Vec::new, |plan| {
                plan.pooled_capacity_blocks(block_bytes, instances)
            }),
            tier_lower_bounds: tier_bands
                .iter()
                .map(|band| band.is_lower_bound(lane.memory_horizon_blocks()))
                .collect(),
            // On the lane's own capacity axis: the pool's are in its total capacity.
            capacity_for_fraction: Self::capacity_for_fraction(lane),
            ..LaneSnapshot::default()
        }
    }
}

impl Pipeline {
    /// `--quota-total`: the best split over the instance lanes (tenants) and the pool, by
    /// `litehit_report`'s planner on each lane's exact curve at the bytes per block shown.
    fn quota_view(&self, request: &litehit_report::QuotaRequest) -> QuotaView {
        let tenants: Vec<TenantCurve<'_>> = self
            .engine
            .instance_lanes()
            .iter()
            .map(|lane| self.tenant_curve(lane))
            .collect();
        let pool = self.engine.pool_lane().map(|lane| self.tenant_curve(lane));
        QuotaView {
            total: request.total,
            plan: plan_quota_split(&tenants, pool, request),
        }
    }

    /// A lane as the quota planner reads it: its exact curve, at the bytes per block shown.
    fn tenant_curve<'a>(&self, lane: &'a Lane) -> TenantCurve<'a> {
        TenantCurve {
            instance_id: &lane.spec().instance_id,
            block_size_tokens: lane.spec().block_size_tokens,
            block_bytes: block_bytes_of(lane, self.assumed_block_bytes),
            input_tokens: lane.input_tokens(),
            hits: lane
                .accumulator()
                .expect("the live engine keeps capacity curves"),
        }
    }
}

impl Ingest {
    /// Publishes the current state (latest wins; the UI takes it at its next frame).
    #[expect(clippy::too_many_lines, reason = "one line per field of the snapshot")]
    pub(super) fn publish(&mut self, now: Instant) {
        let pipeline = &self.pipeline;
        let lanes = pipeline.engine.instance_lanes();
        let engine_stats = pipeline.engine.stats();
        let requests: u64 = lanes.iter().map(Lane::requests).sum();
        let blocks: u64 = lanes.iter().map(Lane::request_blocks).sum();
        self.rate = self
            .rates
            .sample(now, requests, blocks, pipeline.consumed_bytes_total);
        // A last line still waiting for its newline is not lag: the writer has it.
        let unterminated_bytes = if self.caught_up() {
            self.tailer.pending_partial_bytes() as u64
        } else {
            0
        };
        let backlog_bytes = self
            .tailer
            .backlog_bytes()
            .saturating_sub(unterminated_bytes);
        let catch_up_eta = (backlog_bytes > 0 && self.rate.bytes_per_s > 0.0)
            .then(|| Duration::from_secs_f64(backlog_bytes as f64 / self.rate.bytes_per_s));
        let state = self.run.shown(if self.read_error.is_some() {
            FollowState::Failed
        } else {
            self.state
        });
        let lane_snapshots: Vec<LaneSnapshot> = lanes
            .iter()
            .map(|lane| pipeline.lane_snapshot(lane))
            .collect();
        // The shared pool lane (`--pool`) is beside the instances, not one of them: the
        // totals and the timeline's lanes leave it out (its windows are apart), the memory
        // gauges count it.
        let pool = pipeline
            .engine
            .pool_lane()
            .map(|lane| pipeline.lane_snapshot_at(lane, lanes.len() as u64));
        let core_bytes: u64 = lane_snapshots
            .iter()
            .chain(&pool)
            .map(|lane| lane.core_memory_bytes)
            .sum();
        let accumulator_bytes: u64 = lane_snapshots
            .iter()
            .chain(&pool)
            .map(|lane| lane.accumulator_memory_bytes)
            .sum();
        let monitor_bytes = self.tailer.memory_usage_bytes()
            + pipeline.timeline.memory_usage_bytes()
            + pipeline.event.keys.capacity() * size_of::<i64>();
        self.sequence += 1;
        let snapshot = LiveSnapshot {
            sequence: self.sequence,
            uptime: now.duration_since(self.started),
            source: SourceStatus {
                path: match (self.config.follow_file, self.config.listen) {
                    (false, Some(listen)) => format!("http://{listen}/v1/trace"),
                    _ => self.config.trace_path.display().to_string(),
                },
                state,
                wake: self.wake,
                backlog_bytes,
                unterminated_bytes,
                consumed_bytes: self.tailer.consumed_offset(),
                catch_up_eta,
                last_notice: self
                    .last_notice
                    .map(|(notice, when)| (notice, now.duration_since(when))),
                read_error: self.read_error.clone(),
                reading: self.tailer.reading().map(|path| path.display().to_string()),
                queued: self.tailer.queued(),
                lost_bytes: self.tailer.lost_bytes(),
                lost_files: self.tailer.lost_generations(),
                format: pipeline.trace_format(),
                converted_from: self.config.source_format,
            },
            trace_format: self.config.source_format.or_else(|| {
                pipeline
                    .parser
                    .as_ref()
                    .map(|parser| parser.format().name())
            }),
            http: self.config.listen.map(|listen| HttpStatus {
                listen: listen.to_string(),
                held_requests: self.held_batches.len() as u64,
                ..pipeline.http.clone()
            }),
            http_refused: self
                .config
                .http_counters
                .as_ref()
                .map(|counters| counters.load()),
            slots: pipeline.slots.clone(),
            tiers: pipeline.tiers.clone(),
            model: self.config.model.clone(),
            engine_rule: self.config.engine_rule,
            quota: pipeline
                .quota
                .as_ref()
                .map(|request| pipeline.quota_view(request)),
            engine_metrics: self
                .engine_scrapes
                .iter()
                .map(|state| {
                    state.view(
                        pipeline
                            .slots
                            .first()
                            .is_some_and(crate::snapshot::Slot::is_engine),
                    )
                })
                .collect(),
            timeline: pipeline.timeline.snapshot(
                lanes,
                pipeline.engine.pool_lane(),
                &pipeline.slots,
                pipeline.assumed_block_bytes,
            ),
            lanes: lane_snapshots,
            totals: crate::snapshot::Totals::default(),
            pool,
            memory: MemoryGauge {
                core_bytes,
                accumulator_bytes,
                facts_buffer_bytes: pipeline.spill.buffer.capacity() as u64,
                facts_on_disk_bytes: pipeline.spill.on_disk_bytes,
                monitor_bytes: monitor_bytes as u64,
            },
            rate: self.rate,
            health: InputHealth {
                bad_lines: engine_stats.bad_lines,
                last_error: engine_stats.last_error.as_ref().map(|error| LineErrorView {
                    line_number: error.line_number,
                    message: strip_line_prefix(&error.message, error.line_number).to_owned(),
                }),
                out_of_order_timestamps: engine_stats.out_of_order_timestamps,
                read_events: engine_stats.read_events,
                write_events: engine_stats.write_events,
                last_timestamp_ns: engine_stats.last_timestamp_ns,
                lone_surrogates: self
                    .config
                    .lone_surrogates
                    .load(std::sync::atomic::Ordering::Relaxed),
            },
            facts_write: self.facts.status().clone(),
            facts_write_age: self.facts.status_age(now),
            facts_rows: pipeline.spill.rows,
            facts_retention: match (&pipeline.spill.error, pipeline.spill.retaining()) {
                (Some(message), _) => FactsRetention::Stopped {
                    message: message.clone(),
                },
                (None, true) => FactsRetention::Retaining,
                (None, false) => FactsRetention::Off,
            },
            fatal: pipeline.spill.error.clone(),
            out_of_memory: pipeline.out_of_memory.clone(),
            facts_spill_path: pipeline.spill.path().map(|path| path.display().to_string()),
            assumed_block_bytes: pipeline.assumed_block_bytes,
            memory_horizon: pipeline
                .engine
                .memory_horizon()
                .filter(|_| pipeline.engine.has_memory_horizon()),
            memory_horizon_bytes: None,
            headless_lines_dropped: self
                .config
                .headless_lines_dropped
                .load(std::sync::atomic::Ordering::Relaxed),
        }
        .finished();
        // No receiver left means the UI is gone; the next command will be Shutdown.
        self.snapshots.send_replace(Arc::new(snapshot));
        self.last_publish = now;
        self.dirty = false;
    }
}
