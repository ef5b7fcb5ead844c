//! What both charts share: the plot area and its axis mapping (the cells a value lands in,
//! the same as the braille canvas's), axes with tick labels, text put at a cell, and legend
//! boxes that clear what is under them. Panels decide what to draw; this only places it.
//!
//! ```text
//!  5%│╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌ ∞        <- y ticks (auto-scaled), plot area to the right
//!    │       ⡠⠔⠊ ┊    ┌───────────┐
//! 2.5│    ⡠⠊◆    ┊    │⠤ legend   │   <- legend box in the emptiest corner
//!    │⠤⠊         ┊    └───────────┘
//!  0%└──────┬─────────┬──────────
//!        1 GiB     16 GiB             <- x ticks, as many as fit whole
//! ```

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::widgets::{Block, Clear, Widget as _};
use unicode_width::UnicodeWidthStr as _;

use litehit_core::display;

/// Colours of the capacity slots, by slot index, in both charts (the ∞ bound is the
/// default foreground). Without colour (`NO_COLOR`) slots are told apart by their labels.
pub const SLOT_COLORS: [Color; 6] = [
    Color::Yellow,
    Color::Magenta,
    Color::Green,
    Color::LightRed,
    Color::Blue,
    Color::LightCyan,
];

/// The colour of slot `index`.
#[must_use]
pub fn slot_color(index: usize) -> Color {
    SLOT_COLORS[index % SLOT_COLORS.len()]
}

/// The first of `candidates` (longest first) that fits a panel `width` wide in its top
/// border, else the last one cut to fit.
#[must_use]
pub fn title(candidates: &[String], width: u16) -> String {
    let room = usize::from(width.saturating_sub(2));
    candidates
        .iter()
        .find(|title| title.width() <= room)
        .cloned()
        .unwrap_or_else(|| {
            candidates
                .last()
                .map(|title| display::fit(title, room))
                .unwrap_or_default()
        })
}

/// The plot area of a chart and its data bounds (x as given: a log axis passes `log2`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plot {
    pub area: Rect,
    pub x_bounds: [f64; 2],
    pub y_bounds: [f64; 2],
}

impl Plot {
    /// The plot area inside `inner` (a block's inner area) for y tick labels `y_label_width`
    /// wide: one column for the y axis line, two rows for the x axis line and its labels.
    /// `None` when fewer than 2 rows or 8 columns would remain.
    #[must_use]
    pub fn inside(
        inner: Rect,
        y_label_width: u16,
        x_bounds: [f64; 2],
        y_bounds: [f64; 2],
    ) -> Option<Self> {
        let left = y_label_width.saturating_add(1);
        if inner.height < 4 || inner.width < left.saturating_add(8) {
            return None;
        }
        Some(Self {
            area: Rect {
                x: inner.x + left,
                y: inner.y,
                width: inner.width - left,
                height: inner.height - 2,
            },
            x_bounds,
            y_bounds,
        })
    }

    /// The column `x` is drawn in, as the braille canvas maps it (2 dots per cell, rounded);
    /// `None` outside the bounds.
    #[must_use]
    pub fn column(&self, x: f64) -> Option<u16> {
        let [left, right] = self.x_bounds;
        if !(left..=right).contains(&x) || right <= left {
            return None;
        }
        let dots = f64::from(self.area.width) * 2.0 - 1.0;
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a dot index inside the plot"
        )]
        let dot = ((x - left) * dots / (right - left)).round() as u16;
        Some(self.area.x + dot / 2)
    }

    /// `x` clamped into the bounds, then [`Self::column`].
    #[must_use]
    pub fn column_clamped(&self, x: f64) -> u16 {
        let [left, right] = self.x_bounds;
        self.column(x.clamp(left, right)).unwrap_or(self.area.x)
    }

    /// The row `y` is drawn in, as the braille canvas maps it (4 dots per cell, rounded);
    /// `None` outside the bounds.
    #[must_use]
    pub fn row(&self, y: f64) -> Option<u16> {
        let [bottom, top] = self.y_bounds;
        if !(bottom..=top).contains(&y) || top <= bottom {
            return None;
        }
        let dots = f64::from(self.area.height) * 4.0 - 1.0;
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a dot index inside the plot"
        )]
        let dot = ((top - y) * dots / (top - bottom)).round() as u16;
        Some(self.area.y + dot / 4)
    }

    /// The row of the x axis line (just below the plot).
    #[must_use]
    pub fn axis_row(&self) -> u16 {
        self.area.bottom()
    }
}

