//! A second new user's review of `query` and `mrc`: a facts file given twice (under another
//! name) is refused, not summed after a note; `--window` lines a span clips are labelled
//! with their accounted part; `--pool NAME` of an ordinary lane counts the other instances
//! without the real pool; the `mrc` plot draws the pool in a colour no instance has. Expected
//! values are computed here from the generated requests and the facts text, not by the code
//! under test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::cli_bin::{
    FACTS, failed, generate, ok, read_facts, replay_to, run_in, standard_trace, write_file,
};
use litehit_core::workload::{SyntheticRequest, WorkloadConfig};
use serde_json::Value;

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A generated trace of `instances` (one request a second on average, so that minutes
/// make windows) replayed into `dir/out` with `flags`: its requests and the facts file.
fn replayed(
    dir: &Path,
    instances: &[&str],
    requests: usize,
    flags: &[&str],
) -> (Vec<SyntheticRequest>, PathBuf) {
    let requests = generate(
        WorkloadConfig {
            seed: 47,
            instance_ids: instances.iter().map(|&id| id.to_owned()).collect(),
            live_conversations: 40,
            mean_interarrival_ns: 1_000_000_000,
            ..WorkloadConfig::default()
        },
        requests,
    );
    let name = format!("trace-{}.jsonl", flags.join("_"));
    let trace = write_file(dir, &name, &standard_trace(&requests));
    let out = dir.join(format!("out-{}", flags.join("_")));
    let mut all = vec!["--trace-block-size", "16", "--quiet"];
    all.extend(flags);
    ok(replay_to(&trace, &out, &all));
    (requests, out.join(FACTS))
}

/// The facts file's header and its row lines, as text.
fn facts_lines(facts: &Path) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(facts).unwrap();
    let mut lines = text.lines().map(str::to_owned);
    let header = lines.next().unwrap();
    (header, lines.collect())
}

/// Writes `header` and `rows` as a facts file `dir/name`.
fn write_facts(dir: &Path, name: &str, header: &str, rows: &[String]) -> PathBuf {
    let mut text = format!("{header}\n");
    for row in rows {
        text.push_str(row);
        text.push('\n');
    }
    write_file(dir, name, &text)
}

/// The overall summary line of a query's output (a summary without `instance_id` or `pool`).
fn overall(stdout: &str) -> Value {
    stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| {
            line["summary"] == true
                && line.get("instance_id").is_none()
                && line.get("pool").is_none()
        })
        .unwrap_or_else(|| panic!("no overall line in {stdout}"))
}

#[test]
fn a_facts_file_given_twice_under_another_name_is_an_error_not_a_double_count() {
    let dir = tempfile::tempdir().unwrap();
    let (requests, facts) = replayed(dir.path(), &["a", "b"], 400, &[]);
    let copy = dir.path().join("copy.csv");
    std::fs::copy(&facts, &copy).unwrap();
    // The lane named is the first one the facts hold.
    let first_lane = read_facts(&facts)[0].instance_id.clone();
    let rows_of_first = requests
        .iter()
        .filter(|r| r.instance_id == first_lane)
        .count();
    let expected = format!(
        "the same rows of instance {first_lane} are in {} and {}: one facts file was given \
         twice ({rows_of_first} rows each; its requests would be counted twice)",
        facts.display(),
        copy.display()
    );
    let out = dir.path().join("q.jsonl");
    let (f, c, o) = (path(&facts), path(&copy), path(&out));
    for args in [
        vec!["query", f, o, "10", "--shard", c],
        vec!["query", f, o, "10", "--shard", c, "--summary-only"],
        // The first pass (trace seconds), and the windows.
        vec!["query", f, o, "10", "--shard", c, "--from", "1s"],
        vec!["query", f, o, "10", "--shard", c, "--window", "10m"],
        vec![
            "query", f, o, "--shard", c, "--window", "10m", "--tiers", "1GB,inf",
        ],
        vec![
            "query", f, "-", "10", "--shard", c, "--window", "10m", "--csv",
        ],
        vec!["mrc", f, c],
        vec!["mrc", f, c, "--from", "1s"],
    ] {
        let run = run_in(None, &args);
        let message = failed(&run);
        assert!(message.ends_with(&expected), "{args:?}: {message}");
        assert!(!out.exists(), "{args:?}: nothing published");
        if args.contains(&"--window") || args[0] == "mrc" {
            assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
        }
    }
    // The same file to stdout: the error still ends the run with exit 1 (the rows already
    // streamed are the file's once; the doubled summaries are never written).
    let run = run_in(None, ["query", f, "-", "10", "--shard", c]);
    assert!(failed(&run).ends_with(&expected));
    assert!(!run.stdout.contains("\"summary\":true"), "{}", run.stdout);
    // Alone, the file's own numbers: every request once.
    let alone = ok(run_in(None, ["query", f, "-", "10", "--summary-only"]));
    assert_eq!(overall(&alone.stdout)["requests"], requests.len());
}

