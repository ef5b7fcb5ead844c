//! Trace time for `query` and `mrc`: `--from`/`--to`/`--exclude-warmup` resolved to a
//! [`TimeRange`], and `query --window`, one line per window and capacity (JSONL or CSV) —
//! or, with `--tiers`, one line per window and tier: the hit tokens the tier served in the
//! window, their share of the window's input tokens, and the window's miss share. With a
//! shared pool lane, the pool's lines follow each window's: at N × each capacity, or with
//! `--tiers` its tiers at N × each size (`pool_tier_capacity_blocks`).
//!
//! Trace time is seconds since the first request (the smallest `timestamp_ns` of all the
//! facts files): `600`, `600s`, `10m`. A plain integer of at least 10^15, or an integer with
//! `ns` (`1700000000000000000ns`), is an absolute `timestamp_ns` instead. The cache state is
//! always the one built from the start (the facts already hold it); only the accounting is
//! restricted. Hits come from `projector` only (through [`QueryTotals`]).

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::PathBuf;

use super::number_format::{append_g6, append_json_string};
use super::pool_detect::LaneFingerprints;
use super::query_jsonl::{
    PoolRule, QueryError, QuerySlots, QueryTotals, TierPlan, append_block_count_or_unlimited,
};
/// Where `query` and `mrc` find them, as before they moved to [`super::query_span`].
pub use super::query_span::{EmptySpan, widen_span};
use super::query_span::{TimeRange, time_in_message};
use super::summary::ratio;
use litehit_core::display;
use litehit_core::facts::FactRecord;
use litehit_core::facts::file::FactsReader;
use litehit_core::grammar::{GrammarError, parse_duration_seconds};
use litehit_core::projector::tiers::{TierBand, project_tiers};
use litehit_core::projector::{self, Capacity};

/// A plain integer at least this large is an absolute `timestamp_ns` (about 11.6 days after
/// the Unix epoch; trace times are far smaller, epoch nanoseconds far larger).
pub const ABSOLUTE_NS_THRESHOLD: u64 = 1_000_000_000_000_000;

const NS_PER_SECOND: f64 = 1e9;

/// A point in time as typed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimePoint {
    /// Seconds since the first request.
    TraceSeconds(f64),
    /// An absolute `timestamp_ns`.
    AbsoluteNs(i64),
}

/// How much of the start to leave out of the accounting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Warmup {
    /// A share of the trace's span (first to last request), `0.2` for `20%`.
    Fraction(f64),
    Seconds(f64),
}

/// `--from` / `--to`: trace seconds (`600`, `10m`) or absolute ns (see the module doc).
pub fn parse_time_point(input: &str) -> Result<TimePoint, GrammarError> {
    let text = input.trim();
    let absolute = |digits: &str| digits.parse::<i64>().ok().map(TimePoint::AbsoluteNs);
    if let Some(digits) = text.strip_suffix("ns")
        && let Some(point) = absolute(digits.trim_end())
    {
        return Ok(point);
    }
    // A plain integer (digits only) of at least 10^15 is absolute; one beyond i64 is refused.
    if !text.is_empty()
        && text.bytes().all(|byte| byte.is_ascii_digit())
        && text
            .parse::<u64>()
            .ok()
            .is_none_or(|value| value >= ABSOLUTE_NS_THRESHOLD)
    {
        return absolute(text).ok_or(GrammarError::TooLarge);
    }
    parse_duration_seconds(text).map(TimePoint::TraceSeconds)
}

/// `--exclude-warmup`: a share of the span (`20%`) or a duration (`600s`, `10m`).
pub fn parse_warmup(input: &str) -> Result<Warmup, GrammarError> {
    let text = input.trim();
    if let Some(percent) = text.strip_suffix('%') {
        return match percent.trim_end().parse::<f64>() {
            // 100% would leave only the rows at the last timestamp: no warm-up, a mistake.
            Ok(value) if (0.0..100.0).contains(&value) => Ok(Warmup::Fraction(value / 100.0)),
            _ => Err(GrammarError::Expected {
                input: input.to_owned(),
                expected: "a share from 0% to below 100%, or a duration such as 600s",
            }),
        };
    }
    parse_duration_seconds(text).map(Warmup::Seconds)
}

/// What was typed for the accounted span.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimeSpec {
    pub from: Option<TimePoint>,
    pub to: Option<TimePoint>,
    pub exclude_warmup: Option<Warmup>,
}

impl TimeSpec {
    /// Whether resolving needs the trace's first and last timestamps.
    #[must_use]
    pub fn needs_span(&self) -> bool {
        matches!(self.from, Some(TimePoint::TraceSeconds(_)))
            || matches!(self.to, Some(TimePoint::TraceSeconds(_)))
            || self.exclude_warmup.is_some()
    }

