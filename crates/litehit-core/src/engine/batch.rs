//! Batches of events: routing and normalization run serially in input order, each lane then
//! replays its share of the batch (lanes on threads of their own when several lanes have
//! enough work, at most [`Batch::max_threads`] at once, the calling thread included), and rows
//! are handed out in input order (event by event, lanes in routing order).
//!
//! Lanes are independent cache states, so replaying them in parallel cannot change a fact; the
//! order of rows is fixed by the plan, so output is identical for any thread count.

use std::num::NonZeroUsize;
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
    /// The prompt's keys, then its output's (`--cache-output`).
    pub(crate) keys: Range<usize>,
    /// How many leading keys are the prompt's: the hit curve counts only those.
    pub(crate) prompt_blocks: usize,
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
    /// The engine's own cached tokens the line said (`cached_tokens`).
    pub(crate) observed_cached_tokens: Option<u64>,
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
    /// The most threads replaying lanes at once, the calling one included
    /// ([`crate::engine::Engine::with_threads`]); `None`: [`crate::threads::available`],
    /// resolved at the first parallel replay.
    pub(crate) max_threads: Option<NonZeroUsize>,
    /// The most threads that replayed lanes at once so far, the calling one included.
    pub(crate) peak_threads: usize,
}

/// Lane positions `0..lanes` dealt round-robin to at most `threads` groups, one per thread:
/// every lane in exactly one group, in lane order within it.
pub(crate) fn thread_groups(lanes: usize, threads: NonZeroUsize) -> Vec<Vec<usize>> {
    let groups = threads.get().min(lanes);
    let mut dealt = vec![Vec::new(); groups];
    for lane in 0..lanes {
        dealt[lane % groups].push(lane);
    }
    dealt
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

    /// Replays every lane's items; lanes run on threads of their own when it pays, at most
    /// [`Self::max_threads`] at once. A lane that runs out of memory stops there: its facts
    /// cover the items before, and the first such failure (in lane order) is returned.
    pub(crate) fn replay(&mut self, lanes: &mut [Lane]) -> Result<(), OutOfMemory> {
        let busy_lanes = self.items.iter().filter(|i| !i.is_empty()).count();
        let threads = if busy_lanes < 2 || self.keys.len() < PARALLEL_MIN_KEYS {
            NonZeroUsize::MIN
        } else {
            // An invalid `LITEHIT_THREADS` (which the commands refuse at start) caps the
            // lanes to the calling thread: a cap is never exceeded for want of a number.
            *self
                .max_threads
                .get_or_insert_with(|| crate::threads::available(None).unwrap_or(NonZeroUsize::MIN))
        };
        let Self {
            keys, items, facts, ..
        } = self;
        let work: Vec<LaneWork<'_>> = lanes
            .iter_mut()
            .zip(items.iter())
            .zip(facts.iter_mut())
            .filter(|((_, items), _)| !items.is_empty())
            .collect();
        let keys = &*keys;
        let mut work: Vec<Option<LaneWork<'_>>> = work.into_iter().map(Some).collect();
        let groups: Vec<LaneGroup<'_>> = thread_groups(work.len(), threads)
            .into_iter()
            .map(|group| {
                group
                    .into_iter()
                    .map(|lane| (lane, work[lane].take().expect("each lane in one group")))
                    .collect()
            })
            .collect();
        let replay_group = |group: LaneGroup<'_>| -> Vec<(usize, Outcome)> {
            group
                .into_iter()
                .map(|(lane, ((state, items), facts))| {
                    (lane, replay_lane(state, items, keys, facts))
                })
                .collect()
        };
        let (mut outcomes, threads_used) = std::thread::scope(|scope| {
            let mut groups = groups.into_iter();
            // The calling thread takes the first group; every other group gets a thread.
            let first = groups.next();
            // A group whose thread cannot start (out of memory or threads) replays on this
            // thread instead: the same facts, only later. Its work is sent once the thread
            // is running, so a failed spawn hands it back.
            let runs: Vec<_> = groups
                .map(|group| {
                    let (sender, receiver) = std::sync::mpsc::sync_channel::<LaneGroup<'_>>(1);
                    let spawned = std::thread::Builder::new()
                        .name("litehit-lane".into())
                        .spawn_scoped(scope, move || {
                            let group = receiver
                                .recv()
                                .expect("the work is sent as soon as the thread exists");
                            replay_group(group)
                        });
                    match spawned {
                        Ok(handle) => {
                            sender
                                .send(group)
                                .expect("the lane thread waits for its work");
                            GroupRun::Thread(handle)
                        }
                        Err(_) => GroupRun::Here(group),
                    }
                })
                .collect();
            let threads_used = 1 + runs
                .iter()
                .filter(|run| matches!(run, GroupRun::Thread(_)))
                .count();
            let mut outcomes = first.map(replay_group).unwrap_or_default();
            for run in runs {
                outcomes.extend(match run {
                    GroupRun::Thread(handle) => handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    GroupRun::Here(group) => replay_group(group),
                });
            }
            (outcomes, threads_used)
        });
        self.peak_threads = self.peak_threads.max(threads_used);
        outcomes.sort_unstable_by_key(|&(lane, _)| lane);
        outcomes
            .into_iter()
            .map(|(_, outcome)| outcome)
            .find(Result::is_err)
            .unwrap_or(Ok(()))
    }
}

/// One lane's work in a batch: the lane, its items and where its facts go.
type LaneWork<'a> = ((&'a mut Lane, &'a Vec<WorkItem>), &'a mut LaneFacts);

/// One thread's lanes, each with its position among the busy lanes (for the lane order of
/// the outcomes).
type LaneGroup<'a> = Vec<(usize, LaneWork<'a>)>;

/// How one lane's replay ended.
type Outcome = Result<(), OutOfMemory>;

/// A group of lanes' share of a batch: on a thread of its own, or on the calling one when the
/// thread could not start.
enum GroupRun<'scope, W> {
    Thread(std::thread::ScopedJoinHandle<'scope, Vec<(usize, Outcome)>>),
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
            item.prompt_blocks,
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
