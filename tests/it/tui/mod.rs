//! The live monitor's screens on hand-built snapshots: rendered frames, charts, cells, interaction, OPT,
//! the quota line, targets and notices.

mod block_bytes_notice;
mod cells;
mod charts;
mod interaction;
mod opt;
mod quota;
pub(crate) mod render;
mod targets;
