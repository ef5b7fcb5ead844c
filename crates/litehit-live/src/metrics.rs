//! `watch --metrics-listen`: the latest [`LiveSnapshot`] in a Prometheus exposition format.
//!
//! Owns the metric names, their help text and label spelling, and nothing else: every value
//! is a field of the snapshot the ingest thread published last (the capacity for a fraction
//! of the ∞ hits included, computed there from the accumulator), so a scrape never touches
//! engine state and costs one pass over the snapshot. That pass, [`encode_snapshot`], states
//! each family and its samples once to an [`Exposition`], which spells them in one format
//! ([`Format`], chosen from the scrape's `Accept` header): OpenMetrics through
//! `prometheus-client` (the Prometheus project's own Rust client, `openmetrics.rs`, with a
//! `Collector` that reads the snapshot at scrape time instead of registered atomics: slots
//! added or removed in the TUI appear or disappear with the next scrape, and nothing is kept
//! between scrapes), or the classic text format 0.0.4 (`text.rs`), which that crate does not
//! write. The two carry the same sample lines; only the metadata lines differ.
//!
//! ```text
//! litehit_requests_total{instance}                      counter
//! litehit_input_tokens_total{instance}                  counter
//! litehit_hit_tokens_total{instance,capacity}           counter  capacity="40GiB" | "5000blocks" | "inf"
//!                                                                (+ lower_bound="true" above a memory horizon)
//! litehit_opt_hit_tokens_total{instance,capacity}       counter  watch --policy lru,opt: OPT's, as above
//! litehit_tier_hit_tokens_total{instance,tier}          counter  watch --tiers: tokens each tier served
//! litehit_observed_hit_tokens_total{instance}           counter  the engine's own cached tokens (cached_tokens)
//! litehit_observed_input_tokens_total{instance}         counter  input tokens of the rows that said them
//! litehit_bad_lines_total                               counter
//! litehit_headless_lines_dropped_total                  counter
//! litehit_clamped_timestamps_total{instance}            counter
//! litehit_ttl_expired_blocks_total{instance}            counter
//! litehit_unique_blocks{instance}                       gauge
//! litehit_capacity_for_fraction_bytes{instance,fraction} gauge   fraction="0.5" | "0.9" | "0.95" | "0.99"
//!                                                                (+ lower_bound="true" under a memory horizon)
//! litehit_memory_bytes{part}                            gauge    part="core" | "accumulator" | "facts_buffer" | "monitor"
//! litehit_facts_spill_bytes                             gauge
//! litehit_facts_retention_stopped                       gauge    1 after a failed spill write
//! litehit_ingest_lag_bytes                              gauge
//! litehit_memory_horizon_blocks{instance}               gauge    with --memory-horizon only
//! litehit_memory_horizon_bytes{instance}                gauge    with --memory-horizon only
//! litehit_build_info{version}                           info     (a gauge of value 1 in text 0.0.4)
//! litehit_engine_info{engine}                           info     --engine: ideal | vllm | sglang
//! litehit_pool_info{instance,shared_by}                 info     only with watch --pool
//! litehit_geometry_info{model,kv_bytes_per_token,kv_cache_dtype,windowed_layers_not_modelled}
//!                                                       info     only with --model
//! litehit_engine_prefix_cache_query_tokens_total{endpoint} counter only with --engine-metrics
//! litehit_engine_prefix_cache_hit_tokens_total{endpoint}   counter only with --engine-metrics
//! litehit_engine_scrape_failures_total{endpoint}           counter only with --engine-metrics
//! litehit_lone_surrogates_total                         counter  only with watch --format openai
//! litehit_http_refused_total{reason}                    counter  with --listen or --metrics-listen
//! litehit_http_open_connections                         gauge    with --listen or --metrics-listen
//! litehit_http_body_bytes                               gauge    with --listen or --metrics-listen
//! ```

mod format;
mod openmetrics;
mod text;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

pub use self::format::Format;
use self::openmetrics::OpenMetricsWriter;
use self::text::TextWriter;
use crate::LiveSnapshot;

pub use crate::http::METRICS_PATH;
pub use crate::labels::{INFINITE_CAPACITY_LABEL, capacity_label};

/// Every metric name exported, as it appears in samples (counters with `_total`, the info
/// metric with `_info`; in both formats).
pub const METRIC_NAMES: [&str; 20] = [
    "litehit_requests_total",
    "litehit_input_tokens_total",
    "litehit_hit_tokens_total",
    "litehit_tier_hit_tokens_total",
    "litehit_observed_hit_tokens_total",
    "litehit_observed_input_tokens_total",
    "litehit_bad_lines_total",
    "litehit_headless_lines_dropped_total",
    "litehit_ttl_expired_blocks_total",
    "litehit_clamped_timestamps_total",
    "litehit_unique_blocks",
    "litehit_capacity_for_fraction_bytes",
    "litehit_memory_bytes",
    "litehit_facts_spill_bytes",
    "litehit_facts_retention_stopped",
    "litehit_ingest_lag_bytes",
    "litehit_memory_horizon_blocks",
    "litehit_memory_horizon_bytes",
    "litehit_build_info",
    "litehit_engine_info",
];

/// The info metric naming the shared pool lane, exported only with `watch --pool` (so not in
/// [`METRIC_NAMES`], which every scrape has).
pub const POOL_INFO_METRIC: &str = "litehit_pool_info";

/// The counter of the optimal policy's hit tokens (`watch --policy lru,opt`), apart from
/// `litehit_hit_tokens_total` so that sums over that one stay LRU's; exported only with OPT
/// (so not in [`METRIC_NAMES`]).
pub const OPT_HIT_TOKENS_METRIC: &str = "litehit_opt_hit_tokens_total";

