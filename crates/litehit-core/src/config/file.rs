//! The upstream `OptimizerLiteHitConfig` JSON → [`ReplayConfig`] (REFERENCE §6.2, §6.3, §9.1).
//!
//! Two phases. First every key is read with upstream's typing (missing → default, present
//! with the wrong type → error), so a type error is reported before any rule. Then the rules
//! run in upstream's order: top-level emptiness, each group's registration rules, trace
//! `block_size > 0`, each instance in config order (Full-only, coarsening, registration,
//! duplicate id), then routing (fanout vs override, override names a lane).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::json::{Arr, Obj};
use super::{
    ConfigError, ReplayConfig, Result, coarsening_violation, default_block_size_tokens, lane,
    ttl_ns_from_seconds,
};
use crate::engine::{EngineConfig, LaneSet, LaneSpec, Routing};
use crate::formats::TraceFormat;

/// Reads and resolves the config file at `path`. Every error's message starts with the path.
pub fn load_config_file(path: &Path) -> Result<ReplayConfig> {
    load_config_file_read_as(path, None)
}

/// [`load_config_file`] for a trace already known to be in `detected` format: a config
/// that names no `trace_format` and no `block_size` gets that format's default block size
/// (Mooncake 512, KVCM 16, ...), as if it had named the format, instead of upstream's 256.
pub fn load_config_file_read_as(
    path: &Path,
    detected: Option<TraceFormat>,
) -> Result<ReplayConfig> {
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
        path: path.to_owned(),
        error,
    })?;
    // Editors on Windows may start the file with a byte-order mark; JSON has no place for it.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    parse_config_str_read_as(text, detected).map_err(|error| ConfigError::File {
        path: path.to_owned(),
        error: Box::new(error),
    })
}

/// Resolves config JSON text (errors name the field path but no file; see
/// [`load_config_file`]).
pub fn parse_config_str(json: &str) -> Result<ReplayConfig> {
    parse_config_str_read_as(json, None)
}

fn parse_config_str_read_as(json: &str, detected: Option<TraceFormat>) -> Result<ReplayConfig> {
    resolve_config_value(&parse_config_json(json)?, detected)
}

/// Config JSON text → its parsed value (a byte-order mark before it is skipped).
pub(super) fn parse_config_json(json: &str) -> Result<Value> {
    let json = json.strip_prefix('\u{feff}').unwrap_or(json);
    super::json::parse_first_wins(json).map_err(|error| ConfigError::Json { error })
}

/// A parsed config → [`ReplayConfig`] for a trace read in `detected` (see
/// [`load_config_file_read_as`]); the file is not read again.
pub(super) fn resolve_config_value(
    value: &Value,
    detected: Option<TraceFormat>,
) -> Result<ReplayConfig> {
    let mut raw = RawConfig::read(&Obj::root(value)?)?;
    raw.detected_format = detected;
    let mut config = raw.resolve()?;
    config.unknown_keys = unknown_keys(value);
    Ok(config)
}

/// Every key of upstream's `OptimizerLiteHitConfig` (REFERENCE §6.2), plus LiteHit's
/// `trace_format`, by where it may appear.
const TOP_LEVEL_KEYS: &[&str] = &[
    "trace_file_path",
    "output_result_path",
    "instance_groups",
    "instances",
    "override_instance_id",
    "block_size",
    "fanout_all_instances",
    "pipeline_worker_count",
    "trace_format",
    "pool_instance_id",
];
const GROUP_KEYS: &[&str] = &[
    "name",
    "capacity_gb",
    "eviction_policy",
    "shared_group_quota",
    "enable_theoretical_max_cache",
    "ttl_seconds",
    "enable_prefix_hash",
];
const INSTANCE_KEYS: &[&str] = &[
    "instance_group_name",
    "instance_id",
    "block_size",
    "location_spec_infos",
    "location_spec_groups",
    "linear_step",
    "optimizer_state_info",
];
const SPEC_KEYS: &[&str] = &["name", "size"];
const SPEC_GROUP_KEYS: &[&str] = &["name", "spec_names"];
const STATE_KEYS: &[&str] = &[
    "full_location_spec_group_name",
    "linear_location_spec_group_name",
];

