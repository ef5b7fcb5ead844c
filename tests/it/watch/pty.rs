//! End to end: the real binary in tmux. Lines are appended to a trace; the rates on screen
//! must equal an independent replay (design-doc numbers by hand, then `Engine` facts
//! projected one by one with `projector::project`); late slots are retroactive; `s` writes
//! exactly the facts the engine produces for the same lines; `q` restores the terminal.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use litehit_core::config::{SingleInstanceFlags, resolve_single_instance};
use litehit_core::engine::{Engine, Policy};
use litehit_core::facts::RequestFact;
use litehit_core::facts::file::{FACTS_HEADER, append_fact_row};
use litehit_core::formats::{LineOutcome, LineParser, ParseOptions, TraceEvent, TraceFormat};
use litehit_core::projector::{Capacity, project};
use litehit_core::workload::{Workload, WorkloadConfig};

const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;

/// The design document's five requests (block size 4 tokens, 1024 bytes per block).
const DESIGN_DOC_TRACE: &str = concat!(
    r#"{"type":"get","instance_id":"i1","trace_id":"r1","timestamp_ns":1000,"keys":[1,2,3],"input_len":13}"#,
    "\n",
    r#"{"type":"get","instance_id":"i1","trace_id":"r2","timestamp_ns":2000,"keys":[1,2,4],"input_len":12}"#,
    "\n",
    r#"{"type":"get","instance_id":"i1","trace_id":"r3","timestamp_ns":3000,"keys":[1,2,3],"input_len":13}"#,
    "\n",
    r#"{"type":"get","instance_id":"i1","trace_id":"r4","timestamp_ns":4000,"keys":[1,5],"input_len":8}"#,
    "\n",
    r#"{"type":"get","instance_id":"i1","trace_id":"r5","timestamp_ns":5000,"keys":[1,5],"input_len":8}"#,
    "\n",
);

/// A tmux session on a server of its own (socket [`Tmux::socket`], removed when done): tests
/// run in parallel, and a shared server exits with its last session, refusing a
/// `new-session` that another test sends at that moment.
struct Tmux {
    session: String,
}

/// Whether tmux can run this test: without it the test says so and passes, except with `CI`
/// set (`.ci/run` installs tmux), where a missing tmux fails the test instead of hiding it.
pub(crate) fn tmux_ready() -> bool {
    let available = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|out| out.status.success());
    assert!(
        available || std::env::var_os("CI").is_none(),
        "CI is set, so an end-to-end terminal test may not skip: tmux is not installed"
    );
    if !available {
        println!("skipped: tmux is not installed");
    }
    available
}

impl Tmux {
    fn start(session: &str, command: &str) -> Self {
        let status = Command::new("tmux")
            .arg("-S")
            .arg(Self::socket(session))
            .args([
                "new-session",
                "-d",
                "-s",
                session,
                "-x",
                &WIDTH.to_string(),
                "-y",
                &HEIGHT.to_string(),
                // A developer's own defaults file must not change what the test sees.
                "-e",
                "XDG_CONFIG_HOME=/nonexistent/litehit-test-config",
                "-e",
                "LITEHIT_CONFIG=",
            ])
            .arg(command)
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session failed");
        Self {
            session: session.to_owned(),
        }
    }

