//! The timeline: hit rates per window of trace time, for the chart of recent windows.
//!
//! Holds no counters of its own: when an event opens a new window it marks every lane's
//! cumulative answers (input tokens, hit blocks per slot and at infinity, from the engine's
//! capacity-axis accumulators), and a window's figures are now minus that mark. So a window
//! is as exact as the totals. About [`MAX_WINDOWS`] closed windows are kept: when the trace
//! outgrows them, neighbouring pairs are merged into windows twice as wide (sums of the same
//! integers, so still exact), and the chart always covers the trace from its first event. A
//! slot added mid-window has no figure for the windows before it (`None`, never a guess).
//!
//! The shared pool lane (`watch --pool`) is marked beside the instances, at N × each slot
//! (N = the instances, as the pool's row): its windows are [`Window::pool`], never in the
//! instances' `lanes` (so never in their Σ). A window in which an instance is born changes N:
//! its start was marked at the old N, so the pool has no slot figure for it (the ∞ bound
//! has one); a pool with no request yet has none to change, so the first window has one.
//!
//! A lane's cumulative hit blocks at a slot are [`live_hit_blocks`], projected with
//! [`block_bytes_of`]; the snapshot's lanes take their block bytes from here too.

use std::collections::VecDeque;

use litehit_core::engine::Lane;
use litehit_core::projector::Capacity;

use crate::snapshot::{LaneWindow, PoolWindow, Slot, Timeline, Window};

/// Closed time windows kept for the timeline.
const MAX_WINDOWS: usize = 240;

/// Cumulative hit blocks of a live lane at `shared_by` × any capacity (the live engine always
/// keeps the capacity-axis accumulators, so every capacity has an answer), a GB capacity
/// converted to blocks by the projector with `assumed_block_bytes` when set (`b`), else the
/// lane's own. `shared_by` is 1 for an instance, N for the shared pool (the fleet's total).
pub(super) fn live_hit_blocks(
    lane: &Lane,
    capacity: Capacity,
    assumed_block_bytes: Option<u64>,
    shared_by: u64,
) -> u64 {
    let in_blocks = match crate::snapshot::slot_blocks(
        capacity,
        block_bytes_of(lane, assumed_block_bytes),
        shared_by,
    ) {
        Some(blocks) => Capacity::Blocks(blocks),
        None => Capacity::Infinite,
    };
    lane.hit_blocks_at(in_blocks)
        .expect("the live engine keeps capacity curves")
}

/// The KV bytes per block a lane is projected with: the live assumption, else its own.
pub(super) fn block_bytes_of(lane: &Lane, assumed_block_bytes: Option<u64>) -> u64 {
    assumed_block_bytes.unwrap_or(lane.spec().block_bytes)
}

/// Cumulative numbers of one lane at a window's start.
#[derive(Debug, Clone)]
struct LaneMark {
    input_tokens: u64,
    infinite_hit_blocks: u64,
    /// `None` for a slot added after the window opened.
    slot_hit_blocks: Vec<Option<u64>>,
    /// The multiple of each slot's blocks the slot marks are at: 1 for an instance, N for the
    /// shared pool.
    shared_by: u64,
    /// No request yet: zero hits at every capacity, so the marks hold at any `shared_by`.
    empty: bool,
}

impl LaneMark {
    fn of(lane: &Lane, slots: &[Slot], assumed: Option<u64>, shared_by: u64) -> Self {
        Self {
            input_tokens: lane.input_tokens(),
            infinite_hit_blocks: lane.infinite_hit_blocks(),
            slot_hit_blocks: slots
                .iter()
                .map(|slot| Some(live_hit_blocks(lane, slot.capacity, assumed, shared_by)))
                .collect(),
            shared_by,
            empty: lane.requests() == 0,
        }
    }

    /// The mark of a lane born inside the window: zero everywhere.
    fn born_inside(slot_count: usize) -> Self {
        Self {
            input_tokens: 0,
            infinite_hit_blocks: 0,
            slot_hit_blocks: vec![Some(0); slot_count],
            shared_by: 1,
            empty: true,
        }
    }

