//! A new user's review of `query` and `mrc`: empty and inverted spans fail naming the span
//! and the trace's own, one capacity grammar (TB in the CAPACITY_GB positional as in
//! `--tiers`), `--tiers` without capacities, `--window` seconds exact and CSV columns named
//! and ordered as the JSONL's fields, and the `mrc` plot of pooled facts (the y axis covers
//! the pool's curve, each knee labelled once). Expected values are computed here from the
//! generated requests, not by the code under test.

use std::path::{Path, PathBuf};

use crate::common::cli_bin::{
    FACTS, failed, generate, ok, replay_to, run_in, standard_trace, write_file,
};
use crate::query::windows::replayed_trace;
use litehit_core::workload::{SyntheticRequest, WorkloadConfig};
use serde_json::Value;

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The trace's first and last request times.
fn trace_span(requests: &[SyntheticRequest]) -> (i64, i64) {
    let first = requests.iter().map(|r| r.timestamp_ns).min().unwrap();
    let last = requests.iter().map(|r| r.timestamp_ns).max().unwrap();
    (first, last)
}

/// `ns` seconds as an exact decimal without trailing zeros, written out here on its own.
fn exact_seconds(ns: i64) -> String {
    let whole = ns / 1_000_000_000;
    let fraction = ns % 1_000_000_000;
    if fraction == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{fraction:09}")
            .trim_end_matches('0')
            .to_owned()
    }
}

/// The keys of one flat JSON object line, in the order written.
fn keys_in_order(line: &str) -> Vec<String> {
    let value: Value = serde_json::from_str(line).unwrap();
    let object = value.as_object().unwrap();
    let mut keys: Vec<(usize, String)> = object
        .keys()
        .map(|key| (line.find(&format!("\"{key}\":")).unwrap(), key.clone()))
        .collect();
    keys.sort();
    keys.into_iter().map(|(_, key)| key).collect()
}

/// The message of a failed run, from `no facts row` on (the part `query` and `mrc` share).
fn empty_span_part(message: &str) -> &str {
    let at = message
        .find("no facts row in the accounted span")
        .unwrap_or_else(|| panic!("an empty span says so: {message}"));
    &message[at..]
}

#[test]
fn an_inverted_span_is_refused_naming_both_values() {
    let dir = tempfile::tempdir().unwrap();
    let (requests, facts) = replayed_trace(dir.path(), 31);
    let (first, last) = trace_span(&requests);
    let out = dir.path().join("q.jsonl");
    for (from, to) in [
        ("30m", "10m"),
        ("10m", "10m"),
        (&*format!("{last}ns"), &*format!("{first}ns")),
    ] {
        let run = run_in(
            None,
            [
                "query",
                path(&facts),
                path(&out),
                "10",
                "--from",
                from,
                "--to",
                to,
            ],
        );
        let message = failed(&run);
        assert!(
            message.contains(&format!("--from {from}")) && message.contains(&format!("--to {to}")),
            "{message}"
        );
        assert!(!out.exists(), "nothing published");
        let mrc = run_in(None, ["mrc", path(&facts), "--from", from, "--to", to]);
        assert!(failed(&mrc).contains(&format!("--from {from}")));
    }
    // A warm-up that ends after --to: the resolved span is empty, with both ends named.
    let quarter_s = exact_seconds((last - first) / 4);
    let run = run_in(
        None,
        [
            "query",
            path(&facts),
            "-",
            "10",
            "--exclude-warmup",
            "50%",
            "--to",
            &format!("{quarter_s}s"),
        ],
    );
    let message = failed(&run);
    assert!(message.contains("the accounted span is empty"), "{message}");
    assert!(
        message.contains(&format!("trace time {quarter_s} s")),
        "{message}"
    );
    assert!(run.stdout.is_empty());
}

