//! Cumulative token hit rate vs capacity (GiB) for the selected instance, slots marked as
//! vertical lines (the selected slot highlighted). On the totals row, every instance's curve
//! (as many as there are colours, the first in the table's order; the title says how many).

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

/// The lanes whose curves are drawn and the panel's title: the selected lane's, or on the
/// totals row one per colour, the first in the table's order (sorted, filtered), the title
/// saying how many of how many.
fn drawn_lanes<'a>(snap: &'a LiveSnapshot, view: &App) -> (Vec<&'a LaneSnapshot>, String) {
    if let Some(lane) = view.selected_lane().and_then(|index| snap.lanes.get(index)) {
        return (
            vec![lane],
            format!(" hit rate vs capacity · {} ", lane.instance_id),
        );
    }
    let order: Vec<usize> = if view.observed_lane_count() == snap.lanes.len() {
        view.lane_order()
    } else {
        (0..snap.lanes.len()).collect()
    };
    let lanes: Vec<&LaneSnapshot> = order
        .iter()
        .filter_map(|&index| snap.lanes.get(index))
        .take(LANE_COLORS.len())
        .collect();
    let title = if snap.lanes.is_empty() {
        " hit rate vs capacity ".to_owned()
    } else if lanes.len() < snap.lanes.len() {
        format!(
            " hit rate vs capacity · {} of {} instances, table order ",
            lanes.len(),
            snap.lanes.len()
        )
    } else {
        format!(
            " hit rate vs capacity · every instance ({}) ",
            snap.lanes.len()
        )
    };
    (lanes, title)
}

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    let (lanes, title) = drawn_lanes(snap, view);
    let block = Block::bordered().title(title);
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
