//! `watch --metrics-listen`: `GET /metrics` over real HTTP while a monitor follows a generated
//! trace. The counters equal the headless JSON and a `litehit replay` + `litehit query` of the
//! same lines at the same capacities (exact integers), the capacity for each fraction equals
//! `litehit mrc --json`'s knees, and the Grafana dashboard only queries exported metrics.
//!
//! Servers bind 127.0.0.1 with port 0 (the monitor prints the port); every wait is bounded.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::cli_bin::{
    Announced, generate, litehit, parse_query_output, replay_to, run_in, spawn_announcing_port,
    standard_trace, write_file,
};
use crate::common::http::{get, get_accepting};
use litehit_core::workload::WorkloadConfig;
use serde_json::Value;

/// Longest wait for anything: a hang fails the test.
const WAIT: Duration = Duration::from_secs(120);
const REQUESTS: usize = 3000;
/// The GB slots and block slots of the run, as typed and as labelled.
const CAPACITY_GB: &str = "0.5,2";
const CAPACITY_BLOCKS: u64 = 300;
const LABELS: [&str; 3] = ["0.5GiB", "2GiB", "300blocks"];

/// One sample line: name, labels, value.
pub(crate) type Samples = Vec<(String, BTreeMap<String, String>, u64)>;

/// Parses an OpenMetrics exposition, which ends with `# EOF`.
fn parse_exposition(text: &str) -> Samples {
    assert!(text.ends_with("# EOF\n"), "the exposition ends with # EOF");
    parse_samples(text)
}

/// Parses the sample lines of an exposition in either format (comments skipped; values must
/// be integers; label values unescaped).
pub(crate) fn parse_samples(text: &str) -> Samples {
    let mut samples = Vec::new();
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').expect("`series value`");
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name, rest.strip_suffix('}').expect("closing brace")),
            None => (series, ""),
        };
        let mut map = BTreeMap::new();
        let mut rest = labels;
        while !rest.is_empty() {
            let (key, after) = rest.split_once("=\"").expect("key=\"value\"");
            let mut value = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                match chars.next().expect("a closing quote") {
                    (_, '\\') => match chars.next().expect("an escaped character").1 {
                        'n' => value.push('\n'),
                        c => value.push(c),
                    },
                    (at, '"') => break at,
                    (_, c) => value.push(c),
                }
            };
            map.insert(key.to_owned(), value);
            rest = after[end + 1..].trim_start_matches(',');
        }
        let value: u64 = value
            .parse()
            .unwrap_or_else(|_| panic!("integer value: {line}"));
        samples.push((name.to_owned(), map, value));
    }
    samples
}

pub(crate) fn sample(samples: &Samples, name: &str, labels: &[(&str, &str)]) -> u64 {
    let found: Vec<u64> = samples
        .iter()
        .filter(|(n, map, _)| {
            n == name
                && map.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| map.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|(_, _, value)| *value)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one series {name}{labels:?}, found {found:?}"
    );
    found[0]
}

/// A headless monitor following `trace` with `--metrics-listen 0`.
pub(crate) struct Monitor {
    child: Child,
    pub(crate) port: u16,
    stdout: mpsc::Receiver<String>,
}

impl Monitor {
    /// Slots `0.5,2` GB and 300 blocks, and `extra` flags.
    pub(crate) fn start(trace: &Path, extra: &[&str]) -> Self {
        let mut command = litehit();
        command
            .arg("watch")
            .arg(trace)
            .args(["--headless", "--interval", "0.1", "--metrics-listen", "0"])
            .args([
                "--capacity-gb",
                &format!("{CAPACITY_GB},{CAPACITY_BLOCKS}b"),
            ])
            .args(extra);
        let Announced {
            child,
            port,
            stdout,
        } = spawn_announcing_port(
            &mut command,
            "litehit: metrics on http://",
            "/metrics",
            WAIT,
        );
        Self {
            child,
            port,
            stdout,
        }
    }

