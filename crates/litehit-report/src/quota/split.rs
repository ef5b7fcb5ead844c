//! The best split of a budget of grid steps among tenants: exact dynamic programming over
//! their hit curves.
//!
//! Hit curves are step functions, not concave (a tenant's working set hits nothing until it
//! fits, then all at once), so handing out steps by the largest marginal gain can miss the
//! optimum; the table below cannot. Time O(N · K²) and memory O(N · K) for N tenants and K
//! steps (64 × 512: about 8 M additions).

/// One tenant's hit tokens at every grid point: `hit_tokens[k]` at `k` steps of quota,
/// `k = 0 ..= K`, non-decreasing (as every LRU hit curve).
pub type GridHits = Vec<u64>;

/// The chosen steps per tenant and the hit tokens they give together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// Quota of each tenant, in grid steps, in the input order.
    pub steps: Vec<usize>,
    /// Σ hit tokens of the tenants at those quotas (the maximum over every feasible split).
    pub hit_tokens: u64,
}

/// The split of at most `budget_steps` among the tenants that maximises their summed hit
/// tokens, each tenant `i` getting at least `floor_steps[i]` (and at most what its curve
/// lists). Among the best splits, each tenant, from the last one back, takes the fewest steps
/// that still reach the maximum, so capacity no tenant needs is left over (`Σ steps` may be
/// below the budget). `None` when the floors alone exceed the budget.
///
/// # Panics
/// If `floor_steps` and `hit_tokens` differ in length.
#[must_use]
pub fn best_split(
    hit_tokens: &[GridHits],
    floor_steps: &[usize],
    budget_steps: usize,
) -> Option<Split> {
    assert_eq!(hit_tokens.len(), floor_steps.len(), "one floor per tenant");
    // best[i][b]: the most hit tokens of tenants 0..i within b steps (`None`: infeasible).
    let mut best: Vec<Vec<Option<u64>>> = Vec::with_capacity(hit_tokens.len() + 1);
    best.push(vec![Some(0); budget_steps + 1]);
    for (curve, &floor) in hit_tokens.iter().zip(floor_steps) {
        let previous = best.last().expect("the first row is pushed above");
        let most_steps = curve.len().saturating_sub(1);
        let row = (0..=budget_steps)
            .map(|budget| {
                (floor..=budget.min(most_steps))
                    .filter_map(|steps| {
                        previous[budget - steps].map(|before| before.saturating_add(curve[steps]))
                    })
                    .max()
            })
            .collect();
        best.push(row);
    }
    let hit_tokens_total = best.last()?[budget_steps]?;
    // Back from the last tenant: the fewest steps that keep the optimum reachable.
    let mut steps = vec![0; hit_tokens.len()];
    let (mut budget, mut needed) = (budget_steps, hit_tokens_total);
    for tenant in (0..hit_tokens.len()).rev() {
        let curve = &hit_tokens[tenant];
        let chosen = (floor_steps[tenant]..=budget.min(curve.len().saturating_sub(1)))
            .find(|&k| {
                best[tenant][budget - k]
                    .is_some_and(|before| before.saturating_add(curve[k]) == needed)
            })
            .expect("the optimum came from one of these choices");
        steps[tenant] = chosen;
        needed -= curve[chosen];
        budget -= chosen;
    }
    Some(Split {
        steps,
        hit_tokens: hit_tokens_total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_that_needs_two_steps_gets_them() {
        // Greedy by marginal gain gives the first step to `b` (1 > 0), then nothing gains.
        let curves = [vec![0, 0, 10], vec![0, 1, 1]];
        let split = best_split(&curves, &[0, 0], 2).unwrap();
        assert_eq!(
            split,
            Split {
                steps: vec![2, 0],
                hit_tokens: 10
            }
        );
    }

    #[test]
    fn floors_bind_and_can_be_infeasible() {
        let curves = [vec![0, 0, 10], vec![0, 1, 1]];
        let split = best_split(&curves, &[0, 1], 2).unwrap();
        assert_eq!(
            split,
            Split {
                steps: vec![0, 1],
                hit_tokens: 1
            }
        );
        assert_eq!(best_split(&curves, &[2, 1], 2), None);
    }

    #[test]
    fn spare_steps_stay_unassigned() {
        let split = best_split(&[vec![0, 5, 5, 5]], &[0], 3).unwrap();
        assert_eq!(split.steps, [1]);
    }
}
