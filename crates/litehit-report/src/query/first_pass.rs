//! The first pass of a query that needs one (trace times, `--window`): where the trace's rows
//! are in time, every lane (the pool lane is recognised before any line is written) and N,
//! the instances the pool is shared by in the accounted span.

use std::collections::HashSet;
use std::path::PathBuf;

use litehit_core::facts::FactRecord;

use super::QueryError;
use super::plan::PoolRule;
use crate::facts_files::FactsFiles;
use crate::pool_detect::LaneFingerprints;
use crate::span::{TimeRange, widen_span};

/// The first and last `timestamp_ns` ([`crate::trace_span`]), every lane's fingerprint (its
/// `instance_id`, rows and files: the pool lane is recognised from them) and every distinct
/// `(block_bytes, block_size_tokens)` in first-seen order (for the implausible KV size
/// warning, as the plain query's summary has them).
pub type SpanAndInstances = (Option<(i64, i64)>, LaneFingerprints, Vec<(u64, u64)>);

/// [`crate::trace_span`] and every lane of the rows (a pool comparison needs the pool and N, the
/// instances besides it, before the windows are written); `Err` when two files hold the
/// same rows of a lane (one file given twice). `kv_bytes_per_token`: `--model`'s, as
/// [`super::QueryPlan::kv_bytes_per_token`] (the geometries are then the model's).
pub fn trace_span_and_instances(
    facts_paths: &[PathBuf],
    kv_bytes_per_token: Option<u64>,
) -> Result<SpanAndInstances, QueryError> {
    let mut span: Option<(i64, i64)> = None;
    let mut lanes = LaneFingerprints::new();
    let mut geometries: Vec<(u64, u64)> = Vec::new();
    let mut record = FactRecord::default();
    let mut files = FactsFiles::lazy(facts_paths).with_kv_bytes_per_token(kv_bytes_per_token);
    while files.next_record(&mut record)? {
        span = widen_span(span, record.timestamp_ns);
        lanes.observe_in_file(&record, files.file_index());
        let geometry = (record.block_bytes, record.block_size_tokens);
        if geometries.last() != Some(&geometry) && !geometries.contains(&geometry) {
            geometries.push(geometry);
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
    let mut files = FactsFiles::lazy(facts_paths);
    while files.next_record(&mut record)? {
        if !range.contains(record.timestamp_ns) {
            continue;
        }
        if record.instance_id == name {
            pool_in_range = true;
        } else if !in_range.contains(record.instance_id.as_str()) {
            in_range.insert(record.instance_id.clone());
        }
    }
    Ok(pool_in_range.then_some(in_range.len() as u64))
}
