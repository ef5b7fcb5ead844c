//! Arguments of `litehit watch` (live monitor) and `litehit demo`.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use super::LaneFlags;
use litehit_core::grammar::{parse_byte_size, parse_capacity, parse_duration_seconds};
use litehit_core::projector::Capacity;

/// Follow a growing trace file and show exact LRU prefix-cache hit rates at any capacity, live.
#[derive(Debug, Clone, PartialEq, clap::Args)]
#[command(
    after_long_help = "Keys: ? help · a add slot (40, 0.5 = GB; 1000b = blocks) · d delete slot · \
←→ select slot · ↑↓ select instance · s snapshot facts · p pause/resume · q quit\n\nExamples:\n  \
litehit watch /var/log/kv/trace.jsonl --capacity-gb 10,40,80\n  \
litehit watch trace.jsonl --config litehit.json --from-end\n  \
litehit watch trace.jsonl --headless --exit-at-eof --interval 1\n  \
litehit watch --listen 8080 --headless   (rows POSTed to http://127.0.0.1:8080/v1/trace \
as application/x-ndjson)\n  \
litehit watch trace.jsonl --headless --metrics-listen 9464   (Prometheus: GET /metrics)\n  \
litehit watch --format openai gateway.jsonl --tokenizer Qwen3-8B/ --template-kwarg enable_thinking=false"
)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "what was typed: each bool is one switch on the command line"
)]
pub struct WatchArgs {
    /// Trace file to follow: what it already holds is read first, then appended lines. It may
    /// not exist yet (it is waited for); truncation and rotation are followed. A directory:
    /// its files (see --glob) in order, then each new one. `-`: standard input. May be left
    /// out with --listen (rows then come only over HTTP)
    #[arg(value_name = "TRACE")]
    pub trace: Option<PathBuf>,

    /// With a directory as TRACE: the files to follow, e.g. 'lookup_hashes_*.jsonl'
    /// (default: every file not starting with a dot)
    #[arg(long, value_name = "PATTERN")]
    pub glob: Option<String>,

    /// With a directory as TRACE: read its files in name order or modification-time order
    #[arg(long, value_enum, default_value_t = FileOrder::Name)]
    pub order: FileOrder,

