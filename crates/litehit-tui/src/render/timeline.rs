//! Token hit rate per window of *trace* time, one line per slot in the slot's colour (the
//! selected slot drawn last, on top) plus the ∞ bound, for the selected instance (named in
//! the title), the shared pool on its row (`watch --pool`; each window at N × each slot, N
//! the instances then), or, on the totals row, for every instance together (the pool never
//! in that Σ), with the pool's line at the selected slot beside it: what routing loses.
//!
//! x is trace time since the trace's first request. The collected windows
//! (`--window-seconds`, doubled whenever the trace outgrows the windows kept) are summed into
//! wider ones for the chart — Σ hit tokens / Σ input tokens, exact — whose width is chosen
//! from the trace's span (about one per two columns) or set with `w`
//! ([`crate::app::TIMELINE_WINDOWS`]); so a long trace reads as a line, not a block of spikes.
//! y is auto-scaled to the data. A slot added late starts at the first window it saw whole;
//! the table's cumulative numbers are retroactive, these windows are not.

use std::time::Duration;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style, Stylize as _};
use ratatui::symbols::Marker;
use ratatui::widgets::canvas::{Canvas, Line as CanvasLine};
use ratatui::widgets::{Block, Paragraph, Widget as _};

use super::format;
use super::plot::{self, LegendEntry, Plot};
use crate::app::{App, TIMELINE_WINDOWS};
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::{LaneSnapshot, Timeline, Window, ratio};

/// Tick steps of the time axis, in seconds.
const TIME_STEPS: [u64; 17] = [
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21_600, 43_200, 86_400,
];

/// One line of the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// `None` = the ∞ bound, else the slot's index.
    pub slot: Option<usize>,
    /// The shared pool's line drawn beside the instances' totals (its own colour and label).
    pub pool_beside: bool,
    /// `(seconds since the first request, hit rate %)` per chart window with a figure.
    pub points: Vec<(f64, f64)>,
}

/// Where everything of the chart goes, for drawing and for tests.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineLayout {
    pub plot: Plot,
    /// The chart's window width (a whole number of collected windows).
    pub window_ns: i64,
    /// Whether it was chosen from the span (`w` not pressed, or cycled back).
    pub auto: bool,
    pub series: Vec<Series>,
    pub y_ticks: Vec<(f64, String)>,
    pub x_ticks: Vec<(f64, String)>,
}

/// The chart windows' width for `choice` over `timeline` with `columns` plot columns.
#[must_use]
pub fn chart_window_ns(timeline: &Timeline, choice: Option<Duration>, columns: u16) -> i64 {
    let collected = timeline.window_ns.max(1);
    let factor = if let Some(wanted) = choice {
        let wanted = i64::try_from(wanted.as_nanos()).unwrap_or(i64::MAX);
        (wanted + collected / 2) / collected
    } else {
        let windows = span_ns(timeline).div_euclid(collected) + 1;
        let target = i64::from(columns / 2).max(4);
        (windows + target - 1) / target
    };
    collected.saturating_mul(factor.max(1))
}

/// The trace time from the first request to the end of the last window.
fn span_ns(timeline: &Timeline) -> i64 {
    let Some(last) = timeline.windows.last() else {
        return 0;
    };
    let origin = origin_ns(timeline);
    (last.start_ns + timeline.window_ns - origin).max(0)
}

fn origin_ns(timeline: &Timeline) -> i64 {
    timeline
        .origin_ns
        .or_else(|| timeline.windows.first().map(|w| w.start_ns))
        .unwrap_or(0)
}

/// `(seconds since the first request, hit rate %)` of `lane` (every lane when `None`) at
/// `slot` (`None` = ∞), the collected windows summed into chart windows of `window_ns`
/// (aligned on the first collected window). A chart window without the slot for all of its
/// windows has no point.
#[must_use]
pub fn series(
    timeline: &Timeline,
    window_ns: i64,
    lane: Option<usize>,
    slot: Option<usize>,
) -> Vec<(f64, f64)> {
    series_of(timeline, window_ns, |window| window.hit_tokens(lane, slot))
}

