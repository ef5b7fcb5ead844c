//! `watch --listen`: rows posted to `POST /v1/trace` are read exactly once, in each
//! connection's order, through the same engine as a followed file — checked against `litehit
//! replay` of the same rows — and bad requests get a 4xx while the monitor goes on.
//!
//! Every server binds 127.0.0.1 with port 0 (the monitor prints the port); every wait is
//! bounded, so a regression fails instead of hanging.

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::cli_bin::{
    Announced, FactsLine, generate, litehit, read_facts, run_in, send_signal,
    spawn_announcing_port, standard_trace, write_file,
};
use litehit_core::workload::WorkloadConfig;
use serde_json::Value;

/// Longest wait for anything (startup, a reply, the exit): a hang fails the test.
pub(crate) const WAIT: Duration = Duration::from_secs(120);
const CLIENTS: usize = 8;
const ROWS_PER_CLIENT: usize = 10_000;
const ROWS_PER_POST: usize = 500;

/// A headless monitor with `--listen 0` and `--facts-out`, its port read from stderr.
pub(crate) struct Monitor {
    child: Child,
    pub(crate) port: u16,
    stdout: mpsc::Receiver<String>,
    /// Where `--facts-out` writes when the monitor stops.
    facts: PathBuf,
}

impl Monitor {
    pub(crate) fn start(dir: &Path, extra: &[&str]) -> Self {
        Self::start_limited(dir, "", extra)
    }

    /// As [`Monitor::start`], run by `sh -c` after `limits` (`ulimit -n 1024 && `), which
    /// `exec`s the monitor (one process, its pid the child's).
    pub(crate) fn start_limited(dir: &Path, limits: &str, extra: &[&str]) -> Self {
        let facts = dir.join("watch_facts.csv");
        let mut command = litehit_under(limits);
        command
            .args(["watch", "--listen", "0", "--headless", "--interval", "0.2"])
            .arg("--facts-out")
            .arg(&facts)
            .args(extra);
        let Announced {
            child,
            port,
            stdout,
        } = spawn_announcing_port(
            &mut command,
            "litehit: listening on http://",
            "/v1/trace",
            WAIT,
        );
        let monitor = Self {
            child,
            port,
            stdout,
            facts,
        };
        // Its first JSON line: it now runs headless, its signal handlers set (a SIGTERM
        // before them would end it with no line).
        monitor.wait_for("a first JSON line", |_| true);
        monitor
    }

    pub(crate) fn connect(&self) -> Client {
        Client::connect(self.port)
    }