/// The paths of keys no level of the config knows (`instances[0].blok_size`), in file
/// order. Upstream ignores them, and so does LiteHit, but a typo in an optional key (say
/// `ttl_second`) would otherwise change the analysis silently.
fn unknown_keys(root: &Value) -> Vec<String> {
    fn check(value: &Value, path: &str, known: &[&str], out: &mut Vec<String>) {
        if let Value::Object(map) = value {
            let prefix = if path.is_empty() {
                String::new()
            } else {
                format!("{path}.")
            };
            out.extend(
                map.keys()
                    .filter(|key| !known.contains(&key.as_str()))
                    .map(|key| format!("{prefix}{key}")),
            );
        }
    }
    fn each(value: &Value, key: &str, path: &str, known: &[&str], out: &mut Vec<String>) {
        if let Some(Value::Array(items)) = value.get(key) {
            let path = if path.is_empty() {
                key.to_owned()
            } else {
                format!("{path}.{key}")
            };
            for (index, item) in items.iter().enumerate() {
                check(item, &format!("{path}[{index}]"), known, out);
            }
        }
    }
    let mut out = Vec::new();
    check(root, "", TOP_LEVEL_KEYS, &mut out);
    each(root, "instance_groups", "", GROUP_KEYS, &mut out);
    if let Some(Value::Array(instances)) = root.get("instances") {
        for (index, instance) in instances.iter().enumerate() {
            let path = format!("instances[{index}]");
            check(instance, &path, INSTANCE_KEYS, &mut out);
            each(instance, "location_spec_infos", &path, SPEC_KEYS, &mut out);
            each(
                instance,
                "location_spec_groups",
                &path,
                SPEC_GROUP_KEYS,
                &mut out,
            );
            if let Some(state) = instance.get("optimizer_state_info") {
                check(
                    state,
                    &format!("{path}.optimizer_state_info"),
                    STATE_KEYS,
                    &mut out,
                );
            }
        }
    }
    out
}

/// The config as typed, before any rule is checked.
struct RawConfig<'a> {
    trace_file_path: Option<&'a str>,
    output_result_path: Option<&'a str>,
    instance_groups: Option<Vec<RawGroup<'a>>>,
    instances: Option<Vec<RawInstance<'a>>>,
    override_instance_id: &'a str,
    block_size: Option<u64>,
    fanout_all_instances: bool,
    pipeline_worker_count: Option<i32>,
    trace_format: Option<TraceFormat>,
    /// Our extension key `pool_instance_id`: the shared pool lane's name.
    pool_instance_id: Option<&'a str>,
    /// The format the trace was found in, when known: the block size default when the config
    /// names neither `trace_format` nor `block_size`.
    detected_format: Option<TraceFormat>,
}

struct RawGroup<'a> {
    path: String,
    name: &'a str,
    capacity_gb: Vec<f64>,
    eviction_policy: &'a str,
    shared_group_quota: bool,
    ttl_seconds: i64,
    enable_prefix_hash: bool,
}

struct RawInstance<'a> {
    path: String,
    instance_group_name: &'a str,
    instance_id: &'a str,
    /// `None` when the key is absent (upstream reads 0 and refuses it).
    block_size: Option<i32>,
    location_spec_infos: Vec<RawSpec<'a>>,
    location_spec_groups: Vec<RawSpecGroup<'a>>,
    linear_step: i32,
    full_location_spec_group_name: &'a str,
    linear_location_spec_group_name: &'a str,
}

struct RawSpec<'a> {
    path: String,
    name: &'a str,
    size: i64,
}

struct RawSpecGroup<'a> {
    path: String,
    name: &'a str,
    spec_names: Vec<&'a str>,
}

/// A registered group: its name, and the group as typed, checked when an instance uses it.
struct Group<'g, 'a> {
    name: &'a str,
    raw: &'g RawGroup<'a>,
}

impl<'a> RawConfig<'a> {
    fn read(root: &Obj<'a>) -> Result<Self> {
        Ok(Self {
            trace_file_path: root.string("trace_file_path")?,
            output_result_path: root.string("output_result_path")?,
            instance_groups: read_objects(root, "instance_groups", RawGroup::read)?,
            instances: read_objects(root, "instances", RawInstance::read)?,
            override_instance_id: root.string("override_instance_id")?.unwrap_or(""),
            block_size: root.u64("block_size")?,
            fanout_all_instances: root.bool("fanout_all_instances")?.unwrap_or(false),
            pipeline_worker_count: root.i32("pipeline_worker_count")?,
            trace_format: root
                .string("trace_format")?
                .map(|name| parse_trace_format(&root.field("trace_format"), name))
                .transpose()?,
            pool_instance_id: root.string("pool_instance_id")?,
            detected_format: None,
        })
    }