    /// The accounted range for a trace whose requests span `first_ns..=last_ns`: the later
    /// of `--from` and the end of the warm-up, up to `--to`.
    #[must_use]
    pub fn resolve(&self, first_ns: i64, last_ns: i64) -> TimeRange {
        let at = |point: TimePoint| match point {
            TimePoint::AbsoluteNs(ns) => ns,
            TimePoint::TraceSeconds(seconds) => offset_ns(first_ns, seconds * NS_PER_SECOND),
        };
        let mut range = TimeRange::default();
        if let Some(from) = self.from {
            range.from_ns = at(from);
        }
        if let Some(warmup) = self.exclude_warmup {
            let warmup_ns = match warmup {
                #[expect(clippy::cast_precision_loss, reason = "a span in ns, as a share")]
                Warmup::Fraction(share) => (last_ns.saturating_sub(first_ns)) as f64 * share,
                Warmup::Seconds(seconds) => seconds * NS_PER_SECOND,
            };
            range.from_ns = range.from_ns.max(offset_ns(first_ns, warmup_ns));
        }
        if let Some(to) = self.to {
            range.to_ns = at(to);
        }
        range
    }
}

/// `Err` with both ends when the resolved span starts at or after its end (`--from 30m --to
/// 10m`, or a warm-up that ends after `--to`): no row could be in it.
pub fn check_span_order(range: TimeRange, first_ns: Option<i64>) -> Result<(), String> {
    if range.to_ns == i64::MAX || range.from_ns < range.to_ns {
        return Ok(());
    }
    Err(format!(
        "the accounted span is empty: it starts at {} (--from, or the end of \
         --exclude-warmup) and --to ends it at {}",
        time_in_message(range.from_ns, first_ns),
        time_in_message(range.to_ns, first_ns)
    ))
}

/// `base_ns + offset_ns`, the offset floored, saturating.
fn offset_ns(base_ns: i64, offset_ns: f64) -> i64 {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "floor, saturating at the i64 range"
    )]
    let offset = offset_ns.floor() as i64;
    base_ns.saturating_add(offset)
}

/// The smallest and largest `timestamp_ns` over every row of `facts_paths` (`None` without
/// rows): a first pass, before the query proper.
pub fn trace_span(facts_paths: &[PathBuf]) -> Result<Option<(i64, i64)>, QueryError> {
    let mut span: Option<(i64, i64)> = None;
    let mut record = FactRecord::default();
    for path in facts_paths {
        let mut reader = FactsReader::open(path)?;
        while reader.next_record(&mut record)? {
            span = widen_span(span, record.timestamp_ns);
        }
    }
    Ok(span)
}

/// The first and last `timestamp_ns` ([`trace_span`]), every lane's fingerprint (its
/// `instance_id`, rows and files: the pool lane is recognised from them) and every distinct
/// `(block_bytes, block_size_tokens)` in first-seen order (for the implausible KV size
/// warning, as the plain query's summary has them).
pub type SpanAndInstances = (Option<(i64, i64)>, LaneFingerprints, Vec<(u64, u64)>);

/// [`trace_span`] and every lane of the rows (a pool comparison needs the pool and N, the
/// instances besides it, before the windows are written); `Err` when two files hold the
/// same rows of a lane (one file given twice).
pub fn trace_span_and_instances(facts_paths: &[PathBuf]) -> Result<SpanAndInstances, QueryError> {
    let mut span: Option<(i64, i64)> = None;
    let mut lanes = LaneFingerprints::new();
    let mut geometries: Vec<(u64, u64)> = Vec::new();
    let mut record = FactRecord::default();
    for (index, path) in facts_paths.iter().enumerate() {
        let mut reader = FactsReader::open(path)?;
        lanes.start_file(index);
        while reader.next_record(&mut record)? {
            span = widen_span(span, record.timestamp_ns);
            lanes.observe(&record);
            let geometry = (record.block_bytes, record.block_size_tokens);
            if geometries.last() != Some(&geometry) && !geometries.contains(&geometry) {
                geometries.push(geometry);
            }
        }
    }
    // Windows are written as rows come: a file given twice is refused before.
    lanes.check_no_repeated_rows(facts_paths)?;
    Ok((span, lanes, geometries))
}

