//! What a query asks, as plain data: the slots it projects at, the tiers, the accounted
//! span and how the shared pool lane is found.

use std::path::PathBuf;

use litehit_core::projector::Capacity;
pub use litehit_core::projector::tiers::TierPlan;

use crate::span::TimeRange;

/// The capacities a query projects at, in output order: every GB slot, then every block slot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuerySlots {
    /// Binary GB (`GB × 2^30` bytes, floored), negative (`-1`, `-inf`) = unlimited; echoed
    /// in `capacity_gb` as upstream does, with `%g` (`-1`, `-inf`).
    pub capacity_gb: Vec<f64>,
    /// Exact block counts, independent of `block_bytes`; echoed in `capacity_blocks`.
    pub capacity_blocks: Vec<u64>,
}

impl QuerySlots {
    /// Number of slots.
    #[must_use]
    pub fn len(&self) -> usize {
        self.capacity_gb.len() + self.capacity_blocks.len()
    }

    /// Whether there is no slot at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slots as projector capacities, in output order.
    #[must_use]
    pub fn capacities(&self) -> Vec<Capacity> {
        let gigabytes = self.capacity_gb.iter().map(|&gb| Capacity::from_gb(gb));
        let blocks = self
            .capacity_blocks
            .iter()
            .map(|&blocks| Capacity::Blocks(blocks));
        gigabytes.chain(blocks).collect()
    }
}

/// What a query adds to upstream's: cache tiers and a time range (both off by default, and
/// then the output is byte for byte upstream's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryPlan {
    /// Cache tiers to split each summary's hits among (`--tiers`).
    pub tiers: Option<TierPlan>,
    /// The rows accounted (`--from`, `--to`, `--exclude-warmup`).
    pub time_range: TimeRange,
    /// How to find the shared pool lane (`replay --pool`); `None`: the facts are taken as
    /// having none (every row in the overall line, as upstream).
    pub pool: Option<PoolRule>,
    /// `--model`'s KV bytes per token: every row's `block_bytes` becomes this × its
    /// `block_size_tokens` ([`crate::FactsFiles::with_kv_bytes_per_token`]); `None` keeps the
    /// facts' own.
    pub kv_bytes_per_token: Option<u64>,
    /// The OPT facts of the same trace (`query --opt`, one per facts file, in the same
    /// order), read in step with the LRU rows; empty: none (the output is then today's).
    pub opt: Vec<PathBuf>,
}

/// How the shared pool lane is found in facts: by its rows, whatever its name (see
/// `pool_detect`), or as a first pass over the same facts already found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolRule {
    /// Recognise it by its rows while reading; `named` (`--pool NAME`) must be it.
    Recognise {
        /// `--pool NAME`, if given.
        named: Option<String>,
    },
    /// Already recognised, by a first pass over the same facts: this lane (`None`: none).
    Recognised(Option<String>),
}

impl PoolRule {
    /// `--pool NAME` if given: recognised by its rows, and checked to be the named lane.
    #[must_use]
    pub fn from_flag(name: Option<&str>) -> Self {
        Self::Recognise {
            named: name.map(str::to_owned),
        }
    }

    /// The lane accumulated as the pool while reading: the recognised one, else the one it
    /// most likely is (`--pool NAME`, else replay's default name). When another lane turns
    /// out to be the pool, its rows are read a second time.
    #[must_use]
    pub fn candidate(&self) -> Option<&str> {
        match self {
            Self::Recognise { named } => Some(
                named
                    .as_deref()
                    .unwrap_or(litehit_core::engine::DEFAULT_POOL_NAME),
            ),
            Self::Recognised(name) => name.as_deref(),
        }
    }
}