    fn resolve(self) -> Result<ReplayConfig> {
        let trace_path = non_empty_path("trace_file_path", self.trace_file_path)?;
        let output_dir = non_empty_path("output_result_path", self.output_result_path)?;
        let raw_groups = non_empty_array("instance_groups", self.instance_groups)?;
        let raw_instances = non_empty_array("instances", self.instances)?;
        if self.pool_instance_id == Some("") {
            return Err(ConfigError::Invalid {
                field: "pool_instance_id".to_owned(),
                reason: "must not be empty (it names the shared pool lane)".to_owned(),
            });
        }

        let groups = resolve_groups(&raw_groups)?;
        let trace_block_size_tokens = self.block_size.unwrap_or_else(|| {
            default_block_size_tokens(self.trace_format.or(self.detected_format))
        });
        if trace_block_size_tokens == 0 {
            return Err(invalid(
                "block_size",
                "trace block_size must be positive, found 0",
            ));
        }
        let lanes = resolve_instances(&raw_instances, &groups, trace_block_size_tokens)?;
        let routing =
            resolve_routing(self.override_instance_id, self.fanout_all_instances, &lanes)?;

        // The capacities of the groups in use (only those were checked).
        let mut capacity_gb: Vec<f64> = raw_groups
            .iter()
            .filter(|group| {
                raw_instances
                    .iter()
                    .any(|instance| instance.instance_group_name == group.name)
            })
            .flat_map(|group| group.capacity_gb.iter().copied())
            .collect();
        capacity_gb.sort_by(f64::total_cmp);
        capacity_gb.dedup();

        Ok(ReplayConfig {
            trace_path,
            output_dir,
            trace_format: self.trace_format,
            engine: EngineConfig {
                trace_block_size_tokens,
                lanes: LaneSet::Configured(lanes),
                routing,
                pool: self.pool_instance_id.map(str::to_owned),
            },
            pipeline_worker_count: self.pipeline_worker_count.map(|count| {
                usize::try_from(count.max(1).unsigned_abs()).expect("a u32 fits in usize")
            }),
            capacity_gb,
            unknown_keys: Vec::new(), // filled in by `parse_config_str`, which sees the root
        })
    }
}

impl<'a> RawGroup<'a> {
    fn read(obj: &Obj<'a>) -> Result<Self> {
        let capacity_gb = obj.array("capacity_gb")?;
        obj.bool("enable_theoretical_max_cache")?;
        Ok(Self {
            path: obj.path().to_owned(),
            name: obj.string("name")?.unwrap_or(""),
            capacity_gb: capacity_gb
                .map(|a| a.f64s())
                .transpose()?
                .unwrap_or_default(),
            eviction_policy: obj.string("eviction_policy")?.unwrap_or("lru"),
            shared_group_quota: obj.bool("shared_group_quota")?.unwrap_or(false),
            ttl_seconds: obj.i64("ttl_seconds")?.unwrap_or(0),
            enable_prefix_hash: obj.bool("enable_prefix_hash")?.unwrap_or(false),
        })
    }

    fn field(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }
}

impl<'a> RawInstance<'a> {
    fn read(obj: &Obj<'a>) -> Result<Self> {
        let state = obj.object("optimizer_state_info")?;
        let (full, linear) = match &state {
            Some(state) => (
                state.string("full_location_spec_group_name")?,
                state.string("linear_location_spec_group_name")?,
            ),
            None => (None, None),
        };
        Ok(Self {
            path: obj.path().to_owned(),
            instance_group_name: obj.string("instance_group_name")?.unwrap_or(""),
            instance_id: obj.string("instance_id")?.unwrap_or(""),
            block_size: obj.i32("block_size")?,
            location_spec_infos: read_objects(obj, "location_spec_infos", RawSpec::read)?
                .unwrap_or_default(),
            location_spec_groups: read_objects(obj, "location_spec_groups", RawSpecGroup::read)?
                .unwrap_or_default(),
            linear_step: obj.i32("linear_step")?.unwrap_or(0),
            full_location_spec_group_name: full.unwrap_or(""),
            linear_location_spec_group_name: linear.unwrap_or(""),
        })
    }

    fn field(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }
}

impl<'a> RawSpec<'a> {
    fn read(obj: &Obj<'a>) -> Result<Self> {
        Ok(Self {
            path: obj.path().to_owned(),
            name: obj.string("name")?.unwrap_or(""),
            size: obj.i64("size")?.unwrap_or(0),
        })
    }
}

