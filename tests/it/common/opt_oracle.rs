//! Independent naive OPT simulators: one real Belady cache per capacity. They never import
//! `litehit_core::OptCore` (only std collections and the trace), so a shared bug cannot hide.
//!
//! * [`min_unit_hits`]: MIN on the unit access sequence the README defines (each request's
//!   distinct keys head to tail, then tail to head), with the full future known: a resident
//!   set ordered by next use, demand admission, the farthest next use evicted.
//! * [`request_granular_hits`]: the request-granular statement of the same policy:
//!   after request `t`, all its keys are resident (if more than `C`, the `C` used again
//!   soonest) plus the other resident keys used again soonest; a tie keeps the key standing
//!   earlier in the next request.
//! * [`best_demand_policy_unit_hits`]: every demand policy, by exhaustive search (tiny traces).
//!
//! The first two return, per request, the leading blocks that hit at capacity `C` (`None`:
//! unlimited); [`min_unit_total_hits`] and the search count the hits of every unit access.
//! (Leading first-pass hits alone are not what MIN maximises: on `[a b] [a b'] [a b]` at 2
//! blocks, evicting `a` for `b'` and `b'` for `a` again hits 3 leading blocks to MIN's 2, with
//! the same unit hits and a cache that is not prefix-closed.)

use std::collections::{BTreeSet, HashMap, HashSet};

const NEVER: usize = usize::MAX;

/// One unit access: the key, and for a first-pass access, its request.
struct UnitAccess {
    key: i64,
    first_pass_of: Option<usize>,
}

/// Each request's distinct keys, in first-occurrence order.
fn distinct(keys: &[i64]) -> Vec<i64> {
    let mut seen = HashSet::new();
    keys.iter().copied().filter(|k| seen.insert(*k)).collect()
}

fn unit_sequence(trace: &[Vec<i64>]) -> Vec<UnitAccess> {
    let mut accesses = Vec::new();
    for (request, keys) in trace.iter().enumerate() {
        let keys = distinct(keys);
        for &key in &keys {
            accesses.push(UnitAccess {
                key,
                first_pass_of: Some(request),
            });
        }
        for &key in keys.iter().rev() {
            accesses.push(UnitAccess {
                key,
                first_pass_of: None,
            });
        }
    }
    accesses
}

/// Each access's next access time to the same key ([`NEVER`] if none).
fn next_uses(accesses: &[UnitAccess]) -> Vec<usize> {
    let mut next = vec![NEVER; accesses.len()];
    let mut later: HashMap<i64, usize> = HashMap::new();
    for (time, access) in accesses.iter().enumerate().rev() {
        if let Some(&t) = later.get(&access.key) {
            next[time] = t;
        }
        later.insert(access.key, time);
    }
    next
}

/// Leading hits per request from per-key first-pass hit flags (a repeated key counts as its
/// first occurrence).
fn leading_hits(trace: &[Vec<i64>], hit: &[HashMap<i64, bool>]) -> Vec<u64> {
    trace
        .iter()
        .zip(hit)
        .map(|(keys, hits)| keys.iter().take_while(|k| hits[k]).count() as u64)
        .collect()
}

/// Belady's MIN on the unit sequence at `capacity` blocks (`None`: unlimited).
pub fn min_unit_hits(trace: &[Vec<i64>], capacity: Option<usize>) -> Vec<u64> {
    simulate_min(trace, capacity).0
}

/// How many unit accesses hit under MIN at `capacity` blocks.
pub fn min_unit_total_hits(trace: &[Vec<i64>], capacity: Option<usize>) -> u64 {
    simulate_min(trace, capacity).1
}