#[test]
fn a_span_without_rows_fails_alike_in_query_and_mrc_naming_the_traces_own_span() {
    let dir = tempfile::tempdir().unwrap();
    let (requests, facts) = replayed_trace(dir.path(), 32);
    let (first, last) = trace_span(&requests);
    let past_end_s = exact_seconds(last - first + 1_000_000_000);
    let trace_words = format!(
        "the trace's rows run from trace time 0 s (timestamp_ns {first}) to trace time {} s \
         (timestamp_ns {last})",
        exact_seconds(last - first)
    );
    let past_end = format!("{past_end_s}s");
    for span in [
        &["--from", &past_end][..],
        &["--exclude-warmup", &past_end],
        &["--from", &format!("{}ns", last + 1)],
        &["--to", &format!("{first}ns")],
    ] {
        let mut query = vec!["query", path(&facts), "-", "10"];
        query.extend(span);
        let run = run_in(None, &query);
        let query_message = failed(&run).to_owned();
        assert!(run.stdout.is_empty(), "{span:?}: no zeros written");
        assert!(query_message.contains(&trace_words), "{query_message}");
        let mut summary_only = query.clone();
        summary_only.push("--summary-only");
        let run = run_in(None, &summary_only);
        assert_eq!(
            empty_span_part(failed(&run)),
            empty_span_part(&query_message)
        );
        let mut windows = query.clone();
        windows.extend(["--window", "10m"]);
        assert_eq!(
            empty_span_part(failed(&run_in(None, &windows))),
            empty_span_part(&query_message)
        );
        let mut mrc = vec!["mrc", path(&facts)];
        mrc.extend(span);
        let run = run_in(None, &mrc);
        assert_eq!(
            empty_span_part(failed(&run)),
            empty_span_part(&query_message),
            "{span:?}: the same words in query and mrc"
        );
    }
    // The span is named as typed resolves it: trace time and timestamp_ns.
    let run = run_in(None, ["mrc", path(&facts), "--from", &past_end]);
    let message = failed(&run);
    assert!(
        message.contains(&format!(
            "(from trace time {past_end_s} s (timestamp_ns {}) to the end)",
            first + (last - first + 1_000_000_000)
        )),
        "{message}"
    );
}

#[test]
fn a_warmup_of_the_whole_trace_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, facts) = replayed_trace(dir.path(), 33);
    for share in ["100%", "150%"] {
        let query = run_in(
            None,
            ["query", path(&facts), "-", "10", "--exclude-warmup", share],
        );
        assert!(failed(&query).contains("below 100%"), "{query:?}");
        let mrc = run_in(None, ["mrc", path(&facts), "--exclude-warmup", share]);
        assert!(failed(&mrc).contains("below 100%"));
    }
    // Just below keeps its rows (the last timestamp's at least).
    ok(run_in(
        None,
        [
            "query",
            path(&facts),
            "-",
            "10",
            "--exclude-warmup",
            "99.9%",
            "--summary-only",
        ],
    ));
}