    /// The next headless JSON line that satisfies `done` (bounded by [`WAIT`]).
    pub(crate) fn wait_for(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .stdout
                .recv_timeout(left)
                .unwrap_or_else(|error| panic!("still not {what}: {error}"));
            let json: Value = serde_json::from_str(&line).unwrap();
            if done(&json) {
                return json;
            }
        }
    }

    /// SIGTERM, then the exit code and the last headless JSON line.
    pub(crate) fn stop(mut self) -> (Option<i32>, Value) {
        send_signal(self.child.id(), "TERM");
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("watch did not stop within {WAIT:?} of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Every line up to the end of its output (the reader thread may lag behind the exit).
        let mut last = None;
        loop {
            match self.stdout.recv_timeout(WAIT) {
                Ok(line) => last = Some(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("stdout still open after exit"),
            }
        }
        let last = last.expect("at least one JSON line");
        (status.code(), serde_json::from_str(&last).unwrap())
    }
}

/// [`litehit`] (its environment and stdin) run by `sh -c` after `limits` (`ulimit -n 1024 &&
/// `), which `exec`s it: one process, its pid the child's.
pub(crate) fn litehit_under(limits: &str) -> std::process::Command {
    let plain = litehit();
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg(format!("{limits}exec \"$0\" \"$@\""))
        .arg(plain.get_program())
        .stdin(std::process::Stdio::null());
    for (name, value) in plain.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command
}

impl Drop for Monitor {
    fn drop(&mut self) {
        // A failed test must not leave a monitor running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One keep-alive HTTP/1.1 connection with hand-written requests.
pub(crate) struct Client {
    pub(crate) writer: TcpStream,
    reader: BufReader<TcpStream>,
}

/// A parsed response.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("not JSON: {self:?}"))
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

impl Client {
    pub(crate) fn connect(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("the monitor listens");
        stream.set_read_timeout(Some(WAIT)).unwrap();
        stream.set_write_timeout(Some(WAIT)).unwrap();
        Self {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    pub(crate) fn post(&mut self, body: &[u8], headers: &[(&str, &str)]) -> Reply {
        self.request("POST", "/v1/trace", body, headers)
    }

    pub(crate) fn request(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nContent-Length: {}\r\n",
            body.len()
        );
        let given = |header: &str| {
            headers
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case(header))
        };
        // This host, and posts in JSON lines, unless the test says otherwise.
        if !given("host") {
            head.push_str("Host: 127.0.0.1\r\n");
        }
        if method == "POST" && !given("content-type") {
            head.push_str("Content-Type: application/x-ndjson\r\n");
        }
        for (name, value) in headers {
            let _ = write!(head, "{name}: {value}\r\n"); // writing to a String cannot fail
        }
        head.push_str("\r\n");
        self.writer.write_all(head.as_bytes()).unwrap();
        // A refused body may be answered before it is all sent; the reply is what counts.
        let _ = self.writer.write_all(body);
        self.read_reply()
    }

    /// A body sent in chunks, with no Content-Length announced.
    fn post_chunked(&mut self, body: &[u8]) -> Reply {
        let mut bytes =
            b"POST /v1/trace HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n\
              Transfer-Encoding: chunked\r\n\r\n"
                .to_vec();
        for chunk in body.chunks(1000) {
            bytes.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            bytes.extend_from_slice(chunk);
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(b"0\r\n\r\n");
        let _ = self.writer.write_all(&bytes);
        self.read_reply()
    }

    pub(crate) fn read_reply(&mut self) -> Reply {
        let mut status_line = String::new();
        self.reader.read_line(&mut status_line).unwrap();
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("not a status line: {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("a header line");
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
        let length: usize = headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
            .map(|(_, value)| value.parse().unwrap())
            .expect("replies have a Content-Length");
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).unwrap();
        Reply {
            status,
            headers,
            body: String::from_utf8(body).unwrap(),
        }
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// `litehit replay` of `rows` with the same flags; its facts.
fn replay_facts(dir: &Path, name: &str, rows: &str, flags: &[&str]) -> Vec<FactsLine> {
    let trace = write_file(dir, &format!("{name}.jsonl"), rows);
    let out = dir.join(format!("{name}_out"));
    let mut args = vec![
        "replay".to_owned(),
        trace.display().to_string(),
        "--out".to_owned(),
        out.display().to_string(),
        "--quiet".to_owned(),
    ];
    args.extend(flags.iter().map(|&flag| flag.to_owned()));
    let run = run_in(None, &args);
    assert_eq!(run.code, Some(0), "replay failed: {}", run.stderr);
    read_facts(&out.join("litehit_facts.csv"))
}

fn of_instance<'a>(facts: &'a [FactsLine], instance_id: &str) -> Vec<&'a FactsLine> {
    facts
        .iter()
        .filter(|row| row.instance_id == instance_id)
        .collect()
}

/// A bad line of one of three kinds, each rejected for its own reason.
fn bad_line(index: usize, instance_id: &str) -> (String, &'static str) {
    match index % 3 {
        0 => ("{not json\n".to_owned(), "invalid JSON"),
        1 => (
            format!(
                r#"{{"type":"get","instance_id":"{instance_id}","timestamp_ns":5,"keys":[1,2,3],"input_len":16}}"#
            ) + "\n",
            "expected 1 keys",
        ),
        _ => (
            format!(r#"{{"type":"get","instance_id":"{instance_id}","keys":[1],"input_len":16}}"#)
                + "\n",
            "timestamp_ns",
        ),
    }
}

/// What one client sent and was told.
struct ClientRun {
    instance_id: String,
    /// The good rows, in the order posted (what `replay` must agree with).
    accepted_rows: String,
    accepted: u64,
    rejected: u64,
    posts: u64,
}

/// Posts `ROWS_PER_CLIENT` rows of instance `client-N` (every 7th one bad) over one
/// connection, `ROWS_PER_POST` per body (every 3rd body gzip), checking each reply: the
/// counts and the exact line numbers and reasons of the bad lines.
fn run_client(port: u16, client: usize) -> ClientRun {
    let instance_id = format!("client-{client}");
    let good = generate(
        WorkloadConfig {
            seed: 1000 + client as u64,
            instance_ids: vec![instance_id.clone()],
            live_conversations: 40,
            max_request_blocks: 64,
            ..WorkloadConfig::default()
        },
        ROWS_PER_CLIENT,
    );
    let mut http = Client::connect(port);
    let mut run = ClientRun {
        instance_id: instance_id.clone(),
        accepted_rows: String::new(),
        accepted: 0,
        rejected: 0,
        posts: 0,
    };
    let mut good_rows = good.iter();
    let mut sent = 0;
    while sent < ROWS_PER_CLIENT {
        let mut body = String::new();
        let mut expected_bad = Vec::new();
        let mut expected_good = 0;
        for line in 1..=ROWS_PER_POST {
            if sent == ROWS_PER_CLIENT {
                break;
            }
            if sent % 7 == 3 {
                let (text, reason) = bad_line(sent / 7, &instance_id);
                body.push_str(&text);
                expected_bad.push((line as u64, reason));
            } else {
                let row = standard_trace(std::slice::from_ref(good_rows.next().unwrap()));
                body.push_str(&row);
                run.accepted_rows.push_str(&row);
                expected_good += 1;
            }
            sent += 1;
        }
        let reply = if run.posts % 3 == 2 {
            http.post(&gzip(body.as_bytes()), &[("Content-Encoding", "gzip")])
        } else {
            http.post(body.as_bytes(), &[("Content-Type", "application/x-ndjson")])
        };
        run.posts += 1;
        assert_eq!(reply.status, 200, "{reply:?}");
        let json = reply.json();
        assert_eq!(json["accepted"], expected_good, "{instance_id}");
        assert_eq!(json["rejected"], expected_bad.len(), "{instance_id}");
        let rejected = json["rejected_lines"].as_array().unwrap();
        assert_eq!(rejected.len(), expected_bad.len());
        for (entry, (line, reason)) in rejected.iter().zip(&expected_bad) {
            assert_eq!(entry["line"], *line, "{entry}");
            let text = entry["reason"].as_str().unwrap();
            assert!(
                text.contains(reason),
                "line {line}: {text:?} lacks {reason:?}"
            );
        }
        run.accepted += expected_good;
        run.rejected += expected_bad.len() as u64;
    }
    run
}

#[test]
fn concurrent_clients_are_each_read_exactly_once_in_their_order_as_replay_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--block-size", "16", "--block-bytes", "4096"];
    let monitor = Monitor::start(dir.path(), &flags);
    let port = monitor.port;
    let runs: Vec<ClientRun> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|client| scope.spawn(move || run_client(port, client)))
            .collect();
        clients
            .into_iter()
            .map(|client| client.join().unwrap())
            .collect()
    });
    let facts_path = monitor.facts.clone();
    let (code, last) = monitor.stop();
    assert_eq!(code, Some(0), "{last}");

    let accepted: u64 = runs.iter().map(|run| run.accepted).sum();
    let rejected: u64 = runs.iter().map(|run| run.rejected).sum();
    let posts: u64 = runs.iter().map(|run| run.posts).sum();
    assert_eq!(accepted + rejected, (CLIENTS * ROWS_PER_CLIENT) as u64);
    assert_eq!(rejected, (CLIENTS * ROWS_PER_CLIENT.div_ceil(7)) as u64);
    assert_eq!(last["http"]["requests"], posts);
    assert_eq!(last["http"]["accepted_lines"], accepted);
    assert_eq!(last["http"]["rejected_lines"], rejected);
    assert_eq!(last["bad_lines"], rejected);
    assert_eq!(last["total"]["requests"], accepted);

    let watched = read_facts(&facts_path);
    assert_eq!(
        watched.len() as u64,
        accepted,
        "one facts row per accepted row"
    );
    for run in &runs {
        let replayed = replay_facts(dir.path(), &run.instance_id, &run.accepted_rows, &flags);
        assert_eq!(replayed.len() as u64, run.accepted);
        let replayed: Vec<&FactsLine> = replayed.iter().collect();
        assert!(
            of_instance(&watched, &run.instance_id) == replayed,
            "{}: watch's facts differ from replay's",
            run.instance_id
        );
    }
}

#[test]
fn oversized_bodies_get_413_as_sent_and_once_decompressed_and_the_monitor_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let monitor = Monitor::start(dir.path(), &["--block-size", "16", "--max-body", "1KiB"]);
    let mut http = monitor.connect();
    let row = |index: usize| {
        format!(
            r#"{{"type":"get","instance_id":"a","timestamp_ns":{},"keys":[{index}],"input_len":20}}"#,
            index + 1
        ) + "\n"
    };
    let big: String = (1..=40).map(row).collect();
    assert!(big.len() > 1024);
    let declared = http.post(big.as_bytes(), &[]);
    assert_eq!(declared.status, 413, "{declared:?}");
    assert!(
        declared.json()["error"]
            .as_str()
            .unwrap()
            .contains("over the limit of 1024 bytes (--max-body)"),
        "{declared:?}"
    );
    // No Content-Length to go by: the limit is met while reading.
    let mut http = monitor.connect();
    let chunked = http.post_chunked(big.as_bytes());
    assert_eq!(chunked.status, 413, "{chunked:?}");
    // Small as sent, too large once decompressed.
    let mut http = monitor.connect();
    let packed = gzip(big.as_bytes());
    assert!(packed.len() < 1024);
    let bomb = http.post(&packed, &[("Content-Encoding", "gzip")]);
    assert_eq!(bomb.status, 413, "{bomb:?}");
    assert!(
        bomb.body.contains("decompresses to more than 1024 bytes"),
        "{bomb:?}"
    );
    // At the limit exactly: read.
    let mut http = monitor.connect();
    let mut fits: String = (1..=10).map(row).collect();
    fits.push_str(&" ".repeat(1024 - fits.len()));
    let fits = http.post(fits.as_bytes(), &[]);
    assert_eq!(fits.status, 200, "{fits:?}");
    assert_eq!(fits.json()["accepted"], 10);
    let (code, last) = monitor.stop();
    assert_eq!(code, Some(0));
    assert_eq!(last["total"]["requests"], 10, "refused bodies read nothing");
    assert_eq!(last["http"]["requests"], 1);
}

