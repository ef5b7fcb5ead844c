//! The help overlay: every key, from [`crate::app::KEY_HELP`], and what the numbers on the
//! screen mean ([`NUMBER_HELP`]); where it does not fit (60×20) it scrolls (↑↓ PgUp PgDn),
//! and its bottom border says how.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::{centered, format};
#[cfg(test)]
use crate::app::HELP_LINES;
use crate::app::{App, KEY_HELP};
use litehit_live::LiveSnapshot;

/// What the words and signs on the screen mean, one short line each.
pub const NUMBER_HELP: &[(&str, &str)] = &[
    ("rates", "Σ hit tokens / Σ input tokens, since start"),
    ("∞", "unlimited cache: the ceiling of every slot"),
    ("total", "every instance summed (tokens, not rates)"),
    ("unique blk", "distinct blocks seen; KV = × bytes/block"),
    ("alive blk", "with a TTL: the blocks not yet expired"),
    ("∞ H=…", "under --memory-horizon H: ≥, a lower bound"),
    ("≥41.20%", "above H (∞, unique blk): a lower bound"),
    ("accumulator", "reuse distances kept: late slots are exact"),
    ("spilled", "facts rows on disk until `s` writes them"),
    ("notify/polling", "file growth seen by events / by polling"),
    ("fps", "screen refreshes per second (+ / -)"),
    ("geometry", "tokens & bytes per block: GiB → blocks"),
    ("assumed", "block bytes set with b (facts keep theirs)"),
];

/// Width of the key / term column.
const TERM_WIDTH: usize = 14;

/// The `b` key's current value: the block bytes assumed with `b`, else the one every lane
/// has (none when the lanes differ or there is none yet), so the help shows what `b` would
/// change, never an example that reads as a value.
fn current_block_bytes(snap: &LiveSnapshot) -> Option<u64> {
    snap.assumed_block_bytes.or_else(|| {
        let first = snap.lanes.first()?.block_bytes;
        snap.lanes
            .iter()
            .all(|lane| lane.block_bytes == first)
            .then_some(first)
            .filter(|&bytes| bytes > 0)
    })
}

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    let entry = |term: &str, what: String, style: Style| {
        Line::from(vec![
            Span::styled(format!("{term:>TERM_WIDTH$}  "), style),
            Span::raw(what),
        ])
    };
    let mut lines: Vec<Line> = KEY_HELP
        .iter()
        .map(|&(key, what)| {
            // The quit key says what it does here: it asks only where facts can be lost; the
            // `b` key shows the bytes per block in use.
            let what = match current_block_bytes(snap) {
                _ if key.starts_with("q ") => view.facts_on_quit.quit_help().to_owned(),
                Some(bytes) if key == "b" => format!("{what} (now {})", format::bytes(bytes)),
                _ => what.to_owned(),
            };
            entry(key, what, Style::new().bold().yellow())
        })
        .collect();
    lines.extend(
        NUMBER_HELP
            .iter()
            .map(|&(term, what)| entry(term, what.to_owned(), Style::new().bold().cyan())),
    );
    let total = lines.len();
    let height = u16::try_from(total).unwrap_or(u16::MAX).saturating_add(2);
    let popup = centered(area, 64, height);
    let room = usize::from(popup.height.saturating_sub(2));
    let scroll = view.help_scroll.min(total.saturating_sub(room));
    let bottom = if room < total {
        format!(
            " lines {}–{} of {total} · ↑↓ PgUp PgDn scroll ",
            scroll + 1,
            (scroll + room).min(total)
        )
    } else {
        " keys, then what the numbers mean ".to_owned()
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0))
            .block(
                Block::bordered()
                    .title(" help · ? or Esc to close ")
                    .title_bottom(bottom),
            ),
        popup,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn drawn(view: &App) -> Vec<String> {
        drawn_with(view, &LiveSnapshot::default())
    }

    fn drawn_with(view: &App, snap: &LiveSnapshot) -> Vec<String> {
        let mut terminal = Terminal::new(TestBackend::new(60, 20)).expect("test backend");
        terminal
            .draw(|frame| render(frame, frame.area(), snap, view))
            .expect("drawn");
        let buffer = terminal.backend().buffer();
        (0..20)
            .map(|y| (0..60).map(|x| buffer[(x, y)].symbol()).collect())
            .collect()
    }

    #[test]
    fn the_quit_line_says_what_quit_does_here() {
        use crate::app::FactsOnQuit;
        for (facts_on_quit, said, not_said) in [
            (FactsOnQuit::Discarded, "quit at once (demo facts", "asks"),
            (
                FactsOnQuit::Written,
                "quit at once (facts are written",
                "asks",
            ),
            (FactsOnQuit::AskFirst, "quit (asks first", "at once"),
        ] {
            let mut view = App::default();
            view.facts_on_quit = facts_on_quit;
            let screen = drawn(&view).join("\n");
            let line = screen
                .lines()
                .find(|line| line.contains("q / Ctrl-C"))
                .unwrap_or_else(|| panic!("no quit line in\n{screen}"));
            assert!(line.contains(said), "{facts_on_quit:?}: {line}");
            assert!(!line.contains(not_said), "{facts_on_quit:?}: {line}");
        }
    }

    #[test]
    fn the_whole_help_scrolls_into_view_at_60_by_20() {
        use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
        let mut view = App::default();
        view.handle_key(KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE));
        let first = drawn(&view);
        assert!(
            first
                .iter()
                .any(|line| line.contains("↑↓ PgUp PgDn scroll")),
            "says how to scroll:\n{}",
            first.join("\n")
        );
        let mut text = first;
        for _ in 0..HELP_LINES {
            view.handle_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
            text.extend(drawn(&view));
        }
        let screen = text.join("\n");
        // Every entry on a line of its own (none wrapped, none cut), and the bottom border.
        for (term, what) in KEY_HELP.iter().chain(NUMBER_HELP) {
            assert!(
                text.iter()
                    .any(|line| line.contains(term) && line.contains(what)),
                "{term}: {what} is not whole in\n{screen}"
            );
        }
        assert!(
            text.iter().any(|line| line.contains('└')),
            "bottom border missing:\n{screen}"
        );
    }

    /// Issue 26: `b … (1MiB)` read as the current value; the line shows the real one.
    #[test]
    fn the_b_key_shows_the_block_bytes_in_use() {
        let b_line = |snap: &LiveSnapshot| {
            drawn_with(&App::default(), snap)
                .into_iter()
                .find(|line| line.contains("assume KV bytes per block"))
                .expect("the b line")
        };
        let mut snap = LiveSnapshot::default();
        assert!(!b_line(&snap).contains("now"), "nothing known yet");
        snap.lanes = vec![
            litehit_live::snapshot::LaneSnapshot {
                block_bytes: 2 << 20,
                ..Default::default()
            };
            2
        ];
        assert!(
            b_line(&snap).contains("(now 2.00 MiB)"),
            "{}",
            b_line(&snap)
        );
        snap.assumed_block_bytes = Some(64 << 20);
        assert!(
            b_line(&snap).contains("(now 64.00 MiB)"),
            "{}",
            b_line(&snap)
        );
        snap.assumed_block_bytes = None;
        snap.lanes[1].block_bytes = 4 << 20;
        assert!(!b_line(&snap).contains("now"), "the lanes differ");
    }
}
