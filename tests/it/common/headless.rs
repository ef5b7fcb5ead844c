//! A headless `litehit watch` run by a test: its JSON report lines read on a thread, waited
//! for with a bound, stopped with SIGTERM, and killed if the test fails first.

use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cli_bin::{litehit, send_signal};

/// The longest a test waits for one report line, or for the monitor to stop.
const WAIT: Duration = Duration::from_secs(60);

pub struct HeadlessMonitor {
    child: Option<Child>,
    lines: Receiver<Value>,
    stderr: Receiver<String>,
    last: Option<Value>,
}

impl HeadlessMonitor {
    /// `litehit watch ARGS --headless --interval 0.1`.
    pub fn start<I, S>(args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut child = litehit()
            .arg("watch")
            .args(args)
            .args(["--headless", "--interval", "0.1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the litehit binary runs");
        let (tx, lines) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().expect("a piped stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if let Ok(value) = serde_json::from_str::<Value>(&line) {
                    let _ = tx.send(value);
                }
            }
        });
        let (tx, stderr) = std::sync::mpsc::channel();
        let mut err = child.stderr.take().expect("a piped stderr");
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut text);
            let _ = tx.send(text);
        });
        Self {
            child: Some(child),
            lines,
            stderr,
            last: None,
        }
    }

    /// The monitor's process id (to send it signals).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("not stopped yet").id()
    }

    /// Whether the monitor is still running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| child.try_wait().unwrap().is_none())
    }

    /// Waits (at most 60 s) until a report line satisfies `done`; returns it.
    pub fn wait_for(&mut self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(last) = &self.last
                && done(last)
            {
                return last.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting for {what}: {:?}",
                self.last
            );
            if let Ok(value) = self.lines.recv_timeout(left) {
                self.last = Some(value);
            }
        }
    }

    /// [`Self::stop`] with `signal` (`TERM`, `INT`), and the last report line printed
    /// (`None` if none came at all).
    pub fn stop_with(mut self, signal: &str) -> (ExitStatus, String, Option<Value>) {
        let (status, stderr) = self.signal_and_wait(signal);
        // The process is gone: its stdout reader ends, so this loop does too (bounded anyway).
        let deadline = Instant::now() + WAIT;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(value) => self.last = Some(value),
                Err(_) => break,
            }
        }
        (status, stderr, self.last.take())
    }

    /// SIGTERM; the exit status and stderr (both bounded).
    pub fn stop(mut self) -> (ExitStatus, String) {
        self.signal_and_wait("TERM")
    }

    fn signal_and_wait(&mut self, signal: &str) -> (ExitStatus, String) {
        let mut child = self.child.take().expect("not stopped yet");
        send_signal(child.id(), signal);
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                panic!("the monitor did not stop");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stderr = self
            .stderr
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_default();
        (status, stderr)
    }
}

impl Drop for HeadlessMonitor {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `litehit watch TRACE --headless --exit-at-eof --interval 0.1 EXTRA…` run to its end: every
/// JSON line and stderr (the run must exit 0).
pub fn headless_to_end(trace: &std::path::Path, extra: &[&str]) -> (Vec<Value>, String) {
    let mut args = vec![
        "watch".to_owned(),
        trace.display().to_string(),
        "--headless".to_owned(),
        "--exit-at-eof".to_owned(),
        "--interval".to_owned(),
        "0.1".to_owned(),
    ];
    args.extend(extra.iter().map(|&flag| flag.to_owned()));
    let run = super::cli_bin::run_in(None, &args);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines = run
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (lines, run.stderr)
}

/// The `instances[]` entry of a headless report line with this `instance_id` (the pool's
/// included).
pub fn instance_entry<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|instance| instance["instance_id"] == id)
        .unwrap_or_else(|| panic!("{id} missing from {report}"))
}