/// The info metric naming `--model` and its KV bytes per token, exported only with
/// `--model` (so not in [`METRIC_NAMES`]).
pub const GEOMETRY_INFO_METRIC: &str = "litehit_geometry_info";

/// The counter of lone surrogate escapes read as U+FFFD, exported only when the input is an
/// OpenAI request log (`watch --format openai`; so not in [`METRIC_NAMES`]).
pub const LONE_SURROGATES_METRIC: &str = "litehit_lone_surrogates_total";

/// The label (and its one value) a `litehit_hit_tokens_total` series carries when it is only
/// a lower bound: its capacity, or `inf`, lies above the instance's memory horizon.
pub const LOWER_BOUND_LABEL: (&str, &str) = ("lower_bound", "true");

/// The `fraction` label of a percentage (`95` → `0.95`).
#[must_use]
pub fn fraction_label(percent: u32) -> String {
    format!("{}", f64::from(percent) / 100.0)
}

/// The exposition of the latest published snapshot, for the HTTP endpoint.
#[derive(Debug)]
pub struct Exporter {
    /// OpenMetrics: `prometheus-client`'s registry, with a collector reading `snapshots`.
    registry: Registry,
    snapshots: watch::Receiver<Arc<LiveSnapshot>>,
}

impl Exporter {
    /// An exporter reading `snapshots` (latest wins) at each scrape.
    #[must_use]
    pub fn new(snapshots: watch::Receiver<Arc<LiveSnapshot>>) -> Self {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Latest(snapshots.clone())));
        Self {
            registry,
            snapshots,
        }
    }

    /// One scrape in OpenMetrics (what Prometheus asks for): `# EOF` last.
    pub fn scrape(&self) -> Result<String, fmt::Error> {
        self.scrape_as(Format::OpenMetrics)
    }

    /// One scrape in `format`.
    pub fn scrape_as(&self, format: Format) -> Result<String, fmt::Error> {
        let mut text = String::new();
        match format {
            Format::OpenMetrics => {
                prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
            }
            Format::Text => {
                let snap = Arc::clone(&self.snapshots.borrow());
                encode_snapshot(&snap, &mut TextWriter::new(&mut text))?;
            }
        }
        Ok(text)
    }
}

/// The OpenMetrics exposition of one snapshot (what a scrape asking for OpenMetrics serves
/// when `snap` is the latest).
pub fn encode(snap: &LiveSnapshot) -> Result<String, fmt::Error> {
    encode_as(snap, Format::OpenMetrics)
}

/// The exposition of one snapshot in `format`.
pub fn encode_as(snap: &LiveSnapshot, format: Format) -> Result<String, fmt::Error> {
    let (_publish, snapshots) = watch::channel(Arc::new(snap.clone()));
    Exporter::new(snapshots).scrape_as(format)
}

/// Reads the latest snapshot at scrape time.
#[derive(Debug)]
struct Latest(watch::Receiver<Arc<LiveSnapshot>>);

impl Collector for Latest {
    fn encode(&self, encoder: DescriptorEncoder) -> fmt::Result {
        let snap = Arc::clone(&self.0.borrow());
        encode_snapshot(&snap, &mut OpenMetricsWriter(encoder))
    }
}

/// A metric family's type; each format spells it its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    /// Labels naming something, value 1.
    Info,
}

/// One family as the walk states it.
#[derive(Debug, Clone, Copy)]
struct Family<'a> {
    /// The base name (OpenMetrics' `HELP`/`TYPE` name): without `_total` or `_info`.
    name: &'a str,
    /// Unescaped; each format escapes it its own way.
    help: &'a str,
    kind: Kind,
}

/// A format the walk over a snapshot writes into.
trait Exposition {
    /// Writes `family`'s metadata, then runs `samples`, which writes its samples.
    fn family(
        &mut self,
        family: Family<'_>,
        samples: &mut dyn FnMut(&mut dyn Samples) -> fmt::Result,
    ) -> fmt::Result;
}

/// The samples of the family being written.
trait Samples {
    /// One sample: `labels` with their values escaped ([`escaped`]), and its value (1 for an
    /// info metric).
    fn sample(&mut self, labels: &[(&str, &str)], value: u64) -> fmt::Result;
}

/// A label value escaped for either format (both escape `\`, `"` and newline alike).
fn escaped(value: &str) -> Cow<'_, str> {
    if !value.contains(['\\', '"', '\n']) {
        return Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len() + 2);
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A family with one sample and no labels.
fn single(out: &mut dyn Exposition, family: Family<'_>, value: u64) -> fmt::Result {
    out.family(family, &mut |samples| samples.sample(&[], value))
}

