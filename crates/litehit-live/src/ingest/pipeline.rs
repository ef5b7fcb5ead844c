//! The line pipeline: bytes → lines → parser → `Engine`, with bad lines counted, not fatal.
//!
//! Splits each chunk the tailer hands over into lines, detects the format from the first
//! non-empty line (switching to the engine made for that format before any event reached
//! it), parses each line into the reused [`TraceEvent`] and replays it, appending the facts
//! rows to the spill and marking the timeline before each event. Live runs skip and count a
//! bad line (`Policy::SkipAndCount`): a malformed line, an undetectable first line or flags
//! that do not fit the trace never stop the monitor, they show as the input's health. Kept
//! apart from the tailer so a chunk borrowed from it can be processed while this is borrowed
//! mutably.
//!
//! A batch posted over HTTP (`watch --listen`) runs through the same [`Pipeline::process_line`]
//! between two file chunks, so its facts, counters and snapshot are exactly as if its lines
//! had been appended to the followed file; [`Pipeline::process_batch`] also says which of its
//! lines were rejected, and why, for the reply. A bad line's message is shown without the
//! engine's `line N: ` prefix ([`strip_line_prefix`]), in the reply and in the snapshot alike.

use litehit_core::engine::{Engine, EngineError, Policy};
use litehit_core::formats::{
    LaneBy, LineOutcome, LineParser, ParseOptions, TraceEvent, TraceFormat, detect_format,
};
use litehit_core::grammar::LaneBySpec;

use super::spill::{FactsSpill, row_bytes_bound};
use super::timeline::TimelineBuilder;
use super::{EngineForFormat, IngestConfig, LineTransform};
use crate::http::{BatchReport, RejectedLine};
use crate::snapshot::{HttpStatus, Slot};

/// Parsing and replay state (apart from the tailer, so a chunk borrowed from the tailer can
/// be processed while this is borrowed mutably).
pub(super) struct Pipeline {
    pub(super) engine: Engine,
    /// See [`IngestConfig::engine_for_format`]; used once, when the format is detected.
    engine_for_format: Option<EngineForFormat>,
    /// See [`IngestConfig::lane_by_spec`]; used once, when the format is detected.
    lane_by_spec: Option<LaneBySpec>,
    /// The flags do not fit the format the trace turned out to have (e.g. `--block-size
    /// 256` on 512-token Mooncake keys): every line is bad, for this reason.
    engine_error: Option<String>,
    /// Set when the engine ran out of memory (also the `engine_error`), for the exit status.
    pub(super) out_of_memory: Option<String>,
    pub(super) parser: Option<LineParser>,
    parse_options: ParseOptions,
    /// See [`IngestConfig::line_transform`].
    line_transform: Option<LineTransform>,
    pub(super) event: TraceEvent,
    /// Number of the next line in the current file generation.
    pub(super) line_number: u64,
    /// See [`IngestConfig::max_line_bytes`].
    max_line_bytes: u64,
    pub(super) slots: Vec<Slot>,
    /// See [`IngestConfig::engine_pool`] (or the pool an `--engine-metrics` scrape said).
    pub(super) engine_pool: Option<litehit_core::engine_pool::EnginePool>,
    /// KV bytes per block set live (`b`) for every lane's projections; `None`: each lane's.
    pub(super) assumed_block_bytes: Option<u64>,
    pub(super) tiers: Option<litehit_core::projector::tiers::TierPlan>,
    /// See [`IngestConfig::quota`].
    pub(super) quota: Option<litehit_report::QuotaRequest>,
    pub(super) spill: FactsSpill,
    /// With OPT (`watch --policy lru,opt`): the OPT facts rows, for `NAME.opt.csv`.
    pub(super) opt_spill: Option<FactsSpill>,
    pub(super) timeline: TimelineBuilder,
    pub(super) consumed_bytes_total: u64,
    /// Batches read from the HTTP endpoint (its address is filled in at publication).
    pub(super) http: HttpStatus,
}

