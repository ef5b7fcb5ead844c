//! `GET /metrics` with 100 instances × 16 slots, in both exposition formats (OpenMetrics, which
//! Prometheus asks for, and the classic text format 0.0.4, the default): the time per scrape,
//! in process (what the handler does: read the latest snapshot, encode it) and over loopback
//! HTTP (a fresh connection per scrape, as Prometheus reuses one but a cold one is the worse
//! case), and the ratio of the two formats' times.
//!
//! `cargo bench --bench metrics -- [--instances N] [--slots N] [--scrapes N]`
//! (default 100, 16, 2000); `LITEHIT_BENCH_SMOKE=1` scrapes 20 times.
//!
//! Every scrape is checked: it must hold one hit-token series per instance and slot plus one
//! `capacity="inf"` series per instance, end with `# EOF` in OpenMetrics only, and the two
//! formats must carry the same sample lines.

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Instant;

use litehit_core::projector::Capacity;
use litehit_live::LiveHandle;
use litehit_live::http::{Endpoints, HttpListener, HttpServer};
use litehit_live::metrics::{Exporter, Format};
use litehit_live::snapshot::{
    CAPACITY_FRACTION_PERCENTS, FractionCapacity, LaneSnapshot, LiveSnapshot, Slot,
};

#[expect(dead_code, reason = "the metrics bench reads nothing from ../shared")]
mod common;
use common::Mode;

fn flag(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|arg| arg == name)
        .and_then(|at| args.get(at + 1))
        .map_or(default, |value| value.parse().expect("a number"))
}

/// A snapshot of `instances` lanes with `slots` GB slots, every number distinct.
fn snapshot(instances: usize, slots: usize) -> LiveSnapshot {
    let slot_list: Vec<Slot> = (0..slots)
        .map(|i| Slot {
            id: i as u64 + 1,
            capacity: Capacity::Gigabytes(10.0 * (i + 1) as f64),
        })
        .collect();
    let lanes: Vec<LaneSnapshot> = (0..instances)
        .map(|i| LaneSnapshot {
            instance_id: format!("prefill-{i}"),
            block_size_tokens: 512,
            block_bytes: 1 << 25,
            requests: 1_000_000 + i as u64,
            input_tokens: 7_000_000_000 + i as u64,
            unique_blocks: 30_000_000 + i as u64,
            slot_hit_blocks: (0..slots).map(|s| 1_000_000 * (s as u64 + 1)).collect(),
            infinite_hit_blocks: 99_000_000,
            capacity_for_fraction: CAPACITY_FRACTION_PERCENTS
                .iter()
                .map(|&percent| FractionCapacity {
                    percent,
                    capacity_blocks: u64::from(percent) * 1000 + i as u64,
                    hit_blocks: u64::from(percent) * 990_000,
                })
                .collect(),
            ..LaneSnapshot::default()
        })
        .collect();
    LiveSnapshot {
        slots: slot_list,
        lanes,
        ..LiveSnapshot::default()
    }
    .finished()
}

fn check(text: &str, format: Format, instances: usize, slots: usize) {
    let hit_series = text
        .lines()
        .filter(|line| line.starts_with("litehit_hit_tokens_total{"))
        .count();
    assert_eq!(hit_series, instances * (slots + 1), "hit-token series");
    assert_eq!(text.ends_with("# EOF\n"), format == Format::OpenMetrics);
}

/// The `Accept` header that asks for `format`.
fn accept(format: Format) -> &'static str {
    match format {
        Format::OpenMetrics => "application/openmetrics-text;version=1.0.0,*/*;q=0.1",
        Format::Text => "text/plain;version=0.0.4",
    }
}

fn get(address: SocketAddr, format: Format) -> String {
    let mut stream = TcpStream::connect(address).expect("the server is up");
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: {}\r\nConnection: close\r\n\r\n",
        accept(format)
    )
    .expect("request sent");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("reply read");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains(format.content_type()), "{reply}");
    reply
}

/// The sample lines of an exposition (the same in both formats).
fn samples(text: &str) -> Vec<&str> {
    text.lines().filter(|line| !line.starts_with('#')).collect()
}

fn main() {
    let mode = Mode::from_env_and_args();
    let args = common::bench_args();
    let instances = flag(&args, "--instances", 100);
    let slots = flag(&args, "--slots", 16);
    let scrapes = flag(&args, "--scrapes", mode.pick(2000, 20));
    let formats = [Format::OpenMetrics, Format::Text];

    let (publish, snapshots) = tokio::sync::watch::channel(Arc::new(snapshot(instances, slots)));
    let exporter = Exporter::new(snapshots.clone());
    let first = formats.map(|format| exporter.scrape_as(format).expect("encodes"));
    for (text, format) in first.iter().zip(formats) {
        check(text, format, instances, slots);
    }
    assert_eq!(samples(&first[0]), samples(&first[1]), "the same samples");
    println!("metrics: {instances} instances x {slots} slots");
    let mut in_process = [0.0; 2];
    for (index, format) in formats.into_iter().enumerate() {
        let started = Instant::now();
        let mut bytes = 0;
        for _ in 0..scrapes {
            let text = exporter.scrape_as(format).expect("encodes");
            bytes += text.len();
            check(&text, format, instances, slots);
        }
        in_process[index] = started.elapsed().as_secs_f64() / scrapes as f64;
        println!(
            "  {format:?}: {} bytes per scrape; in process: {:.3} ms per scrape (mean of \
             {scrapes}, {bytes} bytes in all)",
            first[index].len(),
            in_process[index] * 1e3
        );
    }
    println!(
        "  in process, Text / OpenMetrics: {:.2}",
        in_process[1] / in_process[0]
    );

    let (events, _ingest) = std::sync::mpsc::channel();
    let live = LiveHandle::new(events, snapshots, None);
    let listener =
        HttpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).expect("binds loopback");
    let server = HttpServer::start_with(
        listener,
        Endpoints {
            metrics: true,
            ..Endpoints::default()
        },
        &live,
    )
    .expect("starts");
    let address = server.local_addr();
    let mut over_http = [0.0; 2];
    for (index, format) in formats.into_iter().enumerate() {
        let body =
            |reply: &str| -> String { reply.split_once("\r\n\r\n").expect("a body").1.to_owned() };
        check(&body(&get(address, format)), format, instances, slots);
        let started = Instant::now();
        for _ in 0..scrapes {
            let reply = get(address, format);
            check(&body(&reply), format, instances, slots);
        }
        over_http[index] = started.elapsed().as_secs_f64() / scrapes as f64;
        println!(
            "  {format:?} over loopback HTTP (new connection each): {:.3} ms per scrape (mean \
             of {scrapes})",
            over_http[index] * 1e3
        );
    }
    println!(
        "  over HTTP, Text / OpenMetrics: {:.2}",
        over_http[1] / over_http[0]
    );
    drop(server);
    drop(publish);
}
