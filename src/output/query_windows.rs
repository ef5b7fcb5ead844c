//! `query --window` written out: one line per window and capacity (JSONL or CSV) — or, with
//! `--tiers`, one line per window and tier: the hit tokens the tier served in the window,
//! their share of the window's input tokens, and the window's miss share. With a shared pool
//! lane, the pool's lines follow each window's: at N × each capacity, or with `--tiers` its
//! tiers at N × each size (`pool_tier_capacity_blocks`). The sums are
//! `litehit_report::QueryWindows`'; this file only formats them.

use std::io::Write;

use super::number_format::{append_g6, append_json_string};
use super::query_jsonl::append_block_count_or_unlimited;
use litehit_core::display;
use litehit_report::{QueryWindows, TierPlan, ratio, tier_miss_share};

/// `windows` as one line per window and slot: JSONL, or CSV with a header (with tiers, one
/// line per window and tier). Times are seconds since `trace_start_ns` (the first request).
pub fn write_windows(
    windows: &QueryWindows,
    trace_start_ns: i64,
    csv: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    if let Some(tiers) = windows.tiers() {
        return write_tier_windows(windows, tiers, trace_start_ns, csv, out);
    }
    let slots = windows.slots();
    let pool = windows.pool_lane();
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
    for (start_ns, end_ns, window) in windows.windows() {
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
            .zip(pool.capacity_blocks)
        {
            let counts = (window.pool_requests, window.pool_input_tokens, hit_tokens);
            let pooled = (pool.name, pool.instances, pool_blocks);
            window_line(&mut line, csv, span, capacity, counts, (Some(pooled), true));
            line.push(b'\n');
            out.write_all(&line)?;
        }
    }
    out.flush()
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

/// One line per window and tier (`--window` with `--tiers`): JSONL, or CSV with a header;
/// with a pool lane, the pool's lines (its tiers at N × each size) after each window's.
fn write_tier_windows(
    windows: &QueryWindows,
    tiers: &TierPlan,
    trace_start_ns: i64,
    csv: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let pool = windows.pool_lane();
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
    for (start_ns, end_ns, window) in windows.windows() {
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
            let pool_fields = (pool.name, pool.instances, capacity);
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
    let miss_share = tier_miss_share(counts.input_tokens, counts.tier_hit_tokens);
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
