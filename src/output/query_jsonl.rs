//! The facts query's JSONL output, byte-compatible with upstream (REFERENCE §8).
//!
//! One line per facts row (unless summary-only), then one summary line per `instance_id` in
//! byte order, then the overall summary. Slots keep the caller's order: the GB slots first
//! (duplicates and zeros allowed, negative = unlimited), then the optional block slots.
//!
//! Block slots are our extension: when present, each summary gets a `capacity_blocks` array
//! right after `capacity_gb`, and every per-slot array (`hit_blocks`, `hit_rates`,
//! `total_hit_blocks`, ...) holds the GB slots followed by the block slots. Without block
//! slots the output is exactly upstream's.
//!
//! The numbers are `litehit_report`'s ([`QueryRun`], [`QueryTotals`]); this file only
//! formats them. Numbers are formatted by hand (`%g`, in-place digits) because the query must
//! stream millions of rows per second; [`query_facts_files`] also formats and writes the row
//! lines on a second thread while the first reads, parses and projects (the output is
//! identical to the single-threaded [`QueryJsonlWriter`]).

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread;

use super::line_buffer::LineBuffer;
use super::number_format::{
    G6_MAX_BYTES, INTEGER_MAX_BYTES, NEEDS_ESCAPE, append_g6, append_json_string,
};
use litehit_core::facts::FactRecord;
use litehit_core::projector::tiers::TierMode;
use litehit_report::{
    PoolSummary, QueryError, QueryPlan, QueryRun, QuerySlots, QuerySummary, QueryTotals,
    SlotTotals, TierPlan, ratio,
};

/// Output is handed to the writer in chunks of about this size.
const FLUSH_THRESHOLD_BYTES: usize = 1 << 20;

/// Output switches of the query.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryOptions {
    /// Skip the per-row lines; write only the summaries.
    pub summary_only: bool,
}

/// Writes the summary lines of `summary` to `out`: one per instance, then the overall one
/// (then the pool's comparison line, with a pool lane), each with the tier fields after
/// `hit_rates` when `tiers` is given. Line by line, so a summary of many instances needs no
/// buffer of its own (an allocation that cannot fail would abort under a memory limit).
fn write_summary_jsonl(
    out: &mut impl Write,
    summary: &QuerySummary,
    slots: &QuerySlots,
    tiers: Option<&TierPlan>,
) -> io::Result<()> {
    let mut line = Vec::new();
    for (instance_id, totals) in &summary.per_instance {
        line.clear();
        append_summary_line(&mut line, Some(instance_id), totals, slots, tiers);
        out.write_all(&line)?;
    }
    line.clear();
    append_summary_line(&mut line, None, &summary.overall, slots, tiers);
    if let Some(pool) = &summary.pool {
        append_pool_line(&mut line, pool, &summary.overall, slots);
        if let Some(tiers) = tiers {
            // The tier fields go inside the pool line, before its closing brace.
            line.truncate(line.len() - 2);
            append_pool_tier_fields(&mut line, pool, &summary.overall, tiers);
            line.extend_from_slice(b"}\n");
        }
    }
    out.write_all(&line)
}

/// The fields of one row line.
#[derive(Debug, Clone, Copy)]
struct RowLine<'a> {
    trace_id: &'a str,
    instance_id: &'a str,
    timestamp_ns: i64,
    input_token_len: u64,
    block_size_tokens: u64,
    hit_blocks: &'a [u64],
}

impl<'a> RowLine<'a> {
    fn new(record: &'a FactRecord, hit_blocks: &'a [u64]) -> Self {
        Self {
            trace_id: &record.trace_id,
            instance_id: &record.instance_id,
            timestamp_ns: record.timestamp_ns,
            input_token_len: record.input_token_len,
            block_size_tokens: record.block_size_tokens,
            hit_blocks,
        }
    }
}

