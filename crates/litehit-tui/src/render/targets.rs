//! The capacity-for-target line: the smallest capacity whose hits reach 90, 95 and 99 % of
//! the ∞ bound's, for the selected instance (or the shared pool, in its total capacity) and
//! for every instance together: the **Σ of instance knees** (each instance's own knee,
//! summed), which is not `litehit mrc`'s total row (its equal-share knee: the smallest equal
//! per-instance size whose total reaches the target):
//!
//! ```text
//!  to reach 90/95/99 % of ∞ · instance-0: 12.3 GiB · 20.1 GiB · 51 GiB │ Σ of instance knees: 36.9 GiB · …
//! ```
//!
//! The capacities are the ingest thread's (`LaneSnapshot::capacity_for_fraction`, exact from
//! each lane's accumulator, and their Σ `Totals::capacity_for_fraction`); this file only
//! multiplies a lane's blocks by its block bytes and formats, rounding up (a capacity shown
//! must reach its target). Under a memory horizon they are lower bounds (`≥12.4 GiB`): the ∞
//! bound they are a fraction of is one.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Style, Stylize as _};
use ratatui::text::{Line, Span};

use super::format;
use crate::app::App;
use litehit_core::display;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::LaneSnapshot;

/// The targets shown, in percent of the ∞ bound's hits (a subset of
/// `litehit_live::snapshot::CAPACITY_FRACTION_PERCENTS`).
pub const SHOWN_PERCENTS: [u32; 3] = [90, 95, 99];

/// The name of the Σ over instances of each one's own knee (not `mrc`'s equal-share knee).
pub const TOTAL_LABEL: &str = "Σ of instance knees";

/// Significant digits of a capacity (rounded up).
const DIGITS: i32 = 3;

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    let width = usize::from(area.width);
    let parts = parts(snap, view);
    let label = " to reach 90/95/99 % of ∞";
    let mut spans = vec![Span::styled(label, Style::new().bold())];
    spans.extend(
        format::whole_parts(
            parts.iter().map(|(who, values)| format!("{who}: {values}")),
            (" · ", " │ "),
            format::display_width(label),
            width,
        )
        .into_iter()
        .map(Span::raw),
    );
    if spans.len() == 1 {
        // Narrow: the first part's values under a short label (whose they are is the
        // table's selection), or nothing rather than a cut number.
        let short = " 90/95/99 % of ∞:";
        spans = vec![Span::styled(short, Style::new().bold())];
        if let Some((_, values)) = parts.first()
            && short.chars().count() + 1 + format::display_width(values) <= width
        {
            spans.push(Span::raw(format!(" {values}")));
        }
    }
    frame.render_widget(Line::from(spans).dim(), area);
}

/// `("instance-0", "12.3 GiB · 20.1 GiB · 51 GiB")` for the selected instance (its id cut to
/// fit 24 columns) or the shared pool (`pool (shared)`, its total capacity), then
/// `(TOTAL_LABEL, …)` when there are several; only the totals on the totals row.
pub fn parts(snap: &LiveSnapshot, view: &App) -> Vec<(String, String)> {
    let mut parts = Vec::new();
    let selected = view
        .selected_lane()
        .filter(|&index| index < snap.lanes.len())
        .map(|index| (&snap.lanes[index], ""))
        .or_else(|| {
            let pool = snap.pool.as_ref().filter(|_| view.selected_pool())?;
            Some((pool, " (shared)"))
        });
    if let Some((lane, suffix)) = selected {
        let id = format::fit_middle_columns(&lane.instance_id, 24 - suffix.chars().count());
        let values = lane_bytes(lane).map_or_else(
            || no_values(lane.infinite_hit_blocks),
            |bytes| {
                bytes
                    .iter()
                    .map(|&bytes| capacity_text(bytes, lane.knees_are_lower_bounds()))
                    .collect::<Vec<_>>()
                    .join(" · ")
            },
        );
        parts.push((format!("{id}{suffix}"), values));
    }
    if snap.lanes.len() > 1 || selected.is_none() {
        parts.push((TOTAL_LABEL.to_owned(), totals_text(snap)));
    }
    parts
}

/// What stands for the values of a lane without any: before its first hit every capacity
/// reaches 0 % of nothing; a snapshot without knees (none published yet) shows `-`.
fn no_values(infinite_hit_blocks: u64) -> String {
    if infinite_hit_blocks == 0 {
        "no hits yet".to_owned()
    } else {
        "-".to_owned()
    }
}

/// The bytes reaching each of [`SHOWN_PERCENTS`] for `lane` (on its own capacity axis: the
/// pool's total); `None` before its first hit or without knees in the snapshot.
pub fn lane_bytes(lane: &LaneSnapshot) -> Option<Vec<u64>> {
    if lane.infinite_hit_blocks == 0 {
        return None;
    }
    SHOWN_PERCENTS
        .iter()
        .map(|&percent| {
            lane.capacity_for_fraction
                .iter()
                .find(|fraction| fraction.percent == percent)
                .map(|fraction| fraction.capacity_blocks.saturating_mul(lane.block_bytes))
        })
        .collect()
}

/// The Σ of instance knees for each target (the snapshot's, each instance its own cache, so
/// every one reaches the target: the fleet's tokens then reach it too).
fn totals_text(snap: &LiveSnapshot) -> String {
    let totals = &snap.totals;
    let sums: Option<Vec<_>> = SHOWN_PERCENTS
        .iter()
        .map(|&percent| {
            totals
                .capacity_for_fraction
                .iter()
                .find(|fraction| fraction.percent == percent)
        })
        .collect();
    match sums {
        Some(sums) if totals.infinite_hit_tokens > 0 => sums
            .iter()
            .map(|fraction| capacity_text(fraction.capacity_bytes, fraction.lower_bound))
            .collect::<Vec<_>>()
            .join(" · "),
        _ => no_values(totals.infinite_hit_tokens),
    }
}

/// A capacity in binary units, 3 significant digits rounded up (`12.4 GiB`, `512 B`), after
/// [`display::LOWER_BOUND_MARK`] when it is only a lower bound (`≥12.4 GiB`).
pub fn capacity_text(bytes: u64, lower_bound: bool) -> String {
    let mark = if lower_bound {
        display::LOWER_BOUND_MARK
    } else {
        ""
    };
    match display::scale_bytes(bytes as f64) {
        (_, "B") => format!("{mark}{bytes} B"),
        (scaled, unit) => format!("{mark}{} {unit}", display::significant_up(scaled, DIGITS)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacities_round_up_in_binary_units() {
        assert_eq!(capacity_text(0, false), "0 B");
        assert_eq!(capacity_text(512, false), "512 B");
        assert_eq!(capacity_text(10 << 30, false), "10 GiB");
        // 12.3001 GiB (13,207,131,810 B) must not read as 12.3 GiB: that would fall short.
        assert_eq!(capacity_text(13_207_131_810, false), "12.4 GiB");
        assert_eq!(capacity_text(13_207_131_810, true), "≥12.4 GiB");
        assert_eq!(capacity_text(512, true), "≥512 B");
    }
}