    /// Waits for a headless line that has read `requests` requests and is following.
    pub(crate) fn wait_for_requests(&self, requests: u64) -> Value {
        let deadline = Instant::now() + WAIT;
        let mut last = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.stdout.recv_timeout(left).unwrap_or_else(|error| {
                panic!("no line with {requests} requests ({error}); last: {last}")
            });
            let report: Value = serde_json::from_str(&line).unwrap();
            if report["total"]["requests"] == requests && report["state"] == "following" {
                return report;
            }
            last = line;
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two instances, enough reuse that every slot and knee is non-trivial.
fn trace_text() -> String {
    let config = WorkloadConfig {
        seed: 18,
        block_size_tokens: 256,
        instance_ids: vec!["prefill-0".to_owned(), "prefill-1".to_owned()],
        ..WorkloadConfig::default()
    };
    standard_trace(&generate(config, REQUESTS))
}

/// Offline: `replay` the same lines, `query` the same capacities, `mrc --json` the knees.
fn offline(dir: &Path, trace: &Path) -> (crate::common::cli_bin::QueryOutput, Value) {
    let out = dir.join("out");
    let replay = replay_to(trace, &out, &["--quiet"]);
    assert_eq!(replay.code, Some(0), "{}", replay.stderr);
    let facts = out.join("litehit_facts.csv");
    let blocks = CAPACITY_BLOCKS.to_string();
    let mut query_args = vec!["query", facts.to_str().unwrap(), "-"];
    query_args.extend(CAPACITY_GB.split(','));
    query_args.extend(["-1", "--capacity-blocks", &blocks, "--summary-only"]);
    let query = run_in(None, &query_args);
    assert_eq!(query.code, Some(0), "{}", query.stderr);
    let query = parse_query_output(&query.stdout);
    let mrc = run_in(None, ["mrc", facts.to_str().unwrap(), "--json"]);
    assert_eq!(mrc.code, Some(0), "{}", mrc.stderr);
    let mrc: Value = serde_json::from_str(&mrc.stdout).unwrap();

    (query, mrc)
}

/// `GET /metrics` as `curl` and as Prometheus ask: the classic text format by default,
/// OpenMetrics when asked for, with the same samples (returned).
fn scrape_both_formats(port: u16) -> Samples {
    // The classic text format by default, OpenMetrics when asked for: the same samples.
    let (status, head, body) = get(port, "/metrics");
    assert_eq!(status, 200, "{head}\n{body}");
    let head = head.to_ascii_lowercase();
    assert!(
        head.contains("content-type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    assert!(head.contains("vary: accept"), "{head}");
    let samples = parse_samples(&body);
    let (status, head, body) = get_accepting(
        port,
        "/metrics",
        "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
    );
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text; version=1.0.0"),
        "{head}"
    );
    // The open connections count the scrapes' own, which the server closes on its own time:
    // the first scrape's may still be open while the second is answered.
    let settled = |samples: Samples| -> Samples {
        samples
            .into_iter()
            .filter(|(name, _, _)| name != "litehit_http_open_connections")
            .collect()
    };
    assert_eq!(settled(parse_exposition(&body)), settled(samples.clone()));
    samples
}

#[test]
fn scraped_counters_equal_headless_replay_query_and_mrc() {
    let dir = tempfile::tempdir().unwrap();
    let text = trace_text();
    let trace = write_file(dir.path(), "trace.jsonl", &text);
    let monitor = Monitor::start(&trace, &[]);
    let report = monitor.wait_for_requests(REQUESTS as u64);
    let samples = scrape_both_formats(monitor.port);

    let (query, mrc) = offline(dir.path(), &trace);
    assert_eq!(query.instance_summaries.len(), 2);
    let mut hits_seen = 0;
    for summary in &query.instance_summaries {
        let instance = summary["instance_id"].as_str().unwrap();
        let labels = [("instance", instance)];
        let headless = report["instances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["instance_id"] == instance)
            .expect("the instance in the headless JSON");
        let requests = sample(&samples, "litehit_requests_total", &labels);
        assert_eq!(requests, headless["requests"].as_u64().unwrap());
        assert_eq!(requests, summary["requests"].as_u64().unwrap(), "{summary}");
        let input = sample(&samples, "litehit_input_tokens_total", &labels);
        assert_eq!(input, headless["input_tokens"].as_u64().unwrap());
        assert_eq!(input, summary["total_input_tokens"].as_u64().unwrap());
        // query's slots: the GB values, then ∞ (-1), then the block slot.
        let query_hits = crate::common::cli_bin::u64s(&summary["total_hit_tokens"]);
        let expected = [
            (LABELS[0], query_hits[0]),
            (LABELS[1], query_hits[1]),
            ("inf", query_hits[2]),
            (LABELS[2], query_hits[3]),
        ];
        for (label, hits) in expected {
            let scraped = sample(
                &samples,
                "litehit_hit_tokens_total",
                &[("instance", instance), ("capacity", label)],
            );
            assert_eq!(scraped, hits, "{instance} at {label}");
            hits_seen += hits;
        }
        let headless_hits: Vec<u64> = crate::common::cli_bin::u64s(&headless["hit_tokens"]);
        for (index, label) in LABELS.iter().enumerate() {
            let scraped = sample(
                &samples,
                "litehit_hit_tokens_total",
                &[("instance", instance), ("capacity", label)],
            );
            assert_eq!(scraped, headless_hits[index], "{instance} at {label}");
        }
        assert_eq!(
            sample(&samples, "litehit_unique_blocks", &[("instance", instance)]),
            headless["unique_blocks"].as_u64().unwrap()
        );
        let mrc_instance = mrc["instances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["instance_id"] == instance)
            .expect("the instance in mrc --json");
        for knee in mrc_instance["knees"].as_array().unwrap() {
            let percent = knee["percent"].as_u64().unwrap();
            let fraction = format!("{}", percent as f64 / 100.0);
            let scraped = sample(
                &samples,
                "litehit_capacity_for_fraction_bytes",
                &[("instance", instance), ("fraction", &fraction)],
            );
            assert_eq!(
                scraped,
                knee["capacity_bytes"].as_u64().unwrap(),
                "{instance} {percent}%"
            );
        }
    }
    assert!(hits_seen > 0, "the trace has hits to compare");
    assert_eq!(sample(&samples, "litehit_bad_lines_total", &[]), 0);
    assert_eq!(sample(&samples, "litehit_ingest_lag_bytes", &[]), 0);
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        sample(&samples, "litehit_build_info", &[("version", version)]),
        1
    );
    assert_eq!(
        sample(&samples, "litehit_engine_info", &[("engine", "ideal")]),
        1
    );
    assert_eq!(report["engine"], "ideal");

    a_bad_line_appended_is_counted(&monitor, &trace);
}

/// `--engine vllm` is named in `/metrics` (both formats) and the headless JSON, and the
/// `engine` slot (`--gpu-blocks`) is the series `capacity="engine"`, equal to the headless
/// line's first slot result.
#[test]
fn the_engine_rule_and_slot_are_named_in_metrics_and_headless_lines() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let monitor = Monitor::start(&trace, &["--engine", "vllm", "--gpu-blocks", "4000"]);
    let report = monitor.wait_for_requests(REQUESTS as u64);
    assert_eq!(report["engine"], "vllm");
    let samples = scrape_both_formats(monitor.port);
    assert_eq!(
        sample(&samples, "litehit_engine_info", &[("engine", "vllm")]),
        1
    );
    let mut compared = 0;
    for instance in report["instances"].as_array().unwrap() {
        let id = instance["instance_id"].as_str().unwrap();
        let result = &instance["slot_results"][0];
        assert_eq!(result["label"], "engine");
        assert_eq!(
            sample(
                &samples,
                "litehit_hit_tokens_total",
                &[("instance", id), ("capacity", "engine")]
            ),
            result["hit_tokens"].as_u64().unwrap()
        );
        compared += 1;
    }
    assert!(compared > 0);
}

/// A bad line appended is counted in a later scrape; the metrics-only server has no trace
/// endpoint.
fn a_bad_line_appended_is_counted(monitor: &Monitor, trace: &Path) {
    std::fs::OpenOptions::new()
        .append(true)
        .open(trace)
        .unwrap()
        .write_all(b"{not json\n")
        .unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, _, body) = get(monitor.port, "/metrics");
        if sample(&parse_samples(&body), "litehit_bad_lines_total", &[]) == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the bad line was never counted");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, _, _) = get(monitor.port, "/v1/trace");
    assert_eq!(status, 404, "a metrics-only server has no trace endpoint");
}

#[test]
fn a_shared_server_serves_trace_posts_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let monitor = Monitor::start(&trace, &["--listen", "0"]);
    let report = monitor.wait_for_requests(REQUESTS as u64);
    let (status, _, body) = get(monitor.port, "/metrics");
    assert_eq!(status, 200, "{body}");
    let samples = parse_samples(&body);
    let total: u64 = samples
        .iter()
        .filter(|(name, _, _)| name == "litehit_requests_total")
        .map(|(_, _, value)| value)
        .sum();
    assert_eq!(total, report["total"]["requests"].as_u64().unwrap());
    // The trace endpoint is on the same port: a GET there is told to POST.
    let (status, _, body) = get(monitor.port, "/v1/trace");
    assert_eq!(status, 405, "{body}");
}

/// Every `litehit_*` name in the dashboard's queries.
fn dashboard_metric_names(dashboard: &Value) -> Vec<String> {
    fn walk(value: &Value, names: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(expr)) = map.get("expr") {
                    let mut rest = expr.as_str();
                    while let Some(start) = rest.find("litehit_") {
                        let tail = &rest[start..];
                        let end = tail
                            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                            .unwrap_or(tail.len());
                        names.push(tail[..end].to_owned());
                        rest = &tail[end..];
                    }
                }
                map.values().for_each(|v| walk(v, names));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, names)),
            _ => {}
        }
    }
    let mut names = Vec::new();
    walk(dashboard, &mut names);
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_grafana_dashboard_queries_only_exported_metrics() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/grafana/litehit.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let names = dashboard_metric_names(&dashboard);
    for expected in [
        "litehit_hit_tokens_total",
        "litehit_input_tokens_total",
        "litehit_capacity_for_fraction_bytes",
        "litehit_unique_blocks",
        "litehit_memory_bytes",
        "litehit_ingest_lag_bytes",
        "litehit_bad_lines_total",
        // `watch --policy lru,opt`: OPT's panel and the policy gap's.
        litehit_live::metrics::OPT_HIT_TOKENS_METRIC,
    ] {
        assert!(names.iter().any(|n| n == expected), "{expected} not shown");
    }
    for name in &names {
        // OPT's counter is exported only with OPT (so not in `METRIC_NAMES`).
        assert!(
            litehit_live::metrics::METRIC_NAMES.contains(&name.as_str())
                || name == litehit_live::metrics::OPT_HIT_TOKENS_METRIC,
            "the dashboard queries {name}, which is not exported"
        );
    }
    // The policy gap is OPT's counter less LRU's, per capacity.
    let gap = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|panel| {
            panel["title"]
                .as_str()
                .is_some_and(|t| t.starts_with("Policy gap"))
        })
        .expect("a policy-gap panel");
    let expr = gap["targets"][0]["expr"].as_str().unwrap();
    assert!(
        expr.contains("litehit_opt_hit_tokens_total")
            && expr.contains(") - sum by (instance, capacity) (rate(litehit_hit_tokens_total"),
        "{expr}"
    );
}

