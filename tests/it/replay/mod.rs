//! `litehit replay`: upstream parity, safe publication (the race tests stay under `publication`),
//! shards, the summary, threads and the facts file.

mod engine_slot;
mod facts_file;
mod observed;
mod parity;
mod publication;
pub(crate) mod shards;
mod summary_order;
mod threads;
