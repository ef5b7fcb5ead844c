//! Command-line interface (clap derive): what was typed. `config` turns it into validated
//! settings; no clap type goes further than `commands`.
//!
//! Every flag is documented where it is defined: the field doc is the `--help` text.

pub mod defaults_file;
pub mod engine_args;
pub mod generate_args;
pub mod model_args;
pub mod mrc_args;
pub mod query_args;
pub mod trace_args;
pub mod trace_format_arg;
pub mod watch_args;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use litehit_core::config::SingleInstanceFlags;
use litehit_core::formats::TraceFormat;
use litehit_core::grammar::{
    parse_byte_size, parse_capacity, parse_capacity_gb, parse_duration_ns,
};

/// Exact LRU prefix-cache hit rates at any capacity, from one pass over a KV-cache block trace.
#[derive(Debug, Parser)]
#[command(name = "litehit", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// Read defaults from this TOML file (also `LITEHIT_CONFIG`) instead of
    /// `$XDG_CONFIG_HOME/litehit/config.toml` (else `~/.config/litehit/config.toml`); flags
    /// always win over it. See docs/CONFIG.md
    #[arg(long, global = true, value_name = "PATH")]
    pub config_file: Option<PathBuf>,

    /// Read no defaults file (not even `--config-file` or `LITEHIT_CONFIG`)
    #[arg(long, global = true, conflicts_with = "config_file")]
    pub no_config_file: bool,
}

impl Cli {
    /// Parses the process's arguments ([`Self::parse_matches_from`]).
    pub fn parse_args() -> Result<(Self, clap::ArgMatches), clap::Error> {
        Self::parse_matches_from(std::env::args_os())
    }

    /// Parses `args` (the program name first). clap takes `-1`, `-0.5` and `-1e3` for the
    /// negative numbers they are, but `-1e-9`, `-.5` and `-inf` for flags; upstream's
    /// `strtod` reads them all as capacities (any negative one is unlimited). So a `query`
    /// argument that reads as a capacity and starts with one `-` is passed on with a leading
    /// space, which [`parse_capacity_gb`] skips as `strtod` does. The same holds for the
    /// values after `--capacity-gb` (`watch`, `demo`: `--capacity-gb -inf`).
    pub fn parse_args_from<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString>,
    {
        Self::parse_matches_from(args).map(|(cli, _)| cli)
    }

