//! The defaults file: `$XDG_CONFIG_HOME/litehit/config.toml` (else
//! `~/.config/litehit/config.toml`), or `--config-file PATH` / `LITEHIT_CONFIG`, none with
//! `--no-config-file`. It holds defaults for flags (docs/CONFIG.md): a key is a flag's long
//! name without `--`, its value is read by the flag's own parser (`litehit_core::grammar`, or
//! the same clap value enum), and a flag typed on the command line always wins.
//!
//! Nothing here is an analysis parameter that a trace config describes better: with a trace
//! config (`watch --config`, `replay CONFIG.json`) its own slots and lane parameters win over
//! the file's. A bad value or an unknown key is an error naming the file, line and key.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::ValueEnum as _;
use clap::parser::ValueSource;
use toml::Spanned;

use super::query_args::{TierArgs, TierModeArg};
use super::watch_args::{ColorWhen, parse_listen_address};
use super::{Cli, Command};
use litehit_core::grammar::{
    parse_byte_size, parse_capacity, parse_duration_seconds, parse_memory_horizon,
};
use litehit_core::projector::Capacity;

/// The environment variable naming a defaults file (like `--config-file`).
pub const ENV_CONFIG_FILE: &str = "LITEHIT_CONFIG";

/// Every key the file knows: (key, the commands it applies to, what it sets).
pub const KEYS: &[(&str, &str, &str)] = &[
    (
        "allowed-host",
        "watch",
        "with a loopback listen: more Host names: \"a.internal,b\" or [\"a.internal\", \"b\"]",
    ),
    (
        "block-bytes",
        "replay, watch",
        "KV-cache bytes per block (1048576, 1MiB)",
    ),
    (
        "capacity-gb",
        "watch, demo",
        "capacity slots: \"10,40,80\" or [10, 40, \"1000b\"]",
    ),
    (
        "color",
        "watch, demo",
        "\"auto\" (colour unless NO_COLOR is set), \"always\", \"never\"",
    ),
    ("fps", "watch, demo", "screen refreshes per second at most"),
    (
        "http-idle-timeout",
        "watch",
        "seconds an HTTP connection may idle or stall (30)",
    ),
    ("interval", "watch", "seconds between --headless JSON lines"),
    (
        "kv-bytes-per-token",
        "replay, watch",
        "KV-cache bytes per token (128KiB)",
    ),
    (
        "kv-cache-dtype",
        "replay, watch, demo, trace",
        "with a model: its KV cache dtype, \"fp8\", \"bf16\", \"fp16\" or \"fp32\"",
    ),
    (
        "listen",
        "watch",
        "take trace lines over HTTP: PORT (loopback) or IP:PORT",
    ),
    (
        "listen-token-file",
        "watch",
        "with listen: the bearer token's file (relative: to this file's folder)",
    ),
    (
        "max-body",
        "watch",
        "with listen: the largest body accepted (64MiB)",
    ),
    (
        "max-body-total",
        "watch",
        "with listen: bytes all bodies may hold at once (4 × max-body)",
    ),
    (
        "max-connections",
        "watch",
        "HTTP connections open at once, over both servers",
    ),
    (
        "max-line-bytes",
        "replay, trace, watch",
        "the longest line read (16MiB)",
    ),
    (
        "memory-horizon",
        "replay, watch",
        "forget keys deeper than this capacity (20TiB)",
    ),
    (
        "metrics-listen",
        "watch",
        "serve GET /metrics: PORT (loopback) or IP:PORT",
    ),
    (
        "model",
        "replay, watch, demo, trace",
        "the model: a Hugging Face id of a preset, or a config.json (relative: to this file's folder)",
    ),
    (
        "rotation-grace",
        "watch",
        "seconds a rotated-away file must stay quiet",
    ),
    (
        "tier-mode",
        "query, mrc, watch",
        "\"exclusive\" (an LRU hierarchy) or \"inclusive\" (an LRU per tier)",
    ),
    (
        "tiers",
        "query, mrc, watch",
        "cache tiers, top first: \"hbm=80GB,dram=512GB\" or [\"80GB\", \"4TB\"]",
    ),
    (
        "window-seconds",
        "watch",
        "width of the hit-rate-over-time windows",
    ),
];

