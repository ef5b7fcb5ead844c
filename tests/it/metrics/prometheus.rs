//! `/metrics` as Prometheus' own tools read it, from a real `litehit watch` with every surface
//! the metrics expose (several instances with hostile ids, GB and block slots, tiers, the pool,
//! a memory horizon): `promtool check metrics` (Prometheus' linter, which reads only the
//! classic text format 0.0.4) passes the default answer, and a real Prometheus server, which
//! asks for OpenMetrics, scrapes it with the scrape config of `docs/OPERATIONS.md` and stores
//! the monitor's own numbers.
//!
//! Needs `prometheus` and `promtool` (Debian's `prometheus` package; `.ci/run` installs it).
//! Without them, and without `CI`, these tests are ignored (`build.rs`); with `CI` set they run.
//! Servers bind 127.0.0.1; every wait is bounded.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::cli_bin::{generate, standard_trace, write_file};
use crate::common::http::{get, get_accepting};
use crate::metrics::live::{Monitor, Samples, parse_samples};
use litehit_core::workload::WorkloadConfig;
use serde_json::Value;

/// Longest wait for Prometheus to scrape and answer: a hang fails the test, with its log.
const PROMETHEUS_WAIT: Duration = Duration::from_secs(120);
const REQUESTS: usize = 2000;
/// The instance ids, as decoded from the trace: characters the formats escape (`"`, `\`) and
/// ones a careless parser trips on. A line break is escaped too, but the monitor refuses an id
/// holding one (a bad line: a facts row cannot hold it), so the unit tests cover that escape.
const HOSTILE_IDS: [&str; 4] = [
    "quote\"d",
    "back\\slash\\",
    "tab\tcomma, equals=\"x\"",
    "ünïcödé 🚀 {x=\"1\"} # EOF",
];
/// `watch` flags beyond the slots `Monitor` sets (0.5 and 2 GB, 300 blocks): tiers, the pool,
/// a memory horizon, a model with sliding-window layers (`litehit_geometry_info`).
const SURFACES: [&str; 9] = [
    "--tiers",
    "hbm=10b,dram=200b",
    "--pool",
    "--memory-horizon",
    "250b",
    "--model",
    "openai/gpt-oss-20b",
    "--engine",
    "sglang",
];
/// Prometheus 2.42's scrape `Accept` header, for asking as it asks.
const OPENMETRICS_FIRST: &str = "application/openmetrics-text;version=1.0.0,\
     application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// A trace over [`HOSTILE_IDS`] (JSON-escaped in the lines; the workload writes ids verbatim).
fn hostile_trace(dir: &Path) -> std::path::PathBuf {
    let config = WorkloadConfig {
        seed: 26,
        block_size_tokens: 256,
        instance_ids: HOSTILE_IDS
            .iter()
            .map(|id| {
                let quoted = serde_json::to_string(id).unwrap();
                quoted[1..quoted.len() - 1].to_owned()
            })
            .collect(),
        ..WorkloadConfig::default()
    };
    write_file(
        dir,
        "trace.jsonl",
        &standard_trace(&generate(config, REQUESTS)),
    )
}

/// A monitor with every surface on, once it has read the whole trace.
fn monitor_with_every_surface(dir: &Path) -> Monitor {
    let trace = hostile_trace(dir);
    let monitor = Monitor::start(&trace, &SURFACES);
    monitor.wait_for_requests(REQUESTS as u64);
    monitor
}

/// Runs `promtool check metrics` on `exposition`; its exit code and what it printed.
fn promtool_check(exposition: &str) -> (Option<i32>, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs (apt-get install prometheus)");
    let mut stdin = child.stdin.take().unwrap();
    let text = exposition.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), printed)
}

