//! `litehit replay`: upstream parity, safe publication (the race tests stay under `publication`),
//! shards, the summary, threads and the facts file.

mod engine_slot;
mod facts_file;
mod observed;
mod opt;
mod parity;
mod parquet;
mod publication;
pub(crate) mod shards;
mod summary_order;
mod threads;