/// N for the pool comparison of `query --window`: the instances besides the pool lane with
/// rows in `range` (as the summary's pool line counts them); `None` without a pool lane, or
/// when the pool has no rows in `range`. `rule` is [`PoolRule::Recognised`] (by
/// [`trace_span_and_instances`]'s lanes, whose ids are `instances`); a restricted range
/// needs one more pass.
pub fn pool_instance_count(
    facts_paths: &[PathBuf],
    rule: &PoolRule,
    range: TimeRange,
    instances: &HashSet<String, impl std::hash::BuildHasher>,
) -> Result<Option<u64>, QueryError> {
    let Some(name) = rule.candidate().filter(|name| instances.contains(*name)) else {
        return Ok(None);
    };
    if range.is_everything() {
        return Ok(Some(instances.len() as u64 - 1));
    }
    let mut in_range: HashSet<String> = HashSet::new();
    let mut pool_in_range = false;
    let mut record = FactRecord::default();
    for path in facts_paths {
        let mut reader = FactsReader::open(path)?;
        while reader.next_record(&mut record)? {
            if !range.contains(record.timestamp_ns) {
                continue;
            }
            if record.instance_id == name {
                pool_in_range = true;
            } else if !in_range.contains(record.instance_id.as_str()) {
                in_range.insert(record.instance_id.clone());
            }
        }
    }
    Ok(pool_in_range.then_some(in_range.len() as u64))
}

/// Per window: requests, input tokens, and hit tokens per slot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowTotals {
    pub requests: u64,
    pub input_tokens: u64,
    pub hit_tokens: Vec<u64>,
    /// Per tier (with `--tiers`): hit tokens the tier served in the window.
    pub tier_hit_tokens: Vec<u64>,
    /// The shared pool lane's rows in the window (with [`QueryWindows::with_pool_lane`]).
    pub pool_requests: u64,
    pub pool_input_tokens: u64,
    /// Per slot: the pool's hit tokens at N × the slot's capacity.
    pub pool_hit_tokens: Vec<u64>,
    /// Per tier (with `--tiers`): the hit tokens the pool's tier of N × its size served.
    pub pool_tier_hit_tokens: Vec<u64>,
}

/// The pool lane of `query --window`: its rows projected at N × each slot's capacity.
#[derive(Debug, Clone)]
struct PoolLane {
    name: String,
    /// N: the instances besides the pool.
    instances: u64,
    capacities: Vec<Capacity>,
    /// `block_bytes` of the pool's rows, once one was seen.
    block_bytes: Option<u64>,
    /// A second `block_bytes` among the pool's rows (an error at the end).
    other_block_bytes: Option<u64>,
    /// Per slot: N × the slot's blocks for `block_bytes`; `None` = unlimited.
    capacity_blocks: Vec<Option<u64>>,
    hit_blocks: Vec<u64>,
    /// With `--tiers`: the tiers at N × each size, as the summary's pool line has them.
    tiers: Option<TierPlan>,
    /// Per tier: N × the tier's blocks for `block_bytes`; `None` = unlimited.
    tier_capacity_blocks: Vec<Option<u64>>,
    tier_bands: Vec<TierBand>,
    tier_hit_blocks: Vec<u64>,
}

impl PoolLane {
    /// Projects a pool row at N × every slot into `hit_blocks`.
    fn project(&mut self, record: &FactRecord) {
        match self.block_bytes {
            Some(block_bytes) if block_bytes != record.block_bytes => {
                self.other_block_bytes.get_or_insert(record.block_bytes);
                return;
            }
            Some(_) => {}
            None => {
                self.block_bytes = Some(record.block_bytes);
                self.capacity_blocks = self
                    .capacities
                    .iter()
                    .map(|&capacity| {
                        projector::pooled_capacity_blocks(
                            capacity,
                            record.block_bytes,
                            self.instances,
                        )
                    })
                    .collect();
                if let Some(plan) = &self.tiers {
                    self.tier_capacity_blocks =
                        plan.pooled_capacity_blocks(record.block_bytes, self.instances);
                    self.tier_bands = plan.pooled_bands(record.block_bytes, self.instances);
                }
            }
        }
        if self.tiers.is_some() {
            project_tiers(&record.fact, &self.tier_bands, &mut self.tier_hit_blocks);
        }
        for (hits, capacity) in self.hit_blocks.iter_mut().zip(&self.capacity_blocks) {
            *hits = match *capacity {
                Some(blocks) => projector::project_blocks(&record.fact, blocks),
                None => projector::project_infinite(&record.fact),
            };
        }
    }
}

/// The windows of `query --window`, keyed by index: window `k` holds the accounted rows
/// with `origin_ns + k·width_ns ≤ timestamp_ns < origin_ns + (k+1)·width_ns`, and is
/// labelled with that interval clipped to the accounted span ([`Self::windows`]).
#[derive(Debug, Clone)]
pub struct QueryWindows {
    totals: QueryTotals,
    range: TimeRange,
    origin_ns: i64,
    width_ns: i64,
    windows: BTreeMap<i64, WindowTotals>,
    pool_lane: Option<PoolLane>,
}