/// `watch --headless --exit-at-eof` of `trace` with `extra` flags; every JSON line.
fn headless_lines(trace: &Path, extra: &[&str]) -> Vec<Value> {
    let slots = format!("{CAPACITY_GB},{CAPACITY_BLOCKS}b");
    let args = [&["--capacity-gb", slots.as_str()][..], extra].concat();
    crate::common::headless::headless_to_end(trace, &args).0
}

#[test]
fn headless_lines_carry_schema_time_format_and_slot_objects() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let lines = headless_lines(&trace, &[]);
    let last = lines.last().expect("a line");
    for line in &lines {
        assert_eq!(line["schema"], litehit_live::headless::SCHEMA);
        let time = line["time"].as_str().unwrap();
        // `YYYY-MM-DDTHH:MM:SS.mmmZ`, and not in the past of this test's start.
        assert_eq!(time.len(), 24, "{time}");
        assert!(time.ends_with('Z') && &time[10..11] == "T", "{time}");
        assert!(time[..4].parse::<u32>().unwrap() >= 2024, "{time}");
    }
    assert_eq!(last["format"], "standard");
    assert_eq!(last["total"]["requests"], REQUESTS as u64);
    // Nothing can read the facts: none are kept, nothing is spilled.
    assert_eq!(last["facts_retention"], "off");
    assert_eq!(last["facts_spill_bytes"], 0);
    assert_eq!(last["facts_rows"], REQUESTS as u64);
    let labels = LABELS;
    for instance in last["instances"].as_array().unwrap() {
        let block_bytes = instance["block_bytes"].as_u64().unwrap();
        assert!(instance["block_size_tokens"].as_u64().unwrap() > 0);
        let slots = instance["slot_results"].as_array().unwrap();
        assert_eq!(slots.len(), labels.len());
        for (index, (slot, label)) in slots.iter().zip(&labels).enumerate() {
            assert_eq!(slot["label"], *label);
            assert_eq!(slot["hit_tokens"], instance["hit_tokens"][index]);
            assert_eq!(slot["hit_rate"], instance["hit_rates"][index]);
            let blocks = slot["capacity_blocks"].as_u64().unwrap();
            assert_eq!(slot["capacity_bytes"], blocks * block_bytes);
        }
        assert_eq!(
            slots[0]["capacity_bytes"],
            (1_u64 << 29) / block_bytes * block_bytes
        );
        assert_eq!(slots[2]["capacity_blocks"], CAPACITY_BLOCKS);
    }
}

