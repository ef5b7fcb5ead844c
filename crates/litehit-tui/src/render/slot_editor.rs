//! The add-slot dialog: the typed size, the accepted forms and the last refusal.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Style, Stylize as _};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::centered;
use crate::app::{App, Mode};
use litehit_live::LiveSnapshot;

pub fn render(frame: &mut Frame, area: Rect, _snap: &LiveSnapshot, view: &App) {
    let Mode::SlotEditor(editor) = &view.mode else {
        return;
    };
    let mut lines = vec![
        Line::from(vec![
            Span::raw(" size: "),
            Span::styled(format!("{}█", editor.input), Style::new().bold()),
        ]),
        Line::from(" GiB: 40, 0.5, 2gb · blocks: 1000b · Enter add · Esc cancel").dim(),
    ];
    if let Some(error) = &editor.error {
        lines.push(Line::from(Span::styled(
            format!(" {error}"),
            Style::new().red(),
        )));
    }
    let height = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2);
    let popup = centered(area, 64, height);
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" add capacity slot ")),
        popup,
    );
}
