//! The keyword arguments `replay` and `Replayer` share → the core's `SingleInstanceFlags`,
//! the same struct the CLI's flags become (so the defaults and checks are the CLI's).

use litehit_core::config::{PlanSource, SingleInstanceFlags};
use litehit_core::engine::{CachePolicies, CachePolicy, Engine, EngineConfig, Policy};
use litehit_core::formats::TraceFormat;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::{chain_text, litehit_error, litehit_message};

/// The lane parameters as Python passes them.
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
    /// `model`: a preset's Hugging Face id or a `config.json` path (`--model`).
    pub model: Option<String>,
    /// `policy`: `lru`, `opt` or `lru,opt` (`--policy`); `None` = LRU.
    pub policy: Option<String>,
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
        let model = self
            .model
            .as_deref()
            .map(|name| {
                litehit_core::config::ModelKvSize::resolve(name, None)
                    .map_err(|error| litehit_message(format!("model: {}", chain_text(&error))))
            })
            .transpose()?;
        Ok(SingleInstanceFlags {
            model,
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

    /// The eviction policies asked for (`--policy`'s spelling; LRU by default).
    pub fn cache_policies(&self) -> PyResult<CachePolicies> {
        self.policy
            .as_deref()
            .map_or(Ok(CachePolicies::LRU), |text| {
                text.parse()
                    .map_err(|error: String| PyValueError::new_err(format!("policy: {error}")))
            })
    }
}

/// The policies of `policies` in the order their facts are returned: the primary first.
pub fn policy_order(policies: CachePolicies) -> Vec<CachePolicy> {
    let primary = policies.primary();
    let mut order = vec![primary];
    order.extend(
        [CachePolicy::Lru, CachePolicy::Opt]
            .into_iter()
            .filter(|&policy| policy != primary && policies.contains(policy)),
    );
    order
}

/// An offline engine (the first bad row stops it) that keeps no capacity curves and replays
/// `policies`, as `replay` runs it.
pub fn offline_engine(config: EngineConfig, policies: CachePolicies) -> PyResult<Engine> {
    Engine::new(config, Policy::FailFast)
        .map_err(|error| litehit_error(&error))?
        .without_capacity_curves()
        .with_cache_policies(policies)
        .map_err(|error| litehit_error(&error))
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
