//! Cache tiers (`watch --tiers`): per tier, the share of the input tokens it served for the
//! selected instance and for every instance together, then the miss share (what no tier
//! served). The figures are the snapshot's (the projector's tier bands over each lane's
//! accumulator, as `query --tiers`); this panel only formats them.

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

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    let Some(plan) = &snap.tiers else {
        return;
    };
    let totals = snap.totals();
    let lane = view
        .selected_lane()
        .and_then(|index| snap.lanes.get(index))
        .filter(|_| snap.lanes.len() > 1);
    // One column of shares per figure shown: the selected instance (with several), the total.
    let mut columns: Vec<(String, Vec<Option<f64>>, Option<f64>)> = Vec::with_capacity(2);
    if let Some(lane) = lane {
        let (shares, miss) = tier_shares(&lane.tier_hit_tokens(), lane.input_tokens);
        columns.push((lane.instance_id.clone(), shares, miss));
    }
    let (shares, miss) = tier_shares(&totals.tier_hit_tokens, totals.input_tokens);
    let total_name = if snap.lanes.len() > 1 {
        "total".to_owned()
    } else {
        snap.lanes
            .first()
            .map_or_else(|| "total".to_owned(), |lane| lane.instance_id.clone())
    };
    columns.push((total_name, shares, miss));

    let share_width = 16_u16;
    let header = Row::new(["tier".to_owned(), "size".to_owned()].into_iter().chain(
        columns.iter().map(|(name, _, _)| {
            format::fit_middle_columns(&format!("{name} served"), usize::from(share_width))
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
                    columns.iter().map(|(_, shares, _)| {
                        format::percent(shares.get(index).copied().flatten())
                    }),
                ))
            })
            .collect();
    rows.push(
        Row::new(
            ["miss".to_owned(), String::new()]
                .into_iter()
                .chain(columns.iter().map(|(_, _, miss)| format::percent(*miss))),
        )
        .dim(),
    );
    let widths: Vec<Constraint> = [Constraint::Length(12), Constraint::Length(10)]
        .into_iter()
        .chain(columns.iter().map(|_| Constraint::Length(share_width)))
        .collect();
    let title = format!(
        " cache tiers ({}): share of input tokens served ",
        plan.mode_name()
    );
    frame.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::bordered().title(title)),
        area,
    );
}
