//! The per-instance summary printed after a replay (and reused by the live monitor's quit
//! message): requests, block accesses, unique blocks, the ∞-capacity token hit rate.

use litehit_core::display::{self, Precision};
use litehit_core::engine::CachePolicy;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;
use unicode_width::UnicodeWidthStr as _;

use litehit_core::engine::Lane;
use litehit_report::ratio;

/// One lane's totals, as plain numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneSummary {
    pub instance_id: String,
    pub requests: u64,
    pub request_blocks: u64,
    pub input_tokens: u64,
    pub unique_blocks: u64,
    pub infinite_hit_tokens: u64,
    pub core_memory_bytes: usize,
    /// The lane's block geometry, which its facts rows keep: GB capacities become blocks of
    /// `block_bytes` at query time.
    pub block_size_tokens: u64,
    pub block_bytes: u64,
    /// The shared pool lane (`--pool`): printed after `total`, which leaves it out.
    pub pool: bool,
    /// `--memory-horizon` in this lane's blocks: its ∞ hits are then a lower bound (`≥`).
    pub memory_horizon_blocks: Option<u64>,
}

impl LaneSummary {
    #[must_use]
    pub fn of(lane: &Lane) -> Self {
        Self {
            instance_id: lane.spec().instance_id.clone(),
            requests: lane.requests(),
            request_blocks: lane.request_blocks(),
            input_tokens: lane.input_tokens(),
            unique_blocks: lane.unique_blocks(),
            infinite_hit_tokens: lane.infinite_hit_blocks() * lane.spec().block_size_tokens,
            core_memory_bytes: lane.core_memory_usage_bytes(),
            block_size_tokens: lane.spec().block_size_tokens,
            block_bytes: lane.spec().block_bytes,
            pool: lane.is_pool(),
            memory_horizon_blocks: lane.memory_horizon_blocks(),
        }
    }

    /// Σ hit tokens / Σ input tokens at unlimited capacity (0 when there were no tokens).
    #[must_use]
    pub fn infinite_hit_rate(&self) -> f64 {
        ratio(self.infinite_hit_tokens, self.input_tokens)
    }
}

/// Human-readable bytes with binary units (`1.5 GiB`).
#[must_use]
pub fn human_bytes(bytes: u64) -> String {
    display::bytes(bytes, Precision::Decimals(1))
}

/// After the pool lane's name in the table: it is one cache for all instances.
const SHARED: &str = " (shared)";

/// An input that was converted to trace lines before the replay (`replay --format openai`):
/// its format's name and its size, said in the summary instead of the trace it became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvertedInput {
    pub format: &'static str,
    pub bytes: u64,
}

/// The `total` row: every instance with its own cache, as `query`'s overall line.
fn total_of(instances: &[&LaneSummary]) -> LaneSummary {
    LaneSummary {
        // Sums, and the token-weighted ∞ hit rate; the shared pool is not an instance.
        instance_id: "total".to_owned(),
        requests: instances.iter().map(|lane| lane.requests).sum(),
        request_blocks: instances.iter().map(|lane| lane.request_blocks).sum(),
        input_tokens: instances.iter().map(|lane| lane.input_tokens).sum(),
        unique_blocks: instances.iter().map(|lane| lane.unique_blocks).sum(),
        infinite_hit_tokens: instances.iter().map(|lane| lane.infinite_hit_tokens).sum(),
        core_memory_bytes: instances.iter().map(|lane| lane.core_memory_bytes).sum(),
        block_size_tokens: 0,
        block_bytes: 0,
        pool: false,
        // A sum with one lower bound in it is a lower bound.
        memory_horizon_blocks: instances
            .iter()
            .filter_map(|lane| lane.memory_horizon_blocks)
            .max(),
    }
}

/// Under `--memory-horizon`: the line under the table saying which results are lower bounds.
fn horizon_note(lanes: &[LaneSummary]) -> Option<String> {
    let horizon_blocks = lanes
        .iter()
        .filter_map(|lane| lane.memory_horizon_blocks)
        .max()?;
    Some(format!(
        "memory horizon: {} {}; hits at larger capacities (and ∞, marked {}) are lower bounds",
        display::count(horizon_blocks),
        if horizon_blocks == 1 {
            "block"
        } else {
            "blocks"
        },
        display::LOWER_BOUND_MARK
    ))
}