impl QueryWindows {
    /// Windows of `width_ns` (at least 1) from `origin_ns`, accounting only `range`.
    #[must_use]
    pub fn new(slots: QuerySlots, range: TimeRange, origin_ns: i64, width_ns: i64) -> Self {
        Self::with_tiers_and_pool(slots, None, None, range, origin_ns, width_ns)
    }

    /// [`Self::new`], each window also split among `tiers` (then [`Self::write`] writes one
    /// line per window and tier instead of per capacity), leaving out the rows of the shared
    /// pool lane `pool` names ([`PoolRule::Recognised`]: windows are written as rows come,
    /// so the pool must be known before): a window sums the instances' own caches, as the
    /// overall summary does.
    #[must_use]
    pub fn with_tiers_and_pool(
        slots: QuerySlots,
        tiers: Option<TierPlan>,
        pool: Option<PoolRule>,
        range: TimeRange,
        origin_ns: i64,
        width_ns: i64,
    ) -> Self {
        Self {
            totals: QueryTotals::with_tiers(slots, tiers).with_pool(pool),
            range,
            origin_ns,
            width_ns: width_ns.max(1),
            windows: BTreeMap::new(),
            pool_lane: None,
        }
    }

    /// Also writes the pool lane's own lines per window and slot, at N × the slot's
    /// capacity (`instances` = N), after the instances' lines; with `--tiers`, per window
    /// and tier, the pool's tiers at N × each size. The pool is the one
    /// [`Self::with_tiers_and_pool`] names.
    #[must_use]
    pub fn with_pool_lane(mut self, name: &str, instances: u64) -> Self {
        let capacities = self.totals.slots().capacities();
        let tiers = self.totals.tiers().cloned();
        let tier_count = tiers.as_ref().map_or(0, |plan| plan.names.len());
        self.pool_lane = Some(PoolLane {
            name: name.to_owned(),
            instances,
            hit_blocks: vec![0; capacities.len()],
            capacity_blocks: vec![None; capacities.len()],
            capacities,
            block_bytes: None,
            other_block_bytes: None,
            tiers,
            tier_capacity_blocks: vec![None; tier_count],
            tier_bands: Vec::new(),
            tier_hit_blocks: vec![0; tier_count],
        });
        self
    }

    /// Fails when the pool's rows have several block geometries (one pool holds blocks of
    /// one size, as the summary's pool line says).
    pub fn check_pool(&self) -> Result<(), QueryError> {
        match &self.pool_lane {
            Some(PoolLane {
                name,
                block_bytes: Some(first),
                other_block_bytes: Some(other),
                ..
            }) => Err(QueryError::PoolGeometry {
                name: name.clone(),
                first: *first,
                other: *other,
            }),
            _ => Ok(()),
        }
    }

    /// A pool row: projected at N × C into its window.
    fn add_pool_record(&mut self, index: i64, record: &FactRecord) {
        let Some(pool) = &mut self.pool_lane else {
            return;
        };
        pool.project(record);
        let slot_count = pool.hit_blocks.len();
        let tier_count = pool.tier_hit_blocks.len();
        let window = self.windows.entry(index).or_insert_with(|| WindowTotals {
            hit_tokens: vec![0; slot_count],
            tier_hit_tokens: vec![0; tier_count],
            ..WindowTotals::default()
        });
        if window.pool_hit_tokens.len() != slot_count {
            window.pool_hit_tokens = vec![0; slot_count];
        }
        if window.pool_tier_hit_tokens.len() != tier_count {
            window.pool_tier_hit_tokens = vec![0; tier_count];
        }
        for (tokens, &hits) in window
            .pool_tier_hit_tokens
            .iter_mut()
            .zip(&pool.tier_hit_blocks)
        {
            *tokens = tokens.wrapping_add(hits.wrapping_mul(record.block_size_tokens));
        }
        window.pool_requests += 1;
        window.pool_input_tokens = window
            .pool_input_tokens
            .wrapping_add(record.input_token_len);
        for (tokens, &hits) in window.pool_hit_tokens.iter_mut().zip(&pool.hit_blocks) {
            *tokens = tokens.wrapping_add(hits.wrapping_mul(record.block_size_tokens));
        }
    }