impl Pipeline {
    /// Ready for the first line of the trace, with the format given or yet to be detected.
    pub(super) fn new(
        config: &IngestConfig,
        engine: Engine,
        spill: FactsSpill,
        slots: Vec<Slot>,
    ) -> Self {
        let parse_options = ParseOptions {
            trace_block_size_tokens: config.engine.trace_block_size_tokens,
            lane_by: config.lane_by,
        };
        Self {
            engine,
            engine_for_format: config.engine_for_format.clone(),
            lane_by_spec: config.lane_by_spec.clone(),
            engine_error: None,
            out_of_memory: None,
            parser: config
                .format
                .map(|format| LineParser::new(format, parse_options)),
            parse_options,
            line_transform: config.line_transform.clone(),
            event: TraceEvent::default(),
            line_number: 1,
            max_line_bytes: config.max_line_bytes,
            slots,
            engine_pool: config.engine_pool,
            assumed_block_bytes: None,
            tiers: config.tiers.clone(),
            quota: config.quota.clone(),
            spill,
            opt_spill: None,
            timeline: TimelineBuilder::new(config.window_ns.max(1)),
            consumed_bytes_total: 0,
            http: HttpStatus::default(),
        }
    }

    /// Parses and replays every line of `chunk` (complete lines, each ending in `\n`).
    /// The trace format: given, or told by the first good line (`None` until then).
    pub(super) fn trace_format(&self) -> Option<TraceFormat> {
        self.parser.as_ref().map(LineParser::format)
    }

    pub(super) fn process_chunk(&mut self, chunk: &[u8]) {
        self.consumed_bytes_total += chunk.len() as u64;
        if self.line_transform.is_some() {
            let mut lines = Vec::new();
            let mut rest = chunk;
            while let Some(newline) = memchr::memchr(b'\n', rest) {
                let line = &rest[..newline];
                rest = &rest[newline + 1..];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if !self.refuse_long_line(line, self.line_number) {
                    lines.push((self.line_number, line));
                }
                self.line_number += 1;
            }
            self.process_transformed(&lines);
            return;
        }
        let mut rest = chunk;
        while let Some(newline) = memchr::memchr(b'\n', rest) {
            let mut line = &rest[..newline];
            rest = &rest[newline + 1..];
            if let [head @ .., b'\r'] = line {
                line = head;
            }
            let line_number = self.line_number;
            self.line_number += 1;
            if !self.refuse_long_line(line, line_number) {
                self.process_line(line, line_number);
            }
        }
    }

    /// A line the tailer dropped for being longer than `--max-line-bytes` (it never holds
    /// more of one): it takes its line number and is counted as a bad line.
    pub(super) fn skip_long_line(&mut self) {
        let line_number = self.line_number;
        self.line_number += 1;
        self.engine.record_bad_line(
            line_number,
            litehit_core::formats::line_too_long_reason(self.max_line_bytes),
        );
    }

    /// Whether `line` is longer than `--max-line-bytes`: then it is counted as a bad line
    /// with that reason, and not read.
    fn refuse_long_line(&mut self, line: &[u8], line_number: u64) -> bool {
        if !litehit_core::formats::is_too_long(line.len(), self.max_line_bytes) {
            return false;
        }
        self.engine.record_bad_line(
            line_number,
            litehit_core::formats::line_too_long_reason(self.max_line_bytes),
        );
        true
    }

