//! Layout: splits the screen and hands each panel its area. Panels only format.
//!
//! ```text
//! litehit watch trace.jsonl · following · notify · backlog 0 B            <- title (1 line)
//! geometry mooncake · 512 tok/block · 64.00 MiB/block · 16 blocks/GiB     <- geometry.rs
//! to reach 90/95/99 % of ∞ · i1: 12.4 GiB · 20.2 GiB · 51 GiB │ Σ of instance knees: …  <- targets.rs
//! Q 4 GiB · isolated 31.20% · pooled 33.05% · … · quotas a 2.5 GiB, …  (--quota-total) <- quota.rs
//! ┌ instances ─────────────────────────────────────────────────────────────┐
//! │ instance   requests  input tok  10 GiB  40 GiB     ∞   unique  KV bytes │ <- instances.rs
//! │ total …                                                               │
//! └────────────────────────────────────────────────────────────────────────┘
//! ┌ cache tiers (exclusive): share of input tokens served ─────────────────┐
//! │ tier  size  <selected> served  total served   (watch --tiers only)     │ <- tiers.rs
//! └────────────────────────────────────────────────────────────────────────┘
//! ┌ hit rate vs capacity ─────────────┐┌ hit rate per 10 s of trace time ──┐
//! │ curve.rs (slots marked)            ││ timeline.rs (one line per slot)    │
//! └────────────────────────────────────┘└────────────────────────────────────┘
//! ┌ gauges ────────────────────────────────────────────────────────────────┐
//! │ unique / KV · memory · ingest rate · lag · bad lines · TTL             │ <- gauges.rs
//! └────────────────────────────────────────────────────────────────────────┘
//!  a notice (facts written, file rotated, …), while there is one              <- status.rs
//!  ? help · a add slot · … · q quit (always)                                  <- status.rs
//! ```
//! Small screens drop the charts, then the tiers panel, then the gauges, then table columns
//! (compact mode keeps the title, the table and the status line); the targets line stays on
//! screens of 30 rows and more, and on shorter ones only while the whole table fits beside
//! it, and the `Q` line (with `--quota-total`) under the same rule after it; nothing panics
//! at any size. Overlays
//! (`help.rs`, `slot_editor.rs`, `confirm_quit.rs`) are drawn last, centered.

pub mod confirm_quit;
pub mod curve;
pub mod format;
pub mod gauges;
pub mod geometry;
pub mod help;
pub mod instances;
pub mod notices;
pub mod plot;
pub mod quota;
pub mod slot_editor;
pub mod status;
pub mod targets;
pub mod tiers;
pub mod timeline;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::app::{App, Mode};
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::FollowState;
use litehit_live::tail::WakeSource;

/// Height of the gauges panel, borders included.
const GAUGES_HEIGHT: u16 = gauges::LINES + 2;
/// Screens shorter than this leave out the geometry line.
const MIN_GEOMETRY_SCREEN_HEIGHT: u16 = 16;
/// Screens at least this tall always show the capacity-for-target line; shorter ones only
/// when the whole instance table fits beside it (table > targets > gauges > charts).
const TARGETS_ALWAYS_SCREEN_HEIGHT: u16 = 30;
/// Below this (borders and axis included: 6 plot rows), charts are not worth drawing; their
/// rows go to the table, which matters more (hints > totals > table > gauges > charts).
const MIN_CHART_HEIGHT: u16 = 10;
/// Charts down to this are drawn when the whole table is shown anyway (no row to give).
const SMALL_CHART_HEIGHT: u16 = 7;