    /// The socket of `session`'s own server.
    fn socket(session: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("litehit-tmux-{session}"))
    }

    /// A `tmux` command on this session's own server.
    fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        command.arg("-S").arg(Self::socket(&self.session));
        command
    }

    fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let status = self
            .tmux()
            .args(["send-keys", "-t", &self.session])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Types `text` as it is (escape sequences included), as a terminal would send it.
    fn literal(&self, text: &str) {
        let status = self
            .tmux()
            .args(["send-keys", "-t", &self.session, "-l", text])
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn alternate_screen_on(&self) -> bool {
        let out = self
            .tmux()
            .args([
                "display-message",
                "-p",
                "-t",
                &self.session,
                "#{alternate_on}",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    /// Waits (up to 30 s) until `ready` accepts the screen; returns that screen.
    fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
        let _ = std::fs::remove_file(Self::socket(&self.session));
    }
}

/// The table row of `instance`: (requests as shown, every percentage in column order).
fn row(screen: &str, instance: &str) -> Option<(String, Vec<String>)> {
    screen.lines().find_map(|line| {
        let cells: Vec<&str> = line
            .trim_matches('│')
            .trim_start_matches(['▶', ' '])
            .split_whitespace()
            .collect();
        if cells.first() != Some(&instance) || cells.len() < 3 {
            return None;
        }
        let rates = cells
            .iter()
            .filter(|c| c.ends_with('%'))
            .map(|c| (*c).to_owned())
            .collect();
        Some((cells[1].to_owned(), rates))
    })
}

fn percent(numerator: u64, denominator: u64) -> String {
    format!("{:.2}%", numerator as f64 / denominator as f64 * 100.0)
}

fn append(path: &Path, text: &str) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// Facts and per-(instance, capacity) sums from an independent replay of `text`.
struct Expected {
    facts_csv: Vec<u8>,
    /// instance → (input tokens, hit tokens per capacity)
    lanes: Vec<(String, u64, Vec<u64>)>,
}

fn replay(text: &str, capacities: &[Capacity]) -> Expected {
    let flags = SingleInstanceFlags {
        block_size_tokens: Some(4),
        block_bytes: Some(1024),
        ..SingleInstanceFlags::default()
    };
    let config = resolve_single_instance(&flags).unwrap().engine;
    let mut engine = Engine::new(config, Policy::FailFast).unwrap();
    let mut parser = LineParser::new(TraceFormat::Standard, ParseOptions::default());
    let mut event = TraceEvent::default();
    let mut facts_csv = format!("{FACTS_HEADER}\n").into_bytes();
    let mut rows: Vec<(String, u64, u64, u64, RequestFact)> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_number = index as u64 + 1;
        if parser
            .parse_line(line.as_bytes(), line_number, &mut event)
            .unwrap()
            == LineOutcome::Event
        {
            engine
                .process_event(&event, line_number, &mut |row| {
                    append_fact_row(&mut facts_csv, &row);
                    rows.push((
                        row.instance_id.to_owned(),
                        row.input_token_len,
                        row.block_size_tokens,
                        row.block_bytes,
                        row.fact.clone(),
                    ));
                })
                .unwrap();
        }
    }
    let mut lanes: Vec<(String, u64, Vec<u64>)> = Vec::new();
    for (instance, input, block_size, block_bytes, fact) in rows {
        let index = if let Some(index) = lanes.iter().position(|lane| lane.0 == instance) {
            index
        } else {
            lanes.push((instance, 0, vec![0; capacities.len()]));
            lanes.len() - 1
        };
        lanes[index].1 += input;
        for (sum, &capacity) in lanes[index].2.iter_mut().zip(capacities) {
            *sum += project(&fact, capacity, block_bytes) * block_size;
        }
    }
    Expected { facts_csv, lanes }
}

#[test]
#[expect(clippy::too_many_lines, reason = "one scripted session, step by step")]
fn watch_shows_exact_rates_late_slots_and_snapshots_facts() {
    if !tmux_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let facts = dir.path().join("facts.csv");
    append(&trace, DESIGN_DOC_TRACE);
    let command = format!(
        "{} watch {} --block-size 4 --block-bytes 1024 --capacity-gb 1 --facts-out {}; echo EXITED $?; sleep 30",
        env!("CARGO_BIN_EXE_litehit"),
        trace.display(),
        facts.display()
    );
    let tmux = Tmux::start(&format!("litehit-e2e-{}", std::process::id()), &command);

    // Design doc: 1 GB holds everything (= ∞ = 32/54); 2 and 3 blocks give 28/54.
    let screen = tmux.wait_for("the design-doc rows", |s| {
        row(s, "i1").is_some_and(|(requests, _)| requests == "5")
    });
    let (_, rates) = row(&screen, "i1").unwrap();
    assert_eq!(rates, ["59.26%", "59.26%"], "1 GB and ∞");
    assert!(tmux.alternate_screen_on());

    // Slots added after the fact are exact since the start of the trace.
    for slot in ["2b", "3b"] {
        tmux.keys(&["a"]);
        tmux.keys(&[slot, "Enter"]);
    }
    // Wait for the row to have both new columns: "3 blk" alone may be a chart axis label.
    let screen = tmux.wait_for("the late slots", |s| {
        s.contains("2 blk")
            && s.contains("3 blk")
            && row(s, "i1").is_some_and(|(_, rates)| rates.len() == 4)
    });
    let (_, rates) = row(&screen, "i1").unwrap();
    assert_eq!(
        rates,
        ["51.85%", "51.85%", "59.26%", "59.26%"],
        "2 blk, 3 blk, 1 GiB (1048576 blocks of 1 KiB), ∞: by block count"
    );

    // A generated workload on two instances, appended in ragged pieces (partial lines).
    let mut generated = String::new();
    let workload = Workload::new(WorkloadConfig {
        seed: 7,
        instance_ids: vec!["i1".into(), "i2".into()],
        block_size_tokens: 4,
        live_conversations: 40,
        max_request_blocks: 60,
        ..WorkloadConfig::default()
    });
    for request in workload.take(3000) {
        request.to_standard_jsonl(&mut generated);
    }
    let bytes = generated.as_bytes();
    let mut start = 0;
    let mut piece = 1;
    while start < bytes.len() {
        let end = (start + piece * 997).min(bytes.len());
        append(&trace, std::str::from_utf8(&bytes[start..end]).unwrap());
        start = end;
        piece = piece % 7 + 1;
    }
    let all = format!("{DESIGN_DOC_TRACE}{generated}");
    // In the table's order: by block count.
    let capacities = [
        Capacity::Blocks(2),
        Capacity::Blocks(3),
        Capacity::Gigabytes(1.0),
        Capacity::Infinite,
    ];
    let expected = replay(&all, &capacities);
    let total_requests = 5 + 3000;
    let screen = tmux.wait_for("every appended request", |s| {
        row(s, "total").is_some_and(|(requests, _)| requests == total_requests.to_string())
    });
    let mut total_input = 0;
    let mut total_hits = vec![0; capacities.len()];
    for (instance, input, hits) in &expected.lanes {
        let shown = row(&screen, instance).unwrap().1;
        let wanted: Vec<String> = hits.iter().map(|&h| percent(h, *input)).collect();
        assert_eq!(shown, wanted, "instance {instance}");
        total_input += input;
        for (sum, hit) in total_hits.iter_mut().zip(hits) {
            *sum += hit;
        }
    }
    let wanted: Vec<String> = total_hits
        .iter()
        .map(|&h| percent(h, total_input))
        .collect();
    assert_eq!(
        row(&screen, "total").unwrap().1,
        wanted,
        "totals = Σ hit tokens / Σ input tokens"
    );

    // `s`: the facts file equals the engine's facts for the same lines, byte for byte.
    tmux.keys(&["s"]);
    tmux.wait_for("the facts snapshot", |s| {
        s.contains("wrote 3005 facts rows")
    });
    let written = std::fs::read(&facts).unwrap();
    assert!(
        written == expected.facts_csv,
        "facts snapshot differs from the engine's facts"
    );

    // `q`: the TUI leaves the alternate screen and prints its summary.
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("the exit", |s| s.contains("EXITED"));
    assert!(
        screen.contains("EXITED 0"),
        "exit status; screen:\n{screen}"
    );
    assert!(
        !tmux.alternate_screen_on(),
        "terminal left in the alternate screen"
    );
    assert!(
        !screen.contains("┌ instances"),
        "TUI still drawn after quit:\n{screen}"
    );
    assert!(
        screen.contains("3005 requests"),
        "summary printed after restore:\n{screen}"
    );
}

/// Demo traces (`litehit-demo-*`) in `dir`.
fn demo_traces_in(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("litehit-demo-")
        })
        .count()
}

