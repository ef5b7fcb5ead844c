//! The policy table of `query --opt` and `mrc --opt`: per capacity, LRU's and OPT's hit
//! rates, the ∞ ceiling, and LRU's misses split into cold, capacity and policy misses, all
//! in % of the input tokens. The numbers are `litehit_report`'s; this file only lays them out.

use std::fmt::Write as _;

use unicode_width::UnicodeWidthStr as _;

use litehit_core::display;

/// One capacity's row, in tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRow {
    /// The capacity as shown (`40 GiB`, `1000 blk`, `∞`).
    pub capacity: String,
    pub lru_hit_tokens: u64,
    pub opt_hit_tokens: u64,
    pub infinite_hit_tokens: u64,
    pub cold_miss_tokens: u64,
    pub capacity_miss_tokens: u64,
    /// Negative where OPT's curve is only a lower bound below LRU's.
    pub policy_miss_tokens: i64,
}

/// The table for `input_tokens` input tokens, headed by `title`.
#[must_use]
pub fn render_policy_table(title: &str, input_tokens: u64, rows: &[PolicyRow]) -> String {
    let percent =
        |tokens: u64| display::percent(Some(litehit_report::ratio(tokens, input_tokens)), 2);
    let signed_percent = |tokens: i64| {
        let magnitude = percent(tokens.unsigned_abs());
        if tokens < 0 {
            format!("-{magnitude}")
        } else {
            magnitude
        }
    };
    let mut cells = vec![
        [
            "capacity",
            "LRU hit",
            "OPT hit",
            "∞ hit",
            "cold miss",
            "capacity miss",
            "policy miss",
        ]
        .map(String::from),
    ];
    cells.extend(rows.iter().map(|row| {
        [
            row.capacity.clone(),
            percent(row.lru_hit_tokens),
            percent(row.opt_hit_tokens),
            percent(row.infinite_hit_tokens),
            percent(row.cold_miss_tokens),
            percent(row.capacity_miss_tokens),
            signed_percent(row.policy_miss_tokens),
        ]
    }));
    let widths: Vec<usize> = (0..7)
        .map(|column| {
            cells
                .iter()
                .map(|row| row[column].width())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = format!("{title} ({input_tokens} input tokens; % of them):\n");
    for row in &cells {
        let mut line = String::new();
        for (column, (cell, width)) in row.iter().zip(&widths).enumerate() {
            let pad = " ".repeat(width - cell.width());
            if column == 0 {
                let _ = write!(line, "{cell}{pad}");
            } else {
                let _ = write!(line, "  {pad}{cell}");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(concat!(
        "LRU hit + cold + capacity + policy miss = 100%. Cold misses miss at any capacity;\n",
        "capacity misses are hit at ∞ but missed by OPT (Belady's optimal policy) at this\n",
        "capacity; policy misses are hit by OPT but missed by LRU.\n",
    ));
    out
}

/// `query --opt`'s table: the overall line's slots; `None` without OPT facts.
#[must_use]
pub fn query_policy_table(
    summary: &litehit_report::QuerySummary,
    slots: &litehit_report::QuerySlots,
) -> Option<String> {
    let labels: Vec<String> = slots
        .capacities()
        .into_iter()
        .map(display::capacity_label)
        .collect();
    let title = if summary.pool.is_some() {
        "LRU and OPT, every instance its own cache"
    } else {
        "LRU and OPT"
    };
    let mut out = policy_table_of(title, &summary.overall, &labels)?;
    if let Some(pool) = &summary.pool {
        let title = format!(
            "LRU and OPT, one cache shared by the {} instances ({}, at {} × each capacity)",
            pool.instances, pool.name, pool.instances
        );
        if let Some(table) = policy_table_of(&title, &pool.pool, &labels) {
            out.push('\n');
            out.push_str(&table);
        }
    }
    Some(out)
}

/// The table of `totals` with OPT's sums beside (`None` without them).
fn policy_table_of(
    title: &str,
    totals: &litehit_report::SlotTotals,
    labels: &[String],
) -> Option<String> {
    let (opt, split) = (totals.opt.as_ref()?, totals.miss_split()?);
    let rows: Vec<PolicyRow> = labels
        .iter()
        .enumerate()
        .map(|(slot, label)| PolicyRow {
            capacity: label.clone(),
            lru_hit_tokens: totals.total_hit_tokens[slot],
            opt_hit_tokens: opt.hit_tokens[slot],
            infinite_hit_tokens: opt.infinite_hit_tokens,
            cold_miss_tokens: split.cold_miss_tokens,
            capacity_miss_tokens: split.capacity_miss_tokens[slot],
            policy_miss_tokens: split.policy_miss_tokens[slot],
        })
        .collect();
    Some(render_policy_table(title, totals.total_input_tokens, &rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_reads_as_shares_of_the_input_tokens() {
        let table = render_policy_table(
            "total",
            200,
            &[PolicyRow {
                capacity: "1 GiB".into(),
                lru_hit_tokens: 20,
                opt_hit_tokens: 50,
                infinite_hit_tokens: 100,
                cold_miss_tokens: 100,
                capacity_miss_tokens: 50,
                policy_miss_tokens: 30,
            }],
        );
        let row = table.lines().nth(2).unwrap();
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            [
                "1", "GiB", "10.00%", "25.00%", "50.00%", "50.00%", "25.00%", "15.00%"
            ]
        );
    }
}
