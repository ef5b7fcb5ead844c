//! The `capacity` label of a slot as `/metrics` and the `--headless` JSON both spell it (so a
//! dashboard joins them), kept apart from `metrics.rs` so the headless report has it without
//! the `metrics` feature.

use litehit_core::projector::Capacity;

use crate::snapshot::Slot;

/// The `capacity` label of the unlimited-capacity bound.
pub const INFINITE_CAPACITY_LABEL: &str = "inf";

/// The `capacity` label of a slot: its unit in its spelling (`40GiB`, `0.5GiB`, `5000blocks`);
/// `None` for an unlimited slot, which is the `inf` series.
#[must_use]
pub fn capacity_label(capacity: Capacity) -> Option<String> {
    match capacity {
        Capacity::Gigabytes(gb) => Some(format!("{gb}GiB")),
        Capacity::Blocks(blocks) => Some(format!("{blocks}blocks")),
        Capacity::Infinite => None,
    }
}

/// The `capacity` label of `slot`: its name (`engine`) if it has one, else
/// [`capacity_label`].
#[must_use]
pub fn slot_label(slot: &Slot) -> Option<String> {
    match slot.name() {
        Some(name) => Some(name.to_owned()),
        None => capacity_label(slot.capacity),
    }
}
