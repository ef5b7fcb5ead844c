//! The one resolution stage: a config file or the single-instance flags, together with the
//! format the trace is read in, become the engine plan. `replay`, `watch` and `demo` all
//! resolve through [`PlanSource::plan_for`].
//!
//! Why the format matters: a block size that neither the config nor the flags name follows
//! the format the trace is read in (Mooncake 512, KVCM 16, ...), and that format may be known
//! only once the trace's first line is there (a monitor started before its trace exists). So
//! a source is made once — a config file is read and parsed once per run — and asked for a
//! plan whenever the format becomes known, without reading the file again.

use std::path::{Path, PathBuf};

use super::file::{parse_config_json, resolve_config_value};
use super::{ConfigError, ReplayConfig, Result, SingleInstanceFlags, resolve_single_instance};
use crate::engine::EngineConfig;
use crate::formats::TraceFormat;

/// A config file, read and parsed once.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    path: PathBuf,
    json: serde_json::Value,
    /// The config as written: resolved with no format known.
    as_written: ReplayConfig,
    /// `--pool NAME` given with the config: wins over its `pool_instance_id`.
    pool_override: Option<String>,
}

impl ConfigFile {
    /// Reads and resolves the config file at `path`. Every error's message starts with it.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
            path: path.to_owned(),
            error,
        })?;
        let in_file = |error| ConfigError::File {
            path: path.to_owned(),
            error: Box::new(error),
        };
        let json = parse_config_json(&text).map_err(in_file)?;
        let as_written = resolve_config_value(&json, None).map_err(in_file)?;
        Ok(Self {
            path: path.to_owned(),
            json,
            as_written,
            pool_override: None,
        })
    }

    /// Adds the shared pool lane `name` (`--pool`), in place of the config's
    /// `pool_instance_id` if it has one.
    #[must_use]
    pub fn with_pool(mut self, name: Option<String>) -> Self {
        if let Some(name) = name {
            self.as_written.engine.pool = Some(name.clone());
            self.pool_override = Some(name);
        }
        self
    }

    /// Where the config was read from.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The config as written (its own `trace_format`, if any; no detected format).
    #[must_use]
    pub fn config(&self) -> &ReplayConfig {
        &self.as_written
    }

    /// The config for a trace read in `format`: when the config names no `trace_format`, a
    /// block size it leaves out follows `format`, as if the config had named it.
    pub fn read_as(&self, format: Option<TraceFormat>) -> Result<ReplayConfig> {
        if format.is_none() || self.as_written.trace_format.is_some() {
            return Ok(self.as_written.clone());
        }
        let mut config =
            resolve_config_value(&self.json, format).map_err(|error| ConfigError::File {
                path: self.path.clone(),
                error: Box::new(error),
            })?;
        if let Some(name) = &self.pool_override {
            config.engine.pool = Some(name.clone());
        }
        Ok(config)
    }
}

/// Where a run's setup comes from.
#[derive(Debug, Clone)]
pub enum PlanSource {
    /// An upstream config file.
    ConfigFile(ConfigFile),
    /// The single-instance flags (no config file).
    Flags(SingleInstanceFlags),
}

/// What a run replays with: the engine setup, and the format the setup names (`--format` or
/// the config's `trace_format`; `None` = read the trace's own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnginePlan {
    /// The lanes and routing to build the engine with.
    pub engine: EngineConfig,
    /// The trace format the setup names; `None` = detect it from the trace.
    pub trace_format: Option<TraceFormat>,
}

impl PlanSource {
    /// The plan for a trace read in `format` (`None`: not known yet). The setup's own format
    /// (`--format`, a config's `trace_format`) wins over `format`.
    pub fn plan_for(&self, format: Option<TraceFormat>) -> Result<EnginePlan> {
        match self {
            Self::ConfigFile(file) => {
                let config = file.read_as(format)?;
                Ok(EnginePlan {
                    engine: config.engine,
                    trace_format: config.trace_format,
                })
            }
            Self::Flags(flags) => {
                let resolved = resolve_single_instance(&SingleInstanceFlags {
                    format: flags.format.or(format),
                    ..flags.clone()
                })?;
                Ok(EnginePlan {
                    engine: resolved.engine,
                    trace_format: flags.format,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config that names neither `trace_format` nor a top-level `block_size`.
    const CONFIG: &str = r#"{
  "trace_file_path": "t.jsonl", "output_result_path": "out",
  "instance_groups": [{"name": "g"}],
  "instances": [
    {"instance_group_name": "g", "instance_id": "a", "block_size": 512,
     "location_spec_infos": [{"name": "kv", "size": 1024}],
     "location_spec_groups": [{"name": "full", "spec_names": ["kv"]}]}
  ]
}"#;

    #[test]
    fn a_config_file_is_read_once_and_resolved_for_each_format() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        std::fs::write(&path, CONFIG).unwrap();
        let source = PlanSource::ConfigFile(ConfigFile::read(&path).unwrap());
        // Gone from disk: every later plan comes from what was read.
        std::fs::remove_file(&path).unwrap();
        let as_written = source.plan_for(None).unwrap();
        assert_eq!(
            as_written.engine.trace_block_size_tokens, 256,
            "upstream's default"
        );
        let mooncake = source.plan_for(Some(TraceFormat::Mooncake)).unwrap();
        assert_eq!(mooncake.engine.trace_block_size_tokens, 512);
        assert_eq!(mooncake.trace_format, None, "the config names no format");
        let kvcm = source.plan_for(Some(TraceFormat::Kvcm)).unwrap();
        assert_eq!(kvcm.engine.trace_block_size_tokens, 16);
    }

    #[test]
    fn flags_resolve_for_the_format_and_their_own_format_wins() {
        let source = PlanSource::Flags(SingleInstanceFlags::default());
        let plan = source.plan_for(Some(TraceFormat::Mooncake)).unwrap();
        assert_eq!(plan.engine.trace_block_size_tokens, 512);
        assert_eq!(plan.trace_format, None);
        let typed = PlanSource::Flags(SingleInstanceFlags {
            format: Some(TraceFormat::Bailian),
            ..SingleInstanceFlags::default()
        });
        let plan = typed.plan_for(Some(TraceFormat::Mooncake)).unwrap();
        assert_eq!(plan.engine.trace_block_size_tokens, 16, "--format wins");
        assert_eq!(plan.trace_format, Some(TraceFormat::Bailian));
    }
}
