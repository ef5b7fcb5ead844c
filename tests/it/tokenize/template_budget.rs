//! Chat templates are untrusted (they come with downloaded model folders): each render has a
//! fuel budget (steps) and a memory budget (the renderer's child process under `RLIMIT_AS`).
//! <https://github.com/litehit/litehit/issues/27> (High 5): nested `range(100000)` loops hung,
//! and a string doubled 40 times reached 21 GB, or aborted (exit 134) under `ulimit -v 2G`.
//! Here the real binary runs under `timeout` and `ulimit -v`: exit 1 with a message naming the
//! template, never a hang (124) or an abort (134).

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::headless::HeadlessMonitor;

/// One doubling per instruction, no output: 2^40 bytes unless stopped.
const DOUBLING: &str = "{% set ns = namespace(s='x') %}{% for i in range(40) %}\
{% set ns.s = ns.s ~ ns.s %}{% endfor %}";

/// 10^10 empty iterations.
const LOOPS: &str = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}\
{% endfor %}";

const CHATML: &str = "{% for message in messages %}<|im_start|>{{ message['role'] }}\n\
{{ message['content'] }}<|im_end|>\n{% endfor %}";

/// A template that is a bomb only for a message whose content is `boom`.
fn late_bomb(bomb: &str) -> String {
    format!(
        "{{% for m in messages %}}{{% if m.content == 'boom' %}}{bomb}{{% endif %}}{{% endfor %}}{CHATML}"
    )
}

const LOG: &str = "{\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}\n\
{\"messages\":[{\"role\":\"user\",\"content\":\"boom\"}]}\n\
{\"messages\":[{\"role\":\"user\",\"content\":\"and again\"}]}\n";

/// `litehit trace LOG --chat-template TEMPLATE` under `ulimit -v 2 GiB` and `timeout 120`:
/// (exit code, stderr).
fn trace_under_limits(dir: &Path, template: &str) -> (Option<i32>, String) {
    let template_path = dir.join("chat.jinja");
    fs::write(&template_path, template).unwrap();
    let log = dir.join("log.jsonl");
    fs::write(&log, LOG).unwrap();
    let output = Command::new("sh")
        .arg("-c")
        .arg(
            "ulimit -v 2097152 && exec timeout 120 \"$0\" trace \"$1\" --tokenizer \
             tiktoken:cl100k_base --chat-template \"$2\" --line-time --out \"$3\"",
        )
        .arg(env!("CARGO_BIN_EXE_litehit"))
        .arg(&log)
        .arg(&template_path)
        .arg(dir.join("trace.jsonl"))
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_doubling_string_stops_at_the_memory_budget_naming_the_template() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = trace_under_limits(dir.path(), &format!("{DOUBLING}{CHATML}"));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("chat.jinja: chat template: rendering on the probe conversation exceeded the template memory budget (1024 MiB)"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("trace.jsonl").exists(),
        "nothing published"
    );
    // A bomb set off by one request only: that line is named.
    let (code, stderr) = trace_under_limits(dir.path(), &late_bomb(DOUBLING));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("log.jsonl:2: field \"messages\": chat template ")
            && stderr
                .contains("chat.jinja: rendering this request exceeded the template memory budget"),
        "{stderr}"
    );
}

#[test]
fn nested_loops_run_out_of_fuel_naming_the_template() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = trace_under_limits(dir.path(), &format!("{LOOPS}{CHATML}"));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("chat.jinja: chat template: fails on a one-message probe conversation: engine ran out of fuel"),
        "{stderr}"
    );
    let (code, stderr) = trace_under_limits(dir.path(), &late_bomb(LOOPS));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("log.jsonl:2: field \"messages\": chat template ")
            && stderr.contains("engine ran out of fuel"),
        "{stderr}"
    );
}

/// Live, a request that sets a bomb off is skipped and counted; the next ones are converted
/// (the renderer is started again).
#[test]
fn live_a_bomb_request_is_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("chat.jinja");
    fs::write(&template, late_bomb(DOUBLING)).unwrap();
    let log = dir.path().join("gateway.jsonl");
    fs::write(&log, LOG).unwrap();
    let args = [
        "--format".to_owned(),
        "openai".to_owned(),
        log.display().to_string(),
        "--capacity-gb".to_owned(),
        "1".to_owned(),
        "--tokenizer".to_owned(),
        "tiktoken:cl100k_base".to_owned(),
        "--chat-template".to_owned(),
        template.display().to_string(),
        "--line-time".to_owned(),
    ];
    let mut monitor = HeadlessMonitor::start(&args);
    let report = monitor.wait_for("every line read", |report| {
        report["total"]["requests"].as_u64() == Some(2) && report["bad_lines"].as_u64() == Some(1)
    });
    assert_eq!(report["last_error"]["line_number"], 2, "{report}");
    let (status, stderr) = monitor.stop();
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        stderr.contains("exceeded the template memory budget"),
        "{stderr}"
    );
}
