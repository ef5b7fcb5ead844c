//! The keyword arguments `replay` and `Replayer` share → the core's `SingleInstanceFlags`,
//! the same struct the CLI's flags become (so the defaults and checks are the CLI's).

use litehit_core::config::{PlanSource, SingleInstanceFlags};
use litehit_core::engine::{Engine, EngineConfig, Policy};
use litehit_core::formats::TraceFormat;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::litehit_error;

/// The lane parameters as Python passes them (the pure-Python layer has already refused
/// what is not built yet: `model`, `policy="opt"`).
#[derive(Debug, Clone, Default, FromPyObject)]
#[pyo3(from_item_all)]
pub struct LaneOptions {
    /// `block_size`: analysis tokens per block.
    pub block_size: Option<u64>,
    /// `trace_block_size`: the trace's own tokens per block.
    pub trace_block_size: Option<u64>,
    /// `block_bytes`: KV bytes per analysis block.
    pub block_bytes: Option<u64>,
    /// `kv_bytes_per_token`: `block_bytes = this × block_size`.
    pub kv_bytes_per_token: Option<u64>,
    /// `ttl_seconds`, as text (`"600"`, `"1.5"`): read by the CLI's duration grammar.
    pub ttl_seconds: Option<String>,
    /// `pool`: the shared pool lane's name (`True` arrives as `"pool"`).
    pub pool: Option<String>,
}

impl LaneOptions {
    /// The CLI's flags struct for these options, in trace format `format` when known.
    pub fn flags(&self, format: Option<TraceFormat>) -> PyResult<SingleInstanceFlags> {
        let ttl_ns = self
            .ttl_seconds
            .as_deref()
            .map(|text| {
                litehit_core::grammar::parse_duration_ns(text)
                    .map_err(|error| PyValueError::new_err(format!("ttl_seconds: {error}")))
            })
            .transpose()?;
        Ok(SingleInstanceFlags {
            block_size_tokens: self.block_size,
            block_bytes: self.block_bytes,
            kv_bytes_per_token: self.kv_bytes_per_token,
            ttl_ns,
            trace_block_size_tokens: self.trace_block_size,
            format,
            pool: self.pool.clone(),
            ..SingleInstanceFlags::default()
        })
    }

    /// The engine plan for a trace in `format`, as `replay TRACE --out DIR` resolves it.
    pub fn engine_config(&self, format: TraceFormat) -> PyResult<EngineConfig> {
        let plan = PlanSource::Flags(self.flags(None)?)
            .plan_for(Some(format))
            .map_err(|error| litehit_error(&error))?;
        Ok(plan.engine)
    }
}

/// An offline engine (the first bad row stops it) that keeps no capacity curves, as
/// `replay` runs it.
pub fn offline_engine(config: EngineConfig) -> PyResult<Engine> {
    Ok(Engine::new(config, Policy::FailFast)
        .map_err(|error| litehit_error(&error))?
        .without_capacity_curves())
}

/// `format="auto"` → `None` (detected), else one of the CLI's `--format` names.
pub fn trace_format(name: &str) -> PyResult<Option<TraceFormat>> {
    if name == "auto" {
        return Ok(None);
    }
    TraceFormat::from_name(name).map(Some).ok_or_else(|| {
        let names: Vec<&str> = TraceFormat::ALL.iter().map(|f| f.name()).collect();
        PyValueError::new_err(format!(
            "format {name:?}: expected \"auto\" or one of {}",
            names.join(", ")
        ))
    })
}
