//! The help overlay: every key, from [`crate::app::KEY_HELP`].

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Style, Stylize as _};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::centered;
use crate::app::{App, KEY_HELP};
use litehit_live::LiveSnapshot;

pub fn render(frame: &mut Frame, area: Rect, _snap: &LiveSnapshot, _view: &App) {
    let mut lines: Vec<Line> = KEY_HELP
        .iter()
        .map(|(key, what)| {
            Line::from(vec![
                Span::styled(format!("{key:>12}  "), Style::new().bold().yellow()),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::from(""));
    lines.push(
        Line::from(" rates: Σ hit tokens / Σ input tokens since the start, exact at any slot")
            .dim(),
    );
    let height = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2);
    let popup = centered(area, 76, height);
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::bordered().title(" keys · ? or Esc to close ")),
        popup,
    );
}