/// The table printed on stderr after `litehit replay` of a trace.
#[must_use]
pub fn render_replay_summary(
    lanes: &[LaneSummary],
    trace_format: litehit_core::formats::TraceFormat,
    trace_bytes: u64,
    elapsed: Duration,
    facts_path: &Path,
) -> String {
    render_replay_summary_of(
        lanes,
        (trace_format, trace_bytes, None),
        elapsed,
        &[(CachePolicy::Lru, facts_path)],
    )
}

/// [`render_replay_summary`] of a trace that may have been converted from another input.
#[must_use]
pub fn render_replay_summary_of(
    lanes: &[LaneSummary],
    (trace_format, trace_bytes, converted): (
        litehit_core::formats::TraceFormat,
        u64,
        Option<ConvertedInput>,
    ),
    elapsed: Duration,
    facts: &[(CachePolicy, &Path)],
) -> String {
    let mut out = String::new();
    // 75 columns with ids up to 20 terminal columns (fits an 80-column terminal); a longer
    // id widens the first column for every row, so the table stays aligned. Columns, not
    // characters: a CJK character takes two.
    let id_width = lanes
        .iter()
        .map(|lane| lane.instance_id.width() + if lane.pool { SHARED.width() } else { 0 })
        .max()
        .unwrap_or(0)
        .max(20);
    let padded = |id: &str| format!("{id}{}", " ".repeat(id_width.saturating_sub(id.width())));
    let _ = writeln!(
        out,
        "{} {:>9} {:>12} {:>11} {:>8} {:>10}",
        padded("instance"),
        "requests",
        "blocks",
        "unique",
        "∞ hit",
        "core mem"
    );
    // Instances in byte order of their ids, as `query`'s summary lists them (a replay's lanes
    // are in config, then first-seen order).
    let mut instances: Vec<&LaneSummary> = lanes.iter().filter(|lane| !lane.pool).collect();
    instances.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
    let total = (instances.len() > 1).then(|| total_of(&instances));
    let pools = lanes.iter().filter(|lane| lane.pool);
    for lane in instances.into_iter().chain(&total).chain(pools) {
        let _ = writeln!(
            out,
            "{} {:>9} {:>12} {:>11} {:>8} {:>10}",
            padded(&if lane.pool {
                format!("{}{SHARED}", lane.instance_id)
            } else {
                lane.instance_id.clone()
            }),
            lane.requests,
            lane.request_blocks,
            lane.unique_blocks,
            // Under a memory horizon the ∞ hits are those of a cache of the horizon's size:
            // marked `≥`, as the TUI marks every result that is only a lower bound.
            display::percent_bound(
                Some(lane.infinite_hit_rate()),
                2,
                lane.memory_horizon_blocks.is_some()
            ),
            human_bytes(lane.core_memory_bytes as u64),
        );
    }
    // The geometry is fixed in the facts: say which one, so a GB answer can be read right
    // (another KV size per block means another replay, or `query --capacity-blocks`).
    let geometry = |lane: &LaneSummary| {
        format!(
            "{} tokens, {} each",
            lane.block_size_tokens,
            human_bytes(lane.block_bytes)
        )
    };
    let mut geometries: Vec<String> = lanes.iter().map(geometry).collect();
    geometries.dedup();
    if geometries.len() == 1 {
        let _ = writeln!(out, "blocks: {}", geometries[0]);
    } else if !lanes.is_empty() {
        let per_lane: Vec<String> = lanes
            .iter()
            .map(|lane| format!("{} {}", lane.instance_id, geometry(lane)))
            .collect();
        let _ = writeln!(out, "blocks: {}", per_lane.join("; "));
    }
    let blocks: u64 = lanes.iter().map(|l| l.request_blocks).sum();
    let seconds = elapsed.as_secs_f64().max(1e-9);
    let rate = blocks as f64 / seconds;
    // A small trace replays in microseconds: a rate of "0.0 M" would read as nothing done.
    let rate = if rate >= 1e5 {
        format!("{:.1} M", rate / 1e6)
    } else {
        format!("{:.1} k", rate / 1e3)
    };
    let input = match converted {
        Some(converted) => format!(
            "{} ({} format, as {} of {} rows)",
            human_bytes(converted.bytes),
            converted.format,
            human_bytes(trace_bytes),
            trace_format.name()
        ),
        None => format!(
            "{} ({} format)",
            human_bytes(trace_bytes),
            trace_format.name()
        ),
    };
    let _ = writeln!(
        out,
        "replayed {input} in {seconds:.2} s ({rate} block accesses/s); facts: {}",
        facts_list(facts)
    ); // writing to a String cannot fail
    if let Some(note) = horizon_note(lanes) {
        let _ = writeln!(out, "{note}");
    }
    out
}

