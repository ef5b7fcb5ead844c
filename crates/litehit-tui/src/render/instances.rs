//! The per-instance table: requests, input tokens, cumulative token hit rate per slot, the ∞
//! bound, unique blocks and their KV bytes; a totals row when there are several instances.
//! Narrow screens drop the least important columns, keeping the selected slot.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Rect};
use ratatui::style::{Modifier, Style, Stylize as _};
use ratatui::text::Text;
use ratatui::widgets::{Block, Cell, Row, Table};
use std::fmt::Write as _;
use unicode_width::UnicodeWidthStr;

use super::format;
use crate::app::{App, Mode, SortBy};
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
    /// The engine's own observed hit rate (`cached_tokens`), when the trace says it.
    Observed,
    Slot(usize),
    /// OPT's hit rate at the selected slot (`watch --policy lru,opt`).
    OptSlot(usize),
    /// OPT's hit rate minus LRU's at the selected slot.
    PolicyGap(usize),
    Infinite,
    UniqueBlocks,
    KvBytes,
}

/// The cells of one row, computed for every column kind.
struct RowValues {
    instance: String,
    requests: u64,
    input_tokens: u64,
    observed_rate: Option<f64>,
    slot_rates: Vec<Option<f64>>,
    /// Per slot: only a lower bound (the slot lies above the memory horizon of the lane, or of
    /// one of the lanes summed).
    slot_lower_bounds: Vec<bool>,
    /// With OPT: per slot, OPT's hit rate and the policy gap (OPT's minus LRU's).
    opt_slot_rates: Vec<Option<f64>>,
    policy_gaps: Vec<Option<f64>>,
    infinite_rate: Option<f64>,
    unique_blocks: u64,
    kv_bytes: u64,
    /// Under a memory horizon (of this lane, or one of those summed): ∞, the unique blocks
    /// and their bytes are only lower bounds (forgotten keys would have hit, and counted).
    horizon_lower_bound: bool,
}

impl RowValues {
    fn cell(&self, kind: ColumnKind) -> String {
        match kind {
            ColumnKind::Instance => self.instance.clone(),
            ColumnKind::Requests => format::count(self.requests),
            ColumnKind::InputTokens => format::count(self.input_tokens),
            ColumnKind::Observed => format::percent(self.observed_rate),
            ColumnKind::Slot(index) => format::percent_bound(
                self.slot_rates.get(index).copied().flatten(),
                self.slot_lower_bounds.get(index).copied().unwrap_or(false),
            ),
            ColumnKind::OptSlot(index) => {
                format::percent(self.opt_slot_rates.get(index).copied().flatten())
            }
            ColumnKind::PolicyGap(index) => {
                format::points(self.policy_gaps.get(index).copied().flatten())
            }
            ColumnKind::Infinite => {
                format::percent_bound(self.infinite_rate, self.horizon_lower_bound)
            }
            ColumnKind::UniqueBlocks => {
                format::count_bound(self.unique_blocks, self.horizon_lower_bound)
            }
            ColumnKind::KvBytes => format::bytes_bound(self.kv_bytes, self.horizon_lower_bound),
        }
    }
}

/// The panel's title with its notes; what is off screen matters more than the subtitle on a
/// narrow screen.
fn panel_title(notes: &str, width: u16) -> String {
    let full = format!(" instances · cumulative token hit rate {notes}");
    if full.chars().count() + 2 <= usize::from(width) {
        full
    } else {
        format!(" instances {notes}")
    }
}