fn summary_lines(run: &crate::common::cli_bin::Run) -> Vec<Value> {
    run.stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn the_capacity_positional_takes_tb_as_tiers_do() {
    let dir = tempfile::tempdir().unwrap();
    let (_, facts) = replayed_trace(dir.path(), 34);
    let spelled = ok(run_in(
        None,
        [
            "query",
            path(&facts),
            "-",
            "4TB",
            "0.1TiB",
            "1 tb",
            "--summary-only",
        ],
    ));
    let in_gb = ok(run_in(
        None,
        [
            "query",
            path(&facts),
            "-",
            "4096",
            "102.4",
            "1024",
            "--summary-only",
        ],
    ));
    assert_eq!(spelled.stdout, in_gb.stdout, "TB = 1024 GB, echoed in GB");
    let overall = summary_lines(&spelled).pop().unwrap();
    assert_eq!(
        overall["capacity_gb"],
        serde_json::json!([4096, 102.4, 1024])
    );
    // The same size as a tier and as a capacity serve the same hits.
    let tier = ok(run_in(
        None,
        [
            "query",
            path(&facts),
            "-",
            "0.1TiB",
            "--tiers",
            "0.1TiB",
            "--summary-only",
        ],
    ));
    let overall = summary_lines(&tier).pop().unwrap();
    assert_eq!(
        overall["tier_hit_tokens"][0],
        overall["total_hit_tokens"][0]
    );
    for refused in ["-1TB", "12PB", "0x1tb"] {
        let run = run_in(
            None,
            ["query", path(&facts), "-", "10", refused, "--summary-only"],
        );
        assert_ne!(run.code, Some(0), "{refused}");
    }
}

#[test]
fn tiers_need_no_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let (_, facts) = replayed_trace(dir.path(), 35);
    let tiers_only = ok(run_in(
        None,
        [
            "query",
            path(&facts),
            "-",
            "--tiers",
            "3b,40b",
            "--summary-only",
        ],
    ));
    let with_capacity = ok(run_in(
        None,
        [
            "query",
            path(&facts),
            "-",
            "1",
            "--tiers",
            "3b,40b",
            "--summary-only",
        ],
    ));
    let (a, b) = (summary_lines(&tiers_only), summary_lines(&with_capacity));
    assert_eq!(a.len(), b.len());
    assert!(a.len() >= 3, "per instance and overall");
    for (tiers_only, with_capacity) in a.iter().zip(&b) {
        for key in [
            "capacity_gb",
            "total_hit_blocks",
            "total_hit_tokens",
            "hit_rates",
        ] {
            assert_eq!(
                tiers_only[key],
                serde_json::json!([]),
                "{key}: {tiers_only}"
            );
        }
        for key in [
            "requests",
            "total_input_tokens",
            "tier_names",
            "tier_hit_blocks",
            "tier_hit_tokens",
            "tier_shares",
            "miss_share",
        ] {
            assert_eq!(tiers_only[key], with_capacity[key], "{key}");
        }
    }
    // Row lines too: valid JSON with empty per-capacity arrays.
    let rows = ok(run_in(
        None,
        ["query", path(&facts), "-", "--tiers", "3b,40b"],
    ));
    let lines: Vec<Value> = rows
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let row_lines = lines.iter().filter(|line| line.get("summary").is_none());
    assert_eq!(
        row_lines.clone().count() as u64,
        lines[lines.len() - 1]["requests"].as_u64().unwrap(),
        "one line per row"
    );
    for row in row_lines {
        assert_eq!(row["hit_blocks"], serde_json::json!([]), "{row}");
        assert_eq!(row["hit_rates"], serde_json::json!([]), "{row}");
    }
    // Without --tiers a capacity is still needed.
    let none = run_in(None, ["query", path(&facts), "-", "--summary-only"]);
    assert!(failed(&none).contains("no capacity given"));
}

/// Every CSV row is its JSONL line: header = the JSONL's keys in order (the union over the
/// lines, for pooled windows), each cell the JSON value's text or empty where the line has
/// no such field.
fn assert_csv_is_the_jsonl(jsonl: &str, csv: &str) {
    let mut rows = csv.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let lines: Vec<&str> = jsonl.lines().collect();
    let rows: Vec<Vec<&str>> = rows.map(|row| row.split(',').collect()).collect();
    assert_eq!(rows.len(), lines.len());
    let mut widest = Vec::new();
    for (line, row) in lines.iter().zip(&rows) {
        let keys = keys_in_order(line);
        if keys.len() > widest.len() {
            widest.clone_from(&keys);
        }
        let mut header_keys = header.iter();
        for key in &keys {
            assert!(
                header_keys.any(|h| h == key),
                "{key} in the header, in the JSONL's order: {header:?}"
            );
        }
        let value: Value = serde_json::from_str(line).unwrap();
        assert_eq!(row.len(), header.len());
        for (name, cell) in header.iter().zip(row) {
            match &value.get(*name) {
                Some(Value::String(text)) => assert_eq!(cell, text, "{name}"),
                Some(number) => {
                    assert_eq!(*cell, line_text_of(line, name), "{name}: {number}");
                }
                None => assert!(cell.is_empty(), "{name}: {cell}"),
            }
        }
    }
    // The capacity columns are one per kind, each line filling one of them.
    let named: Vec<&str> = header
        .iter()
        .copied()
        .filter(|h| widest.iter().any(|k| k == h) || h.starts_with("capacity_"))
        .collect();
    assert_eq!(named, header, "no column the JSONL lacks");
}

