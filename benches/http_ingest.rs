//! `watch --listen` ingest on loopback: 4 client threads post ~1 MiB JSONL bodies to
//! `POST /v1/trace` over keep-alive connections, in process, against the live ingest thread
//! (engine with capacity curves, facts spilled) — compared, in the same run, with the same
//! bytes followed from a file by the same ingest thread, so the HTTP cost is a ratio.
//!
//! `cargo bench --bench http_ingest -- [--mib-per-client N]` (default 128);
//! `LITEHIT_BENCH_SMOKE=1` runs a few MiB only, in seconds.
//!
//! Reports wall time, CPU time of the whole process, block accesses per second and the rows
//! accepted (which must be every row posted).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use litehit_core::engine::{EngineConfig, LaneSet, LaneSpec, Routing};
use litehit_core::formats::TraceFormat;
use litehit_core::workload::{SyntheticRequest, Workload, WorkloadConfig};
use litehit_live::LiveHandle;
use litehit_live::http::{HttpListener, HttpOptions, HttpServer};
use litehit_live::ingest::{self, IngestConfig};
use litehit_live::snapshot::FollowState;

const CLIENTS: usize = 4;
const BODY_BYTES: usize = 1 << 20;
/// Longest wait for the file-following pass to finish.
const WAIT: Duration = Duration::from_secs(600);

/// CPU seconds of the whole process, all threads.
fn process_cpu_seconds() -> f64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    #[expect(clippy::cast_precision_loss, reason = "seconds as a float")]
    let seconds = now.tv_sec as f64 + now.tv_nsec as f64 / 1e9;
    seconds
}

fn engine_config() -> EngineConfig {
    EngineConfig {
        trace_block_size_tokens: 16,
        lanes: LaneSet::OnTheFly(LaneSpec {
            instance_id: "default".into(),
            block_size_tokens: 16,
            block_bytes: 16 * 131_072,
            ttl_ns: 0,
            enable_prefix_hash: false,
        }),
        routing: Routing::ByInstance,
        pool: None,
    }
}

/// One client's bodies (whole lines, each about [`BODY_BYTES`]) and their block count.
struct ClientLoad {
    bodies: Vec<Vec<u8>>,
    rows: u64,
    blocks: u64,
}

fn client_load(client: usize, bytes: usize) -> ClientLoad {
    let mut workload = Workload::new(WorkloadConfig {
        seed: 2026 + client as u64,
        instance_ids: vec![format!("engine-{client}")],
        live_conversations: 5_000,
        zipf_exponent: 0.8,
        ..WorkloadConfig::default()
    });
    let mut request = SyntheticRequest::default();
    let mut line = String::new();
    let mut load = ClientLoad {
        bodies: Vec::new(),
        rows: 0,
        blocks: 0,
    };
    let mut body = Vec::with_capacity(BODY_BYTES + 64 * 1024);
    let mut total = 0;
    while total < bytes {
        workload.fill_next(&mut request);
        line.clear();
        request.to_standard_jsonl(&mut line);
        body.extend_from_slice(line.as_bytes());
        load.rows += 1;
        load.blocks += request.keys.len() as u64;
        if body.len() >= BODY_BYTES {
            total += body.len();
            load.bodies.push(std::mem::take(&mut body));
        }
    }
    load
}

fn ingest_config(dir: &Path, trace: &Path) -> IngestConfig {
    let mut config = IngestConfig::new(trace, engine_config());
    config.format = Some(TraceFormat::Standard);
    config.spill_dir = Some(dir.to_path_buf());
    config.facts_out = dir.join("litehit_facts.csv");
    config
}

/// Posts every body over one connection; returns the rows the replies accepted.
fn post_all(port: u16, bodies: &[Vec<u8>]) -> u64 {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(WAIT)).expect("timeout");
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::new(stream);
    let mut accepted = 0;
    for body in bodies {
        let head = format!(
            "POST /v1/trace HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        );
        writer.write_all(head.as_bytes()).expect("send");
        writer.write_all(body).expect("send");
        let mut status = String::new();
        reader.read_line(&mut status).expect("status line");
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        let mut length = 0;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).expect("header");
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().expect("length");
            }
        }
        let mut reply = vec![0; length];
        reader.read_exact(&mut reply).expect("reply");
        let reply: serde_json::Value = serde_json::from_slice(&reply).expect("JSON reply");
        assert_eq!(reply["rejected"], 0, "{reply}");
        accepted += reply["accepted"].as_u64().expect("accepted");
    }
    accepted
}