/// The column headers, bold, the selected slot's reversed.
fn header_row(columns: &[Column], view: &App) -> Row<'static> {
    Row::new(columns.iter().map(|column| {
        let cell = Cell::from(Text::from(column.header.clone()).right_aligned());
        match column.kind {
            ColumnKind::Slot(index) if index == view.selected_slot => {
                cell.style(Style::new().reversed())
            }
            ColumnKind::Instance => Cell::from(column.header.clone()),
            _ => cell,
        }
    }))
    .style(Style::new().add_modifier(Modifier::BOLD))
}

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    view.table_rows_on_screen.take(); // filled again below once the rows are drawn
    let rows = row_values(snap);
    // The shared pool (`watch --pool`): pinned below the totals, outside the order, not in
    // the totals; selectable (row `view.pool_row()`), then the curve shows the pool.
    let pool_row = pool_row_values(snap);
    let lane_count = snap.lanes.len();
    let order = displayed_order(view, lane_count, rows.len());
    let pinned_totals = order.last() == Some(&lane_count) && lane_count > 1;
    let listed_lanes = order.len() - usize::from(pinned_totals);
    // Below the header: as many lane rows as fit beside the pinned totals row, scrolled to
    // keep the selected one in view.
    let row_room = usize::from(area.height.saturating_sub(3))
        .saturating_sub(usize::from(pinned_totals))
        .saturating_sub(usize::from(pool_row.is_some()))
        .max(1);
    let selected_position = order[..listed_lanes]
        .iter()
        .position(|&row| row == view.selected_row)
        .unwrap_or(if pinned_totals { listed_lanes } else { 0 });
    let shown = visible_rows(listed_lanes, row_room, selected_position);
    let mut notes = sort_and_filter_notes(snap, view, listed_lanes);
    if pool_row.is_some() {
        // The pool's slots are the fleet's total capacity, beside the totals row.
        let _ = write!(notes, "· shared pool at {lane_count} × slot ");
    }
    let all_columns = columns(snap, view, &rows);
    let slot_columns = |columns: &[Column]| {
        columns
            .iter()
            .filter(|column| matches!(column.kind, ColumnKind::Slot(_)))
            .count()
    };
    let slot_count = slot_columns(&all_columns);
    let columns = fit_columns(all_columns, area.width.saturating_sub(2));
    let hidden_slots = slot_count - slot_columns(&columns);
    if shows_a_lower_bound(&columns, &rows, pool_row.as_ref()) {
        // A slot above the memory horizon: its `≥` values are lower bounds.
        let _ = write!(notes, "· ≥ lower bound above the horizon ");
    }
    if hidden_slots > 0 {
        // Narrow screen: the slots far from the selection are left out; ←→ brings them in.
        let noun = if hidden_slots == 1 { "slot" } else { "slots" };
        let _ = write!(notes, "· {hidden_slots} {noun} off screen (←→) ");
    }
    notes.push_str(&scroll_note(&shown, listed_lanes));
    let block = Block::bordered().title(panel_title(&notes, area.width));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.width == 0 || inner.height == 0 {
        return;
    }
    let header = header_row(&columns, view);

    if rows.is_empty() {
        let waiting = Row::new([Cell::from("no requests yet")]).dim();
        let table = Table::new([waiting], [Constraint::Min(0)]).header(header);
        frame.render_widget(table, inner);
        return;
    }
    let visible: Vec<usize> = order[shown.clone()]
        .iter()
        .copied()
        .chain(pinned_totals.then_some(lane_count))
        .collect();
    // For the mouse: the header takes the first line, each row one after it.
    let clickable = visible
        .iter()
        .copied()
        .chain(pool_row.is_some().then(|| view.pool_row()));
    *view.table_rows_on_screen.borrow_mut() = crate::app::TableRowsOnScreen {
        x: inner.x..inner.x + inner.width,
        rows: (inner.y + 1..inner.y + inner.height)
            .zip(clickable)
            .collect(),
    };
    let table_rows = visible
        .iter()
        .map(|&index| {
            table_row(
                &rows[index],
                &columns,
                index == view.selected_row,
                index == lane_count,
            )
        })
        .chain(
            pool_row
                .iter()
                .map(|pool| table_row(pool, &columns, view.selected_pool(), false).italic()),
        );
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

/// Whether a slot column shown holds a lower bound (`≥`) in one of `rows`.
fn shows_a_lower_bound(columns: &[Column], rows: &[RowValues], pool: Option<&RowValues>) -> bool {
    columns.iter().any(|column| match column.kind {
        ColumnKind::Slot(index) => rows
            .iter()
            .chain(pool)
            .any(|row| row.slot_lower_bounds.get(index).copied().unwrap_or(false)),
        _ => false,
    })
}

