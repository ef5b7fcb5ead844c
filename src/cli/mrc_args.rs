//! Arguments of `litehit mrc`.

use std::path::PathBuf;

use super::query_args::{OptArg, PoolArg, QuotaGridArgs, SpanArgs, TierArgs, parse_quota_size};

/// Default cap on points per curve in `--json` (exact breakpoints when there are fewer).
pub const DEFAULT_MAX_CURVE_POINTS: usize = 1000;

/// Miss-ratio curve from facts: the exact cumulative hit rate at every capacity, knees and
/// saturation, per instance and in total.
#[derive(Debug, Clone, PartialEq, clap::Args)]
#[command(
    after_long_help = "The table lists, per instance and for the total: requests, input tokens, block \
geometry, the hit rate with unlimited capacity, the smallest capacity reaching 50/90/95/99% of it \
(GiB with blocks in parentheses) and the saturation capacity (the smallest reaching it fully). With --from/--to/--exclude-warmup, only \
the rows in that span of trace time are accounted, and the table (`accounted:`), --json \
(`accounted_span`) and the plots' subtitle say which span. \
GiB = 2^30 bytes. The total gives every instance its own cache of the same size in bytes, as the \
overall line of `litehit query` does.\n\nRows of one instance must share block_size_tokens and \
block_bytes.\n\nExample:\n  litehit mrc out/litehit_facts.csv --png mrc.png"
)]
pub struct MrcArgs {
    /// Facts files, CSV or Parquet (`.gz` / `.zst` too; `-` is standard input; a directory
    /// means the facts file in it; a quoted glob such as 'shards/*/litehit_facts.csv' means
    /// every file it matches, in name order); several files (e.g. replay shards) are
    /// aggregated per instance
    #[arg(value_name = "FACTS", required = true)]
    pub facts: Vec<PathBuf>,

    /// Print the report as JSON (knees, saturation and curve points) instead of the table
    #[arg(long)]
    pub json: bool,

    /// Also write a PNG plot (hit rate % vs capacity GiB) to FILE, atomically; `-` writes it
    /// to stdout (the table then goes to stderr)
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,

    /// Also write the plot as SVG to FILE, atomically; `-` writes it to stdout (the table then
    /// goes to stderr)
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// Names the trace in the plots' subtitle (a facts file does not record it); without it
    /// the subtitle names the facts files with their directory (`run-0412/litehit_facts.csv`)
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,

    /// Most points per curve in --json (at least 2: capacity 0 and the saturation point);
    /// the exact breakpoints when there are no more than this (for the total: when every
    /// instance has the same block bytes), else this many evenly spaced capacities (each
    /// value still exact); `exact_breakpoints` says which
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CURVE_POINTS,
          value_parser = parse_curve_points)]
    pub max_curve_points: usize,

    #[command(flatten)]
    pub tier_args: TierArgs,

    #[command(flatten)]
    pub span: SpanArgs,

    #[command(flatten)]
    pub pool: PoolArg,

    #[command(flatten)]
    pub model: super::model_args::ModelFlags,

    #[command(flatten)]
    pub opt: OptArg,

    #[command(flatten)]
    pub tenants: TenantArgs,
}

/// `--tenants` and its quota flags: each tenant's curve, and each one's quota in the best
/// split of one cache (docs/TENANTS.md). The flags read sizes as `query --quota-total` does.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct TenantArgs {
    /// Every lane but the pool is a tenant (e.g. `replay --lane-by tenant`): the plots draw
    /// each tenant's curve (its isolated LRU at each size), without the total and pool lines
    #[arg(long)]
    pub tenants: bool,

    /// With --tenants: mark each tenant's quota in the best split of one cache of SIZE
    /// (`80GiB`, `3000b`) on its curve, as `query --quota-total` plans it; the table and
    /// --json add the plan (the pool and an equal split beside it)
    #[arg(long, value_name = "SIZE", requires = "tenants", value_parser = parse_quota_size)]
    pub quota_total: Option<litehit_core::projector::Capacity>,

    #[command(flatten)]
    pub grid: QuotaGridArgs,
}

impl TenantArgs {
    /// What the planner is asked, when `--quota-total` is given.
    #[must_use]
    pub fn quota_request(&self) -> Option<litehit_report::QuotaRequest> {
        self.grid.request(self.quota_total)
    }
}

impl Default for MrcArgs {
    fn default() -> Self {
        Self {
            facts: Vec::new(),
            json: false,
            png: None,
            svg: None,
            title: None,
            max_curve_points: DEFAULT_MAX_CURVE_POINTS,
            tier_args: TierArgs::default(),
            span: SpanArgs::default(),
            pool: PoolArg::default(),
            model: super::model_args::ModelFlags::default(),
            opt: OptArg::default(),
            tenants: TenantArgs::default(),
        }
    }
}

/// `--max-curve-points`: a curve needs its two ends.
fn parse_curve_points(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(points) if points >= 2 => Ok(points),
        Ok(_) => Err("at least 2 (capacity 0 and the saturation point)".to_owned()),
        Err(error) => Err(error.to_string()),
    }
}