/// `(axis_max, ticks)` of a 0-based percentage axis auto-scaled to `data_max_percent`:
/// a round top a little above the data (at most 100 %), ticks as `(value, label)`.
#[must_use]
pub fn percent_axis(data_max_percent: f64) -> (f64, Vec<(f64, String)>) {
    let (top, step) = if data_max_percent > 0.0 {
        // The tightest round top over a few tick counts (40.3 → 45 rather than 60).
        let wanted = (data_max_percent * 1.08).min(100.0);
        let (top, step) = [3, 4, 5, 6]
            .into_iter()
            .map(|ticks| display::nice_axis(wanted, ticks))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)))
            .unwrap_or((100.0, 25.0));
        (top.min(100.0), step)
    } else {
        (1.0, 0.5)
    };
    let mut ticks = Vec::new();
    let mut value = 0.0;
    while value <= top + step * 1e-9 {
        ticks.push((value, format!("{}%", trim_percent(value))));
        value += step;
    }
    (top, ticks)
}

fn trim_percent(value: f64) -> String {
    if value == 0.0 {
        return "0".to_owned();
    }
    display::significant(value, 3)
}

/// The widest of `ticks`' labels.
#[must_use]
pub fn label_width(ticks: &[(f64, String)]) -> u16 {
    ticks
        .iter()
        .map(|(_, label)| u16::try_from(label.width()).unwrap_or(u16::MAX))
        .max()
        .unwrap_or(0)
}

/// Draws the axis lines and the tick labels that fit: y labels right-aligned left of the
/// axis (the bottom and top first, then every other as rows allow), x labels centred under
/// their tick (greedily left to right, each whole and one column apart from the previous).
pub fn draw_axes(
    buf: &mut Buffer,
    plot: &Plot,
    y_ticks: &[(f64, String)],
    x_ticks: &[(f64, String)],
    style: Style,
) {
    let area = plot.area;
    let axis_x = area.x - 1;
    let axis_row = plot.axis_row();
    for y in area.y..area.bottom() {
        put(buf, axis_x, y, "│", style, None);
    }
    put(buf, axis_x, axis_row, "└", style, None);
    for x in area.x..area.right() {
        put(buf, x, axis_row, "─", style, None);
    }
    // y labels: the bottom and the top first, then the others where they touch no label
    // shown (a row apart at least).
    let mut order: Vec<&(f64, String)> = y_ticks.iter().collect();
    if order.len() > 2 {
        let top = order.remove(order.len() - 1);
        order.insert(1, top);
    }
    let mut shown: Vec<u16> = Vec::new();
    for (value, label) in order {
        let Some(row) = plot.row(*value) else {
            continue;
        };
        // The bottom tick's label goes on the axis row's left, beside `└`.
        let row = if *value <= plot.y_bounds[0] {
            axis_row
        } else {
            row
        };
        if shown.iter().any(|&other| other.abs_diff(row) < 2) {
            continue;
        }
        let width = u16::try_from(label.width()).unwrap_or(u16::MAX);
        let x = axis_x.saturating_sub(width);
        put(buf, x, row, label, style, None);
        shown.push(row);
    }
    // x labels.
    let label_row = axis_row + 1;
    let mut free_from = area.x.saturating_sub(1);
    for (value, label) in x_ticks {
        let Some(column) = plot.column(*value) else {
            continue;
        };
        let width = u16::try_from(label.width()).unwrap_or(u16::MAX);
        let start = column
            .saturating_sub(width / 2)
            .max(area.x.saturating_sub(1))
            .min(area.right().saturating_sub(width));
        if start < free_from || start + width > area.right() {
            continue;
        }
        put(buf, column, axis_row, "┴", style, None);
        put(buf, start, label_row, label, style, None);
        free_from = start + width + 1;
    }
}

/// Writes `text` at `(x, y)`, cut at `limit`'s right edge (or the buffer's); returns the
/// column after it.
pub fn put(buf: &mut Buffer, x: u16, y: u16, text: &str, style: Style, limit: Option<Rect>) -> u16 {
    let bounds = limit.unwrap_or(buf.area);
    if y < bounds.y || y >= bounds.bottom() || x >= bounds.right() || x < bounds.x {
        return x;
    }
    let room = usize::from(bounds.right() - x);
    let (end, _) = buf.set_stringn(x, y, text, room, style);
    end
}

/// Whether every cell of `text` at `(x, y)` inside `area` is blank (nothing drawn there yet).
#[must_use]
pub fn is_blank(buf: &Buffer, x: u16, y: u16, width: u16, area: Rect) -> bool {
    if y < area.y || y >= area.bottom() || x < area.x || x.saturating_add(width) > area.right() {
        return false;
    }
    (x..x + width).all(|column| buf[(column, y)].symbol() == " ")
}

