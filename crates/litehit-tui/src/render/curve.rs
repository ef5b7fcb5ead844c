//! Cumulative token hit rate vs capacity for the selected instance, on a log capacity axis
//! (binary units), so slots an order of magnitude apart get columns of their own:
//!
//! * each slot a labelled vertical marker `┊` in its own colour (the selected one reversed);
//! * the ∞ ceiling as a horizontal `╌` line;
//! * the 50/90/95/99 % knees as `◆`: the smallest capacity whose hits reach that share of
//!   the ∞ bound's, exact from the accumulator (`LaneSnapshot::capacity_for_fraction`, the
//!   same knee search as `mrc`), drawn at that capacity and the exact rate there (at least
//!   that share of the ∞ rate; hits rise in steps, so often more); under a memory horizon
//!   the legend says they are lower bounds (the true knees lie at or right of them); knees in
//!   one cell share one `◆` (`90/95`), and every text on the plot (knee and slot labels) is a
//!   column apart from the next, so none reads as part of another (`◆95` `80 GiB`);
//! * the legend box in a corner that hides no knee, slot label or ∞ line;
//! * y auto-scaled to the data (a round top a little above the ∞ rate), its scale on the axis;
//! * the x range ends at the sampled curve's end, a power of two of blocks that only ever
//!   doubles as the trace grows, and starts 12 doublings lower (or lower still, to show the
//!   smallest slot and the 50 % knee), so it does not jump from frame to frame.
//!
//! On the totals row, every instance's curve (as many as there are colours, the first in the
//! table's order; the title says how many are drawn), each tagged with its legend number.
//!
//! With `--policy lru,opt`, each drawn lane's OPT curve too (`LaneSnapshot::opt_curve`, sampled
//! at LRU's capacities), in dots `•` under LRU's braille: [`OPT_COLOR`] for one lane, the lane's
//! own colour on the totals row; the legend names both (`⠒ LRU`, `• OPT`). Where the two meet
//! LRU's is on top, so the dots show exactly the policy gap.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style, Stylize as _};
use ratatui::symbols::Marker;
use ratatui::widgets::canvas::{Canvas, Line as CanvasLine};
use ratatui::widgets::{Block, Paragraph, Widget as _};

use super::format;
use super::plot::{self, LegendEntry, Plot};
use crate::app::App;
use litehit_core::display::{self, Precision};
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::{CurvePoint, LaneSnapshot, ratio};

/// Line colours for several instances on one chart.
pub const LANE_COLORS: [Color; 6] = [
    Color::Cyan,
    Color::Magenta,
    Color::Green,
    Color::Yellow,
    Color::Blue,
    Color::Red,
];

/// The OPT curve's colour when one lane is drawn (a colour no lane nor slot has).
pub const OPT_COLOR: Color = Color::White;

/// The OPT curve's mark (LRU's curves are braille): one dot per cell the curve passes.
pub const OPT_SYMBOL: &str = "•";

/// Doublings of capacity the axis shows below its end (at least).
pub const AXIS_DOUBLINGS: i32 = 12;

/// The x coordinate of `bytes` on the chart: the axis is `log2` of the capacity in bytes.
#[must_use]
pub fn capacity_x(bytes: f64) -> f64 {
    bytes.max(f64::MIN_POSITIVE).log2()
}