/// Draws the whole screen for one frame.
pub fn draw(frame: &mut Frame, snap: &LiveSnapshot, view: &App) {
    let area = frame.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    // The geometry line goes first on a short screen.
    let geometry_height = u16::from(area.height >= MIN_GEOMETRY_SCREEN_HEIGHT);
    // The key hints always; a notice on a line of its own above them.
    let status_height = 1 + u16::from(status::has_notice(snap) && area.height >= 6);
    let table_rows = u16::try_from(
        snap.lanes.len() + usize::from(snap.lanes.len() > 1) + usize::from(snap.pool.is_some()),
    )
    .unwrap_or(u16::MAX);
    let table_height = table_rows.max(1).saturating_add(3);
    // The capacity-for-target line, unless it would cost the table a row.
    let body_without_targets = area
        .height
        .saturating_sub(1 + geometry_height + status_height);
    let targets_height = u16::from(
        geometry_height > 0
            && (area.height >= TARGETS_ALWAYS_SCREEN_HEIGHT || body_without_targets > table_height),
    );
    // The `Q` line (`--quota-total`) under the same rule, after the targets line.
    let quota_height = u16::from(
        targets_height > 0
            && snap.quota.is_some()
            && (area.height >= TARGETS_ALWAYS_SCREEN_HEIGHT
                || body_without_targets > table_height + 1),
    );
    let [
        title,
        geometry_area,
        targets_area,
        quota_area,
        body,
        status_area,
    ] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(geometry_height),
        Constraint::Length(targets_height),
        Constraint::Length(quota_height),
        Constraint::Min(0),
        Constraint::Length(status_height),
    ])
    .areas(area);
    render_title(frame, title, snap, view);
    if geometry_height > 0 {
        geometry::render(frame, geometry_area, snap, view);
    }
    if targets_height > 0 {
        targets::render(frame, targets_area, snap, view);
    }
    if quota_height > 0 {
        quota::render(frame, quota_area, snap);
    }
    status::render(frame, status_area, snap, view);

    let wide_enough = body.width >= 60;
    let room_for_gauges = wide_enough && body.height >= table_height.min(6) + GAUGES_HEIGHT;
    if room_for_gauges {
        let after_gauges = body.height - GAUGES_HEIGHT;
        // The tiers panel (with --tiers) comes after the table and the gauges, before the
        // charts: shown only if the table keeps what it would get beside charts.
        let tiers_wanted = snap
            .tiers
            .as_ref()
            .map_or(0, |plan| tiers::lines(plan.names.len()).saturating_add(2));
        let min_table = table_height.min(after_gauges / 2).max(4);
        let tiers_height = if tiers_wanted > 0 && after_gauges >= min_table + tiers_wanted {
            tiers_wanted
        } else {
            0
        };
        let available = after_gauges - tiers_height;
        let shared = table_height.min(available / 2).max(4);
        let charts_height = if available.saturating_sub(shared) >= MIN_CHART_HEIGHT {
            available - shared
        } else if table_height + SMALL_CHART_HEIGHT <= available {
            // The whole table fits beside small charts: draw both rather than blank rows.
            available - table_height
        } else {
            0 // the table's rows matter more than charts too small to read
        };
        let table_height = available - charts_height;
        let [table, tiers_area, charts, gauges_area] = Layout::vertical([
            Constraint::Length(table_height),
            Constraint::Length(tiers_height),
            Constraint::Length(charts_height),
            Constraint::Length(GAUGES_HEIGHT),
        ])
        .areas(body);
        instances::render(frame, table, snap, view);
        if tiers_height > 0 {
            tiers::render(frame, tiers_area, snap, view);
        }
        if charts_height > 0 {
            let [left, right] =
                Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                    .areas(charts);
            curve::render(frame, left, snap, view);
            timeline::render(frame, right, snap, view);
        }
        gauges::render(frame, gauges_area, snap, view);
    } else {
        instances::render(frame, body, snap, view);
    }

    render_overlay(frame, area, snap, view);
}

/// The overlay of the mode, if it has one, centered over everything.
fn render_overlay(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    match &view.mode {
        // The filter being typed shows in the table's title.
        Mode::Normal | Mode::Filter => {}
        Mode::Help => help::render(frame, area, snap, view),
        Mode::SlotEditor(_) | Mode::BlockBytes(_) => slot_editor::render(frame, area, snap, view),
        Mode::Notices { .. } => notices::render(frame, area, snap, view),
        Mode::ConfirmQuit => confirm_quit::render(frame, area, snap, view),
    }
}

fn render_title(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    let source = &snap.source;
    let (state, state_style) = match source.state {
        FollowState::Waiting => ("waiting for the file", Style::new().yellow()),
        FollowState::CatchingUp => ("catching up", Style::new().cyan()),
        FollowState::Following => ("following", Style::new().green()),
        FollowState::Paused => ("PAUSED", Style::new().black().on_yellow()),
        FollowState::Finished => ("end of file", Style::new().green()),
        FollowState::Stopped => ("stopped", Style::new().yellow()),
        FollowState::Failed => ("read error", Style::new().red()),
    };
    let wake = match source.wake {
        WakeSource::Events => "notify",
        WakeSource::Polling => "polling",
    };
    // The demo says it is one, and what it generates, where `watch` names its trace.
    let name = if view.demo.is_some() {
        " litehit demo "
    } else {
        " litehit watch "
    };
    let mut spans = vec![
        Span::styled(name, Style::new().add_modifier(Modifier::BOLD).reversed()),
        Span::raw(" "),
        Span::styled(state, state_style),
        Span::raw(format!(" · {wake} · {} fps", format::short_float(view.fps))),
    ];
    if source.backlog_bytes > 0 {
        spans.push(Span::raw(format!(
            " · backlog {}",
            format::bytes(source.backlog_bytes)
        )));
    }
    if source.unterminated_bytes > 0 {
        spans.push(Span::raw(format!(
            " · last line unterminated ({})",
            format::bytes(source.unterminated_bytes)
        )));
    }
    if source.lost_bytes > 0 {
        spans.push(Span::styled(
            format!(" · lost {}", format::bytes(source.lost_bytes)),
            Style::new().red(),
        ));
    }
    if source.queued > 0 {
        spans.push(Span::raw(format!(" · +{} queued", source.queued)));
    }
    let used: usize = spans.iter().map(Span::width).sum();
    let room = usize::from(area.width).saturating_sub(used + 3);
    if room >= 8 {
        spans.push(Span::raw(" · "));
        let reading = source.reading.as_deref().unwrap_or(&source.path);
        let shown = view.demo.as_deref().unwrap_or(reading);
        spans.push(Span::raw(format::fit(shown, room)));
    }
    frame.render_widget(Line::from(spans), area);
}

/// A centered rectangle of at most `width` × `height` inside `area`.
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}
