//! `litehit watch` and `demo` through the real binary: following files, the headless output, facts
//! spill, stop state, tiers, TTL and horizon surfaces, OPT and the live quota plan.

mod bounds;
mod demo;
mod engine_metrics;
mod engine_slot;
mod facts_dir;
mod follow;
mod headless_output;
mod horizon_surfaces;
mod opt;
pub(crate) mod pty;
mod quota;
mod service;
mod spill;
mod stop_state;
mod tail;
mod tiers;
mod ttl;
