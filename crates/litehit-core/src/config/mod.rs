//! Configuration: upstream `OptimizerLiteHitConfig` JSON or single-instance flags →
//! validated [`crate::engine::EngineConfig`]. No clap type reaches past this module.
//!
//! This is the second of the two argument stages: `cli` says what was typed, this module says
//! what it means. It owns every default and every validation of the run's parameters, and it
//! reports each problem with the field path (`instances[1].block_size: …`) or the flag
//! (`--block-bytes: …`). It reads the config file, but never the trace and never the output
//! directory (the command that writes facts checks that the directory exists).
//!
//! [`PlanSource::plan_for`] is the one resolution stage every command calls: a config file
//! (read and parsed once, [`ConfigFile`]) or the flags, plus the format the trace is read
//! in, → [`EnginePlan`].
//!
//! Two ways in, one result:
//! - [`load_config_file`] / [`parse_config_str`]: the upstream JSON config (REFERENCE §6.2,
//!   §6.3, §9.1), accepted as is, plus our optional `trace_format` key → [`ReplayConfig`].
//! - [`resolve_single_instance`]: the common case without a file, from
//!   [`SingleInstanceFlags`] → [`SingleInstanceConfig`]. A setup expressed both ways resolves
//!   to identical [`LaneSpec`]s.
//!
//! Rows without an instance id are routed by [`default_lane_for_rows_without_instance`].
//!
//! Deliberate differences from upstream, each an error where upstream is silently wrong:
//! int32 keys (`instances[].block_size`, `linear_step`, `pipeline_worker_count`) reject values
//! outside the 32-bit range instead of truncating them, and `ttl_seconds × 10⁹` is checked for
//! overflow.

mod file;
mod flags;
mod json;
mod kv_size;
mod model;
mod model_presets;
mod plan;

use std::path::PathBuf;

use crate::engine::{EngineConfig, LaneSet, LaneSpec, Routing};
use crate::formats::TraceFormat;

pub use file::{load_config_file, load_config_file_read_as, parse_config_str};
pub use flags::resolve_single_instance;
pub use kv_size::{ImplausibleKvSize, PLAUSIBLE_KV_BYTES_PER_TOKEN};
pub use model::{ConfigProblem, KvCacheDtype, ModelError, ModelKvSize};
pub use model_presets::{ModelPreset, PRESETS as MODEL_PRESETS, preset as model_preset};
pub use plan::{ConfigFile, EnginePlan, PlanSource};

/// Upstream's default trace block size (config key `block_size`) when no format is known.
pub const DEFAULT_TRACE_BLOCK_SIZE_TOKENS: u64 = 256;

/// The lane that rows without an instance id go to when lanes are created on the fly.
pub const DEFAULT_LANE_ID: &str = "default";

/// KV bytes per token assumed when neither `--block-bytes` nor `--kv-bytes-per-token` is given:
/// 131 072 B = 128 KiB, the fp16 KV cache of Llama-3-8B (32 layers × 8 KV heads × 128 head
/// dim × 2 (K and V) × 2 bytes). It only scales GB capacities to blocks; hit rates by blocks
/// or tokens do not depend on it.
pub const DEFAULT_KV_BYTES_PER_TOKEN: u64 = 131_072;

const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// Everything that can be wrong with a config file or the single-instance flags.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("{}: cannot read config: {error}", path.display())]
    Read {
        /// The config file, named first in the message.
        path: PathBuf,
        /// Why the system refused the read.
        error: std::io::Error,
    },
    /// Something inside the config file at `path` is wrong; `error` says what and where.
    #[error("{}: {error}", path.display())]
    File {
        /// The config file, so a message deep inside it still names the file.
        path: PathBuf,
        /// What is wrong inside it, with the key's path.
        error: Box<ConfigError>,
    },
    /// The text is not JSON.
    #[error("invalid JSON: {error}")]
    Json {
        /// serde_json's message, with line and column.
        error: serde_json::Error,
    },
    /// A required key is absent.
    #[error("{field}: missing, expected {expected}")]
    Missing {
        /// The key's path (`instances[2].block_size`), so the user finds it.
        field: String,
        /// What belongs there, as the message says it.
        expected: &'static str,
    },
    /// A present key has the wrong JSON type.
    #[error("{field}: expected {expected}, found {found}")]
    WrongType {
        /// The key's path.
        field: String,
        /// The JSON type that belongs there.
        expected: &'static str,
        /// The JSON type found.
        found: String,
    },
    /// A key is well typed but its value is not allowed.
    #[error("{field}: {reason}")]
    Invalid {
        /// The key's path.
        field: String,
        /// Why the value is not allowed.
        reason: String,
    },
    /// A single-instance flag (or a combination of them) is not allowed.
    #[error("{flag}: {reason}")]
    Flag {
        /// The flag at fault, as typed on the command line.
        flag: &'static str,
        /// Why it is not allowed.
        reason: String,
    },
    /// Several lanes are configured and a row has no instance id to pick one.
    #[error(
        "a row without an instance id cannot be routed: {lane_count} instances are configured; \
         set override_instance_id to one of them, or fanout_all_instances to true"
    )]
    AmbiguousDefaultLane {
        /// How many lanes the config sets, so the message says why it cannot choose.
        lane_count: usize,
    },
}