/// The raw text of a top-level number field in a JSONL line.
fn line_text_of<'a>(line: &'a str, key: &str) -> &'a str {
    let start = line.find(&format!("\"{key}\":")).unwrap() + key.len() + 3;
    let rest = &line[start..];
    let end = rest.find([',', '}']).unwrap();
    &rest[..end]
}

#[test]
fn window_seconds_are_exact_and_the_csv_has_the_jsonl_fields() {
    let dir = tempfile::tempdir().unwrap();
    let (requests, facts) = replayed_trace(dir.path(), 36);
    let (first, _) = trace_span(&requests);
    let query = |extra: &[&str]| {
        let mut args = vec!["query", path(&facts), "-"];
        args.extend(extra);
        ok(run_in(None, &args)).stdout
    };
    let jsonl = query(&["1", "--capacity-blocks", "40", "--window", "1ms"]);
    for line in jsonl.lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        let start_ns = value["window_start_ns"].as_i64().unwrap();
        assert_eq!(
            line_text_of(line, "window_start_s"),
            exact_seconds(start_ns - first)
        );
        assert_eq!(
            line_text_of(line, "window_end_s"),
            exact_seconds(start_ns + 1_000_000 - first),
            "{line}"
        );
    }
    // Far into a trace, 1 ms windows still have distinct, exact ends (six significant
    // digits made 1234.567 and 1234.568 both 1234.57).
    let header =
        "trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,block_bytes,hit_curve";
    let t0 = 1_700_000_000_000_000_000_i64;
    let late = write_file(
        dir.path(),
        "late.csv",
        &format!(
            "{header}\nr1,i,{t0},16,16,1024,\"[]\"\nr2,i,{},16,16,1024,\"[]\"\n",
            t0 + 1_234_567_400_000
        ),
    );
    let late_lines = ok(run_in(
        None,
        ["query", path(&late), "-", "1", "--window", "1ms"],
    ))
    .stdout;
    let last = late_lines.lines().last().unwrap();
    assert_eq!(line_text_of(last, "window_start_s"), "1234.567", "{last}");
    assert_eq!(line_text_of(last, "window_end_s"), "1234.568", "{last}");
    let csv = query(&["1", "--capacity-blocks", "40", "--window", "1ms", "--csv"]);
    assert_eq!(
        csv.lines().next(),
        Some(
            "window_start_s,window_end_s,window_start_ns,capacity_gb,capacity_blocks,requests,\
             total_input_tokens,total_hit_tokens,hit_rate"
        )
    );
    assert_csv_is_the_jsonl(&jsonl, &csv);

    let tiers = ["--tiers", "hbm=3b,ssd=37b", "--window", "250ms"];
    let jsonl = query(&tiers);
    let csv = query(&[&tiers[..], &["--csv"]].concat());
    assert_eq!(
        csv.lines().next(),
        Some(
            "window_start_s,window_end_s,window_start_ns,tier_mode,tier,tier_size,requests,\
             total_input_tokens,tier_hit_tokens,tier_share,miss_share"
        )
    );
    assert_csv_is_the_jsonl(&jsonl, &csv);
}