#[test]
fn a_file_split_by_rows_or_sharing_part_of_a_lane_keeps_the_note() {
    let dir = tempfile::tempdir().unwrap();
    let (requests, facts) = replayed(dir.path(), &["a", "b"], 400, &[]);
    let (header, rows) = facts_lines(&facts);
    assert_eq!(rows.len(), requests.len());
    // Split by rows: each lane's rows in two files, together every row once.
    let half = rows.len() / 2;
    let first = write_facts(dir.path(), "first.csv", &header, &rows[..half]);
    let second = write_facts(dir.path(), "second.csv", &header, &rows[half..]);
    let split = ok(run_in(
        None,
        [
            "query",
            path(&first),
            "-",
            "10",
            "--summary-only",
            "--shard",
            path(&second),
        ],
    ));
    let whole = ok(run_in(
        None,
        ["query", path(&facts), "-", "10", "--summary-only"],
    ));
    assert_eq!(overall(&split.stdout), overall(&whole.stdout));
    assert_eq!(overall(&split.stdout)["requests"], requests.len());
    assert!(
        split.stderr.contains(&format!(
            "has rows in 2 files ({}, {})",
            first.display(),
            second.display()
        )),
        "{}",
        split.stderr
    );
    // Two files sharing some rows of each lane but not all: a note, not an error (the
    // rows they share are counted twice, as the note warns).
    let overlap = write_facts(dir.path(), "overlap.csv", &header, &rows[half - 10..]);
    for args in [
        vec![
            "query",
            path(&first),
            "-",
            "10",
            "--summary-only",
            "--shard",
            path(&overlap),
        ],
        vec![
            "query",
            path(&first),
            "-",
            "10",
            "--window",
            "10m",
            "--shard",
            path(&overlap),
        ],
        vec!["mrc", path(&first), path(&overlap)],
    ] {
        let run = ok(run_in(None, &args));
        assert!(
            run.stderr.contains("litehit: note: instance ")
                && run
                    .stderr
                    .contains("check these files are not from overlapping runs"),
            "{args:?}: {}",
            run.stderr
        );
    }
}