    /// The window so far: now minus this mark, the slots at `shared_by` × their blocks (no
    /// figure when the marks are at another multiple).
    fn window(
        &self,
        lane: &Lane,
        slots: &[Slot],
        assumed: Option<u64>,
        shared_by: u64,
    ) -> LaneWindow {
        let block_size_tokens = lane.spec().block_size_tokens;
        let marks_hold = self.empty || self.shared_by == shared_by;
        LaneWindow {
            input_tokens: lane.input_tokens() - self.input_tokens,
            slot_hit_tokens: slots
                .iter()
                .zip(&self.slot_hit_blocks)
                .map(|(slot, start)| {
                    start.filter(|_| marks_hold).map(|start| {
                        (live_hit_blocks(lane, slot.capacity, assumed, shared_by) - start)
                            * block_size_tokens
                    })
                })
                .collect(),
            infinite_hit_tokens: (lane.infinite_hit_blocks() - self.infinite_hit_blocks)
                * block_size_tokens,
        }
    }
}

/// The open window: its index and start marks.
#[derive(Debug)]
struct OpenWindow {
    index: i64,
    /// Per instance lane (lanes born inside the window have none).
    marks: Vec<LaneMark>,
    /// The shared pool lane's, with `--pool`.
    pool: Option<LaneMark>,
}

impl OpenWindow {
    fn marks_mut(&mut self) -> impl Iterator<Item = &mut LaneMark> {
        self.marks.iter_mut().chain(self.pool.as_mut())
    }
}

/// Every lane's part of `window`, the pool's too.
fn lane_windows_mut(window: &mut Window) -> impl Iterator<Item = &mut LaneWindow> {
    window
        .lanes
        .iter_mut()
        .chain(window.pool.as_mut().map(|pool| &mut pool.lane))
}

/// Hit rates per window of trace time, from differences of cumulative accumulator answers.
#[derive(Debug, Default)]
pub(super) struct TimelineBuilder {
    window_ns: i64,
    /// The first event's trace time.
    origin_ns: Option<i64>,
    open: Option<OpenWindow>,
    closed: VecDeque<Window>,
}

impl TimelineBuilder {
    /// No windows yet; each is `window_ns` of trace time wide.
    pub(super) fn new(window_ns: i64) -> Self {
        Self {
            window_ns,
            ..Self::default()
        }
    }

    /// Called before an event at `timestamp_ns` (already clamped) is processed; `lanes` are
    /// the instances', `pool` the shared pool lane (`--pool`).
    pub(super) fn before_event(
        &mut self,
        timestamp_ns: i64,
        lanes: &[Lane],
        pool: Option<&Lane>,
        slots: &[Slot],
        assumed: Option<u64>,
    ) {
        self.origin_ns.get_or_insert(timestamp_ns);
        let index = timestamp_ns.div_euclid(self.window_ns.max(1));
        match &self.open {
            Some(open) if open.index == index => {}
            _ => {
                if let Some(window) = self.current(lanes, pool, slots, false, assumed) {
                    self.closed.push_back(window);
                }
                let marks = lanes
                    .iter()
                    .map(|lane| LaneMark::of(lane, slots, assumed, 1))
                    .collect();
                let pool = pool.map(|pool| LaneMark::of(pool, slots, assumed, shared_by(lanes)));
                self.open = Some(OpenWindow { index, marks, pool });
                // Merging needs the open window to start a double-width one (an even index).
                // An odd one waits for the next window; only if that never comes (a window
                // limit of twice the kept count) are the oldest windows dropped.
                if self.closed.len() >= MAX_WINDOWS && index.rem_euclid(2) == 0 {
                    self.merge_pairs();
                }
                while self.closed.len() > 2 * MAX_WINDOWS {
                    self.closed.pop_front();
                }
            }
        }
    }