/// The view's order (filtered, sorted) of the `row_count` rows this snapshot has, the
/// totals row (`lane_count`) last.
fn displayed_order(view: &App, lane_count: usize, row_count: usize) -> Vec<usize> {
    if view.observed_lane_count() == lane_count {
        view.row_order()
            .into_iter()
            .filter(|&row| row < row_count)
            .collect()
    } else {
        (0..row_count).collect() // a view that has not seen this snapshot: as it comes
    }
}

/// One table row: the instance cut in the middle to its column, the numbers whole.
fn table_row<'a>(
    values: &RowValues,
    columns: &[Column],
    selected: bool,
    is_total: bool,
) -> Row<'a> {
    let cells = columns.iter().map(|column| {
        let text = values.cell(column.kind);
        if column.kind == ColumnKind::Instance {
            // Ids often share a long prefix (`prefill-node-us-east-1a-000042`): cut the
            // middle, so the end that tells them apart stays; wide characters count double.
            let room = usize::from(column.width).saturating_sub(2);
            return Cell::from(format!(
                "{}{}",
                if selected { "▶ " } else { "  " },
                format::fit_middle_columns(&text, room)
            ));
        }
        Cell::from(Text::from(text).right_aligned())
    });
    let mut style = Style::new();
    if is_total {
        style = style.add_modifier(Modifier::BOLD);
    }
    if selected {
        style = style.add_modifier(Modifier::REVERSED);
    }
    Row::new(cells.collect::<Vec<_>>()).style(style)
}

/// The title's note on the order and the filter (`· by 40 GiB ↓ · /east: 3 of 60`).
fn sort_and_filter_notes(snap: &LiveSnapshot, view: &App, listed_lanes: usize) -> String {
    let lane_count = snap.lanes.len();
    let mut notes = String::new();
    if view.sort_by != SortBy::Id || view.sort_descending {
        let column = match view.sort_by {
            SortBy::Id => "id".to_owned(),
            SortBy::Requests => "requests".to_owned(),
            SortBy::InputTokens => "input tok".to_owned(),
            SortBy::SlotRate => snap
                .slots
                .get(view.selected_slot)
                .map_or_else(|| "slot".to_owned(), format::slot),
            SortBy::Infinite => format::infinite_label(snap),
            SortBy::UniqueBlocks => unique_header(snap).to_owned(),
        };
        let arrow = if view.sort_descending { "↓" } else { "↑" };
        let _ = write!(notes, "· by {column} {arrow} ");
    }
    if !view.filter.is_empty() || view.mode == Mode::Filter {
        let _ = write!(
            notes,
            "· /{}{} {listed_lanes} of {lane_count} ",
            view.filter,
            if view.mode == Mode::Filter {
                "█"
            } else {
                ":"
            }
        );
    }
    notes
}

/// When some rows are scrolled away: which ones are shown and the keys that lead to the
/// others (`PgUp` only with rows above, `PgDn` only with rows below); else nothing.
fn scroll_note(shown: &std::ops::Range<usize>, listed_lanes: usize) -> String {
    if shown.len() >= listed_lanes {
        return String::new();
    }
    let keys = match (shown.start > 0, shown.end < listed_lanes) {
        (true, true) => "↑↓ PgUp PgDn",
        (true, false) => "↑↓ PgUp",
        _ => "↑↓ PgDn",
    };
    format!(
        "· rows {}–{} of {listed_lanes} ({keys}) ",
        shown.start + 1,
        shown.end
    )
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
            observed_rate: lane.observed_hit_rate(),
            slot_rates: (0..slot_count)
                .map(|index| lane.slot_hit_rate(index))
                .collect(),
            slot_lower_bounds: slot_lower_bounds(snap, lane),
            opt_slot_rates: (0..slot_count)
                .map(|index| lane.opt_slot_hit_rate(index))
                .collect(),
            policy_gaps: (0..slot_count)
                .map(|index| lane.policy_gap_rate(index))
                .collect(),
            infinite_rate: lane.infinite_hit_rate(),
            unique_blocks: lane.unique_blocks,
            kv_bytes: lane.unique_kv_bytes(),
            horizon_lower_bound: lane.is_lower_bound(None),
        })
        .collect();
    if snap.lanes.len() > 1 {
        let totals = &snap.totals;
        rows.push(RowValues {
            instance: "total".to_owned(),
            requests: totals.requests,
            input_tokens: totals.input_tokens,
            observed_rate: totals.observed_hit_rate(),
            slot_rates: (0..slot_count)
                .map(|index| totals.slot_hit_rate(index))
                .collect(),
            slot_lower_bounds: totals.slot_lower_bounds.clone(),
            opt_slot_rates: (0..slot_count)
                .map(|index| totals.opt_slot_hit_rate(index))
                .collect(),
            policy_gaps: (0..slot_count)
                .map(|index| totals.policy_gap_rate(index))
                .collect(),
            infinite_rate: totals.infinite_hit_rate(),
            unique_blocks: totals.unique_blocks,
            kv_bytes: totals.unique_kv_bytes,
            horizon_lower_bound: totals.infinite_is_lower_bound,
        });
    }
    rows
}