/// Appends one row line: `{"trace_id":..,"instance_id":..,"timestamp_ns":..,
/// "input_token_len":..,"hit_blocks":[..],"hit_rates":[..]}`.
fn append_row_line(out: &mut LineBuffer, row: &RowLine<'_>) {
    out.reserve(
        ROW_FIXED_BYTES
            + 2 * (row.trace_id.len() + row.instance_id.len())
            + row.hit_blocks.len() * (INTEGER_MAX_BYTES + G6_MAX_BYTES + 2),
    );
    out.extend(b"{\"trace_id\":");
    push_json_string(out, row.trace_id);
    out.extend(b",\"instance_id\":");
    push_json_string(out, row.instance_id);
    out.extend(b",\"timestamp_ns\":");
    out.push_i64(row.timestamp_ns);
    out.extend(b",\"input_token_len\":");
    out.push_u64(row.input_token_len);
    out.extend(b",\"hit_blocks\":[");
    for (index, &hits) in row.hit_blocks.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.push_u64(hits);
    }
    out.extend(b"],\"hit_rates\":[");
    // Neighbouring slots often have equal hits (a saturated curve): reuse the text.
    let mut previous: Option<(u64, [u8; G6_MAX_BYTES], usize)> = None;
    for (index, &hits) in row.hit_blocks.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        match &previous {
            Some((previous_hits, text, length)) if *previous_hits == hits => {
                out.push_g6_text(text, *length);
            }
            _ => {
                let hit_tokens = hits.wrapping_mul(row.block_size_tokens);
                let (text, length) = out.push_g6(ratio(hit_tokens, row.input_token_len));
                previous = Some((hits, text, length));
            }
        }
    }
    out.extend(b"]}\n");
}

/// Streams facts records to upstream-format JSONL and keeps the summary totals (single
/// thread; [`query_facts_files`] is the two-thread version of the same output).
#[derive(Debug)]
pub struct QueryJsonlWriter<W: Write> {
    out: W,
    buffer: LineBuffer,
    totals: QueryTotals,
    options: QueryOptions,
}

impl<W: Write> QueryJsonlWriter<W> {
    /// A writer projecting at `slots`.
    pub fn new(out: W, slots: QuerySlots, options: QueryOptions) -> Self {
        Self {
            out,
            buffer: LineBuffer::with_capacity(FLUSH_THRESHOLD_BYTES + 64 * 1024),
            totals: QueryTotals::new(slots),
            options,
        }
    }

    /// Projects one record at every slot, adds it to the totals and writes its line.
    pub fn write_record(&mut self, record: &FactRecord) -> io::Result<()> {
        let hit_blocks = self.totals.add_record(record);
        if !self.options.summary_only {
            append_row_line(&mut self.buffer, &RowLine::new(record, hit_blocks));
            if self.buffer.len() >= FLUSH_THRESHOLD_BYTES {
                self.out.write_all(self.buffer.as_bytes())?;
                self.buffer.clear();
            }
        }
        Ok(())
    }

    /// Writes the summary lines, flushes and returns the writer and the totals.
    pub fn finish(mut self) -> io::Result<(W, QuerySummary)> {
        self.out.write_all(self.buffer.as_bytes())?;
        let slots = self.totals.slots().clone();
        let summary = self.totals.into_summary();
        write_summary_jsonl(&mut self.out, &summary, &slots, None)?;
        self.out.flush()?;
        Ok((self.out, summary))
    }
}

/// Appends a quoted, upstream-escaped JSON string; needs `2 × len + 2` bytes of room.
fn push_json_string(out: &mut LineBuffer, value: &str) {
    let bytes = value.as_bytes();
    out.push(b'"');
    if bytes.iter().any(|&b| NEEDS_ESCAPE[usize::from(b)]) {
        let mut escaped = Vec::with_capacity(bytes.len() + 8);
        append_json_string(&mut escaped, value);
        out.extend(&escaped[1..escaped.len() - 1]);
    } else {
        out.extend(bytes);
    }
    out.push(b'"');
}

/// Bytes of a row line besides the strings and the per-slot numbers (keys, two integers).
const ROW_FIXED_BYTES: usize = 128 + 2 * INTEGER_MAX_BYTES;

/// Rows handed from the reading thread to the formatting thread at a time.
const BATCH_ROWS: usize = 4096;

/// Batches in flight between the two threads (bounded, so memory stays small).
const BATCHES_IN_FLIGHT: usize = 4;

/// Projected rows on their way to the formatting thread, strings copied out of the record.
#[derive(Debug, Default)]
struct RowBatch {
    /// `trace_id` then `instance_id` of each row, back to back.
    text: String,
    rows: Vec<BatchRow>,
    /// `slot_count` hit counts per row.
    hit_blocks: Vec<u64>,
}

