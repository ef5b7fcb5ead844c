//! The per-instance table: requests, input tokens, cumulative token hit rate per slot, the ∞
//! bound, unique blocks and their KV bytes; a totals row when there are several instances.
//! Narrow screens drop the least important columns, keeping the selected slot.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Rect};
use ratatui::style::{Modifier, Style, Stylize as _};
use ratatui::text::Text;
use ratatui::widgets::{Block, Cell, Row, Table};
use std::fmt::Write as _;

use super::format;
use crate::app::App;
use litehit_live::LiveSnapshot;

/// One column: what it shows, its width and how readily it is dropped (higher goes first).
struct Column {
    header: String,
    width: u16,
    drop_rank: u16,
    kind: ColumnKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ColumnKind {
    Instance,
    Requests,
    InputTokens,
    Slot(usize),
    Infinite,
    UniqueBlocks,
    KvBytes,
}

/// The cells of one row, computed for every column kind.
struct RowValues {
    instance: String,
    requests: u64,
    input_tokens: u64,
    slot_rates: Vec<Option<f64>>,
    infinite_rate: Option<f64>,
    unique_blocks: u64,
    kv_bytes: u64,
}

impl RowValues {
    fn cell(&self, kind: ColumnKind) -> String {
        match kind {
            ColumnKind::Instance => self.instance.clone(),
            ColumnKind::Requests => format::count(self.requests),
            ColumnKind::InputTokens => format::count(self.input_tokens),
            ColumnKind::Slot(index) => {
                format::percent(self.slot_rates.get(index).copied().flatten())
            }
            ColumnKind::Infinite => format::percent(self.infinite_rate),
            ColumnKind::UniqueBlocks => format::count(self.unique_blocks),
            ColumnKind::KvBytes => format::bytes(self.kv_bytes),
        }
    }
}

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    let rows = row_values(snap);
    // Below the header: as many rows as fit, scrolled to keep the selected one in view.
    let row_room = usize::from(area.height.saturating_sub(3)).max(1);
    let shown = visible_rows(rows.len(), row_room, view.selected_row);
    let mut notes = String::new();
    let all_columns = columns(snap, view);
    let slot_columns = |columns: &[Column]| {
        columns
            .iter()
            .filter(|column| matches!(column.kind, ColumnKind::Slot(_)))
            .count()
    };
    let slot_count = slot_columns(&all_columns);
    let columns = fit_columns(all_columns, area.width.saturating_sub(2));
    let hidden_slots = slot_count - slot_columns(&columns);
    if hidden_slots > 0 {
        // Narrow screen: the slots far from the selection are left out; ←→ brings them in.
        let noun = if hidden_slots == 1 { "slot" } else { "slots" };
        let _ = write!(notes, "· {hidden_slots} {noun} off screen (←→) ");
    }
    if shown.len() < rows.len() {
        // Some rows are scrolled away: say so, and which ones are shown.
        let _ = write!(
            notes,
            "· rows {}–{} of {} (↑↓) ",
            shown.start + 1,
            shown.end,
            rows.len()
        );
    }
    // What is off screen matters more than the panel's subtitle on a narrow screen.
    let full = format!(" instances · cumulative token hit rate {notes}");
    let title = if full.chars().count() + 2 <= usize::from(area.width) {
        full
    } else {
        format!(" instances {notes}")
    };
    let block = Block::bordered().title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.width == 0 || inner.height == 0 {
        return;
    }
    let header = Row::new(columns.iter().map(|column| {
        let cell = Cell::from(Text::from(column.header.clone()).right_aligned());
        match column.kind {
            ColumnKind::Slot(index) if index == view.selected_slot => {
                cell.style(Style::new().reversed())
            }
            ColumnKind::Instance => Cell::from(column.header.clone()),
            _ => cell,
        }
    }))
    .style(Style::new().add_modifier(Modifier::BOLD));

    if rows.is_empty() {
        let waiting = Row::new([Cell::from("no requests yet")]).dim();
        let table = Table::new([waiting], [Constraint::Min(0)]).header(header);
        frame.render_widget(table, inner);
        return;
    }
    let lane_count = snap.lanes.len();
    let table_rows = rows
        .iter()
        .enumerate()
        .skip(shown.start)
        .take(shown.len())
        .map(|(index, values)| {
            let selected = index == view.selected_row;
            let cells = columns.iter().map(|column| {
                let mut text = values.cell(column.kind);
                if column.kind == ColumnKind::Instance {
                    // Ids often share a long prefix (`prefill-node-us-east-1a-000042`): cut the
                    // middle, so the end that tells them apart stays.
                    let room = usize::from(column.width).saturating_sub(2);
                    text = format!(
                        "{}{}",
                        if selected { "▶ " } else { "  " },
                        format::fit_middle(&text, room)
                    );
                    return Cell::from(text);
                }
                Cell::from(Text::from(text).right_aligned())
            });
            let mut style = Style::new();
            if index == lane_count {
                style = style.add_modifier(Modifier::BOLD);
            }
            if selected {
                style = style.add_modifier(Modifier::REVERSED);
            }
            Row::new(cells).style(style)
        });
    let widths: Vec<Constraint> = columns
        .iter()
        .map(|column| Constraint::Length(column.width))
        .collect();
    let table = Table::new(table_rows, widths)
        .header(header)
        .column_spacing(1)
        .flex(Flex::Start);
    frame.render_widget(table, inner);
}