/// The lanes whose curves are drawn (indices into the snapshot's lanes) and the panel's
/// title: the selected lane's, or on the totals row one per colour, the first in the table's
/// order (sorted, filtered), the title saying how many of how many are drawn.
fn drawn_lanes(chart: &Chart<'_>, view: &App) -> (Vec<usize>, Vec<String>) {
    let snap = chart.snap;
    if let Some(pool) = chart.pool {
        // The chart's one lane is the pool.
        let id = &pool.instance_id;
        return (
            vec![0],
            vec![
                format!(" hit rate vs total capacity · {id} (shared, N × slot) "),
                format!(" hit rate · {id} (shared) "),
            ],
        );
    }
    if let Some(index) = view
        .selected_lane()
        .filter(|&index| index < snap.lanes.len())
    {
        let id = &snap.lanes[index].instance_id;
        return (
            vec![index],
            vec![
                format!(" hit rate vs capacity · {id} "),
                format!(" hit rate · {id} "),
            ],
        );
    }
    let order: Vec<usize> = if view.observed_lane_count() == snap.lanes.len() {
        view.lane_order()
    } else {
        (0..snap.lanes.len()).collect()
    };
    let lanes: Vec<usize> = order
        .into_iter()
        .filter(|&index| index < snap.lanes.len())
        .take(LANE_COLORS.len())
        .collect();
    let (drawn, all) = (lanes.len(), snap.lanes.len());
    let title = if snap.lanes.is_empty() {
        vec![" hit rate vs capacity ".to_owned()]
    } else if drawn < all {
        vec![
            format!(" hit rate vs capacity · {drawn} of {all} drawn (table order) "),
            format!(" hit rate · {drawn} of {all} drawn "),
            format!(" {drawn} of {all} drawn "),
        ]
    } else {
        vec![
            format!(" hit rate vs capacity · every instance ({all} drawn) "),
            format!(" hit rate · all {all} drawn "),
        ]
    };
    (lanes, title)
}

/// Where everything of the chart goes, for drawing and for tests.
#[derive(Debug, Clone, PartialEq)]
pub struct CurveLayout {
    /// The plot area; x is [`capacity_x`] of bytes, y the hit rate in percent.
    pub plot: Plot,
    /// Indices of the lanes drawn.
    pub lanes: Vec<usize>,
    pub y_ticks: Vec<(f64, String)>,
    pub x_ticks: Vec<(f64, String)>,
    /// `(slot index, x)` of every finite slot, at the first drawn lane's block size.
    pub slots: Vec<(usize, f64)>,
    /// `(lane index, percent, x, y)` of the knees (one lane drawn only).
    pub knees: Vec<(usize, u32, f64, f64)>,
    /// `(lane index, ∞ rate in percent)`.
    pub ceilings: Vec<(usize, f64)>,
}

fn rate_percent(lane: &LaneSnapshot, hit_blocks: u64) -> f64 {
    ratio(
        hit_blocks.saturating_mul(lane.block_size_tokens),
        lane.input_tokens,
    )
    .unwrap_or(0.0)
        * 100.0
}

fn bytes_of(blocks: u64, block_bytes: u64) -> f64 {
    blocks as f64 * block_bytes as f64
}

/// The largest power of two at or below `value` (> 0).
fn pow2_floor(value: f64) -> f64 {
    value.log2().floor().exp2()
}

/// What the chart draws from: the snapshot, borrowed, and the lanes it can draw (indices in
/// [`CurveLayout`] point into them): the instances, or with the pool's row selected the pool
/// alone, its slots at N × their blocks (the snapshot's `slot_capacity_blocks`: the pool's
/// capacity is the fleet's total) and its knees its own (on its total capacity, as its curve).
struct Chart<'a> {
    snap: &'a LiveSnapshot,
    lanes: &'a [LaneSnapshot],
    /// The pool, when its row is selected (then `lanes` is it alone).
    pool: Option<&'a LaneSnapshot>,
}

impl<'a> Chart<'a> {
    fn of(snap: &'a LiveSnapshot, view: &App) -> Self {
        let pool = snap.pool.as_ref().filter(|_| view.selected_pool());
        Self {
            snap,
            lanes: pool.map_or(&snap.lanes, std::slice::from_ref),
            pool,
        }
    }

    /// Slot `index`'s label: as typed, or for the pool its N × capacity in blocks.
    fn slot_label(&self, index: usize) -> String {
        let slot = &self.snap.slots[index];
        match self.pool.and_then(|pool| pool.slot_capacity_blocks(index)) {
            Some(blocks) => format::capacity(litehit_core::projector::Capacity::Blocks(blocks)),
            None => format::slot(slot),
        }
    }
}