#[test]
fn sigterm_quits_the_demo_like_q_and_removes_its_trace() {
    if !tmux_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    // The demo writes its trace under TMPDIR; `exec` keeps the recorded pid the demo's own.
    let command = format!(
        "echo $$ > {}; TMPDIR={} exec {} demo --rate 200",
        pid_file.display(),
        dir.path().display(),
        env!("CARGO_BIN_EXE_litehit"),
    );
    let tmux = Tmux::start(
        &format!("litehit-sigterm-{}", std::process::id()),
        &format!("sh -c '{command}'; echo EXITED $?; sleep 30"),
    );
    tmux.wait_for("the demo's rows", |s| s.contains("instance-0"));
    let demo_traces = || demo_traces_in(dir.path());
    assert_eq!(demo_traces(), 1, "the demo writes its trace");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    crate::common::cli_bin::send_signal(pid.trim().parse().unwrap(), "TERM");
    let screen = tmux.wait_for("the exit", |s| s.contains("EXITED"));
    assert!(screen.contains("EXITED 0"), "{screen}");
    assert!(
        screen.contains("token hit rate at"),
        "the summary is printed: {screen}"
    );
    assert!(!tmux.alternate_screen_on(), "the terminal is restored");
    assert_eq!(demo_traces(), 0, "the generated trace is removed");
}