/// `Result` with [`ConfigError`].
pub type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// A replay as configured by an upstream config file, validated and resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayConfig {
    /// `trace_file_path`, as written (relative paths are relative to the working directory,
    /// as upstream).
    pub trace_path: PathBuf,
    /// `output_result_path`: the directory `litehit_facts.csv` is published in.
    pub output_dir: PathBuf,
    /// Our extension key `trace_format`; `None` = detect from the content.
    pub trace_format: Option<TraceFormat>,
    /// The lanes and routing the config sets, ready for [`crate::engine::Engine::new`].
    pub engine: EngineConfig,
    /// `pipeline_worker_count` clamped to at least 1; `None` (key absent) = `LITEHIT_THREADS`,
    /// else one per core ([`crate::threads::available`]).
    pub pipeline_worker_count: Option<usize>,
    /// Every group's `capacity_gb`, merged, sorted ascending and deduplicated. Informative:
    /// facts do not depend on capacities (a query or summary may use them as its slots).
    pub capacity_gb: Vec<f64>,
    /// Keys, at any level (`instances[0].blok_size`), that neither upstream nor LiteHit
    /// knows: ignored, as upstream ignores them, and worth a warning (usually a typo).
    pub unknown_keys: Vec<String>,
}

/// The single-instance setup as typed on the command line (filled in by `cli`; not a clap
/// type). Each field names the flag it is expected to come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SingleInstanceFlags {
    /// `--block-size`: analysis tokens per block. Default: `--trace-block-size` if given,
    /// else [`default_block_size_tokens`] of the format.
    pub block_size_tokens: Option<u64>,
    /// `--block-bytes`: KV bytes per analysis block.
    pub block_bytes: Option<u64>,
    /// `--kv-bytes-per-token`: `block_bytes = this × block_size_tokens`. Default
    /// [`DEFAULT_KV_BYTES_PER_TOKEN`] when `--block-bytes` is not given either.
    pub kv_bytes_per_token: Option<u64>,
    /// `--model`, resolved ([`ModelKvSize::resolve`]): its KV bytes per token, in place of
    /// `--kv-bytes-per-token` (giving both, or `--block-bytes`, is an error).
    pub model: Option<ModelKvSize>,
    /// `--ttl-seconds` in nanoseconds (it takes `1.5s`, `250ms`): fixed TTL, `0` or absent =
    /// none.
    pub ttl_ns: Option<u64>,
    /// `--prefix-hash`: chain raw per-block hashes before re-blocking.
    pub prefix_hash: bool,
    /// `--instance`: route every row to this one lane.
    pub instance: Option<String>,
    /// `--trace-block-size`: the trace's native tokens per block. Default: the analysis
    /// block size.
    pub trace_block_size_tokens: Option<u64>,
    /// `--format`: the trace format, if known (it picks the default block size).
    pub format: Option<TraceFormat>,
    /// `--pool [NAME]`: add the shared pool lane under this name.
    pub pool: Option<String>,
}

/// What [`SingleInstanceFlags`] resolve to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SingleInstanceConfig {
    /// `--format`, passed through; `None` = detect from the content.
    pub trace_format: Option<TraceFormat>,
    /// The one lane (or the fleet of like lanes) the flags describe.
    pub engine: EngineConfig,
}

/// Where rows without an instance id go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultLane<'a> {
    /// To this one lane.
    Lane(&'a str),
    /// To every lane, as every other row (fanout ignores instance ids).
    EveryLane,
}

/// The trace block size a format is written in, used as the default block size:
/// Mooncake 512 (FAST'25 README), Qwen-Bailian 16, KVCM 16 (tair optimizer configs use 16 or
/// 64; the log does not say), `LMCache` 256 (its default chunk size), standard 256 (upstream's
/// default `block_size`), unknown 256.
pub fn default_block_size_tokens(format: Option<TraceFormat>) -> u64 {
    match format {
        Some(TraceFormat::Kvcm) => KVCM_BLOCK_SIZE_TOKENS,
        _ => format
            .and_then(TraceFormat::native_block_size_tokens)
            .unwrap_or(DEFAULT_TRACE_BLOCK_SIZE_TOKENS),
    }
}

/// KVCM logs do not say their block size; tair optimizer configs use 16 (or 64).
const KVCM_BLOCK_SIZE_TOKENS: u64 = 16;

/// The block size a format's keys are defined at, for the formats that fix one: Mooncake's
/// `hash_ids` cover 512 tokens each, Qwen-Bailian's 16. Their keys can be at no other size,
/// so `--block-size` alone is the analysis size there (coarsened from this), where for the
/// other formats it also says what the keys are.
#[must_use]
pub fn fixed_block_size_tokens(format: Option<TraceFormat>) -> Option<u64> {
    format
        .filter(|format| matches!(format, TraceFormat::Mooncake | TraceFormat::Bailian))
        .and_then(TraceFormat::native_block_size_tokens)
}