/// The chart's layout in `area` (the panel, borders included); `None` when nothing can be
/// drawn (no requests yet, or too small).
#[must_use]
pub fn layout(area: Rect, snap: &LiveSnapshot, view: &App) -> Option<CurveLayout> {
    chart_layout(area, &Chart::of(snap, view), view)
}

fn chart_layout(area: Rect, chart: &Chart<'_>, view: &App) -> Option<CurveLayout> {
    let (lanes, _) = drawn_lanes(chart, view);
    if lanes.iter().all(|&index| chart.lanes[index].requests == 0) {
        return None;
    }
    let first = &chart.lanes[lanes[0]];
    let ceilings: Vec<(usize, f64)> = lanes
        .iter()
        .map(|&index| {
            let lane = &chart.lanes[index];
            (index, rate_percent(lane, lane.infinite_hit_blocks))
        })
        .collect();
    let slots: Vec<(usize, f64)> = (0..chart.snap.slots.len())
        .filter_map(|index| {
            let blocks = first.slot_capacity_blocks(index)?;
            Some((index, capacity_x(bytes_of(blocks, first.block_bytes))))
        })
        .collect();
    let knees: Vec<(usize, u32, f64, f64)> = if lanes.len() == 1 {
        first
            .capacity_for_fraction
            .iter()
            .filter(|_| first.infinite_hit_blocks > 0)
            .map(|knee| {
                (
                    lanes[0],
                    knee.percent,
                    capacity_x(bytes_of(knee.capacity_blocks, first.block_bytes)),
                    // The rate the curve really has at the knee's capacity (≥ p % of ∞).
                    rate_percent(first, knee.hit_blocks),
                )
            })
            .collect()
    } else {
        Vec::new()
    };

    // x: from the curves' end down AXIS_DOUBLINGS doublings, or lower for the smallest slot
    // and the 50 % knee; never below one block.
    let hi = lanes
        .iter()
        .map(|&index| {
            let lane = &chart.lanes[index];
            let end = lane.curve.last().map_or(0, |point| point.capacity_blocks);
            bytes_of(end.max(2), lane.block_bytes)
        })
        .fold(0.0_f64, f64::max)
        .max(2.0);
    let one_block = lanes
        .iter()
        .map(|&index| chart.lanes[index].block_bytes.max(1) as f64)
        .fold(f64::INFINITY, f64::min);
    let mut lo = hi / f64::from(AXIS_DOUBLINGS).exp2();
    for &(_, x) in &slots {
        if x.exp2() >= one_block {
            lo = lo.min(x.exp2() / 2.0);
        }
    }
    for &(_, percent, x, _) in &knees {
        if percent == 50 && x.exp2() >= one_block {
            lo = lo.min(x.exp2() / 2.0);
        }
    }
    let mut lo = pow2_floor(lo).max(one_block);
    if lo * 2.0 >= hi {
        lo = hi / 4.0;
    }
    let x_bounds = [capacity_x(lo), capacity_x(hi)];

    let data_max = ceilings.iter().map(|&(_, rate)| rate).fold(0.0, f64::max);
    let (y_top, y_ticks) = plot::percent_axis(data_max);
    let inner = Block::bordered().inner(area);
    let plot = Plot::inside(inner, plot::label_width(&y_ticks), x_bounds, [0.0, y_top])?;
    let x_ticks = capacity_ticks(&plot);
    Some(CurveLayout {
        plot,
        lanes,
        y_ticks,
        x_ticks,
        slots,
        knees,
        ceilings,
    })
}