    /// Doubles the window width: each pair of closed windows inside one double-width window
    /// becomes one (its figures the sums), and the open window, which starts at an even index,
    /// is the start of the next one.
    fn merge_pairs(&mut self) {
        let wide_ns = self.window_ns.saturating_mul(2);
        let mut merged: VecDeque<Window> = VecDeque::with_capacity(self.closed.len() / 2 + 1);
        for window in self.closed.drain(..) {
            let start_ns = window.start_ns.div_euclid(wide_ns).saturating_mul(wide_ns);
            match merged.back_mut() {
                Some(last) if last.start_ns == start_ns => add_window(last, &window),
                _ => merged.push_back(Window { start_ns, ..window }),
            }
        }
        self.closed = merged;
        self.window_ns = wide_ns;
        if let Some(open) = &mut self.open {
            open.index = open.index.div_euclid(2);
        }
    }

    /// The open window so far (marks of lanes born inside it are zero).
    fn current(
        &self,
        lanes: &[Lane],
        pool: Option<&Lane>,
        slots: &[Slot],
        open: bool,
        assumed: Option<u64>,
    ) -> Option<Window> {
        let window = self.open.as_ref()?;
        let born_inside = LaneMark::born_inside(slots.len());
        let shared_by = shared_by(lanes);
        Some(Window {
            start_ns: window.index.saturating_mul(self.window_ns),
            lanes: lanes
                .iter()
                .enumerate()
                .map(|(lane_index, lane)| {
                    window
                        .marks
                        .get(lane_index)
                        .unwrap_or(&born_inside)
                        .window(lane, slots, assumed, 1)
                })
                .collect(),
            pool: pool.map(|pool| PoolWindow {
                shared_by,
                lane: window
                    .pool
                    .as_ref()
                    .unwrap_or(&born_inside)
                    .window(pool, slots, assumed, shared_by),
            }),
            open,
        })
    }

    /// A slot was inserted at `index`: earlier windows have no figure for it.
    pub(super) fn add_slot(&mut self, index: usize) {
        if let Some(open) = &mut self.open {
            for mark in open.marks_mut() {
                mark.slot_hit_blocks
                    .insert(index.min(mark.slot_hit_blocks.len()), None);
            }
        }
        for window in &mut self.closed {
            for lane in lane_windows_mut(window) {
                lane.slot_hit_tokens
                    .insert(index.min(lane.slot_hit_tokens.len()), None);
            }
        }
    }

    pub(super) fn remove_slot(&mut self, index: usize) {
        if let Some(open) = &mut self.open {
            for mark in open.marks_mut() {
                if index < mark.slot_hit_blocks.len() {
                    mark.slot_hit_blocks.remove(index);
                }
            }
        }
        for window in &mut self.closed {
            for lane in lane_windows_mut(window) {
                if index < lane.slot_hit_tokens.len() {
                    lane.slot_hit_tokens.remove(index);
                }
            }
        }
    }

    /// The block bytes assumption changed: the slots at `indices` (the GB ones) mean other
    /// block counts now, so no window so far has a figure for them (`None`, never a mix).
    pub(super) fn forget_slots(&mut self, indices: &[usize]) {
        if let Some(open) = &mut self.open {
            for mark in open.marks_mut() {
                for &index in indices {
                    if let Some(figure) = mark.slot_hit_blocks.get_mut(index) {
                        *figure = None;
                    }
                }
            }
        }
        for window in &mut self.closed {
            for lane in lane_windows_mut(window) {
                for &index in indices {
                    if let Some(figure) = lane.slot_hit_tokens.get_mut(index) {
                        *figure = None;
                    }
                }
            }
        }
    }

    /// The slots were re-ordered: new slot `i` is old slot `order[i]`.
    pub(super) fn reorder_slots(&mut self, order: &[usize]) {
        fn permute<T: Copy>(values: &mut Vec<T>, order: &[usize]) {
            if order.iter().all(|&index| index < values.len()) {
                *values = order.iter().map(|&index| values[index]).collect();
            }
        }
        if let Some(open) = &mut self.open {
            for mark in open.marks_mut() {
                permute(&mut mark.slot_hit_blocks, order);
            }
        }
        for window in &mut self.closed {
            for lane in lane_windows_mut(window) {
                permute(&mut lane.slot_hit_tokens, order);
            }
        }
    }

