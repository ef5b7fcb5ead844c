//! Token hit rate per window of *trace* time (the window width is in the title), one line per
//! slot (the selected slot highlighted) plus the ∞ bound, for the selected instance or, on the
//! totals row, for every instance together. A slot added late starts at the first window it
//! saw whole; the table's cumulative numbers are retroactive, these windows are not.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Style, Stylize as _};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, LegendPosition, Paragraph};

use super::format;
use crate::app::App;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::{Timeline, ratio};

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    let timeline = &snap.timeline;
    let lane = view.selected_lane();
    let title = match u64::try_from(timeline.window_ns) {
        Ok(window_ns) if window_ns > 0 => format!(
            " hit rate per {} of trace time ",
            format::duration(std::time::Duration::from_nanos(window_ns))
        ),
        _ => " hit rate over trace time ".to_owned(),
    };
    let block = Block::bordered().title(title);
    let Some(first) = timeline.windows.first() else {
        frame.render_widget(Paragraph::new("no windows yet").dim().block(block), area);
        return;
    };
    let origin_ns = first.start_ns;
    let infinite = series(timeline, origin_ns, lane, None);
    let slots: Vec<Vec<(f64, f64)>> = (0..snap.slots.len())
        .map(|index| series(timeline, origin_ns, lane, Some(index)))
        .collect();
    let x_max = timeline
        .windows
        .last()
        .map_or(0.0, |last| (last.start_ns - origin_ns) as f64 / 1e9)
        .max(1e-9);

    let mut datasets = vec![
        Dataset::default()
            .name(format::infinite_label(snap.memory_horizon))
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::new().dark_gray())
            .data(&infinite),
    ];
    for (index, points) in slots.iter().enumerate() {
        let selected = index == view.selected_slot;
        if !selected && slots.len() > 4 {
            continue; // keep the chart legible: the selected slot and ∞ only
        }
        let style = if selected {
            Style::new().yellow()
        } else {
            Style::new().blue()
        };
        datasets.push(
            Dataset::default()
                .name(format::capacity(snap.slots[index].capacity))
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(style)
                .data(points),
        );
    }
    let chart = Chart::new(datasets)
        .block(block)
        .legend_position(Some(LegendPosition::BottomRight))
        .hidden_legend_constraints((Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)))
        .x_axis(
            Axis::default()
                .bounds([0.0, x_max])
                .labels(vec![
                    Line::from("0 s"),
                    Line::from(format!("{} s", format::trim_float(x_max))),
                ])
                .style(Style::new().dark_gray()),
        )
        .y_axis(super::hit_rate_axis());
    frame.render_widget(chart, area);
}

/// `(seconds since the first window, hit rate %)` for windows that have input and the slot.
fn series(
    timeline: &Timeline,
    origin_ns: i64,
    lane: Option<usize>,
    slot: Option<usize>,
) -> Vec<(f64, f64)> {
    timeline
        .windows
        .iter()
        .filter_map(|window| {
            let (hits, input) = window.hit_tokens(lane, slot)?;
            let rate = ratio(hits, input)?;
            Some(((window.start_ns - origin_ns) as f64 / 1e9, rate * 100.0))
        })
        .collect()
}