/// Ticks at powers of two of bytes (`1 GiB`, `16 GiB`, `1 TiB`): every `step`-th doubling
/// for the smallest step whose labels fit the plot's width side by side.
fn capacity_ticks(plot: &Plot) -> Vec<(f64, String)> {
    let [lo, hi] = plot.x_bounds;
    #[expect(
        clippy::cast_possible_truncation,
        reason = "byte exponents, well inside i32"
    )]
    let (first, last) = (lo.ceil() as i32, hi.floor() as i32);
    let ticks = |step: i32| -> Vec<(f64, String)> {
        (first..=last)
            .filter(|exponent| exponent.rem_euclid(step) == 0)
            .map(|exponent| {
                let value = f64::from(exponent);
                let label = if (0..64).contains(&exponent) {
                    display::bytes(1_u64 << exponent, Precision::Significant(3))
                } else {
                    format!("2^{exponent} B")
                };
                (value, label)
            })
            .collect()
    };
    for step in [1, 2, 5, 10, 20] {
        let candidate = ticks(step);
        let needed: usize = candidate.iter().map(|(_, label)| label.len() + 2).sum();
        if needed <= usize::from(plot.area.width) {
            return candidate;
        }
    }
    ticks(40)
}

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    let chart = Chart::of(snap, view);
    let (_, titles) = drawn_lanes(&chart, view);
    let block = Block::bordered().title(plot::title(&titles, area.width));
    let Some(layout) = chart_layout(area, &chart, view) else {
        let text = if chart.lanes.iter().any(|lane| lane.requests > 0) {
            ""
        } else {
            "no requests yet"
        };
        frame.render_widget(Paragraph::new(text).dim().block(block), area);
        return;
    };
    let buf = frame.buffer_mut();
    block.render(area, buf);
    draw(buf, area, &layout, &chart, view);
}

fn lane_color(position: usize) -> Color {
    LANE_COLORS[position % LANE_COLORS.len()]
}

fn draw(buf: &mut Buffer, area: Rect, layout: &CurveLayout, chart: &Chart<'_>, view: &App) {
    let plot = &layout.plot;
    let several = layout.lanes.len() > 1;
    plot::draw_axes(
        buf,
        plot,
        &layout.y_ticks,
        &layout.x_ticks,
        Style::new().dark_gray(),
    );
    // ∞ ceilings, then slot markers, under the curves.
    for (position, &(_, rate)) in layout.ceilings.iter().enumerate() {
        if let Some(row) = plot.row(rate) {
            let style = Style::new().fg(if several {
                lane_color(position)
            } else {
                Color::Reset
            });
            for x in plot.area.x..plot.area.right() {
                plot::put(buf, x, row, "╌", style, None);
            }
            plot::put(buf, plot.area.right() - 1, row, "∞", style.bold(), None);
        }
    }
    for &(index, x) in &layout.slots {
        let column = plot.column_clamped(x);
        let style = Style::new().fg(plot::slot_color(index));
        for y in plot.area.y..plot.area.bottom() {
            if plot::is_blank(buf, column, y, 1, plot.area) {
                plot::put(buf, column, y, "┊", style, None);
            }
        }
    }
    draw_curves(buf, plot, layout, chart);
    // What the legend must not hide: the knees, the slot labels, where each slot's marker
    // meets the curve (the slot's rate) and the ∞ line. Knees first, then the slot labels
    // around them, then the knees' labels where free: each text a column apart from the next,
    // so `◆95` never runs into `80 GiB`.
    let mut texts = draw_knee_marks(buf, plot, &layout.knees);
    let mut keep: Vec<(u16, u16)> = texts.iter().map(|text| (text.from, text.row)).collect();
    keep.extend(draw_slot_labels(buf, plot, layout, chart, view, &mut texts));
    keep.extend(draw_knee_labels(buf, plot, &layout.knees, &mut texts));
    for &(index, x) in &layout.slots {
        for &lane_index in &layout.lanes {
            let lane = &chart.lanes[lane_index];
            let rate = lane.slot_hit_rate(index).unwrap_or(0.0) * 100.0;
            if let Some(row) = plot.row(rate) {
                keep.push((plot.column_clamped(x), row));
            }
        }
    }
    for &(_, rate) in &layout.ceilings {
        if let Some(row) = plot.row(rate) {
            keep.extend((plot.area.x..plot.area.right()).map(|column| (column, row)));
        }
    }
    if several {
        draw_lane_tags(buf, plot, layout, chart);
    }
    let entries = legend(layout, chart, view);
    if !plot::draw_legend(buf, plot, &entries, &keep) {
        // No room for a box: the legend, compactly, on the bottom border.
        let mut x = area.x + 2;
        let row = area.bottom() - 1;
        let compact = layout
            .slots
            .iter()
            .map(|&(index, _)| {
                (
                    format!("┊{}", chart.slot_label(index)),
                    Style::new().fg(plot::slot_color(index)),
                )
            })
            .chain([(
                format!("╌{}", format::infinite_label(chart.snap)),
                Style::new(),
            )])
            .chain(draws_opt(layout, chart).then(|| {
                (
                    format!("{OPT_SYMBOL}OPT"),
                    Style::new().fg(if several { Color::Reset } else { OPT_COLOR }),
                )
            }))
            .chain((!layout.knees.is_empty()).then(|| {
                let mark = if knees_are_lower_bounds(layout, chart) {
                    display::LOWER_BOUND_MARK
                } else {
                    ""
                };
                (format!("◆{mark}knees"), Style::new().bold())
            }));
        for (text, style) in compact {
            if usize::from(x) + text.chars().count() + 2 > usize::from(area.right()) {
                break;
            }
            x = plot::put(buf, x, row, &text, style, Some(area)) + 1;
        }
    }
}