impl<'a> RawSpecGroup<'a> {
    fn read(obj: &Obj<'a>) -> Result<Self> {
        Ok(Self {
            path: obj.path().to_owned(),
            name: obj.string("name")?.unwrap_or(""),
            spec_names: obj
                .array("spec_names")?
                .map(|names| names.strings())
                .transpose()?
                .unwrap_or_default(),
        })
    }
}

/// Reads the array of objects at `key` with `read`, each element knowing its path.
fn read_objects<'a, T>(
    obj: &Obj<'a>,
    key: &str,
    read: impl Fn(&Obj<'a>) -> Result<T>,
) -> Result<Option<Vec<T>>> {
    let Some(array): Option<Arr<'a>> = obj.array(key)? else {
        return Ok(None);
    };
    let items = array.objects()?;
    let mut out = Vec::with_capacity(array.len());
    for item in &items {
        out.push(read(item)?);
    }
    Ok(Some(out))
}

fn parse_trace_format(field: &str, name: &str) -> Result<TraceFormat> {
    TraceFormat::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = TraceFormat::ALL
            .iter()
            .map(|format| format.name())
            .collect();
        invalid(
            field,
            format!("expected one of {}, found {name:?}", names.join(", ")),
        )
    })
}

fn non_empty_path(field: &str, value: Option<&str>) -> Result<PathBuf> {
    match value {
        None => Err(ConfigError::Missing {
            field: field.to_owned(),
            expected: "a non-empty string",
        }),
        Some("") => Err(invalid(field, "must not be empty")),
        Some(path) => Ok(PathBuf::from(path)),
    }
}

fn non_empty_array<T>(field: &str, value: Option<Vec<T>>) -> Result<Vec<T>> {
    match value {
        None => Err(ConfigError::Missing {
            field: field.to_owned(),
            expected: "a non-empty array",
        }),
        Some(items) if items.is_empty() => Err(invalid(field, "must not be empty")),
        Some(items) => Ok(items),
    }
}

/// The group registry (REFERENCE §6.3 step 1): every group by name, names unique. The
/// registration rules of a group (§9.1) run only when an instance registers with it (see
/// [`check_group`]): upstream checks the groups of registered instances, so a group no
/// instance uses may hold anything.
fn resolve_groups<'g, 'a>(raw_groups: &'g [RawGroup<'a>]) -> Result<Vec<Group<'g, 'a>>> {
    let mut groups: Vec<Group<'g, 'a>> = Vec::with_capacity(raw_groups.len());
    for raw in raw_groups {
        if let Some(first) = groups.iter().position(|group| group.name == raw.name) {
            return Err(invalid(
                raw.field("name"),
                format!(
                    "duplicate group name {:?} (also instance_groups[{first}])",
                    raw.name
                ),
            ));
        }
        groups.push(Group {
            name: raw.name,
            raw,
        });
    }
    Ok(groups)
}

/// The registration rules of the group an instance registers with (REFERENCE §9.1); returns
/// the lane TTL in nanoseconds.
fn check_group(raw: &RawGroup<'_>) -> Result<u64> {
    for (slot, &capacity) in raw.capacity_gb.iter().enumerate() {
        if !capacity.is_finite() || capacity < 0.0 {
            return Err(invalid(
                format!("{}[{slot}]", raw.field("capacity_gb")),
                format!("must be finite and not negative, found {capacity}"),
            ));
        }
    }
    if raw.eviction_policy != "lru" {
        return Err(invalid(
            raw.field("eviction_policy"),
            format!(
                "expected \"lru\" (the only policy), found {:?}",
                raw.eviction_policy
            ),
        ));
    }
    if raw.shared_group_quota {
        return Err(invalid(
            raw.field("shared_group_quota"),
            "true is not supported: each instance is simulated with the whole group capacity",
        ));
    }
    let ttl_seconds = u64::try_from(raw.ttl_seconds).map_err(|_| {
        invalid(
            raw.field("ttl_seconds"),
            format!("must not be negative, found {}", raw.ttl_seconds),
        )
    })?;
    ttl_ns_from_seconds(ttl_seconds).ok_or_else(|| {
        invalid(
            raw.field("ttl_seconds"),
            format!("{ttl_seconds} seconds overflows a u64 count of nanoseconds"),
        )
    })
}