/// [`series`] of the shared pool lane (`watch --pool`) at `slot` (`None` = ∞), each window's
/// figure at N × the slot's blocks, N the instances in that window.
#[must_use]
pub fn pool_series(timeline: &Timeline, window_ns: i64, slot: Option<usize>) -> Vec<(f64, f64)> {
    series_of(timeline, window_ns, |window| window.pool_hit_tokens(slot))
}

/// The points of the `(hit tokens, input tokens)` that `figure` reads from each window.
fn series_of(
    timeline: &Timeline,
    window_ns: i64,
    figure: impl Fn(&Window) -> Option<(u64, u64)>,
) -> Vec<(f64, f64)> {
    let origin = origin_ns(timeline);
    let Some(first) = timeline.windows.first() else {
        return Vec::new();
    };
    let base = first.start_ns;
    let window_ns = window_ns.max(1);
    // (chart window index, hits, input, complete)
    let mut sums: Vec<(i64, u64, u64, bool)> = Vec::new();
    for window in &timeline.windows {
        let index = (window.start_ns - base).div_euclid(window_ns);
        let figure = figure(window);
        match sums.last_mut() {
            Some(last) if last.0 == index => {
                if let Some((hits, input)) = figure {
                    last.1 += hits;
                    last.2 += input;
                } else {
                    last.3 = false;
                }
            }
            _ => {
                let (hits, input) = figure.unwrap_or((0, 0));
                sums.push((index, hits, input, figure.is_some()));
            }
        }
    }
    sums.into_iter()
        .filter(|&(_, _, _, complete)| complete)
        .filter_map(|(index, hits, input, _)| {
            let rate = ratio(hits, input)?;
            let start = base + index * window_ns;
            let seconds = ((start - origin).max(0)) as f64 / 1e9;
            Some((seconds, rate * 100.0))
        })
        .collect()
}

/// The chart's layout in `area` (the panel, borders included); `None` without windows or
/// room.
#[must_use]
pub fn layout(area: Rect, snap: &LiveSnapshot, view: &App) -> Option<TimelineLayout> {
    let timeline = &snap.timeline;
    timeline.windows.first()?;
    let inner = Block::bordered().inner(area);
    // A first plot for its width (the y labels' width is known once the data is).
    let provisional = Plot::inside(inner, 4, [0.0, 1.0], [0.0, 1.0])?;
    let choice = TIMELINE_WINDOWS
        .get(view.timeline_window)
        .copied()
        .flatten();
    let window_ns = chart_window_ns(timeline, choice, provisional.area.width);
    let lane = view.selected_lane();
    let pool = selected_pool(snap, view).is_some();
    let points = |slot: Option<usize>| {
        if pool {
            pool_series(timeline, window_ns, slot)
        } else {
            series(timeline, window_ns, lane, slot)
        }
    };
    let mut series_list = vec![Series {
        slot: None,
        pool_beside: false,
        points: points(None),
    }];
    let order: Vec<usize> = (0..snap.slots.len())
        .filter(|&index| index != view.selected_slot)
        .collect();
    let selected_slot = (view.selected_slot < snap.slots.len()).then_some(view.selected_slot);
    for index in order {
        series_list.push(Series {
            slot: Some(index),
            pool_beside: false,
            points: points(Some(index)),
        });
    }
    // On the totals row, the pool at the selected slot beside the instances' total.
    if pool_beside(snap, view) {
        series_list.push(Series {
            slot: selected_slot,
            pool_beside: true,
            points: pool_series(timeline, window_ns, selected_slot),
        });
    }
    if let Some(index) = selected_slot {
        series_list.push(Series {
            slot: Some(index),
            pool_beside: false,
            points: points(Some(index)), // drawn last, on top
        });
    }
    let data_max = series_list
        .iter()
        .flat_map(|s| s.points.iter().map(|&(_, y)| y))
        .fold(0.0, f64::max);
    let (y_top, y_ticks) = plot::percent_axis(data_max);
    let span_s = span_ns(timeline) as f64 / 1e9;
    let probe = Plot::inside(inner, plot::label_width(&y_ticks), [0.0, 1.0], [0.0, y_top])?;
    let step = time_step(span_s, probe.area.width);
    let x_max = ((span_s / step as f64).ceil().max(1.0)) * step as f64;
    let plot = Plot {
        x_bounds: [0.0, x_max],
        ..probe
    };
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a whole number of ticks"
    )]
    let tick_count = (x_max / step as f64).round() as u64 + 1;
    let x_ticks = (0..tick_count)
        .map(|i| i * step)
        .map(|t| {
            let label = if t == 0 {
                "0".to_owned()
            } else {
                format::duration(Duration::from_secs(t))
            };
            (t as f64, label)
        })
        .collect();
    Some(TimelineLayout {
        plot,
        window_ns,
        auto: choice.is_none(),
        series: series_list,
        y_ticks,
        x_ticks,
    })
}

