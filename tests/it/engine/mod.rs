//! The core engine against the naive oracles: random traces, key shapes, the memory horizon, out-
//! of-memory, seeded scenarios and facts digests.

mod cache_output;
mod core_props;
mod digests;
mod engine_rule;
mod horizon;
mod key_shapes;
pub(crate) mod memory;
mod opt;
mod seed_example;
