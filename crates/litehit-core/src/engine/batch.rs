//! Batches of events: routing and normalization run serially in input order, each lane then
//! replays its share of the batch (lanes on their own threads when several lanes have enough
//! work), and rows are handed out in input order (event by event, lanes in routing order).
//!
//! Lanes are independent cache states, so replaying them in parallel cannot change a fact; the
//! order of rows is fixed by the plan, so output is identical for any thread count.

use std::ops::Range;

use crate::engine::Lane;
use crate::facts::{HitCurveSegment, RequestFact};
use crate::hitcore::OutOfMemory;

/// Below this many block keys in a batch, lanes replay on the calling thread (spawning
/// threads would cost more than it saves).
pub(crate) const PARALLEL_MIN_KEYS: usize = 1 << 14;

/// One request for one lane.
#[derive(Debug, Clone)]
pub(crate) struct WorkItem {
    pub(crate) keys: Range<usize>,
    pub(crate) input_token_len: u64,
    /// Clamped (non-decreasing) time for the core.
    pub(crate) core_timestamp_ns: i64,
}

/// One facts row to hand out, in input order.
#[derive(Debug, Clone)]
pub(crate) struct Emit {
    pub(crate) trace_id: Range<usize>,
    pub(crate) lane_index: usize,
    /// Index into the lane's work items (and its facts).
    pub(crate) item_index: usize,
    /// The row's own timestamp (what the facts file records).
    pub(crate) timestamp_ns: i64,
    pub(crate) input_token_len: u64,
}

/// Curves of one policy a lane produced for its items, flattened.
#[derive(Debug, Clone, Default)]
pub(crate) struct Curves {
    segments: Vec<HitCurveSegment>,
    /// `ends[i]` = end of item `i`'s segments.
    ends: Vec<usize>,
}

impl Curves {
    pub(crate) fn curve(&self, item_index: usize) -> &[HitCurveSegment] {
        let start = item_index
            .checked_sub(1)
            .map_or(0, |previous| self.ends[previous]);
        &self.segments[start..self.ends[item_index]]
    }

    fn push(&mut self, fact: &RequestFact) {
        self.segments.extend_from_slice(&fact.hit_curve);
        self.ends.push(self.segments.len());
    }

    fn clear(&mut self) {
        self.segments.clear();
        self.ends.clear();
    }
}

/// Facts a lane produced for its items: LRU curves and OPT curves (each empty when its policy
/// is off).
#[derive(Debug, Clone, Default)]
pub(crate) struct LaneFacts {
    pub(crate) lru: Curves,
    pub(crate) opt: Curves,
}

impl LaneFacts {
    /// Items replayed (fewer than planned when the lane ran out of memory).
    pub(crate) fn replayed_items(&self) -> usize {
        self.lru.ends.len()
    }
}

/// Reused buffers of one batch.
#[derive(Debug, Clone, Default)]
pub(crate) struct Batch {
    /// Normalized keys of every planned request, back to back.
    pub(crate) keys: Vec<i64>,
    /// Trace ids of planned rows, back to back.
    pub(crate) trace_ids: String,
    /// Work per lane index.
    pub(crate) items: Vec<Vec<WorkItem>>,
    pub(crate) facts: Vec<LaneFacts>,
    pub(crate) emits: Vec<Emit>,
}

impl Batch {
    pub(crate) fn clear(&mut self, lane_count: usize) {
        self.keys.clear();
        self.trace_ids.clear();
        self.emits.clear();
        self.items.resize_with(lane_count, Vec::new);
        self.facts.resize_with(lane_count, LaneFacts::default);
        for items in &mut self.items {
            items.clear();
        }
        for facts in &mut self.facts {
            facts.lru.clear();
            facts.opt.clear();
        }
    }