    /// As [`Self::parse_args_from`], also giving clap's matches: which flags were typed, for
    /// [`defaults_file::Defaults::apply`].
    pub fn parse_matches_from<I, T>(args: I) -> Result<(Self, clap::ArgMatches), clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString>,
    {
        let mut args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
        // `--capacity-gb` takes every value up to the next flag (`--capacity-gb 10 -1 80`).
        let mut in_capacity_list = false;
        for arg in &mut args {
            if arg == "--capacity-gb" {
                in_capacity_list = true;
                continue;
            }
            let Some(text) = arg.to_str() else { continue };
            if !text.starts_with('-') {
                continue;
            }
            if in_capacity_list && parse_capacity(text).is_ok() {
                *arg = format!(" {text}").into();
            } else {
                in_capacity_list = false;
            }
        }
        let mut command = <Self as clap::CommandFactory>::command();
        if args.get(1).is_some_and(|command| command == "query") {
            // After `--capacity-blocks` (up to the next flag) every value is a block count:
            // a negative one is refused here, echoing what was typed (clap would show the
            // hidden value, ` -1`, or take `-inf` for a flag).
            let mut in_block_list = false;
            for arg in args.iter_mut().skip(2).take_while(|arg| *arg != "--") {
                let Some(text) = arg.to_str() else { continue };
                if text == "--capacity-blocks" {
                    in_block_list = true;
                    continue;
                }
                if text.starts_with('-')
                    && !text.starts_with("--")
                    && parse_capacity_gb(text).is_ok()
                {
                    if in_block_list && let Err(reason) = query_args::parse_block_slot(text) {
                        let message = format!(
                            "invalid value '{text}' for '--capacity-blocks <N>...': {reason}"
                        );
                        let typed = args.clone();
                        return Err(usage_error(
                            &mut command,
                            &typed,
                            clap::error::ErrorKind::ValueValidation,
                            &message,
                        ));
                    }
                    *arg = format!(" {text}").into();
                } else if text.starts_with('-') {
                    in_block_list = false;
                }
            }
        }
        let matches = match command.try_get_matches_from_mut(&args) {
            Ok(matches) => matches,
            Err(error) => {
                let missing = error.kind() == clap::error::ErrorKind::MissingRequiredArgument;
                return Err(pool_took_the_trace(&args).filter(|_| missing).map_or(
                    error,
                    |message| {
                        usage_error(
                            &mut command,
                            &args,
                            clap::error::ErrorKind::ArgumentConflict,
                            &message,
                        )
                    },
                ));
            }
        };
        let cli = <Self as clap::FromArgMatches>::from_arg_matches(&matches)
            .map_err(|error| error.format(&mut command))?;
        // `watch --pool trace.jsonl`: TRACE may be left out (with --listen), so clap is
        // content; with no TRACE, a pool named after an existing file is that mistake.
        if let Command::Watch(watch) = &cli.command
            && watch.trace.is_none()
            && let Some(message) = pool_took_the_trace(&args)
        {
            return Err(usage_error(
                &mut command,
                &args,
                clap::error::ErrorKind::ArgumentConflict,
                &message,
            ));
        }
        Ok((cli, matches))
    }
}

/// `replay --pool TRACE --out DIR`: `--pool [NAME]` takes the next argument as its value, so
/// the trace became the pool's name (and clap would only say that no trace was given). The
/// message when that value is an existing path, for `replay` and `watch`.
fn pool_took_the_trace(args: &[std::ffi::OsString]) -> Option<String> {
    let command = args.get(1)?;
    if command != "replay" && command != "watch" {
        return None;
    }
    let at = args.iter().position(|arg| arg == "--pool")?;
    let name = args.get(at + 1)?;
    (!name.to_string_lossy().starts_with('-') && std::path::Path::new(name).exists()).then(|| {
        format!(
            "--pool took '{}' as the pool's name; write --pool=NAME or put --pool after the \
             trace",
            name.to_string_lossy()
        )
    })
}

/// A usage error of `kind` with `message`, formatted as clap's own for the subcommand typed
/// (usage line, `--help` hint).
fn usage_error(
    command: &mut clap::Command,
    args: &[std::ffi::OsString],
    kind: clap::error::ErrorKind,
    message: &str,
) -> clap::Error {
    command.build();
    let error = clap::Error::raw(kind, message);
    match args
        .get(1)
        .and_then(|name| command.find_subcommand_mut(name))
    {
        Some(subcommand) => error.format(subcommand),
        None => error.format(command),
    }
}

