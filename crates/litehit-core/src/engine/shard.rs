//! `replay --shard K/N`: which instances one of N replay tasks owns.
//!
//! Lanes are independent, so replaying each instance in exactly one of N tasks and reading
//! the N facts files together gives the facts of one unsharded replay (rows grouped by file).
//! An instance belongs to shard `fnv1a_64(instance_id bytes) mod N` (FNV-1a, 64 bit: offset
//! basis `0xcbf29ce484222325`, prime `0x100000001b3`), so every task, host and version agrees
//! — not Rust's randomized `HashMap` hasher.

/// Shard `index` of `count` (0-based: `0/4` … `3/4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard this is, 0-based.
    pub index: u64,
    /// How many shards the trace is split into.
    pub count: u64,
}

/// `K/N` was not a shard.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?}: expected K/N with 0 ≤ K < N, e.g. 0/4 … 3/4")]
pub struct ShardError {
    /// The text as typed.
    pub input: String,
}

impl Shard {
    /// Reads `K/N`.
    pub fn parse(input: &str) -> Result<Self, ShardError> {
        let error = || ShardError {
            input: input.to_owned(),
        };
        let (index, count) = input.trim().split_once('/').ok_or_else(error)?;
        let index: u64 = index.trim().parse().map_err(|_| error())?;
        let count: u64 = count.trim().parse().map_err(|_| error())?;
        if index >= count {
            return Err(error());
        }
        Ok(Self { index, count })
    }

    /// Whether this shard replays `instance_id`.
    #[must_use]
    pub fn contains(&self, instance_id: &str) -> bool {
        shard_of(instance_id, self.count) == self.index
    }
}

/// The shard of `instance_id` among `count` (`count ≥ 1`).
#[must_use]
pub fn shard_of(instance_id: &str, count: u64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in instance_id.as_bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash % count.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv1a_64() {
        // Published FNV-1a 64 test vectors: "" and "a".
        assert_eq!(shard_of("", u64::MAX), 0xcbf2_9ce4_8422_2325);
        assert_eq!(shard_of("a", u64::MAX), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(shard_of("foobar", u64::MAX), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn every_instance_is_in_exactly_one_shard() {
        for id in ["instance-0", "a", "", "prefill-7"] {
            let owners = (0..5)
                .filter(|&k| Shard { index: k, count: 5 }.contains(id))
                .count();
            assert_eq!(owners, 1, "{id}");
        }
    }

    #[test]
    fn shards_parse_as_k_of_n() {
        assert_eq!(Shard::parse("2/4"), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(Shard::parse("0/1"), Ok(Shard { index: 0, count: 1 }));
        for bad in ["4/4", "1", "a/2", "1/0", "-1/3", "1/2/3"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }
}