/// Every drawn lane's curves: OPT's first (with OPT), so LRU's braille lies on top where the
/// two meet.
fn draw_curves(buf: &mut Buffer, plot: &Plot, layout: &CurveLayout, chart: &Chart<'_>) {
    let several = layout.lanes.len() > 1;
    for (position, &index) in layout.lanes.iter().enumerate() {
        let lane = &chart.lanes[index];
        if let Some(opt_curve) = &lane.opt_curve {
            let color = if several {
                lane_color(position)
            } else {
                OPT_COLOR
            };
            draw_curve(buf, plot, lane, opt_curve, Marker::Dot, color);
        }
    }
    for (position, &index) in layout.lanes.iter().enumerate() {
        let lane = &chart.lanes[index];
        draw_curve(
            buf,
            plot,
            lane,
            &lane.curve,
            Marker::Braille,
            lane_color(position),
        );
    }
}

/// Whether some drawn lane has an OPT curve (`--policy lru,opt`).
fn draws_opt(layout: &CurveLayout, chart: &Chart<'_>) -> bool {
    layout
        .lanes
        .iter()
        .any(|&index| chart.lanes[index].opt_curve.is_some())
}

/// One of a lane's curves (`curve`: its LRU or its OPT samples) in `marker`, through its
/// samples (capacity 0 is off a log axis).
fn draw_curve(
    buf: &mut Buffer,
    plot: &Plot,
    lane: &LaneSnapshot,
    curve: &[CurvePoint],
    marker: Marker,
    color: Color,
) {
    let points: Vec<(f64, f64)> = curve
        .iter()
        .filter(|point| point.capacity_blocks > 0)
        .map(|point| {
            (
                capacity_x(bytes_of(point.capacity_blocks, lane.block_bytes)),
                rate_percent(lane, point.hit_blocks),
            )
        })
        .collect();
    Canvas::default()
        .marker(marker)
        .x_bounds(plot.x_bounds)
        .y_bounds(plot.y_bounds)
        .paint(|ctx| {
            for pair in points.windows(2) {
                ctx.draw(&CanvasLine::new(
                    pair[0].0, pair[0].1, pair[1].0, pair[1].1, color,
                ));
            }
        })
        .render(plot.area, buf);
}

/// A text drawn on the plot: `row`, columns `from..to`.
#[derive(Debug, Clone, Copy)]
struct PlacedText {
    row: u16,
    from: u16,
    to: u16,
}

impl PlacedText {
    /// Whether text at `from..to` on `row` would touch this one (no blank column between).
    fn touches(self, row: u16, from: u16, to: u16) -> bool {
        self.row == row && from <= self.to && self.from <= to
    }
}

