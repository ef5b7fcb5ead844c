//! The capacity-axis accumulator: cumulative hit blocks of many facts at *any* capacity.
//!
//! Every segment `(s, r)` of every fact adds `clamp(C − s + 1, 0, r)` hit blocks at
//! capacity `C`: a ramp of slope 1 on `[s, s + r)`. The sum over all segments is therefore
//! `H(C) = Σ_{t ≤ C} Δ(t) · (C + 1 − t)` with `Δ(s) += 1`, `Δ(s + r) −= 1`. We keep `Δ` in a
//! dense array and, over fixed blocks of `BLOCK_CAPACITIES` capacities, two Fenwick trees of
//! `Σ Δ` and `Σ t·Δ`. Adding a segment is O(log U); `H(C)` is O(log U + BLOCK_CAPACITIES).
//!
//! All sums use wrapping `u64` arithmetic: the true `H(C)` is a non-negative integer below
//! `2^64`, and a result computed modulo `2^64` from the same terms is therefore exact even when
//! the intermediate `Σ t·Δ` would overflow.
//!
//! This is what lets the live monitor show a capacity slot added late with the exact
//! cumulative hit rate since the start of the trace, and draw the whole hits-vs-capacity curve.

use std::collections::BTreeMap;

use crate::facts::RequestFact;

/// Capacities per Fenwick leaf; a query scans at most this many dense cells.
const BLOCK_CAPACITIES: usize = 64;

/// Slope changes at capacities beyond this go to a sparse map instead of the dense array, so a
/// facts file with absurd thresholds cannot make us allocate gigabytes.
const MAX_DENSE_CAPACITY_BLOCKS: u64 = 1 << 28;

/// Cumulative hit blocks of every added fact, answerable at any capacity.
#[derive(Debug, Clone, Default)]
pub struct CapacityAxisAccumulator {
    /// `Δ(t)` for `t < slope_delta.len()`, as wrapping `u64`.
    slope_delta: Vec<u64>,
    /// Fenwick tree (1-based) over blocks of `Σ Δ(t)`.
    block_delta_tree: Vec<u64>,
    /// Fenwick tree (1-based) over blocks of `Σ t·Δ(t)`.
    block_weighted_tree: Vec<u64>,
    /// `Δ(t)` for `t >= slope_delta.len()`: capacities of `MAX_DENSE_CAPACITY_BLOCKS` and
    /// more, and smaller ones when the dense array could not grow to them.
    sparse_delta: BTreeMap<u64, u64>,
    infinite_hit_blocks: u64,
    fact_count: u64,
}

impl CapacityAxisAccumulator {
    /// An empty axis: every capacity answers 0 until facts are added.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one fact's hit curve.
    pub fn add_fact(&mut self, fact: &RequestFact) {
        for segment in &fact.hit_curve {
            if segment.run_length == 0 {
                continue;
            }
            self.add_slope_change(segment.start_required_blocks, 1);
            self.add_slope_change(segment.end_required_blocks(), u64::MAX); // −1, wrapping
            self.infinite_hit_blocks += segment.run_length;
        }
        self.fact_count += 1;
    }

    /// Grows, fallibly, whatever [`Self::add_fact`] would grow for `fact`, so that a
    /// following `add_fact(fact)` allocates nothing. On failure nothing changed, and the error
    /// says about how many bytes the growth asked for.
    pub fn try_reserve_for(&mut self, fact: &RequestFact) -> Result<(), GrowthFailed> {
        let deepest = fact
            .hit_curve
            .last()
            .map_or(0, |segment| segment.end_required_blocks());
        let dense_end = deepest.min(MAX_DENSE_CAPACITY_BLOCKS - 1);
        let needed = usize::try_from(dense_end).expect("dense capacities fit in usize") + 1;
        if needed > self.slope_delta.len() {
            self.try_grow_to(needed)?;
        }
        Ok(())
    }

    /// Number of facts added.
    #[must_use]
    pub fn fact_count(&self) -> u64 {
        self.fact_count
    }

    /// Cumulative hit blocks with unlimited capacity.
    #[must_use]
    pub fn infinite_hit_blocks(&self) -> u64 {
        self.infinite_hit_blocks
    }

