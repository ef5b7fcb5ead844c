//! The one rule that turns a request's per-block required capacities into its hit curve.
//!
//! Block `j` of a request is a prefix hit at capacity `C` when every block up to it is a hit
//! there: its threshold is the prefix maximum of the required capacities. Under the prefix
//! contract (keys chained, no repeats) that maximum already rises by at least one per block, and
//! the rule is exact. Otherwise (flat keys, a key repeated inside a request) a curve could rise
//! by more than one block per block of capacity, which the run format cannot hold: the rule
//! then puts each threshold at least one above the one before, so the curve is a lower bound
//! (never more hits than the policy has) that is still exact at ∞. LRU and OPT facts share it.

use super::HitCurveSegment;

/// The running state of one request's curve: push required capacities head to tail, stop at the
/// first block no capacity hits.
#[derive(Debug, Clone, Copy, Default)]
pub struct PrefixCurveBuilder {
    prefix_required_blocks: u64,
    last_threshold_blocks: u64,
}

impl PrefixCurveBuilder {
    /// Appends the next block, which hits at capacities `>= required_blocks` on its own.
    #[inline]
    pub fn push(&mut self, curve: &mut Vec<HitCurveSegment>, required_blocks: u64) {
        self.prefix_required_blocks = self.prefix_required_blocks.max(required_blocks);
        // Monotone guard: a no-op under the prefix contract, pessimistic otherwise.
        let threshold = self
            .prefix_required_blocks
            .max(self.last_threshold_blocks + 1);
        match curve.last_mut() {
            Some(run) if run.end_required_blocks() == threshold => run.run_length += 1,
            _ => curve.push(HitCurveSegment {
                start_required_blocks: threshold,
                run_length: 1,
            }),
        }
        self.last_threshold_blocks = threshold;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve_of(required: &[u64]) -> Vec<[u64; 2]> {
        let mut curve = Vec::new();
        let mut builder = PrefixCurveBuilder::default();
        for &r in required {
            builder.push(&mut curve, r);
        }
        curve
            .iter()
            .map(|s| [s.start_required_blocks, s.run_length])
            .collect()
    }

    #[test]
    fn prefix_maximum_in_runs() {
        assert_eq!(curve_of(&[3, 4, 5, 9, 2]), [[3, 3], [9, 2]]);
    }

    #[test]
    fn each_threshold_at_least_one_above_the_last() {
        // Flat keys all one deep would hit together at 1: the guard spreads them 1, 2, 3.
        assert_eq!(curve_of(&[1, 1, 1]), [[1, 3]]);
    }
}