/// Each instance in config order (REFERENCE §6.3 step 3) → its lane.
fn resolve_instances(
    raw_instances: &[RawInstance<'_>],
    groups: &[Group<'_, '_>],
    trace_block_size_tokens: u64,
) -> Result<Vec<LaneSpec>> {
    let mut lanes: Vec<LaneSpec> = Vec::with_capacity(raw_instances.len());
    for raw in raw_instances {
        let lane = resolve_instance(raw, groups, trace_block_size_tokens)?;
        if let Some(first) = lanes
            .iter()
            .position(|existing| existing.instance_id == lane.instance_id)
        {
            return Err(invalid(
                raw.field("instance_id"),
                format!(
                    "duplicate instance id {:?} (also instances[{first}])",
                    lane.instance_id
                ),
            ));
        }
        lanes.push(lane);
    }
    Ok(lanes)
}

fn resolve_instance(
    raw: &RawInstance<'_>,
    groups: &[Group<'_, '_>],
    trace_block_size_tokens: u64,
) -> Result<LaneSpec> {
    if raw.linear_step != 0 {
        return Err(invalid(
            raw.field("linear_step"),
            format!(
                "must be 0, found {} (the facts replay is Full-only)",
                raw.linear_step
            ),
        ));
    }
    let Some(block_size) = raw.block_size else {
        return Err(invalid(
            raw.field("block_size"),
            "missing: the instance's block size in tokens (a multiple of the trace block_size)",
        ));
    };
    let block_size_tokens = u64::try_from(block_size)
        .ok()
        .filter(|&size| size > 0)
        .ok_or_else(|| {
            invalid(
                raw.field("block_size"),
                format!("must be positive, found {block_size}"),
            )
        })?;
    if let Some(reason) = coarsening_violation(
        block_size_tokens,
        trace_block_size_tokens,
        "trace block_size",
    ) {
        return Err(invalid(raw.field("block_size"), reason));
    }
    if raw.instance_id.is_empty() {
        return Err(invalid(raw.field("instance_id"), "must not be empty"));
    }
    let group = groups
        .iter()
        .find(|group| group.name == raw.instance_group_name)
        .ok_or_else(|| {
            let reason = if raw.instance_group_name.is_empty() {
                let names: Vec<String> = groups
                    .iter()
                    .map(|group| format!("{:?}", group.name))
                    .collect();
                format!(
                    "missing: the name of one of instance_groups ({})",
                    names.join(", ")
                )
            } else {
                format!(
                    "group {:?} not found in instance_groups",
                    raw.instance_group_name
                )
            };
            invalid(raw.field("instance_group_name"), reason)
        })?;
    let ttl_ns = check_group(group.raw)?;
    check_specs(raw)?;
    check_spec_groups(raw)?;
    let block_bytes = size_full_only(raw)?;
    Ok(lane(
        raw.instance_id,
        block_size_tokens,
        block_bytes,
        ttl_ns,
        group.raw.enable_prefix_hash,
    ))
}

/// `location_spec_infos`: non-empty, named, sizes > 0, names unique.
fn check_specs(raw: &RawInstance<'_>) -> Result<()> {
    if raw.location_spec_infos.is_empty() {
        return Err(invalid(
            raw.field("location_spec_infos"),
            "must not be empty",
        ));
    }
    for (index, spec) in raw.location_spec_infos.iter().enumerate() {
        if spec.name.is_empty() {
            return Err(invalid(format!("{}.name", spec.path), "must not be empty"));
        }
        if spec.size <= 0 {
            return Err(invalid(
                format!("{}.size", spec.path),
                format!("must be positive, found {}", spec.size),
            ));
        }
        if let Some(first) = raw.location_spec_infos[..index]
            .iter()
            .position(|other| other.name == spec.name)
        {
            return Err(invalid(
                format!("{}.name", spec.path),
                format!(
                    "duplicate spec name {:?} (also location_spec_infos[{first}])",
                    spec.name
                ),
            ));
        }
    }
    Ok(())
}

/// `location_spec_groups`: named, unique names, spec names non-empty and unique per group.
fn check_spec_groups(raw: &RawInstance<'_>) -> Result<()> {
    for (index, group) in raw.location_spec_groups.iter().enumerate() {
        if group.name.is_empty() {
            return Err(invalid(format!("{}.name", group.path), "must not be empty"));
        }
        for (position, name) in group.spec_names.iter().enumerate() {
            let field = format!("{}.spec_names[{position}]", group.path);
            if name.is_empty() {
                return Err(invalid(field, "must not be empty"));
            }
            if group.spec_names[..position].contains(name) {
                return Err(invalid(
                    field,
                    format!("duplicate spec name {name:?} in group {:?}", group.name),
                ));
            }
        }
        if let Some(first) = raw.location_spec_groups[..index]
            .iter()
            .position(|other| other.name == group.name)
        {
            return Err(invalid(
                format!("{}.name", group.path),
                format!(
                    "duplicate group name {:?} (also location_spec_groups[{first}])",
                    group.name
                ),
            ));
        }
    }
    Ok(())
}

/// `block_bytes` = Σ sizes of the specs the full group names (upstream `size_full_only`).
/// The linear group, when named, must exist, differ from the full group and be valid too,
/// although the Full-only replay does not use its size.
fn size_full_only(raw: &RawInstance<'_>) -> Result<u64> {
    let groups = &raw.location_spec_groups;
    let full_name = match (raw.full_location_spec_group_name, groups.as_slice()) {
        ("", [only]) => only.name,
        ("", []) => {
            return Err(invalid(
                raw.field("location_spec_groups"),
                "must not be empty: the full group gives block_bytes",
            ));
        }
        ("", several) => {
            let names: Vec<String> = several.iter().map(|g| format!("{:?}", g.name)).collect();
            return Err(invalid(
                raw.field("optimizer_state_info.full_location_spec_group_name"),
                format!(
                    "must name one of the {} location_spec_groups ({}) when there is more \
                     than one",
                    several.len(),
                    names.join(", ")
                ),
            ));
        }
        (name, _) => name,
    };
    let linear_name = raw.linear_location_spec_group_name;
    if !linear_name.is_empty() && linear_name == full_name {
        return Err(invalid(
            raw.field("optimizer_state_info.linear_location_spec_group_name"),
            format!("must differ from the full group {full_name:?}"),
        ));
    }
    let full_bytes = group_size(raw, "full", full_name)?;
    if !linear_name.is_empty() {
        group_size(raw, "linear", linear_name)?;
    }
    Ok(full_bytes)
}

/// Σ sizes of the specs named by the group `name` (`role` = "full" or "linear"); positive.
fn group_size(raw: &RawInstance<'_>, role: &str, name: &str) -> Result<u64> {
    let group = raw
        .location_spec_groups
        .iter()
        .find(|group| group.name == name)
        .ok_or_else(|| {
            invalid(
                raw.field("location_spec_groups"),
                format!("{role} group {name:?} not found"),
            )
        })?;
    if group.spec_names.is_empty() {
        return Err(invalid(
            format!("{}.spec_names", group.path),
            format!("{role} group {name:?} names no spec, so its size would be 0"),
        ));
    }
    // Summed as upstream does, in int64: a total past i64::MAX is an error there too.
    let mut total_bytes: i64 = 0;
    for (position, spec_name) in group.spec_names.iter().enumerate() {
        let spec = raw
            .location_spec_infos
            .iter()
            .find(|spec| spec.name == *spec_name)
            .ok_or_else(|| {
                invalid(
                    format!("{}.spec_names[{position}]", group.path),
                    format!("spec {spec_name:?} not found in location_spec_infos"),
                )
            })?;
        total_bytes = total_bytes.checked_add(spec.size).ok_or_else(|| {
            invalid(
                group.path.clone(),
                format!("the sizes of {role} group {name:?} overflow a 64-bit byte count"),
            )
        })?;
    }
    Ok(total_bytes.unsigned_abs())
}

/// REFERENCE §6.3 step 4: fanout and override are exclusive; an override names a lane.
fn resolve_routing(override_id: &str, fanout: bool, lanes: &[LaneSpec]) -> Result<Routing> {
    if fanout && !override_id.is_empty() {
        return Err(invalid(
            "fanout_all_instances",
            format!("cannot be combined with override_instance_id {override_id:?}"),
        ));
    }
    if fanout {
        return Ok(Routing::Fanout);
    }
    if override_id.is_empty() {
        return Ok(Routing::ByInstance);
    }
    if lanes.iter().any(|lane| lane.instance_id == override_id) {
        return Ok(Routing::Override(override_id.to_owned()));
    }
    let configured: Vec<String> = lanes
        .iter()
        .map(|lane| format!("{:?}", lane.instance_id))
        .collect();
    Err(invalid(
        "override_instance_id",
        format!(
            "{override_id:?} does not name a configured instance (configured: {})",
            configured.join(", ")
        ),
    ))
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}