#[test]
fn the_last_headless_line_reports_the_facts_write() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let facts = dir.path().join("facts.csv");
    let lines = headless_lines(&trace, &["--facts-out", facts.to_str().unwrap()]);
    let last = lines.last().expect("a line");
    let written = last["facts_write"].as_str().unwrap_or_default();
    assert!(
        written.starts_with("wrote ") && written.ends_with("facts.csv"),
        "{last}"
    );
    assert!(facts.exists());
    assert_eq!(last["facts_retention"], "on");
    assert!(last["facts_spill_bytes"].as_u64().unwrap() > 0, "{last}");
}

/// `litehit watch TRACE` (TUI flags, resolved as the command resolves them) on an ingest
/// thread in this process, with its slots' ids.
fn in_process_monitor(trace: &Path, dir: &Path) -> litehit_live::LiveHandle {
    let cli = <litehit::cli::Cli as clap::Parser>::parse_from([
        "litehit",
        "watch",
        trace.to_str().unwrap(),
        "--capacity-gb",
        "2",
    ]);
    let litehit::cli::Command::Watch(args) = cli.command else {
        panic!("watch expected")
    };
    let mut config = litehit::commands::watch::ingest_config(&args).unwrap();
    config.frame_period = Duration::from_millis(10);
    config.spill_dir = Some(dir.to_path_buf());
    litehit_live::ingest::spawn(config).unwrap()
}

