//! The live monitor's screens on hand-built snapshots: rendered frames, charts, cells, interaction, OPT,
//! targets and notices.

mod block_bytes_notice;
mod cells;
mod charts;
mod interaction;
mod opt;
pub(crate) mod render;
mod targets;
