//! `--max-line-bytes`, the line-length budget of every line reader (issue #27, Medium 5):
//! offline (`replay`, `trace`) a longer line is an error naming the file, the line and the
//! flag; live (`watch` on a file, standard input or HTTP bodies) it is skipped and counted as
//! a bad line. No reader holds more of a line than the cap (plus one read).

use std::fs;
use std::io::{self, Read, Write as _};

use serde_json::{Value, json};

use crate::common::cli_bin::{assert_nothing_published, failed, replay_to, run_in, write_file};
use crate::common::headless::HeadlessMonitor;
use litehit_core::engine::pipeline::replay_stream;
use litehit_core::engine::{Engine, EngineConfig, LaneSet, LaneSpec, Policy, Routing};
use litehit_core::formats::{LineCapReader, LineParser, ParseOptions, TraceFormat};

/// A standard row.
fn row(i: u64) -> String {
    format!(
        "{{\"type\":\"get\",\"instance_id\":\"i0\",\"trace_id\":\"r{i}\",\"timestamp_ns\":{},\
         \"keys\":[{i},{}],\"input_len\":512}}\n",
        (i + 1) * 1000,
        i + 1
    )
}

/// `len` bytes of a line that never ends, made up as they are read; counts what was read.
struct EndlessLine {
    left: u64,
    pulled: u64,
}

impl Read for EndlessLine {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = usize::try_from(self.left)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        buf[..n].fill(b'x');
        self.left -= n as u64;
        self.pulled += n as u64;
        Ok(n)
    }
}

const HUNDRED_MB: u64 = 100 << 20;
const ONE_MIB: u64 = 1 << 20;

#[test]
fn replay_fails_on_a_line_past_the_cap_naming_file_line_and_flag() {
    let dir = tempfile::tempdir().unwrap();
    let long = format!("{}\n", "y".repeat(2 << 20));
    let text = format!("{}{}{}{long}{}", row(0), row(1), row(2), row(3));
    let trace = write_file(dir.path(), "trace.jsonl", &text);
    let out = dir.path().join("out");
    let run = replay_to(&trace, &out, &["--max-line-bytes", "1MiB"]);
    let message = failed(&run);
    assert!(
        message.contains(&format!(
            "{}: line 4: longer than --max-line-bytes (1 MiB)",
            trace.display()
        )),
        "{message}"
    );
    assert_nothing_published(&out);
    // Under the cap (the default, 16 MiB), the same line is read (and is no JSON).
    let run = replay_to(&trace, &out, &[]);
    assert!(
        failed(&run).contains("line 4: invalid JSON"),
        "{}",
        run.stderr
    );
}

#[test]
fn replay_reads_no_more_of_an_endless_line_than_the_cap() {
    let spec = LaneSpec {
        instance_id: "default".into(),
        block_size_tokens: 256,
        block_bytes: 4096,
        ttl_ns: 0,
        enable_prefix_hash: false,
    };
    let config = EngineConfig {
        trace_block_size_tokens: 256,
        lanes: LaneSet::OnTheFly(spec),
        routing: Routing::ByInstance,
        pool: None,
    };
    let mut engine = Engine::new(config, Policy::FailFast).unwrap();
    let parser = LineParser::new(TraceFormat::Standard, ParseOptions::default());
    let mut line = EndlessLine {
        left: HUNDRED_MB,
        pulled: 0,
    };
    let reader = io::Cursor::new(row(0)).chain(&mut line);
    let error = replay_stream(
        reader,
        &parser,
        &mut engine,
        2,
        ONE_MIB,
        &mut |_| {},
        &mut |_| Ok(()),
    )
    .unwrap_err();
    assert_eq!(error.line_number(), Some(2), "{error}");
    assert!(error.to_string().contains("--max-line-bytes"), "{error}");
    // What was read is all a reader can hold: the cap and one read of 128 KiB at most.
    assert!(
        line.pulled <= ONE_MIB + (256 << 10),
        "read {} bytes of a 100 MB line under a 1 MiB cap",
        line.pulled
    );
}

#[test]
fn trace_conversion_reads_no_more_of_a_line_than_the_cap() {
    // Through the converter's own reader (`BufRead::lines`): it fails at the cap.
    let mut line = EndlessLine {
        left: HUNDRED_MB,
        pulled: 0,
    };
    let capped = LineCapReader::new(
        io::Cursor::new("{\"prompt\":\"w1\"}\n").chain(&mut line),
        ONE_MIB,
    );
    let mut lines = io::BufRead::lines(io::BufReader::new(capped));
    assert!(lines.next().unwrap().is_ok());
    let error = lines.next().unwrap().unwrap_err();
    assert_eq!(
        error.to_string(),
        "line 2: longer than --max-line-bytes (1 MiB); raise it to read longer lines"
    );
    assert!(line.pulled <= ONE_MIB + (64 << 10), "read {}", line.pulled);
}