/// The knees grouped by the cell they fall in, percentages ascending: `(column, row,
/// percents)`; two knees in one cell are one `◆` labelled `90/95`.
fn knee_cells(plot: &Plot, knees: &[(usize, u32, f64, f64)]) -> Vec<(u16, u16, Vec<u32>)> {
    let mut cells: Vec<(u16, u16, Vec<u32>)> = Vec::new();
    for &(_, percent, x, y) in knees {
        let column = plot.column_clamped(x);
        let row = plot.row(y).unwrap_or(plot.area.bottom() - 1);
        match cells.iter_mut().find(|(c, r, _)| (*c, *r) == (column, row)) {
            Some((_, _, percents)) => percents.push(percent),
            None => cells.push((column, row, vec![percent])),
        }
    }
    for (_, _, percents) in &mut cells {
        percents.sort_unstable();
    }
    cells
}

/// `◆` at each knee; returns where they are.
fn draw_knee_marks(
    buf: &mut Buffer,
    plot: &Plot,
    knees: &[(usize, u32, f64, f64)],
) -> Vec<PlacedText> {
    knee_cells(plot, knees)
        .into_iter()
        .map(|(column, row, _)| {
            plot::put(buf, column, row, "◆", Style::new().bold(), None);
            PlacedText {
                row,
                from: column,
                to: column + 1,
            }
        })
        .collect()
}

/// Each knee's percentages (`90`, `90/95` for knees sharing a cell) right of its `◆` (else
/// left of it), where they touch no other text; returns the cells they start and end at.
fn draw_knee_labels(
    buf: &mut Buffer,
    plot: &Plot,
    knees: &[(usize, u32, f64, f64)],
    texts: &mut Vec<PlacedText>,
) -> Vec<(u16, u16)> {
    let mut cells = Vec::new();
    for (column, row, percents) in knee_cells(plot, knees) {
        let label = percents
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("/");
        let width = u16::try_from(label.len()).unwrap_or(u16::MAX);
        let own_mark = |text: &PlacedText| text.row == row && text.from == column;
        let free = |from: u16, to: u16| {
            from >= plot.area.x
                && to <= plot.area.right()
                && !texts
                    .iter()
                    .any(|text| !own_mark(text) && text.touches(row, from, to))
        };
        // Right of the `◆`, else left of it (at the right edge, or before the next knee).
        let right = (column + 1, column.saturating_add(1).saturating_add(width));
        let left = (column.saturating_sub(width), column);
        let Some((from, to)) = [right, left]
            .into_iter()
            .find(|&(from, to)| to - from == width && free(from, to))
        else {
            continue;
        };
        plot::put(buf, from, row, &label, Style::new().dim(), None);
        texts.push(PlacedText { row, from, to });
        cells.extend([(from, row), (to - 1, row)]);
    }
    cells
}

/// Each slot's label at the top of its marker (the selected one reversed), on the first of
/// the top rows where it touches no other text (a knee's `◆`, another label); returns the
/// cells they start and end at.
fn draw_slot_labels(
    buf: &mut Buffer,
    plot: &Plot,
    layout: &CurveLayout,
    chart: &Chart<'_>,
    view: &App,
    texts: &mut Vec<PlacedText>,
) -> Vec<(u16, u16)> {
    let mut cells = Vec::new();
    let rows = plot.area.height.min(3);
    let mut slots = layout.slots.clone();
    slots.sort_by(|a, b| a.1.total_cmp(&b.1));
    for (index, x) in slots {
        let label = chart.slot_label(index);
        let width = u16::try_from(label.chars().count()).unwrap_or(u16::MAX);
        let column = plot.column_clamped(x);
        let from = if column + 1 + width <= plot.area.right() {
            column + 1
        } else {
            column.saturating_sub(width).max(plot.area.x)
        };
        let to = from.saturating_add(width);
        let Some(row) = (plot.area.y..plot.area.y + rows)
            .find(|&row| !texts.iter().any(|text| text.touches(row, from, to)))
        else {
            continue;
        };
        let mut style = Style::new().fg(plot::slot_color(index));
        if index == view.selected_slot {
            style = style.add_modifier(Modifier::REVERSED | Modifier::BOLD);
        }
        plot::put(buf, from, row, &label, style, Some(plot.area));
        texts.push(PlacedText { row, from, to });
        cells.extend([(from, row), (to - 1, row)]);
    }
    cells
}

