//! `watch --engine-metrics` (issue 31 §3) against a real HTTP server in the test: a vLLM-style
//! metrics page on 127.0.0.1 whose counters advance by 100 query and 40 hit tokens at each
//! scrape, and whose `vllm:cache_config_info` says 37 blocks of 16 tokens. The headless lines
//! show its windowed rate (exactly 40 %), the `engine` slot from its pool, and a second
//! endpoint that refuses connections counted and shown while the monitor goes on.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::cli_bin::{generate, litehit, run_in, standard_trace, write_file};
use litehit_core::workload::WorkloadConfig;

/// Serves the page on `listener`, each answer one step further; never returns.
fn serve(listener: &TcpListener) {
    for (step, stream) in (1_u64..).zip(listener.incoming()) {
        let Ok(mut stream) = stream else { continue };
        let mut request = Vec::new();
        let mut byte = [0_u8; 1];
        while !request.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
            request.push(byte[0]);
        }
        let body = format!(
            "# TYPE vllm:prefix_cache_queries_total counter\n\
             vllm:prefix_cache_queries_total{{engine=\"0\",model_name=\"m\"}} {}.0\n\
             vllm:prefix_cache_hits_total{{engine=\"0\",model_name=\"m\"}} {}.0\n\
             vllm:cache_config_info{{block_size=\"16\",num_gpu_blocks=\"37\"}} 1.0\n",
            step * 100,
            step * 40
        );
        let _ = write!(
            stream,
            "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
    }
}

#[test]
fn the_engines_window_rate_its_pool_and_failed_scrapes_are_shown() {
    let dir = tempfile::tempdir().unwrap();
    let requests = generate(
        WorkloadConfig {
            seed: 31,
            block_size_tokens: 16,
            ..WorkloadConfig::default()
        },
        200,
    );
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || serve(&listener));
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);

    let mut child = litehit()
        .args([
            "watch",
            trace.to_str().unwrap(),
            "--headless",
            "--interval",
            "0.1",
            "--block-size",
            "16",
            "--engine",
            "vllm",
            "--engine-metrics",
            &format!("http://127.0.0.1:{port}/metrics"),
            "--engine-metrics",
            &format!("down=http://127.0.0.1:{closed_port}/metrics"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut found = None;
    while Instant::now() < deadline {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(5)) else {
            continue;
        };
        let report: Value = serde_json::from_str(&line).unwrap();
        let endpoints = &report["engine_metrics"];
        if endpoints[0]["scrapes"].as_u64().unwrap_or(0) >= 3
            && endpoints[1]["failed_scrapes"].as_u64().unwrap_or(0) >= 2
            && report["instances"][0]["requests"] == 200
        {
            found = Some(report);
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let report = found.expect("a line with three scrapes and two failures");
    let engine = &report["engine_metrics"][0];
    assert_eq!(engine["instance"], Value::Null);
    assert_eq!(
        (
            engine["num_gpu_blocks"].as_u64(),
            engine["block_size"].as_u64()
        ),
        (Some(37), Some(16))
    );
    let window = &engine["window"];
    assert_eq!(window["engine_query_tokens"], 100);
    assert_eq!(window["engine_hit_tokens"], 40);
    assert_eq!(window["engine_hit_rate"], 0.4);
    assert_eq!(engine["litehit_at"], "engine");
    assert_eq!(engine["last_error"], Value::Null);
    // The engine's pool is the `engine` slot: 37 × 16 tokens in 16-token blocks.
    assert_eq!(
        report["slots"][0],
        serde_json::json!({"name": "engine", "capacity_blocks": 37})
    );
    let down = &report["engine_metrics"][1];
    assert_eq!(down["instance"], "down");
    assert!(
        down["last_error"].as_str().unwrap().contains("refused"),
        "{down}"
    );
    assert_eq!(down["window"], Value::Null);
}

#[test]
fn a_public_engine_address_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(
        dir.path(),
        "trace.jsonl",
        &standard_trace(&generate(WorkloadConfig::default(), 5)),
    );
    let run = run_in(
        None,
        [
            "watch",
            trace.to_str().unwrap(),
            "--headless",
            "--exit-at-eof",
            "--engine-metrics",
            "http://8.8.8.8:8000/metrics",
        ],
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("--engine-metrics-any-address"),
        "{}",
        run.stderr
    );
}
