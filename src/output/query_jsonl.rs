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
//! Hits come from `projector` only; this module formats numbers by hand (`%g`, `itoa`) because
//! the query must stream millions of rows per second.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::PathBuf;

use super::number_format::{append_g6, append_json_string};
use crate::facts::FactRecord;
use crate::facts::file::{FactsError, FactsReader};
use crate::projector::{self, Capacity};

/// Output is handed to the writer in chunks of about this size.
const FLUSH_THRESHOLD_BYTES: usize = 1 << 20;

/// The capacities a query projects at, in output order: every GB slot, then every block slot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuerySlots {
    /// Binary GB (`GB × 2^30` bytes, floored), negative = unlimited; echoed in `capacity_gb`.
    pub capacity_gb: Vec<f64>,
    /// Exact block counts, independent of `block_bytes`; echoed in `capacity_blocks`.
    pub capacity_blocks: Vec<u64>,
}

impl QuerySlots {
    /// Number of slots.
    #[must_use]
    pub fn len(&self) -> usize {
        self.capacity_gb.len() + self.capacity_blocks.len()
    }

    /// Whether there is no slot at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slots as projector capacities, in output order.
    #[must_use]
    pub fn capacities(&self) -> Vec<Capacity> {
        let gigabytes = self.capacity_gb.iter().map(|&gb| Capacity::from_gb(gb));
        let blocks = self
            .capacity_blocks
            .iter()
            .map(|&blocks| Capacity::Blocks(blocks));
        gigabytes.chain(blocks).collect()
    }
}

/// Output switches of the query.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryOptions {
    /// Skip the per-row lines; write only the summaries.
    pub summary_only: bool,
}

/// Cumulative integers of one summary line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlotTotals {
    pub requests: u64,
    pub total_input_tokens: u64,
    /// Per slot, in output order.
    pub total_hit_blocks: Vec<u64>,
    /// Per slot: Σ hit blocks × the row's `block_size_tokens`.
    pub total_hit_tokens: Vec<u64>,
}

impl SlotTotals {
    fn new(slot_count: usize) -> Self {
        Self {
            requests: 0,
            total_input_tokens: 0,
            total_hit_blocks: vec![0; slot_count],
            total_hit_tokens: vec![0; slot_count],
        }
    }

    /// Cumulative token hit rate per slot (0 when there are no input tokens).
    #[must_use]
    pub fn hit_rates(&self) -> Vec<f64> {
        self.total_hit_tokens
            .iter()
            .map(|&tokens| hit_rate(tokens, self.total_input_tokens))
            .collect()
    }
}

/// What a finished query summed up: per instance (byte order of `instance_id`) and overall.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuerySummary {
    pub per_instance: Vec<(String, SlotTotals)>,
    pub overall: SlotTotals,
}