#[test]
fn malformed_requests_get_a_clear_4xx_and_bad_lines_a_200_with_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let monitor = Monitor::start(dir.path(), &["--block-size", "16"]);
    let good = r#"{"type":"get","instance_id":"a","timestamp_ns":1,"keys":[7],"input_len":20}"#;

    // A refused request may close its connection (its body unread): a new one each time.
    let mut garbage = gzip(good.as_bytes());
    garbage.truncate(garbage.len() / 2);
    let truncated = monitor
        .connect()
        .post(&garbage, &[("Content-Encoding", "gzip")]);
    assert_eq!(truncated.status, 400, "{truncated:?}");
    let not_gzip = monitor
        .connect()
        .post(good.as_bytes(), &[("Content-Encoding", "gzip")]);
    assert_eq!(not_gzip.status, 400, "{not_gzip:?}");
    assert!(not_gzip.body.contains("not valid gzip"), "{not_gzip:?}");
    let brotli = monitor
        .connect()
        .post(good.as_bytes(), &[("Content-Encoding", "br")]);
    assert_eq!(brotli.status, 415, "{brotli:?}");
    let get = monitor.connect().request("GET", "/v1/trace", b"", &[]);
    assert_eq!(get.status, 405, "{get:?}");
    assert_eq!(get.header("allow"), Some("POST"));
    let elsewhere = monitor
        .connect()
        .request("POST", "/v2/trace", good.as_bytes(), &[]);
    assert_eq!(elsewhere.status, 404, "{elsewhere:?}");
    assert!(elsewhere.body.contains("/v1/trace"), "{elsewhere:?}");
    let mut http = monitor.connect();

    // Bad lines are the client's data, not a bad request: 200, each with its reason; a last
    // line without its newline is read; a line that is not UTF-8 is a bad line.
    let mut body = b"\n{\"type\":\"get\"}\n".to_vec();
    body.extend_from_slice(b"\xff\xfe\n");
    body.extend_from_slice(good.as_bytes());
    let reply = http.post(&body, &[]);
    assert_eq!(reply.status, 200, "{reply:?}");
    let json = reply.json();
    assert_eq!(json["accepted"], 1, "{json}");
    assert_eq!(json["rejected"], 2, "{json}");
    assert_eq!(json["rejected_lines"][0]["line"], 2);
    assert_eq!(json["rejected_lines"][1]["line"], 3);
    assert!(
        json["rejected_lines"][1]["reason"]
            .as_str()
            .unwrap()
            .contains("invalid JSON"),
        "{json}"
    );
    let empty = http.post(b"", &[]);
    assert_eq!(empty.status, 200);
    assert_eq!(empty.json()["accepted"], 0);
    let (code, last) = monitor.stop();
    assert_eq!(code, Some(0), "{last}");
    assert_eq!(last["total"]["requests"], 1, "{last}");
    assert_eq!(last["bad_lines"], 2, "{last}");
    // The monitor shows a bad line's reason as the reply gave it.
    assert_eq!(
        last["last_error"]["message"],
        json["rejected_lines"][1]["reason"]
    );
}