/// A family with one sample per lane, labelled by its instance.
fn per_instance(
    out: &mut dyn Exposition,
    family: Family<'_>,
    lanes: &[&crate::snapshot::LaneSnapshot],
    instances: &[Cow<'_, str>],
    value: impl Fn(&crate::snapshot::LaneSnapshot) -> u64,
) -> fmt::Result {
    out.family(family, &mut |samples| {
        for (lane, instance) in lanes.iter().zip(instances) {
            samples.sample(&[("instance", instance.as_ref())], value(lane))?;
        }
        Ok(())
    })
}

/// `litehit_tier_hit_tokens_total{instance,tier}`: the hit tokens each tier served (`watch
/// --tiers`), from the lanes' tier figures (the pool's, last in `lanes`, at N × each tier);
/// a tier reaching above the memory horizon carries `lower_bound="true"`.
fn encode_tiers(
    out: &mut dyn Exposition,
    lanes: &[&crate::snapshot::LaneSnapshot],
    instances: &[Cow<'_, str>],
    names: &[String],
) -> fmt::Result {
    let names: Vec<Cow<'_, str>> = names.iter().map(|name| escaped(name)).collect();
    let family = Family {
        name: "litehit_tier_hit_tokens",
        help: "Prefix-cache hit tokens served by this cache tier (watch --tiers), per instance; \
               the pool's tiers (litehit_pool_info) are at shared_by × each tier's size; under \
               --memory-horizon, a tier reaching above litehit_memory_horizon_bytes is a lower \
               bound and carries the label lower_bound=true",
        kind: Kind::Counter,
    };
    out.family(family, &mut |samples| {
        for (lane, instance) in lanes.iter().zip(instances) {
            for (index, (name, tokens)) in names.iter().zip(lane.tier_hit_tokens()).enumerate() {
                let labels = [
                    ("instance", instance.as_ref()),
                    ("tier", name.as_ref()),
                    LOWER_BOUND_LABEL,
                ];
                // The third label only on a lower bound.
                let lower_bound = lane.tier_lower_bounds.get(index).copied().unwrap_or(false);
                samples.sample(&labels[..if lower_bound { 3 } else { 2 }], tokens)?;
            }
        }
        Ok(())
    })
}

/// `litehit_hit_tokens_total{instance,capacity}`: one series per instance and distinct finite
/// slot label (two slots of one size are one series), then `inf`.
fn encode_hit_tokens(
    out: &mut dyn Exposition,
    snap: &LiveSnapshot,
    lanes: &[&crate::snapshot::LaneSnapshot],
    instances: &[Cow<'_, str>],
) -> fmt::Result {
    let slot_labels = distinct_slot_labels(snap);
    let family = Family {
        name: "litehit_hit_tokens",
        help: "Prefix-cache hit tokens of an exact LRU cache of this capacity per instance \
               (capacity inf: unlimited, the upper bound); under --memory-horizon, series above \
               litehit_memory_horizon_bytes (inf included) are lower bounds and carry the label \
               lower_bound=true",
        kind: Kind::Counter,
    };
    out.family(family, &mut |samples| {
        for (lane, instance) in lanes.iter().zip(instances) {
            // The pool's slots are at N × each slot's blocks (the N instances' caches
            // together): its `slot_is_lower_bound` says so.
            let series = slot_labels
                .iter()
                .map(|(index, label)| {
                    (
                        label.as_str(),
                        lane.slot_is_lower_bound(*index),
                        lane.slot_hit_tokens(*index),
                    )
                })
                .chain([(
                    INFINITE_CAPACITY_LABEL,
                    lane.is_lower_bound(None),
                    lane.infinite_hit_tokens(),
                )]);
            for (label, lower_bound, hits) in series {
                let labels = [
                    ("instance", instance.as_ref()),
                    ("capacity", label),
                    LOWER_BOUND_LABEL,
                ];
                // The third label only on a lower bound.
                let count = if lower_bound { 3 } else { 2 };
                samples.sample(&labels[..count], hits)?;
            }
        }
        Ok(())
    })
}

/// Each distinct finite slot label with its first slot's index (two slots of one size are
/// one series), in slot order.
fn distinct_slot_labels(snap: &LiveSnapshot) -> Vec<(usize, String)> {
    let mut slot_labels: Vec<(usize, String)> = Vec::with_capacity(snap.slots.len());
    for (index, slot) in snap.slots.iter().enumerate() {
        if let Some(label) = crate::labels::slot_label(slot)
            && !slot_labels.iter().any(|(_, seen)| *seen == label)
        {
            slot_labels.push((index, label));
        }
    }
    slot_labels
}

/// `litehit_opt_hit_tokens_total{instance,capacity}` (`watch --policy lru,opt`): OPT's hit
/// tokens, series as `litehit_hit_tokens_total`'s (OPT takes no memory horizon, so none is a
/// lower bound); nothing without OPT.
fn encode_opt_hit_tokens(
    out: &mut dyn Exposition,
    snap: &LiveSnapshot,
    lanes: &[&crate::snapshot::LaneSnapshot],
    instances: &[Cow<'_, str>],
) -> fmt::Result {
    if lanes.iter().all(|lane| lane.opt_slot_hit_blocks.is_none()) {
        return Ok(());
    }
    let slot_labels = distinct_slot_labels(snap);
    let family = Family {
        name: "litehit_opt_hit_tokens",
        help: "Prefix-cache hit tokens of the optimal policy (Belady's MIN, watch --policy \
               lru,opt) at this capacity per instance; litehit_hit_tokens_total minus this is \
               the policy gap (capacity inf: the same unlimited bound)",
        kind: Kind::Counter,
    };
    out.family(family, &mut |samples| {
        for (lane, instance) in lanes.iter().zip(instances) {
            let series = slot_labels
                .iter()
                .filter_map(|(index, label)| {
                    Some((label.as_str(), lane.opt_slot_hit_tokens(*index)?))
                })
                .chain([(INFINITE_CAPACITY_LABEL, lane.infinite_hit_tokens())]);
            for (label, hits) in series {
                samples.sample(
                    &[("instance", instance.as_ref()), ("capacity", label)],
                    hits,
                )?;
            }
        }
        Ok(())
    })
}

/// The one walk over a snapshot: every family and its samples, in exposition order.
#[expect(clippy::too_many_lines, reason = "one block per metric family")]
fn encode_snapshot(snap: &LiveSnapshot, out: &mut dyn Exposition) -> fmt::Result {
    // The instances, then the shared pool lane (`watch --pool`) as one more `instance`, which
    // `litehit_pool_info` names.
    let lanes: Vec<&crate::snapshot::LaneSnapshot> = snap.lanes.iter().chain(&snap.pool).collect();
    let instances: Vec<Cow<'_, str>> = lanes
        .iter()
        .map(|lane| escaped(&lane.instance_id))
        .collect();

    let family = |name, help, kind| Family { name, help, kind };
    per_instance(
        out,
        family(
            "litehit_requests",
            "Requests (get/lookup rows) read, per instance",
            Kind::Counter,
        ),
        &lanes,
        &instances,
        |lane| lane.requests,
    )?;
    per_instance(
        out,
        family(
            "litehit_input_tokens",
            "Input tokens of the requests read, per instance",
            Kind::Counter,
        ),
        &lanes,
        &instances,
        |lane| lane.input_tokens,
    )?;
    encode_hit_tokens(out, snap, &lanes, &instances)?;
    encode_opt_hit_tokens(out, snap, &lanes, &instances)?;
    if let Some(tiers) = &snap.tiers {
        encode_tiers(out, &lanes, &instances, &tiers.names)?;
    }
    single(
        out,
        family(
            "litehit_bad_lines",
            "Trace lines skipped as bad (unparsable or rejected by the engine)",
            Kind::Counter,
        ),
        snap.health.bad_lines,
    )?;
    if snap.source.converted_from.is_some() {
        single(
            out,
            family(
                "litehit_lone_surrogates",
                "Lone surrogate escapes (U+D800 to U+DFFF without a pair) in the OpenAI log's \
                 lines, read as U+FFFD (the lines are kept)",
                Kind::Counter,
            ),
            snap.health.lone_surrogates,
        )?;
    }
    single(
        out,
        family(
            "litehit_headless_lines_dropped",
            "--headless report lines dropped because standard output was not read (its reader \
             stalled)",
            Kind::Counter,
        ),
        snap.headless_lines_dropped,
    )?;
    per_instance(
        out,
        family(
            "litehit_ttl_expired_blocks",
            "Blocks dropped because their TTL expired, per instance",
            Kind::Counter,
        ),
        &lanes,
        &instances,
        |lane| lane.ttl_expired_blocks,
    )?;
    per_instance(
        out,
        family(
            "litehit_observed_hit_tokens",
            "The serving engine's own cached prompt tokens, as its request log said them \
             (cached_tokens), per instance: the observed hits beside LiteHit's",
            Kind::Counter,
        ),
        &lanes,
        &instances,
        |lane| lane.observed.hit_tokens,
    )?;
    per_instance(
        out,
        family(
            "litehit_observed_input_tokens",
            "Input tokens of the rows that said the engine's cached tokens, per instance: the \
             denominator of the observed hit rate",
            Kind::Counter,
        ),
        &lanes,
        &instances,
        |lane| lane.observed.input_tokens,
    )?;
    per_instance(
        out,
        family(
            "litehit_clamped_timestamps",
            "Rows earlier than the instance's latest, replayed at its latest (the pool: rows not \
             in global time order); with a TTL, the instance's hit figures are approximate while \
             this is above 0",
            Kind::Counter,
        ),
        &lanes,
        &instances,
        |lane| lane.clamped_timestamps,
    )?;
    per_instance(
        out,
        family(
            "litehit_unique_blocks",
            "Distinct blocks resident at unlimited capacity (expired excluded), per instance",
            Kind::Gauge,
        ),
        &lanes,
        &instances,
        |lane| lane.unique_blocks,
    )?;

    let capacity_for_fraction = family(
        "litehit_capacity_for_fraction_bytes",
        "Smallest per-instance cache size whose cumulative hits reach this fraction of the \
         unlimited-capacity hits (for the shared pool lane, its total size); under \
         --memory-horizon these are lower bounds and carry the label lower_bound=true",
        Kind::Gauge,
    );
    out.family(capacity_for_fraction, &mut |samples| {
        for (lane, instance) in lanes.iter().zip(&instances) {
            for point in &lane.capacity_for_fraction {
                let fraction = fraction_label(point.percent);
                let labels = [
                    ("instance", instance.as_ref()),
                    ("fraction", fraction.as_str()),
                    LOWER_BOUND_LABEL,
                ];
                // The third label only on a lower bound.
                let count = if lane.knees_are_lower_bounds() { 3 } else { 2 };
                samples.sample(
                    &labels[..count],
                    point.capacity_blocks.saturating_mul(lane.block_bytes),
                )?;
            }
        }
        Ok(())
    })?;

    let memory = &snap.memory;
    let memory_bytes = family(
        "litehit_memory_bytes",
        "Heap bytes held by the monitor, by part",
        Kind::Gauge,
    );
    out.family(memory_bytes, &mut |samples| {
        for (part, bytes) in [
            ("core", memory.core_bytes),
            ("accumulator", memory.accumulator_bytes),
            ("facts_buffer", memory.facts_buffer_bytes),
            ("monitor", memory.monitor_bytes),
        ] {
            samples.sample(&[("part", part)], bytes)?;
        }
        Ok(())
    })?;
    single(
        out,
        family(
            "litehit_facts_spill_bytes",
            "Facts rows spilled to disk for a later facts snapshot",
            Kind::Gauge,
        ),
        memory.facts_on_disk_bytes,
    )?;
    single(
        out,
        family(
            "litehit_facts_retention_stopped",
            "1 when a failed spill write stopped keeping facts rows (the numbers go on)",
            Kind::Gauge,
        ),
        u64::from(matches!(
            snap.facts_retention,
            crate::snapshot::FactsRetention::Stopped { .. }
        )),
    )?;
    single(
        out,
        family(
            "litehit_ingest_lag_bytes",
            "Bytes of the followed trace not read yet",
            Kind::Gauge,
        ),
        snap.source.backlog_bytes,
    )?;

    if let (Some(pool_lane), Some(pool)) = (&snap.pool, instances.last()) {
        let shared_by = pool_lane.shared_by.to_string();
        let pool_info = family(
            "litehit_pool",
            "The instance that is the shared pool lane (watch --pool): one cache fed by every \
             instance's rows; its capacity=\"C\" series are the pool at shared_by × C, the \
             total capacity of the instances' caches of C each",
            Kind::Info,
        );
        out.family(pool_info, &mut |samples| {
            samples.sample(
                &[
                    ("instance", pool.as_ref()),
                    ("shared_by", shared_by.as_str()),
                ],
                1,
            )
        })?;
    }

    if let Some(model) = snap
        .model
        .as_ref()
        .filter(|_| snap.assumed_block_bytes.is_none())
    {
        encode_geometry(out, model)?;
    }

    encode_horizon(out, &lanes, &instances)?;

    if let Some(refused) = &snap.http_refused {
        encode_http(out, refused)?;
    }

    if !snap.engine_metrics.is_empty() {
        encode_engine_metrics(out, &snap.engine_metrics)?;
    }

    let engine_info = family(
        "litehit_engine",
        "Whose prefix-cache rule the hits follow (--engine): ideal, or vllm and sglang, where \
         a prompt never hits its last token",
        Kind::Info,
    );
    out.family(engine_info, &mut |samples| {
        samples.sample(&[("engine", snap.engine_rule.name())], 1)
    })?;

    let build_info = family("litehit_build", "The litehit version", Kind::Info);
    out.family(build_info, &mut |samples| {
        samples.sample(&[("version", env!("CARGO_PKG_VERSION"))], 1)
    })
}

/// The families of `--engine-metrics`: per endpoint (its instance, else its URL), the
/// engine's own prefix-cache counters as last scraped, and the failed scrapes.
pub const ENGINE_METRICS_METRICS: [&str; 3] = [
    "litehit_engine_prefix_cache_query_tokens_total",
    "litehit_engine_prefix_cache_hit_tokens_total",
    "litehit_engine_scrape_failures_total",
];

/// A family of `--engine-metrics`: its name, help, and each endpoint's value.
type EngineFamily = (
    &'static str,
    &'static str,
    fn(&crate::snapshot::EngineMetricsView) -> Option<u64>,
);

fn encode_engine_metrics(
    out: &mut dyn Exposition,
    endpoints: &[crate::snapshot::EngineMetricsView],
) -> fmt::Result {
    let families: [EngineFamily; 3] = [
        (
            "litehit_engine_prefix_cache_query_tokens",
            "The serving engine's own prefix-cache query tokens (vllm:prefix_cache_queries_total, \
             sglang:prompt_tokens_total), as last scraped (--engine-metrics)",
            |view| view.query_tokens,
        ),
        (
            "litehit_engine_prefix_cache_hit_tokens",
            "The serving engine's own prefix-cache hit tokens (vllm:prefix_cache_hits_total, \
             sglang:cached_tokens_total), as last scraped (--engine-metrics)",
            |view| view.hit_tokens,
        ),
        (
            "litehit_engine_scrape_failures",
            "Scrapes of the engine's metrics endpoint that failed (--engine-metrics); the \
             monitor goes on",
            |view| Some(view.failed_scrapes),
        ),
    ];
    for (name, help, value) in families {
        let family = Family {
            name,
            help,
            kind: Kind::Counter,
        };
        out.family(family, &mut |samples| {
            for view in endpoints {
                if let Some(value) = value(view) {
                    samples.sample(&[("endpoint", view.label.as_str())], value)?;
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// `litehit_geometry_info`: the model (`--model`) the block bytes were computed for.
fn encode_geometry(
    out: &mut dyn Exposition,
    model: &litehit_core::config::ModelKvSize,
) -> fmt::Result {
    let geometry_info = Family {
        name: "litehit_geometry",
        help: "The model (--model) whose KV cache the capacities hold: its KV bytes per token \
               (full-attention layers only) and the sliding-window or linear-attention layers \
               left out (not modelled)",
        kind: Kind::Info,
    };
    let bytes = model.kv_bytes_per_token.to_string();
    let windowed = model.windowed_layers.to_string();
    out.family(geometry_info, &mut |samples| {
        samples.sample(
            &[
                ("model", model.model.as_str()),
                ("kv_bytes_per_token", bytes.as_str()),
                ("kv_cache_dtype", model.kv_cache_dtype.name()),
                ("windowed_layers_not_modelled", windowed.as_str()),
            ],
            1,
        )
    })
}

/// `litehit_http_refused_total{reason}` and the HTTP servers' gauges (`--listen`,
/// `--metrics-listen`).
fn encode_http(out: &mut dyn Exposition, refused: &crate::snapshot::HttpRefusals) -> fmt::Result {
    let family = |name, help, kind| Family { name, help, kind };
    let refusals = family(
        "litehit_http_refused",
        "Connections and requests the HTTP servers refused, by reason: connection_cap (503, \
         --max-connections), host_or_origin (403), token (401), content_type (415), timeout \
         (--http-idle-timeout), body_size (413, --max-body), body_memory (503, --max-body-total)",
        Kind::Counter,
    );
    out.family(refusals, &mut |samples| {
        for (reason, count) in [
            ("connection_cap", refused.connection_cap),
            ("host_or_origin", refused.host_or_origin),
            ("token", refused.token),
            ("content_type", refused.content_type),
            ("timeout", refused.timeout),
            ("body_size", refused.body_size),
            ("body_memory", refused.body_memory),
        ] {
            samples.sample(&[("reason", reason)], count)?;
        }
        Ok(())
    })?;
    single(
        out,
        family(
            "litehit_http_open_connections",
            "Connections the HTTP servers hold open now (at most --max-connections)",
            Kind::Gauge,
        ),
        refused.open_connections,
    )?;
    single(
        out,
        family(
            "litehit_http_body_bytes",
            "Bytes the bodies being read hold now (at most --max-body-total)",
            Kind::Gauge,
        ),
        refused.body_bytes_held,
    )
}

/// `litehit_memory_horizon_{blocks,bytes}{instance}`, for the lanes with a horizon: the
/// instances, then the shared pool (which has the same horizon, on its own total capacity).
fn encode_horizon(
    out: &mut dyn Exposition,
    lanes: &[&crate::snapshot::LaneSnapshot],
    instances: &[Cow<'_, str>],
) -> fmt::Result {
    for (name, help, bytes) in [
        (
            "litehit_memory_horizon_blocks",
            "The memory horizon (--memory-horizon) in blocks, per instance: keys deeper in the \
             recency order are forgotten, so hits at larger capacities are lower bounds",
            false,
        ),
        (
            "litehit_memory_horizon_bytes",
            "The memory horizon (--memory-horizon) in bytes (blocks × block bytes), per \
             instance: hits at larger capacities are lower bounds",
            true,
        ),
    ] {
        let family = Family {
            name,
            help,
            kind: Kind::Gauge,
        };
        out.family(family, &mut |samples| {
            for (lane, instance) in lanes.iter().zip(instances) {
                let value = if bytes {
                    lane.memory_horizon_bytes()
                } else {
                    lane.memory_horizon_blocks
                };
                if let Some(value) = value {
                    samples.sample(&[("instance", instance.as_ref())], value)?;
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{FractionCapacity, LaneSnapshot, Slot};
    use litehit_core::projector::Capacity;

    /// `--engine-metrics`: each endpoint's counters as last scraped, and its failures (a
    /// counter even before the first success); nothing without endpoints.
    #[test]
    fn engine_metrics_families_follow_the_endpoints() {
        let plain = encode(&LiveSnapshot::default().finished()).unwrap();
        assert!(!plain.contains("litehit_engine_prefix_cache"));
        let snap = LiveSnapshot {
            engine_metrics: vec![
                crate::snapshot::EngineMetricsView {
                    label: "a".to_owned(),
                    scrapes: 2,
                    query_tokens: Some(300),
                    hit_tokens: Some(120),
                    ..Default::default()
                },
                crate::snapshot::EngineMetricsView {
                    label: "down".to_owned(),
                    failed_scrapes: 4,
                    last_error: Some("refused".to_owned()),
                    ..Default::default()
                },
            ],
            ..LiveSnapshot::default()
        }
        .finished();
        let text = encode(&snap).unwrap();
        for line in [
            "litehit_engine_prefix_cache_query_tokens_total{endpoint=\"a\"} 300",
            "litehit_engine_prefix_cache_hit_tokens_total{endpoint=\"a\"} 120",
            "litehit_engine_scrape_failures_total{endpoint=\"a\"} 0",
            "litehit_engine_scrape_failures_total{endpoint=\"down\"} 4",
        ] {
            assert!(text.contains(line), "{line} in:\n{text}");
        }
        assert!(
            !text.contains("litehit_engine_prefix_cache_query_tokens_total{endpoint=\"down\"}")
        );
    }

    #[test]
    fn capacity_labels_say_their_unit() {
        assert_eq!(
            capacity_label(Capacity::Gigabytes(40.0)).as_deref(),
            Some("40GiB")
        );
        assert_eq!(
            capacity_label(Capacity::Gigabytes(0.5)).as_deref(),
            Some("0.5GiB")
        );
        assert_eq!(
            capacity_label(Capacity::Blocks(5000)).as_deref(),
            Some("5000blocks")
        );
        assert_eq!(capacity_label(Capacity::Infinite), None);
        assert_eq!(fraction_label(50), "0.5");
        assert_eq!(fraction_label(99), "0.99");
    }

    #[test]
    fn the_pool_is_one_more_instance_named_by_pool_info() {
        let lane = |id: &str, requests: u64| LaneSnapshot {
            instance_id: id.to_owned(),
            block_size_tokens: 10,
            block_bytes: 1000,
            requests,
            slot_hit_blocks: vec![requests],
            ..LaneSnapshot::default()
        };
        let snap = LiveSnapshot {
            slots: vec![Slot {
                id: 1,
                capacity: Capacity::Gigabytes(40.0),
            }],
            lanes: vec![lane("a", 3), lane("b", 4)],
            ..LiveSnapshot::default()
        }
        .finished();
        assert!(!encode(&snap).unwrap().contains(POOL_INFO_METRIC));
        let snap = LiveSnapshot {
            pool: Some(lane("pool", 7)),
            ..snap
        }
        .finished();
        let text = encode(&snap).unwrap();
        for line in [
            "litehit_requests_total{instance=\"pool\"} 7\n",
            "litehit_hit_tokens_total{instance=\"pool\",capacity=\"40GiB\"} 70\n",
            "litehit_pool_info{instance=\"pool\",shared_by=\"2\"} 1\n",
        ] {
            assert!(text.contains(line), "{line:?} missing from:\n{text}");
        }
    }

    #[test]
    fn a_snapshot_becomes_series_per_instance_and_slot() {
        let snap = LiveSnapshot {
            slots: vec![
                Slot {
                    id: 1,
                    capacity: Capacity::Gigabytes(40.0),
                },
                Slot {
                    id: 2,
                    capacity: Capacity::Blocks(7),
                },
                Slot {
                    id: 3,
                    capacity: Capacity::Infinite,
                },
            ],
            lanes: vec![LaneSnapshot {
                instance_id: "a\"b".to_owned(),
                block_size_tokens: 10,
                block_bytes: 1000,
                requests: 3,
                input_tokens: 90,
                slot_hit_blocks: vec![2, 1, 4],
                infinite_hit_blocks: 4,
                tier_hit_blocks: vec![2, 1],
                capacity_for_fraction: vec![FractionCapacity {
                    percent: 50,
                    capacity_blocks: 3,
                    hit_blocks: 1,
                }],
                ..LaneSnapshot::default()
            }],
            tiers: Some(litehit_core::projector::tiers::TierPlan {
                names: vec!["hbm".to_owned(), "ssd".to_owned()],
                sizes_text: vec!["40GB".to_owned(), "4TB".to_owned()],
                capacities: vec![Capacity::Gigabytes(40.0), Capacity::Gigabytes(4096.0)],
                ..Default::default()
            }),
            ..LiveSnapshot::default()
        }
        .finished();
        let text = encode(&snap).unwrap();
        for line in [
            "litehit_requests_total{instance=\"a\\\"b\"} 3\n",
            "litehit_input_tokens_total{instance=\"a\\\"b\"} 90\n",
            "litehit_hit_tokens_total{instance=\"a\\\"b\",capacity=\"40GiB\"} 20\n",
            "litehit_hit_tokens_total{instance=\"a\\\"b\",capacity=\"7blocks\"} 10\n",
            "litehit_hit_tokens_total{instance=\"a\\\"b\",capacity=\"inf\"} 40\n",
            "litehit_capacity_for_fraction_bytes{instance=\"a\\\"b\",fraction=\"0.5\"} 3000\n",
            "litehit_tier_hit_tokens_total{instance=\"a\\\"b\",tier=\"hbm\"} 20\n",
            "litehit_tier_hit_tokens_total{instance=\"a\\\"b\",tier=\"ssd\"} 10\n",
            "litehit_bad_lines_total 0\n",
        ] {
            assert!(text.contains(line), "{line:?} missing from:\n{text}");
        }
        // The unlimited slot is the `inf` series, not a second one.
        assert_eq!(text.matches("capacity=\"inf\"").count(), 1, "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        // Without a horizon, its gauges have no series (the next test has them).
        for name in METRIC_NAMES
            .into_iter()
            .filter(|name| !name.starts_with("litehit_memory_horizon"))
        {
            assert!(
                text.lines().any(|line| line.starts_with(name)),
                "{name} missing"
            );
        }
    }

    #[test]
    fn under_a_horizon_the_series_above_it_say_they_are_lower_bounds() {
        let capacities = [Capacity::Blocks(3), Capacity::Blocks(7), Capacity::Infinite];
        let snap = LiveSnapshot {
            slots: capacities
                .iter()
                .zip(1..)
                .map(|(&capacity, id)| Slot { id, capacity })
                .collect(),
            lanes: vec![
                LaneSnapshot {
                    instance_id: "h".to_owned(),
                    block_size_tokens: 10,
                    block_bytes: 1000,
                    slot_hit_blocks: vec![1, 2, 2],
                    infinite_hit_blocks: 2,
                    memory_horizon_blocks: Some(5),
                    ..LaneSnapshot::default()
                },
                LaneSnapshot {
                    instance_id: "exact".to_owned(),
                    block_size_tokens: 10,
                    block_bytes: 1000,
                    slot_hit_blocks: vec![1, 2, 3],
                    infinite_hit_blocks: 3,
                    ..LaneSnapshot::default()
                },
            ],
            memory_horizon: Some(Capacity::Blocks(5)),
            ..LiveSnapshot::default()
        }
        .finished();
        let text = encode(&snap).unwrap();
        for line in [
            "litehit_hit_tokens_total{instance=\"h\",capacity=\"3blocks\"} 10\n",
            "litehit_hit_tokens_total{instance=\"h\",capacity=\"7blocks\",lower_bound=\"true\"} 20\n",
            "litehit_hit_tokens_total{instance=\"h\",capacity=\"inf\",lower_bound=\"true\"} 20\n",
            "litehit_hit_tokens_total{instance=\"exact\",capacity=\"inf\"} 30\n",
            "litehit_memory_horizon_blocks{instance=\"h\"} 5\n",
            "litehit_memory_horizon_bytes{instance=\"h\"} 5000\n",
        ] {
            assert!(text.contains(line), "{line:?} missing from:\n{text}");
        }
        assert!(
            !text.contains("horizon_blocks{instance=\"exact\"}"),
            "{text}"
        );
        assert!(
            text.contains("are lower bounds and carry the label"),
            "{text}"
        );
    }

    /// Every surface at once: two instances (one with a hostile id), a pool, GB, block and
    /// unlimited slots, tiers, a horizon, knees.
    fn everything() -> LiveSnapshot {
        let lane = |id: &str, requests: u64| LaneSnapshot {
            instance_id: id.to_owned(),
            block_size_tokens: 10,
            block_bytes: 1000,
            requests,
            input_tokens: 30 * requests,
            slot_hit_blocks: vec![requests, requests + 1, requests + 2],
            infinite_hit_blocks: requests + 3,
            tier_hit_blocks: vec![1, requests],
            tier_lower_bounds: vec![false, true],
            memory_horizon_blocks: Some(5),
            capacity_for_fraction: vec![FractionCapacity {
                percent: 95,
                capacity_blocks: requests,
                hit_blocks: 1,
            }],
            ..LaneSnapshot::default()
        };
        LiveSnapshot {
            slots: [
                Capacity::Gigabytes(0.5),
                Capacity::Blocks(7),
                Capacity::Infinite,
            ]
            .into_iter()
            .zip(1..)
            .map(|(capacity, id)| Slot { id, capacity })
            .collect(),
            lanes: vec![lane(HOSTILE, 3), lane("plain", 4)],
            pool: Some(lane("pool", 7)),
            memory_horizon: Some(Capacity::Blocks(5)),
            tiers: Some(litehit_core::projector::tiers::TierPlan {
                names: vec!["hbm".to_owned(), "s\"sd".to_owned()],
                sizes_text: vec!["40GB".to_owned(), "4TB".to_owned()],
                capacities: vec![Capacity::Gigabytes(40.0), Capacity::Gigabytes(4096.0)],
                ..Default::default()
            }),
            ..LiveSnapshot::default()
        }
        .finished()
    }

    /// An instance id with every character the formats escape, and some they do not.
    const HOSTILE: &str = "a\"b\\c\nd é🚀 {x=\"1\"} # EOF";
    const HOSTILE_ESCAPED: &str = "a\\\"b\\\\c\\nd é🚀 {x=\\\"1\\\"} # EOF";

    fn sample_lines(text: &str) -> Vec<&str> {
        text.lines().filter(|line| !line.starts_with('#')).collect()
    }

    #[test]
    fn both_formats_carry_the_same_samples() {
        let snap = everything();
        let openmetrics = encode_as(&snap, Format::OpenMetrics).unwrap();
        let text = encode_as(&snap, Format::Text).unwrap();
        assert_eq!(sample_lines(&openmetrics), sample_lines(&text));
        assert_eq!(encode(&snap).unwrap(), openmetrics);
        // Every family is there, the pool's and the horizon's included.
        for name in METRIC_NAMES.into_iter().chain([POOL_INFO_METRIC]) {
            assert!(
                sample_lines(&text)
                    .iter()
                    .any(|line| line.starts_with(name)),
                "{name} missing from:\n{text}"
            );
        }
        let instance = format!("instance=\"{HOSTILE_ESCAPED}\"");
        for line in [
            format!("litehit_requests_total{{{instance}}} 3"),
            format!(
                "litehit_hit_tokens_total{{{instance},capacity=\"0.5GiB\",lower_bound=\"true\"}} 30"
            ),
            format!(
                "litehit_hit_tokens_total{{{instance},capacity=\"7blocks\",lower_bound=\"true\"}} 40"
            ),
            format!(
                "litehit_tier_hit_tokens_total{{{instance},tier=\"s\\\"sd\",lower_bound=\"true\"}} 30"
            ),
            format!("litehit_memory_horizon_bytes{{{instance}}} 5000"),
            "litehit_pool_info{instance=\"pool\",shared_by=\"2\"} 1".to_owned(),
            format!(
                "litehit_build_info{{version=\"{}\"}} 1",
                env!("CARGO_PKG_VERSION")
            ),
            "litehit_bad_lines_total 0".to_owned(),
        ] {
            assert!(
                sample_lines(&text).contains(&line.as_str()),
                "{line:?} missing from:\n{text}"
            );
        }
    }

    #[test]
    fn the_text_format_names_families_by_their_samples() {
        let text = encode_as(&everything(), Format::Text).unwrap();
        assert!(
            !text.contains("# EOF\n") && !text.contains("# UNIT"),
            "{text}"
        );
        for line in [
            "# HELP litehit_requests_total Requests (get/lookup rows) read, per instance\n",
            "# TYPE litehit_requests_total counter\n",
            "# TYPE litehit_bad_lines_total counter\n",
            "# TYPE litehit_unique_blocks gauge\n",
            "# TYPE litehit_pool_info gauge\n",
            "# TYPE litehit_build_info gauge\n",
            // 0.0.4 escapes only `\` and newline in help text.
            "its capacity=\"C\" series",
        ] {
            assert!(text.contains(line), "{line:?} missing from:\n{text}");
        }
        // Each family's samples follow its HELP and TYPE, under the same name.
        let (mut help, mut family) = ("", "");
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                help = rest.split_once(' ').unwrap().0;
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                assert!(matches!(kind, "counter" | "gauge"), "{line}");
                assert_eq!(kind == "counter", name.ends_with("_total"), "{line}");
                assert_eq!(name, help, "{line}");
                family = name;
            } else {
                let name = line.split(['{', ' ']).next().unwrap();
                assert_eq!(name, family, "{line}");
            }
        }
    }

    #[test]
    fn openmetrics_keeps_base_names_info_and_eof() {
        let text = encode_as(&everything(), Format::OpenMetrics).unwrap();
        for line in [
            "# TYPE litehit_requests counter\n",
            "# TYPE litehit_pool info\n",
            "# TYPE litehit_build info\n",
            // OpenMetrics escapes `"` in help text too.
            "its capacity=\\\"C\\\" series",
        ] {
            assert!(text.contains(line), "{line:?} missing from:\n{text}");
        }
        assert!(text.ends_with("\n# EOF\n"), "{text}");
    }

    /// Issue #26: lone surrogates of an OpenAI log were counted offline only; live they are
    /// the snapshot's, exported in both formats with an OpenAI input, and absent otherwise.
    #[test]
    fn lone_surrogates_are_exported_with_an_openai_input_only() {
        let mut snap = everything();
        snap.health.lone_surrogates = 3;
        for format in [Format::Text, Format::OpenMetrics] {
            let text = encode_as(&snap, format).unwrap();
            assert!(!text.contains(LONE_SURROGATES_METRIC), "{text}");
        }
        snap.source.converted_from = Some("openai");
        for format in [Format::Text, Format::OpenMetrics] {
            let text = encode_as(&snap, format).unwrap();
            let line = format!("{LONE_SURROGATES_METRIC} 3");
            assert!(sample_lines(&text).contains(&line.as_str()), "{text}");
        }
    }
}
