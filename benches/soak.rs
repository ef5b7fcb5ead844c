//! Soak: the real `litehit watch --headless` process for minutes, fed by a file that rotates
//! and by `POST /v1/trace`, scraped every 2 s — its resident memory, open descriptors and
//! disk (the facts spill) sampled at each scrape, and at the end (SIGTERM) its facts compared
//! with `litehit replay` of every row: every row counted once, exactly.
//!
//! `cargo bench --bench soak -- [--seconds N]` (default 600, the documented 10-minute run);
//! `LITEHIT_BENCH_SMOKE=1` runs 5 s, same checks. Rates: 500 rows/s to the file (rotated every
//! 20,000 rows), 100 rows/s posted.

#[expect(dead_code, reason = "the soak reads nothing from ../shared")]
mod common;

use std::fs;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use litehit_core::workload::{SyntheticRequest, Workload, WorkloadConfig};

/// Time between scrapes (and samples).
const SCRAPE_PERIOD: Duration = Duration::from_secs(2);
/// Appends and posts are made this often.
const BATCH_PERIOD: Duration = Duration::from_millis(100);
/// Longest wait for the monitor to start, catch up or stop.
const WAIT: Duration = Duration::from_secs(600);

/// One sample of the monitor process.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at_s: f64,
    rss_kib: u64,
    fds: u64,
    spill_bytes: u64,
    requests: u64,
    /// Σ `litehit_unique_blocks`: what the core's and accumulator's memory grow with.
    unique_blocks: u64,
}

fn main() {
    let mode = common::Mode::from_env_and_args();
    let args = common::bench_args();
    let seconds: u64 = args
        .iter()
        .position(|arg| arg == "--seconds")
        .and_then(|i| args.get(i + 1))
        .map_or(mode.pick(600, 5), |text| {
            text.parse().expect("--seconds takes a whole number")
        });
    let rotate_rows: u64 = mode.pick(20_000, 500);
    let dir = tempfile::tempdir().expect("a temp directory");
    let trace = dir.path().join("trace.jsonl");
    let facts_dir = dir.path().join("facts");
    fs::create_dir(&facts_dir).expect("the facts directory");
    let facts = facts_dir.join("facts.csv");
    let posted_copy = dir.path().join("posted.jsonl");

    let mut child = Command::new(env!("CARGO_BIN_EXE_litehit"))
        .arg("watch")
        .arg(&trace)
        .args(["--headless", "--interval", "2", "--block-size", "16"])
        .args(["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
        .arg("--facts-out")
        .arg(&facts)
        .env("XDG_CONFIG_HOME", "/nonexistent/litehit-bench-config-home")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the litehit binary runs");
    let port = announced_port(&mut child);
    let pid = child.id();

    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let rotations = Arc::new(AtomicU64::new(0));
    let file_writer = {
        let (stop, written, rotations) = (
            Arc::clone(&stop),
            Arc::clone(&written),
            Arc::clone(&rotations),
        );
        let trace = trace.clone();
        std::thread::spawn(move || {
            append_rotating(&trace, rotate_rows, &stop, &written, &rotations);
        })
    };
    let posted = Arc::new(AtomicU64::new(0));
    let post_thread = {
        let (stop, posted) = (Arc::clone(&stop), Arc::clone(&posted));
        let copy = posted_copy.clone();
        std::thread::spawn(move || post_steadily(port, &copy, &stop, &posted))
    };

    let started = Instant::now();
    let mut samples = Vec::new();
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(SCRAPE_PERIOD);
        samples.push(sample(pid, port, &facts_dir, started));
    }
    stop.store(true, Ordering::Relaxed);
    file_writer.join().expect("the file writer");
    post_thread.join().expect("the poster");
    let rows = written.load(Ordering::Relaxed) + posted.load(Ordering::Relaxed);
    // Every row counted before the stop (bounded).
    let deadline = Instant::now() + WAIT;
    while requests_total(&scrape(port)) < rows {
        assert!(
            Instant::now() < deadline,
            "the monitor did not catch up with {rows} rows"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    samples.push(sample(pid, port, &facts_dir, started));
    stop_monitor(&mut child);

    let exact = facts_equal_replay(dir.path(), &facts, &posted_copy);
    report(&samples, rows, rotations.load(Ordering::Relaxed), seconds);
    assert!(exact, "the facts differ from replay's of the same rows");
    println!("correctness: facts equal replay of all {rows} rows");
}

/// Reads the monitor's stderr until it says where it listens; the rest is echoed.
fn announced_port(child: &mut Child) -> u16 {
    let stderr = child.stderr.take().expect("a piped stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(address) = line.strip_prefix("litehit: listening on http://") {
                let port = address
                    .trim_end_matches("/v1/trace")
                    .rsplit(':')
                    .next()
                    .and_then(|port| port.parse::<u16>().ok());
                let _ = tx.send(port);
            }
            eprintln!("watch: {line}");
        }
    });
    rx.recv_timeout(WAIT)
        .ok()
        .flatten()
        .expect("the monitor announces its port")
}