/// `(window_start_s, window_end_s, window_start_ns, requests)` of each line of
/// `query --window` JSONL output with one capacity (or one tier).
fn window_labels(stdout: &str) -> Vec<(String, String, i64, u64)> {
    stdout
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap();
            (
                value["window_start_s"].to_string(),
                value["window_end_s"].to_string(),
                value["window_start_ns"].as_i64().unwrap(),
                value["requests"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_window_the_span_clips_is_labelled_with_its_accounted_part() {
    let dir = tempfile::tempdir().unwrap();
    let (requests, facts) = replayed(dir.path(), &["a", "b"], 4000, &[]);
    let first_ns = requests.iter().map(|r| r.timestamp_ns).min().unwrap();
    let last_ns = requests.iter().map(|r| r.timestamp_ns).max().unwrap();
    assert!(
        last_ns - first_ns > 3_000_000_000_000,
        "the trace runs past 50 minutes"
    );
    let count = |from_s: i64, to_s: i64| {
        requests
            .iter()
            .filter(|r| {
                let t = r.timestamp_ns - first_ns;
                t >= from_s * 1_000_000_000 && t < to_s * 1_000_000_000
            })
            .count() as u64
    };
    // Windows of 20 minutes from the first request; 25 to 50 minutes accounted: window 1
    // [1200, 2400) keeps [1500, 2400), window 2 [2400, 3600) keeps [2400, 3000).
    let expected = vec![
        (
            "1500".to_owned(),
            "2400".to_owned(),
            first_ns + 1_500_000_000_000,
            count(1500, 2400),
        ),
        (
            "2400".to_owned(),
            "3000".to_owned(),
            first_ns + 2_400_000_000_000,
            count(2400, 3000),
        ),
    ];
    let span = ["--window", "20m", "--from", "25m", "--to", "50m"];
    let mut args = vec!["query", path(&facts), "-", "10"];
    args.extend(span);
    assert_eq!(window_labels(&ok(run_in(None, &args)).stdout), expected);
    // With tiers: the same labels.
    let mut tiered = vec!["query", path(&facts), "-", "--tiers", "inf"];
    tiered.extend(span);
    assert_eq!(window_labels(&ok(run_in(None, &tiered)).stdout), expected);
    // The CSV's first three columns are the same numbers.
    args.push("--csv");
    let csv = ok(run_in(None, &args)).stdout;
    let cells: Vec<Vec<String>> = csv
        .lines()
        .skip(1)
        .map(|line| line.split(',').take(3).map(str::to_owned).collect())
        .collect();
    let expected_cells: Vec<Vec<String>> = expected
        .iter()
        .map(|(start, end, start_ns, _)| vec![start.clone(), end.clone(), start_ns.to_string()])
        .collect();
    assert_eq!(cells, expected_cells);
    // A warm-up ending at 30 minutes clips window 1's start; without --to, the last window
    // keeps its full end (every row of it is accounted).
    let run = ok(run_in(
        None,
        [
            "query",
            path(&facts),
            "-",
            "10",
            "--window",
            "20m",
            "--exclude-warmup",
            "30m",
        ],
    ));
    let labels = window_labels(&run.stdout);
    assert_eq!(
        labels[0],
        (
            "1800".to_owned(),
            "2400".to_owned(),
            first_ns + 1_800_000_000_000,
            count(1800, 2400)
        )
    );
    let last_window = (last_ns - first_ns) / 1_200_000_000_000;
    let last = labels.last().unwrap();
    assert_eq!(last.0, (last_window * 1200).to_string());
    assert_eq!(last.1, ((last_window + 1) * 1200).to_string());
}

/// The four instances and the pool of a replay with `--pool`.
const FLEET: [&str; 4] = ["inst-0", "inst-1", "inst-2", "inst-3"];

#[test]
fn pool_naming_an_ordinary_lane_counts_the_other_instances_without_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let (requests, facts) = replayed(dir.path(), &FLEET, 300, &["--pool"]);
    let rows_of = |id: &str| requests.iter().filter(|r| r.instance_id == id).count();
    let named = rows_of("inst-3");
    let others = requests.len() - named;
    let expected = format!(
        "--pool inst-3: lane inst-3 is not a shared pool lane: a pool lane holds a copy of every \
         other lane's rows (same trace_id, timestamp_ns, input_token_len and block_size_tokens), \
         and inst-3 has {named} rows, the other 3 instances {others} together (the pool lane \
         here is pool, holding all {})",
        requests.len()
    );
    for args in [
        vec!["query", path(&facts), "-", "1", "--pool", "inst-3"],
        vec![
            "query",
            path(&facts),
            "-",
            "1",
            "--pool",
            "inst-3",
            "--window",
            "10m",
        ],
        vec!["mrc", path(&facts), "--pool", "inst-3"],
    ] {
        let run = run_in(None, &args);
        let message = failed(&run);
        assert!(message.ends_with(&expected), "{args:?}: {message}");
    }
}

/// A colour of the SVG (`#rrggbb`) in CIELAB (D65), to measure how far apart two look.
fn lab(hex: &str) -> [f64; 3] {
    let channel = |i: usize| {
        let c = f64::from(u8::from_str_radix(&hex[1 + 2 * i..3 + 2 * i], 16).unwrap()) / 255.0;
        if c > 0.04045 {
            ((c + 0.055) / 1.055).powf(2.4)
        } else {
            c / 12.92
        }
    };
    let (r, g, b) = (channel(0), channel(1), channel(2));
    let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
    let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
    let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
    let f = |t: f64| {
        if t > 0.008_856 {
            t.cbrt()
        } else {
            7.787 * t + 16.0 / 116.0
        }
    };
    let (fx, fy, fz) = (f(x), f(y), f(z));
    [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
}

/// CIE76 ΔE: about 2 is just noticeable; the pool's old red was 22 from an instance's.
fn delta_e(a: &str, b: &str) -> f64 {
    let (a, b) = (lab(a), lab(b));
    a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// The stroke colours of every line (`<polyline`) of an SVG.
fn line_colours(svg: &str) -> BTreeSet<String> {
    svg.lines()
        .filter(|line| line.starts_with("<polyline"))
        .map(|line| {
            let at = line.find(" stroke=\"#").unwrap() + " stroke=\"".len();
            line[at..at + 7].to_owned()
        })
        .collect()
}

#[test]
fn the_mrc_plot_draws_the_pool_in_a_colour_no_instance_has_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (_, pooled) = replayed(dir.path(), &FLEET, 300, &["--pool"]);
    let (_, alone) = replayed(dir.path(), &FLEET, 300, &[]);
    let svg_of = |facts: &Path, name: &str| {
        let svg = dir.path().join(name);
        ok(run_in(None, ["mrc", path(facts), "--svg", path(&svg)]));
        std::fs::read_to_string(svg).unwrap()
    };
    let (pooled_svg, alone_svg) = (svg_of(&pooled, "pooled.svg"), svg_of(&alone, "alone.svg"));
    // The same instances' lines (and the total's) in both; the pool's are the rest.
    let others = line_colours(&alone_svg);
    assert_eq!(
        others.len(),
        FLEET.len() + 1,
        "four instances and the total"
    );
    let pooled_colours = line_colours(&pooled_svg);
    let pool: Vec<&String> = pooled_colours.difference(&others).collect();
    assert_eq!(
        pool.len(),
        1,
        "one colour for the pool's lines: {pooled_colours:?}"
    );
    let pool = pool[0];
    let by_distance: BTreeMap<String, String> = others
        .iter()
        .map(|other| (format!("{:06.1}", delta_e(pool, other)), other.clone()))
        .collect();
    let (nearest, colour) = by_distance.iter().next().unwrap();
    assert!(
        nearest.parse::<f64>().unwrap() >= 40.0,
        "the pool's {pool} is ΔE {nearest} from {colour}, an instance's (or the total's)"
    );
    assert!(
        pooled_svg.contains(">violet: the shared pool (no instance is drawn in violet)<"),
        "the legend says it"
    );
    assert!(!alone_svg.contains("violet"));
}
