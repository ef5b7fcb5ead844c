//! Arguments of `litehit query` (upstream `lite_hit_facts_query_main`, REFERENCE §8.1).

use std::path::PathBuf;

use litehit_core::grammar::parse_block_count;

/// A `--capacity-blocks` value; a refused one says where the GB capacities go, since a GB
/// value typed after the flag is one of its values (issue 26).
pub(super) fn parse_block_slot(input: &str) -> Result<u64, String> {
    parse_block_count(input).map_err(|error| {
        format!("{error} (every value up to the next flag is a block count: type GB capacities before --capacity-blocks)")
    })
}

/// Capacity query over a facts file: per-request hit blocks and rates plus summaries.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
#[command(
    after_long_help = "Output (JSON Lines, byte-compatible with upstream's facts query): one line per \
facts row with \"hit_blocks\" and \"hit_rates\" per slot, then one summary line per instance_id \
(byte order), then the overall summary. With --tiers and no capacities, the per-capacity \
arrays (\"capacity_gb\", \"hit_blocks\", \"total_hit_tokens\", ...) are empty ([]). With \
--capacity-blocks, each summary also has a \
\"capacity_blocks\" array after \"capacity_gb\", and every per-slot array lists the GB slots first, \
then the block slots.\n\nShards: the rows of FACTS and then of each --shard file are written in \
that order, and the summaries add up all files, as if they were one facts file.\n\nExample:\n  \
litehit query out/litehit_facts.csv query.jsonl 0 25 50 100 -1"
)]
pub struct QueryArgs {
    /// Facts file (`litehit_facts.csv`, from `litehit replay` or upstream `lite_hit_main`, or
    /// `litehit_facts.parquet`; `.gz` / `.zst` are read too, `-` is standard input, a directory
    /// means the facts file in it; a quoted glob such as 'shards/*/litehit_facts.csv' means
    /// every file it matches, in name order, as if each were a --shard)
    #[arg(value_name = "FACTS")]
    pub facts: PathBuf,

    /// Output JSONL file, published atomically (temp file + rename; a FIFO or device is
    /// written in place); `-` (or `/dev/stdout`) writes to stdout
    #[arg(value_name = "OUT")]
    pub out: PathBuf,

    /// Cache capacities in GiB (2^30 bytes, floored to whole blocks of each row's
    /// `block_bytes`; 40, 0.5, 40GB and 40GiB alike), or TiB (4TB, 0.5TiB = 1024 GiB each), as --tiers
    /// takes them. Order is kept; duplicates and 0 are allowed; a negative value (e.g. -1) or
    /// inf means unlimited capacity. None are needed with --tiers (the tiers are the question)
    #[arg(value_name = "CAPACITY_GB", allow_negative_numbers = true)]
    pub capacity_gb: Vec<String>,

    /// Extra capacity slots in blocks (independent of `block_bytes`): `1000` or `1000b`,
    /// comma-separated, space-separated or repeated. Every value after the flag, up to the
    /// next flag, is a block count (a GB capacity typed there is refused, never read as
    /// GB): type the GB capacities before it. In the JSONL the GB slots come first
    #[arg(long, value_name = "N", num_args = 1.., value_delimiter = ',',
          allow_negative_numbers = true, value_parser = parse_block_slot)]
    pub capacity_blocks: Vec<u64>,

    /// Write only the summary lines (per instance and overall), not one line per row
    #[arg(long)]
    pub summary_only: bool,

    /// Another facts file of the same run (e.g. one per replay shard); repeatable. Its rows
    /// follow those of FACTS and the summaries aggregate every file
    #[arg(long = "shard", value_name = "PATH")]
    pub shards: Vec<PathBuf>,

    #[command(flatten)]
    pub tier_args: TierArgs,

    #[command(flatten)]
    pub span: SpanArgs,

    /// Instead of rows and summaries, write one line per time window and capacity (over all
    /// instances) for windows of this length (`600`, `10m`): window k covers trace time
    /// [k·W, (k+1)·W) from the first request; empty windows are left out. `window_start_s`
    /// and `window_end_s` are exact (the decimal of the ns offset), `window_start_ns` the
    /// absolute start; all three are clipped to the accounted span (--from, --to,
    /// --exclude-warmup), so a window they cut is labelled with the part it sums, not as a
    /// full one. With --tiers, one line per window and tier instead (`tier_hit_tokens`,
    /// `tier_share`, and the window's `miss_share`; a pool lane's at N × each tier); no
    /// capacities are taken then
    #[arg(long, value_name = "DURATION", conflicts_with = "summary_only")]
    pub window: Option<String>,

    /// With --window: CSV with a header instead of JSON Lines; its columns are the JSONL's
    /// field names in the same order (a field a line lacks is an empty cell)
    #[arg(long, requires = "window")]
    pub csv: bool,

    #[command(flatten)]
    pub pool: PoolArg,

    #[command(flatten)]
    pub opt: OptArg,

    #[command(flatten)]
    pub quota: QuotaArgs,

    #[command(flatten)]
    pub model: super::model_args::ModelFlags,
}