#[test]
#[cfg_attr(
    litehit_prometheus_absent,
    ignore = "needs promtool and prometheus (apt-get install prometheus; then touch build.rs)"
)]
fn promtool_passes_the_default_answer_of_a_monitor_with_every_surface() {
    let dir = tempfile::tempdir().unwrap();
    let monitor = monitor_with_every_surface(dir.path());
    let (status, head, body) = get(monitor.port, "/metrics");
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    // The answer has every family, and the hostile ids read back as they were written.
    let samples = parse_samples(&body);
    for name in litehit_live::metrics::METRIC_NAMES.into_iter().chain([
        litehit_live::metrics::POOL_INFO_METRIC,
        litehit_live::metrics::GEOMETRY_INFO_METRIC,
    ]) {
        assert!(
            samples.iter().any(|(n, _, _)| n == name),
            "{name} missing from:\n{body}"
        );
    }
    // gpt-oss-20b in bf16: 12 full-attention layers × 2 × 8 KV heads × 64 × 2 bytes.
    assert!(
        body.contains(
            "litehit_geometry_info{model=\"openai/gpt-oss-20b\",kv_bytes_per_token=\"24576\",\
             kv_cache_dtype=\"bf16\",windowed_layers_not_modelled=\"12\"} 1"
        ),
        "{body}"
    );
    for id in HOSTILE_IDS {
        assert!(
            samples
                .iter()
                .any(|(_, labels, _)| labels.get("instance").map(String::as_str) == Some(id)),
            "{id:?} missing from:\n{body}"
        );
    }
    assert!(
        body.contains("litehit_engine_info{engine=\"sglang\"} 1"),
        "{body}"
    );
    assert!(body.contains("capacity=\"300blocks\",lower_bound=\"true\""));
    assert!(body.contains("tier=\"dram\""));

    let (code, printed) = promtool_check(&body);
    assert_eq!(
        code,
        Some(0),
        "promtool check metrics:\n{printed}\non:\n{body}"
    );
    assert_eq!(printed.trim(), "", "promtool found problems:\n{body}");

    // The checker is strict: it rejects the OpenMetrics answer (which is not its format),
    // what every scrape got before negotiation.
    let (_, _, openmetrics) = get_accepting(monitor.port, "/metrics", OPENMETRICS_FIRST);
    let (code, printed) = promtool_check(&openmetrics);
    assert_ne!(code, Some(0), "promtool accepted OpenMetrics:\n{printed}");
}

/// A port free on 127.0.0.1 a moment ago (Prometheus takes no port 0 it would report).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The scrape config of `docs/OPERATIONS.md`, pointed at `port` and scraping every second.
fn documented_scrape_config(port: u16) -> String {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/OPERATIONS.md"))
            .unwrap();
    let start = doc
        .find("```yaml\n# prometheus.yml\n")
        .expect("docs/OPERATIONS.md has a prometheus.yml block")
        + "```yaml\n".len();
    let end = start + doc[start..].find("```").expect("the block's end");
    let config = &doc[start..end];
    assert!(config.contains("honor_labels: true"), "{config}");
    config
        .replace("127.0.0.1:9464", &format!("127.0.0.1:{port}"))
        .replace("scrape_interval: 15s", "scrape_interval: 1s")
}

/// A Prometheus server in a temporary directory, killed on drop.
struct Prometheus {
    child: Child,
    port: u16,
    log: std::path::PathBuf,
}

impl Prometheus {
    /// Prometheus serving on a free port. The port is picked free a moment before Prometheus
    /// binds it, so another process may take it first: Prometheus then exits saying so, and it
    /// is started again on another port (at most `ATTEMPTS` times).
    fn start(dir: &Path, monitor_port: u16) -> Self {
        const ATTEMPTS: usize = 5;
        let config = write_file(
            dir,
            "prometheus.yml",
            &documented_scrape_config(monitor_port),
        );
        for attempt in 1..=ATTEMPTS {
            let log = dir.join(format!("prometheus.{attempt}.log"));
            let port = free_port();
            let child = Command::new("prometheus")
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.join(format!("data.{attempt}")).display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .expect("prometheus runs (apt-get install prometheus)");
            let mut prometheus = Self { child, port, log };
            if prometheus.serves() {
                return prometheus;
            }
            let log = prometheus.log();
            assert!(
                log.contains("address already in use"),
                "Prometheus stopped before serving:\n{log}"
            );
        }
        panic!("Prometheus found its port taken {ATTEMPTS} times");
    }

