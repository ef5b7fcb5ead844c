//! An independent naive oracle: one real LRU cache per capacity, evaluated on the
//! pre-request snapshot and touched from the request tail to its head. It never imports
//! `litehit_core::LiteHit` — only plain std collections — so a shared bug cannot hide.

use std::collections::{BTreeMap, HashMap};

/// One LRU cache of a fixed capacity (in blocks), with an optional fixed TTL.
#[derive(Debug, Clone)]
pub struct OracleLru {
    /// `None` = unlimited.
    capacity_blocks: Option<usize>,
    ttl_ns: Option<i64>,
    /// key → (recency stamp, last access time)
    entries: HashMap<i64, (u64, i64)>,
    /// recency stamp → key (smallest = least recent)
    by_recency: BTreeMap<u64, i64>,
    next_stamp: u64,
}

impl OracleLru {
    pub fn new(capacity_blocks: Option<usize>, ttl_ns: Option<i64>) -> Self {
        Self {
            capacity_blocks,
            ttl_ns,
            entries: HashMap::new(),
            by_recency: BTreeMap::new(),
            next_stamp: 0,
        }
    }

    /// Prefix hits of `keys` on the snapshot at `now_ns`, then commits every block tail-first.
    pub fn process_request(&mut self, keys: &[i64], now_ns: i64) -> u64 {
        self.expire(now_ns);
        let hits = keys
            .iter()
            .take_while(|k| self.entries.contains_key(k))
            .count() as u64;
        for &key in keys.iter().rev() {
            self.touch(key, now_ns);
        }
        hits
    }

    /// Keys resident now (unexpired, within capacity).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Resident keys from most to least recent (as of the last request).
    pub fn recency_order(&self) -> Vec<i64> {
        self.by_recency.values().rev().copied().collect()
    }

    fn expire(&mut self, now_ns: i64) {
        let Some(ttl_ns) = self.ttl_ns else { return };
        while let Some((&stamp, &key)) = self.by_recency.iter().next() {
            let (_, last_access_ns) = self.entries[&key];
            if now_ns - last_access_ns < ttl_ns {
                break;
            }
            self.by_recency.remove(&stamp);
            self.entries.remove(&key);
        }
    }

    fn touch(&mut self, key: i64, now_ns: i64) {
        if self.capacity_blocks == Some(0) {
            return; // a zero-capacity cache stores nothing
        }
        if let Some((stamp, _)) = self.entries.remove(&key) {
            self.by_recency.remove(&stamp);
        }
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        self.entries.insert(key, (stamp, now_ns));
        self.by_recency.insert(stamp, key);
        if let Some(capacity) = self.capacity_blocks {
            while self.entries.len() > capacity {
                let (&oldest, &victim) = self
                    .by_recency
                    .iter()
                    .next()
                    .expect("non-empty when over capacity");
                self.by_recency.remove(&oldest);
                self.entries.remove(&victim);
            }
        }
    }
}

/// One oracle cache per capacity, fed the same requests.
pub struct OracleBank {
    pub capacities: Vec<Option<usize>>,
    caches: Vec<OracleLru>,
    pub total_hits: Vec<u64>,
}

impl OracleBank {
    pub fn new(capacities: &[Option<usize>], ttl_ns: Option<i64>) -> Self {
        Self {
            capacities: capacities.to_vec(),
            caches: capacities
                .iter()
                .map(|&c| OracleLru::new(c, ttl_ns))
                .collect(),
            total_hits: vec![0; capacities.len()],
        }
    }

    /// Hits per capacity for one request (also added to the totals).
    pub fn process_request(&mut self, keys: &[i64], now_ns: i64) -> Vec<u64> {
        let hits: Vec<u64> = self
            .caches
            .iter_mut()
            .map(|c| c.process_request(keys, now_ns))
            .collect();
        for (total, h) in self.total_hits.iter_mut().zip(&hits) {
            *total += h;
        }
        hits
    }
}
