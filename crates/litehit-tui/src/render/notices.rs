//! The notice log (`!`): the recent notices, newest first, each with the monitor uptime it
//! was raised at; ↑↓ PgUp PgDn scroll it. The status line shows only the current notice and
//! lets it fade; nothing is lost to the fading.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Style, Stylize as _};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::{centered, format};
use crate::app::{App, Mode};
use litehit_live::LiveSnapshot;

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    let Mode::Notices { scroll } = view.mode else {
        return;
    };
    let popup = centered(area, 100, area.height.saturating_sub(2).max(3));
    let room = usize::from(popup.height.saturating_sub(2)).max(1);
    let count = view.notice_log.len();
    let scroll = scroll.min(count.saturating_sub(1));
    let lines: Vec<Line> = if count == 0 {
        vec![Line::from(" no notices yet").dim()]
    } else {
        view.notice_log
            .iter()
            .rev()
            .skip(scroll)
            .take(room)
            .map(|notice| {
                let style = if notice.problem {
                    Style::new().red()
                } else {
                    Style::new()
                };
                Line::from(vec![
                    Span::styled(
                        format!(" {:>7} ", format::duration(notice.at)),
                        Style::new().dim(),
                    ),
                    Span::styled(notice.text.clone(), style),
                ])
            })
            .collect()
    };
    let position = if count > room {
        format!(
            " {}–{} of {count} · ↑↓ PgUp PgDn ",
            scroll + 1,
            (scroll + room).min(count)
        )
    } else {
        format!(" {count} ")
    };
    let now = format::duration(snap.uptime);
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::bordered()
                .title(format!(
                    " notices, newest first · uptime {now} · ! or Esc closes "
                ))
                .title_bottom(position),
        ),
        popup,
    );
}