    /// Waits until this Prometheus answers its API (`true`) or exits (`false`).
    fn serves(&mut self) -> bool {
        let deadline = Instant::now() + PROMETHEUS_WAIT;
        loop {
            if self.child.try_wait().unwrap().is_some() {
                return false;
            }
            if self.api("/api/v1/status/buildinfo").is_some() {
                return true;
            }
            assert!(
                Instant::now() < deadline,
                "Prometheus neither served nor stopped:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `GET path` on the HTTP API; its JSON `data`, or `None` while it is not up.
    fn api(&self, path: &str) -> Option<Value> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        // HTTP/1.0: the body is plain (not chunked) and ends with the connection.
        write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply).ok()?;
        let (_, body) = reply.split_once("\r\n\r\n")?;
        let answer: Value = serde_json::from_str(body).ok()?;
        (answer["status"] == "success").then(|| answer["data"].clone())
    }

    /// The instant vector of `promql`: each series' labels (without `__name__`) and value.
    fn query(&self, promql: &str) -> Option<Vec<(BTreeMap<String, String>, String)>> {
        let data = self.api(&format!("/api/v1/query?query={}", percent_encoded(promql)))?;
        let series = data["result"].as_array()?;
        Some(
            series
                .iter()
                .map(|one| {
                    let labels = one["metric"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .filter(|(key, _)| *key != "__name__")
                        .map(|(key, value)| (key.clone(), value.as_str().unwrap().to_owned()))
                        .collect();
                    (labels, one["value"][1].as_str().unwrap().to_owned())
                })
                .collect(),
        )
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `text` percent-encoded for a query string.
fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
                char::from(byte).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

/// The monitor's own series of `name`, with the target's labels as Prometheus adds them:
/// `job="litehit"`, and `instance` the target's address unless the series has its own (which
/// `honor_labels` keeps).
fn expected_series(
    samples: &Samples,
    name: &str,
    monitor_port: u16,
) -> Vec<(BTreeMap<String, String>, String)> {
    let mut series: Vec<_> = samples
        .iter()
        .filter(|(n, _, _)| n == name)
        .map(|(_, labels, value)| {
            let mut labels = labels.clone();
            labels.insert("job".to_owned(), "litehit".to_owned());
            labels
                .entry("instance".to_owned())
                .or_insert_with(|| format!("127.0.0.1:{monitor_port}"));
            (labels, value.to_string())
        })
        .collect();
    series.sort();
    series
}

#[test]
#[cfg_attr(
    litehit_prometheus_absent,
    ignore = "needs promtool and prometheus (apt-get install prometheus; then touch build.rs)"
)]
fn prometheus_scrapes_openmetrics_and_stores_the_monitor_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let monitor = monitor_with_every_surface(dir.path());
    // The monitor's own numbers, as Prometheus asks for them; the trace is read to its end,
    // so the counters no longer move.
    let (status, head, body) = get_accepting(monitor.port, "/metrics", OPENMETRICS_FIRST);
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(body.ends_with("# EOF\n"), "{body}");
    let samples = parse_samples(&body);
    let names = [
        "litehit_requests_total",
        "litehit_input_tokens_total",
        "litehit_hit_tokens_total",
        "litehit_tier_hit_tokens_total",
        "litehit_capacity_for_fraction_bytes",
        "litehit_memory_horizon_bytes",
        "litehit_pool_info",
        "litehit_build_info",
    ];
    let expected: Vec<_> = names
        .iter()
        .map(|name| expected_series(&samples, name, monitor.port))
        .collect();
    assert!(expected.iter().all(|series| !series.is_empty()), "{body}");

    let prometheus = Prometheus::start(dir.path(), monitor.port);
    let deadline = Instant::now() + PROMETHEUS_WAIT;
    let mut last = String::new();
    loop {
        let up = prometheus.query("up{job=\"litehit\"}");
        let stored: Option<Vec<_>> = names
            .iter()
            .map(|name| {
                prometheus.query(name).map(|mut series| {
                    series.sort();
                    series
                })
            })
            .collect();
        let up_is_one = up
            .as_ref()
            .is_some_and(|up| up.len() == 1 && up[0].1 == "1");
        if up_is_one && stored.as_ref() == Some(&expected) {
            break;
        }
        last = format!("up: {up:?}\nstored: {stored:#?}");
        assert!(
            Instant::now() < deadline,
            "Prometheus never stored the monitor's numbers\nexpected: {expected:#?}\n{last}\n\
             prometheus log:\n{}",
            prometheus.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // It read OpenMetrics: the families' metadata has OpenMetrics' base names and `info` type
    // (the text format would have given `litehit_build_info`, a gauge).
    let metadata = prometheus
        .api("/api/v1/metadata")
        .unwrap_or_else(|| panic!("no metadata; {last}\n{}", prometheus.log()));
    assert_eq!(metadata["litehit_build"][0]["type"], "info", "{metadata:#}");
    assert_eq!(metadata["litehit_pool"][0]["type"], "info", "{metadata:#}");
    assert_eq!(
        metadata["litehit_requests"][0]["type"], "counter",
        "{metadata:#}"
    );
    assert!(metadata.get("litehit_build_info").is_none(), "{metadata:#}");
}

/// `watch --policy lru,opt`: `litehit_opt_hit_tokens_total{instance,capacity}` is there, a
/// separate counter (so sums over `litehit_hit_tokens_total` stay LRU's), equal to the
/// headless JSON's OPT figures, and promtool passes the answer.
#[test]
#[cfg_attr(
    litehit_prometheus_absent,
    ignore = "needs promtool and prometheus (apt-get install prometheus; then touch build.rs)"
)]
fn the_opt_counter_is_separate_equals_headless_and_passes_promtool() {
    let dir = tempfile::tempdir().unwrap();
    let trace = hostile_trace(dir.path());
    let monitor = Monitor::start(&trace, &["--policy", "lru,opt", "--pool"]);
    let report = monitor.wait_for_requests(REQUESTS as u64);
    let (status, head, body) = get(monitor.port, "/metrics");
    assert_eq!(status, 200, "{head}\n{body}");
    let samples = parse_samples(&body);
    let name = litehit_live::metrics::OPT_HIT_TOKENS_METRIC;
    assert!(!litehit_live::metrics::METRIC_NAMES.contains(&name));
    // The slots as the headless JSON orders them, by their labels (0.5 GiB, 2 GiB, 300 blocks).
    let labels: Vec<String> = report["slots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|slot| {
            match (
                slot["capacity_gb"].as_f64(),
                slot["capacity_blocks"].as_u64(),
            ) {
                (Some(gb), None) => format!("{gb}GiB"),
                (None, Some(blocks)) => format!("{blocks}blocks"),
                _ => panic!("{slot}"),
            }
        })
        .collect();
    let mut series = 0;
    for instance in report["instances"].as_array().unwrap() {
        let id = instance["instance_id"].as_str().unwrap();
        let opt = crate::common::cli_bin::u64s(&instance["opt_hit_tokens"]);
        let lru = crate::common::cli_bin::u64s(&instance["hit_tokens"]);
        for ((label, &opt), &lru) in labels.iter().zip(&opt).zip(&lru) {
            let value = |metric: &str| {
                crate::metrics::live::sample(
                    &samples,
                    metric,
                    &[("instance", id), ("capacity", label)],
                )
            };
            assert_eq!(value(name), opt, "{id} at {label}");
            assert_eq!(value("litehit_hit_tokens_total"), lru, "{id} at {label}");
            series += 1;
        }
    }
    assert!(series >= 9, "{body}");
    let (code, printed) = promtool_check(&body);
    assert_eq!(
        code,
        Some(0),
        "promtool check metrics:\n{printed}\non:\n{body}"
    );
    assert_eq!(printed.trim(), "", "promtool found problems:\n{body}");
}