#[derive(Debug, Clone, Copy)]
struct BatchRow {
    trace_id_end: usize,
    instance_id_end: usize,
    timestamp_ns: i64,
    input_token_len: u64,
    block_size_tokens: u64,
}

impl RowBatch {
    fn push(&mut self, record: &FactRecord, hit_blocks: &[u64]) {
        self.text.push_str(&record.trace_id);
        let trace_id_end = self.text.len();
        self.text.push_str(&record.instance_id);
        self.rows.push(BatchRow {
            trace_id_end,
            instance_id_end: self.text.len(),
            timestamp_ns: record.timestamp_ns,
            input_token_len: record.input_token_len,
            block_size_tokens: record.block_size_tokens,
        });
        self.hit_blocks.extend_from_slice(hit_blocks);
    }

    fn clear(&mut self) {
        self.text.clear();
        self.rows.clear();
        self.hit_blocks.clear();
    }

    /// Formats every row into `out`, writing to `writer` whenever `out` is full enough.
    fn write_lines(
        &self,
        slot_count: usize,
        out: &mut LineBuffer,
        writer: &mut impl Write,
    ) -> io::Result<()> {
        let mut text_start = 0;
        // By index, not `chunks_exact`: with no slots (`--tiers` alone) every row still has
        // its line, with empty arrays.
        for (index, row) in self.rows.iter().enumerate() {
            let hit_blocks = &self.hit_blocks[index * slot_count..(index + 1) * slot_count];
            let line = RowLine {
                trace_id: &self.text[text_start..row.trace_id_end],
                instance_id: &self.text[row.trace_id_end..row.instance_id_end],
                timestamp_ns: row.timestamp_ns,
                input_token_len: row.input_token_len,
                block_size_tokens: row.block_size_tokens,
                hit_blocks,
            };
            text_start = row.instance_id_end;
            append_row_line(out, &line);
            if out.len() >= FLUSH_THRESHOLD_BYTES {
                writer.write_all(out.as_bytes())?;
                out.clear();
            }
        }
        Ok(())
    }
}

fn append_u64_array(out: &mut Vec<u8>, values: &[u64]) {
    let mut itoa = itoa::Buffer::new();
    out.push(b'[');
    for (index, &value) in values.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(itoa.format(value).as_bytes());
    }
    out.push(b']');
}

/// Block counts as a JSON array, `-1` for unlimited (`None`), as upstream writes ∞.
fn append_blocks_or_unlimited(out: &mut Vec<u8>, values: &[Option<u64>]) {
    out.push(b'[');
    for (index, &value) in values.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        append_block_count_or_unlimited(out, value);
    }
    out.push(b']');
}

/// One block count, `-1` for unlimited (`None`): a JSON number or a CSV cell.
pub(crate) fn append_block_count_or_unlimited(out: &mut Vec<u8>, value: Option<u64>) {
    match value {
        Some(blocks) => out.extend_from_slice(itoa::Buffer::new().format(blocks).as_bytes()),
        None => out.extend_from_slice(b"-1"),
    }
}

fn append_g6_array(out: &mut Vec<u8>, values: impl IntoIterator<Item = f64>) {
    out.push(b'[');
    for (index, value) in values.into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        append_g6(out, value);
    }
    out.push(b']');
}

fn append_summary_line(
    out: &mut Vec<u8>,
    instance_id: Option<&str>,
    totals: &SlotTotals,
    slots: &QuerySlots,
    tiers: Option<&TierPlan>,
) {
    let mut itoa = itoa::Buffer::new();
    out.extend_from_slice(b"{\"summary\":true,");
    if let Some(instance_id) = instance_id {
        out.extend_from_slice(b"\"instance_id\":");
        append_json_string(out, instance_id);
        out.push(b',');
    }
    out.extend_from_slice(b"\"requests\":");
    out.extend_from_slice(itoa.format(totals.requests).as_bytes());
    out.extend_from_slice(b",\"total_input_tokens\":");
    out.extend_from_slice(itoa.format(totals.total_input_tokens).as_bytes());
    out.extend_from_slice(b",\"capacity_gb\":");
    append_g6_array(out, slots.capacity_gb.iter().copied());
    if !slots.capacity_blocks.is_empty() {
        out.extend_from_slice(b",\"capacity_blocks\":");
        append_u64_array(out, &slots.capacity_blocks);
    }
    out.extend_from_slice(b",\"total_hit_blocks\":");
    append_u64_array(out, &totals.total_hit_blocks);
    out.extend_from_slice(b",\"total_hit_tokens\":");
    append_u64_array(out, &totals.total_hit_tokens);
    out.extend_from_slice(b",\"hit_rates\":");
    append_g6_array(out, totals.hit_rates());
    if let Some(tiers) = tiers {
        append_tier_fields(out, totals, tiers);
    }
    append_opt_fields(out, totals);
    out.extend_from_slice(b"}\n");
}