#[derive(Debug, Subcommand)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per run, parsed once: boxing `watch`'s flags would save nothing"
)]
pub enum Command {
    /// Replay a trace once and publish capacity-free facts (`litehit_facts.csv`)
    Replay(ReplayArgs),
    /// Hit blocks and rates of a facts file at any capacities (upstream-compatible JSONL)
    Query(query_args::QueryArgs),
    /// Hit rate vs capacity curve, knees and plots from a facts file
    Mrc(mrc_args::MrcArgs),
    /// Follow a growing trace and show exact hit rates at any capacity, live
    Watch(watch_args::WatchArgs),
    /// Generate a realistic trace at a steady rate and watch it live (no input needed)
    Demo(watch_args::DemoArgs),
    /// Tokenize an OpenAI request log into a standard block trace (chained block keys)
    #[cfg(feature = "tokenize")]
    Trace(trace_args::TraceArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout
    Completions(generate_args::CompletionsArgs),
    /// Write the man pages (one per subcommand), or print `litehit(1)` on stdout
    Man(generate_args::ManArgs),
}

/// `litehit replay CONFIG.json` (upstream config) or `litehit replay TRACE --out DIR`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
#[command(after_long_help = "Examples:\n  \
litehit replay lite_hit_config.json          # upstream OptimizerLiteHitConfig\n  \
litehit replay trace.jsonl --out results/     # one lane per instance id, flag parameters\n  \
litehit replay conversation_trace.jsonl --out out --model meta-llama/Llama-3.1-8B-Instruct\n\n\
The facts file is published atomically: written to a fresh hidden temp file beside it, fsynced, \
then renamed; a second run publishing the same file fails at once. On any error nothing new is published and the error names file, line and trace id.")]
pub struct ReplayArgs {
    /// An upstream `OptimizerLiteHitConfig` JSON file; with --out, a trace file instead
    #[arg(value_name = "CONFIG_OR_TRACE")]
    pub input: PathBuf,

    /// Replay CONFIG_OR_TRACE as a trace (no config file) and write DIR/litehit_facts.csv; the
    /// directory is created when missing. A name ending in `.csv` or `.parquet` that is not an
    /// existing directory is the facts file itself
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// The facts file's layout: `csv` (litehit_facts.csv, upstream's) or `parquet`
    /// (litehit_facts.parquet, the curve as list<struct<start, run>>; `query` and `mrc` read
    /// both). Default: the --out file's extension, else csv
    #[arg(long, value_name = "FORMAT", value_parser = ["csv", "parquet"])]
    pub facts_format: Option<String>,

    #[command(flatten)]
    pub lane: LaneFlags,

    /// Parse worker threads (default: the config's `pipeline_worker_count`, else
    /// LITEHIT_THREADS, else the number of cores). The output is byte-identical for any value
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub workers: Option<usize>,

    /// Forget keys deeper than CAPACITY in the recency order (e.g. 20TiB, 40 (GB) or
    /// 50000000b), so memory stays O(CAPACITY) instead of O(unique blocks). Every capacity up
    /// to it stays exact; facts and results above it are lower bounds. Default: off (exact at
    /// every capacity)
    #[arg(long, value_name = "CAPACITY", value_parser = litehit_core::grammar::parse_memory_horizon)]
    pub memory_horizon: Option<litehit_core::projector::Capacity>,

    /// Eviction policies to write facts for: `lru` (what a serving engine's prefix cache
    /// does), `opt` (Belady's optimal policy: the ceiling no eviction policy passes at the same
    /// capacity), or `lru,opt`, both from one read: the LRU facts where they always go, the
    /// OPT facts beside them as `litehit_facts.opt.csv` (`NAME.opt.csv` for `--out NAME.csv`).
    /// OPT is refused with a TTL or --memory-horizon
    #[arg(long, value_name = "POLICIES", default_value = "lru", value_parser = parse_cache_policies)]
    pub policy: litehit_core::engine::CachePolicies,

    /// No progress bar and no summary on stderr
    #[arg(long, short)]
    pub quiet: bool,

