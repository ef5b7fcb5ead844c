//! `/metrics`: the live endpoint and Prometheus' own tools reading it.

pub(crate) mod live;
mod prometheus;