/// With the OPT facts read beside (`--opt`), per slot: `,"opt_hit_tokens":[..],
/// "opt_hit_rates":[..],"cold_miss_tokens":[..],"capacity_miss_tokens":[..],
/// "policy_miss_tokens":[..]`; nothing without.
fn append_opt_fields(out: &mut Vec<u8>, totals: &SlotTotals) {
    let (Some(opt), Some(rates), Some(split)) =
        (&totals.opt, totals.opt_hit_rates(), totals.miss_split())
    else {
        return;
    };
    out.extend_from_slice(b",\"opt_hit_tokens\":");
    append_u64_array(out, &opt.hit_tokens);
    out.extend_from_slice(b",\"opt_hit_rates\":");
    append_g6_array(out, rates);
    out.extend_from_slice(b",\"cold_miss_tokens\":");
    append_u64_array(out, &vec![split.cold_miss_tokens; opt.hit_tokens.len()]);
    out.extend_from_slice(b",\"capacity_miss_tokens\":");
    append_u64_array(out, &split.capacity_miss_tokens);
    out.extend_from_slice(b",\"policy_miss_tokens\":[");
    let mut itoa = itoa::Buffer::new();
    for (index, &tokens) in split.policy_miss_tokens.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(itoa.format(tokens).as_bytes());
    }
    out.push(b']');
}

/// The pool comparison line, after the overall one (only with a pool lane):
/// `{"summary":true,"pool":NAME,"instances":N,"requests":..,"total_input_tokens":..,
/// "capacity_gb":[..],("capacity_blocks":[..],)"pool_capacity_blocks":[N × C, -1 = unlimited],
/// "pool_total_hit_blocks":[..],"pool_total_hit_tokens":[..],"pool_hit_rates":[..],
/// ("pool_opt_hit_tokens":[..],"pool_opt_hit_rates":[..] with `--opt`,)
/// "per_instance_total_hit_tokens":[..],"per_instance_hit_rates":[..]}`.
fn append_pool_line(
    out: &mut Vec<u8>,
    pool: &PoolSummary,
    instances: &SlotTotals,
    slots: &QuerySlots,
) {
    let mut itoa = itoa::Buffer::new();
    out.extend_from_slice(b"{\"summary\":true,\"pool\":");
    append_json_string(out, &pool.name);
    out.extend_from_slice(b",\"instances\":");
    out.extend_from_slice(itoa.format(pool.instances).as_bytes());
    out.extend_from_slice(b",\"requests\":");
    out.extend_from_slice(itoa.format(pool.pool.requests).as_bytes());
    out.extend_from_slice(b",\"total_input_tokens\":");
    out.extend_from_slice(itoa.format(pool.pool.total_input_tokens).as_bytes());
    out.extend_from_slice(b",\"capacity_gb\":");
    append_g6_array(out, slots.capacity_gb.iter().copied());
    if !slots.capacity_blocks.is_empty() {
        out.extend_from_slice(b",\"capacity_blocks\":");
        append_u64_array(out, &slots.capacity_blocks);
    }
    out.extend_from_slice(b",\"pool_capacity_blocks\":");
    append_blocks_or_unlimited(out, &pool.pool_capacity_blocks);
    out.extend_from_slice(b",\"pool_total_hit_blocks\":");
    append_u64_array(out, &pool.pool.total_hit_blocks);
    out.extend_from_slice(b",\"pool_total_hit_tokens\":");
    append_u64_array(out, &pool.pool.total_hit_tokens);
    out.extend_from_slice(b",\"pool_hit_rates\":");
    append_g6_array(out, pool.pool.hit_rates());
    if let (Some(opt), Some(rates)) = (&pool.pool.opt, pool.pool.opt_hit_rates()) {
        out.extend_from_slice(b",\"pool_opt_hit_tokens\":");
        append_u64_array(out, &opt.hit_tokens);
        out.extend_from_slice(b",\"pool_opt_hit_rates\":");
        append_g6_array(out, rates);
    }
    out.extend_from_slice(b",\"per_instance_total_hit_tokens\":");
    append_u64_array(out, &instances.total_hit_tokens);
    out.extend_from_slice(b",\"per_instance_hit_rates\":");
    append_g6_array(out, instances.hit_rates());
    out.extend_from_slice(b"}\n");
}