/// The smallest time step whose tick labels fit `columns` side by side.
fn time_step(span_s: f64, columns: u16) -> u64 {
    for step in TIME_STEPS {
        let ticks = (span_s / step as f64).ceil().max(1.0) + 1.0;
        // "10m00s" and a gap: 8 columns a tick.
        if ticks * 8.0 <= f64::from(columns) {
            return step;
        }
    }
    let mut step = 86_400;
    while (span_s / step as f64) * 8.0 > f64::from(columns) {
        step *= 2;
    }
    step
}

/// The shared pool lane when its row is selected.
fn selected_pool<'a>(snap: &'a LiveSnapshot, view: &App) -> Option<&'a LaneSnapshot> {
    snap.pool.as_ref().filter(|_| view.selected_pool())
}

/// Whether the pool's line is drawn beside the totals: the totals row is selected (several
/// instances) and there is a pool.
fn pool_beside(snap: &LiveSnapshot, view: &App) -> bool {
    snap.pool.is_some()
        && !view.selected_pool()
        && view.selected_lane().is_none()
        && snap.lanes.len() > 1
}

/// The pool's line on the totals row, in the legend and at its end: `pool NAME` (just
/// `pool` for the default name).
fn pool_label(snap: &LiveSnapshot) -> String {
    match &snap.pool {
        Some(pool) if pool.instance_id != litehit_core::engine::DEFAULT_POOL_NAME => {
            format!("pool {}", pool.instance_id)
        }
        _ => litehit_core::engine::DEFAULT_POOL_NAME.to_owned(),
    }
}

fn title(snap: &LiveSnapshot, view: &App, layout: Option<&TimelineLayout>, width: u16) -> String {
    let whose = match (
        selected_pool(snap, view),
        view.selected_lane().and_then(|index| snap.lanes.get(index)),
    ) {
        (Some(pool), _) => format!(" · {} (shared, N × slot)", pool.instance_id),
        (None, Some(lane)) => format!(" · {}", lane.instance_id),
        (None, None) if snap.lanes.len() > 1 && pool_beside(snap, view) => {
            format!(" · every instance vs {}", pool_label(snap))
        }
        (None, None) if snap.lanes.len() > 1 => " · every instance".to_owned(),
        (None, None) => String::new(),
    };
    let window = layout.and_then(|layout| {
        let ns = u64::try_from(layout.window_ns).ok().filter(|&ns| ns > 0)?;
        Some((format::duration(Duration::from_nanos(ns)), layout.auto))
    });
    let candidates = match window {
        Some((window, auto)) => {
            let auto = if auto { " (auto)" } else { "" };
            vec![
                format!(" hit rate per {window}{auto} of trace time{whose} "),
                format!(" hit rate per {window}{auto}{whose} "),
                format!(" per {window}{whose} "),
            ]
        }
        None => vec![
            format!(" hit rate over trace time{whose} "),
            format!(" hit rate{whose} "),
        ],
    };
    plot::title(&candidates, width)
}

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    let layout = layout(area, snap, view);
    let block = Block::bordered().title(title(snap, view, layout.as_ref(), area.width));
    let Some(layout) = layout else {
        let text = if snap.timeline.windows.is_empty() {
            "no windows yet"
        } else {
            ""
        };
        frame.render_widget(Paragraph::new(text).dim().block(block), area);
        return;
    };
    let buf = frame.buffer_mut();
    block.render(area, buf);
    draw(buf, area, &layout, snap, view);
}

/// Where the line of a series with one window starting at `x` (seconds) ends: at the
/// window's end, within the axis.
fn single_window_end(layout: &TimelineLayout, x: f64) -> f64 {
    (x + layout.window_ns as f64 / 1e9).min(layout.plot.x_bounds[1])
}