/// Where the engine sends a row that has no instance id.
///
/// Fanout sends it to every lane; an override sends it to the override; lanes created on the
/// fly send it to the template's lane ([`DEFAULT_LANE_ID`]); a single configured lane takes
/// it. With several configured lanes and neither override nor fanout it is ambiguous, and the
/// error says to set `override_instance_id` or `fanout_all_instances`.
pub fn default_lane_for_rows_without_instance(engine: &EngineConfig) -> Result<DefaultLane<'_>> {
    match (&engine.routing, &engine.lanes) {
        (Routing::Fanout, _) => Ok(DefaultLane::EveryLane),
        (Routing::Override(id), _) => Ok(DefaultLane::Lane(id)),
        (Routing::ByInstance, LaneSet::OnTheFly(template)) => {
            Ok(DefaultLane::Lane(&template.instance_id))
        }
        (Routing::ByInstance, LaneSet::Configured(lanes)) => match lanes.as_slice() {
            [only] => Ok(DefaultLane::Lane(&only.instance_id)),
            lanes => Err(ConfigError::AmbiguousDefaultLane {
                lane_count: lanes.len(),
            }),
        },
    }
}

/// `ttl_seconds × 10⁹`, or `None` if that overflows `u64`.
fn ttl_ns_from_seconds(ttl_seconds: u64) -> Option<u64> {
    ttl_seconds.checked_mul(NANOS_PER_SECOND)
}

/// The coarsening rule shared by the file and the flags: analysis blocks are whole numbers
/// of trace blocks. Returns the reason when they are not (both sizes are positive here);
/// `trace_name` is how the trace block size was given (`trace block_size` in a file).
fn coarsening_violation(
    block_size_tokens: u64,
    trace_block_size_tokens: u64,
    trace_name: &str,
) -> Option<String> {
    (!block_size_tokens.is_multiple_of(trace_block_size_tokens)).then(|| {
        format!(
            "{block_size_tokens} is not a multiple of {trace_name} {trace_block_size_tokens} \
             (re-blocking is coarsening only)"
        )
    })
}

/// A lane, for the resolvers.
fn lane(
    instance_id: &str,
    block_size_tokens: u64,
    block_bytes: u64,
    ttl_ns: u64,
    enable_prefix_hash: bool,
) -> LaneSpec {
    LaneSpec {
        instance_id: instance_id.to_owned(),
        block_size_tokens,
        block_bytes,
        ttl_ns,
        enable_prefix_hash,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(id: &str) -> LaneSpec {
        lane(id, 16, 1024, 0, false)
    }

    #[test]
    fn one_configured_lane_takes_rows_without_instance() {
        let engine = EngineConfig {
            trace_block_size_tokens: 16,
            lanes: LaneSet::Configured(vec![spec("a")]),
            routing: Routing::ByInstance,
            pool: None,
        };
        assert_eq!(
            default_lane_for_rows_without_instance(&engine).unwrap(),
            DefaultLane::Lane("a")
        );
    }

    #[test]
    fn several_lanes_without_override_or_fanout_is_ambiguous() {
        let mut engine = EngineConfig {
            trace_block_size_tokens: 16,
            lanes: LaneSet::Configured(vec![spec("a"), spec("b")]),
            routing: Routing::ByInstance,
            pool: None,
        };
        let message = default_lane_for_rows_without_instance(&engine)
            .unwrap_err()
            .to_string();
        assert!(message.contains("set override_instance_id"), "{message}");
        assert!(message.contains("fanout_all_instances"), "{message}");
        engine.routing = Routing::Fanout;
        assert_eq!(
            default_lane_for_rows_without_instance(&engine).unwrap(),
            DefaultLane::EveryLane
        );
        engine.routing = Routing::Override("b".to_owned());
        assert_eq!(
            default_lane_for_rows_without_instance(&engine).unwrap(),
            DefaultLane::Lane("b")
        );
    }

    #[test]
    fn on_the_fly_lanes_send_rows_without_instance_to_the_template() {
        let engine = EngineConfig {
            trace_block_size_tokens: 16,
            lanes: LaneSet::OnTheFly(spec(DEFAULT_LANE_ID)),
            routing: Routing::ByInstance,
            pool: None,
        };
        assert_eq!(
            default_lane_for_rows_without_instance(&engine).unwrap(),
            DefaultLane::Lane(DEFAULT_LANE_ID)
        );
    }

    #[test]
    fn ttl_conversion_is_checked() {
        assert_eq!(ttl_ns_from_seconds(5), Some(5_000_000_000));
        assert_eq!(ttl_ns_from_seconds(u64::MAX / NANOS_PER_SECOND + 1), None);
    }
}