/// One legend line: a sample of the line (`symbol`, in the series' style) and its label.
#[derive(Debug, Clone, PartialEq)]
pub struct LegendEntry {
    pub symbol: String,
    pub label: String,
    pub style: Style,
    /// Drawn bold (the selected slot).
    pub emphasis: bool,
}

/// Draws a bordered legend box in the corner of the plot where it hides the least of what is
/// drawn there and none of the `keep` cells (the knees), after clearing its area (nothing
/// shows through). Returns `false`, drawing nothing, when it would take more than about half
/// the plot or every corner would hide a kept cell.
pub fn draw_legend(
    buf: &mut Buffer,
    plot: &Plot,
    entries: &[LegendEntry],
    keep: &[(u16, u16)],
) -> bool {
    if entries.is_empty() {
        return true;
    }
    let area = plot.area;
    let content_width = entries
        .iter()
        .map(|entry| entry.symbol.width() + 1 + entry.label.width())
        .max()
        .unwrap_or(0);
    let width = u16::try_from(content_width + 2).unwrap_or(u16::MAX);
    let height = u16::try_from(entries.len() + 2).unwrap_or(u16::MAX);
    if width > area.width.saturating_mul(3) / 5 || height > area.height {
        return false;
    }
    let corners = [
        (area.right() - width, area.y),
        (area.right() - width, area.bottom() - height),
        (area.x + 1, area.y),
        (area.x + 1, area.bottom() - height),
    ];
    let drawn = |&(x, y): &(u16, u16)| -> usize {
        (y..y + height)
            .flat_map(|row| (x..x + width).map(move |column| (column, row)))
            .filter(|&cell| buf[cell].symbol() != " ")
            .count()
    };
    let hides_kept = |&(x, y): &(u16, u16)| {
        keep.iter()
            .any(|&(kx, ky)| (x..x + width).contains(&kx) && (y..y + height).contains(&ky))
    };
    let Some(&(x, y)) = corners
        .iter()
        .filter(|corner| !hides_kept(corner))
        .min_by_key(|corner| drawn(corner))
    else {
        return false;
    };
    let rect = Rect {
        x,
        y,
        width,
        height,
    };
    Clear.render(rect, buf);
    Block::bordered()
        .border_style(Style::new().dark_gray())
        .render(rect, buf);
    for (row, entry) in (y + 1..).zip(entries) {
        let after = put(buf, x + 1, row, &entry.symbol, entry.style, Some(rect));
        let label_style = if entry.emphasis {
            Style::new().bold()
        } else {
            Style::new()
        };
        let inside = rect.inner(ratatui::layout::Margin::new(1, 1));
        put(buf, after + 1, row, &entry.label, label_style, Some(inside));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plot() -> Plot {
        Plot {
            area: Rect::new(10, 2, 40, 10),
            x_bounds: [0.0, 10.0],
            y_bounds: [0.0, 5.0],
        }
    }

    #[test]
    fn mapping_matches_the_braille_canvas() {
        let plot = plot();
        assert_eq!(plot.column(0.0), Some(10));
        assert_eq!(plot.column(10.0), Some(49));
        assert_eq!(plot.column(10.5), None);
        assert_eq!(plot.row(5.0), Some(2));
        assert_eq!(plot.row(0.0), Some(11));
        assert_eq!(plot.column_clamped(-3.0), 10);
        // A point lands in the cell `column` / `row` name, as the braille canvas paints it.
        let mut context = ratatui::widgets::canvas::Context::new(
            40,
            10,
            plot.x_bounds,
            plot.y_bounds,
            ratatui::symbols::Marker::Braille,
        );
        let painter = ratatui::widgets::canvas::Painter::from(&mut context);
        for (x, y) in [(0.3, 4.9), (2.7, 0.2), (5.0, 2.5), (9.9, 1.1), (7.77, 3.33)] {
            let (dot_x, dot_y) = painter.get_point(x, y).expect("inside");
            let (dot_x, dot_y) = (u16::try_from(dot_x).unwrap(), u16::try_from(dot_y).unwrap());
            assert_eq!(plot.column(x), Some(10 + dot_x / 2), "x {x}");
            assert_eq!(plot.row(y), Some(2 + dot_y / 4), "y {y}");
        }
    }

    #[test]
    fn percent_axis_fits_the_data() {
        let (top, ticks) = percent_axis(3.99);
        assert!(top > 3.99 && top <= 5.0, "{top}");
        assert_eq!(ticks.first().map(|t| t.1.as_str()), Some("0%"));
        assert_eq!(ticks.last().map(|t| t.0), Some(top));
        let (top, _) = percent_axis(99.0);
        assert!((top - 100.0).abs() < 1e-9);
        let (top, _) = percent_axis(0.0);
        assert!((top - 1.0).abs() < 1e-9);
    }
}
