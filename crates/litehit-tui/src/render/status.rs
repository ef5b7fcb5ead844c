//! The status lines: the key hints, always, and above them (on a line of its own) a fatal
//! problem, a read error, the facts snapshot or the last file event (truncated, replaced,
//! created) while one is current. What a notice says is [`crate::notice`]'s.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::format;
use crate::app::App;
use crate::notice::{Notice, engine_metrics_notice, facts_notice, file_notice, problem};
use litehit_live::LiveSnapshot;

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
    ("w window", 11),
    ("b bytes", 12),
    ("+- fps", 13),
    ("! log", 10),
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

fn message(snap: &LiveSnapshot) -> Option<(String, Style)> {
    problem(snap)
        .or_else(|| facts_notice(snap).filter(is_current))
        .or_else(|| file_notice(snap).filter(is_current))
        .or_else(|| engine_metrics_notice(snap))
        .map(|notice| (notice.line(), notice.style))
}

fn is_current(notice: &Notice) -> bool {
    notice.age.is_none_or(|age| age.as_secs() < NOTICE_SECONDS)
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
             s snapshot · p pause · w window · b bytes · +- fps · ! log · q quit"
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
