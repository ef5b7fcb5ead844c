//! Gauges: unique blocks and the KV bytes they would need, memory (core, accumulator, facts
//! buffer, monitor; facts spilled to disk shown apart), ingest rate, lag, bad lines with the
//! last error, out-of-order timestamps and, where a TTL is set, TTL-expired blocks.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::format;
use crate::app::App;
use litehit_live::LiveSnapshot;

/// Lines inside the border.
pub const LINES: u16 = 6;

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, _view: &App) {
    let totals = snap.totals();

    let mut unique = vec![
        label("unique"),
        Span::raw(format!(
            "{} blocks · KV {}",
            format::count(totals.unique_blocks),
            format::bytes(totals.unique_kv_bytes)
        )),
    ];
    if snap.has_ttl() {
        let expired: u64 = snap.lanes.iter().map(|lane| lane.ttl_expired_blocks).sum();
        unique.push(Span::raw(format!(
            " · TTL-expired {} blocks",
            format::count(expired)
        )));
    }

    let memory = &snap.memory;
    let memory_line = vec![
        label("memory"),
        Span::raw(format!(
            "{} in RAM: core {} · accumulator {} · facts buffer {} · monitor {}",
            format::bytes(memory.resident_bytes()),
            format::bytes(memory.core_bytes),
            format::bytes(memory.accumulator_bytes),
            format::bytes(memory.facts_buffer_bytes),
            format::bytes(memory.monitor_bytes),
        )),
    ];
    let facts_line = vec![
        label("facts"),
        Span::raw(format!(
            "{} rows · {} spilled to a temporary file on disk",
            format::count(snap.facts_rows),
            format::bytes(memory.facts_on_disk_bytes),
        )),
    ];

    let rate = &snap.rate;
    let source = &snap.source;
    let mut ingest = vec![
        label("ingest"),
        Span::raw(format!(
            "{} · {} · {} · ",
            format::per_second(rate.requests_per_s, "req"),
            format::per_second(rate.blocks_per_s, "blocks"),
            format::bytes_per_second(rate.bytes_per_s),
        )),
        Span::styled("lag ", Style::new().bold()),
        Span::raw(format!("{} behind", format::bytes(source.backlog_bytes))),
    ];
    if let Some(eta) = source.catch_up_eta {
        ingest.push(Span::raw(format!(
            " (~{} to catch up)",
            format::duration(eta)
        )));
    }

    let health = &snap.health;
    let input = input_spans(health);
    let last_error = match &health.last_error {
        Some(error) => {
            // Inside the border, after the label.
            let width = usize::from(area.width.saturating_sub(2 + 9));
            Line::from(vec![
                label(""),
                Span::styled(
                    format::fit_middle(
                        &format!("last: line {}: {}", error.line_number, error.message),
                        width,
                    ),
                    Style::new().red(),
                ),
            ])
        }
        None => Line::default(),
    };

    let lines = vec![
        Line::from(unique),
        Line::from(memory_line),
        Line::from(facts_line),
        Line::from(ingest),
        Line::from(input),
        last_error,
    ];
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" gauges ")),
        area,
    );
}

/// The `input` gauge: bad lines (red once there are any) and clamped timestamps.
fn input_spans(health: &litehit_live::snapshot::InputHealth) -> Vec<Span<'static>> {
    vec![
        label("input"),
        Span::styled(
            format!(
                "{} {} skipped",
                format::count(health.bad_lines),
                litehit_core::display::bad_lines_noun(health.bad_lines)
            ),
            if health.bad_lines > 0 {
                Style::new().red()
            } else {
                Style::new()
            },
        ),
        Span::raw(format!(
            " · {} out-of-order timestamps (clamped)",
            format::count(health.out_of_order_timestamps)
        )),
    ]
}

/// A gauge's name, padded so the values line up.
fn label(text: &'static str) -> Span<'static> {
    Span::styled(format!("{text:<9}"), Style::new().bold())
}
