//! The add-slot dialog and the block-bytes dialog (`b`): the typed value, the accepted forms
//! and the last refusal.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Style, Stylize as _};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::{centered, format};
use crate::app::{App, Mode, SlotEditor};
use litehit_live::LiveSnapshot;

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    match &view.mode {
        Mode::SlotEditor(editor) => dialog(
            frame,
            area,
            editor,
            " add capacity slot ",
            " size: ",
            vec![Line::from(" GiB: 40, 0.5 · blocks: 1000b · Enter adds · Esc cancels").dim()],
        ),
        Mode::BlockBytes(editor) => {
            let now = match snap.lanes.first() {
                Some(lane)
                    if snap
                        .lanes
                        .iter()
                        .all(|other| other.block_bytes == lane.block_bytes) =>
                {
                    format!(" now {} per block", format::bytes(lane.block_bytes))
                }
                Some(_) => " now: lanes differ; the new value is for every lane".to_owned(),
                None => " now: as configured".to_owned(),
            };
            dialog(
                frame,
                area,
                editor,
                " KV bytes per block ",
                " bytes: ",
                vec![
                    Line::from(now).dim(),
                    Line::from(" as --block-bytes: 1048576, 1MiB, 128KiB · Enter · Esc").dim(),
                    Line::from(" GB slots re-project at once; blocks and facts stay").dim(),
                ],
            );
        }
        _ => {}
    }
}

fn dialog(
    frame: &mut Frame,
    area: Rect,
    editor: &SlotEditor,
    title: &'static str,
    prompt: &'static str,
    help: Vec<Line<'static>>,
) {
    let mut lines = vec![Line::from(vec![
        Span::raw(prompt),
        Span::styled(format!("{}█", editor.input), Style::new().bold()),
    ])];
    lines.extend(help);
    if let Some(error) = &editor.error {
        lines.push(Line::from(Span::styled(
            format!(" {error}"),
            Style::new().red(),
        )));
    }
    // Lines wrap inside the border: a long refusal takes the lines it needs.
    let inner_width = usize::from(area.width.min(64).saturating_sub(2)).max(1);
    let wrapped: usize = lines
        .iter()
        .map(|line| line.width().div_ceil(inner_width).max(1))
        .sum();
    let height = u16::try_from(wrapped).unwrap_or(u16::MAX).saturating_add(2);
    let popup = centered(area, 64, height);
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::bordered().title(title)),
        popup,
    );
}