/// Why the defaults file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DefaultsError {
    #[error("cannot read the defaults file {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `path:line: key: message` (the key is left out for a syntax error).
    #[error("{}:{line}: {}{message}", path.display(), key.as_ref().map(|key| format!("{key}: ")).unwrap_or_default())]
    Value {
        path: PathBuf,
        line: usize,
        key: Option<String>,
        message: String,
    },
}

/// The values read from a defaults file (each `None` when the file leaves it out).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Defaults {
    /// The file they came from.
    pub path: PathBuf,
    pub block_bytes: Option<u64>,
    pub capacity_gb: Option<Vec<Capacity>>,
    pub color: Option<ColorWhen>,
    pub fps: Option<f64>,
    pub interval: Option<f64>,
    pub kv_bytes_per_token: Option<u64>,
    /// `kv-cache-dtype`, as `--kv-cache-dtype` reads it.
    pub kv_cache_dtype: Option<litehit_core::config::KvCacheDtype>,
    /// `model`: a preset id, or a config path (a relative one resolved against the defaults
    /// file's folder when it exists there); checked when read.
    pub model: Option<String>,
    pub allowed_host: Option<Vec<String>>,
    pub http_idle_timeout: Option<f64>,
    pub listen: Option<SocketAddr>,
    /// `listen-token-file`, a relative path resolved against the defaults file's folder.
    pub listen_token_file: Option<PathBuf>,
    pub max_body: Option<u64>,
    pub max_body_total: Option<u64>,
    pub max_connections: Option<u64>,
    pub max_line_bytes: Option<u64>,
    pub memory_horizon: Option<Capacity>,
    pub metrics_listen: Option<SocketAddr>,
    pub rotation_grace: Option<f64>,
    /// `tier-mode`, as `--tier-mode` reads it.
    pub tier_mode: Option<TierModeArg>,
    /// `tiers`, one entry per tier as `--tiers` splits them (checked when read).
    pub tiers: Option<Vec<String>>,
    /// The line of the `tiers` key, for errors found when a typed mode meets them.
    pub tiers_line: Option<usize>,
    pub window_seconds: Option<f64>,
}

/// Where the defaults file is, if one is to be read: `--config-file`, else `LITEHIT_CONFIG`
/// (both must exist), else the standard place (read only if it exists); none with
/// `--no-config-file`. The second value says whether a missing file is an error.
#[must_use]
pub fn location(cli: &Cli) -> Option<(PathBuf, bool)> {
    if cli.no_config_file {
        return None;
    }
    if let Some(path) = &cli.config_file {
        return Some((path.clone(), true));
    }
    if let Some(path) = std::env::var_os(ENV_CONFIG_FILE).filter(|path| !path.is_empty()) {
        return Some((PathBuf::from(path), true));
    }
    standard_path().map(|path| (path, false))
}

/// `$XDG_CONFIG_HOME/litehit/config.toml` (an absolute `XDG_CONFIG_HOME` only, as the XDG
/// base directory spec says), else `$HOME/.config/litehit/config.toml`.
#[must_use]
pub fn standard_path() -> Option<PathBuf> {
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(|home| PathBuf::from(home).join(".config"))
        })?;
    Some(config_home.join("litehit").join("config.toml"))
}

/// Reads the defaults file for `cli` (none: every value `None`).
pub fn load(cli: &Cli) -> Result<Defaults, DefaultsError> {
    let Some((path, must_exist)) = location(cli) else {
        return Ok(Defaults::default());
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if !must_exist && error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Defaults::default());
        }
        Err(source) => return Err(DefaultsError::Read { path, source }),
    };
    parse(&path, &text)
}

