//! Cache tiers (`watch --tiers`): per tier, the share of the input tokens it served for the
//! selected instance (or the shared pool, its tiers at N × each size) and for every instance
//! together, then the miss share (what no tier served). The figures are the snapshot's (the
//! projector's tier bands over each lane's accumulator, as `query --tiers`); this panel only
//! formats them. Under a memory horizon a tier reaching above it reads `≥` (a lower bound)
//! and the miss share `≤` (an upper bound).

use std::fmt::Write as _;

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Style, Stylize as _};
use ratatui::widgets::{Block, Row, Table};

use super::format;
use crate::app::App;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::tier_shares;

/// Rows inside the border for `tier_count` tiers: the header, one per tier, the misses.
#[must_use]
pub fn lines(tier_count: usize) -> u16 {
    u16::try_from(tier_count + 2).unwrap_or(u16::MAX)
}

/// One column of shares: a lane's, the pool's or the total's.
struct Column {
    name: String,
    shares: Vec<Option<f64>>,
    miss: Option<f64>,
    lower_bounds: Vec<bool>,
    miss_is_upper_bound: bool,
}

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    let Some(plan) = &snap.tiers else {
        return;
    };
    let totals = &snap.totals;
    let pool = snap.pool.as_ref().filter(|_| view.selected_pool());
    let lane = view
        .selected_lane()
        .and_then(|index| snap.lanes.get(index))
        .filter(|_| snap.lanes.len() > 1);
    // One column of shares per figure shown: the selected instance (with several) or the
    // pool, then the total.
    let mut columns: Vec<Column> = Vec::with_capacity(2);
    if let Some(lane) = pool.or(lane) {
        let (shares, miss) = tier_shares(&lane.tier_hit_tokens(), lane.input_tokens);
        columns.push(Column {
            name: if pool.is_some() {
                format!("{} ×{}", lane.instance_id, lane.shared_by)
            } else {
                lane.instance_id.clone()
            },
            shares,
            miss,
            lower_bounds: lane.tier_lower_bounds.clone(),
            miss_is_upper_bound: lane.tier_miss_is_upper_bound(),
        });
    }
    let (shares, miss) = tier_shares(&totals.tier_hit_tokens, totals.input_tokens);
    let total_name = if snap.lanes.len() > 1 {
        "total".to_owned()
    } else {
        snap.lanes
            .first()
            .map_or_else(|| "total".to_owned(), |lane| lane.instance_id.clone())
    };
    columns.push(Column {
        name: total_name,
        shares,
        miss,
        miss_is_upper_bound: totals.tier_miss_is_upper_bound(),
        lower_bounds: totals.tier_lower_bounds.clone(),
    });

    let share_width = 16_u16;
    let header = Row::new(["tier".to_owned(), "size".to_owned()].into_iter().chain(
        columns.iter().map(|column| {
            format::fit_middle_columns(&format!("{} served", column.name), usize::from(share_width))
        }),
    ))
    .style(Style::new().bold());
    let mut rows: Vec<Row> =
        plan.names
            .iter()
            .zip(&plan.capacities)
            .enumerate()
            .map(|(index, (name, &size))| {
                // The screen's one spelling (`80 GiB`), not the size as typed (`80GB`).
                Row::new([name.clone(), format::capacity(size)].into_iter().chain(
                    columns.iter().map(|column| {
                        format::percent_bound(
                            column.shares.get(index).copied().flatten(),
                            column.lower_bounds.get(index).copied().unwrap_or(false),
                        )
                    }),
                ))
            })
            .collect();
    rows.push(
        Row::new(
            ["miss".to_owned(), String::new()]
                .into_iter()
                .chain(columns.iter().map(|column| {
                    format::percent_upper_bound(column.miss, column.miss_is_upper_bound)
                })),
        )
        .dim(),
    );
    let widths: Vec<Constraint> = [Constraint::Length(12), Constraint::Length(10)]
        .into_iter()
        .chain(columns.iter().map(|_| Constraint::Length(share_width)))
        .collect();
    let mut title = format!(
        " cache tiers ({}): share of input tokens served ",
        plan.mode_name()
    );
    if let Some(pool) = pool {
        // The size column is one instance's; the pool's tiers are N times as large.
        let _ = write!(title, "· pool at {} × each size ", pool.shared_by);
    }
    if columns.iter().any(|column| column.miss_is_upper_bound) {
        title.push_str("· ≥ lower bound above the horizon, ≤ upper bound ");
    }
    frame.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::bordered().title(title)),
        area,
    );
}