#[test]
fn closing_the_terminal_still_removes_the_demo_trace() {
    if !tmux_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "sh -c 'TMPDIR={} exec {} demo --rate 200'",
        dir.path().display(),
        env!("CARGO_BIN_EXE_litehit"),
    );
    let session = format!("litehit-hangup-{}", std::process::id());
    let tmux = Tmux::start(&session, &command);
    tmux.wait_for("the demo's rows", |s| s.contains("instance-0"));
    let demo_traces = || demo_traces_in(dir.path());
    assert_eq!(demo_traces(), 1);
    // Closing the terminal: SIGHUP, and every later write to it fails.
    drop(tmux);
    let deadline = Instant::now() + Duration::from_secs(20);
    while demo_traces() > 0 {
        assert!(
            Instant::now() < deadline,
            "the demo trace was left behind after the terminal closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn quitting_reads_an_unterminated_last_line_as_replay_does() {
    if !tmux_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    // The design document's five requests, the last one without its newline.
    append(&trace, DESIGN_DOC_TRACE.trim_end());
    let command = format!(
        "sh -c '{} watch {} --block-size 4 --block-bytes 1024 --capacity-gb 1; echo EXITED $?; sleep 30'",
        env!("CARGO_BIN_EXE_litehit"),
        trace.display(),
    );
    let session = format!("litehit-unterminated-{}", std::process::id());
    let tmux = Tmux::start(&session, &command);
    tmux.wait_for("four requests", |s| {
        row(s, "i1").is_some_and(|(requests, _)| requests == "4")
    });
    // Four facts rows in no file (no --facts-out): `q` asks first, `y` quits anyway.
    tmux.keys(&["q"]);
    tmux.wait_for("the quit question", |s| {
        s.contains("4 facts rows are in no file")
    });
    tmux.keys(&["y"]);
    let screen = tmux.wait_for("the exit summary", |s| s.contains("EXITED"));
    assert!(
        screen.contains("5 requests, 0 bad lines"),
        "the last line counts at quit:\n{screen}"
    );
}

/// `watch TRACE --facts-out FACTS` in tmux, its pid written to `pid_file`; the screen ends
/// with `EXITED <status>`.
fn watch_with_facts_out(session: &str, trace: &Path, facts: &Path, pid_file: &Path) -> Tmux {
    let command = format!(
        "echo $$ > {}; exec {} watch {} --block-size 4 --block-bytes 1024 --capacity-gb 1 --facts-out {}",
        pid_file.display(),
        env!("CARGO_BIN_EXE_litehit"),
        trace.display(),
        facts.display(),
    );
    Tmux::start(
        &format!("{session}-{}", std::process::id()),
        &format!("sh -c '{command}'; echo EXITED $?; sleep 30"),
    )
}

/// The design document's trace and a generated two-instance workload after it.
fn design_doc_and_workload() -> String {
    let mut text = DESIGN_DOC_TRACE.to_owned();
    let workload = Workload::new(WorkloadConfig {
        seed: 11,
        instance_ids: vec!["i1".into(), "i2".into()],
        block_size_tokens: 4,
        live_conversations: 20,
        max_request_blocks: 40,
        ..WorkloadConfig::default()
    });
    for request in workload.take(500) {
        request.to_standard_jsonl(&mut text);
    }
    text
}

#[test]
fn quit_writes_facts_out_without_asking_and_they_equal_replay() {
    if !tmux_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let facts = dir.path().join("facts.csv");
    let text = design_doc_and_workload();
    append(&trace, &text);
    let tmux = watch_with_facts_out(
        "litehit-quit-facts",
        &trace,
        &facts,
        &dir.path().join("pid"),
    );
    tmux.wait_for("every request", |s| {
        row(s, "total").is_some_and(|(requests, _)| requests == "505")
    });
    assert!(!facts.exists(), "nothing is written before quitting");
    // Sorted by the 1 GiB slot (requests, input tokens, then the slot), then filtered to i2.
    tmux.keys(&["o", "o", "o"]);
    tmux.wait_for("the sorted table", |s| s.contains("by 1 GiB ↓"));
    tmux.keys(&["/", "i2", "Enter"]);
    let screen = tmux.wait_for("the filtered table", |s| s.contains("/i2: 1 of 2"));
    assert!(row(&screen, "i2").is_some(), "{screen}");
    assert!(row(&screen, "i1").is_none(), "filtered out: {screen}");
    // Live refresh rate and block bytes: the title and the geometry line follow; the facts
    // keep the block bytes the run started with (compared with replay's below).
    tmux.keys(&["+"]);
    tmux.wait_for("the faster refresh", |s| s.contains("· 20 fps"));
    tmux.keys(&["b"]);
    tmux.keys(&["2KiB", "Enter"]);
    tmux.wait_for("the new geometry", |s| s.contains("2.00 KiB/block"));
    // The notice log holds the file's opening after it faded from the status line.
    tmux.keys(&["!"]);
    tmux.wait_for("the notice log", |s| s.contains("notices, newest first"));
    tmux.keys(&["Escape"]);
    tmux.wait_for("the log closed", |s| !s.contains("notices, newest first"));
    // --facts-out: quitting loses nothing, so `q` does not ask.
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("the exit", |s| s.contains("EXITED"));
    assert!(screen.contains("EXITED 0"), "{screen}");
    assert!(
        screen.contains("(505 rows)") && screen.contains("facts written to"),
        "where the facts went: {screen}"
    );
    let expected = replay(&text, &[Capacity::Infinite]);
    assert!(
        std::fs::read(&facts).unwrap() == expected.facts_csv,
        "the facts written on quit differ from replay's"
    );
}

#[test]
fn sigterm_writes_facts_out_in_the_tui_too() {
    if !tmux_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let facts = dir.path().join("facts.csv");
    let pid_file = dir.path().join("pid");
    append(&trace, DESIGN_DOC_TRACE);
    let tmux = watch_with_facts_out("litehit-term-facts", &trace, &facts, &pid_file);
    tmux.wait_for("the design-doc rows", |s| {
        row(s, "i1").is_some_and(|(requests, _)| requests == "5")
    });
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    crate::common::cli_bin::send_signal(pid.trim().parse().unwrap(), "TERM");
    let screen = tmux.wait_for("the exit", |s| s.contains("EXITED"));
    assert!(screen.contains("EXITED 0"), "{screen}");
    assert!(!tmux.alternate_screen_on(), "the terminal is restored");
    let expected = replay(DESIGN_DOC_TRACE, &[Capacity::Infinite]);
    assert!(
        std::fs::read(&facts).unwrap() == expected.facts_csv,
        "the facts written on SIGTERM differ from replay's"
    );
}

/// The screen line (0-based) of `instance`'s table row, and whether it is the selected one.
fn row_line(screen: &str, instance: &str) -> Option<(usize, bool)> {
    screen.lines().enumerate().find_map(|(index, line)| {
        let cells = line.trim_start_matches('│');
        let selected = cells.starts_with('▶');
        let id = cells.trim_start_matches('▶').split_whitespace().next()?;
        (id == instance && line.contains('%')).then_some((index, selected))
    })
}

#[test]
fn a_click_selects_a_row_and_the_wheel_scrolls_in_a_real_terminal() {
    if !tmux_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    append(&trace, &design_doc_and_workload());
    let command = format!(
        "{} watch {} --block-size 4 --block-bytes 1024 --capacity-gb 1 --no-facts; sleep 30",
        env!("CARGO_BIN_EXE_litehit"),
        trace.display(),
    );
    let tmux = Tmux::start(&format!("litehit-mouse-{}", std::process::id()), &command);
    let screen = tmux.wait_for("both instances and the total", |s| {
        row_line(s, "i2").is_some() && row_line(s, "total").is_some()
    });
    assert_eq!(
        row_line(&screen, "i1").map(|(_, selected)| selected),
        Some(true)
    );
    // An SGR mouse press and release on i2's row (1-based cells, column 5), as a terminal
    // sends it once the monitor has turned mouse reporting on.
    let (line, _) = row_line(&screen, "i2").unwrap();
    let click = format!("\x1b[<0;5;{row}M\x1b[<0;5;{row}m", row = line + 1);
    tmux.literal(&click);
    tmux.wait_for("i2 selected by the click", |s| {
        row_line(s, "i2").is_some_and(|(_, selected)| selected)
    });
    // The wheel moves the selection down (to the pinned totals row) and back up.
    tmux.literal(&format!("\x1b[<65;5;{}M", line + 1));
    tmux.wait_for("the wheel moving to the totals row", |s| {
        row_line(s, "total").is_some_and(|(_, selected)| selected)
    });
    tmux.literal(&format!("\x1b[<64;5;{}M", line + 1));
    tmux.wait_for("the wheel moving back up", |s| {
        row_line(s, "total").is_some_and(|(_, selected)| !selected)
    });
}