/// The rows of `workload` due by now at `rate` per second, as JSON lines in `out`.
fn due_rows(
    workload: &mut Workload,
    request: &mut SyntheticRequest,
    rate: f64,
    started: Instant,
    done: &mut u64,
    out: &mut String,
) {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a small positive count"
    )]
    let due = (started.elapsed().as_secs_f64() * rate) as u64;
    out.clear();
    while *done < due {
        workload.fill_next(request);
        request.to_standard_jsonl(out);
        *done += 1;
    }
}

/// Appends 500 rows/s of two instances to `trace`, renaming it to `trace.N` every
/// `rotate_rows` rows (the monitor follows the rotation; every generation is kept for the
/// replay).
fn append_rotating(
    trace: &Path,
    rotate_rows: u64,
    stop: &AtomicBool,
    written: &AtomicU64,
    rotations: &AtomicU64,
) {
    let mut workload = Workload::new(WorkloadConfig {
        seed: 27,
        instance_ids: vec!["file-0".to_owned(), "file-1".to_owned()],
        ..WorkloadConfig::default()
    });
    let mut request = SyntheticRequest::default();
    let (mut text, mut done, mut in_file) = (String::new(), 0_u64, 0_u64);
    let mut file = fs::File::create(trace).expect("the trace");
    let started = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        due_rows(
            &mut workload,
            &mut request,
            500.0,
            started,
            &mut done,
            &mut text,
        );
        file.write_all(text.as_bytes()).expect("appending");
        in_file += text.lines().count() as u64;
        written.store(done, Ordering::Relaxed);
        if in_file >= rotate_rows {
            let generation = rotations.fetch_add(1, Ordering::Relaxed) + 1;
            fs::rename(trace, generation_path(trace, generation)).expect("rotating");
            file = fs::File::create(trace).expect("the new trace");
            in_file = 0;
        }
        std::thread::sleep(BATCH_PERIOD);
    }
}

/// `trace.N`, the N-th rotated generation.
fn generation_path(trace: &Path, generation: u64) -> PathBuf {
    let mut name = trace.as_os_str().to_owned();
    name.push(format!(".{generation}"));
    PathBuf::from(name)
}

/// Posts 100 rows/s of one instance over a keep-alive connection, keeping a copy.
fn post_steadily(port: u16, copy: &Path, stop: &AtomicBool, posted: &AtomicU64) {
    let mut workload = Workload::new(WorkloadConfig {
        seed: 26,
        instance_ids: vec!["http-0".to_owned()],
        ..WorkloadConfig::default()
    });
    let mut request = SyntheticRequest::default();
    let mut copy = fs::File::create(copy).expect("the copy of the posted rows");
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("the monitor listens");
    stream.set_read_timeout(Some(WAIT)).expect("a timeout");
    let mut reader = BufReader::new(stream.try_clone().expect("a second handle"));
    let (mut text, mut done) = (String::new(), 0_u64);
    let started = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        due_rows(
            &mut workload,
            &mut request,
            100.0,
            started,
            &mut done,
            &mut text,
        );
        if !text.is_empty() {
            write!(
                stream,
                "POST /v1/trace HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n\
                 Content-Length: {}\r\n\r\n{text}",
                text.len()
            )
            .expect("posting");
            let body = read_reply(&mut reader);
            let rows = text.lines().count();
            assert!(
                body.contains(&format!("\"accepted\":{rows}")),
                "a post was not taken whole: {body}"
            );
            copy.write_all(text.as_bytes()).expect("the copy");
            posted.store(done, Ordering::Relaxed);
        }
        std::thread::sleep(BATCH_PERIOD);
    }
}

/// One HTTP/1.1 reply's body (the head's Content-Length says how long).
fn read_reply(reader: &mut BufReader<TcpStream>) -> String {
    let mut length = 0;
    let mut status = String::new();
    reader.read_line(&mut status).expect("a status line");
    assert!(status.contains(" 200 "), "{status}");
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("a header");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().expect("a length");
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("the body");
    String::from_utf8(body).expect("UTF-8")
}

/// `GET /metrics` on a fresh connection.
fn scrape(port: u16) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("the monitor listens");
    stream.set_read_timeout(Some(WAIT)).expect("a timeout");
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .expect("a scrape");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("an answer");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    reply
}

