//! `watch --headless` standard output in a hostile world: a reader that opens the pipe and
//! never reads (a stuck log shipper) must not block ingestion, HTTP or the signals
//! ([#27](https://github.com/litehit/litehit/issues/27), High 1). Report lines beyond the
//! bounded queue are dropped and counted (`dropped_lines`, `/metrics`, stderr at exit).
//!
//! Every server binds 127.0.0.1 with port 0; every wait is bounded (count and time), so a
//! regression fails instead of hanging.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::cli_bin::{
    generate, litehit, make_fifo, read_facts, replay_to, send_signal, standard_trace,
};
use litehit_core::workload::WorkloadConfig;

/// Longest wait for anything (startup, a reply, the exit): a hang fails the test.
const WAIT: Duration = Duration::from_secs(120);

/// Kills the monitor if the test fails first.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 request on a fresh connection (bounded by `WAIT`): status and body.
fn request(port: u16, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    stream.set_write_timeout(Some(WAIT)).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(body).unwrap();
    let mut reply = String::new();
    stream
        .read_to_string(&mut reply)
        .expect("an answer within the read timeout");
    let (head, body) = reply.split_once("\r\n\r\n").expect("headers, then a body");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status code");
    (status, body.to_owned())
}

/// The value of the unlabelled metric `name` in a scrape.
fn metric(scrape: &str, name: &str) -> Option<u64> {
    scrape.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(' ')?;
        value.trim().parse().ok()
    })
}

/// `watch --listen 0 --metrics-listen 0 --headless` writing its lines to `stdout`; its
/// port (read from stderr) and its further stderr lines.
fn start_monitor(stdout: std::fs::File, facts: &Path) -> (Guard, u16, mpsc::Receiver<String>) {
    let mut child = litehit()
        .args([
            "watch",
            "--listen",
            "0",
            "--metrics-listen",
            "0",
            "--headless",
        ])
        .args(["--interval", "0.01", "--block-size", "16"])
        .arg("--facts-out")
        .arg(facts)
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::piped())
        .spawn()
        .expect("the litehit binary runs");
    let stderr = child.stderr.take().unwrap();
    let child = Guard(child);
    let (tx, stderr_lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let port: u16 = loop {
        let line = stderr_lines
            .recv_timeout(WAIT)
            .expect("the monitor announces its port");
        if let Some(address) = line.strip_prefix("litehit: listening on http://") {
            break address
                .trim_end_matches("/v1/trace")
                .rsplit(':')
                .next()
                .and_then(|port| port.parse().ok())
                .expect("a port");
        }
    };
    (child, port, stderr_lines)
}

/// Scrapes `/metrics` until `done` says so (bounded in count and time).
fn scrape_until(port: u16, what: &str, done: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + WAIT;
    for _ in 0..100_000 {
        let (status, scrape) = request(port, "GET", "/metrics", b"");
        assert_eq!(status, 200);
        if done(&scrape) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {scrape}");
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{what}");
}

/// Waits (bounded) for the monitor to exit; its exit code and everything it said on stderr.
fn wait_for_exit(
    child: &mut Guard,
    stderr_lines: &mpsc::Receiver<String>,
) -> (Option<i32>, String) {
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "watch did not stop within {WAIT:?} of SIGTERM with a stalled reader"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // Everything it said, up to the end of its stderr (the reader thread may lag the exit).
    let mut said = String::new();
    loop {
        match stderr_lines.recv_timeout(WAIT) {
            Ok(line) => said.push_str(&line),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("stderr still open after exit"),
        }
    }
    (status.code(), said)
}

#[test]
fn a_reader_that_never_reads_blocks_neither_http_nor_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("stdout.fifo");
    make_fifo(&fifo);
    // The reader: opens the FIFO (read and write, so neither open waits) and never reads.
    let _reader = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let stdout = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let facts = dir.path().join("facts.csv");
    let (mut child, port, stderr_lines) = start_monitor(stdout, &facts);

    // The pipe fills (64 KiB, a few dozen lines) and lines start being dropped: the
    // monitor says so on /metrics, which answers meanwhile.
    scrape_until(port, "no report line was ever dropped", |scrape| {
        metric(scrape, "litehit_headless_lines_dropped_total").is_some_and(|n| n > 0)
    });

    // With the reader stalled, rows posted are still taken and counted.
    let requests = generate(WorkloadConfig::default(), 2000);
    let rows = standard_trace(&requests);
    let lines: Vec<&str> = rows.lines().collect();
    for batch in lines.chunks(500) {
        let body = batch.join("\n") + "\n";
        let (status, reply) = request(port, "POST", "/v1/trace", body.as_bytes());
        assert_eq!(status, 200, "{reply}");
        assert!(
            reply.contains(&format!("\"accepted\":{}", batch.len())),
            "{reply}"
        );
    }
    scrape_until(port, "not every row posted was counted", |scrape| {
        let counted = scrape
            .lines()
            .filter_map(|line| line.strip_prefix("litehit_requests_total{"))
            .filter_map(|rest| rest.rsplit(' ').next()?.parse::<u64>().ok())
            .sum::<u64>();
        counted == lines.len() as u64
    });

    // SIGTERM: the facts are written and the process exits, the reader still stalled.
    send_signal(child.0.id(), "TERM");
    let (code, said) = wait_for_exit(&mut child, &stderr_lines);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("report lines dropped"), "{said}");
    assert!(said.contains("facts written to"), "{said}");

    let trace = dir.path().join("rows.jsonl");
    std::fs::write(&trace, &rows).unwrap();
    let out = dir.path().join("replayed");
    let replayed = replay_to(&trace, &out, &["--quiet", "--block-size", "16"]);
    assert_eq!(replayed.code, Some(0), "{}", replayed.stderr);
    assert_eq!(
        read_facts(&facts),
        read_facts(&out.join("litehit_facts.csv")),
        "the facts written on SIGTERM differ from replay's"
    );
    assert_eq!(read_facts(&facts).len(), lines.len());
}