/// Per slot, whether `lane`'s hits there are only a lower bound (its capacity at the slot,
/// N × for the shared pool, lies above its memory horizon).
fn slot_lower_bounds(
    snap: &LiveSnapshot,
    lane: &litehit_live::snapshot::LaneSnapshot,
) -> Vec<bool> {
    (0..snap.slots.len())
        .map(|index| lane.slot_is_lower_bound(index))
        .collect()
}

/// The shared pool's row, `NAME (shared)`, at N × each slot (N = the instances): the same
/// total capacity as the totals row's N caches of the slot each.
fn pool_row_values(snap: &LiveSnapshot) -> Option<RowValues> {
    let pool = snap.pool.as_ref()?;
    let slot_count = snap.slots.len();
    Some(RowValues {
        instance: format!("{}{POOL_SUFFIX}", pool.instance_id),
        requests: pool.requests,
        input_tokens: pool.input_tokens,
        observed_rate: pool.observed_hit_rate(),
        slot_rates: (0..slot_count)
            .map(|index| pool.slot_hit_rate(index))
            .collect(),
        // The pool's cell is the pool at N × C: N × C meets the horizon.
        slot_lower_bounds: slot_lower_bounds(snap, pool),
        opt_slot_rates: (0..slot_count)
            .map(|index| pool.opt_slot_hit_rate(index))
            .collect(),
        policy_gaps: (0..slot_count)
            .map(|index| pool.policy_gap_rate(index))
            .collect(),
        infinite_rate: pool.infinite_hit_rate(),
        unique_blocks: pool.unique_blocks,
        kv_bytes: pool.unique_kv_bytes(),
        horizon_lower_bound: pool.is_lower_bound(None),
    })
}

/// The engine's own hit rate, beside LiteHit's, once a row said it (`cached_tokens`).
fn observed_column(snap: &LiveSnapshot) -> Option<Column> {
    let observed = snap.lanes.iter().chain(&snap.pool);
    observed
        .into_iter()
        .any(|lane| lane.observed.requests > 0)
        .then(|| Column {
            header: "observed".to_owned(),
            width: 8,
            drop_rank: 22,
            kind: ColumnKind::Observed,
        })
}

/// After the pool's name in the fleet table.
const POOL_SUFFIX: &str = " (shared)";

/// The unique-blocks column's header: `alive blk` under a TTL, whose expired blocks leave
/// the count, else `unique blk`.
fn unique_header(snap: &LiveSnapshot) -> &'static str {
    if snap.has_ttl() {
        "alive blk"
    } else {
        "unique blk"
    }
}

/// Display width of `text` in terminal columns (a CJK character takes two).
fn text_width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