/// `--opt FILE` and `--no-opt` of `query` and `mrc`: the OPT facts beside the LRU ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct OptArg {
    /// The OPT facts of the same trace (`replay --policy lru,opt` writes `NAME.opt.csv`
    /// beside `NAME.csv`), one per facts file in the same order (repeatable): OPT's hit rate
    /// and LRU's misses split into cold, capacity and policy misses, beside LRU's figures
    /// (docs/PLANNING.md). Without it, the `NAME.opt.csv` beside each facts file is read
    /// when every one has it (said on stderr). Refused when the rows are not of the same
    /// trace
    #[arg(long = "opt", value_name = "FILE", conflicts_with = "no_opt")]
    pub files: Vec<PathBuf>,

    /// Read no OPT facts, even with a `NAME.opt.csv` beside the facts
    #[arg(long)]
    pub no_opt: bool,
}

/// `--quota-total`, `--quota-floor`, `--quota-step`: the quota planner (docs/TENANTS.md).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct QuotaArgs {
    /// Instead of rows and summaries, write one line: the per-tenant quotas (each lane but
    /// the pool is a tenant, e.g. `replay --lane-by tenant`) of one cache of SIZE (`80GiB`,
    /// `3000b`) that maximise the hit tokens of isolated LRUs, beside one shared cache of
    /// SIZE (the pool lane, when the facts have one) and an equal split; a table too (on
    /// stdout, or stderr when OUT is `-`). No capacities are taken then
    #[arg(long, value_name = "SIZE", value_parser = parse_quota_size,
          conflicts_with_all = ["capacity_gb", "capacity_blocks", "window", "summary_only",
                                "tiers", "from", "to", "exclude_warmup"])]
    pub quota_total: Option<litehit_core::projector::Capacity>,

    #[command(flatten)]
    pub grid: QuotaGridArgs,
}

impl QuotaArgs {
    /// What the planner is asked (`None` without `--quota-total`).
    #[must_use]
    pub fn request(&self) -> Option<litehit_report::QuotaRequest> {
        self.grid.request(self.quota_total)
    }
}

/// `--quota-floor` and `--quota-step`, the same on `query`, `mrc --tenants` and `watch`
/// (each command says what its own `--quota-total` does).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct QuotaGridArgs {
    /// A tenant's smallest quota, TENANT=SIZE (rounded up to the grid); repeatable
    #[arg(long, value_name = "TENANT=SIZE", requires = "quota_total",
          value_parser = parse_quota_floor)]
    pub quota_floor: Vec<(String, litehit_core::projector::Capacity)>,

    /// The grid the quotas are chosen on (exactly): multiples of SIZE [default: the total /
    /// 512, at least one block]
    #[arg(long, value_name = "SIZE", requires = "quota_total", value_parser = parse_quota_size)]
    pub quota_step: Option<litehit_core::projector::Capacity>,
}

impl QuotaGridArgs {
    /// The planner's request for `total` (`None` without `--quota-total`).
    #[must_use]
    pub fn request(
        &self,
        total: Option<litehit_core::projector::Capacity>,
    ) -> Option<litehit_report::QuotaRequest> {
        total.map(|total| litehit_report::QuotaRequest {
            total,
            floors: self.quota_floor.clone(),
            step: self.quota_step,
        })
    }
}

/// A quota size: a capacity in the one grammar (`80GiB`, `0.5TB`, `3000b`); every quota flag's.
pub(crate) fn parse_quota_size(text: &str) -> Result<litehit_core::projector::Capacity, String> {
    litehit_core::grammar::parse_capacity(text).map_err(|error| error.to_string())
}

