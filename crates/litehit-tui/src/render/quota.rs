//! The `Q` line (`watch --quota-total`): the live best split of one cache among the tenant
//! lanes, as `query --quota-total` plans it, with what it is compared with:
//!
//! ```text
//!  Q 4 GiB · isolated 31.20% · pooled 33.05% · equal split 27.40% · isolation cost +1.85 pp · quotas team-a 2.5 GiB, team-b 1 GiB, …
//! ```
//!
//! Every figure is the snapshot's `QuotaView` (planned on the ingest thread by
//! `litehit_report`'s one planner); this file only formats. The pooled rate and the isolation
//! cost need the pool lane (`--pool`); without it they are left out. Parts that do not fit
//! are dropped from the end, whole.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Style, Stylize as _};
use ratatui::text::{Line, Span};

use super::format;
use litehit_core::projector::Capacity;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::QuotaView;

/// The largest quotas the line lists.
pub const SHOWN_TENANTS: usize = 4;

/// The line's label.
pub const LABEL: &str = " Q";

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot) {
    let Some(view) = &snap.quota else {
        return;
    };
    let mut spans = vec![Span::styled(LABEL, Style::new().bold())];
    let used = format::display_width(LABEL);
    spans.extend(
        format::whole_parts(parts(view), (" ", " · "), used, usize::from(area.width))
            .into_iter()
            .map(Span::raw),
    );
    frame.render_widget(Line::from(spans).dim(), area);
}

/// The line's parts, in order: the total, then (with a plan) the isolated, pooled and
/// equal-split rates, the isolation cost and the largest quotas; else why there is no plan.
#[must_use]
pub fn parts(view: &QuotaView) -> Vec<String> {
    let in_blocks = matches!(view.total, Capacity::Blocks(_));
    // A size as the total was typed: blocks for a block total, else bytes.
    let size = |blocks: u64, bytes: u64| {
        if in_blocks {
            format!("{blocks} blk")
        } else {
            format::bytes(bytes)
        }
    };
    let plan = match &view.plan {
        Ok(plan) => plan,
        Err(error) => {
            return vec![
                format::capacity(view.total),
                format!("no split yet: {error}"),
            ];
        }
    };
    let mut parts = vec![
        size(plan.quota_total_blocks, plan.quota_total_bytes),
        format!("isolated {}", format::percent(Some(plan.isolated_hit_rate))),
    ];
    if let Some(pooled) = plan.pooled_hit_rate {
        parts.push(format!("pooled {}", format::percent(Some(pooled))));
    }
    parts.push(format!(
        "equal split {}",
        format::percent(Some(plan.equal_split_hit_rate))
    ));
    if plan.isolation_cost_rate.is_some() {
        parts.push(format!(
            "isolation cost {}",
            format::points(plan.isolation_cost_rate)
        ));
    }
    let largest = view.largest_quotas(SHOWN_TENANTS);
    if !largest.is_empty() {
        let more = plan.tenants.len() - largest.len();
        let listed: Vec<String> = largest
            .iter()
            .map(|tenant| {
                format!(
                    "{} {}",
                    format::fit_middle_columns(&tenant.instance_id, 16),
                    size(tenant.quota_blocks, tenant.quota_bytes)
                )
            })
            .collect();
        parts.push(format!(
            "quotas {}{}",
            listed.join(", "),
            if more > 0 {
                format!(", +{more} more")
            } else {
                String::new()
            }
        ));
    }
    parts
}