/// Reads the text of the defaults file at `path`.
pub fn parse(path: &Path, text: &str) -> Result<Defaults, DefaultsError> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let table: BTreeMap<Spanned<String>, Spanned<toml::Value>> =
        toml::from_str(text).map_err(|error| DefaultsError::Value {
            path: path.to_owned(),
            line: error.span().map_or(1, |span| line_of(span.start)),
            key: None,
            message: error.message().trim_end().to_owned(),
        })?;
    let mut defaults = Defaults {
        path: path.to_owned(),
        ..Defaults::default()
    };
    for (key, value) in &table {
        let fail = |message: String| DefaultsError::Value {
            path: path.to_owned(),
            line: line_of(key.span().start),
            key: Some(key.get_ref().clone()),
            message,
        };
        defaults.set(key.get_ref(), value.get_ref()).map_err(fail)?;
    }
    if let Some(key) = table.keys().find(|key| key.get_ref() == "tiers") {
        defaults.tiers_line = Some(line_of(key.span().start));
    }
    // A value the whole file makes wrong, named by its key's line (the key was read).
    let key_error = |name: &str, message: String| {
        let key = table
            .keys()
            .find(|key| key.get_ref() == name)
            .expect("the key was read");
        DefaultsError::Value {
            path: path.to_owned(),
            line: line_of(key.span().start),
            key: Some(key.get_ref().clone()),
            message,
        }
    };
    if let Some(tiers) = &defaults.tiers {
        // The file's tiers with the file's mode (or the default one): inclusive order.
        let mode = defaults.tier_mode.unwrap_or_default().into();
        if let Err(error) = litehit_core::grammar::parse_tier_plan(tiers, mode) {
            return Err(key_error("tiers", error.to_string()));
        }
    }
    if defaults.block_bytes.is_some() && defaults.kv_bytes_per_token.is_some() {
        return Err(key_error(
            "kv-bytes-per-token",
            "give block-bytes or kv-bytes-per-token, not both (block bytes = this × block size)"
                .to_owned(),
        ));
    }
    if defaults.model.is_some()
        && let Some(other) = [
            (defaults.block_bytes.is_some(), "block-bytes"),
            (defaults.kv_bytes_per_token.is_some(), "kv-bytes-per-token"),
        ]
        .into_iter()
        .find_map(|(given, key)| given.then_some(key))
    {
        return Err(key_error(
            "model",
            format!("give model or {other}, not both (the model gives the KV bytes per token)"),
        ));
    }
    if let Some(model) = &defaults.model {
        // Read now, so a bad name or config names this file and line.
        if let Err(error) =
            litehit_core::config::ModelKvSize::resolve(model, defaults.kv_cache_dtype)
        {
            return Err(key_error("model", error.to_string()));
        }
    }
    if let Some(slots) = &defaults.capacity_gb {
        // The one slot policy, as `--capacity-gb` and the add-slot dialog apply it.
        let block_bytes: Vec<u64> = defaults.block_bytes.into_iter().collect();
        if let Err(error) = litehit_core::slots::check(slots, &block_bytes) {
            return Err(key_error("capacity-gb", error.to_string()));
        }
    }
    Ok(defaults)
}

/// A scalar value as the text a flag would have been given.
fn scalar_text(value: &toml::Value) -> Result<String, String> {
    match value {
        toml::Value::String(text) => Ok(text.clone()),
        toml::Value::Integer(number) => Ok(number.to_string()),
        toml::Value::Float(number) => Ok(number.to_string()),
        other => Err(format!(
            "expected a string or a number, found {}",
            other.type_str()
        )),
    }
}