/// With `--tiers`, the pool line's tier fields: `,"pool_tier_capacity_blocks":[N × size,
/// -1 = unlimited]`, then the pool's own tier fields (as a summary line's, for the pool at
/// N × each tier size), then `"per_instance_tier_shares":[..],"per_instance_miss_share":x`
/// (the instances' own tiers, as the overall line's).
fn append_pool_tier_fields(
    out: &mut Vec<u8>,
    pool: &PoolSummary,
    instances: &SlotTotals,
    tiers: &TierPlan,
) {
    out.extend_from_slice(b",\"pool_tier_capacity_blocks\":");
    append_blocks_or_unlimited(out, &pool.pool_tier_capacity_blocks);
    append_tier_fields(out, &pool.pool, tiers);
    let (shares, miss_share) = instances.tier_shares();
    out.extend_from_slice(b",\"per_instance_tier_shares\":");
    append_g6_array(out, shares);
    out.extend_from_slice(b",\"per_instance_miss_share\":");
    append_g6(out, miss_share);
}

/// `,"tier_mode":..,"tier_names":[..],"tier_sizes":[..],"tier_hit_blocks":[..],
/// "tier_hit_tokens":[..],"tier_shares":[..],"miss_share":x`.
fn append_tier_fields(out: &mut Vec<u8>, totals: &SlotTotals, tiers: &TierPlan) {
    let strings = |out: &mut Vec<u8>, values: &[String]| {
        out.push(b'[');
        for (index, value) in values.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            append_json_string(out, value);
        }
        out.push(b']');
    };
    out.extend_from_slice(match tiers.mode {
        TierMode::Exclusive => b",\"tier_mode\":\"exclusive\"",
        TierMode::Inclusive => b",\"tier_mode\":\"inclusive\"",
    });
    out.extend_from_slice(b",\"tier_names\":");
    strings(out, &tiers.names);
    out.extend_from_slice(b",\"tier_sizes\":");
    strings(out, &tiers.sizes_text);
    out.extend_from_slice(b",\"tier_hit_blocks\":");
    append_u64_array(out, &totals.tier_hit_blocks);
    out.extend_from_slice(b",\"tier_hit_tokens\":");
    append_u64_array(out, &totals.tier_hit_tokens);
    let (shares, miss_share) = totals.tier_shares();
    out.extend_from_slice(b",\"tier_shares\":");
    append_g6_array(out, shares);
    out.extend_from_slice(b",\"miss_share\":");
    append_g6(out, miss_share);
}

/// Queries `facts_paths` in order (shards of one run: rows are written file by file, the
/// summaries add up every file) and writes the JSONL to `out`.
///
/// Every file is opened and its header checked before anything is written. Any malformed row
/// fails the whole query with an error naming the file and line (rows before it may already
/// have been written: publish `out` atomically). Row lines are formatted and written on a
/// second thread; the bytes are the same as [`QueryJsonlWriter`]'s.
pub fn query_facts_files<W: Write + Send>(
    facts_paths: &[PathBuf],
    slots: QuerySlots,
    options: QueryOptions,
    out: W,
) -> Result<(W, QuerySummary), QueryError> {
    query_facts_files_planned(facts_paths, slots, options, &QueryPlan::default(), out)
}

