//! The quota plan of `query --quota-total`: its JSONL line (the plan's own field names) and a
//! Markdown table to paste into a change request.

use std::fmt::Write as _;

use litehit_core::display::{self, Precision};
use litehit_report::QuotaPlan;

/// The plan as one JSON line, with its newline.
#[must_use]
pub fn quota_line(plan: &QuotaPlan) -> Vec<u8> {
    let mut line = serde_json::to_vec(plan).expect("a plan of numbers and strings serializes");
    line.push(b'\n');
    line
}

/// One row per tenant (quota, hit rate, hit tokens), then the comparison with one shared
/// cache and with an equal split.
#[must_use]
pub fn render_quota_table(plan: &QuotaPlan) -> String {
    let size = |blocks: u64, bytes: u64| {
        format!(
            "{} ({blocks} blocks)",
            display::bytes(bytes, Precision::Significant(4))
        )
    };
    let percent = |rate: f64| display::percent(Some(rate), 2);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Best split of {} among {} tenants (isolated LRUs, quotas in steps of {}):\n",
        size(plan.quota_total_blocks, plan.quota_total_bytes),
        plan.tenants.len(),
        match plan.quota_step_blocks {
            1 => "1 block".to_owned(),
            step => format!("{step} blocks"),
        }
    );
    out.push_str("| tenant | quota | hit rate | hit tokens |\n|---|---:|---:|---:|\n");
    for tenant in &plan.tenants {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            tenant.instance_id.replace('|', "\\|"),
            size(tenant.quota_blocks, tenant.quota_bytes),
            percent(tenant.hit_rate),
            tenant.hit_tokens
        );
    }
    let _ = writeln!(
        out,
        "| **isolated, best split** | | **{}** | **{}** |",
        percent(plan.isolated_hit_rate),
        plan.isolated_hit_tokens
    );
    let _ = writeln!(
        out,
        "| equal split | | {} | {} |",
        percent(plan.equal_split_hit_rate),
        plan.equal_split_hit_tokens
    );
    match (plan.pooled_hit_rate, plan.pooled_hit_tokens) {
        (Some(rate), Some(tokens)) => {
            let _ = writeln!(
                out,
                "| one shared cache (pool) | | {} | {tokens} |",
                percent(rate)
            );
        }
        _ => out.push_str("| one shared cache | | - (no pool lane: replay --pool) | |\n"),
    }
    if plan.quota_spare_blocks > 0 {
        let _ = writeln!(
            out,
            "\n{} blocks of the total are left unassigned (off the grid, or no tenant gains from them).",
            plan.quota_spare_blocks
        );
    }
    if plan.equal_split_hit_tokens > plan.isolated_hit_tokens {
        // The best split is exact on the grid; the equal split (total / N) is off it.
        let _ = writeln!(
            out,
            "\nThe equal split, off the grid, beats the best split on it: take a finer \
             --quota-step (the grid is {} blocks).",
            plan.quota_step_blocks
        );
    }
    if let (Some(cost_rate), Some(cost_tokens)) =
        (plan.isolation_cost_rate, plan.isolation_cost_tokens)
    {
        let verdict = match cost_tokens.cmp(&0) {
            std::cmp::Ordering::Greater => "sharing wins: isolation costs",
            std::cmp::Ordering::Less => "isolation wins: the best split gains",
            std::cmp::Ordering::Equal => "isolation costs nothing:",
        };
        let _ = writeln!(
            out,
            "\n{verdict} {:.2} rate points ({} tokens).",
            (cost_rate * 100.0).abs(),
            cost_tokens.unsigned_abs()
        );
    }
    out
}