    /// Cumulative hit blocks of every added fact at `capacity_blocks`; equals the sum of
    /// `project_blocks(fact, capacity_blocks)` over the facts.
    #[must_use]
    pub fn hit_blocks_at(&self, capacity_blocks: u64) -> u64 {
        let dense_len = self.slope_delta.len() as u64;
        let last_dense = capacity_blocks.min(dense_len.saturating_sub(1));
        let mut delta_sum = 0_u64;
        let mut weighted_sum = 0_u64;
        if dense_len > 0 {
            let last_dense = usize::try_from(last_dense).unwrap_or(usize::MAX);
            let whole_blocks = last_dense / BLOCK_CAPACITIES;
            (delta_sum, weighted_sum) = self.tree_prefix(whole_blocks);
            for t in whole_blocks * BLOCK_CAPACITIES..=last_dense {
                let delta = self.slope_delta[t];
                delta_sum = delta_sum.wrapping_add(delta);
                weighted_sum = weighted_sum.wrapping_add(delta.wrapping_mul(t as u64));
            }
        }
        for (&t, &delta) in self.sparse_delta.range(..=capacity_blocks) {
            delta_sum = delta_sum.wrapping_add(delta);
            weighted_sum = weighted_sum.wrapping_add(delta.wrapping_mul(t));
        }
        capacity_blocks
            .wrapping_add(1)
            .wrapping_mul(delta_sum)
            .wrapping_sub(weighted_sum)
    }

    /// The smallest capacity (blocks) whose cumulative hits reach `percent`% of the
    /// unlimited-capacity hits (the target rounded up to a whole block): `mrc`'s knees, the
    /// monitor's capacity-for-fraction. Never more than the saturation point.
    #[must_use]
    pub fn knee_capacity_blocks(&self, percent: u32) -> u64 {
        let target = percent_of_rounded_up(self.infinite_hit_blocks(), percent);
        self.min_capacity_for_hit_blocks(target)
            .unwrap_or_else(|| self.saturation_capacity_blocks())
    }

