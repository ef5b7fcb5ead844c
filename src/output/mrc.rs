//! The report of `litehit mrc` written out: the table (instances, the total, the shared pool
//! at N × C, the tier split) and the JSON document. The numbers are
//! `litehit_report::MrcReport`'s and `TierReport`'s; this file only formats them.

use std::fmt::Write as _;

use serde::Serialize;
use unicode_width::UnicodeWidthStr as _;

use super::policy_table::{PolicyRow, render_policy_table};
use litehit_core::display::{self, Precision};
use litehit_report::{
    MrcReport, PolicyReport, PoolReport, QuotaPlan, SpanReport, TierReport, TierRow,
};

/// `mrc --json` with the optional tier split and span after the usual fields (the usual
/// bytes without them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedReport<'a> {
    #[serde(flatten)]
    pub report: &'a MrcReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accounted_span: Option<SpanReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiers: Option<TierReport>,
    /// `--model`: the model every row's block bytes were taken from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelJson>,
    /// `--opt`: OPT's report and the policy gap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt: Option<&'a PolicyReport>,
    /// `--tenants --quota-total`: the best split, `query --quota-total`'s line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota: Option<&'a QuotaPlan>,
}

/// `mrc --json`'s `model`: the model and its KV size, and what is not modelled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelJson {
    /// The preset's Hugging Face id, or the config file as given.
    pub name: String,
    /// The KV bytes per token every row's `block_bytes` was computed from.
    pub kv_bytes_per_token: u64,
    /// The KV cache dtype counted.
    pub kv_cache_dtype: &'static str,
    /// Sliding-window or linear-attention layers left out (not modelled).
    pub windowed_layers: u64,
}

impl ModelJson {
    /// The JSON of `model`.
    #[must_use]
    pub fn of(model: &litehit_core::config::ModelKvSize) -> Self {
        Self {
            name: model.model.clone(),
            kv_bytes_per_token: model.kv_bytes_per_token,
            kv_cache_dtype: model.kv_cache_dtype.name(),
            windowed_layers: model.windowed_layers,
        }
    }
}

/// `mrc --opt`'s lines after the table: OPT's total knees and saturation, then the policy
/// table at LRU's and OPT's total knees.
#[must_use]
pub fn render_policy_tables(policy: &PolicyReport) -> String {
    let total = &policy.report.total;
    let hits = total.infinite_hit_rate > 0.0;
    let knees: Vec<String> = total
        .knees
        .iter()
        .map(|k| {
            format!(
                "{}% {}",
                k.percent,
                knee_cell(hits, k.point.capacity_gb, k.point.capacity_blocks)
            )
        })
        .collect();
    let mut out = format!(
        "OPT (Belady's optimal policy), total: ∞ hit rate {}; knees {}; saturation {}\n",
        format_percent(total.infinite_hit_rate),
        knees.join(", "),
        knee_cell(
            hits,
            total.saturation.capacity_gb,
            total.saturation.capacity_blocks
        ),
    );
    let rows: Vec<PolicyRow> = policy
        .gap
        .iter()
        .map(|point| PolicyRow {
            capacity: format_capacity(point.capacity_gb, point.capacity_blocks),
            lru_hit_tokens: point.lru_hit_tokens,
            opt_hit_tokens: point.opt_hit_tokens,
            infinite_hit_tokens: point.infinite_hit_tokens,
            cold_miss_tokens: point.cold_miss_tokens,
            capacity_miss_tokens: point.capacity_miss_tokens,
            policy_miss_tokens: point.policy_miss_tokens,
        })
        .collect();
    let input_tokens = policy
        .gap
        .first()
        .map_or(0, |point| point.total_input_tokens);
    out.push_str(&render_policy_table(
        "LRU and OPT at the total's knees",
        input_tokens,
        &rows,
    ));
    out
}