/// Σ `litehit_requests_total` over the instances.
fn requests_total(scrape: &str) -> u64 {
    sum_of(scrape, "litehit_requests_total{")
}

/// Σ of the series whose lines start with `prefix`.
fn sum_of(scrape: &str, prefix: &str) -> u64 {
    scrape
        .lines()
        .filter_map(|line| line.strip_prefix(prefix))
        .filter_map(|rest| rest.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// A scrape, then the process's resident memory, open descriptors and spill bytes.
fn sample(pid: u32, port: u16, facts_dir: &Path, started: Instant) -> Sample {
    let scraped = scrape(port);
    let requests = requests_total(&scraped);
    let unique_blocks = sum_of(&scraped, "litehit_unique_blocks{");
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let fds = fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |entries| entries.count() as u64);
    let spill_bytes = fs::read_dir(facts_dir).map_or(0, |entries| {
        entries
            .flatten()
            .filter_map(|entry| entry.metadata().ok())
            .map(|metadata| metadata.len())
            .sum()
    });
    Sample {
        at_s: started.elapsed().as_secs_f64(),
        rss_kib,
        fds,
        spill_bytes,
        requests,
        unique_blocks,
    }
}

/// SIGTERM, then waits (bounded) for a clean exit.
fn stop_monitor(child: &mut Child) {
    let sent = Command::new("kill")
        .args(["-s", "TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(status) = child.try_wait().expect("waiting") {
            assert_eq!(status.code(), Some(0), "the monitor's exit");
            return;
        }
        assert!(Instant::now() < deadline, "the monitor did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the monitor's facts equal `replay`'s of the file's generations (in order) and of
/// the posted rows (instances apart, so each is its own replay), as sorted sets of rows.
fn facts_equal_replay(dir: &Path, facts: &Path, posted_copy: &Path) -> bool {
    let trace = dir.join("trace.jsonl");
    let mut generations: Vec<PathBuf> = fs::read_dir(dir)
        .expect("the temp directory")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .and_then(|name| name.strip_prefix("trace.jsonl."))
                .is_some_and(|n| n.parse::<u64>().is_ok())
        })
        .collect();
    generations.sort_by_key(|path| {
        path.extension()
            .and_then(|ext| ext.to_str())
            .and_then(|n| n.parse::<u64>().ok())
    });
    generations.push(trace);
    let file_rows = dir.join("file_rows.jsonl");
    let mut all = fs::File::create(&file_rows).expect("the file rows");
    for generation in &generations {
        all.write_all(&fs::read(generation).expect("a generation"))
            .expect("copying");
    }
    let mut expected = Vec::new();
    for (name, rows) in [("file", &file_rows), ("posted", &posted_copy.to_path_buf())] {
        let out = dir.join(format!("replay_{name}"));
        let run = Command::new(env!("CARGO_BIN_EXE_litehit"))
            .arg("replay")
            .arg(rows)
            .arg("--out")
            .arg(&out)
            .args(["--quiet", "--block-size", "16"])
            .env("XDG_CONFIG_HOME", "/nonexistent/litehit-bench-config-home")
            .output()
            .expect("replay runs");
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        expected.extend(facts_rows(&out.join("litehit_facts.csv")));
    }
    let mut live = facts_rows(facts);
    expected.sort();
    live.sort();
    live == expected
}

/// A facts file's rows, without the header.
fn facts_rows(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .expect("a facts file")
        .lines()
        .skip(1)
        .map(str::to_owned)
        .collect()
}

fn report(samples: &[Sample], rows: u64, rotations: u64, seconds: u64) {
    println!(
        "soak: {seconds} s, {rows} rows ({rotations} rotations of the file), scraped every \
         {SCRAPE_PERIOD:?}"
    );
    println!(
        "{:>8} {:>10} {:>5} {:>12} {:>10}",
        "at_s", "rss_kib", "fds", "spill_bytes", "requests"
    );
    // The first, each quarter and the last.
    let picks = [
        0,
        samples.len() / 4,
        samples.len() / 2,
        samples.len() * 3 / 4,
        samples.len() - 1,
    ];
    let mut last = usize::MAX;
    for &index in &picks {
        if index == last {
            continue;
        }
        last = index;
        let s = samples[index];
        println!(
            "{:>8.1} {:>10} {:>5} {:>12} {:>10} {:>13}",
            s.at_s, s.rss_kib, s.fds, s.spill_bytes, s.requests, s.unique_blocks
        );
    }
    let max = |f: fn(&Sample) -> u64| samples.iter().map(f).max().unwrap_or(0);
    println!(
        "max: rss {} KiB, fds {}, spill {} bytes",
        max(|s| s.rss_kib),
        max(|s| s.fds),
        max(|s| s.spill_bytes)
    );
}