/// Scrapes `exporter` until `ready` holds for the parsed samples (bounded).
fn scrape_until(
    exporter: &litehit_live::metrics::Exporter,
    what: &str,
    ready: impl Fn(&Samples) -> bool,
) -> Samples {
    let deadline = Instant::now() + WAIT;
    loop {
        let samples = parse_exposition(&exporter.scrape().unwrap());
        if ready(&samples) {
            return samples;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn capacities(samples: &Samples, instance: &str) -> Vec<String> {
    samples
        .iter()
        .filter(|(name, labels, _)| {
            name == "litehit_hit_tokens_total" && labels["instance"] == instance
        })
        .map(|(_, labels, _)| labels["capacity"].clone())
        .collect()
}

#[test]
fn slots_added_and_removed_appear_and_disappear_in_metrics() {
    use litehit_core::projector::Capacity;
    use litehit_live::Command;

    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let live = in_process_monitor(&trace, dir.path());
    let exporter = litehit_live::metrics::Exporter::new(live.snapshots());
    let requests = |samples: &Samples| -> u64 {
        samples
            .iter()
            .filter(|(name, _, _)| name == "litehit_requests_total")
            .map(|(_, _, value)| value)
            .sum()
    };
    let samples = scrape_until(&exporter, "every request", |s| {
        requests(s) == REQUESTS as u64
    });
    assert_eq!(capacities(&samples, "prefill-0"), ["2GiB", "inf"]);

    live.send(Command::AddSlot(Capacity::Blocks(CAPACITY_BLOCKS)));
    let samples = scrape_until(&exporter, "the added slot", |s| {
        capacities(s, "prefill-0").len() == 3
    });
    assert_eq!(
        capacities(&samples, "prefill-0"),
        ["2GiB", "300blocks", "inf"]
    );
    // A slot added late is exact since the start of the trace: as `query` at 300 blocks.
    let (query, _) = offline(dir.path(), &trace);
    for summary in &query.instance_summaries {
        let instance = summary["instance_id"].as_str().unwrap();
        assert_eq!(
            sample(
                &samples,
                "litehit_hit_tokens_total",
                &[("instance", instance), ("capacity", "300blocks")]
            ),
            crate::common::cli_bin::u64s(&summary["total_hit_tokens"])[3],
            "{instance}"
        );
    }

    let first = live.latest().slots[0].id;
    live.send(Command::RemoveSlot(first));
    let samples = scrape_until(&exporter, "the removed slot gone", |s| {
        capacities(s, "prefill-0").len() == 2
    });
    assert_eq!(capacities(&samples, "prefill-0"), ["300blocks", "inf"]);
    drop(live);
}

/// Issue 31 §3 live: rows that say the engine's `cached_tokens` give each instance's
/// `observed` in the headless JSON and `litehit_observed_{hit,input}_tokens_total`, the sums
/// of what the lines said (computed here), the pool's and the rows without it left out.
#[test]
fn the_engines_observed_hits_are_counted_per_instance() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    let mut expected: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for (index, line) in trace_text().lines().enumerate() {
        let row: Value = serde_json::from_str(line).unwrap();
        let mut row = row.as_object().unwrap().clone();
        // Every third row says nothing; the others a made-up count (the engine's own).
        if index % 3 != 0 && row["type"] != "write" {
            let input = row["input_len"].as_u64().unwrap();
            let cached = (input / 3 + index as u64) % (input + 1);
            row.insert("cached_tokens".into(), cached.into());
            let id = row["instance_id"].as_str().unwrap().to_owned();
            let sums = expected.entry(id).or_default();
            *sums = (sums.0 + 1, sums.1 + input, sums.2 + cached);
        }
        text.push_str(&Value::Object(row).to_string());
        text.push('\n');
    }
    let trace = write_file(dir.path(), "trace.jsonl", &text);
    let monitor = Monitor::start(&trace, &["--pool"]);
    let report = monitor.wait_for_requests(REQUESTS as u64);
    let samples = scrape_both_formats(monitor.port);
    assert_eq!(expected.len(), 2);
    let mut total = (0, 0, 0);
    for (id, (requests, input, hits)) in &expected {
        let observed = &crate::common::headless::instance_entry(&report, id)["observed"];
        assert_eq!(observed["requests"], *requests, "{id}");
        assert_eq!(observed["input_tokens"], *input, "{id}");
        assert_eq!(observed["hit_tokens"], *hits, "{id}");
        let labels = [("instance", id.as_str())];
        assert_eq!(
            sample(&samples, "litehit_observed_hit_tokens_total", &labels),
            *hits
        );
        assert_eq!(
            sample(&samples, "litehit_observed_input_tokens_total", &labels),
            *input
        );
        total = (total.0 + requests, total.1 + input, total.2 + hits);
    }
    let observed = &report["total"]["observed"];
    assert_eq!(
        (
            observed["requests"].as_u64(),
            observed["input_tokens"].as_u64()
        ),
        (Some(total.0), Some(total.1))
    );
    assert_eq!(observed["hit_tokens"], total.2);
}