/// Two instances and the shared pool lane (`replay --pool`): the pool hits what the
/// instances' own caches miss, so its ceiling is above theirs.
fn pooled_facts(dir: &Path) -> PathBuf {
    let requests = generate(
        WorkloadConfig {
            seed: 37,
            instance_ids: vec!["a".into(), "b".into(), "c".into()],
            live_conversations: 40,
            ..WorkloadConfig::default()
        },
        1500,
    );
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, standard_trace(&requests)).unwrap();
    let out = dir.join("pooled");
    ok(replay_to(
        &trace,
        &out,
        &["--trace-block-size", "16", "--pool", "--quiet"],
    ));
    out.join(FACTS)
}

#[test]
fn windows_of_pooled_facts_have_the_pool_columns_in_the_jsonl_order() {
    let dir = tempfile::tempdir().unwrap();
    let facts = pooled_facts(dir.path());
    let query = |extra: &[&str]| {
        let mut args = vec!["query", path(&facts), "-", "1", "--window", "10s"];
        args.extend(extra);
        ok(run_in(None, &args)).stdout
    };
    let jsonl = query(&[]);
    assert!(jsonl.contains("\"pool\":"), "pool lines");
    let csv = query(&["--csv"]);
    assert_eq!(
        csv.lines().next(),
        Some(
            "window_start_s,window_end_s,window_start_ns,pool,instances,capacity_gb,\
             capacity_blocks,pool_capacity_blocks,requests,total_input_tokens,total_hit_tokens,\
             hit_rate"
        )
    );
    assert_csv_is_the_jsonl(&jsonl, &csv);
    // With --tiers: the pool's tier lines, the same rule.
    let tiers = |extra: &[&str]| {
        let mut args = vec![
            "query",
            path(&facts),
            "-",
            "--tiers",
            "3b,37b",
            "--window",
            "10s",
        ];
        args.extend(extra);
        ok(run_in(None, &args)).stdout
    };
    let jsonl = tiers(&[]);
    assert!(jsonl.contains("\"pool\":"), "pool tier lines");
    assert_csv_is_the_jsonl(&jsonl, &tiers(&["--csv"]));
}

/// The `<text>` contents of an SVG.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.lines()
        .filter_map(|line| {
            let start = line.find("<text ")?;
            let open = line[start..].find('>')? + start + 1;
            let close = line.rfind("</text>")?;
            Some(line[open..close].replace("&amp;", "&"))
        })
        .collect()
}

#[test]
fn the_mrc_plot_scales_to_the_pool_and_labels_each_knee_once() {
    let dir = tempfile::tempdir().unwrap();
    let facts = pooled_facts(dir.path());
    let svg = dir.path().join("p.svg");
    let png = dir.path().join("p.png");
    let run = ok(run_in(
        None,
        [
            "mrc",
            path(&facts),
            "--json",
            "--svg",
            path(&svg),
            "--png",
            path(&png),
        ],
    ));
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let pool_ceiling = report["pool"]["own"]["infinite_hit_rate"].as_f64().unwrap() * 100.0;
    let total_ceiling = report["total"]["infinite_hit_rate"].as_f64().unwrap() * 100.0;
    assert!(
        pool_ceiling > total_ceiling,
        "{pool_ceiling} > {total_ceiling}"
    );
    let texts = svg_texts(&std::fs::read_to_string(&svg).unwrap());
    // The y ticks (`40%`) reach the pool's ceiling: its curve is not drawn clipped.
    let top_tick = texts
        .iter()
        .filter_map(|t| t.strip_suffix('%')?.parse::<f64>().ok())
        .fold(0.0, f64::max);
    assert!(
        top_tick >= pool_ceiling,
        "top tick {top_tick}% below the pool's ceiling {pool_ceiling}%"
    );
    // Each knee label once: the total's knees.
    let labels: Vec<&String> = texts.iter().filter(|t| t.contains("% of ∞ at ")).collect();
    let knees = report["total"]["knees"].as_array().unwrap();
    assert_eq!(labels.len(), knees.len(), "{labels:?}");
    let mut unique = labels.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), labels.len(), "{labels:?}");
    assert!(std::fs::metadata(&png).unwrap().len() > 1000);
}