    /// Whose prefix-cache rules the facts follow: ideal (every cached prefix block hits, as
    /// upstream), vllm or sglang (a prompt never hits its last token: at most ⌊(input_len −
    /// 1) / block size⌋ blocks, as both engines compute the last token; docs/PLANNING.md)
    #[arg(long, value_name = "ENGINE", default_value = "ideal",
          value_parser = engine_args::parse_engine_rule)]
    pub engine: litehit_core::facts::EngineRule,

    #[command(flatten)]
    pub engine_pool: engine_args::EnginePoolFlags,

    /// Write FILE (JSON Lines, atomically): the requests whose line carried the engine's own
    /// cached tokens (`cached_tokens`; `usage.prompt_tokens_details.cached_tokens` in a
    /// --format openai log) and where the engine hit fewer tokens than LRU at its pool
    /// (--gpu-blocks, --gpu-memory; else ∞), largest gap first: request_id, instance_id,
    /// timestamp_ns, input_tokens, observed_hit_tokens, lru_engine_hit_tokens,
    /// lru_infinite_hit_tokens, gap_tokens
    #[arg(long, value_name = "FILE")]
    pub observed_report: Option<PathBuf>,

    /// Replay only the instances of shard K of N (0 ≤ K < N): those whose instance id's
    /// FNV-1a 64-bit hash is K mod N. Lanes are independent, so N runs `--shard 0/N` …
    /// `--shard N-1/N` read together (`query A --shard B …`, `mrc A B …`) give the totals of
    /// one unsharded replay
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<litehit_core::engine::shard::Shard>,

    /// With --format openai (or --tokenizer alone), CONFIG_OR_TRACE is an OpenAI request log,
    /// converted as `litehit trace` converts it (block size: --block-size, default 16) and
    /// replayed
    #[cfg(feature = "tokenize")]
    #[command(flatten)]
    pub openai: trace_args::TokenizeFlags,

    #[command(flatten)]
    pub line_cap: LineCapFlags,

    /// Set by `replay --format openai` for the replay of the trace it converted: the log's
    /// format and size, for the summary (not a flag).
    #[arg(skip)]
    pub converted_from: Option<crate::output::summary::ConvertedInput>,
}

/// `--max-line-bytes`, one definition for every command that reads lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Args)]
pub struct LineCapFlags {
    /// The longest line read, without its newline (16MiB, 1048576): `replay` and `trace`
    /// fail on a longer line, naming the file and the line; `watch` skips it and counts it as
    /// a bad line. No more than this of a line is held in memory
    #[arg(long, value_name = "BYTES",
          default_value = litehit_core::grammar::DEFAULT_MAX_LINE_BYTES_TEXT,
          value_parser = litehit_core::grammar::parse_max_line_bytes)]
    pub max_line_bytes: u64,
}

impl Default for LineCapFlags {
    fn default() -> Self {
        Self {
            max_line_bytes: litehit_core::formats::DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// `--shard K/N`.
fn parse_shard(text: &str) -> Result<litehit_core::engine::shard::Shard, String> {
    litehit_core::engine::shard::Shard::parse(text).map_err(|error| error.to_string())
}

/// Trace and lane parameters for runs without a config file.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct LaneFlags {
    /// Trace format (default: detected from the first non-empty line); `openai` reads an
    /// OpenAI request log and needs --tokenizer
    #[arg(long, value_parser = trace_format_arg::TraceFormatParser)]
    pub format: Option<trace_format_arg::FormatArg>,

    /// Analysis block size in tokens (default: the trace block size, else the format's
    /// native size: Mooncake 512, Bailian 16, KVCM 16, standard and LMCache 256)
    #[arg(long, value_name = "TOKENS")]
    pub block_size: Option<u64>,

    /// The trace's own block size in tokens; the analysis block size must be a multiple
    /// (coarsening only). Default: Mooncake 512 and Qwen-Bailian 16 (their keys are defined
    /// at that size), else the analysis block size
    #[arg(long, value_name = "TOKENS")]
    pub trace_block_size: Option<u64>,

    /// KV-cache bytes per block (all layers, K and V; 1048576 or 1MiB): kept with the facts,
    /// it converts GB capacities to blocks
    #[arg(long, value_name = "BYTES", conflicts_with_all = ["kv_bytes_per_token", "model"],
          value_parser = parse_byte_size)]
    pub block_bytes: Option<u64>,

    /// KV-cache bytes per token; block bytes = this × block size (default 131072 = 128KiB,
    /// an 8B model in fp16; --model computes it from the model's config)
    #[arg(long, value_name = "BYTES", conflicts_with = "model", value_parser = parse_byte_size)]
    pub kv_bytes_per_token: Option<u64>,

    #[command(flatten)]
    pub model: model_args::ModelFlags,