/// The query failed: a facts file could not be read, or the output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(transparent)]
    Facts(#[from] FactsError),
    #[error("write to output log failed")]
    Write(#[source] io::Error),
}

/// Streams facts records to upstream-format JSONL and keeps the summary totals.
#[derive(Debug)]
pub struct QueryJsonlWriter<W: Write> {
    out: W,
    buffer: Vec<u8>,
    slots: QuerySlots,
    capacities: Vec<Capacity>,
    options: QueryOptions,
    /// `block_bytes` that `slot_capacity_blocks` was computed for.
    projected_block_bytes: Option<u64>,
    /// Per slot: capacity in blocks for `projected_block_bytes`; `None` = unlimited.
    slot_capacity_blocks: Vec<Option<u64>>,
    hit_blocks: Vec<u64>,
    instance_index: HashMap<String, usize>,
    instances: Vec<(String, SlotTotals)>,
    last_instance: Option<usize>,
    overall: SlotTotals,
}

impl<W: Write> QueryJsonlWriter<W> {
    /// A writer projecting at `slots`.
    pub fn new(out: W, slots: QuerySlots, options: QueryOptions) -> Self {
        let capacities = slots.capacities();
        let slot_count = capacities.len();
        Self {
            out,
            buffer: Vec::with_capacity(FLUSH_THRESHOLD_BYTES + 64 * 1024),
            slots,
            capacities,
            options,
            projected_block_bytes: None,
            slot_capacity_blocks: vec![None; slot_count],
            hit_blocks: vec![0; slot_count],
            instance_index: HashMap::new(),
            instances: Vec::new(),
            last_instance: None,
            overall: SlotTotals::new(slot_count),
        }
    }

    /// Projects one record at every slot, adds it to the totals and writes its line.
    pub fn write_record(&mut self, record: &FactRecord) -> io::Result<()> {
        self.project(record);
        let instance = self.instance_slot(&record.instance_id);
        let block_size_tokens = record.block_size_tokens;
        for totals in [&mut self.instances[instance].1, &mut self.overall] {
            totals.requests += 1;
            // Unchecked (wrapping) u64 sums, as upstream.
            totals.total_input_tokens = totals
                .total_input_tokens
                .wrapping_add(record.input_token_len);
            for ((blocks, tokens), &hits) in totals
                .total_hit_blocks
                .iter_mut()
                .zip(&mut totals.total_hit_tokens)
                .zip(&self.hit_blocks)
            {
                *blocks = blocks.wrapping_add(hits);
                *tokens = tokens.wrapping_add(hits.wrapping_mul(block_size_tokens));
            }
        }
        if !self.options.summary_only {
            self.append_row_line(record);
            if self.buffer.len() >= FLUSH_THRESHOLD_BYTES {
                self.out.write_all(&self.buffer)?;
                self.buffer.clear();
            }
        }
        Ok(())
    }

    /// Writes the summary lines, flushes and returns the writer and the totals.
    pub fn finish(mut self) -> io::Result<(W, QuerySummary)> {
        let mut instances = std::mem::take(&mut self.instances);
        instances.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (instance_id, totals) in &instances {
            append_summary_line(&mut self.buffer, Some(instance_id), totals, &self.slots);
        }
        append_summary_line(&mut self.buffer, None, &self.overall, &self.slots);
        self.out.write_all(&self.buffer)?;
        self.out.flush()?;
        let summary = QuerySummary {
            per_instance: instances,
            overall: self.overall,
        };
        Ok((self.out, summary))
    }

    /// Fills `hit_blocks` for `record` at every slot, through the projector.
    fn project(&mut self, record: &FactRecord) {
        if self.projected_block_bytes != Some(record.block_bytes) {
            for (capacity_blocks, capacity) in
                self.slot_capacity_blocks.iter_mut().zip(&self.capacities)
            {
                *capacity_blocks = capacity.blocks(record.block_bytes);
            }
            self.projected_block_bytes = Some(record.block_bytes);
        }
        for (hits, capacity_blocks) in self.hit_blocks.iter_mut().zip(&self.slot_capacity_blocks) {
            *hits = match *capacity_blocks {
                Some(capacity_blocks) => projector::project_blocks(&record.fact, capacity_blocks),
                None => projector::project_infinite(&record.fact),
            };
        }
    }

    /// Index of the totals of `instance_id`, created on first sight.
    fn instance_slot(&mut self, instance_id: &str) -> usize {
        if let Some(last) = self.last_instance {
            if self.instances[last].0 == instance_id {
                return last;
            }
        }
        let index = match self.instance_index.get(instance_id) {
            Some(&index) => index,
            None => {
                let index = self.instances.len();
                self.instances.push((
                    instance_id.to_owned(),
                    SlotTotals::new(self.capacities.len()),
                ));
                self.instance_index.insert(instance_id.to_owned(), index);
                index
            }
        };
        self.last_instance = Some(index);
        index
    }

    fn append_row_line(&mut self, record: &FactRecord) {
        let mut itoa = itoa::Buffer::new();
        let out = &mut self.buffer;
        out.extend_from_slice(b"{\"trace_id\":");
        append_json_string(out, &record.trace_id);
        out.extend_from_slice(b",\"instance_id\":");
        append_json_string(out, &record.instance_id);
        out.extend_from_slice(b",\"timestamp_ns\":");
        out.extend_from_slice(itoa.format(record.timestamp_ns).as_bytes());
        out.extend_from_slice(b",\"input_token_len\":");
        out.extend_from_slice(itoa.format(record.input_token_len).as_bytes());
        out.extend_from_slice(b",\"hit_blocks\":");
        append_u64_array(out, &self.hit_blocks);
        out.extend_from_slice(b",\"hit_rates\":[");
        for (index, &hits) in self.hit_blocks.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            let hit_tokens = hits.wrapping_mul(record.block_size_tokens);
            append_g6(out, hit_rate(hit_tokens, record.input_token_len));
        }
        out.extend_from_slice(b"]}\n");
    }
}

/// `hit_tokens / input_tokens` in `f64`, 0 when there are no input tokens.
fn hit_rate(hit_tokens: u64, input_tokens: u64) -> f64 {
    if input_tokens == 0 {
        0.0
    } else {
        hit_tokens as f64 / input_tokens as f64
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
    out.extend_from_slice(b"}\n");
}

/// Queries `facts_paths` in order (shards of one run: rows are written file by file, the
/// summaries add up every file) and writes the JSONL to `out`.
///
/// Every file is opened and its header checked before anything is written. Any malformed row
/// fails the whole query with an error naming the file and line.
pub fn query_facts_files<W: Write>(
    facts_paths: &[PathBuf],
    slots: QuerySlots,
    options: QueryOptions,
    out: W,
) -> Result<(W, QuerySummary), QueryError> {
    let readers = facts_paths
        .iter()
        .map(|path| FactsReader::open(path))
        .collect::<Result<Vec<_>, _>>()?;
    let mut writer = QueryJsonlWriter::new(out, slots, options);
    let mut record = FactRecord::default();
    for mut reader in readers {
        while reader.next_record(&mut record)? {
            writer.write_record(&record).map_err(QueryError::Write)?;
        }
    }
    writer.finish().map_err(QueryError::Write)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::RequestFact;

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