#[test]
fn trace_fails_on_a_line_past_the_cap_naming_file_line_and_flag() {
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": null, "decoder": null,
        "model": {"type": "WordLevel", "vocab": {"<unk>": 0, "w1": 1}, "unk_token": "<unk>"}
    });
    let tokenizer_path = write_file(dir.path(), "tokenizer.json", &tokenizer.to_string());
    let log = format!(
        "{{\"prompt\":\"w1 w1\"}}\n{{\"prompt\":\"{}\"}}\n",
        "w1 ".repeat(1000)
    );
    let log_path = write_file(dir.path(), "log.jsonl", &log);
    let out = dir.path().join("trace.jsonl");
    let args = |cap: &str| {
        vec![
            "trace".to_owned(),
            log_path.display().to_string(),
            "--out".to_owned(),
            out.display().to_string(),
            "--tokenizer".to_owned(),
            tokenizer_path.display().to_string(),
            "--line-time".to_owned(),
            "--max-line-bytes".to_owned(),
            cap.to_owned(),
        ]
    };
    let run = run_in(None, args("1KiB"));
    let message = failed(&run);
    assert!(
        message.contains(&format!(
            "{}: line 2: longer than --max-line-bytes (1 KiB)",
            log_path.display()
        )),
        "{message}"
    );
    assert!(!out.exists(), "nothing published");
    let run = run_in(None, args("4KiB"));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

/// The monitor's peak resident memory (`VmHWM`), in bytes.
fn peak_rss_bytes(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib * 1024
}

fn requests(report: &Value) -> u64 {
    report["total"]["requests"].as_u64().unwrap_or(0)
}

#[test]
fn watch_skips_and_counts_a_100_mb_line_holding_no_more_than_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let mut file = fs::File::create(&trace).unwrap();
    file.write_all(format!("{}{}", row(0), row(1)).as_bytes())
        .unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..HUNDRED_MB / (1 << 20) {
        file.write_all(&chunk).unwrap();
    }
    file.flush().unwrap();
    let mut monitor = HeadlessMonitor::start([trace.to_str().unwrap(), "--max-line-bytes", "1MiB"]);
    let report = monitor.wait_for("the long line counted, unended", |report| {
        requests(report) == 2 && report["bad_lines"] == 1
    });
    assert_eq!(report["last_error"]["line_number"], 3, "{report}");
    assert!(
        report["last_error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("longer than --max-line-bytes (1 MiB)")),
        "{report}"
    );
    // Its end, then a good line: read as line 4, the long one still counted once.
    file.write_all(format!("\n{}", row(2)).as_bytes()).unwrap();
    file.flush().unwrap();
    monitor.wait_for("the line after it", |report| {
        requests(report) == 3 && report["bad_lines"] == 1
    });
    let peak = peak_rss_bytes(monitor.pid());
    assert!(
        peak < HUNDRED_MB,
        "peak resident memory {peak} bytes: the 100 MB line was held"
    );
    let (status, stderr) = monitor.stop();
    assert!(status.success(), "{stderr}");
}

#[test]
fn watch_standard_input_skips_a_line_past_the_cap() {
    let mut input = row(0).into_bytes();
    input.extend(std::iter::repeat_n(b'x', 3 << 20));
    input.push(b'\n');
    input.extend(row(1).into_bytes());
    let run = crate::common::cli_bin::run_with_stdin(
        None,
        ["watch", "-", "--headless", "--max-line-bytes", "1MiB"],
        input,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let last: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(requests(&last), 2, "{last}");
    assert_eq!(last["bad_lines"], 1, "{last}");
}

#[test]
fn a_complete_line_past_the_cap_in_one_read_is_skipped_too() {
    let dir = tempfile::tempdir().unwrap();
    // Rows 10 and 11 are longer than row 0, whose length (without its newline) is the cap.
    let text = format!("{}{}{}", row(0), row(10), row(11));
    let trace = write_file(dir.path(), "trace.jsonl", &text);
    let cap = (row(0).len() - 1).to_string();
    let (reports, _) =
        crate::common::headless::headless_to_end(&trace, &["--max-line-bytes", &cap]);
    let last = reports.last().unwrap();
    assert_eq!(requests(last), 1, "{last}");
    assert_eq!(last["bad_lines"], 2, "{last}");
}

#[test]
fn a_zero_cap_is_refused() {
    let run = run_in(
        None,
        ["replay", "t.jsonl", "--out", "o", "--max-line-bytes", "0"],
    );
    assert_ne!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("'--max-line-bytes <BYTES>': \"0\": a line cap of 0 bytes"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_posted_line_past_the_cap_is_rejected_with_the_reason() {
    use crate::common::cli_bin::{Announced, litehit, spawn_announcing_port};
    let mut command = litehit();
    command.args([
        "watch",
        "--listen",
        "0",
        "--headless",
        "--max-line-bytes",
        "1KiB",
    ]);
    let Announced {
        mut child, port, ..
    } = spawn_announcing_port(
        &mut command,
        "litehit: listening on http://",
        "/v1/trace",
        std::time::Duration::from_secs(60),
    );
    let body = format!("{}{}\n{}", row(0), "z".repeat(2000), row(1));
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "POST /v1/trace HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let json: Value = serde_json::from_str(&reply[reply.find("\r\n\r\n").unwrap() + 4..]).unwrap();
    assert_eq!(json["accepted"], 2, "{reply}");
    assert_eq!(json["rejected"], 1, "{reply}");
    assert_eq!(json["rejected_lines"][0]["line"], 2, "{reply}");
    assert!(
        json["rejected_lines"][0]["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains("longer than --max-line-bytes (1 KiB)")),
        "{reply}"
    );
}