    /// Makes room for lanes created while planning.
    pub(crate) fn ensure_lanes(&mut self, lane_count: usize) {
        if self.items.len() < lane_count {
            self.items.resize_with(lane_count, Vec::new);
            self.facts.resize_with(lane_count, LaneFacts::default);
        }
    }

    /// Replays every lane's items; lanes run on their own threads when it pays. A lane that
    /// runs out of memory stops there: its facts cover the items before, and the first such
    /// failure (in lane order) is returned.
    pub(crate) fn replay(&mut self, lanes: &mut [Lane]) -> Result<(), OutOfMemory> {
        let Self {
            keys, items, facts, ..
        } = self;
        let busy_lanes = items.iter().filter(|i| !i.is_empty()).count();
        let work = lanes
            .iter_mut()
            .zip(items.iter())
            .zip(facts.iter_mut())
            .filter(|((_, items), _)| !items.is_empty());
        if busy_lanes < 2 || keys.len() < PARALLEL_MIN_KEYS {
            let mut first_failure = Ok(());
            for ((lane, items), facts) in work {
                let outcome = replay_lane(lane, items, keys, facts);
                if first_failure.is_ok() {
                    first_failure = outcome;
                }
            }
            return first_failure;
        }
        let keys = &*keys;
        std::thread::scope(|scope| {
            let mut work = work;
            // The calling thread takes the first lane; every other lane gets a thread.
            let first = work.next();
            // A lane whose thread cannot start (out of memory or threads) replays on this
            // thread instead: the same facts, only later. Its work is sent once the thread
            // is running, so a failed spawn hands it back.
            let runs: Vec<_> = work
                .map(|lane_work| {
                    let (sender, receiver) = std::sync::mpsc::sync_channel::<LaneWork<'_>>(1);
                    let spawned = std::thread::Builder::new()
                        .name("litehit-lane".into())
                        .spawn_scoped(scope, move || {
                            let ((lane, items), facts) = receiver
                                .recv()
                                .expect("the work is sent as soon as the thread exists");
                            replay_lane(lane, items, keys, facts)
                        });
                    match spawned {
                        Ok(handle) => {
                            sender
                                .send(lane_work)
                                .expect("the lane thread waits for its work");
                            LaneRun::Thread(handle)
                        }
                        Err(_) => LaneRun::Here(lane_work),
                    }
                })
                .collect();
            let mut first_failure = Ok(());
            if let Some(((lane, items), facts)) = first {
                first_failure = replay_lane(lane, items, keys, facts);
            }
            for run in runs {
                let outcome = match run {
                    LaneRun::Thread(handle) => handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    LaneRun::Here(((lane, items), facts)) => replay_lane(lane, items, keys, facts),
                };
                if first_failure.is_ok() {
                    first_failure = outcome;
                }
            }
            first_failure
        })
    }
}

/// One lane's work in a batch: the lane, its items and where its facts go.
type LaneWork<'a> = ((&'a mut Lane, &'a Vec<WorkItem>), &'a mut LaneFacts);

/// A lane's share of a batch: on its own thread, or on the calling one when the thread could
/// not start.
enum LaneRun<'scope, W> {
    Thread(std::thread::ScopedJoinHandle<'scope, Result<(), OutOfMemory>>),
    Here(W),
}

fn replay_lane(
    lane: &mut Lane,
    items: &[WorkItem],
    keys: &[i64],
    facts: &mut LaneFacts,
) -> Result<(), OutOfMemory> {
    let (mut fact, mut opt_fact) = (RequestFact::default(), RequestFact::default());
    for (index, item) in items.iter().enumerate() {
        if let Some(next) = items.get(index + 1) {
            lane.prefetch_next(&keys[next.keys.clone()]);
        }
        lane.replay(
            &keys[item.keys.clone()],
            item.input_token_len,
            item.core_timestamp_ns,
            &mut fact,
            &mut opt_fact,
        )?;
        facts.lru.push(&fact);
        facts.opt.push(&opt_fact);
    }
    Ok(())
}