    /// Fixed TTL: a block unused for this long is gone at every capacity. Seconds (`600`,
    /// `1.5`) or a duration (`1.5s`, `250ms`, `10m`, `2h`)
    #[arg(long = "ttl-seconds", id = "ttl_seconds", value_name = "DURATION",
          value_parser = parse_duration_ns)]
    pub ttl_ns: Option<u64>,

    /// Keys are raw per-block hashes: chain them with the prefix hash first
    #[arg(long)]
    pub prefix_hash: bool,

    /// Replay every row as this instance (default: one lane per instance id seen; formats
    /// without instance ids, such as Mooncake, go to `default`; a standard-format row must
    /// still carry an `instance_id`, as upstream requires)
    #[arg(long, value_name = "ID")]
    pub instance: Option<String>,

    /// Lanes by tenant: each row's lane (its facts' instance id) is FIELD's value, and
    /// `instance,FIELD` keeps both (`INSTANCE/VALUE`). FIELD is `tenant` for the standard
    /// format's optional `tenant` and LMCache's `cache_salt` (else `model`), a field path
    /// for --format openai (`user`, `body.model`). Rows without it share the lane `-`.
    /// docs/TENANTS.md
    #[arg(long, value_name = "FIELD", conflicts_with = "instance",
          value_parser = parse_lane_by)]
    pub lane_by: Option<litehit_core::grammar::LaneBySpec>,

    /// Add one more lane, NAME (default `pool`), that every row also feeds: one LRU cache
    /// shared by all instances (a Mooncake/LMCache-style pool, or what a perfectly
    /// cache-aware router would see). Its facts rows carry NAME as instance id; `query` and
    /// `mrc` recognise it by its rows (whatever its name) and compare it at N × C with the N
    /// instances at C each. Written `--pool`, `--pool NAME` or `--pool=NAME`; before the
    /// trace, write `--pool=NAME` (a bare `--pool TRACE` takes TRACE as the name). An
    /// instance already named NAME is an error. Wins over a config's `pool_instance_id`.
    /// Not with `replay --shard`
    #[arg(
        long,
        value_name = "NAME",
        num_args = 0..=1,
        default_missing_value = DEFAULT_POOL_NAME
    )]
    pub pool: Option<String>,
}

/// The pool lane's name when `--pool` is given without one (and the one `query` and `mrc`
/// look for by default).
pub const DEFAULT_POOL_NAME: &str = litehit_core::engine::DEFAULT_POOL_NAME;

impl LaneFlags {
    /// The plain (non-clap) form `config` resolves; `detected_format` fills in `--format`.
    #[must_use]
    pub fn to_single_instance_flags(
        &self,
        detected_format: Option<TraceFormat>,
    ) -> SingleInstanceFlags {
        SingleInstanceFlags {
            block_size_tokens: self.block_size,
            block_bytes: self.block_bytes,
            kv_bytes_per_token: self.kv_bytes_per_token,
            // Resolved by the command (`commands::single_instance_flags`): it reads a file.
            model: None,
            ttl_ns: self.ttl_ns,
            prefix_hash: self.prefix_hash,
            instance: self.instance.clone(),
            trace_block_size_tokens: self.trace_block_size,
            format: self.trace_format().or(detected_format),
            pool: self.pool.clone(),
        }
    }

    /// The trace format `--format` names (`None`: not given, or `openai`).
    #[must_use]
    pub fn trace_format(&self) -> Option<TraceFormat> {
        self.format
            .and_then(trace_format_arg::FormatArg::trace_format)
    }

    /// `--format openai`.
    #[must_use]
    pub fn is_openai(&self) -> bool {
        self.format == Some(trace_format_arg::FormatArg::OpenAi)
    }

