//! The quit dialog, shown when quitting would lose facts rows that no file holds.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Style, Stylize as _};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::{centered, format};
use crate::app::App;
use litehit_live::LiveSnapshot;

pub fn render(frame: &mut Frame, area: Rect, _snap: &LiveSnapshot, view: &App) {
    let rows = view.unsaved_rows();
    let noun = if rows == 1 { "row is" } else { "rows are" };
    let key = |text: &'static str| Span::styled(text, Style::new().bold().yellow());
    let lines = vec![
        Line::from(format!(
            " {} facts {noun} in no file (no --facts-out)",
            format::count(rows)
        )),
        Line::from(vec![
            Span::raw(" "),
            key("y"),
            Span::raw(" quit anyway · "),
            key("s"),
            Span::raw(" save them · "),
            key("Esc"),
            Span::raw(" stay"),
        ]),
    ];
    let popup = centered(area, 56, 4);
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::bordered().title(" quit? ").red()),
        popup,
    );
}