/// The tier table: one row per instance and the total, a column per tier and the misses.
#[must_use]
pub fn render_tier_table(report: &TierReport) -> String {
    let mut out = format!("tiers ({}):\n", report.tier_mode);
    let mut header = vec!["instance".to_owned()];
    header.extend(
        report
            .tier_names
            .iter()
            .zip(&report.tier_sizes)
            .map(|(name, size)| format!("{name} {size}")),
    );
    header.push("miss".to_owned());
    let row = |id: &str, r: &TierRow| {
        let mut cells = vec![id.to_owned()];
        cells.extend(r.tier_shares.iter().map(|s| format!("{:.2}%", s * 100.0)));
        cells.push(format!("{:.2}%", r.miss_share * 100.0));
        cells
    };
    let mut rows = vec![header];
    for instance in &report.instances {
        rows.push(row(instance.instance_id.as_deref().unwrap_or(""), instance));
    }
    rows.push(row("total", &report.total));
    if let Some(pool) = &report.pool {
        let id = pool.row.instance_id.as_deref().unwrap_or("");
        rows.push(row(
            &format!("{id} (shared, ×{})", pool.shared_by),
            &pool.row,
        ));
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for cells in rows {
        let line: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, &w))| {
                if c == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    if let Some(pool) = &report.pool {
        let _ = writeln!(
            out,
            "the shared pool's tiers are {} × each size (the {} instances' tiers together)",
            pool.shared_by, pool.shared_by
        );
    }
    out
}

/// The GiB columns assume each instance's KV size: a blank line and one `warning:` line per
/// implausible one (the core's rule), or nothing.
fn kv_size_warnings(report: &MrcReport) -> String {
    let mut out = String::new();
    if !report.kv_size_warnings.is_empty() {
        out.push('\n');
    }
    for warning in &report.kv_size_warnings {
        let _ = writeln!(out, "warning: {}", warning.message);
    }
    out
}

/// The human-readable table of `litehit mrc`.
#[must_use]
pub fn render_table(report: &MrcReport) -> String {
    let mut header: Vec<String> = [
        "instance",
        "requests",
        "input tokens",
        "block tokens",
        "block bytes",
        "∞ hit rate",
    ]
    .map(String::from)
    .to_vec();
    header.extend(report.knee_percents.iter().map(|p| format!("{p}% knee")));
    header.push("saturation".into());

    let mut rows: Vec<Vec<String>> = report
        .instances
        .iter()
        .map(|i| {
            let mut row = vec![
                i.instance_id.clone(),
                i.requests.to_string(),
                i.total_input_tokens.to_string(),
                i.block_size_tokens.to_string(),
                format_bytes(i.block_bytes),
                format_percent(i.infinite_hit_rate),
            ];
            let hits = i.infinite_hit_rate > 0.0;
            row.extend(
                i.knees
                    .iter()
                    .map(|k| knee_cell(hits, k.point.capacity_gb, Some(k.point.capacity_blocks))),
            );
            row.push(knee_cell(
                hits,
                i.saturation.capacity_gb,
                Some(i.saturation.capacity_blocks),
            ));
            row
        })
        .collect();
    let total = &report.total;
    let mut total_row = vec![
        "total".to_owned(),
        total.requests.to_string(),
        total.total_input_tokens.to_string(),
        String::new(),
        total
            .shared_block_bytes
            .map_or_else(|| "mixed".into(), format_bytes),
        format_percent(total.infinite_hit_rate),
    ];
    let hits = total.infinite_hit_rate > 0.0;
    total_row.extend(
        total
            .knees
            .iter()
            .map(|k| knee_cell(hits, k.point.capacity_gb, k.point.capacity_blocks)),
    );
    total_row.push(knee_cell(
        hits,
        total.saturation.capacity_gb,
        total.saturation.capacity_blocks,
    ));
    rows.push(total_row);

    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            rows.iter()
                .map(|row| row[column].width())
                .chain([header[column].width()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (column, cell) in row.iter().enumerate() {
            let pad = widths[column] - cell.width();
            if column == 0 {
                let _ = write!(line, "{cell}{}", " ".repeat(pad));
            } else {
                let _ = write!(line, "  {}{cell}", " ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if let Some(pool) = &report.pool {
        out.push_str(&render_pool_lines(pool));
    }
    out.push_str(&kv_size_warnings(report));
    out.push_str(concat!(
        "\nCumulative token hit rate of an exact LRU prefix cache. A p% knee is the smallest\n",
        "capacity reaching p% of the ∞-capacity hit rate; saturation is the smallest reaching all\n",
        "of it. GiB = 2^30 bytes, (n) = blocks. total: every instance with its own cache of that\n",
        "size, as in the overall line of `litehit query`; its knees are equal-share knees (the\n",
        "smallest equal per-instance size whose total reaches p%), not the Σ of instance knees\n",
        "that `watch` shows.\n",
    ));
    out
}

/// The pool's own line and, at the total's knees, the pool at N × C beside N caches of C.
fn render_pool_lines(pool: &PoolReport) -> String {
    let own = &pool.own;
    let hits = own.infinite_hit_rate > 0.0;
    let knees: Vec<String> = own
        .knees
        .iter()
        .map(|k| {
            format!(
                "{}% {}",
                k.percent,
                knee_cell(hits, k.point.capacity_gb, Some(k.point.capacity_blocks))
            )
        })
        .collect();
    let mut out = format!(
        "\n{} (shared by {} instances): {} requests, ∞ hit rate {}; pool size for {}\n",
        own.instance_id,
        pool.instances,
        own.requests,
        format_percent(own.infinite_hit_rate),
        knees.join(", "),
    );
    let Some(comparison) = &pool.comparison else {
        out.push_str("(no N × C comparison: the pool and the instances differ in block bytes)\n");
        return out;
    };
    let mut rows = vec![[
        "at equal-share knee".to_owned(),
        "per instance C".to_owned(),
        "total N × C".to_owned(),
        "N caches of C".to_owned(),
        "pool of N × C".to_owned(),
    ]];
    for knee in &comparison.knees {
        let point = &knee.point;
        rows.push([
            format!("{}%", knee.percent),
            format_capacity(
                point.per_instance_capacity_gb,
                Some(point.per_instance_capacity_blocks),
            ),
            format_capacity(point.total_capacity_gb, Some(point.total_capacity_blocks)),
            format_percent(point.per_instance_hit_rate),
            format_percent(point.pool_hit_rate),
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|column| {
            rows.iter()
                .map(|row| row[column].width())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &rows {
        let mut line = String::from(" ");
        for (cell, width) in row.iter().zip(&widths) {
            let _ = write!(line, "  {}{cell}", " ".repeat(width - cell.width()));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn format_percent(rate: f64) -> String {
    display::percent(Some(rate), 2)
}

/// A knee or saturation cell: `-` when nothing ever hits (every knee would read `0 GiB`,
/// true but unhelpful), else [`format_capacity`].
fn knee_cell(hits: bool, capacity_gb: f64, capacity_blocks: Option<u64>) -> String {
    if hits {
        format_capacity(capacity_gb, capacity_blocks)
    } else {
        "-".to_owned()
    }
}

/// `12.34 GiB (91)`; the block count is omitted when unknown. The GB figure is rounded
/// *up*: every capacity shown is a smallest capacity reaching a target, so the figure typed
/// back into `query` must reach it too.
fn format_capacity(capacity_gb: f64, capacity_blocks: Option<u64>) -> String {
    let gb = display::significant_up(capacity_gb, 4);
    match capacity_blocks {
        Some(blocks) => format!("{gb} GiB ({blocks})"),
        None => format!("{gb} GiB"),
    }
}

/// A byte count in the largest binary unit that keeps it at least 1 (`644.5 MiB`).
fn format_bytes(bytes: u64) -> String {
    display::bytes(bytes, Precision::Significant(4))
}

#[cfg(test)]
mod tests {
    use super::*;
    use litehit_core::facts::FactRecord;
    use litehit_core::facts::RequestFact;
    use litehit_report::MrcBuilder;

    fn record(instance_id: &str, len: u64, block_bytes: u64, pairs: &[[u64; 2]]) -> FactRecord {
        FactRecord {
            trace_id: "t".into(),
            instance_id: instance_id.into(),
            timestamp_ns: 1,
            input_token_len: len,
            block_size_tokens: 4,
            block_bytes,
            fact: RequestFact::from_pairs(pairs),
        }
    }

    #[test]
    fn a_total_over_different_block_bytes_says_mixed() {
        let mut builder = MrcBuilder::new();
        builder
            .add_record(&record("small", 40, 100, &[[1, 10]]))
            .unwrap();
        builder
            .add_record(&record("large", 40, 1000, &[[1, 10]]))
            .unwrap();
        let report = builder.finish().report(16);
        assert_eq!(report.total.shared_block_bytes, None);
        assert!(render_table(&report).contains("mixed"));
    }

    #[test]
    fn knees_are_a_dash_when_nothing_ever_hits() {
        let mut builder = MrcBuilder::new();
        builder.add_record(&record("a", 8, 1024, &[])).unwrap();
        let table = render_table(&builder.finish().report(10));
        let instance_row = table.lines().nth(1).unwrap();
        let last_cells: Vec<&str> = instance_row.split_whitespace().rev().take(5).collect();
        assert_eq!(
            last_cells, ["-"; 5],
            "four knees and the saturation: {table}"
        );
        assert!(!table.contains("0 GiB"), "{table}");
    }

    #[test]
    fn an_empty_report_is_a_table_of_its_header_and_total() {
        let report = MrcBuilder::new().finish().report(10);
        assert!(render_table(&report).starts_with("instance"));
    }

    #[test]
    fn significant_formatting() {
        assert_eq!(display::significant(57.421_875, 4), "57.42");
        assert_eq!(display::significant(1024.0, 4), "1024");
        assert_eq!(display::significant(0.000_976_562_5, 4), "0.0009766");
        assert_eq!(display::significant(0.0, 4), "0");
        // Knees and saturation round up, so the figure typed back still reaches the target
        // (7.705078125 GB is 7890 blocks of 1 MiB; 7.705 GB would be 7889).
        assert_eq!(display::significant_up(7.705_078_125, 4), "7.706");
        assert_eq!(display::significant_up(34.590_82, 4), "34.6");
        assert_eq!(display::significant_up(144.415, 4), "144.5");
        assert_eq!(display::significant_up(40.0, 4), "40");
        assert_eq!(display::significant_up(0.5, 4), "0.5");
        assert_eq!(display::significant_up(1024.0, 4), "1024");
        assert_eq!(format_bytes(675_864_576), "644.6 MiB");
        assert_eq!(format_bytes(512), "512 B");
    }
}
