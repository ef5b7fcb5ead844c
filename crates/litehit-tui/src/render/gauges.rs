//! Gauges: unique blocks and the KV bytes they would need, memory (core, accumulator, facts
//! buffer, monitor; facts spilled to disk shown apart), ingest rate, lag, bad lines with the
//! last error, out-of-order timestamps, write events (counted, not replayed) and, where a TTL
//! is set, TTL-expired blocks.
//!
//! Each line is a list of parts with a rank: where a line does not fit, the part of the
//! highest rank is shortened first (`accumulator` → `acc`), then left out, until it fits;
//! rank 0 stays. A part is whole or absent — no word or number is ever cut.

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
/// Columns the gauge names take.
const LABEL_WIDTH: usize = 9;
const SEPARATOR: &str = " · ";

/// One part of a gauge line: its forms, longest first, and its rank (0 stays).
#[derive(Debug, Clone)]
struct Part {
    forms: Vec<String>,
    style: Style,
    rank: u8,
}

fn part(rank: u8, forms: &[String]) -> Part {
    Part {
        forms: forms.to_vec(),
        style: Style::new(),
        rank,
    }
}

impl Part {
    fn styled(mut self, style: Style) -> Self {
        self.style = style;
        self
    }
}

/// The parts that fit in `width` columns, each in the form chosen (see the module doc).
fn fit(parts: &[Part], width: usize) -> Vec<(String, Style)> {
    // `None`: left out; else the index of the form used.
    let mut chosen: Vec<Option<usize>> = vec![Some(0); parts.len()];
    let used = |chosen: &[Option<usize>]| -> usize {
        let widths: Vec<usize> = parts
            .iter()
            .zip(chosen)
            .filter_map(|(part, form)| {
                form.map(|form| unicode_width::UnicodeWidthStr::width(part.forms[form].as_str()))
            })
            .collect();
        widths.iter().sum::<usize>()
            + widths.len().saturating_sub(1) * unicode_width::UnicodeWidthStr::width(SEPARATOR)
    };
    let mut by_rank: Vec<usize> = (0..parts.len()).collect();
    by_rank.sort_by_key(|&index| std::cmp::Reverse(parts[index].rank));
    for index in by_rank {
        while used(&chosen) > width {
            match chosen[index] {
                Some(form) if form + 1 < parts[index].forms.len() => {
                    chosen[index] = Some(form + 1);
                }
                Some(_) if parts[index].rank > 0 => chosen[index] = None,
                _ => break,
            }
        }
    }
    parts
        .iter()
        .zip(chosen)
        .filter_map(|(part, form)| form.map(|form| (part.forms[form].clone(), part.style)))
        .collect()
}

/// A gauge line: its name, then the parts that fit `width` (the whole line's columns).
fn line(name: &'static str, parts: &[Part], width: usize) -> Line<'static> {
    let mut spans = vec![label(name)];
    for (index, (text, style)) in fit(parts, width.saturating_sub(LABEL_WIDTH))
        .into_iter()
        .enumerate()
    {
        if index > 0 {
            spans.push(Span::raw(SEPARATOR));
        }
        spans.push(Span::styled(text, style));
    }
    Line::from(spans)
}

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, _view: &App) {
    // Inside the border.
    let width = usize::from(area.width.saturating_sub(2));
    let totals = &snap.totals;
    // Under a TTL the unique blocks are those still alive (expired ones leave the count).
    let alive = if snap.has_ttl() { "alive " } else { "" };
    // Under a memory horizon forgotten keys leave the count: a lower bound (`≥`).
    let bound = totals.infinite_is_lower_bound;
    let mut unique = vec![
        part(
            0,
            &[format!(
                "{} {alive}blocks",
                format::count_bound(totals.unique_blocks, bound)
            )],
        ),
        part(
            1,
            &[format!(
                "{alive}KV {}",
                format::bytes_bound(totals.unique_kv_bytes, bound)
            )],
        ),
    ];
    if snap.has_ttl() {
        let expired = format::count(snap.lanes.iter().map(|lane| lane.ttl_expired_blocks).sum());
        unique.push(part(
            2,
            &[
                format!("TTL-expired {expired} blocks"),
                format!("TTL-expired {expired}"),
            ],
        ));
    }

    let (memory_parts, facts_parts) = memory_and_facts_parts(snap);
    let rate = &snap.rate;
    let source = &snap.source;
    let lag = format::bytes(source.backlog_bytes);
    let mut ingest = vec![
        part(0, &[format::per_second(rate.requests_per_s, "req")]),
        part(3, &[format::per_second(rate.blocks_per_s, "blocks")]),
        part(4, &[format::bytes_per_second(rate.bytes_per_s)]),
        part(1, &[format!("lag {lag} behind"), format!("lag {lag}")]),
    ];
    if let Some(eta) = source.catch_up_eta {
        let eta = format::duration(eta);
        ingest.push(part(
            2,
            &[format!("~{eta} to catch up"), format!("~{eta} left")],
        ));
    }

    let health = &snap.health;
    let input = input_parts(health);
    let last_error = match &health.last_error {
        Some(error) => Line::from(vec![
            label(""),
            // A message, not a number: it may lose its middle (marked with …).
            Span::styled(
                format::fit_middle(
                    &format!("last: line {}: {}", error.line_number, error.message),
                    width.saturating_sub(LABEL_WIDTH),
                ),
                Style::new().red(),
            ),
        ]),
        None => Line::default(),
    };

    let lines = vec![
        line("unique", &unique, width),
        line("memory", &memory_parts, width),
        line("facts", &facts_parts, width),
        line("ingest", &ingest, width),
        line("input", &input, width),
        last_error,
    ];
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" gauges ")),
        area,
    );
}

