//! Helpers for end-to-end tests through the real `litehit` binary: run it, check its exit code
//! and stderr, write generated traces and upstream configs, read facts and query output.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use litehit_core::workload::{SyntheticRequest, Workload, WorkloadConfig};
use serde_json::Value;

/// The published facts file name.
pub const FACTS: &str = "litehit_facts.csv";

/// The facts temp files in `dir` (`.litehit_facts.csv.<pid>.<random>.tmp`), sorted.
pub fn facts_temps(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut temps: Vec<PathBuf> = entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            name.starts_with(&format!(".{FACTS}.")) && name.ends_with(".tmp")
        })
        .collect();
    temps.sort();
    temps
}

/// The exact facts header (REFERENCE §7).
pub const FACTS_HEADER: &str =
    "trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,block_bytes,hit_curve";

/// An `XDG_CONFIG_HOME` that holds no defaults file.
pub const NO_CONFIG_HOME: &str = "/nonexistent/litehit-tests-config-home";

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// A `litehit` command with a fixed environment (no colours, fixed help width, no defaults
/// file: the user's own `~/.config/litehit/config.toml` is never read).
pub fn litehit() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_litehit"));
    command
        .env("COLUMNS", "100")
        .env("XDG_CONFIG_HOME", NO_CONFIG_HOME)
        .env_remove("LITEHIT_CONFIG")
        .env_remove("LITEHIT_THREADS")
        .env("NO_COLOR", "1")
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .stdin(Stdio::null());
    command
}

/// Runs `litehit ARGS` in `cwd` (the test's own directory if `None`) and waits.
pub fn run_in<I, S>(cwd: Option<&Path>, args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = litehit();
    command.args(args);
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let output = command.output().expect("the litehit binary runs");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// Runs `litehit ARGS` in `cwd` with `input` on its standard input (written from another
/// thread, so a large output cannot block the write) and waits.
pub fn run_with_stdin<I, S>(cwd: Option<&Path>, args: I, input: Vec<u8>) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = litehit();
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().expect("the litehit binary runs");
    let mut stdin = child.stdin.take().expect("a piped stdin");
    let feeder = std::thread::spawn(move || {
        use std::io::Write as _;
        stdin.write_all(&input).expect("the child reads its input");
    });
    let output = child.wait_with_output().expect("the litehit binary runs");
    feeder.join().expect("the input was written");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// Runs `litehit replay TRACE --out OUT FLAGS…` and waits: the one spelling of a test's replay,
/// so each test says only what it varies.
pub fn replay_to(trace: &Path, out: &Path, flags: &[&str]) -> Run {
    let mut args: Vec<&OsStr> = vec![
        OsStr::new("replay"),
        trace.as_os_str(),
        OsStr::new("--out"),
        out.as_os_str(),
    ];
    args.extend(flags.iter().map(OsStr::new));
    run_in(None, args)
}

/// Runs `litehit ARGS` and asserts it succeeded (exit 0).
pub fn run_ok<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    ok(run_in(None, args))
}