/// The colour of the pool's line beside the totals (the slots have theirs, ∞ is gray).
const POOL_BESIDE_COLOR: Color = Color::White;

fn series_style(slot: Option<usize>, pool_beside: bool) -> Style {
    match slot {
        _ if pool_beside => Style::new().fg(POOL_BESIDE_COLOR),
        Some(index) => Style::new().fg(plot::slot_color(index)),
        None => Style::new().fg(Color::Gray),
    }
}

fn series_label(snap: &LiveSnapshot, slot: Option<usize>, pool_beside: bool) -> String {
    match slot {
        _ if pool_beside => pool_label(snap),
        Some(index) => format::slot(&snap.slots[index]),
        None => format::infinite_label(snap),
    }
}

fn draw(buf: &mut Buffer, area: Rect, layout: &TimelineLayout, snap: &LiveSnapshot, view: &App) {
    let plot = &layout.plot;
    plot::draw_axes(
        buf,
        plot,
        &layout.y_ticks,
        &layout.x_ticks,
        Style::new().dark_gray(),
    );
    for series in &layout.series {
        let color = series_style(series.slot, series.pool_beside)
            .fg
            .unwrap_or(Color::Reset);
        let points = &series.points;
        Canvas::default()
            .marker(Marker::Braille)
            .x_bounds(plot.x_bounds)
            .y_bounds(plot.y_bounds)
            .paint(|ctx| {
                if let [(x, y)] = points[..] {
                    // One window (a short trace): its rate over its whole width, not a dot.
                    let end = single_window_end(layout, x);
                    ctx.draw(&CanvasLine::new(x, y, end, y, color));
                }
                for pair in points.windows(2) {
                    ctx.draw(&CanvasLine::new(
                        pair[0].0, pair[0].1, pair[1].0, pair[1].1, color,
                    ));
                }
            })
            .render(plot.area, buf);
    }
    // Each line's label at its last point, where free (tells lines apart without colour).
    let mut taken: Vec<(u16, u16, u16)> = Vec::new();
    for series in layout.series.iter().rev() {
        let Some(&(x, y)) = series.points.last() else {
            continue;
        };
        let x = if series.points.len() == 1 {
            single_window_end(layout, x)
        } else {
            x
        };
        let label = series_label(snap, series.slot, series.pool_beside);
        let width = u16::try_from(label.chars().count()).unwrap_or(u16::MAX);
        let column = plot.column_clamped(x);
        let from = (column + 1).min(plot.area.right().saturating_sub(width));
        let Some(row) = plot.row(y) else {
            continue;
        };
        let row = row.saturating_sub(1).max(plot.area.y);
        if taken
            .iter()
            .any(|&(r, a, b)| r == row && from <= b && a <= from + width)
        {
            continue;
        }
        let mut style = series_style(series.slot, series.pool_beside).bold();
        if series.slot == Some(view.selected_slot) && !series.pool_beside {
            style = style.reversed();
        }
        plot::put(buf, from, row, &label, style, Some(plot.area));
        taken.push((row, from, from + width));
    }
    // ∞ first, then the slots in the table's order, then the pool beside the totals.
    let entries: Vec<LegendEntry> = std::iter::once(None)
        .chain((0..snap.slots.len()).map(Some))
        .map(|slot| (slot, false))
        .chain(
            layout
                .series
                .iter()
                .filter(|series| series.pool_beside)
                .map(|series| (series.slot, true)),
        )
        .map(|(slot, pool_beside)| LegendEntry {
            symbol: "⠒".to_owned(),
            label: series_label(snap, slot, pool_beside),
            style: series_style(slot, pool_beside),
            emphasis: !pool_beside && slot.is_some() && slot == Some(view.selected_slot),
        })
        .collect();
    if !plot::draw_legend(buf, plot, &entries, &[]) {
        let mut x = area.x + 2;
        let row = area.bottom() - 1;
        for entry in &entries {
            let text = format!("⠒{}", entry.label);
            if usize::from(x) + text.chars().count() + 2 > usize::from(area.right()) {
                break;
            }
            x = plot::put(buf, x, row, &text, entry.style, Some(area)) + 1;
        }
    }
}