/// [`query_facts_files`] with cache tiers (tier fields in every summary) and a time range
/// (rows outside it are neither written nor summed). The readers count the input tokens of
/// every file's rows together, so no total can wrap (a row that would is refused).
pub fn query_facts_files_planned<W: Write + Send>(
    facts_paths: &[PathBuf],
    slots: QuerySlots,
    options: QueryOptions,
    plan: &QueryPlan,
    mut out: W,
) -> Result<(W, QuerySummary), QueryError> {
    let mut run = QueryRun::open(facts_paths, slots, plan)?;
    if options.summary_only {
        run.read_rows(|_, _| Ok(()))?;
    } else {
        let slot_count = run.slots().len();
        let (full_sender, full_receiver) = mpsc::sync_channel::<RowBatch>(BATCHES_IN_FLIGHT);
        let (empty_sender, empty_receiver) = mpsc::channel::<RowBatch>();
        let (read_result, written) = thread::scope(|scope| {
            let formatter = thread::Builder::new()
                .name("litehit-format".into())
                .spawn_scoped(scope, move || -> io::Result<W> {
                    let mut buffer = LineBuffer::with_capacity(FLUSH_THRESHOLD_BYTES + 64 * 1024);
                    for mut batch in full_receiver {
                        batch.write_lines(slot_count, &mut buffer, &mut out)?;
                        batch.clear();
                        // The reader may be done already; then the batch is simply dropped.
                        let _ = empty_sender.send(batch);
                    }
                    out.write_all(buffer.as_bytes())?;
                    Ok(out)
                })
                .map_err(QueryError::Spawn)?;
            let mut batch = RowBatch::default();
            let read_result = run.read_rows(|record, hit_blocks| {
                batch.push(record, hit_blocks);
                if batch.rows.len() == BATCH_ROWS {
                    let next = empty_receiver.try_recv().unwrap_or_default();
                    // A send error means the formatter stopped; its join result carries why.
                    full_sender
                        .send(std::mem::replace(&mut batch, next))
                        .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
                }
                Ok(())
            });
            if read_result.is_ok() {
                // A send error means the formatter stopped; its join result carries why.
                let _ = full_sender.send(batch);
            }
            drop(full_sender);
            let written = formatter
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            Ok::<_, QueryError>((read_result, written))
        })?;
        out = written.map_err(QueryError::Write)?;
        read_result?;
    }
    let tiers = plan.tiers.clone();
    let slots = run.slots().clone();
    let summary = run.finish()?;
    write_summary_jsonl(&mut out, &summary, &slots, tiers.as_ref()).map_err(QueryError::Write)?;
    out.flush().map_err(QueryError::Write)?;
    Ok((out, summary))
}

#[cfg(test)]
mod tests {
    use super::*;
    use litehit_core::facts::RequestFact;

    fn record(
        trace_id: &str,
        instance_id: &str,
        timestamp_ns: i64,
        len: u64,
        pairs: &[[u64; 2]],
    ) -> FactRecord {
        FactRecord {
            trace_id: trace_id.into(),
            instance_id: instance_id.into(),
            timestamp_ns,
            input_token_len: len,
            block_size_tokens: 4,
            block_bytes: 16384,
            fact: RequestFact::from_pairs(pairs),
        }
    }

    fn run(records: &[FactRecord], slots: QuerySlots, options: QueryOptions) -> String {
        let mut writer = QueryJsonlWriter::new(Vec::new(), slots, options);
        for r in records {
            writer.write_record(r).unwrap();
        }
        String::from_utf8(writer.finish().unwrap().0).unwrap()
    }

    fn offline_runner_fixture() -> Vec<FactRecord> {
        vec![
            record("r1", "i1", 1000, 13, &[]),
            record("r2", "i1", 2000, 12, &[[1, 2]]),
            record("r3", "i1", 3000, 13, &[[1, 2], [4, 1]]),
        ]
    }