/// `TENANT=SIZE`, `--quota-floor`'s.
fn parse_quota_floor(text: &str) -> Result<(String, litehit_core::projector::Capacity), String> {
    let (tenant, size) = text
        .rsplit_once('=')
        .filter(|(tenant, _)| !tenant.is_empty())
        .ok_or_else(|| format!("{text:?}: expected TENANT=SIZE, e.g. team-a=20GiB"))?;
    Ok((tenant.to_owned(), parse_quota_size(size)?))
}

/// `--pool NAME` of `query` and `mrc`: which instance is the shared pool lane.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct PoolArg {
    /// The shared pool lane (`replay --pool`) is recognised by its rows, whatever its name:
    /// the lane that holds every other lane's requests (same trace_id, timestamp_ns,
    /// input_token_len, block_size_tokens), over at least two others; it is compared at N ×
    /// C with the N other instances at C each, and left out of the overall totals. This
    /// names it: an error if NAME is not such a lane. Needed only when the facts have one
    /// instance besides the pool (the two lanes are then equal, and only a name tells; a
    /// lane called `pool` is taken without it), or, for `query` of a pool with another name,
    /// to save the second read of its rows (which standard input cannot give)
    #[arg(long = "pool", value_name = "NAME")]
    pub name: Option<String>,
}

impl PoolArg {
    /// The recognition rule (see `PoolRule`).
    #[must_use]
    pub fn rule(&self) -> litehit_report::PoolRule {
        litehit_report::PoolRule::from_flag(self.name.as_deref())
    }
}

/// `--tiers` and `--tier-mode` (of `query`, `mrc` and `watch`).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct TierArgs {
    /// Cache tiers, top first, comma-separated: sizes (`80GB,512GB,4TB`; binary units, TB =
    /// 1024 GB; blocks as `1000b`; `inf`), optionally named (`hbm=80GB,dram=512GB`). `query`
    /// adds `tier_mode`, `tier_names`, `tier_sizes`, `tier_hit_blocks`, `tier_hit_tokens`,
    /// `tier_shares` and `miss_share` to each summary line; `mrc` adds a tier table (`tiers`
    /// in --json); `watch` shows a tiers panel, `tiers` in each --headless instance and
    /// total, and `litehit_tier_hit_tokens_total` in /metrics. Every value after the flag, up
    /// to the next flag, is a tier (space-separated too)
    #[arg(long, value_name = "[NAME=]SIZE", num_args = 1.., value_delimiter = ',')]
    pub tiers: Vec<String>,

    /// How the tiers relate: `exclusive` (an LRU hierarchy: evictions are demoted to the next
    /// tier, hits promoted to the top; tier i serves H(C1+…+Ci) − H(C1+…+Ci−1)) or
    /// `inclusive` (each tier an LRU of its own size, sizes growing top first; tier i serves
    /// H(Ci) − H(Ci−1)) [default: exclusive]. Needs tiers (typed, or `tiers` in the
    /// defaults file)
    #[arg(long, value_enum)]
    pub tier_mode: Option<TierModeArg>,

    /// Where `tiers` came from when the defaults file gave them (`FILE:LINE`), so an error
    /// found once the mode is known (e.g. a typed `--tier-mode inclusive`) names it.
    #[arg(skip)]
    pub tiers_from_file: Option<String>,
}

/// `--from`, `--to` and `--exclude-warmup` (of `query` and `mrc`).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct SpanArgs {
    /// Account only rows from this time on: trace time, seconds since the first request
    /// (`600`, `600s`, `10m`), or an absolute `timestamp_ns` (an integer of at least 10^15,
    /// or with `ns`). The cache state is still built from the start of the trace
    #[arg(long, value_name = "TIME")]
    pub from: Option<String>,

    /// Account only rows before this time (same spellings as --from; after --from)
    #[arg(long, value_name = "TIME")]
    pub to: Option<String>,

    /// Leave the warm-up out of the accounting: a share of the trace's span (`20%`, below
    /// 100%) or a duration (`600s`, `10m`) from the first request; with --from, the later
    /// start wins. A span (of these three flags) that holds no facts row is an error naming
    /// it and the trace's own first and last timestamps
    #[arg(long, value_name = "SHARE|DURATION")]
    pub exclude_warmup: Option<String>,
}

/// `--tier-mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TierModeArg {
    #[default]
    Exclusive,
    Inclusive,
}

