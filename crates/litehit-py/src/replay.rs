//! `replay`: a trace file through the CLI's pipeline (detection, parse workers, engine), or
//! Python rows through the same engine; the GIL is released while it runs, and Ctrl-C stops
//! it between chunks.

use std::path::{Path, PathBuf};

use litehit_core::engine::CachePolicy;
use litehit_core::engine::pipeline::replay_stream_by_policy;
use litehit_core::formats::{
    DEFAULT_MAX_LINE_BYTES, LineParser, ParseOptions, TraceFormat, detect_format, open_trace,
    peek_first_line,
};
use pyo3::prelude::*;

use crate::errors::{chain_text, litehit_message};
use crate::facts::Facts;
use crate::options::{LaneOptions, offline_engine, trace_format};
use crate::rows::{PolicySinks, RowReplay};

/// Each policy's facts, by the policy's name (`lru`, `opt`), the primary policy's first.
type FactsByPolicy = Vec<(&'static str, Facts)>;

fn by_policy(batches: Vec<(CachePolicy, Vec<arrow_array::RecordBatch>)>) -> FactsByPolicy {
    batches
        .into_iter()
        .map(|(policy, batches)| (policy.name(), Facts::new(batches)))
        .collect()
}

/// Replays the trace at `path` (any format and compression `litehit replay` reads).
#[pyfunction]
#[pyo3(signature = (path, format, options))]
pub fn replay_path(
    py: Python<'_>,
    path: PathBuf,
    format: &str,
    options: LaneOptions,
) -> PyResult<FactsByPolicy> {
    let forced = trace_format(format)?;
    let batches = py.detach(|| replay_file(&path, forced, &options))?;
    Ok(by_policy(batches))
}

/// Replays rows: an Arrow stream or batch, or an iterable of dicts, with the columns of a
/// standard trace row.
#[pyfunction]
#[pyo3(signature = (source, options))]
pub fn replay_rows(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    options: LaneOptions,
) -> PyResult<FactsByPolicy> {
    let policies = options.cache_policies()?;
    let mut engine = offline_engine(options.engine_config(TraceFormat::Standard)?, policies)?;
    let mut next_row = 1;
    let mut sink = PolicySinks::new(policies, true);
    RowReplay {
        engine: &mut engine,
        next_row: &mut next_row,
        sink: &mut sink,
        source_name: "rows",
    }
    .feed(py, source)?;
    Ok(by_policy(sink.finish()))
}

/// `path` replayed as `replay TRACE --out DIR` replays it (without publishing): the facts
/// as batches.
fn replay_file(
    path: &Path,
    forced: Option<TraceFormat>,
    options: &LaneOptions,
) -> PyResult<Vec<(CachePolicy, Vec<arrow_array::RecordBatch>)>> {
    let policies = options.cache_policies()?;
    let shown = path.display();
    let reader = open_trace(path)
        .map_err(|error| litehit_message(format!("opening trace {shown}: {error}")))?;
    let (reader, detected) = if let Some(format) = forced {
        (reader, format)
    } else {
        let peeked = peek_first_line(reader)
            .map_err(|error| litehit_message(format!("reading trace {shown}: {error}")))?;
        let Some(line) = peeked.first_line.as_deref() else {
            return Err(litehit_message(format!(
                "{shown}: trace contains no valid Request/Get events (it is empty)"
            )));
        };
        let format = detect_format(line).ok_or_else(|| {
            litehit_message(format!(
                "{shown}: line {}: not a trace format litehit reads (pass format=...)",
                peeked.first_line_number
            ))
        })?;
        (peeked.reader, format)
    };
    let config = options.engine_config(detected)?;
    let parser = LineParser::new(
        detected,
        ParseOptions {
            trace_block_size_tokens: config.trace_block_size_tokens,
            ..ParseOptions::default()
        },
    );
    let mut engine = offline_engine(config, policies)?;
    let workers = litehit_core::threads::available(None)
        .map_err(|error| litehit_message(chain_text(&error)))?
        .get();
    let mut sink = PolicySinks::new(policies, true);
    let mut interrupted = None;
    let replayed = replay_stream_by_policy(
        reader,
        &parser,
        &mut engine,
        workers,
        DEFAULT_MAX_LINE_BYTES,
        &mut |policy, row| sink.push(policy, &row),
        &mut |_totals| {
            // Ctrl-C (or any pending signal handler's exception) stops the replay here.
            #[allow(
                clippy::redundant_closure_for_method_calls,
                reason = "the method's lifetime is not general enough for `attach`"
            )]
            if let Err(error) = Python::attach(|py| py.check_signals()) {
                interrupted = Some(error);
                return Err(std::io::Error::other("interrupted"));
            }
            Ok(())
        },
    );
    if let Some(error) = interrupted {
        return Err(error);
    }
    replayed.map_err(|error| litehit_message(format!("{shown}: {}", chain_text(&error))))?;
    if engine.stats().read_events == 0 {
        return Err(litehit_message(format!(
            "{shown}: trace contains no valid Request/Get events; no facts"
        )));
    }
    Ok(sink.finish())
}