/// Each drawn lane's legend number at the right end of its curve.
fn draw_lane_tags(buf: &mut Buffer, plot: &Plot, layout: &CurveLayout, chart: &Chart<'_>) {
    let column = plot.area.right() - 2;
    for (position, &index) in layout.lanes.iter().enumerate() {
        let lane = &chart.lanes[index];
        let Some(last) = lane.curve.last() else {
            continue;
        };
        let row = plot
            .row(rate_percent(lane, last.hit_blocks))
            .unwrap_or(plot.area.y);
        let row = row.saturating_sub(1).max(plot.area.y);
        plot::put(
            buf,
            column,
            row,
            &(position + 1).to_string(),
            Style::new().fg(lane_color(position)).bold(),
            Some(plot.area),
        );
    }
}

/// Whether the knees drawn are only lower bounds (their lane has a memory horizon).
fn knees_are_lower_bounds(layout: &CurveLayout, chart: &Chart<'_>) -> bool {
    layout
        .knees
        .iter()
        .any(|&(index, ..)| chart.lanes[index].knees_are_lower_bounds())
}

fn legend(layout: &CurveLayout, chart: &Chart<'_>, view: &App) -> Vec<LegendEntry> {
    let snap = chart.snap;
    let several = layout.lanes.len() > 1;
    let mut entries = Vec::new();
    if several {
        for (position, &index) in layout.lanes.iter().enumerate() {
            entries.push(LegendEntry {
                symbol: format!("{}⠒", position + 1),
                label: format::fit_middle_columns(&chart.lanes[index].instance_id, 18),
                style: Style::new().fg(lane_color(position)),
                emphasis: false,
            });
        }
    }
    let lane = (!several).then(|| &chart.lanes[layout.lanes[0]]);
    if draws_opt(layout, chart) {
        // Which curve is which policy: braille LRU, dotted OPT (a lane's colour on the
        // totals row, where the numbered entries say the lanes).
        let (lru_style, opt_style) = match lane {
            Some(_) => (Style::new().fg(lane_color(0)), Style::new().fg(OPT_COLOR)),
            None => (Style::new(), Style::new()),
        };
        entries.push(LegendEntry {
            symbol: "⠒".to_owned(),
            label: "LRU".to_owned(),
            style: lru_style,
            emphasis: false,
        });
        entries.push(LegendEntry {
            symbol: OPT_SYMBOL.to_owned(),
            label: "OPT (Belady)".to_owned(),
            style: opt_style,
            emphasis: false,
        });
    }
    entries.push(LegendEntry {
        symbol: "╌".to_owned(),
        label: match lane {
            Some(lane) => format!(
                "{} {}",
                format::infinite_label(snap),
                format::percent_bound(lane.infinite_hit_rate(), lane.is_lower_bound(None))
            ),
            None => format!("{} each instance's ceiling", format::infinite_label(snap)),
        },
        style: Style::new(),
        emphasis: false,
    });
    for &(index, _) in &layout.slots {
        let mut label = chart.slot_label(index);
        if let Some(lane) = lane {
            label = format!(
                "{label} {}",
                format::percent_bound(lane.slot_hit_rate(index), lane.slot_is_lower_bound(index))
            );
        }
        entries.push(LegendEntry {
            symbol: "┊".to_owned(),
            label,
            style: Style::new().fg(plot::slot_color(index)),
            emphasis: index == view.selected_slot,
        });
    }
    if !layout.knees.is_empty() {
        entries.push(LegendEntry {
            symbol: "◆".to_owned(),
            label: if knees_are_lower_bounds(layout, chart) {
                // The capacities are lower bounds: the true knees lie at or right of them.
                "50/90/95/99% knees (lower bounds)".to_owned()
            } else {
                "50/90/95/99% knees".to_owned()
            },
            style: Style::new().bold(),
            emphasis: false,
        });
    }
    entries
}