    pub(super) fn snapshot(
        &self,
        lanes: &[Lane],
        pool: Option<&Lane>,
        slots: &[Slot],
        assumed: Option<u64>,
    ) -> Timeline {
        let mut windows: Vec<Window> = self.closed.iter().cloned().collect();
        windows.extend(self.current(lanes, pool, slots, true, assumed));
        Timeline {
            window_ns: self.window_ns,
            origin_ns: self.origin_ns,
            windows,
        }
    }

    pub(super) fn memory_usage_bytes(&self) -> usize {
        self.closed
            .iter()
            .map(|window| {
                size_of::<Window>()
                    + size_of::<PoolWindow>() * usize::from(window.pool.is_some())
                    + window
                        .lanes
                        .iter()
                        .chain(window.pool.as_ref().map(|pool| &pool.lane))
                        .map(|lane| {
                            size_of::<LaneWindow>()
                                + lane.slot_hit_tokens.capacity() * size_of::<Option<u64>>()
                        })
                        .sum::<usize>()
            })
            .sum()
    }
}

/// N, the instances the shared pool is shared by (its slots are at N × each slot).
fn shared_by(lanes: &[Lane]) -> u64 {
    lanes.len() as u64
}

/// Adds `later`'s figures to `into` (a lane born in `later` is appended; a slot without a
/// figure in either has none in the sum, and so has the pool's where N differs: the two are
/// at other capacities).
fn add_window(into: &mut Window, later: &Window) {
    for (index, lane) in later.lanes.iter().enumerate() {
        match into.lanes.get_mut(index) {
            Some(sum) => add_lane_window(sum, lane),
            None => into.lanes.push(lane.clone()),
        }
    }
    match (&mut into.pool, &later.pool) {
        (Some(sum), Some(add)) => {
            if sum.shared_by != add.shared_by {
                sum.lane.slot_hit_tokens.fill(None);
                sum.shared_by = add.shared_by;
            }
            add_lane_window(&mut sum.lane, &add.lane);
        }
        (None, Some(add)) => into.pool = Some(add.clone()),
        (_, None) => {}
    }
}

fn add_lane_window(sum: &mut LaneWindow, lane: &LaneWindow) {
    sum.input_tokens += lane.input_tokens;
    sum.infinite_hit_tokens += lane.infinite_hit_tokens;
    for (total, add) in sum.slot_hit_tokens.iter_mut().zip(&lane.slot_hit_tokens) {
        *total = total.zip(*add).map(|(a, b)| a + b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool_window(shared_by: u64, slot: Option<u64>) -> Window {
        Window {
            start_ns: 0,
            lanes: Vec::new(),
            pool: Some(PoolWindow {
                shared_by,
                lane: LaneWindow {
                    input_tokens: 10,
                    slot_hit_tokens: vec![slot],
                    infinite_hit_tokens: 4,
                },
            }),
            open: false,
        }
    }

    #[test]
    fn merged_pool_windows_sum_at_one_n_and_have_no_slot_figure_across_two() {
        let mut same = pool_window(2, Some(3));
        add_window(&mut same, &pool_window(2, Some(5)));
        assert_eq!(same, {
            let mut want = pool_window(2, Some(8));
            let pool = want.pool.as_mut().unwrap();
            pool.lane.input_tokens = 20;
            pool.lane.infinite_hit_tokens = 8;
            want
        });
        let mut across = pool_window(2, Some(3));
        add_window(&mut across, &pool_window(3, Some(5)));
        let pool = across.pool.unwrap();
        assert_eq!(pool.shared_by, 3);
        assert_eq!(pool.lane.slot_hit_tokens, vec![None]);
        assert_eq!(
            (pool.lane.input_tokens, pool.lane.infinite_hit_tokens),
            (20, 8)
        );
    }
}