    /// Projects `record` at every slot and adds it to its window (if it is in the range).
    pub fn add_record(&mut self, record: &FactRecord) {
        if !self.range.contains(record.timestamp_ns) {
            return;
        }
        let index = (i128::from(record.timestamp_ns) - i128::from(self.origin_ns))
            .div_euclid(i128::from(self.width_ns));
        let index = i64::try_from(index).unwrap_or(i64::MAX);
        if self.totals.is_pool(&record.instance_id) {
            self.add_pool_record(index, record);
            return;
        }
        let slot_count = self.totals.slots().len();
        let tier_count = self.totals.tiers().map_or(0, |plan| plan.names.len());
        // Only the projection: the windows keep their own sums (no per-instance totals).
        self.totals.project_record(record);
        // Rows come in time order, so their window is nearly always the last one.
        let window = if let Some(last) = self
            .windows
            .last_entry()
            .filter(|last| *last.key() == index)
        {
            last.into_mut()
        } else {
            self.windows.entry(index).or_insert_with(|| WindowTotals {
                hit_tokens: vec![0; slot_count],
                tier_hit_tokens: vec![0; tier_count],
                ..WindowTotals::default()
            })
        };
        window.requests += 1;
        window.input_tokens = window.input_tokens.wrapping_add(record.input_token_len);
        let block_size_tokens = record.block_size_tokens;
        let add = |sums: &mut [u64], blocks: &[u64]| {
            for (tokens, &hits) in sums.iter_mut().zip(blocks) {
                *tokens = tokens.wrapping_add(hits.wrapping_mul(block_size_tokens));
            }
        };
        add(&mut window.hit_tokens, self.totals.last_hit_blocks());
        add(
            &mut window.tier_hit_tokens,
            self.totals.last_tier_hit_blocks(),
        );
    }

    /// Whether no row (of the instances or the pool) fell in any window.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// Every non-empty window in time order, with the start and end (ns) of its accounted
    /// part: the window clipped to the accounted span, so that a window `--from` or `--to`
    /// cuts (or the end of `--exclude-warmup`) is labelled with what it sums, never as a
    /// full one.
    pub fn windows(&self) -> impl Iterator<Item = (i64, i64, &WindowTotals)> {
        self.windows.iter().map(|(&index, totals)| {
            let start = self
                .origin_ns
                .saturating_add(index.saturating_mul(self.width_ns));
            let end = start.saturating_add(self.width_ns);
            // `to_ns == i64::MAX` is no end: it includes the rows at i64::MAX.
            let end = if self.range.to_ns == i64::MAX {
                end
            } else {
                end.min(self.range.to_ns)
            };
            (start.max(self.range.from_ns), end, totals)
        })
    }

    /// One line per window and slot: JSONL, or CSV with a header. Times are seconds since
    /// `trace_start_ns` (the first request).
    pub fn write(
        &self,
        trace_start_ns: i64,
        csv: bool,
        out: &mut impl Write,
    ) -> std::io::Result<()> {
        if let Some(tiers) = self.totals.tiers() {
            return self.write_tiers(tiers, trace_start_ns, csv, out);
        }
        let slots = self.totals.slots();
        let pool = self.pool_lane.as_ref();
        let mut line = Vec::with_capacity(256);
        if csv {
            // The JSONL's field names in its order; the pool's columns only with a pool lane.
            out.write_all(if pool.is_some() {
                b"window_start_s,window_end_s,window_start_ns,pool,instances,capacity_gb,\
                  capacity_blocks,pool_capacity_blocks,requests,total_input_tokens,\
                  total_hit_tokens,hit_rate\n"
            } else {
                b"window_start_s,window_end_s,window_start_ns,capacity_gb,capacity_blocks,\
                  requests,total_input_tokens,total_hit_tokens,hit_rate\n"
            })?;
        }
        let seconds = |ns: i64| window_seconds(ns, trace_start_ns);
        let capacities = || {
            slots
                .capacity_gb
                .iter()
                .map(|&gb| (Some(gb), None))
                .chain(slots.capacity_blocks.iter().map(|&b| (None, Some(b))))
        };
        for (start_ns, end_ns, window) in self.windows() {
            let (start_s, end_s) = (seconds(start_ns), seconds(end_ns));
            let span = (start_s.as_str(), end_s.as_str(), start_ns);
            for (capacity, &hit_tokens) in capacities().zip(&window.hit_tokens) {
                let counts = (window.requests, window.input_tokens, hit_tokens);
                window_line(
                    &mut line,
                    csv,
                    span,
                    capacity,
                    counts,
                    (None, pool.is_some()),
                );
                line.push(b'\n');
                out.write_all(&line)?;
            }
            let Some(pool) = pool else { continue };
            for ((capacity, &hit_tokens), &pool_blocks) in capacities()
                .zip(&window.pool_hit_tokens)
                .zip(&pool.capacity_blocks)
            {
                let counts = (window.pool_requests, window.pool_input_tokens, hit_tokens);
                let pooled = (pool.name.as_str(), pool.instances, pool_blocks);
                window_line(&mut line, csv, span, capacity, counts, (Some(pooled), true));
                line.push(b'\n');
                out.write_all(&line)?;
            }
        }
        out.flush()
    }
}