fn simulate_min(trace: &[Vec<i64>], capacity: Option<usize>) -> (Vec<u64>, u64) {
    let accesses = unit_sequence(trace);
    let mut unit_hits = 0;
    let next = next_uses(&accesses);
    let mut hit: Vec<HashMap<i64, bool>> = vec![HashMap::new(); trace.len()];
    // key → its next use; (next use, key) ordered, the farthest last.
    let mut resident: HashMap<i64, usize> = HashMap::new();
    let mut by_next_use: BTreeSet<(usize, i64)> = BTreeSet::new();
    for (time, access) in accesses.iter().enumerate() {
        let was_resident = capacity != Some(0) && resident.contains_key(&access.key);
        unit_hits += u64::from(was_resident);
        if let Some(request) = access.first_pass_of {
            hit[request].insert(access.key, was_resident);
        }
        if capacity == Some(0) {
            continue;
        }
        if let Some(old) = resident.remove(&access.key) {
            by_next_use.remove(&(old, access.key));
        }
        if let Some(capacity) = capacity
            && resident.len() >= capacity
        {
            // Over capacity once admitted: evict the farthest next use among the others.
            let &(far, key) = by_next_use.iter().next_back().unwrap();
            by_next_use.remove(&(far, key));
            resident.remove(&key);
        }
        resident.insert(access.key, next[time]);
        by_next_use.insert((next[time], access.key));
    }
    (leading_hits(trace, &hit), unit_hits)
}

/// The request-granular policy at `capacity` blocks (`None`: unlimited).
pub fn request_granular_hits(trace: &[Vec<i64>], capacity: Option<usize>) -> Vec<u64> {
    // Per request, each distinct key's (next request using it, its index there).
    let requests: Vec<Vec<i64>> = trace.iter().map(|keys| distinct(keys)).collect();
    let mut next_use: Vec<HashMap<i64, (usize, usize)>> = vec![HashMap::new(); trace.len()];
    let mut later: HashMap<i64, (usize, usize)> = HashMap::new();
    for (request, keys) in requests.iter().enumerate().rev() {
        for &key in keys {
            next_use[request].insert(key, *later.get(&key).unwrap_or(&(NEVER, 0)));
        }
        for (index, &key) in keys.iter().enumerate() {
            later.insert(key, (request, index));
        }
    }
    let mut resident: HashMap<i64, (usize, usize)> = HashMap::new(); // key → its next use
    let mut out = Vec::with_capacity(trace.len());
    for (request, keys) in requests.iter().enumerate() {
        let hits: HashMap<i64, bool> = keys
            .iter()
            .map(|k| (*k, capacity != Some(0) && resident.contains_key(k)))
            .collect();
        out.push(trace[request].iter().take_while(|k| hits[k]).count() as u64);
        // Refresh the request's keys' next uses, then keep the best.
        let mut own: Vec<(usize, usize, i64)> = keys
            .iter()
            .map(|k| {
                let (r, i) = next_use[request][k];
                (r, i, *k)
            })
            .collect();
        for k in keys {
            resident.remove(k);
        }
        let mut others: Vec<(usize, usize, i64)> =
            resident.iter().map(|(k, &(r, i))| (r, i, *k)).collect();
        own.sort_unstable();
        others.sort_unstable();
        let capacity = capacity.unwrap_or(usize::MAX);
        own.truncate(capacity);
        others.truncate(capacity - own.len());
        resident = own
            .into_iter()
            .chain(others)
            .map(|(r, i, k)| (k, (r, i)))
            .collect();
    }
    out
}

/// The most unit-access hits any demand policy (evict one resident other than the key being
/// accessed, whenever over capacity) gets at `capacity` blocks. Exhaustive: tiny traces only.
pub fn best_demand_policy_unit_hits(trace: &[Vec<i64>], capacity: usize) -> u64 {
    let keys: Vec<i64> = unit_sequence(trace).iter().map(|a| a.key).collect();
    let mut memo = HashMap::new();
    search(&keys, capacity, 0, Vec::new(), &mut memo)
}

fn search(
    keys: &[i64],
    capacity: usize,
    time: usize,
    resident: Vec<i64>,
    memo: &mut HashMap<(usize, Vec<i64>), u64>,
) -> u64 {
    let Some(&key) = keys.get(time) else {
        return 0;
    };
    if capacity == 0 {
        return 0;
    }
    let state = (time, resident.clone());
    if let Some(&best) = memo.get(&state) {
        return best;
    }
    let best = if resident.contains(&key) {
        1 + search(keys, capacity, time + 1, resident, memo)
    } else if resident.len() < capacity {
        let mut next = resident.clone();
        next.push(key);
        next.sort_unstable();
        search(keys, capacity, time + 1, next, memo)
    } else {
        (0..resident.len())
            .map(|evict| {
                let mut next = resident.clone();
                next[evict] = key;
                next.sort_unstable();
                search(keys, capacity, time + 1, next, memo)
            })
            .max()
            .unwrap_or(0)
    };
    memo.insert(state, best);
    best
}
