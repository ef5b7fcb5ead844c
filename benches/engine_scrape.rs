//! `watch --engine-metrics`: the CPU one scrape costs the scraping thread (connect, request,
//! read the page, find the counters), against a loopback server in this process serving a
//! vLLM-sized page (a few hundred series, the prefix-cache counters among them). Target:
//! under 1 ms of CPU per scrape (issue 31).
//!
//! `cargo bench --bench engine_scrape -- [--scrapes N]` (default 2000);
//! `LITEHIT_BENCH_SMOKE=1` scrapes 20 times.
//!
//! Every scrape is checked: the counters read must be the ones the page says.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::time::Duration;

use litehit_live::engine_metrics::{EngineCounters, EngineEndpoint};

#[expect(dead_code, reason = "this bench reads nothing from ../shared")]
mod common;
use common::Mode;

/// CPU time of this thread in seconds (the server's thread is not counted).
fn thread_cpu_seconds() -> f64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

/// A page of `series` histogram-like lines and the prefix-cache counters.
fn page(series: usize) -> String {
    let mut text = String::new();
    for i in 0..series {
        writeln!(
            text,
            "vllm:e2e_request_latency_seconds_bucket{{engine=\"0\",le=\"{i}.0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"}} {i}.0"
        )
        .expect("writing to a String");
    }
    text.push_str(
        "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 123456789.0\n\
         vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 98765432.0\n\
         vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"40000\"} 1.0\n",
    );
    text
}

fn main() {
    let mode = Mode::from_env_and_args();
    let args = common::bench_args();
    let scrapes: usize = args
        .iter()
        .position(|arg| arg == "--scrapes")
        .and_then(|at| args.get(at + 1))
        .map_or(mode.pick(2000, 20), |value| {
            value.parse().expect("a number")
        });
    let body = page(400);
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let served = body.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            // The request's head, to its blank line.
            let mut request = Vec::new();
            let mut byte = [0_u8; 1];
            while !request.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                request.push(byte[0]);
            }
            let _ = write!(
                stream,
                "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{served}",
                served.len()
            );
        }
    });
    let endpoint = EngineEndpoint::parse(&format!("http://127.0.0.1:{port}/metrics"), false)
        .expect("a loopback endpoint");
    let expected = EngineCounters {
        query_tokens: 123_456_789,
        hit_tokens: 98_765_432,
        pool: Some((40_000, 16)),
    };
    let started = thread_cpu_seconds();
    for _ in 0..scrapes {
        let counters = endpoint
            .scrape(Duration::from_secs(5))
            .expect("the scrape succeeds");
        assert_eq!(counters, expected);
    }
    let per_scrape_ms = (thread_cpu_seconds() - started) / scrapes as f64 * 1e3;
    println!(
        "engine scrape: {scrapes} scrapes of a {} KiB page, {per_scrape_ms:.3} ms CPU each",
        body.len() / 1024
    );
}