    /// Parses and replays every line of a posted body (the last line needs no `\n`), with
    /// line numbers counted within the body; the file's line count is left as it was.
    /// Returns what was accepted and, for each rejected line, the reason the monitor shows.
    pub(super) fn process_batch(&mut self, body: &[u8]) -> BatchReport {
        self.consumed_bytes_total += body.len() as u64;
        let mut report = BatchReport::default();
        let body = body.strip_suffix(b"\n").unwrap_or(body);
        if body.is_empty() {
            self.http.requests += 1;
            return report;
        }
        for (line, line_number) in body.split(|&byte| byte == b'\n').zip(1_u64..) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let bad_before = self.engine.stats().bad_lines;
            if self.refuse_long_line(line, line_number) {
                // Counted as bad: reported below.
            } else if self.line_transform.is_some() {
                self.process_transformed(&[(line_number, line)]);
            } else {
                self.process_line(line, line_number);
            }
            let stats = self.engine.stats();
            match stats.last_error.as_ref() {
                Some(error) if stats.bad_lines > bad_before => {
                    report.rejected_lines.push(RejectedLine {
                        line: line_number,
                        reason: strip_line_prefix(&error.message, line_number).to_owned(),
                    });
                }
                _ => report.accepted += 1,
            }
        }
        report.rejected = report.rejected_lines.len() as u64;
        self.http.requests += 1;
        self.http.accepted_lines += report.accepted;
        self.http.rejected_lines += report.rejected;
        report
    }

    /// Stops replaying, out of memory: a buffer that grows with the input (the read buffer,
    /// the facts spill's, a posted body) could not grow by `extra_bytes`. The message is the
    /// engine's own (`out of memory after N unique blocks (about X GiB needed; …)`); every
    /// later line is counted as bad with it, and the ingest thread stops the run.
    pub(super) fn run_out_of_memory(&mut self, extra_bytes: usize) {
        if self.out_of_memory.is_some() {
            return;
        }
        let lanes = self.engine.lanes();
        let unique_blocks = lanes
            .iter()
            .map(|lane| lane.core().current_unique_blocks())
            .sum();
        let held: usize = lanes
            .iter()
            .map(|lane| {
                lane.core().memory_usage_bytes()
                    + lane.accumulator().map_or(
                        0,
                        litehit_core::projector::CapacityAxisAccumulator::memory_usage_bytes,
                    )
            })
            .sum::<usize>()
            + self.spill.buffer.capacity();
        let message = EngineError::OutOfMemory {
            unique_blocks,
            needed_bytes: held.saturating_add(extra_bytes) as u64,
        }
        .to_string();
        self.engine_error = Some(message.clone());
        self.out_of_memory = Some(message);
    }

    /// Switches to the engine made for the detected `format` (its native block size), before
    /// any event reached the engine; lines before the first detectable one stay counted as
    /// bad.
    fn adopt_engine_for(&mut self, format: TraceFormat) {
        let Some(make) = self.engine_for_format.take() else {
            return;
        };
        let earlier = self.engine.stats();
        if earlier.read_events > 0 || earlier.write_events > 0 {
            return;
        }
        let config = match (make.0)(format) {
            Ok(config) => config,
            Err(reason) => {
                self.engine_error = Some(reason);
                return;
            }
        };
        // The `engine` slot at the lanes' block sizes, now known.
        if let (Some(pool), Some(slot)) = (
            self.engine_pool,
            self.slots.first_mut().filter(|slot| slot.is_engine()),
        ) {
            match super::engine_slot(pool, &config.lanes) {
                Ok(engine) => *slot = engine,
                Err(reason) => {
                    self.engine_error = Some(reason.to_string());
                    return;
                }
            }
        }
        // The slots at the lanes' block bytes, now known: the check `watch` made at start
        // without them (a slot of 0 blocks would show nothing). The `engine` slot is the
        // engine's size, whatever the others are.
        let slots: Vec<_> = self
            .slots
            .iter()
            .filter(|slot| !slot.is_engine())
            .map(|slot| slot.capacity)
            .collect();
        if let Err(reason) = crate::check_slots(&slots, Some(&config.lanes)) {
            self.engine_error = Some(reason);
            return;
        }
        let trace_block_size_tokens = config.trace_block_size_tokens;
        match Engine::new(config, Policy::SkipAndCount) {
            Ok(mut engine) => {
                if let Some(horizon) = self.engine.memory_horizon() {
                    engine = engine.with_memory_horizon(horizon);
                }
                engine = engine.with_engine_rule(self.engine.engine_rule());
                engine = match engine.with_cache_policies(self.engine.cache_policies()) {
                    Ok(engine) => engine,
                    Err(error) => {
                        self.engine_error = Some(error.to_string());
                        return;
                    }
                };
                engine.inherit_bad_lines(earlier);
                self.engine = engine;
                self.parse_options = ParseOptions {
                    trace_block_size_tokens,
                    ..self.parse_options
                };
            }
            Err(error) => self.engine_error = Some(error.to_string()),
        }
    }

    /// `--lane-by` for the detected `format`, by `replay`'s rule: the lanes its rows make,
    /// or (rows without a tenant) every line bad with `replay`'s reason, unless the engine
    /// already refused the format for another.
    fn adopt_lanes_for(&mut self, format: TraceFormat) {
        let Some(spec) = self.lane_by_spec.take() else {
            return;
        };
        match LaneBy::for_format(format, spec.keep_instance, spec.field.as_deref()) {
            Ok(lane_by) => self.parse_options.lane_by = lane_by,
            Err(reason) => {
                self.engine_error.get_or_insert(reason);
            }
        }
    }

    /// Lines of another log: transformed as one batch, then each trace line processed (or
    /// the line counted bad with the transform's reason); blank lines are skipped.
    fn process_transformed(&mut self, lines: &[(u64, &[u8])]) {
        let Some(transform) = self.line_transform.clone() else {
            return;
        };
        let lines: Vec<(u64, &[u8])> = lines
            .iter()
            .copied()
            .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
            .collect();
        if lines.is_empty() {
            return;
        }
        let rows = (transform.0)(&lines);
        debug_assert_eq!(rows.len(), lines.len(), "one result per line");
        for ((line_number, _), row) in lines.iter().zip(rows) {
            match row {
                Ok(row) => self.process_line(&row, *line_number),
                Err(reason) => self.engine.record_bad_line(*line_number, reason),
            }
        }
    }

    fn process_line(&mut self, line: &[u8], line_number: u64) {
        if self.parser.is_none() {
            if line.iter().all(u8::is_ascii_whitespace) {
                return;
            }
            let Some(format) = detect_format(line) else {
                let reason = match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
                    Err(error) => format!("invalid JSON: {error}"),
                    Ok(_) => {
                        "cannot tell the trace format from this line; pass --format".to_owned()
                    }
                };
                self.engine.record_bad_line(line_number, reason);
                return;
            };
            self.adopt_engine_for(format);
            self.adopt_lanes_for(format);
            self.parser = Some(LineParser::new(format, self.parse_options));
        }
        if let Some(reason) = &self.engine_error {
            if !line.iter().all(u8::is_ascii_whitespace) {
                self.engine.record_bad_line(line_number, reason.clone());
            }
            return;
        }
        let Some(parser) = self.parser.as_mut() else {
            return;
        };
        match parser.parse_line(line, line_number, &mut self.event) {
            Ok(LineOutcome::Event) => {
                let clamped_ns = self
                    .engine
                    .stats()
                    .last_timestamp_ns
                    .map_or(self.event.timestamp_ns, |last| {
                        last.max(self.event.timestamp_ns)
                    });
                self.timeline.before_event(
                    clamped_ns,
                    self.engine.instance_lanes(),
                    self.engine.pool_lane(),
                    &self.slots,
                    self.assumed_block_bytes,
                );
                // Room for the event's facts row first: out of memory, it is not replayed.
                let row_bytes = row_bytes_bound(
                    self.event.trace_id.len().max(64),
                    self.event
                        .instance_id
                        .as_ref()
                        .map_or(0, String::len)
                        .max(256),
                    self.event.keys.len(),
                );
                let reserved = self.spill.reserve_row(row_bytes).and_then(|()| {
                    self.opt_spill
                        .as_mut()
                        .map_or(Ok(()), |spill| spill.reserve_row(row_bytes))
                });
                if let Err(bytes) = reserved {
                    self.run_out_of_memory(bytes);
                    let reason = self.out_of_memory.clone().unwrap_or_default();
                    self.engine.record_bad_line(line_number, reason);
                    return;
                }
                let (spill, opt_spill) = (&mut self.spill, &mut self.opt_spill);
                // LRU's rows (or OPT's alone) to the facts spill, OPT's beside LRU's to its own.
                let primary = self.engine.cache_policies().primary();
                let result = self.engine.process_events_by_policy(
                    std::slice::from_ref(&self.event),
                    &[line_number],
                    &mut |policy, row| match opt_spill {
                        Some(opt_spill) if policy != primary => opt_spill.push(&row),
                        _ if policy == primary => spill.push(&row),
                        _ => {}
                    },
                );
                let out_of_memory = self.spill.out_of_memory.or_else(|| {
                    self.opt_spill
                        .as_ref()
                        .and_then(|spill| spill.out_of_memory)
                });
                if let Some(bytes) = out_of_memory {
                    self.run_out_of_memory(bytes);
                }
                if let Err(error) = result {
                    // Live runs skip and count; an error here still must not stop the monitor.
                    // Out of memory, no later line is replayed: the numbers and facts so far
                    // stay as they were, and every later line is counted with that reason.
                    if matches!(error, EngineError::OutOfMemory { .. }) {
                        self.engine_error = Some(error.to_string());
                        self.out_of_memory = Some(error.to_string());
                    }
                    self.engine.record_bad_line(line_number, error.to_string());
                }
            }
            Ok(LineOutcome::Blank | LineOutcome::Ignored) => {}
            Err(error) => {
                let message = match error.field {
                    Some(field) => format!("field \"{field}\": {}", error.message),
                    None => error.message,
                };
                self.engine.record_bad_line(line_number, message);
            }
        }
    }
}

/// Engine messages start with `line N: `; the view shows the number separately.
pub(super) fn strip_line_prefix(message: &str, line_number: u64) -> &str {
    message
        .strip_prefix(&format!("line {line_number}: "))
        .unwrap_or(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_prefix_is_stripped_once() {
        assert_eq!(
            strip_line_prefix("line 7: trace_id[x]: bad", 7),
            "trace_id[x]: bad"
        );
        assert_eq!(
            strip_line_prefix("field \"keys\": bad", 7),
            "field \"keys\": bad"
        );
    }
}