impl Defaults {
    fn set(&mut self, key: &str, value: &toml::Value) -> Result<(), String> {
        let text = || scalar_text(value);
        let message = |error: litehit_core::grammar::GrammarError| error.to_string();
        match key {
            "block-bytes" => self.block_bytes = Some(parse_byte_size(&text()?).map_err(message)?),
            "kv-bytes-per-token" => {
                self.kv_bytes_per_token = Some(parse_byte_size(&text()?).map_err(message)?);
            }
            "kv-cache-dtype" => {
                self.kv_cache_dtype = Some(
                    super::model_args::parse_kv_cache_dtype(&text()?).map_err(|reason| {
                        format!("{reason}, found {:?}", text().unwrap_or_default())
                    })?,
                );
            }
            "model" => {
                let text = text()?;
                if text.is_empty() {
                    return Err("expected a model id or a config.json path, found \"\"".to_owned());
                }
                // A config beside this file is found wherever the command is started.
                let folder = self.path.parent().unwrap_or_else(|| Path::new(""));
                let beside = folder.join(&text);
                self.model = Some(if Path::new(&text).is_relative() && beside.exists() {
                    beside.display().to_string()
                } else {
                    text
                });
            }
            "capacity-gb" => {
                // A list, or one comma-separated string as the flag takes.
                let pieces: Vec<String> = match value {
                    toml::Value::Array(items) => {
                        items.iter().map(scalar_text).collect::<Result<_, _>>()?
                    }
                    _ => text()?.split(',').map(str::to_owned).collect(),
                };
                let slots = pieces
                    .iter()
                    .map(|piece| parse_capacity(piece).map_err(message))
                    .collect::<Result<Vec<_>, _>>()?;
                self.capacity_gb = Some(slots);
            }
            "color" => {
                let text = text()?;
                self.color = Some(ColorWhen::from_str(&text, false).map_err(|_| {
                    format!("expected \"auto\", \"always\" or \"never\", found {text:?}")
                })?);
            }
            "fps" => {
                // As clap reads `--fps` (a number); `watch` and `demo` check its range.
                let text = text()?;
                self.fps = Some(text.trim().parse::<f64>().map_err(|_| {
                    format!("expected a number of refreshes per second, found {text:?}")
                })?);
            }
            "interval" => self.interval = Some(parse_duration_seconds(&text()?).map_err(message)?),
            "rotation-grace" => {
                self.rotation_grace = Some(parse_duration_seconds(&text()?).map_err(message)?);
            }
            "window-seconds" => {
                self.window_seconds = Some(parse_duration_seconds(&text()?).map_err(message)?);
            }
            "listen" => self.listen = Some(parse_listen_address(&text()?)?),
            "metrics-listen" => self.metrics_listen = Some(parse_listen_address(&text()?)?),
            "max-body" => self.max_body = Some(parse_byte_size(&text()?).map_err(message)?),
            "max-body-total" | "http-idle-timeout" | "max-connections" | "allowed-host"
            | "listen-token-file" => self.set_http(key, value)?,
            "max-line-bytes" => {
                self.max_line_bytes =
                    Some(litehit_core::grammar::parse_max_line_bytes(&text()?).map_err(message)?);
            }
            "memory-horizon" => {
                self.memory_horizon = Some(parse_memory_horizon(&text()?).map_err(message)?);
            }
            "tiers" => {
                // A list, or one comma-separated string as the flag takes.
                let entries: Vec<String> = match value {
                    toml::Value::Array(items) => {
                        items.iter().map(scalar_text).collect::<Result<_, _>>()?
                    }
                    _ => text()?.split(',').map(str::to_owned).collect(),
                };
                // Read now with the flag's parser, so a bad tier names this file and line;
                // the order rule needs the mode too: checked at the end of `parse`.
                litehit_core::grammar::parse_tier_plan(
                    &entries,
                    litehit_core::projector::tiers::TierMode::Exclusive,
                )
                .map_err(|error| error.to_string())?;
                self.tiers = Some(entries);
            }
            "tier-mode" => {
                let text = text()?;
                self.tier_mode = Some(TierModeArg::from_str(&text, false).map_err(|_| {
                    format!("expected \"exclusive\" or \"inclusive\", found {text:?}")
                })?);
            }
            _ => {
                let known: Vec<&str> = KEYS.iter().map(|(key, _, _)| *key).collect();
                return Err(format!(
                    "unknown key; the known keys are: {}",
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// [`Self::apply`] for `watch`'s HTTP flags.
    fn fill_http(&self, args: &mut super::watch_args::WatchArgs, typed: &impl Fn(&str) -> bool) {
        if !typed("listen") && self.listen.is_some() {
            args.listen = self.listen;
        }
        if !typed("metrics_listen") && self.metrics_listen.is_some() {
            args.metrics_listen = self.metrics_listen;
        }
        if let Some(max_body) = self.max_body.filter(|_| !typed("max_body")) {
            args.max_body = max_body;
        }
        if !typed("max_body_total") && self.max_body_total.is_some() {
            args.max_body_total = self.max_body_total;
        }
        if let Some(seconds) = self
            .http_idle_timeout
            .filter(|_| !typed("http_idle_timeout"))
        {
            args.http_idle_timeout = seconds;
        }
        if !typed("max_connections") && self.max_connections.is_some() {
            args.max_connections = self.max_connections;
        }
        if !typed("allowed_host")
            && let Some(names) = &self.allowed_host
        {
            args.allowed_host.clone_from(names);
        }
        if !typed("listen_token_file") && self.listen_token_file.is_some() {
            args.listen_token_file.clone_from(&self.listen_token_file);
        }
    }

    /// [`Self::set`] for the HTTP budget keys (`watch --listen` / `--metrics-listen`).
    fn set_http(&mut self, key: &str, value: &toml::Value) -> Result<(), String> {
        let text = || scalar_text(value);
        let message = |error: litehit_core::grammar::GrammarError| error.to_string();
        match key {
            "max-body-total" => {
                self.max_body_total = Some(parse_byte_size(&text()?).map_err(message)?);
            }
            "http-idle-timeout" => {
                self.http_idle_timeout = Some(parse_duration_seconds(&text()?).map_err(message)?);
            }
            "max-connections" => {
                // As clap reads `--max-connections` (a whole number, 1 or more).
                let text = text()?;
                self.max_connections = Some(
                    text.trim()
                        .parse::<u64>()
                        .ok()
                        .filter(|&count| count >= 1)
                        .ok_or_else(|| {
                            format!(
                                "expected a whole number of connections (1 or more), found {text:?}"
                            )
                        })?,
                );
            }
            "allowed-host" => {
                // A list, or one comma-separated string as the flag takes.
                let names: Vec<String> = match value {
                    toml::Value::Array(items) => {
                        items.iter().map(scalar_text).collect::<Result<_, _>>()?
                    }
                    _ => text()?.split(',').map(str::to_owned).collect(),
                };
                self.allowed_host = Some(names);
            }
            "listen-token-file" => {
                let text = text()?;
                if text.is_empty() {
                    return Err("expected the path of the token's file, found \"\"".to_owned());
                }
                // Relative to the defaults file, wherever the command is started.
                let folder = self.path.parent().unwrap_or_else(|| Path::new(""));
                self.listen_token_file = Some(folder.join(text));
            }
            other => return Err(format!("{other} is no HTTP key")),
        }
        Ok(())
    }

    /// Fills in every flag of `cli`'s command that was not typed (`matches` says which were)
    /// from these defaults.
    pub fn apply(&self, cli: &mut Cli, matches: &clap::ArgMatches) {
        let Some((_, sub)) = matches.subcommand() else {
            return;
        };
        let typed = |id: &str| {
            sub.try_get_raw(id).is_ok_and(|raw| raw.is_some())
                && sub.value_source(id) == Some(ValueSource::CommandLine)
        };
        let fill = |target: &mut f64, id: &str, value: Option<f64>| {
            if let Some(value) = value.filter(|_| !typed(id)) {
                *target = value;
            }
        };
        let fill_line_cap =
            |line_cap: &mut super::LineCapFlags| self.fill_line_cap(line_cap, &typed);
        let fill_tiers = |tier_args: &mut TierArgs| {
            if !typed("tiers")
                && let Some(tiers) = &self.tiers
            {
                tier_args.tiers.clone_from(tiers);
                tier_args.tiers_from_file = Some(format!(
                    "{}:{}: tiers",
                    self.path.display(),
                    self.tiers_line.unwrap_or(1)
                ));
            }
            // The file's mode is for tiers (the file's or typed ones); alone it sets nothing,
            // so a file with only `tier-mode` does not make every command ask for tiers.
            if !typed("tier_mode") && self.tier_mode.is_some() && !tier_args.tiers.is_empty() {
                tier_args.tier_mode = self.tier_mode;
            }
        };
        match &mut cli.command {
            // `query --window` takes capacities or tiers, not both: typed capacities there
            // mean the file's tiers are not wanted.
            Command::Query(args)
                if args.window.is_none()
                    || (args.capacity_gb.is_empty() && args.capacity_blocks.is_empty()) =>
            {
                fill_tiers(&mut args.tier_args);
            }
            Command::Mrc(args) => fill_tiers(&mut args.tier_args),
            Command::Watch(args) => {
                fill_tiers(&mut args.tier_args);
                fill_line_cap(&mut args.line_cap);
                if args.config.is_none() {
                    self.fill_lane_bytes(&mut args.lane, &typed);
                    if !typed("capacity_gb")
                        && let Some(slots) = &self.capacity_gb
                    {
                        args.capacity_gb.clone_from(slots);
                    }
                }
                fill(&mut args.fps, "fps", self.fps);
                fill(&mut args.interval, "interval", self.interval);
                fill(
                    &mut args.window_seconds,
                    "window_seconds",
                    self.window_seconds,
                );
                fill(
                    &mut args.rotation_grace,
                    "rotation_grace",
                    self.rotation_grace,
                );
                self.fill_http(args, &typed);
                if !typed("memory_horizon") && self.memory_horizon.is_some() {
                    args.memory_horizon = self.memory_horizon;
                }
                if !typed("color") && self.color.is_some() {
                    args.color = self.color;
                }
            }
            Command::Demo(args) => {
                self.fill_model(&mut args.model, &typed);
                if !typed("capacity_gb")
                    && let Some(slots) = &self.capacity_gb
                {
                    args.capacity_gb.clone_from(slots);
                }
                fill(&mut args.fps, "fps", self.fps);
                if !typed("color") && self.color.is_some() {
                    args.color = self.color;
                }
            }
            Command::Replay(args) => {
                fill_line_cap(&mut args.line_cap);
                // Lane parameters only for a trace (`--out`): a config file has its own.
                if args.out.is_some() {
                    self.fill_lane_bytes(&mut args.lane, &typed);
                }
                if !typed("memory_horizon") && self.memory_horizon.is_some() {
                    args.memory_horizon = self.memory_horizon;
                }
            }
            #[cfg(feature = "tokenize")]
            Command::Trace(args) => {
                fill_line_cap(&mut args.line_cap);
                self.fill_model(&mut args.model, &typed);
            }
            Command::Query(_) | Command::Completions(_) | Command::Man(_) => {}
        }
    }

    /// `max-line-bytes`, unless the flag was typed.
    fn fill_line_cap(&self, line_cap: &mut super::LineCapFlags, typed: &dyn Fn(&str) -> bool) {
        if let Some(max_line_bytes) = self.max_line_bytes.filter(|_| !typed("max_line_bytes")) {
            line_cap.max_line_bytes = max_line_bytes;
        }
    }

    /// `block-bytes`, `kv-bytes-per-token` or `model`, unless one of their flags was typed
    /// (they conflict).
    fn fill_lane_bytes(&self, lane: &mut super::LaneFlags, typed: &dyn Fn(&str) -> bool) {
        if typed("block_bytes") || typed("kv_bytes_per_token") {
            return;
        }
        self.fill_model(&mut lane.model, typed);
        if lane.model.model.is_some() {
            return;
        }
        if self.block_bytes.is_some() {
            lane.block_bytes = self.block_bytes;
        }
        if self.kv_bytes_per_token.is_some() {
            lane.kv_bytes_per_token = self.kv_bytes_per_token;
        }
    }
}

impl Defaults {
    /// `model` unless `--model` was typed, and `kv-cache-dtype` for whichever model is in
    /// effect unless `--kv-cache-dtype` was typed.
    fn fill_model(&self, flags: &mut super::model_args::ModelFlags, typed: &dyn Fn(&str) -> bool) {
        if !typed("model") && self.model.is_some() {
            flags.model.clone_from(&self.model);
        }
        if flags.model.is_some() && !typed("kv_cache_dtype") && self.kv_cache_dtype.is_some() {
            flags.kv_cache_dtype = self.kv_cache_dtype;
        }
    }
}

/// Reads the defaults file `cli` names (or the standard one) and fills in what was not
/// typed (`matches`).
pub fn apply_defaults(cli: &mut Cli, matches: &clap::ArgMatches) -> Result<(), DefaultsError> {
    load(cli)?.apply(cli, matches);
    Ok(())
}

/// Whether the screen is drawn in colour: `always` and `never` as said; `auto` (and nothing
/// said) in colour unless `NO_COLOR` is set to a non-empty value (<https://no-color.org>).
#[must_use]
pub fn use_color(when: Option<ColorWhen>, no_color: Option<&std::ffi::OsStr>) -> bool {
    match when.unwrap_or(ColorWhen::Auto) {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => no_color.is_none_or(std::ffi::OsStr::is_empty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    #[test]
    fn every_key_is_a_flag_of_each_command_it_names() {
        let command = Cli::command();
        for (key, commands, _) in KEYS {
            for name in commands.split(", ") {
                let sub = command
                    .find_subcommand(name)
                    .unwrap_or_else(|| panic!("{name}"));
                assert!(
                    sub.get_arguments().any(|arg| arg.get_long() == Some(*key)),
                    "{key} is a flag of {name}"
                );
            }
        }
        let mut sorted: Vec<&str> = KEYS.iter().map(|(key, _, _)| *key).collect();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            KEYS.iter().map(|(key, _, _)| *key).collect::<Vec<_>>()
        );
    }

    #[test]
    fn every_key_is_read() {
        for (key, _, _) in KEYS {
            let value = match *key {
                "color" => "\"never\"",
                "listen" | "metrics-listen" => "\"9464\"",
                "capacity-gb" => "[10, \"1000b\"]",
                "tier-mode" => "\"inclusive\"",
                "tiers" => "[\"hbm=80GB\", \"4TB\"]",
                "model" => "\"Qwen/Qwen3-8B\"",
                "kv-cache-dtype" => "\"fp8\"",
                _ => "\"1\"",
            };
            let parsed = parse(Path::new("c.toml"), &format!("{key} = {value}\n"));
            assert!(parsed.is_ok(), "{key}: {parsed:?}");
            assert_ne!(
                parsed.unwrap(),
                Defaults {
                    path: "c.toml".into(),
                    ..Defaults::default()
                },
                "{key} is kept"
            );
        }
    }

    #[test]
    fn no_color_wins_over_auto_only() {
        let set = Some(std::ffi::OsStr::new("1"));
        let empty = Some(std::ffi::OsStr::new(""));
        assert!(use_color(None, None));
        assert!(use_color(Some(ColorWhen::Auto), empty));
        assert!(!use_color(None, set));
        assert!(!use_color(Some(ColorWhen::Auto), set));
        assert!(use_color(Some(ColorWhen::Always), set));
        assert!(!use_color(Some(ColorWhen::Never), None));
    }

    #[test]
    fn a_syntax_error_names_file_and_line() {
        let error = parse(Path::new("/x/c.toml"), "fps = 10\nlisten = \n").unwrap_err();
        assert!(error.to_string().starts_with("/x/c.toml:2: "), "{error}");
    }
}
