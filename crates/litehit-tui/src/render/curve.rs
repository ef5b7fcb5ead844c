//! Cumulative token hit rate vs capacity (GiB) for the selected instance, slots marked as
//! vertical lines (the selected slot highlighted). On the totals row, every instance's curve.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Style, Stylize as _};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, LegendPosition, Paragraph};

use super::format;
use crate::app::App;
use litehit_core::projector::Capacity;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::{LaneSnapshot, ratio};

/// Line colours for several instances on one chart.
pub const LANE_COLORS: [Color; 6] = [
    Color::Cyan,
    Color::Magenta,
    Color::Green,
    Color::Yellow,
    Color::Blue,
    Color::Red,
];

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    let selected = view.selected_lane().and_then(|index| snap.lanes.get(index));
    let title = match selected {
        Some(lane) => format!(" hit rate vs capacity · {} ", lane.instance_id),
        None => " hit rate vs capacity · every instance ".to_owned(),
    };
    let block = Block::bordered().title(title);
    let lanes: Vec<&LaneSnapshot> = match selected {
        Some(lane) => vec![lane],
        None => snap.lanes.iter().take(LANE_COLORS.len()).collect(),
    };
    if lanes.iter().all(|lane| lane.requests == 0) {
        frame.render_widget(Paragraph::new("no requests yet").dim().block(block), area);
        return;
    }

    // Series: (hit rate %) against capacity in GiB, each lane with its own block_bytes.
    let series: Vec<Vec<(f64, f64)>> = lanes
        .iter()
        .map(|lane| {
            lane.curve
                .iter()
                .map(|point| {
                    let rate = ratio(point.hit_blocks * lane.block_size_tokens, lane.input_tokens)
                        .unwrap_or(0.0);
                    (
                        format::blocks_to_gb(point.capacity_blocks, lane.block_bytes),
                        rate * 100.0,
                    )
                })
                .collect()
        })
        .collect();
    let marker_lane = lanes[0];
    let slot_x: Vec<(usize, f64)> = snap
        .slots
        .iter()
        .enumerate()
        .filter_map(|(index, slot)| match slot.capacity {
            Capacity::Gigabytes(gb) => Some((index, gb)),
            Capacity::Blocks(blocks) => {
                Some((index, format::blocks_to_gb(blocks, marker_lane.block_bytes)))
            }
            Capacity::Infinite => None,
        })
        .collect();
    let x_max = series
        .iter()
        .flatten()
        .map(|&(x, _)| x)
        .chain(slot_x.iter().map(|&(_, x)| x * 1.05))
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    // A round axis end, so the labels read 50 GiB / 100 GiB rather than 85.233 / 170.467.
    let x_max = format::nice_ceiling(x_max);
    let markers: Vec<[(f64, f64); 2]> = slot_x
        .iter()
        .map(|&(_, x)| [(x, 0.0), (x, 100.0)])
        .collect();

    let mut datasets = Vec::new();
    for ((index, _), marker) in slot_x.iter().zip(&markers) {
        let style = if *index == view.selected_slot {
            Style::new().yellow()
        } else {
            Style::new().dark_gray()
        };
        datasets.push(
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(style)
                .data(marker),
        );
    }
    for (lane_index, (lane, points)) in lanes.iter().zip(&series).enumerate() {
        let mut dataset = Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::new().fg(LANE_COLORS[lane_index % LANE_COLORS.len()]))
            .data(points);
        if lanes.len() > 1 {
            dataset = dataset.name(lane.instance_id.clone());
        }
        datasets.push(dataset);
    }
    let x_labels = vec![
        Line::from("0"),
        Line::from(format::axis_gb(x_max / 2.0)),
        Line::from(format::axis_gb(x_max)),
    ];
    let chart = Chart::new(datasets)
        .block(block)
        .legend_position(Some(LegendPosition::BottomRight))
        .hidden_legend_constraints((Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)))
        .x_axis(
            Axis::default()
                .bounds([0.0, x_max])
                .labels(x_labels)
                .style(Style::new().dark_gray()),
        )
        .y_axis(super::hit_rate_axis());
    frame.render_widget(chart, area);
}