    /// Whether any lane parameter was given (they conflict with a config file).
    #[must_use]
    pub fn any_lane_parameter(&self) -> bool {
        let Self {
            format: _,
            block_size,
            trace_block_size,
            block_bytes,
            kv_bytes_per_token,
            model,
            ttl_ns,
            prefix_hash,
            instance,
            lane_by,
            pool: _, // also applies to a config file's lanes
        } = self;
        block_size.is_some()
            || trace_block_size.is_some()
            || block_bytes.is_some()
            || kv_bytes_per_token.is_some()
            || model.model.is_some()
            || ttl_ns.is_some()
            || *prefix_hash
            || instance.is_some()
            || lane_by.is_some()
    }

    /// The lanes of a trace in `format` (`--lane-by`, checked against what its rows carry).
    ///
    /// # Errors
    /// A FIELD the format's rows do not carry.
    pub fn lane_by_for(
        &self,
        format: TraceFormat,
    ) -> Result<litehit_core::formats::LaneBy, String> {
        match &self.lane_by {
            None => Ok(litehit_core::formats::LaneBy::Instance),
            Some(spec) => litehit_core::formats::LaneBy::for_format(
                format,
                spec.keep_instance,
                spec.field.as_deref(),
            ),
        }
    }
}

/// `--lane-by`.
pub(crate) fn parse_lane_by(text: &str) -> Result<litehit_core::grammar::LaneBySpec, String> {
    litehit_core::grammar::parse_lane_by(text).map_err(|error| error.to_string())
}

/// Most parse workers `--workers` takes (the same bound as `LITEHIT_THREADS`).
const MAX_WORKERS: usize = litehit_core::threads::MAX;

/// A worker count in `1..=MAX_WORKERS` (0 would silently mean 1).
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(count) if count > MAX_WORKERS => Err(format!("must be at most {MAX_WORKERS}")),
        Ok(count) => Ok(count),
        Err(err) => Err(err.to_string()),
    }
}