fn columns(snap: &LiveSnapshot, view: &App, rows: &[RowValues]) -> Vec<Column> {
    let longest_instance = snap
        .lanes
        .iter()
        .map(|lane| text_width(&lane.instance_id))
        .chain(
            snap.pool
                .iter()
                .map(|pool| text_width(&pool.instance_id) + text_width(POOL_SUFFIX)),
        )
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
    columns.extend(observed_column(snap));
    for (index, slot) in snap.slots.iter().enumerate() {
        let header = format::slot(slot);
        let distance = u16::try_from(index.abs_diff(view.selected_slot)).unwrap_or(u16::MAX);
        columns.push(Column {
            width: u16::try_from(text_width(&header))
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
    columns.extend(opt_columns(snap, view));
    columns.extend([
        Column {
            // `∞ H=…` under a memory horizon: the ∞ bound is then a lower bound (`≥`).
            header: format::infinite_label(snap),
            width: 7,
            drop_rank: 20,
            kind: ColumnKind::Infinite,
        },
        Column {
            // Under a TTL the count is of blocks still alive (expired ones leave it).
            header: unique_header(snap).to_owned(),
            width: 10,
            drop_rank: 50,
            kind: ColumnKind::UniqueBlocks,
        },
        Column {
            header: if snap.has_ttl() {
                "alive KV"
            } else {
                "KV bytes"
            }
            .to_owned(),
            width: 10,
            drop_rank: 70,
            kind: ColumnKind::KvBytes,
        },
    ]);
    // A number column is as wide as its widest value: a value is never cut to fit (a column
    // that does not fit is dropped whole by `fit_columns`).
    for column in &mut columns {
        if column.kind == ColumnKind::Instance {
            continue;
        }
        let widest = rows
            .iter()
            .map(|row| text_width(&row.cell(column.kind)))
            .chain([text_width(&column.header)])
            .max()
            .unwrap_or(0);
        column.width = column.width.max(u16::try_from(widest).unwrap_or(u16::MAX));
    }
    columns
}

/// With OPT (`watch --policy lru,opt`): OPT's rate at the selected slot and the policy gap,
/// right after the slots; dropped after the far slots, before ∞. None without OPT.
fn opt_columns(snap: &LiveSnapshot, view: &App) -> Vec<Column> {
    let index = view.selected_slot;
    match snap.slots.get(index) {
        Some(slot) if snap.totals.opt_slot_hit_tokens.is_some() => vec![
            Column {
                header: format!("OPT {}", format::capacity(slot.capacity)),
                width: 7,
                drop_rank: 22,
                kind: ColumnKind::OptSlot(index),
            },
            Column {
                header: "OPT−LRU".to_owned(),
                width: 7,
                drop_rank: 25,
                kind: ColumnKind::PolicyGap(index),
            },
        ],
        _ => Vec::new(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use litehit_core::projector::Capacity;
    use litehit_live::snapshot::{LaneSnapshot, Slot};
    use proptest::prelude::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    /// The drawn rows of the panel, as text.
    fn drawn_lines(snap: &LiveSnapshot, view: &App, width: u16, height: u16) -> Vec<String> {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test backend");
        terminal
            .draw(|frame| render(frame, frame.area(), snap, view))
            .expect("drawn");
        let buffer = terminal.backend().buffer();
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect()
    }

    /// Whether `line` holds every one of `cells`, whole and in this order.
    fn holds_in_order(line: &str, cells: &[String]) -> bool {
        let mut rest = line;
        for cell in cells {
            match rest.find(cell.as_str()) {
                Some(at) => rest = &rest[at + cell.len()..],
                None => return false,
            }
        }
        true
    }

    /// A byte count, often one of 1000–1023.99 of a binary unit (where cutting used to bite).
    fn kv_bytes() -> impl Strategy<Value = (u64, u64)> {
        let band = (1u32..5, 1000.0f64..1024.0).prop_map(|(unit, value)| {
            let bytes = value * 1024f64.powi(i32::try_from(unit).expect("small"));
            // As unique blocks × block bytes with a block of 1 KiB.
            #[expect(clippy::cast_possible_truncation, reason = "a test value below 2^62")]
            #[expect(clippy::cast_sign_loss, reason = "positive")]
            let blocks = (bytes / 1024.0) as u64;
            (blocks, 1024)
        });
        prop_oneof![band, (0u64..1 << 40, 1u64..1 << 22)]
    }

    fn lane_strategy() -> impl Strategy<Value = LaneSnapshot> {
        (
            0u64..1 << 50,
            0u64..1 << 50,
            kv_bytes(),
            prop::collection::vec(0u64..1 << 40, 2),
            0u64..1 << 40,
        )
            .prop_map(
                |(
                    requests,
                    input_tokens,
                    (unique_blocks, block_bytes),
                    slot_hit_blocks,
                    infinite,
                )| {
                    LaneSnapshot {
                        block_size_tokens: 16,
                        block_bytes,
                        requests,
                        input_tokens,
                        unique_blocks,
                        slot_hit_blocks,
                        infinite_hit_blocks: infinite,
                        ..LaneSnapshot::default()
                    }
                },
            )
    }

    proptest! {
        /// Every number the table prints is the formatter's full text: a column that does not
        /// fit is dropped whole, never cut (`003.41 MiB` for 1003.41 MiB was).
        #[test]
        fn no_number_cell_is_cut(
            lanes in prop::collection::vec(lane_strategy(), 1..5),
            width in 20u16..200,
        ) {
            let mut snap = LiveSnapshot {
                slots: vec![
                    Slot { id: 1, capacity: Capacity::Gigabytes(40.0) },
                    Slot { id: 2, capacity: Capacity::Blocks(1000) },
                ],
                lanes,
                ..LiveSnapshot::default()
            }.finished();
            for (index, lane) in snap.lanes.iter_mut().enumerate() {
                lane.instance_id = format!("lane-{index}");
            }
            let view = App::default();
            let rows = row_values(&snap);
            let kept = fit_columns(columns(&snap, &view, &rows), width.saturating_sub(2));
            let lines = drawn_lines(&snap, &view, width, 12);
            let mut checked = 0;
            for row in &rows {
                let Some(line) = lines.iter().find(|line| line.contains(&format!(" {} ", row.instance)))
                else {
                    continue;
                };
                let cells: Vec<String> = kept
                    .iter()
                    .filter(|column| column.kind != ColumnKind::Instance)
                    .map(|column| row.cell(column.kind))
                    .collect();
                prop_assert!(holds_in_order(line, &cells), "{line:?} lacks one of {cells:?}");
                checked += 1;
            }
            prop_assert!(checked > 0, "no row found in {lines:#?}");
        }
    }

    #[test]
    fn the_paging_hint_names_the_keys_that_lead_somewhere() {
        use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
        let snap = LiveSnapshot {
            lanes: (0..30)
                .map(|index| LaneSnapshot {
                    instance_id: format!("n{index:02}"),
                    requests: 1,
                    input_tokens: 16,
                    ..LaneSnapshot::default()
                })
                .collect(),
            ..LiveSnapshot::default()
        }
        .finished();
        let mut view = App::default();
        view.observe(&snap);
        let title = |view: &App| drawn_lines(&snap, view, 120, 10)[0].clone();
        let first = title(&view);
        assert!(first.contains("(↑↓ PgDn)"), "{first}");
        view.handle_key(KeyEvent::new(KeyCode::PageDown, KeyModifiers::NONE));
        view.handle_key(KeyEvent::new(KeyCode::PageDown, KeyModifiers::NONE));
        let middle = title(&view);
        assert!(middle.contains("(↑↓ PgUp PgDn)"), "{middle}");
        view.handle_key(KeyEvent::new(KeyCode::Char('G'), KeyModifiers::NONE));
        let last = title(&view);
        assert!(last.contains("(↑↓ PgUp)"), "the last page: {last}");
    }

    #[test]
    fn kv_bytes_of_a_thousand_mib_is_printed_whole() {
        let snap = LiveSnapshot {
            lanes: vec![LaneSnapshot {
                instance_id: "a".to_owned(),
                block_bytes: 1 << 20,
                unique_blocks: 1003,
                requests: 1,
                input_tokens: 16,
                ..LaneSnapshot::default()
            }],
            ..LiveSnapshot::default()
        }
        .finished();
        let lines = drawn_lines(&snap, &App::default(), 120, 6);
        assert!(
            lines.iter().any(|line| line.contains("1003.00 MiB")),
            "{lines:#?}"
        );
    }
}