/// Runs `docs/sidecar_example.py` (python3) and returns its rows, or `None` to skip (no
/// python3 here; CI has it, and fails instead).
fn sidecar_example_rows(args: &[&str]) -> Option<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/sidecar_example.py");
    let output = match std::process::Command::new("python3")
        .arg(&script)
        .args(args)
        .output()
    {
        Ok(output) => output,
        Err(error) if std::env::var_os("CI").is_none() => {
            eprintln!("skipping: python3 does not run here ({error})");
            return None;
        }
        Err(error) => panic!("python3 is needed in CI: {error}"),
    };
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(String::from_utf8(output.stdout).unwrap())
}

#[test]
fn the_sidecar_example_rows_posted_and_followed_agree_with_replay() {
    let Some(rows) = sidecar_example_rows(&["--demo", "--block-size", "16"]) else {
        return;
    };
    let lines: Vec<&str> = rows.lines().collect();
    assert!(lines.len() >= 10, "{rows}");
    // The tail rule: keys are the full blocks, input_len counts the partial tail too.
    for line in &lines {
        let row: Value = serde_json::from_str(line).unwrap();
        let keys = row["keys"].as_array().unwrap().len() as u64;
        assert_eq!(keys, row["input_len"].as_u64().unwrap() / 16, "{line}");
    }
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--block-size", "16", "--block-bytes", "65536"];
    let replayed = replay_facts(dir.path(), "sidecar", &rows, &flags);
    assert!(
        replayed.iter().any(|row| row.hit_curve != "[]"),
        "the demo conversation shares prefixes: some request must hit"
    );

    // Over HTTP, in three bodies on one connection.
    let monitor = Monitor::start(dir.path(), &flags);
    let mut http = monitor.connect();
    for part in lines.chunks(lines.len().div_ceil(3)) {
        let body = part.join("\n") + "\n";
        let reply = http.post(body.as_bytes(), &[]);
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(reply.json()["rejected"], 0, "{reply:?}");
        assert_eq!(reply.json()["accepted"], part.len());
    }
    let facts_path = monitor.facts.clone();
    let (code, _) = monitor.stop();
    assert_eq!(code, Some(0));
    assert_eq!(read_facts(&facts_path), replayed);

    // Written to a file that `watch` follows: the same.
    let trace = write_file(dir.path(), "sidecar_followed.jsonl", &rows);
    let facts = dir.path().join("followed_facts.csv");
    let run = run_in(
        None,
        [
            "watch",
            &trace.display().to_string(),
            "--headless",
            "--exit-at-eof",
            "--facts-out",
            &facts.display().to_string(),
            "--block-size",
            "16",
            "--block-bytes",
            "65536",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(read_facts(&facts), replayed);
}

#[test]
fn a_listen_only_monitor_refuses_exit_at_eof_and_a_port_in_use_is_said_at_startup() {
    let run = run_in(
        None,
        ["watch", "--listen", "0", "--headless", "--exit-at-eof"],
    );
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("--exit-at-eof needs a TRACE"),
        "{}",
        run.stderr
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let run = run_in(None, ["watch", "--listen", &port, "--headless"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .contains(&format!("listening on 127.0.0.1:{port}")),
        "{}",
        run.stderr
    );
}

#[test]
fn a_followed_file_and_posted_rows_share_one_engine_in_arrival_order() {
    let dir = tempfile::tempdir().unwrap();
    let requests = generate(
        WorkloadConfig {
            seed: 99,
            live_conversations: 20,
            max_request_blocks: 48,
            ..WorkloadConfig::default()
        },
        600,
    );
    let (from_file, posted) = requests.split_at(400);
    let file_rows = standard_trace(from_file);
    let posted_rows = standard_trace(posted);
    let trace = write_file(dir.path(), "followed.jsonl", &file_rows);
    let flags = ["--block-size", "16", "--block-bytes", "4096"];
    let mut args = vec![trace.to_str().unwrap()];
    args.extend(flags);
    let monitor = Monitor::start(dir.path(), &args);
    // The file first: wait until the monitor has read it all, then post the rest.
    let deadline = Instant::now() + WAIT;
    loop {
        let line = monitor
            .stdout
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("a JSON line showing the file read");
        let report: Value = serde_json::from_str(&line).unwrap();
        if report["total"]["requests"] == 400 {
            assert_eq!(report["http"]["requests"], 0, "{report}");
            break;
        }
    }
    let reply = monitor.connect().post(posted_rows.as_bytes(), &[]);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.json()["accepted"], 200);
    let facts_path = monitor.facts.clone();
    let (code, last) = monitor.stop();
    assert_eq!(code, Some(0), "{last}");
    assert_eq!(last["total"]["requests"], 600, "{last}");
    assert_eq!(last["http"]["accepted_lines"], 200, "{last}");
    let replayed = replay_facts(
        dir.path(),
        "file_then_posted",
        &(file_rows + &posted_rows),
        &flags,
    );
    assert_eq!(read_facts(&facts_path), replayed);
}

#[test]
fn bodies_posted_while_paused_wait_for_the_resume_and_are_then_read_in_order() {
    use litehit_live::Command as LiveCommand;
    use litehit_live::http::{HttpListener, HttpOptions, HttpServer};

    let dir = tempfile::tempdir().unwrap();
    let cli = <litehit::cli::Cli as clap::Parser>::parse_from([
        "litehit",
        "watch",
        "--listen",
        "0",
        "--headless",
        "--block-size",
        "16",
    ]);
    let litehit::cli::Command::Watch(args) = cli.command else {
        panic!("watch expected")
    };
    let listener = HttpListener::bind(args.listen.unwrap()).unwrap();
    let port = listener.local_addr().port();
    let mut config = litehit::commands::watch::ingest_config(&args).unwrap();
    config.spill_dir = Some(dir.path().to_path_buf());
    config.frame_period = Duration::from_millis(10);
    config.listen = Some(listener.local_addr());
    let live = litehit_live::ingest::spawn(config).unwrap();
    let server = HttpServer::start(listener, HttpOptions::default(), &live).unwrap();
    let wait_for = |what: &str, done: &dyn Fn(&litehit_live::LiveSnapshot) -> bool| {
        let deadline = Instant::now() + WAIT;
        while !done(&live.latest()) {
            assert!(Instant::now() < deadline, "still not {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    };

    live.send(LiveCommand::TogglePause);
    wait_for("paused", &|snap| {
        snap.source.state == litehit_live::snapshot::FollowState::Paused
    });
    let requests = generate(WorkloadConfig::default(), 30);
    let (first, second) = requests.split_at(10);
    let bodies = [standard_trace(first), standard_trace(second)];
    let client = std::thread::spawn(move || {
        let mut http = Client::connect(port);
        bodies
            .iter()
            .map(|body| http.post(body.as_bytes(), &[]).json())
            .collect::<Vec<_>>()
    });
    wait_for("holding a body", &|snap| {
        snap.http
            .as_ref()
            .is_some_and(|http| http.held_requests == 1)
    });
    let held = live.latest();
    assert_eq!(held.http.as_ref().unwrap().requests, 0);
    assert_eq!(held.health.read_events, 0, "nothing is read while paused");
    assert!(!client.is_finished(), "the client waits for its reply");

    live.send(LiveCommand::TogglePause);
    let replies = client.join().unwrap();
    assert_eq!(replies[0]["accepted"], 10);
    assert_eq!(replies[1]["accepted"], 20);
    drop(server);
    let last = live.shutdown();
    let http = last.http.as_ref().unwrap();
    assert_eq!((http.requests, http.held_requests), (2, 0));
    assert_eq!(last.health.read_events, 30);
    assert_eq!(last.lanes[0].requests, 30);
}
