//! The one slot policy: which capacities the live monitor's slots may hold. `watch
//! --capacity-gb`, the defaults file's `capacity-gb` and the add-slot dialog all call
//! [`check`] (or [`check_new`]), so the same slots are refused everywhere with the same
//! message.
//!
//! A slot must hold at least one block (a 0-block slot shows nothing), must not be ∞ (always
//! shown, the last column), and must differ from every other slot: equal capacities, or
//! different spellings of the same block count at every known block size (`10` GB and
//! `160b` with 64 MiB blocks), are one slot. Where no block size is known yet, only 0 itself
//! counts as empty and only equal capacities as the same.

use crate::display::{Precision, bytes, capacity_label};
use crate::projector::Capacity;

/// Why a capacity is no slot.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SlotError {
    /// ∞ (typed as `inf` or any negative size).
    #[error("unlimited (inf, or any negative size) is always shown (the ∞ column); leave it out")]
    Unlimited,
    /// 0, or a size under one block at every known block size.
    #[error(
        "{} is {}: a slot needs at least one block",
        capacity_label(*.capacity),
        empty_what(*.block_bytes)
    )]
    Empty {
        /// The slot as given.
        capacity: Capacity,
        /// The largest known block size, `None` when none is known.
        block_bytes: Option<u64>,
    },
    /// The same capacity as a slot before it.
    #[error(
        "{} is given twice: each slot needs its own block count",
        capacity_label(*.capacity)
    )]
    Twice {
        /// The slot given twice.
        capacity: Capacity,
    },
    /// Another spelling of an earlier slot's block count.
    #[error(
        "{} is the same block count as the slot {}: each slot needs its own block count",
        capacity_label(*.capacity),
        capacity_label(*.existing)
    )]
    SameBlocks {
        /// The slot as given.
        capacity: Capacity,
        /// The earlier slot with the same block count.
        existing: Capacity,
    },
}

fn empty_what(block_bytes: Option<u64>) -> String {
    match block_bytes {
        Some(block_bytes) => format!("0 blocks of {}", bytes(block_bytes, Precision::Decimals(2))),
        None => "0 blocks".to_owned(),
    }
}

/// Checks every slot in order against those before it: the first refused one's reason.
/// `block_bytes` are the known lanes' block sizes (empty while none is known).
///
/// # Errors
/// The first slot [`check_new`] refuses.
pub fn check(slots: &[Capacity], block_bytes: &[u64]) -> Result<(), SlotError> {
    slots
        .iter()
        .enumerate()
        .try_for_each(|(index, &capacity)| check_new(&slots[..index], capacity, block_bytes))
}

/// Whether `capacity` may be added beside the slots `existing` (see the module doc).
///
/// # Errors
/// [`SlotError`] names the reason.
pub fn check_new(
    existing: &[Capacity],
    capacity: Capacity,
    block_bytes: &[u64],
) -> Result<(), SlotError> {
    let known: Vec<u64> = block_bytes.iter().copied().filter(|&b| b > 0).collect();
    let counts = |capacity: Capacity| -> Vec<Option<u64>> {
        known.iter().map(|&b| capacity.blocks(b)).collect()
    };
    match capacity {
        Capacity::Infinite => return Err(SlotError::Unlimited),
        Capacity::Blocks(0) => {
            return Err(SlotError::Empty {
                capacity,
                block_bytes: None,
            });
        }
        // Under one byte is 0 blocks at any block size.
        Capacity::Gigabytes(gb) if crate::projector::capacity_bytes_for_gb(gb) == Some(0) => {
            return Err(SlotError::Empty {
                capacity,
                block_bytes: known.iter().max().copied(),
            });
        }
        Capacity::Gigabytes(_) | Capacity::Blocks(_) => {}
    }
    if !known.is_empty() && counts(capacity).iter().all(|&count| count == Some(0)) {
        return Err(SlotError::Empty {
            capacity,
            block_bytes: known.iter().max().copied(),
        });
    }
    if existing.contains(&capacity) {
        return Err(SlotError::Twice { capacity });
    }
    if !known.is_empty() {
        let own = counts(capacity);
        if let Some(&existing) = existing.iter().find(|&&existing| counts(existing) == own) {
            return Err(SlotError::SameBlocks { capacity, existing });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB_64: u64 = 64 << 20;

    #[test]
    fn zero_blocks_unlimited_and_duplicates_are_refused() {
        let refused = |slots: &[Capacity], block_bytes: &[u64]| {
            check(slots, block_bytes).map_err(|error| error.to_string())
        };
        assert_eq!(
            refused(&[Capacity::Gigabytes(0.0), Capacity::Gigabytes(10.0)], &[]),
            Err("0 GiB is 0 blocks: a slot needs at least one block".to_owned())
        );
        assert!(refused(&[Capacity::Blocks(0)], &[MIB_64]).is_err());
        // Under one byte is 0 blocks at any block size; under one block once it is known.
        assert!(
            refused(
                &[Capacity::Gigabytes(1e-12), Capacity::Gigabytes(2e-12)],
                &[]
            )
            .is_err()
        );
        assert!(refused(&[Capacity::Gigabytes(1e-6)], &[]).is_ok());
        assert!(refused(&[Capacity::Gigabytes(1e-6)], &[MIB_64]).is_err());
        assert!(
            refused(&[Capacity::Gigabytes(1e-12)], &[MIB_64])
                .is_err_and(|message| message.contains("0 blocks of 64.00 MiB"))
        );
        assert!(
            refused(&[Capacity::Gigabytes(10.0), Capacity::Gigabytes(10.0)], &[])
                .is_err_and(|message| message.contains("given twice"))
        );
        // 10 GiB of 64 MiB blocks is 160 blocks; with 1 MiB blocks it is another count.
        assert!(
            refused(
                &[Capacity::Gigabytes(10.0), Capacity::Blocks(160)],
                &[MIB_64]
            )
            .is_err_and(|message| message.contains("the same block count as the slot 10 GiB"))
        );
        assert!(
            refused(
                &[Capacity::Gigabytes(10.0), Capacity::Blocks(160)],
                &[1 << 20]
            )
            .is_ok()
        );
        assert_eq!(check(&[Capacity::Infinite], &[]), Err(SlotError::Unlimited));
        assert!(
            refused(
                &[Capacity::Gigabytes(10.0), Capacity::Blocks(1000)],
                &[MIB_64]
            )
            .is_ok()
        );
    }
}