impl From<TierModeArg> for litehit_core::projector::tiers::TierMode {
    fn from(mode: TierModeArg) -> Self {
        match mode {
            TierModeArg::Exclusive => Self::Exclusive,
            TierModeArg::Inclusive => Self::Inclusive,
        }
    }
}

impl QueryArgs {
    /// FACTS followed by every `--shard`, in order; a directory stands for the
    /// `litehit_facts.csv` in it.
    #[must_use]
    pub fn facts_paths(&self) -> Vec<PathBuf> {
        std::iter::once(&self.facts)
            .chain(&self.shards)
            .map(|path| litehit_core::facts::file::facts_input_path(path))
            .collect()
    }

    /// Whether OUT is `-` (stdout).
    #[must_use]
    pub fn writes_to_stdout(&self) -> bool {
        self.out.as_os_str() == "-"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: QueryArgs,
    }

    fn parse(argv: &[&str]) -> QueryArgs {
        Wrapper::try_parse_from(std::iter::once("query").chain(argv.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn tiers_windows_and_time_flags() {
        let args = parse(&[
            "f.csv",
            "-",
            "1",
            "--tiers",
            "hbm=80GB,4TB",
            "--tier-mode",
            "inclusive",
            "--from",
            "10m",
            "--exclude-warmup",
            "20%",
        ]);
        assert_eq!(args.tier_args.tiers, ["hbm=80GB", "4TB"]);
        assert_eq!(args.tier_args.tier_mode, Some(TierModeArg::Inclusive));
        assert_eq!(args.span.from.as_deref(), Some("10m"));
        assert_eq!(args.span.exclude_warmup.as_deref(), Some("20%"));
        assert_eq!(parse(&["f.csv", "-", "1"]).tier_args.tier_mode, None);
        for refused in [
            &["f.csv", "-", "1", "--csv"][..],
            &["f.csv", "-", "1", "--window", "10m", "--summary-only"],
        ] {
            assert!(
                Wrapper::try_parse_from(std::iter::once("query").chain(refused.iter().copied()))
                    .is_err(),
                "{refused:?}"
            );
        }
    }

    #[test]
    fn negative_capacities_are_positional_values() {
        let args = parse(&[
            "f.csv",
            "-",
            "0",
            "-1",
            "2.5",
            "-0.5",
            "1e3",
            "--summary-only",
        ]);
        assert_eq!(args.capacity_gb, ["0", "-1", "2.5", "-0.5", "1e3"]);
        assert!(args.summary_only);
        assert!(args.writes_to_stdout());
    }

    #[test]
    fn block_slots_take_the_b_suffix() {
        assert_eq!(
            parse(&["f.csv", "-", "--capacity-blocks", "1000b,7"]).capacity_blocks,
            [1000, 7]
        );
        let error = Wrapper::try_parse_from(["query", "f.csv", "-", "--capacity-blocks", "1.5"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("a whole number of blocks"), "{error}");
    }

    /// Issue 26: `--capacity-blocks 10 100 500` took only 10, and 100 and 500 became GB slots.
    #[test]
    fn block_slots_take_every_value_after_the_flag() {
        let args = parse(&[
            "f.csv",
            "-",
            "40",
            "--capacity-blocks",
            "10",
            "100,500b",
            "1000",
            "--summary-only",
            "80",
        ]);
        assert_eq!(args.capacity_blocks, [10, 100, 500, 1000]);
        assert_eq!(args.capacity_gb, ["40", "80"]);
        for after in ["40GB", "-1", "0.5", "inf"] {
            let error =
                Wrapper::try_parse_from(["query", "f.csv", "-", "--capacity-blocks", "10", after])
                    .unwrap_err()
                    .to_string();
            assert!(error.contains("--capacity-blocks"), "{after}: {error}");
        }
    }

    #[test]
    fn block_slots_and_shards() {
        let args = parse(&[
            "f.csv",
            "o.jsonl",
            "--capacity-blocks",
            "1,2",
            "--capacity-blocks=3",
            "--shard",
            "g.csv",
            "--shard",
            "h.csv",
            "-1",
        ]);
        assert_eq!(args.capacity_blocks, [1, 2, 3]);
        assert_eq!(args.capacity_gb, ["-1"]);
        assert_eq!(
            args.facts_paths(),
            [
                PathBuf::from("f.csv"),
                PathBuf::from("g.csv"),
                PathBuf::from("h.csv")
            ]
        );
        assert!(!args.writes_to_stdout());
    }
}