/// `--policy`: `lru`, `opt` or `lru,opt`, through the core's one spelling.
pub(crate) fn parse_cache_policies(
    text: &str,
) -> Result<litehit_core::engine::CachePolicies, String> {
    text.parse()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_negative_capacity_strtod_reads_is_a_query_capacity_not_a_flag() {
        let cli = Cli::parse_args_from([
            "litehit",
            "query",
            "f.csv",
            "-",
            "-1e-9",
            "-.5",
            "-inf",
            "-1",
            "-1e400",
            "--summary-only",
        ])
        .unwrap();
        let Command::Query(args) = cli.command else {
            panic!("a query")
        };
        assert!(args.summary_only, "flags after the capacities still count");
        let capacities: Vec<f64> = args
            .capacity_gb
            .iter()
            .map(|arg| parse_capacity_gb(arg).unwrap())
            .collect();
        assert_eq!(
            capacities,
            [-1e-9, -0.5, f64::NEG_INFINITY, -1.0, f64::NEG_INFINITY]
        );
        assert!(
            Cli::parse_args_from(["litehit", "query", "f.csv", "-", "-x"]).is_err(),
            "an unknown flag is still one"
        );
    }

    /// Issue 26: `--capacity-gb 10 40` read 40 as TRACE; a list flag takes every value up to
    /// the next flag, negative unlimited ones included.
    #[test]
    fn watch_capacity_slots_take_every_value_after_the_flag() {
        use litehit_core::projector::Capacity;
        let cli = Cli::parse_args_from([
            "litehit",
            "watch",
            "t.jsonl",
            "--capacity-gb",
            "10",
            "-inf",
            "80,1000b",
            "-1",
            "--headless",
        ])
        .unwrap();
        let Command::Watch(args) = cli.command else {
            panic!("a watch")
        };
        assert_eq!(
            args.capacity_gb,
            [
                Capacity::Gigabytes(10.0),
                Capacity::Infinite,
                Capacity::Gigabytes(80.0),
                Capacity::Blocks(1000),
                Capacity::Infinite
            ]
        );
        assert!(args.headless);
        let error = Cli::parse_args_from(["litehit", "watch", "--capacity-gb", "10", "t.jsonl"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("--capacity-gb"), "{error}");
        // `--tiers` too: the file after the list is a tier (refused by the tier grammar), and
        // then FACTS is missing.
        let Command::Query(query) =
            Cli::parse_args_from(["litehit", "query", "f.csv", "-", "--tiers", "80GB", "4TB"])
                .unwrap()
                .command
        else {
            panic!("a query")
        };
        assert_eq!(query.tier_args.tiers, ["80GB", "4TB"]);
        assert!(query.capacity_gb.is_empty());
        assert!(
            Cli::parse_args_from(["litehit", "mrc", "--tiers", "80GB", "512GB", "f.csv"]).is_err()
        );
    }

    #[test]
    fn byte_counts_take_binary_suffixes() {
        for (text, bytes) in [("1048576", 1 << 20), ("1MiB", 1 << 20), ("128KiB", 131_072)] {
            assert_eq!(parse_byte_size(text), Ok(bytes), "{text}");
        }
        for bad in ["1MB", "1.5MiB", "-1", "", "99999999999GiB"] {
            let message = parse_byte_size(bad).unwrap_err().to_string();
            assert!(message.contains("1MiB"), "{bad}: {message}");
        }
    }

    #[test]
    fn replay_trace_mode_flags() {
        let cli = Cli::parse_from([
            "litehit",
            "replay",
            "t.jsonl",
            "--out",
            "o",
            "--block-size",
            "32",
            "--trace-block-size",
            "16",
            "--block-bytes",
            "4096",
            "--ttl-seconds",
            "60",
            "--prefix-hash",
            "--format",
            "mooncake",
            "--workers",
            "3",
        ]);
        let Command::Replay(args) = cli.command else {
            panic!("replay expected")
        };
        assert_eq!(args.out.as_deref(), Some(std::path::Path::new("o")));
        assert_eq!(args.workers, Some(3));
        let zero_workers =
            Cli::try_parse_from(["litehit", "replay", "t", "--out", "o", "--workers", "0"]);
        assert!(
            zero_workers.is_err_and(|e| e.to_string().contains("must be at least 1")),
            "--workers 0 is refused"
        );
        let many_workers =
            Cli::try_parse_from(["litehit", "replay", "t", "--out", "o", "--workers", "20000"]);
        assert!(many_workers.is_err_and(|e| e.to_string().contains("at most 256")));
        let flags = args.lane.to_single_instance_flags(None);
        assert_eq!(flags.block_size_tokens, Some(32));
        assert_eq!(flags.trace_block_size_tokens, Some(16));
        assert_eq!(flags.block_bytes, Some(4096));
        assert_eq!(flags.ttl_ns, Some(60_000_000_000));
        assert!(flags.prefix_hash);
        assert_eq!(flags.format, Some(TraceFormat::Mooncake));
        assert!(args.lane.any_lane_parameter());
    }

    #[test]
    fn detected_format_fills_only_a_missing_flag() {
        let flags = LaneFlags {
            format: Some(trace_format_arg::FormatArg::Trace(TraceFormat::Kvcm)),
            ..LaneFlags::default()
        };
        assert_eq!(
            flags
                .to_single_instance_flags(Some(TraceFormat::Standard))
                .format,
            Some(TraceFormat::Kvcm)
        );
        assert_eq!(
            LaneFlags::default()
                .to_single_instance_flags(Some(TraceFormat::Bailian))
                .format,
            Some(TraceFormat::Bailian)
        );
        assert!(!LaneFlags::default().any_lane_parameter());
    }

    #[test]
    fn block_bytes_and_kv_bytes_per_token_conflict() {
        let result = Cli::try_parse_from([
            "litehit",
            "replay",
            "t",
            "--out",
            "o",
            "--block-bytes",
            "1",
            "--kv-bytes-per-token",
            "2",
        ]);
        assert!(result.is_err());
    }
}