/// The `--model` lines under the summary: the model and its KV size, and what of it is not
/// modelled (sliding-window layers), so a GB answer can be read for the model it is for.
#[must_use]
pub fn render_model(model: &litehit_core::config::ModelKvSize) -> String {
    let mut out = format!("model: {}\n", model.describe());
    if let Some(notice) = model.windowed_notice() {
        let _ = writeln!(out, "model: {notice}");
    }
    out
}

/// The published facts files: LRU alone reads as it always has; otherwise each file names its
/// policy.
fn facts_list(facts: &[(CachePolicy, &Path)]) -> String {
    match facts {
        [(CachePolicy::Lru, path)] => path.display().to_string(),
        _ => facts
            .iter()
            .map(|(policy, path)| match policy {
                CachePolicy::Lru => format!("{} (LRU)", path.display()),
                CachePolicy::Opt => format!("{} (OPT, Belady's optimal policy)", path.display()),
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The lines under the replay summary about the serving engine: each instance's LRU hit rate
/// at the `engine` slot (`--gpu-blocks`, `--gpu-memory`) and, when the trace carried the
/// engine's cached tokens, the observed hit rate beside LRU at the slot and at ∞ over the
/// same requests, and the effective capacity (the smallest LRU cache reaching the observed
/// hits). Empty with neither. Every number is the comparison's (`litehit_report`).
#[must_use]
pub fn render_engine_comparison(comparison: &litehit_report::EngineComparison) -> String {
    let pool = comparison.pool();
    let observed = comparison.has_observations();
    if pool.is_none() && !observed {
        return String::new();
    }
    let rows = comparison.rows();
    let mut out = String::new();
    if let Some(pool) = pool {
        let _ = writeln!(out, "engine slot: {}", pool.describe());
    }
    if observed {
        // The last row is the total (or the one instance).
        let (with, all) = rows.last().map_or((0, 0), |row| {
            (row.sums.observed_requests, row.sums.requests)
        });
        let _ = writeln!(
            out,
            "observed: the engine's cached tokens ({with} of {all} requests carry them), \
             beside LRU over the same requests"
        );
    }
    let id_width = rows
        .iter()
        .map(|row| row.instance_id.width())
        .max()
        .unwrap_or(0)
        .max(20);
    let padded = |id: &str| format!("{id}{}", " ".repeat(id_width.saturating_sub(id.width())));
    let mut header = vec![padded("instance")];
    if pool.is_some() {
        header.push(format!("{:>13}", "engine blocks"));
    }
    if observed {
        header.push(format!("{:>9}", "observed"));
    }
    let opt = pool.is_some() && comparison.has_opt();
    if pool.is_some() {
        header.push(format!("{:>10}", "LRU engine"));
    }
    if opt {
        header.push(format!("{:>10}", "OPT engine"));
    }
    if observed {
        header.push(format!("{:>8}", "LRU ∞"));
        header.push("effective capacity".to_owned());
    }
    let _ = writeln!(out, "{}", header.join(" "));
    let percent = |tokens: u64, of: u64| display::percent(Some(ratio(tokens, of)), 2);
    for row in &rows {
        let mut cells = vec![padded(&row.instance_id)];
        if pool.is_some() {
            cells.push(format!(
                "{:>13}",
                row.engine_capacity_blocks
                    .map_or_else(|| "-".to_owned(), display::count)
            ));
        }
        if observed {
            let of = row.sums.observed_input_tokens;
            cells.push(format!("{:>9}", percent(row.sums.observed_hit_tokens, of)));
            if pool.is_some() {
                cells.push(format!(
                    "{:>10}",
                    percent(row.sums.observed_rows_engine_hit_tokens, of)
                ));
            }
            if opt {
                cells.push(format!(
                    "{:>10}",
                    percent(row.sums.observed_rows_opt_engine_hit_tokens, of)
                ));
            }
            cells.push(format!(
                "{:>8}",
                percent(row.sums.observed_rows_infinite_hit_tokens, of)
            ));
            cells.push(effective_capacity_cell(row));
        } else {
            cells.push(format!(
                "{:>10}",
                percent(row.sums.engine_hit_tokens, row.sums.input_tokens)
            ));
            if opt {
                cells.push(format!(
                    "{:>10}",
                    percent(row.sums.opt_engine_hit_tokens, row.sums.input_tokens)
                ));
            }
        }
        let _ = writeln!(out, "{}", cells.join(" ").trim_end());
    }
    out
}

/// The effective capacity of a comparison row, with its share of the engine slot.
fn effective_capacity_cell(row: &litehit_report::ComparisonRow) -> String {
    match (row.effective_capacity_blocks, row.engine_capacity_blocks) {
        (Some(blocks), Some(engine)) if engine > 0 => format!(
            "{} blocks ({} of the engine slot)",
            display::count(blocks),
            display::percent(Some(ratio(blocks, engine)), 1)
        ),
        (Some(blocks), _) => format!("{} blocks", display::count(blocks)),
        (None, _) if row.sums.observed_requests == 0 => "-".to_owned(),
        (None, _) => "beyond ∞ (the engine hit more than LRU can)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_width::UnicodeWidthStr;

    #[test]
    fn human_bytes_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }

    #[test]
    fn summary_lists_every_lane_and_rate() {
        let lane = LaneSummary {
            instance_id: "i1".into(),
            requests: 5,
            request_blocks: 13,
            input_tokens: 54,
            unique_blocks: 5,
            infinite_hit_tokens: 32,
            core_memory_bytes: 2048,
            block_size_tokens: 4,
            block_bytes: 1024,
            pool: false,
            memory_horizon_blocks: None,
        };
        let text = render_replay_summary(
            &[lane],
            litehit_core::formats::TraceFormat::Standard,
            100,
            Duration::from_secs(1),
            Path::new("out/litehit_facts.csv"),
        );
        assert!(text.contains("i1"), "{text}");
        assert!(text.contains("59.26%"), "{text}");
        assert!(text.contains("blocks: 4 tokens, 1.0 KiB each"), "{text}");
        assert!(text.contains("out/litehit_facts.csv"), "{text}");
        // The table fits an 80-column terminal, even with large counts.
        let wide = LaneSummary {
            instance_id: "kimi-k3.tp8.ckpt1024".into(),
            requests: 123_456_789,
            request_blocks: 98_765_432_109,
            input_tokens: 1,
            unique_blocks: 9_876_543_210,
            infinite_hit_tokens: 1,
            core_memory_bytes: 999 << 30,
            block_size_tokens: 512,
            block_bytes: 64 << 20,
            pool: false,
            memory_horizon_blocks: None,
        };
        let text = render_replay_summary(
            std::slice::from_ref(&wide),
            litehit_core::formats::TraceFormat::Mooncake,
            1,
            Duration::from_secs(1),
            Path::new("f"),
        );
        for line in text.lines().take(2) {
            assert!(line.chars().count() <= 80, "{line:?}");
        }
        // A longer id widens the first column of every row: the table stays aligned.
        let long = LaneSummary {
            instance_id: "kimi-k3.tp8.checkpoint1024".into(),
            ..wide.clone()
        };
        // Wide characters take two terminal columns each.
        let cjk = LaneSummary {
            instance_id: "实例-东京-α".into(),
            ..wide.clone()
        };
        let text = render_replay_summary(
            &[wide, long, cjk],
            litehit_core::formats::TraceFormat::Mooncake,
            1,
            Duration::from_secs(1),
            Path::new("f"),
        );
        let widths: Vec<usize> = text.lines().take(4).map(UnicodeWidthStr::width).collect();
        assert!(widths.iter().all(|&w| w == widths[0]), "{text}");
    }
}
