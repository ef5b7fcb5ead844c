//! The status line: a fatal problem, a read error, the facts snapshot, the last file event
//! (truncated, replaced, created), or else the key hints.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::format;
use crate::app::App;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::FactsWrite;
use litehit_live::tail::TailNotice;

/// How long a file event stays on the status line.
const NOTICE_SECONDS: u64 = 30;

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, _view: &App) {
    let (text, style) = message(snap);
    let width = usize::from(area.width);
    frame.render_widget(
        Line::from(Span::styled(format::fit(&text, width), style)),
        area,
    );
}

fn message(snap: &LiveSnapshot) -> (String, Style) {
    if let Some(fatal) = &snap.fatal {
        return (format!(" error: {fatal}"), Style::new().white().on_red());
    }
    if let Some(error) = &snap.source.read_error {
        return (
            format!(" cannot read {}: {error} (retrying)", snap.source.path),
            Style::new().red(),
        );
    }
    match &snap.facts_write {
        FactsWrite::Writing { path, rows } => {
            return (
                format!(" writing {} facts rows to {path}…", format::count(*rows)),
                Style::new().cyan(),
            );
        }
        FactsWrite::Failed { path, message } => {
            return (
                format!(" facts snapshot to {path} failed: {message}"),
                Style::new().red(),
            );
        }
        FactsWrite::Done { path, rows, bytes }
            if snap.facts_write_age.as_secs() < NOTICE_SECONDS =>
        {
            return (
                format!(
                    " wrote {} facts rows ({}) to {path}",
                    format::count(*rows),
                    format::bytes(*bytes)
                ),
                Style::new().green(),
            );
        }
        // A write done a while ago gives way to newer notices (rotation, truncation).
        FactsWrite::Done { .. } | FactsWrite::Idle => {}
    }
    if let Some((notice, age)) = snap
        .source
        .last_notice
        .filter(|(_, age)| age.as_secs() < NOTICE_SECONDS)
    {
        let text = match notice {
            TailNotice::Waiting => "waiting for the trace file to appear".to_owned(),
            TailNotice::Opened => format!("opened {}", snap.source.path),
            TailNotice::Truncated => {
                "file truncated: reading the new content, totals kept".to_owned()
            }
            TailNotice::Replaced => {
                "file replaced (rotated): reading the new file, totals kept".to_owned()
            }
            TailNotice::Deleted => {
                "file renamed or deleted: still following it until a new one appears, totals kept"
                    .to_owned()
            }
            TailNotice::RecoveredFromCopy => {
                "file truncated: reading its unread rest from the copy beside it, totals kept"
                    .to_owned()
            }
            TailNotice::NotRegular => {
                "not a regular file at the path (FIFO, device?): not followed, waiting".to_owned()
            }
            TailNotice::InputEnded => "input ended: everything it sent was read".to_owned(),
            TailNotice::Lost => format!(
                "a queued file was deleted before it was read: {} lost so far",
                format::bytes(snap.source.lost_bytes)
            ),
        };
        return (
            format!(" {text} ({} ago)", format::duration(age)),
            Style::new().yellow(),
        );
    }
    (
        " ? help · a add slot · d delete · ←→ slot · ↑↓ instance · s snapshot · p pause · q quit"
            .to_owned(),
        Style::new().dark_gray(),
    )
}
