//! Single-instance flags → [`SingleInstanceConfig`], the common case without a config file.
//!
//! Defaults, in order: the trace block size is `--trace-block-size`, else the size a format
//! fixes ([`fixed_block_size_tokens`]: Mooncake 512, Qwen-Bailian 16), else `--block-size`,
//! else the format's [`default_block_size_tokens`]; the analysis block size is
//! `--block-size`, else the trace block size (so giving one of the two never makes them
//! disagree). `block_bytes` is `--block-bytes`, else `--kv-bytes-per-token ×` block size,
//! else `--model`'s KV bytes per token `×` block size, else [`DEFAULT_KV_BYTES_PER_TOKEN`]
//! `×` block size (the three flags conflict: giving two is an error).
//!
//! The flags mean the same as a config file with one group and one instance: `--ttl-seconds`
//! is the group's `ttl_seconds`, `--prefix-hash` its `enable_prefix_hash`, `--block-bytes`
//! the size of a one-spec full group, `--trace-block-size` the top-level `block_size`, and
//! `--instance X` an instance `X` with `override_instance_id` `X`. Both resolve to the same
//! [`LaneSpec`](crate::engine::LaneSpec).

use super::{
    ConfigError, DEFAULT_KV_BYTES_PER_TOKEN, DEFAULT_LANE_ID, Result, SingleInstanceConfig,
    SingleInstanceFlags, coarsening_violation, default_block_size_tokens, fixed_block_size_tokens,
    lane,
};
use crate::engine::{EngineConfig, LaneSet, Routing};
use crate::formats::TraceFormat;

/// Resolves the single-instance flags.
///
/// Without `--instance`, lanes are created on the fly, one per instance id seen, all with
/// these parameters, and rows without an instance id go to the lane [`DEFAULT_LANE_ID`].
/// With `--instance X`, there is one lane `X` and every row goes to it
/// ([`Routing::Override`]).
pub fn resolve_single_instance(flags: &SingleInstanceFlags) -> Result<SingleInstanceConfig> {
    let block_size_flag = positive("--block-size", flags.block_size_tokens)?;
    let trace_block_size_flag = positive("--trace-block-size", flags.trace_block_size_tokens)?;
    let trace_block_size_tokens = trace_block_size_flag
        .or_else(|| fixed_block_size_tokens(flags.format))
        .or(block_size_flag)
        .unwrap_or_else(|| default_block_size_tokens(flags.format));
    let block_size_tokens = block_size_flag.unwrap_or(trace_block_size_tokens);
    let trace_name = match (trace_block_size_flag, flags.format) {
        (None, Some(TraceFormat::Mooncake)) => "the Mooncake block size".to_owned(),
        (None, Some(TraceFormat::Bailian)) => "the Qwen-Bailian block size".to_owned(),
        _ => "--trace-block-size".to_owned(),
    };
    if let Some(mut reason) =
        coarsening_violation(block_size_tokens, trace_block_size_tokens, &trace_name)
    {
        if trace_block_size_flag.is_none() {
            reason.push_str("; a trace keyed at another size needs --trace-block-size");
        }
        return Err(flag_error("--block-size", reason));
    }

    let block_bytes = block_bytes(flags, block_size_tokens)?;
    let ttl_ns = flags.ttl_ns.unwrap_or(0);

    let (lanes, routing) = match flags.instance.as_deref() {
        Some("") => return Err(flag_error("--instance", "must not be empty")),
        Some(instance_id) => (
            LaneSet::Configured(vec![lane(
                instance_id,
                block_size_tokens,
                block_bytes,
                ttl_ns,
                flags.prefix_hash,
            )]),
            Routing::Override(instance_id.to_owned()),
        ),
        None => (
            LaneSet::OnTheFly(lane(
                DEFAULT_LANE_ID,
                block_size_tokens,
                block_bytes,
                ttl_ns,
                flags.prefix_hash,
            )),
            Routing::ByInstance,
        ),
    };
    Ok(SingleInstanceConfig {
        trace_format: flags.format,
        engine: EngineConfig {
            trace_block_size_tokens,
            lanes,
            routing,
            pool: match flags.pool.as_deref() {
                Some("") => return Err(flag_error("--pool", "must not be empty")),
                pool => pool.map(str::to_owned),
            },
        },
    })
}

/// `--block-bytes`, or `--kv-bytes-per-token` (or its default) × the block size.
fn block_bytes(flags: &SingleInstanceFlags, block_size_tokens: u64) -> Result<u64> {
    let block_bytes = positive("--block-bytes", flags.block_bytes)?;
    let kv_bytes_per_token = positive("--kv-bytes-per-token", flags.kv_bytes_per_token)?;
    if let Some(model) = &flags.model {
        // The model says the size: a second source of it could only disagree.
        if let Some(flag) = [
            (block_bytes.is_some(), "--block-bytes"),
            (kv_bytes_per_token.is_some(), "--kv-bytes-per-token"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
        {
            return Err(flag_error(
                "--model",
                format!(
                    "{} gives the KV bytes per token ({}); leave out {flag}",
                    model.model, model.kv_bytes_per_token
                ),
            ));
        }
    }
    let kv_bytes_per_token =
        kv_bytes_per_token.or(flags.model.as_ref().map(|m| m.kv_bytes_per_token));
    if let (Some(block_bytes), None) = (block_bytes, kv_bytes_per_token) {
        return Ok(block_bytes);
    }
    let (flag, per_token) = match kv_bytes_per_token {
        Some(per_token) if flags.model.is_some() => ("--model", per_token),
        Some(per_token) => ("--kv-bytes-per-token", per_token),
        None => ("--block-size", DEFAULT_KV_BYTES_PER_TOKEN),
    };
    let derived = per_token.checked_mul(block_size_tokens).ok_or_else(|| {
        flag_error(
            flag,
            format!(
                "{per_token} KV bytes per token × block size {block_size_tokens} tokens \
                 overflows a u64 byte count"
            ),
        )
    })?;
    match block_bytes {
        Some(block_bytes) if block_bytes != derived => Err(flag_error(
            "--block-bytes",
            format!(
                "{block_bytes} disagrees with --kv-bytes-per-token {per_token} × block size \
                 {block_size_tokens} = {derived}"
            ),
        )),
        _ => Ok(derived),
    }
}

/// A size flag must be positive when given.
fn positive(flag: &'static str, value: Option<u64>) -> Result<Option<u64>> {
    match value {
        Some(0) => Err(flag_error(flag, "must be positive, found 0")),
        other => Ok(other),
    }
}

fn flag_error(flag: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Flag {
        flag,
        reason: reason.into(),
    }
}