/// Asserts a run exited 0 and returns it.
pub fn ok(run: Run) -> Run {
    assert_eq!(
        run.code,
        Some(0),
        "expected success\nstdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );
    run
}

/// Asserts a run failed the CLI way: exit 1 (as upstream's tools), one `litehit: <message>`
/// line on stderr.
/// Returns the message.
pub fn failed(run: &Run) -> &str {
    assert_eq!(
        run.code,
        Some(1),
        "expected exit code 1\nstdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );
    let message = run
        .stderr
        .strip_prefix("litehit: ")
        .unwrap_or_else(|| panic!("stderr must start with `litehit: `: {:?}", run.stderr));
    let message = message
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("stderr must end with a newline: {:?}", run.stderr));
    assert!(
        !message.contains('\n'),
        "one line of error, found: {:?}",
        run.stderr
    );
    message
}

/// Asserts that `message` contains every fragment.
pub fn assert_mentions(message: &str, fragments: &[&str]) {
    for fragment in fragments {
        assert!(
            message.contains(fragment),
            "message {message:?} should mention {fragment:?}"
        );
    }
}

/// Asserts that `dir` holds neither a facts file nor its temp file (nor anything else).
pub fn assert_nothing_published(dir: &Path) {
    assert!(!dir.join(FACTS).exists(), "{FACTS} was published");
    let temps = facts_temps(dir);
    assert!(temps.is_empty(), "temp files were left behind: {temps:?}");
    if dir.is_dir() {
        let names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert!(names.is_empty(), "output directory not empty: {names:?}");
    }
}

/// `n` seeded synthetic requests.
pub fn generate(config: WorkloadConfig, n: usize) -> Vec<SyntheticRequest> {
    Workload::new(config).take(n).collect()
}

/// The requests as an upstream standard trace (one `get` row each).
pub fn standard_trace(requests: &[SyntheticRequest]) -> String {
    let mut text = String::new();
    for request in requests {
        request.to_standard_jsonl(&mut text);
    }
    text
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(&path, text).unwrap();
    path
}

/// One standard `get` row.
pub fn get_row(
    instance_id: &str,
    trace_id: &str,
    timestamp_ns: i64,
    keys: &[i64],
    input_len: u64,
) -> String {
    let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
    format!(
        r#"{{"type":"get","instance_id":"{instance_id}","trace_id":"{trace_id}","timestamp_ns":{timestamp_ns},"keys":[{}],"input_len":{input_len}}}"#,
        keys.join(",")
    ) + "\n"
}

/// One standard `write` row.
pub fn write_row(instance_id: &str, trace_id: &str, timestamp_ns: i64, keys: &[i64]) -> String {
    let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
    format!(
        r#"{{"type":"write","instance_id":"{instance_id}","trace_id":"{trace_id}","timestamp_ns":{timestamp_ns},"keys":[{}]}}"#,
        keys.join(",")
    ) + "\n"
}

/// An upstream instance: id, analysis block size and `block_bytes` (one spec of that size).
pub struct InstanceSpec<'a> {
    pub instance_id: &'a str,
    pub block_size: u64,
    pub block_bytes: u64,
}

/// An upstream `OptimizerLiteHitConfig` with one group and `instances`; `extra` is spliced
/// into the top-level object and ends with a comma (e.g. `"fanout_all_instances":true,`) or
/// is empty.
pub fn config_json(
    trace_file_path: &str,
    output_result_path: &str,
    trace_block_size: u64,
    instances: &[InstanceSpec<'_>],
    extra: &str,
) -> String {
    let mut text = format!(
        r#"{{"trace_file_path":"{trace_file_path}","output_result_path":"{output_result_path}","block_size":{trace_block_size},{extra}
 "instance_groups":[{{"name":"g1","capacity_gb":[1.0],"eviction_policy":"lru","ttl_seconds":0,"enable_prefix_hash":false}}],
 "instances":["#
    );
    for (index, instance) in instances.iter().enumerate() {
        if index > 0 {
            text.push(',');
        }
        let _ = write!(
            text,
            r#"
  {{"instance_group_name":"g1","instance_id":"{}","block_size":{},"linear_step":0,
   "location_spec_infos":[{{"name":"kv","size":{}}}],
   "location_spec_groups":[{{"name":"full","spec_names":["kv"]}}],
   "optimizer_state_info":{{"full_location_spec_group_name":"full","linear_location_spec_group_name":""}}}}"#,
            instance.instance_id, instance.block_size, instance.block_bytes
        );
    }
    text.push_str("]}\n");
    text
}

/// One facts row, split naively (generated trace and instance ids hold no `,` or `"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactsLine {
    pub trace_id: String,
    pub instance_id: String,
    pub timestamp_ns: i64,
    pub input_token_len: u64,
    pub block_size_tokens: u64,
    pub block_bytes: u64,
    pub hit_curve: String,
}

/// Reads a published facts file: checks the header and splits the rows.
pub fn read_facts(path: &Path) -> Vec<FactsLine> {
    let text = fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(FACTS_HEADER), "{}", path.display());
    lines
        .map(|line| {
            let (fields, curve) = line
                .split_once(",\"")
                .unwrap_or_else(|| panic!("no quoted hit_curve in {line:?}"));
            let fields: Vec<&str> = fields.split(',').collect();
            assert_eq!(fields.len(), 6, "{line:?}");
            FactsLine {
                trace_id: fields[0].to_owned(),
                instance_id: fields[1].to_owned(),
                timestamp_ns: fields[2].parse().unwrap(),
                input_token_len: fields[3].parse().unwrap(),
                block_size_tokens: fields[4].parse().unwrap(),
                block_bytes: fields[5].parse().unwrap(),
                hit_curve: curve.strip_suffix('"').unwrap().to_owned(),
            }
        })
        .collect()
}

