//! `litehit query`: upstream byte compatibility, spans and inputs, FACTS globs, tiers, windows, OPT beside LRU (and `mrc --opt`), the quota planner (and `mrc --tenants`) and
//! the SQL of docs/SQL.md.

mod facts_globs;
mod inputs;
mod model;
mod opt;
mod quota;
mod quota_mrc;
mod spans;
pub(crate) mod sql;
mod sql_spark;
pub(crate) mod tiers;
mod tiers_edges;
mod upstream;
pub(crate) mod windows;
mod windows_tiers;