/// The `memory` and `facts` gauges.
fn memory_and_facts_parts(snap: &LiveSnapshot) -> (Vec<Part>, Vec<Part>) {
    let memory = &snap.memory;
    let bytes = format::bytes;
    let memory_parts = vec![
        part(0, &[format!("{} in RAM", bytes(memory.resident_bytes()))]),
        part(1, &[format!("core {}", bytes(memory.core_bytes))]),
        part(
            2,
            &[
                format!("accumulator {}", bytes(memory.accumulator_bytes)),
                format!("acc {}", bytes(memory.accumulator_bytes)),
            ],
        ),
        part(
            4,
            &[
                format!("facts buffer {}", bytes(memory.facts_buffer_bytes)),
                format!("buffer {}", bytes(memory.facts_buffer_bytes)),
            ],
        ),
        part(
            3,
            &[
                format!("monitor {}", bytes(memory.monitor_bytes)),
                format!("mon {}", bytes(memory.monitor_bytes)),
            ],
        ),
    ];
    let spilled = bytes(memory.facts_on_disk_bytes);
    let facts_parts = vec![
        part(0, &[format!("{} rows", format::count(snap.facts_rows))]),
        part(
            1,
            &[
                format!("{spilled} spilled to a temporary file on disk"),
                format!("{spilled} spilled to disk"),
                format!("{spilled} spilled"),
            ],
        ),
    ];

    (memory_parts, facts_parts)
}

/// The `input` gauge: bad lines (red once there are any), clamped timestamps and write
/// events (KVCM `StartWriteCache` / `FinishWriteCache`, standard `write` rows), which are
/// counted and skipped: they are no lookups, so they make no facts (as upstream).
fn input_parts(health: &litehit_live::snapshot::InputHealth) -> Vec<Part> {
    let bad = format!(
        "{} {}",
        format::count(health.bad_lines),
        litehit_core::display::bad_lines_noun(health.bad_lines)
    );
    let mut parts = vec![
        part(0, &[format!("{bad} skipped"), bad]).styled(if health.bad_lines > 0 {
            Style::new().red()
        } else {
            Style::new()
        }),
        part(
            2,
            &[
                format!(
                    "{} out-of-order timestamps (clamped)",
                    format::count(health.out_of_order_timestamps)
                ),
                format!(
                    "{} out-of-order",
                    format::count(health.out_of_order_timestamps)
                ),
            ],
        ),
    ];
    if health.lone_surrogates > 0 {
        // An OpenAI log's `"\ud800"` (Python's json.dumps of a lone surrogate): kept as U+FFFD.
        let count = format::count(health.lone_surrogates);
        let noun = if health.lone_surrogates == 1 {
            "lone surrogate"
        } else {
            "lone surrogates"
        };
        parts.push(
            part(
                1,
                &[
                    format!("{count} {noun} read as U+FFFD"),
                    format!("{count} U+FFFD"),
                ],
            )
            .styled(Style::new().yellow()),
        );
    }
    if health.write_events > 0 {
        let writes = format::count(health.write_events);
        let noun = if health.write_events == 1 {
            "write event"
        } else {
            "write events"
        };
        parts.push(
            part(
                1,
                &[
                    format!("{writes} {noun} ignored (not lookups)"),
                    format!("{writes} writes ignored"),
                ],
            )
            .styled(Style::new().yellow()),
        );
    }
    parts
}

/// A gauge's name, padded so the values line up.
fn label(text: &'static str) -> Span<'static> {
    Span::styled(format!("{text:<LABEL_WIDTH$}"), Style::new().bold())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(parts: &[Part], width: usize) -> Vec<String> {
        fit(parts, width)
            .into_iter()
            .map(|(text, _)| text)
            .collect()
    }

    #[test]
    fn parts_shorten_then_go_by_rank_and_rank_zero_stays_whole() {
        let parts = [
            part(0, &["12 blocks".to_owned()]),
            part(
                2,
                &["accumulator 1.0 MiB".to_owned(), "acc 1.0 MiB".to_owned()],
            ),
            part(1, &["core 3.0 MiB".to_owned()]),
        ];
        assert_eq!(
            texts(&parts, 80),
            ["12 blocks", "accumulator 1.0 MiB", "core 3.0 MiB"]
        );
        // 9 + 3 + 11 + 3 + 12 = 38: the highest rank is shortened first.
        assert_eq!(
            texts(&parts, 38),
            ["12 blocks", "acc 1.0 MiB", "core 3.0 MiB"]
        );
        assert_eq!(texts(&parts, 37), ["12 blocks", "core 3.0 MiB"]);
        assert_eq!(texts(&parts, 9), ["12 blocks"]);
        assert_eq!(texts(&parts, 3), ["12 blocks"], "rank 0 is never cut");
    }
}