    /// How long a rotated-away file (or a directory's older file) must stay quiet, once a
    /// newer one exists, before reading moves on (a writer may still append to it)
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0,
          value_parser = parse_duration_seconds)]
    pub rotation_grace: f64,

    /// Upstream LiteHit config (instance groups, block sizes, TTLs, routing); TRACE, if
    /// given, wins over its trace_file_path
    #[arg(long, value_name = "CFG", conflicts_with_all = [
        "block_size", "block_bytes", "kv_bytes_per_token", "model", "ttl_seconds",
        "prefix_hash", "instance", "trace_block_size",
    ])]
    pub config: Option<PathBuf>,

    /// Capacity slots, comma-separated: GiB (2^30 bytes: 40, 0.5, 40GB, 40GiB), TiB
    /// (4TB = 4096 GiB) or blocks (1000b, 1000blk); ∞ is always shown; more can be added live with `a`.
    /// Each slot holds at least one block and has its own block count. Default: the config's
    /// capacity_gb, else 10,40,80. Every value after the flag, up to the next flag, is a
    /// slot (space-separated too): type TRACE before it
    #[arg(
        long,
        value_name = "GB",
        num_args = 1..,
        value_delimiter = ',',
        value_parser = parse_capacity,
        allow_negative_numbers = true
    )]
    pub capacity_gb: Vec<Capacity>,

    /// Skip what the file holds at startup and follow only new lines
    #[arg(long)]
    pub from_end: bool,

    /// Where `s` writes every fact so far (same CSV as `litehit replay`), atomically; a
    /// directory (an existing one, or a path ending in `/`) gets `litehit_facts.csv` inside
    /// it, and a missing directory is created at start, as with `replay --out`.
    /// Default: litehit_facts.csv. Only if this is given, the facts are also written there
    /// once when the monitor stops (`q`, SIGTERM or SIGHUP; headless, at the end of input);
    /// without it, `q` asks before facts no snapshot holds are lost
    #[arg(long, value_name = "PATH")]
    pub facts_out: Option<PathBuf>,

    /// Keep no facts rows: `s` is turned off and nothing is spilled to disk (the numbers are
    /// the same). With --headless and no --facts-out nothing is kept anyway
    #[arg(long, conflicts_with = "facts_out")]
    pub no_facts: bool,

    /// Where the facts rows wait for a facts write (a named file `.NAME.RANDOM.spill`,
    /// removed when the monitor stops, and by a later run if it was killed). Default: beside
    /// --facts-out, so the disk it takes is where the facts go; without --facts-out, the
    /// system temp directory ($TMPDIR, else /tmp)
    #[arg(long, value_name = "DIR", conflicts_with = "no_facts")]
    pub spill_dir: Option<PathBuf>,

    #[command(flatten)]
    pub lane: LaneFlags,

    #[command(flatten)]
    pub tier_args: super::query_args::TierArgs,

    #[command(flatten)]
    pub quota: WatchQuotaArgs,

    /// With --format openai (or --tokenizer alone), TRACE is an OpenAI request log: each line
    /// is converted as `litehit trace` converts it (block size: --block-size, default 16);
    /// a line that cannot be is skipped and counted
    #[cfg(feature = "tokenize")]
    #[command(flatten)]
    pub openai: super::trace_args::TokenizeFlags,

    #[command(flatten)]
    pub line_cap: super::LineCapFlags,

    /// No TUI: print one JSON line per --interval on stdout with the same numbers
    #[arg(long)]
    pub headless: bool,

    /// Whose prefix-cache rules the numbers follow: ideal (every cached prefix block hits),
    /// vllm or sglang (a prompt never hits its last token; docs/PLANNING.md)
    #[arg(long, value_name = "ENGINE", default_value = "ideal",
          value_parser = super::engine_args::parse_engine_rule)]
    pub engine: litehit_core::facts::EngineRule,

    #[command(flatten)]
    pub engine_pool: super::engine_args::EnginePoolFlags,

    /// The serving engine's Prometheus endpoint (vLLM: vllm:prefix_cache_queries_total,
    /// vllm:prefix_cache_hits_total, vllm:cache_config_info; SGLang: sglang:prompt_tokens_total,
    /// sglang:cached_tokens_total), scraped every --interval: its hit rate over the last
    /// window beside LiteHit's (at the engine slot, else ∞), and its num_gpu_blocks ×
    /// block_size as the engine slot when --gpu-blocks/--gpu-memory are not given.
    /// Repeatable, one per instance: INSTANCE=URL compares with that instance, a URL alone
    /// with every instance. Loopback and private addresses only, unless
    /// --engine-metrics-any-address. A failed scrape is shown and counted
    #[arg(long, value_name = "[INSTANCE=]URL")]
    pub engine_metrics: Vec<String>,

    /// Let --engine-metrics scrape addresses that are neither loopback nor private
    #[arg(long, requires = "engine_metrics")]
    pub engine_metrics_any_address: bool,

    /// Seconds between JSON lines in --headless mode
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0,
          value_parser = parse_duration_seconds)]
    pub interval: f64,

    /// Screen refreshes per second at most (keys are answered at once)
    #[arg(long, value_name = "N", default_value_t = 10.0)]
    pub fps: f64,

    /// With --headless: stop at the end of the file (after a last JSON line)
    #[arg(long, requires = "headless")]
    pub exit_at_eof: bool,

    /// Width of the hit-rate-over-time windows, in seconds of trace time
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0,
          value_parser = parse_duration_seconds)]
    pub window_seconds: f64,

    /// Also take trace lines over HTTP: `POST /v1/trace` with `Content-Type:
    /// application/x-ndjson` (or application/jsonl, application/json), read as if appended to
    /// TRACE (see docs/SIDECAR.md). PORT alone listens on 127.0.0.1:PORT; any other address
    /// must be given in full (IP:PORT) and is open to all who reach it unless
    /// --listen-token-file is given. Port 0 takes a free port; the address is printed on stderr
    #[arg(long, value_name = "[IP:]PORT", value_parser = parse_listen_address)]
    pub listen: Option<SocketAddr>,

    /// Forget keys deeper than CAPACITY in the recency order (e.g. 20TiB, 40 (GB) or
    /// 50000000b), so memory stays O(CAPACITY) instead of O(unique blocks). Every capacity up
    /// to it stays exact; results above it (and ∞) are lower bounds. Default: off (exact at
    /// every capacity)
    #[arg(long, value_name = "CAPACITY", value_parser = litehit_core::grammar::parse_memory_horizon)]
    pub memory_horizon: Option<Capacity>,

    /// `lru` (default) or `lru,opt`: also Belady's optimal policy, live, beside LRU: an OPT
    /// column and the policy gap on screen, `opt_hit_tokens`/`opt_hit_rates` in --headless,
    /// `litehit_opt_hit_tokens_total` in /metrics, and with --facts-out F.csv the OPT facts
    /// in F.opt.csv (with every facts write). OPT is refused with a TTL or --memory-horizon
    #[arg(long, value_name = "POLICIES", default_value = "lru",
          value_parser = super::parse_cache_policies)]
    pub policy: litehit_core::engine::CachePolicies,

    /// With --listen: the largest body accepted, as sent and once decompressed (1048576,
    /// 64MiB); larger ones get 413
    #[arg(long, value_name = "BYTES", default_value = "64MiB", value_parser = parse_byte_size,
          requires = "listen")]
    pub max_body: u64,

    /// With --listen: bytes all bodies being read may hold at once, as declared by their
    /// Content-Length before any byte arrives, as they arrive, and once decompressed (at least
    /// --max-body); a body over it gets 503 with Retry-After and the monitor goes on.
    /// Default: 4 × --max-body (256MiB)
    #[arg(long, value_name = "BYTES", value_parser = parse_byte_size, requires = "listen")]
    pub max_body_total: Option<u64>,

    /// With --listen or --metrics-listen: close a connection that has not sent a whole request
    /// head this long after it opened or after its last reply (idle or half-sent), and answer
    /// 408 to a body that pauses this long
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0,
          value_parser = parse_duration_seconds)]
    pub http_idle_timeout: f64,

    /// With --listen or --metrics-listen: connections open at once, over both servers; more get
    /// 503 and are closed at once. Default: the open-files limit (ulimit -n) less 128 kept for
    /// the monitor's own files (the followed trace, the facts), at most 4096
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: Option<u64>,

    /// On a loopback --listen or --metrics-listen, a name besides 127.0.0.1, ::1 and localhost
    /// that the Host header may carry (a proxy's name, e.g. monitor.internal); repeat or
    /// comma-separate for more. Other names get 403 (DNS rebinding); a non-loopback bind
    /// takes any Host
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub allowed_host: Vec<String>,

    /// With --listen: posts must carry `Authorization: Bearer TOKEN`, TOKEN being this file's
    /// content (surrounding whitespace ignored); others get 401
    #[arg(long, value_name = "PATH", requires = "listen")]
    pub listen_token_file: Option<PathBuf>,

    /// Serve `GET /metrics` in the Prometheus text format (see docs/OPERATIONS.md): hit tokens
    /// per instance and slot, the ∞ bound, the capacity for 50/90/95/99 % of it, unique
    /// blocks, memory, lag and bad lines. PORT alone listens on 127.0.0.1:PORT; any other
    /// address must be given in full (IP:PORT). The same address as --listen shares its
    /// server. Port 0 takes a free port; the address is printed on stderr
    #[arg(long, value_name = "[IP:]PORT", value_parser = parse_listen_address)]
    pub metrics_listen: Option<SocketAddr>,

    /// Colours on the screen: auto (unless NO_COLOR is set), always or never. Default: the
    /// defaults file's `color`, else auto
    #[arg(long, value_enum, value_name = "WHEN")]
    pub color: Option<ColorWhen>,
}