    #[test]
    fn reference_offline_runner_output() {
        let slots = QuerySlots {
            capacity_gb: vec![2.0 * 16384.0 / f64::from(1u32 << 30), -1.0],
            capacity_blocks: vec![],
        };
        let expected = concat!(
            r#"{"trace_id":"r1","instance_id":"i1","timestamp_ns":1000,"input_token_len":13,"hit_blocks":[0,0],"hit_rates":[0,0]}"#,
            "\n",
            r#"{"trace_id":"r2","instance_id":"i1","timestamp_ns":2000,"input_token_len":12,"hit_blocks":[2,2],"hit_rates":[0.666667,0.666667]}"#,
            "\n",
            r#"{"trace_id":"r3","instance_id":"i1","timestamp_ns":3000,"input_token_len":13,"hit_blocks":[2,3],"hit_rates":[0.615385,0.923077]}"#,
            "\n",
            r#"{"summary":true,"instance_id":"i1","requests":3,"total_input_tokens":38,"capacity_gb":[3.05176e-05,-1],"total_hit_blocks":[4,5],"total_hit_tokens":[16,20],"hit_rates":[0.421053,0.526316]}"#,
            "\n",
            r#"{"summary":true,"requests":3,"total_input_tokens":38,"capacity_gb":[3.05176e-05,-1],"total_hit_blocks":[4,5],"total_hit_tokens":[16,20],"hit_rates":[0.421053,0.526316]}"#,
            "\n",
        );
        assert_eq!(
            run(&offline_runner_fixture(), slots, QueryOptions::default()),
            expected
        );
    }

    #[test]
    fn block_slots_follow_gb_slots_and_get_their_own_key() {
        let slots = QuerySlots {
            capacity_gb: vec![0.0],
            capacity_blocks: vec![3, 4],
        };
        let out = run(
            &offline_runner_fixture(),
            slots,
            QueryOptions { summary_only: true },
        );
        let expected = concat!(
            r#"{"summary":true,"instance_id":"i1","requests":3,"total_input_tokens":38,"capacity_gb":[0],"capacity_blocks":[3,4],"total_hit_blocks":[0,4,5],"total_hit_tokens":[0,16,20],"hit_rates":[0,0.421053,0.526316]}"#,
            "\n",
            r#"{"summary":true,"requests":3,"total_input_tokens":38,"capacity_gb":[0],"capacity_blocks":[3,4],"total_hit_blocks":[0,4,5],"total_hit_tokens":[0,16,20],"hit_rates":[0,0.421053,0.526316]}"#,
            "\n",
        );
        assert_eq!(out, expected);
    }

    #[test]
    fn instances_in_byte_order_then_total() {
        let records = [
            record("a", "b", 1, 8, &[[1, 1]]),
            record("b", "B", 2, 8, &[[1, 2]]),
            record("c", "a", 3, 8, &[]),
            record("d", "b", 4, 0, &[[1, 1]]),
        ];
        let slots = QuerySlots {
            capacity_gb: vec![-1.0],
            capacity_blocks: vec![],
        };
        let out = run(&records, slots, QueryOptions { summary_only: true });
        let ids: Vec<_> = out
            .lines()
            .map(|l| l.split("\"instance_id\":").nth(1).map(|s| &s[..3]))
            .collect();
        assert_eq!(ids, [Some("\"B\""), Some("\"a\""), Some("\"b\""), None]);
        assert!(
            out.lines()
                .nth(2)
                .unwrap()
                .contains(r#""requests":2,"total_input_tokens":8,"#)
        );
        assert!(
            out.lines()
                .nth(2)
                .unwrap()
                .ends_with(r#""total_hit_blocks":[2],"total_hit_tokens":[8],"hit_rates":[1]}"#)
        );
    }

    #[test]
    fn zero_rows_give_one_zero_summary() {
        let slots = QuerySlots {
            capacity_gb: vec![1.0, 0.0],
            capacity_blocks: vec![],
        };
        assert_eq!(
            run(&[], slots, QueryOptions::default()),
            "{\"summary\":true,\"requests\":0,\"total_input_tokens\":0,\"capacity_gb\":[1,0],\"total_hit_blocks\":[0,0],\"total_hit_tokens\":[0,0],\"hit_rates\":[0,0]}\n"
        );
    }

    #[test]
    fn mixed_block_bytes_reproject_slots() {
        let mut small = record("s", "i", 1, 100, &[[1, 10]]);
        small.block_bytes = 1 << 20;
        let mut large = record("l", "j", 2, 100, &[[1, 10]]);
        large.block_bytes = 1 << 28;
        let slots = QuerySlots {
            capacity_gb: vec![1.0],
            capacity_blocks: vec![2],
        };
        let out = run(&[small, large], slots, QueryOptions::default());
        let lines: Vec<_> = out.lines().collect();
        assert!(lines[0].contains(r#""hit_blocks":[10,2]"#), "{}", lines[0]);
        assert!(lines[1].contains(r#""hit_blocks":[4,2]"#), "{}", lines[1]);
    }
}
