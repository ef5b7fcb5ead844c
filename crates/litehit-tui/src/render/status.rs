//! The status lines: the key hints, always, and above them (on a line of its own) a fatal
//! problem, a read error, the facts snapshot or the last file event (truncated, replaced,
//! created) while one is current.

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
    let width = usize::from(area.width);
    let [notice_area, hints_area] = if area.height >= 2 {
        [
            Rect { height: 1, ..area },
            Rect {
                y: area.y + 1,
                height: 1,
                ..area
            },
        ]
    } else {
        [Rect { height: 0, ..area }, area]
    };
    if let Some((text, style)) = message(snap).filter(|_| notice_area.height > 0) {
        frame.render_widget(
            Line::from(Span::styled(format::fit(&text, width), style)),
            notice_area,
        );
    }
    frame.render_widget(
        Line::from(Span::styled(hints(width), Style::new().dark_gray())),
        hints_area,
    );
}

/// Whether a notice is up (it takes a line of its own above the key hints).
pub fn has_notice(snap: &LiveSnapshot) -> bool {
    message(snap).is_some()
}

/// The key hints, in screen order, with the rank at which each is left out (lower stays).
const HINTS: &[(&str, u8)] = &[
    ("? help", 0),
    ("a add slot", 3),
    ("d delete", 6),
    ("←→ slot", 4),
    ("↑↓ instance", 5),
    ("o sort", 8),
    ("/ filter", 7),
    ("s snapshot", 2),
    ("p pause", 9),
    ("q quit", 1),
];

/// As many key hints as fit in `width` columns, whole: `? help` and `q quit` first.
pub fn hints(width: usize) -> String {
    let mut kept: Vec<usize> = Vec::new();
    let mut ranked: Vec<usize> = (0..HINTS.len()).collect();
    ranked.sort_by_key(|&index| HINTS[index].1);
    let line = |kept: &[usize]| -> String {
        let mut shown: Vec<usize> = kept.to_vec();
        shown.sort_unstable();
        let parts: Vec<&str> = shown.iter().map(|&index| HINTS[index].0).collect();
        format!(" {}", parts.join(" · "))
    };
    for index in ranked {
        kept.push(index);
        if line(&kept).chars().count() > width {
            kept.pop();
        }
    }
    line(&kept)
}

/// After a facts snapshot under a memory horizon: its curves stop at the horizon, so what
/// `query` / `mrc` read from it above the horizon (and at ∞) are lower bounds.
fn horizon_note(snap: &LiveSnapshot) -> String {
    match snap.memory_horizon {
        Some(horizon) => format!(
            "; memory horizon {}: hits above it (and at ∞) are lower bounds",
            format::memory_horizon(horizon)
        ),
        None => String::new(),
    }
}

fn message(snap: &LiveSnapshot) -> Option<(String, Style)> {
    if let Some(fatal) = &snap.fatal {
        return Some((format!(" error: {fatal}"), Style::new().white().on_red()));
    }
    if let Some(error) = &snap.source.read_error {
        return Some((
            format!(" cannot read {}: {error} (retrying)", snap.source.path),
            Style::new().red(),
        ));
    }
    match &snap.facts_write {
        FactsWrite::Writing { path, rows } => {
            return Some((
                format!(" writing {} facts rows to {path}…", format::count(*rows)),
                Style::new().cyan(),
            ));
        }
        FactsWrite::Failed { path, message } => {
            return Some((
                format!(" facts snapshot to {path} failed: {message}"),
                Style::new().red(),
            ));
        }
        FactsWrite::Done { path, rows, bytes }
            if snap.facts_write_age.as_secs() < NOTICE_SECONDS =>
        {
            return Some((
                format!(
                    " wrote {} facts rows ({}) to {path}{}",
                    format::count(*rows),
                    format::bytes(*bytes),
                    horizon_note(snap),
                ),
                Style::new().green(),
            ));
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
        return Some((
            format!(" {text} ({} ago)", format::duration(age)),
            Style::new().yellow(),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_keep_help_and_quit_whole_at_any_width() {
        let full = hints(200);
        assert_eq!(
            full,
            " ? help · a add slot · d delete · ←→ slot · ↑↓ instance · o sort · / filter · \
             s snapshot · p pause · q quit"
        );
        for width in [20, 40, 60, 80] {
            let line = hints(width);
            assert!(line.chars().count() <= width, "{line:?} at {width}");
            assert!(
                line.contains("? help") && line.contains("q quit"),
                "{line:?}"
            );
        }
        assert_eq!(hints(20), " ? help · q quit");
    }
}