/// `--color WHEN` (and the defaults file's `color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// In colour unless NO_COLOR is set (the monitor always draws on a terminal)
    Auto,
    /// In colour, NO_COLOR or not
    Always,
    /// No colours (bold, reverse and dim still mark the selection)
    Never,
}

/// `--listen`: `PORT` is loopback (`127.0.0.1:PORT`); anything else is a full `IP:PORT`
/// (`0.0.0.0:8080`, `[::1]:8080`), so that listening beyond this host is always spelled out.
pub fn parse_listen_address(input: &str) -> Result<SocketAddr, String> {
    let input = input.trim();
    if let Ok(port) = input.parse::<u16>() {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    input.parse::<SocketAddr>().map_err(|_| {
        format!(
            "expected PORT (loopback) or IP:PORT, e.g. 8080, 127.0.0.1:8080 or [::1]:8080, \
             found {input:?}"
        )
    })
}

/// The order a followed directory's files are read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FileOrder {
    /// By file name
    Name,
    /// By modification time
    Mtime,
}

/// Generate a realistic trace into a temporary file at a steady rate and watch it live.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct DemoArgs {
    /// Requests appended per second (wall time)
    #[arg(long, value_name = "N", default_value_t = 2000,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub rate: u32,

    /// Instances (lanes) the generated traffic is spread over
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub instances: u16,

    /// Seed of the generator (same seed, same trace)
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// Capacity slots, comma-separated: GiB (40, 0.5, 40GB), TiB (4TB) or blocks (1000b); ∞ is
    /// always shown
    #[arg(
        long,
        value_name = "GB,...",
        value_delimiter = ',',
        default_value = "10,40,80",
        value_parser = parse_capacity,
        allow_negative_numbers = true
    )]
    pub capacity_gb: Vec<Capacity>,

    /// Where `s` writes every fact so far (a directory gets `litehit_facts.csv` inside it);
    /// not with --headless, which has no `s` key
    #[arg(
        long,
        value_name = "PATH",
        default_value = "litehit_facts.csv",
        conflicts_with = "headless"
    )]
    pub facts_out: PathBuf,

    /// Screen refreshes per second at most
    #[arg(long, value_name = "N", default_value_t = 10.0)]
    pub fps: f64,

    /// No TUI: print JSON lines (as `watch --headless`)
    #[arg(long)]
    pub headless: bool,

    /// Stop after this many requests (default: run until quit)
    #[arg(long, value_name = "N")]
    pub requests: Option<u64>,

    /// `lru` (default) or `lru,opt`: also Belady's optimal policy beside LRU, as `watch
    /// --policy lru,opt`
    #[arg(long, value_name = "POLICIES", default_value = "lru",
          value_parser = super::parse_cache_policies)]
    pub policy: litehit_core::engine::CachePolicies,

    #[command(flatten)]
    pub model: super::model_args::ModelFlags,

    #[command(flatten)]
    pub engine_pool: super::engine_args::EnginePoolFlags,

    /// Add the shared pool lane, NAME (default `pool`), as `watch --pool` does: one LRU
    /// cache fed by every instance's rows, shown beside them at N × each capacity. Written
    /// `--pool`, `--pool NAME` or `--pool=NAME`
    #[arg(
        long,
        value_name = "NAME",
        num_args = 0..=1,
        default_missing_value = super::DEFAULT_POOL_NAME
    )]
    pub pool: Option<String>,

    /// Colours on the screen: auto (unless NO_COLOR is set), always or never. Default: the
    /// defaults file's `color`, else auto
    #[arg(long, value_enum, value_name = "WHEN")]
    pub color: Option<ColorWhen>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use litehit_core::formats::TraceFormat;

    #[derive(Debug, Parser)]
    struct Watch {
        #[command(flatten)]
        args: WatchArgs,
    }

    #[test]
    fn test_capacity_gb_is_comma_separated() {
        let watch =
            Watch::parse_from(["watch", "t.jsonl", "--capacity-gb", "10,40GB,0.5,1000b,inf"]);
        assert_eq!(
            watch.args.capacity_gb,
            [
                Capacity::Gigabytes(10.0),
                Capacity::Gigabytes(40.0),
                Capacity::Gigabytes(0.5),
                Capacity::Blocks(1000),
                Capacity::Infinite
            ]
        );
        let typo = Watch::try_parse_from(["watch", "t.jsonl", "--capacity-gb", "40PB"]);
        let message = typo.unwrap_err().to_string();
        assert!(
            message.contains("expected GB (40, 0.5), TB (4TB)"),
            "{message}"
        );
        // One grammar: TB as --tiers takes it.
        let terabytes = Watch::parse_from(["watch", "t.jsonl", "--capacity-gb", "4TB"]);
        assert_eq!(terabytes.args.capacity_gb, [Capacity::Gigabytes(4096.0)]);
        assert_eq!(watch.args.facts_out, None);
        assert!((watch.args.fps - 10.0).abs() < f64::EPSILON);
    }

    #[test]
    fn test_no_facts_conflicts_with_facts_out() {
        let watch = Watch::parse_from(["watch", "t.jsonl", "--no-facts"]);
        assert!(watch.args.no_facts);
        let both = Watch::try_parse_from(["watch", "t.jsonl", "--no-facts", "--facts-out", "f"]);
        assert!(both.is_err());
    }

    #[test]
    fn test_metrics_listen_port_alone_is_loopback() {
        let watch = Watch::parse_from(["watch", "--metrics-listen", "9464"]);
        assert_eq!(
            watch.args.metrics_listen,
            Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 9464)))
        );
        let watch = Watch::parse_from(["watch", "--metrics-listen", "0.0.0.0:9464"]);
        assert_eq!(
            watch.args.metrics_listen,
            Some(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 9464)))
        );
    }

    #[test]
    fn test_listen_port_alone_is_loopback() {
        let watch = Watch::parse_from(["watch", "--listen", "8080"]);
        assert_eq!(watch.args.listen, Some("127.0.0.1:8080".parse().unwrap()));
        assert_eq!(watch.args.trace, None);
        assert_eq!(watch.args.max_body, 64 << 20);
        let explicit = Watch::parse_from(["watch", "t", "--listen", "0.0.0.0:9000"]);
        assert_eq!(explicit.args.listen, Some("0.0.0.0:9000".parse().unwrap()));
        let v6 = Watch::parse_from(["watch", "--listen", "[::1]:9000"]);
        assert_eq!(v6.args.listen, Some("[::1]:9000".parse().unwrap()));
        for typo in ["localhost:8080", "70000", "127.0.0.1", ":8080"] {
            let message = Watch::try_parse_from(["watch", "--listen", typo])
                .unwrap_err()
                .to_string();
            assert!(
                message.contains("expected PORT (loopback) or IP:PORT"),
                "{message}"
            );
        }
    }

    #[test]
    fn test_max_body_takes_a_byte_size_and_needs_listen() {
        let watch = Watch::parse_from(["watch", "--listen", "1", "--max-body", "1MiB"]);
        assert_eq!(watch.args.max_body, 1 << 20);
        assert!(Watch::try_parse_from(["watch", "--listen", "1", "--max-body", "1MB"]).is_err());
        assert!(Watch::try_parse_from(["watch", "t", "--max-body", "1MiB"]).is_err());
    }

    #[test]
    fn test_http_budgets_and_checks() {
        let watch = Watch::parse_from(["watch", "--listen", "1"]);
        assert_eq!(watch.args.max_body_total, None);
        assert!((watch.args.http_idle_timeout - 30.0).abs() < f64::EPSILON);
        assert_eq!(watch.args.max_connections, None);
        let watch = Watch::parse_from([
            "watch",
            "--listen",
            "1",
            "--max-body-total",
            "1GiB",
            "--http-idle-timeout",
            "2.5",
            "--max-connections",
            "100",
            "--allowed-host",
            "a.internal,b.internal",
            "--allowed-host",
            "c",
            "--listen-token-file",
            "token",
        ]);
        assert_eq!(watch.args.max_body_total, Some(1 << 30));
        assert!((watch.args.http_idle_timeout - 2.5).abs() < f64::EPSILON);
        assert_eq!(watch.args.max_connections, Some(100));
        assert_eq!(watch.args.allowed_host, ["a.internal", "b.internal", "c"]);
        assert_eq!(watch.args.listen_token_file, Some(PathBuf::from("token")));
        assert!(
            Watch::try_parse_from(["watch", "--listen", "1", "--max-connections", "0"]).is_err()
        );
        assert!(Watch::try_parse_from(["watch", "t", "--listen-token-file", "x"]).is_err());
        assert!(Watch::try_parse_from(["watch", "t", "--max-body-total", "1GiB"]).is_err());
    }

    #[test]
    fn test_config_conflicts_with_single_instance_flags() {
        let result =
            Watch::try_parse_from(["watch", "t", "--config", "c.json", "--block-size", "16"]);
        assert!(result.is_err());
    }

    #[test]
    fn test_exit_at_eof_needs_headless() {
        assert!(Watch::try_parse_from(["watch", "t", "--exit-at-eof"]).is_err());
        assert!(Watch::try_parse_from(["watch", "t", "--headless", "--exit-at-eof"]).is_ok());
    }

    #[test]
    fn test_single_instance_flags_map_one_to_one() {
        let watch = Watch::parse_from([
            "watch",
            "t",
            "--block-size",
            "64",
            "--trace-block-size",
            "16",
            "--block-bytes",
            "4096",
            "--ttl-seconds",
            "30",
            "--prefix-hash",
            "--instance",
            "i1",
            "--format",
            "mooncake",
        ]);
        let flags = watch.args.lane.to_single_instance_flags(None);
        assert_eq!(flags.block_size_tokens, Some(64));
        assert_eq!(flags.trace_block_size_tokens, Some(16));
        assert_eq!(flags.block_bytes, Some(4096));
        assert_eq!(flags.ttl_ns, Some(30_000_000_000));
        assert!(flags.prefix_hash);
        assert_eq!(flags.instance.as_deref(), Some("i1"));
        assert_eq!(flags.format, Some(TraceFormat::Mooncake));
    }
}

/// `watch --quota-total`, `--quota-floor`, `--quota-step`: `query`'s quota planner, live, with
/// `query`'s grammar and parsers (docs/TENANTS.md).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct WatchQuotaArgs {
    /// The live best split of one cache of SIZE (`80GiB`, `3000b`) among the lanes (each
    /// lane but the pool is a tenant, e.g. `--lane-by tenant`), planned on every refresh as
    /// `query --quota-total` plans it: the TUI's Q line (isolated, pooled with --pool and
    /// equal-split hit rates, the isolation cost, the largest quotas) and the headless
    /// JSON's `quota`
    #[arg(long, value_name = "SIZE", value_parser = super::query_args::parse_quota_size)]
    pub quota_total: Option<litehit_core::projector::Capacity>,

    #[command(flatten)]
    pub grid: super::query_args::QuotaGridArgs,
}

impl WatchQuotaArgs {
    /// What the planner is asked (`None` without `--quota-total`).
    #[must_use]
    pub fn request(&self) -> Option<litehit_report::QuotaRequest> {
        self.grid.request(self.quota_total)
    }
}