    /// The smallest capacity (blocks) whose cumulative hits reach `target_hit_blocks`, or
    /// `None` when even unlimited capacity falls short.
    #[must_use]
    pub fn min_capacity_for_hit_blocks(&self, target_hit_blocks: u64) -> Option<u64> {
        if target_hit_blocks > self.infinite_hit_blocks {
            return None;
        }
        let (mut low, mut high) = (0_u64, self.saturation_capacity_blocks());
        while low < high {
            let mid = low + (high - low) / 2;
            if self.hit_blocks_at(mid) >= target_hit_blocks {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        Some(low)
    }

    /// The smallest capacity at which the cumulative hits equal the unlimited-capacity hits.
    #[must_use]
    pub fn saturation_capacity_blocks(&self) -> u64 {
        let last_dense_change = self
            .slope_delta
            .iter()
            .rposition(|&d| d != 0)
            .map_or(0, |t| t as u64);
        let last_sparse_change = self.sparse_delta.keys().next_back().copied().unwrap_or(0);
        // The slope returns to zero at the last change point; the curve is flat from one before it.
        last_dense_change.max(last_sparse_change).saturating_sub(1)
    }

    /// The exact piecewise-linear curve as `(capacity_blocks, hit_blocks)` breakpoints, from
    /// capacity 0 to the saturation point; between consecutive points the curve is linear.
    #[must_use]
    pub fn curve_points(&self) -> Vec<(u64, u64)> {
        let change_points = self
            .slope_delta
            .iter()
            .enumerate()
            .filter(|(_, d)| **d != 0)
            .map(|(t, _)| t as u64)
            .chain(self.sparse_delta.keys().copied());
        // The slope changes at `t`, so `t − 1` is the last capacity of the previous line piece.
        let mut points: Vec<(u64, u64)> = vec![(0, self.hit_blocks_at(0))];
        for t in change_points {
            let x = t.saturating_sub(1);
            if points.last().is_some_and(|&(px, _)| px >= x) {
                continue;
            }
            points.push((x, self.hit_blocks_at(x)));
        }
        points
    }

    /// Heap bytes held (honest: from the real container capacities).
    #[must_use]
    pub fn memory_usage_bytes(&self) -> usize {
        (self.slope_delta.capacity()
            + self.block_delta_tree.capacity()
            + self.block_weighted_tree.capacity())
            * size_of::<u64>()
            + self.sparse_delta.len() * (2 * size_of::<u64>() + 16)
    }

    fn add_slope_change(&mut self, capacity_blocks: u64, delta: u64) {
        // Beyond the dense array's reach, or when the memory to grow it is not there (a
        // hostile facts row, a memory limit): the sparse map, exact all the same.
        if capacity_blocks >= MAX_DENSE_CAPACITY_BLOCKS
            || (capacity_blocks >= self.slope_delta.len() as u64
                && self
                    .try_grow_to(usize::try_from(capacity_blocks).unwrap_or(usize::MAX) + 1)
                    .is_err())
        {
            let cell = self.sparse_delta.entry(capacity_blocks).or_insert(0);
            *cell = cell.wrapping_add(delta);
            if *cell == 0 {
                self.sparse_delta.remove(&capacity_blocks);
            }
            return;
        }
        let t = usize::try_from(capacity_blocks).expect("dense capacities fit in usize");
        self.slope_delta[t] = self.slope_delta[t].wrapping_add(delta);
        let weighted = delta.wrapping_mul(capacity_blocks);
        let mut node = t / BLOCK_CAPACITIES + 1;
        while node < self.block_delta_tree.len() {
            self.block_delta_tree[node] = self.block_delta_tree[node].wrapping_add(delta);
            self.block_weighted_tree[node] = self.block_weighted_tree[node].wrapping_add(weighted);
            node += node & node.wrapping_neg();
        }
    }

    /// Sums of `Δ` and `t·Δ` over the first `block_count` blocks.
    fn tree_prefix(&self, block_count: usize) -> (u64, u64) {
        let (mut delta_sum, mut weighted_sum) = (0_u64, 0_u64);
        let mut node = block_count;
        while node > 0 {
            delta_sum = delta_sum.wrapping_add(self.block_delta_tree[node]);
            weighted_sum = weighted_sum.wrapping_add(self.block_weighted_tree[node]);
            node &= node - 1;
        }
        (delta_sum, weighted_sum)
    }

    /// Grows the dense array (geometrically), moves the sparse map's changes it now covers
    /// into it and rebuilds both trees in O(n); leaves everything unchanged when the memory
    /// is not there.
    fn try_grow_to(&mut self, min_len: usize) -> Result<(), GrowthFailed> {
        let new_len = min_len
            .max(self.slope_delta.len() * 2)
            .max(BLOCK_CAPACITIES * 16)
            .next_multiple_of(BLOCK_CAPACITIES);
        let block_count = new_len / BLOCK_CAPACITIES;
        let growth_bytes =
            ((new_len - self.slope_delta.len() + 2 * (block_count + 1)) * size_of::<u64>()) as u64;
        // Room for the growth and the run's clean stop (see `hitcore::GROWTH_HEADROOM_BYTES`),
        // asked before anything is reserved: a refused growth keeps no capacity.
        let mut probe: Vec<u8> = Vec::new();
        if usize::try_from(growth_bytes)
            .ok()
            .and_then(|bytes| bytes.checked_add(crate::hitcore::GROWTH_HEADROOM_BYTES))
            .is_none_or(|bytes| probe.try_reserve_exact(bytes).is_err())
        {
            return Err(GrowthFailed {
                bytes: growth_bytes + crate::hitcore::GROWTH_HEADROOM_BYTES as u64,
            });
        }
        drop(probe);
        let mut block_delta_tree = Vec::new();
        let mut block_weighted_tree = Vec::new();
        self.slope_delta
            .try_reserve_exact(new_len - self.slope_delta.len())
            .and_then(|()| block_delta_tree.try_reserve_exact(block_count + 1))
            .and_then(|()| block_weighted_tree.try_reserve_exact(block_count + 1))
            .map_err(|_| GrowthFailed {
                bytes: growth_bytes,
            })?;
        self.slope_delta.resize(new_len, 0);
        // Changes kept sparse while the array could not grow (the map holds only keys at or
        // above the array's end, so the two never overlap).
        while let Some(entry) = self.sparse_delta.first_entry() {
            let Ok(t) = usize::try_from(*entry.key()) else {
                break;
            };
            if t >= new_len || *entry.key() >= MAX_DENSE_CAPACITY_BLOCKS {
                break;
            }
            self.slope_delta[t] = self.slope_delta[t].wrapping_add(entry.remove());
        }
        block_delta_tree.resize(block_count + 1, 0);
        block_weighted_tree.resize(block_count + 1, 0);
        self.block_delta_tree = block_delta_tree;
        self.block_weighted_tree = block_weighted_tree;
        for (block, cells) in self.slope_delta.chunks_exact(BLOCK_CAPACITIES).enumerate() {
            let base = (block * BLOCK_CAPACITIES) as u64;
            let mut delta_sum = 0_u64;
            let mut weighted_sum = 0_u64;
            for (offset, &delta) in cells.iter().enumerate() {
                delta_sum = delta_sum.wrapping_add(delta);
                weighted_sum = weighted_sum.wrapping_add(delta.wrapping_mul(base + offset as u64));
            }
            self.block_delta_tree[block + 1] = delta_sum;
            self.block_weighted_tree[block + 1] = weighted_sum;
        }
        // Linear-time Fenwick construction: push each node's total into its parent.
        for node in 1..=block_count {
            let parent = node + (node & node.wrapping_neg());
            if parent <= block_count {
                self.block_delta_tree[parent] =
                    self.block_delta_tree[parent].wrapping_add(self.block_delta_tree[node]);
                self.block_weighted_tree[parent] =
                    self.block_weighted_tree[parent].wrapping_add(self.block_weighted_tree[node]);
            }
        }
        Ok(())
    }
}

/// The accumulator could not grow: about `bytes` were asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("out of memory growing by {bytes} bytes")]
pub struct GrowthFailed {
    /// About how many bytes were asked for, for the message.
    pub bytes: u64,
}

/// `ceil(value × percent / 100)` without overflow.
#[must_use]
pub fn percent_of_rounded_up(value: u64, percent: u32) -> u64 {
    let scaled = (u128::from(value) * u128::from(percent)).div_ceil(100);
    u64::try_from(scaled).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projector::{project_blocks, project_infinite};

    fn facts() -> Vec<RequestFact> {
        [
            &[][..],
            &[[1, 2]],
            &[[1, 2], [4, 1]],
            &[[1, 1]],
            &[[1, 2]],
            &[[3, 70], [200, 5]],
            &[[64, 1], [66, 64]],
        ]
        .iter()
        .map(|p| RequestFact::from_pairs(p))
        .collect()
    }

    /// A change kept in the sparse map because the dense array could not grow (memory
    /// refused) moves into the array when it grows later; every answer stays exact.
    #[test]
    fn changes_kept_sparse_when_growth_failed_stay_exact() {
        let facts = facts();
        let mut expected = CapacityAxisAccumulator::new();
        let mut acc = CapacityAxisAccumulator::new();
        for f in &facts {
            expected.add_fact(f);
        }
        // What `add_slope_change` does when `try_grow_to` fails: the ramp [300, 302) sparse,
        // below the dense limit and beyond the (empty) array.
        let deep = RequestFact::from_pairs(&[[300, 2]]);
        expected.add_fact(&deep);
        for (t, delta) in [(300, 1), (302, u64::MAX)] {
            acc.sparse_delta.insert(t, delta);
        }
        acc.infinite_hit_blocks += 2;
        acc.fact_count += 1;
        for capacity_blocks in [0, 299, 300, 301, 302, 1000] {
            assert_eq!(
                acc.hit_blocks_at(capacity_blocks),
                expected_ramp(capacity_blocks)
            );
        }
        for f in &facts {
            acc.add_fact(f);
        }
        // The facts grew the array past 302: the sparse changes moved into it.
        assert!(acc.slope_delta.len() > 302);
        assert!(acc.sparse_delta.is_empty());
        for capacity_blocks in (0..400).chain([u64::MAX]) {
            assert_eq!(
                acc.hit_blocks_at(capacity_blocks),
                expected.hit_blocks_at(capacity_blocks),
                "capacity {capacity_blocks}"
            );
        }
        assert_eq!(acc.curve_points(), expected.curve_points());
        assert_eq!(
            acc.saturation_capacity_blocks(),
            expected.saturation_capacity_blocks()
        );
    }

    /// Hit blocks of the ramp [300, 302) at `capacity_blocks`.
    fn expected_ramp(capacity_blocks: u64) -> u64 {
        (capacity_blocks + 1).saturating_sub(300).min(2)
    }

    #[test]
    fn equals_sum_of_projections_at_every_capacity() {
        let mut acc = CapacityAxisAccumulator::new();
        let facts = facts();
        for f in &facts {
            acc.add_fact(f);
        }
        for capacity_blocks in (0..400).chain([1 << 20, u64::MAX]) {
            let expected: u64 = facts
                .iter()
                .map(|f| project_blocks(f, capacity_blocks))
                .sum();
            assert_eq!(
                acc.hit_blocks_at(capacity_blocks),
                expected,
                "capacity {capacity_blocks}"
            );
        }
        assert_eq!(
            acc.infinite_hit_blocks(),
            facts.iter().map(project_infinite).sum::<u64>()
        );
        assert_eq!(acc.fact_count(), facts.len() as u64);
    }

    #[test]
    fn late_query_sees_whole_history() {
        // A capacity first asked about after all facts were added still gets every fact.
        let mut acc = CapacityAxisAccumulator::new();
        acc.add_fact(&RequestFact::from_pairs(&[[1, 3]]));
        acc.add_fact(&RequestFact::from_pairs(&[[2, 1]]));
        assert_eq!(acc.hit_blocks_at(2), 2 + 1);
    }

    #[test]
    fn curve_points_interpolate_exactly() {
        let mut acc = CapacityAxisAccumulator::new();
        let facts = facts();
        for f in &facts {
            acc.add_fact(f);
        }
        let points = acc.curve_points();
        assert_eq!(points[0], (0, 0));
        for w in points.windows(2) {
            let ((x0, y0), (x1, y1)) = (w[0], w[1]);
            assert!(x1 > x0);
            for x in x0..=x1 {
                let interpolated = y0 + (y1 - y0) * (x - x0) / (x1 - x0);
                assert_eq!(acc.hit_blocks_at(x), interpolated, "x={x}");
            }
        }
        let &(last_x, last_y) = points.last().unwrap();
        assert_eq!(last_y, acc.infinite_hit_blocks());
        assert_eq!(last_x, acc.saturation_capacity_blocks());
        assert_eq!(acc.hit_blocks_at(last_x - 1) + 1, last_y);
    }

    #[test]
    fn min_capacity_for_target() {
        let mut acc = CapacityAxisAccumulator::new();
        acc.add_fact(&RequestFact::from_pairs(&[[1, 2], [4, 1]]));
        assert_eq!(acc.min_capacity_for_hit_blocks(0), Some(0));
        assert_eq!(acc.min_capacity_for_hit_blocks(2), Some(2));
        assert_eq!(acc.min_capacity_for_hit_blocks(3), Some(4));
        assert_eq!(acc.min_capacity_for_hit_blocks(4), None);
    }

    #[test]
    fn huge_thresholds_use_sparse_cells() {
        let mut acc = CapacityAxisAccumulator::new();
        let far = MAX_DENSE_CAPACITY_BLOCKS * 4;
        let f = RequestFact::from_pairs(&[[5, 2], [far, 3]]);
        acc.add_fact(&f);
        for c in [0, 5, 6, far - 1, far, far + 1, far + 2, far + 10] {
            assert_eq!(acc.hit_blocks_at(c), project_blocks(&f, c), "capacity {c}");
        }
        assert!(acc.memory_usage_bytes() < 1 << 20);
        assert_eq!(acc.min_capacity_for_hit_blocks(5), Some(far + 2));
    }
}