/// `litehit query` output split into row lines and summary lines (parsed JSON).
#[derive(Debug)]
pub struct QueryOutput {
    pub rows: Vec<Value>,
    /// Per-instance summaries, in file order (the overall line excluded).
    pub instance_summaries: Vec<Value>,
    pub overall: Value,
}

/// Parses query JSONL: rows, then per-instance summaries, then exactly one overall line last.
pub fn parse_query_output(text: &str) -> QueryOutput {
    assert!(text.ends_with('\n'), "query output ends with a newline");
    let mut rows = Vec::new();
    let mut summaries = Vec::new();
    for line in text.lines() {
        let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if value.get("summary") == Some(&Value::Bool(true)) {
            summaries.push(value);
        } else {
            assert!(summaries.is_empty(), "a row after a summary: {line}");
            rows.push(value);
        }
    }
    let overall = summaries.pop().expect("an overall summary line");
    assert!(overall.get("instance_id").is_none(), "overall line last");
    for summary in &summaries {
        assert!(summary["instance_id"].is_string(), "{summary}");
    }
    QueryOutput {
        rows,
        instance_summaries: summaries,
        overall,
    }
}

/// A JSON array of unsigned integers.
pub fn u64s(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}")))
        .collect()
}

/// Sends `signal` (`INT`, `TERM`, ...) to process `pid` with `kill`.
pub fn send_signal(pid: u32, signal: &str) {
    let sent = Command::new("kill")
        .args(["-s", signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -s {signal} {pid}");
}

/// Makes a FIFO at `path` with `mkfifo`.
pub fn make_fifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// A spawned `litehit` server and what it prints: the port it announced on stderr, and its
/// stdout lines as they come.
pub struct Announced {
    pub child: std::process::Child,
    pub port: u16,
    pub stdout: std::sync::mpsc::Receiver<String>,
}

/// Spawns `command` (stdout and stderr piped here), echoes its stderr and waits (at most
/// `wait`) for the line `{prefix}ADDR:PORT{suffix}` it prints once its server listens, e.g.
/// `litehit: listening on http://` … `/v1/trace`. Kills it and fails without one.
pub fn spawn_announcing_port(
    command: &mut Command,
    prefix: &'static str,
    suffix: &'static str,
    wait: std::time::Duration,
) -> Announced {
    use std::io::{BufRead as _, BufReader};
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the litehit binary runs");
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().expect("piped stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("watch: {line}");
            if let Some(address) = line.strip_prefix(prefix) {
                let port = address
                    .trim_end_matches(suffix)
                    .rsplit(':')
                    .next()
                    .and_then(|port| port.parse::<u16>().ok());
                let _ = port_tx.send(port);
            }
        }
    });
    let (stdout_tx, stdout) = std::sync::mpsc::channel();
    let out = child.stdout.take().expect("piped stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = stdout_tx.send(line);
        }
    });
    let port = match port_rx.recv_timeout(wait) {
        Ok(Some(port)) => port,
        other => {
            let _ = child.kill();
            panic!("no `{prefix}` line with a port: {other:?}");
        }
    };
    assert_ne!(port, 0, "the real port is printed, not 0");
    Announced {
        child,
        port,
        stdout,
    }
}