/// The rows shown when `room` of `count` fit: all of them, else a window around `selected`
/// (centred, so moving the selection up or down scrolls before it reaches an edge).
fn visible_rows(count: usize, room: usize, selected: usize) -> std::ops::Range<usize> {
    if count <= room {
        return 0..count;
    }
    let start = selected.saturating_sub(room / 2).min(count - room);
    start..start + room
}

fn row_values(snap: &LiveSnapshot) -> Vec<RowValues> {
    let slot_count = snap.slots.len();
    let mut rows: Vec<RowValues> = snap
        .lanes
        .iter()
        .map(|lane| RowValues {
            instance: lane.instance_id.clone(),
            requests: lane.requests,
            input_tokens: lane.input_tokens,
            slot_rates: (0..slot_count)
                .map(|index| lane.slot_hit_rate(index))
                .collect(),
            infinite_rate: lane.infinite_hit_rate(),
            unique_blocks: lane.unique_blocks,
            kv_bytes: lane.unique_kv_bytes(),
        })
        .collect();
    if snap.lanes.len() > 1 {
        let totals = snap.totals();
        rows.push(RowValues {
            instance: "total".to_owned(),
            requests: totals.requests,
            input_tokens: totals.input_tokens,
            slot_rates: (0..slot_count)
                .map(|index| totals.slot_hit_rate(index))
                .collect(),
            infinite_rate: totals.infinite_hit_rate(),
            unique_blocks: totals.unique_blocks,
            kv_bytes: totals.unique_kv_bytes,
        });
    }
    rows
}

fn columns(snap: &LiveSnapshot, view: &App) -> Vec<Column> {
    let longest_instance = snap
        .lanes
        .iter()
        .map(|lane| lane.instance_id.chars().count())
        .max()
        .unwrap_or(0);
    let instance_width = u16::try_from(longest_instance + 2)
        .unwrap_or(u16::MAX)
        .clamp(10, MAX_INSTANCE_WIDTH);
    let mut columns = vec![
        Column {
            header: "instance".to_owned(),
            width: instance_width,
            drop_rank: 0,
            kind: ColumnKind::Instance,
        },
        Column {
            header: "requests".to_owned(),
            width: 8,
            drop_rank: 40,
            kind: ColumnKind::Requests,
        },
        Column {
            header: "input tok".to_owned(),
            width: 9,
            drop_rank: 60,
            kind: ColumnKind::InputTokens,
        },
    ];
    for (index, slot) in snap.slots.iter().enumerate() {
        let header = format::capacity(slot.capacity);
        let distance = u16::try_from(index.abs_diff(view.selected_slot)).unwrap_or(u16::MAX);
        columns.push(Column {
            width: u16::try_from(header.chars().count())
                .unwrap_or(u16::MAX)
                .max(7),
            header,
            // Slots far from the selection go before the ∞ bound; the selected one stays.
            drop_rank: if distance == 0 {
                1
            } else {
                30u16.saturating_add(distance)
            },
            kind: ColumnKind::Slot(index),
        });
    }
    columns.extend([
        Column {
            header: "∞".to_owned(),
            width: 7,
            drop_rank: 20,
            kind: ColumnKind::Infinite,
        },
        Column {
            header: "unique blk".to_owned(),
            width: 10,
            drop_rank: 50,
            kind: ColumnKind::UniqueBlocks,
        },
        Column {
            header: "KV bytes".to_owned(),
            width: 10,
            drop_rank: 70,
            kind: ColumnKind::KvBytes,
        },
    ]);
    columns
}

/// Rank at or below which a column is kept in preference to a wide instance column.
const ESSENTIAL_RANK: u16 = 20;
/// The instance column shrinks to this before essential columns go.
const MIN_INSTANCE_WIDTH: u16 = 12;
/// The instance column shrinks to this before other columns are dropped.
const COMFORTABLE_INSTANCE_WIDTH: u16 = 28;
/// The instance column never grows past this (the widest ids are cut in the middle).
const MAX_INSTANCE_WIDTH: u16 = 64;

/// Drops columns, highest rank first, until the row fits in `width`; essential ones (the
/// selected slot and ∞) go only after the instance column has shrunk.
fn fit_columns(mut columns: Vec<Column>, width: u16) -> Vec<Column> {
    let needed = |columns: &[Column]| -> u32 {
        columns
            .iter()
            .map(|column| u32::from(column.width) + 1)
            .sum::<u32>()
    };
    let fits = |columns: &[Column]| needed(columns) <= u32::from(width);
    // Narrows the instance column to what the others leave, but not below `floor`.
    let shrink_instance = |columns: &mut [Column], floor: u16| {
        if !fits(columns) {
            let left = u32::from(width).saturating_sub(needed(&columns[1..]) + 1);
            columns[0].width = u16::try_from(left)
                .unwrap_or(0)
                .max(floor)
                .min(columns[0].width);
        }
    };
    let drop_highest = |columns: &mut Vec<Column>, above: u16| -> bool {
        let candidate = columns
            .iter()
            .enumerate()
            .filter(|(_, column)| column.kind != ColumnKind::Instance && column.drop_rank > above)
            .max_by_key(|(_, column)| column.drop_rank)
            .map(|(index, _)| index);
        candidate.map(|index| columns.remove(index)).is_some()
    };
    // A long id gives way first, down to a width that still reads well.
    shrink_instance(&mut columns, COMFORTABLE_INSTANCE_WIDTH);
    while !fits(&columns) && drop_highest(&mut columns, ESSENTIAL_RANK) {}
    shrink_instance(&mut columns, MIN_INSTANCE_WIDTH);
    while !fits(&columns) && drop_highest(&mut columns, 0) {}
    shrink_instance(&mut columns, 0);
    columns
}