/// The pool's own line: its name, N, and N × C in blocks (`None` = unlimited).
type PoolCells<'a> = (&'a str, u64, Option<u64>);

/// Seconds from the first request to `ns`, exactly (see [`display::seconds_of_ns`]): a
/// JSON number and a CSV field.
fn window_seconds(ns: i64, trace_start_ns: i64) -> String {
    display::seconds_of_ns(i128::from(ns) - i128::from(trace_start_ns))
}

/// The cells every window line starts with: the span, then (on the pool's line, or as empty
/// CSV cells when the CSV has pool columns) the pool's name and instance count.
fn append_window_head(
    line: &mut Vec<u8>,
    csv: bool,
    (from_s, until_s, start_ns): (&str, &str, i64),
    (pool, pool_columns): (Option<PoolCells<'_>>, bool),
) {
    if csv {
        line.extend_from_slice(format!("{from_s},{until_s},{start_ns},").as_bytes());
        if pool_columns {
            if let Some((name, instances, _)) = pool {
                line.extend_from_slice(csv_field(name).as_bytes());
                line.extend_from_slice(format!(",{instances}").as_bytes());
            } else {
                line.push(b',');
            }
            line.push(b',');
        }
    } else {
        line.extend_from_slice(b"{\"window_start_s\":");
        line.extend_from_slice(from_s.as_bytes());
        line.extend_from_slice(b",\"window_end_s\":");
        line.extend_from_slice(until_s.as_bytes());
        line.extend_from_slice(format!(",\"window_start_ns\":{start_ns}").as_bytes());
        if let Some((name, instances, _)) = pool {
            line.extend_from_slice(b",\"pool\":");
            append_json_string(line, name);
            line.extend_from_slice(format!(",\"instances\":{instances}").as_bytes());
        }
    }
}

/// One window line (without its newline) into `line`: `span` is `(start s, end s, start
/// ns)`, `counts` `(requests, input tokens, hit tokens)`; `pool` = `(name, N, N × C in
/// blocks)` for the pool's own line (`-1` = unlimited), and whether the CSV has the pool's
/// columns. The CSV's columns are the JSONL's fields in the same order (a field a line
/// leaves out is an empty cell).
fn window_line(
    line: &mut Vec<u8>,
    csv: bool,
    (from_s, until_s, start_ns): (&str, &str, i64),
    (gb, blocks): (Option<f64>, Option<u64>),
    (requests, input_tokens, hit_tokens): (u64, u64, u64),
    (pool, pool_columns): (Option<PoolCells<'_>>, bool),
) {
    line.clear();
    let rate = ratio(hit_tokens, input_tokens);
    append_window_head(line, csv, (from_s, until_s, start_ns), (pool, pool_columns));
    if csv {
        if let Some(gb) = gb {
            append_g6(line, gb);
        }
        line.push(b',');
        if let Some(blocks) = blocks {
            line.extend_from_slice(blocks.to_string().as_bytes());
        }
        if pool_columns {
            line.push(b',');
            if let Some((_, _, capacity)) = pool {
                append_block_count_or_unlimited(line, capacity);
            }
        }
        line.extend_from_slice(format!(",{requests},{input_tokens},{hit_tokens},").as_bytes());
        append_g6(line, rate);
    } else {
        if let Some(gb) = gb {
            line.extend_from_slice(b",\"capacity_gb\":");
            append_g6(line, gb);
        }
        if let Some(blocks) = blocks {
            line.extend_from_slice(format!(",\"capacity_blocks\":{blocks}").as_bytes());
        }
        if let Some((_, _, capacity)) = pool {
            line.extend_from_slice(b",\"pool_capacity_blocks\":");
            append_block_count_or_unlimited(line, capacity);
        }
        line.extend_from_slice(
            format!(
                ",\"requests\":{requests},\"total_input_tokens\":{input_tokens},\
                 \"total_hit_tokens\":{hit_tokens},\"hit_rate\":"
            )
            .as_bytes(),
        );
        append_g6(line, rate);
        line.push(b'}');
    }
}

impl QueryWindows {
    /// One line per window and tier (`--window` with `--tiers`): JSONL, or CSV with a header;
    /// with a pool lane, the pool's lines (its tiers at N × each size) after each window's.
    fn write_tiers(
        &self,
        tiers: &TierPlan,
        trace_start_ns: i64,
        csv: bool,
        out: &mut impl Write,
    ) -> std::io::Result<()> {
        let pool = self.pool_lane.as_ref();
        let mut line = Vec::with_capacity(256);
        if csv {
            // The JSONL's field names in its order; the pool's columns only with a pool lane.
            out.write_all(if pool.is_some() {
                b"window_start_s,window_end_s,window_start_ns,pool,instances,tier_mode,tier,\
                  tier_size,pool_tier_capacity_blocks,requests,total_input_tokens,\
                  tier_hit_tokens,tier_share,miss_share\n"
            } else {
                b"window_start_s,window_end_s,window_start_ns,tier_mode,tier,tier_size,requests,\
                  total_input_tokens,tier_hit_tokens,tier_share,miss_share\n"
            })?;
        }
        let seconds = |ns: i64| window_seconds(ns, trace_start_ns);
        for (start_ns, end_ns, window) in self.windows() {
            let (start_s, end_s) = (seconds(start_ns), seconds(end_ns));
            let span = (start_s.as_str(), end_s.as_str(), start_ns);
            let instances = TierCounts {
                requests: window.requests,
                input_tokens: window.input_tokens,
                tier_hit_tokens: &window.tier_hit_tokens,
            };
            for (index, _) in window.tier_hit_tokens.iter().enumerate() {
                let pool_cells = (None, pool.is_some());
                tier_window_line(&mut line, csv, span, tiers, index, &instances, pool_cells);
                line.push(b'\n');
                out.write_all(&line)?;
            }
            let Some(pool) = pool else { continue };
            let pooled = TierCounts {
                requests: window.pool_requests,
                input_tokens: window.pool_input_tokens,
                tier_hit_tokens: &window.pool_tier_hit_tokens,
            };
            for (index, &capacity) in pool
                .tier_capacity_blocks
                .iter()
                .enumerate()
                .take(window.pool_tier_hit_tokens.len())
            {
                let pool_fields = (pool.name.as_str(), pool.instances, capacity);
                tier_window_line(
                    &mut line,
                    csv,
                    span,
                    tiers,
                    index,
                    &pooled,
                    (Some(pool_fields), true),
                );
                line.push(b'\n');
                out.write_all(&line)?;
            }
        }
        out.flush()
    }
}

/// One window's counts for its tier lines: the instances' or the pool's.
struct TierCounts<'a> {
    requests: u64,
    input_tokens: u64,
    tier_hit_tokens: &'a [u64],
}

/// One window line of tier `index` (without its newline) into `line`: `span` is `(start
/// s, end s, start ns)`; `pool` = `(name, N, N × the tier's blocks)` for the pool's own
/// line (`-1` = unlimited), and whether the CSV has the pool's columns. The CSV's columns
/// are the JSONL's fields in the same order (a field a line leaves out is an empty cell).
fn tier_window_line(
    line: &mut Vec<u8>,
    csv: bool,
    (from_s, until_s, start_ns): (&str, &str, i64),
    tiers: &TierPlan,
    index: usize,
    counts: &TierCounts<'_>,
    (pool, pool_columns): (Option<PoolCells<'_>>, bool),
) {
    line.clear();
    let (name, size) = (&tiers.names[index], &tiers.sizes_text[index]);
    let tokens = counts.tier_hit_tokens[index];
    let served = counts
        .tier_hit_tokens
        .iter()
        .fold(0_u64, |sum, &tokens| sum.wrapping_add(tokens));
    let miss_share = ratio(
        counts.input_tokens.saturating_sub(served),
        counts.input_tokens,
    );
    let share = ratio(tokens, counts.input_tokens);
    append_window_head(line, csv, (from_s, until_s, start_ns), (pool, pool_columns));
    if csv {
        line.extend_from_slice(
            format!(
                "{},{},{}",
                tiers.mode_name(),
                csv_field(name),
                csv_field(size)
            )
            .as_bytes(),
        );
        if pool_columns {
            line.push(b',');
            if let Some((_, _, capacity)) = pool {
                append_block_count_or_unlimited(line, capacity);
            }
        }
        line.extend_from_slice(
            format!(",{},{},{tokens},", counts.requests, counts.input_tokens).as_bytes(),
        );
        append_g6(line, share);
        line.push(b',');
        append_g6(line, miss_share);
    } else {
        line.extend_from_slice(
            format!(",\"tier_mode\":\"{}\",\"tier\":", tiers.mode_name()).as_bytes(),
        );
        append_json_string(line, name);
        line.extend_from_slice(b",\"tier_size\":");
        append_json_string(line, size);
        if let Some((_, _, capacity)) = pool {
            line.extend_from_slice(b",\"pool_tier_capacity_blocks\":");
            append_block_count_or_unlimited(line, capacity);
        }
        line.extend_from_slice(
            format!(
                ",\"requests\":{},\"total_input_tokens\":{},\"tier_hit_tokens\":{},\
                 \"tier_share\":",
                counts.requests, counts.input_tokens, tokens
            )
            .as_bytes(),
        );
        append_g6(line, share);
        line.extend_from_slice(b",\"miss_share\":");
        append_g6(line, miss_share);
        line.push(b'}');
    }
}

/// A CSV field: quoted (with `""` for `"`) when it holds a comma, a quote or a line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// Reads `facts_paths` into windows (see [`QueryWindows`]).
pub fn query_windows(
    facts_paths: &[PathBuf],
    slots: QuerySlots,
    tiers: Option<TierPlan>,
    range: TimeRange,
    origin_ns: i64,
    width_ns: i64,
) -> Result<QueryWindows, QueryError> {
    query_windows_with_pool(
        facts_paths,
        slots,
        tiers,
        range,
        origin_ns,
        width_ns,
        None,
        None,
    )
}

/// [`query_windows`] leaving out the rows of the pool lane from the instances' lines (`pool`
/// is [`PoolRule::Recognised`], by [`trace_span_and_instances`]'s lanes); with `pool_instances` (N, see [`pool_instance_count`]) the pool's own
/// lines at N × C follow each window's.
#[expect(clippy::too_many_arguments, reason = "the query's plan, spelled out")]
pub fn query_windows_with_pool(
    facts_paths: &[PathBuf],
    slots: QuerySlots,
    tiers: Option<TierPlan>,
    range: TimeRange,
    origin_ns: i64,
    width_ns: i64,
    pool: Option<PoolRule>,
    pool_instances: Option<u64>,
) -> Result<QueryWindows, QueryError> {
    let mut readers = facts_paths
        .iter()
        .map(|path| FactsReader::open(path))
        .collect::<Result<Vec<_>, _>>()?;
    let pool_name = pool
        .as_ref()
        .and_then(PoolRule::candidate)
        .map(str::to_owned);
    let mut windows =
        QueryWindows::with_tiers_and_pool(slots, tiers, pool, range, origin_ns, width_ns);
    if let (Some(name), Some(instances)) = (pool_name, pool_instances) {
        windows = windows.with_pool_lane(&name, instances);
    }
    let mut record = FactRecord::default();
    let mut input_tokens_read = 0;
    for reader in &mut readers {
        // The rows of every file together: no window's total can wrap (the reader refuses).
        reader.continue_input_tokens(input_tokens_read);
        while reader.next_record(&mut record)? {
            windows.add_record(&record);
        }
        input_tokens_read = reader.input_tokens_read();
    }
    windows.check_pool()?;
    Ok(windows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_points_are_trace_seconds_unless_absolute() {
        assert_eq!(parse_time_point("600"), Ok(TimePoint::TraceSeconds(600.0)));
        assert_eq!(parse_time_point("10m"), Ok(TimePoint::TraceSeconds(600.0)));
        assert_eq!(parse_time_point("1.5s"), Ok(TimePoint::TraceSeconds(1.5)));
        assert_eq!(
            parse_time_point("1700000000000000000"),
            Ok(TimePoint::AbsoluteNs(1_700_000_000_000_000_000))
        );
        assert_eq!(parse_time_point("25ns"), Ok(TimePoint::AbsoluteNs(25)));
        assert_eq!(
            parse_time_point("999999999999999"),
            Ok(TimePoint::TraceSeconds(999_999_999_999_999.0))
        );
        assert!(parse_time_point("10x").is_err());
        assert!(parse_time_point("99999999999999999999").is_err());
    }

    #[test]
    fn warmup_is_a_share_or_a_duration() {
        assert_eq!(parse_warmup("20%"), Ok(Warmup::Fraction(0.2)));
        assert_eq!(parse_warmup("600s"), Ok(Warmup::Seconds(600.0)));
        assert!(parse_warmup("120%").is_err());
        assert!(parse_warmup("-5%").is_err());
    }

    #[test]
    fn resolve_takes_the_later_start() {
        let spec = TimeSpec {
            from: Some(TimePoint::TraceSeconds(1.0)),
            to: Some(TimePoint::AbsoluteNs(9_000_000_000)),
            exclude_warmup: Some(Warmup::Fraction(0.5)),
        };
        assert!(spec.needs_span());
        // Span 1 s .. 5 s: the warm-up ends at 3 s, after --from (2 s).
        let range = spec.resolve(1_000_000_000, 5_000_000_000);
        assert_eq!(range.from_ns, 3_000_000_000);
        assert_eq!(range.to_ns, 9_000_000_000);
        assert!(TimeSpec::default().resolve(0, 1).is_everything());
    }
}
