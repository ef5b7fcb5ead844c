//! The fixed-TTL watermark over recency positions (REFERENCE §3.5).
//!
//! Every commit opens (or extends) an *epoch*: the first position it handed out and its
//! timestamp. Because timestamps are clamped to be non-decreasing, age is monotone along the
//! recency order, so "expired" is simply "position below a watermark". Expired markers sit
//! below every live one, so they never inflate a live key's depth: one replay stays exact for
//! a fixed TTL at every capacity at once.

use std::collections::VecDeque;

/// One commit batch: positions from `start_position` on were last touched at `timestamp_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Epoch {
    pub(crate) start_position: usize,
    pub(crate) timestamp_ns: i64,
}

/// Epochs not yet expired, oldest first, and the watermark below which markers are dead.
#[derive(Debug, Clone, Default)]
pub(crate) struct TtlWatermark {
    pub(crate) epochs: VecDeque<Epoch>,
    /// Markers at positions `< dead_below_position` are expired.
    pub(crate) dead_below_position: usize,
}

impl TtlWatermark {
    /// Records that positions from `next_position` on are committed at `timestamp_ns`.
    pub(crate) fn open_epoch(&mut self, next_position: usize, timestamp_ns: i64) {
        match self.epochs.back() {
            Some(last) if last.timestamp_ns >= timestamp_ns => {} // same (or clamped) time: extend
            _ => self.epochs.push_back(Epoch {
                start_position: next_position,
                timestamp_ns,
            }),
        }
    }

    /// Expires every epoch whose age at `now_ns` is `>= ttl_ns` (strict deadline). Returns the
    /// old watermark when it moved.
    pub(crate) fn advance(
        &mut self,
        now_ns: i64,
        ttl_ns: u64,
        positions_len: usize,
    ) -> Option<usize> {
        let old = self.dead_below_position;
        let deadline = i128::from(now_ns) - i128::from(ttl_ns);
        while self
            .epochs
            .front()
            .is_some_and(|e| i128::from(e.timestamp_ns) <= deadline)
        {
            self.epochs.pop_front();
            self.dead_below_position = self
                .epochs
                .front()
                .map_or(positions_len, |e| e.start_position);
        }
        (self.dead_below_position > old).then_some(old)
    }

    /// Renumbers epoch starts after a compaction, merging epochs that now start together
    /// (the later timestamp wins, as it is the one that still protects those positions).
    pub(crate) fn remap(&mut self, new_position: impl Fn(usize) -> usize) {
        let mut remapped: VecDeque<Epoch> = VecDeque::with_capacity(self.epochs.len());
        for epoch in &self.epochs {
            let start_position = new_position(epoch.start_position);
            if let Some(last) = remapped.back_mut()
                && last.start_position == start_position
            {
                last.timestamp_ns = epoch.timestamp_ns;
                continue;
            }
            remapped.push_back(Epoch {
                start_position,
                timestamp_ns: epoch.timestamp_ns,
            });
        }
        self.epochs = remapped;
        self.dead_below_position = 0;
    }

    pub(crate) fn memory_usage_bytes(&self) -> usize {
        self.epochs.capacity() * size_of::<Epoch>()
    }
}