fn wait_finished(live: &LiveHandle) {
    let deadline = Instant::now() + WAIT;
    while live.latest().source.state != FollowState::Finished {
        assert!(Instant::now() < deadline, "the file pass did not finish");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn report(name: &str, wall: f64, cpu: f64, blocks: u64, rows: u64, accepted: u64) {
    #[expect(clippy::cast_precision_loss, reason = "a rate")]
    let rate = blocks as f64 / wall / 1e6;
    println!(
        "{name:<22} wall {wall:>7.3} s  cpu {cpu:>7.3} s  {rate:>6.2} M block accesses/s  \
         rows {accepted}/{rows} accepted"
    );
}

fn main() {
    let smoke = std::env::var_os("LITEHIT_BENCH_SMOKE").is_some_and(|value| value == "1");
    let mut mib_per_client = if smoke { 4 } else { 128 };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--mib-per-client" {
            mib_per_client = args
                .next()
                .and_then(|value| value.parse().ok())
                .expect("--mib-per-client N");
        }
    }
    let loads: Vec<ClientLoad> = (0..CLIENTS)
        .map(|client| client_load(client, mib_per_client << 20))
        .collect();
    let rows: u64 = loads.iter().map(|load| load.rows).sum();
    let blocks: u64 = loads.iter().map(|load| load.blocks).sum();
    let bytes: usize = loads
        .iter()
        .flat_map(|load| &load.bodies)
        .map(Vec::len)
        .sum();
    println!(
        "{CLIENTS} clients × {mib_per_client} MiB in ~1 MiB bodies: {bytes} bytes, {rows} rows, \
         {blocks} block accesses"
    );
    let dir = tempfile::tempdir().expect("temp dir");

    // 1. The same bytes, client after client, followed from a file by the same ingest thread.
    let trace = dir.path().join("trace.jsonl");
    let mut file = std::fs::File::create(&trace).expect("create trace");
    for body in loads.iter().flat_map(|load| &load.bodies) {
        file.write_all(body).expect("write trace");
    }
    drop(file);
    let mut config = ingest_config(dir.path(), &trace);
    config.exit_at_eof = true;
    let cpu = process_cpu_seconds();
    let started = Instant::now();
    let live = ingest::spawn(config).expect("ingest starts");
    wait_finished(&live);
    let wall = started.elapsed().as_secs_f64();
    let followed = live.shutdown();
    report(
        "file, followed",
        wall,
        process_cpu_seconds() - cpu,
        blocks,
        rows,
        followed.health.read_events,
    );
    std::fs::remove_file(&trace).expect("remove trace");

    // 2. Over HTTP: 4 clients at once, each on its own keep-alive connection.
    let listener = HttpListener::bind(([127, 0, 0, 1], 0).into()).expect("bind loopback");
    let port = listener.local_addr().port();
    let mut config = ingest_config(dir.path(), Path::new(""));
    config.follow_file = false;
    config.listen = Some(listener.local_addr());
    let cpu = process_cpu_seconds();
    let started = Instant::now();
    let live = ingest::spawn(config).expect("ingest starts");
    let server = HttpServer::start(listener, HttpOptions::default(), &live).expect("server starts");
    let accepted: u64 = std::thread::scope(|scope| {
        let clients: Vec<_> = loads
            .iter()
            .map(|load| scope.spawn(move || post_all(port, &load.bodies)))
            .collect();
        clients
            .into_iter()
            .map(|client| client.join().expect("client thread"))
            .sum()
    });
    let wall = started.elapsed().as_secs_f64();
    let cpu = process_cpu_seconds() - cpu;
    drop(server);
    let posted = live.shutdown();
    assert_eq!(accepted, rows, "every posted row accepted");
    assert_eq!(posted.health.read_events, rows);
    report("http, 4 clients", wall, cpu, blocks, rows, accepted);
}
