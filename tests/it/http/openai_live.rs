//! `watch --format openai` on a growing OpenAI request log, through the real binary: lines are
//! appended in bounded steps while a headless monitor runs, bad lines among them; its numbers
//! and its `--facts-out` must be those of `replay --format openai` on the whole log (the bad
//! lines blanked, which keeps every other line's number), and the bad lines skipped, counted
//! and shown. Also: the spellings and the start-up errors of `--format openai`.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::cli_bin::{failed, ok, run_in};
use crate::common::headless::HeadlessMonitor;

const CHATML: &str = "{% for message in messages %}<|im_start|>{{ message['role'] }}\n\
{{ message['content'] }}<|im_end|>\n{% endfor %}\
{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// Capacity slots small enough that the LRU evicts (so the numbers depend on order).
const SLOTS: &str = "6b,24b";

/// A temp dir with a WordLevel `tokenizer.json` (words `w0`..`w99`, roles, ChatML specials)
/// and `chat.jinja`.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let specials = ["<unk>", "<|im_start|>", "<|im_end|>"];
    let mut vocab = serde_json::Map::new();
    for (id, token) in specials
        .iter()
        .map(|token| (*token).to_owned())
        .chain(["system", "user", "assistant"].map(str::to_owned))
        .chain((0..100).map(|word| format!("w{word}")))
        .enumerate()
    {
        vocab.insert(token, json!(id));
    }
    let added: Vec<Value> = specials
        .iter()
        .enumerate()
        .map(|(id, content)| {
            json!({"id": id, "content": content, "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let tokenizer = json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
        "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": null, "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}
    });
    fs::write(dir.path().join("tokenizer.json"), tokenizer.to_string()).unwrap();
    fs::write(dir.path().join("chat.jinja"), CHATML).unwrap();
    dir
}

/// The tokenizing flags of the fixture in `dir`.
fn tokenize_flags(dir: &Path) -> Vec<String> {
    vec![
        "--tokenizer".to_owned(),
        dir.join("tokenizer.json").display().to_string(),
        "--chat-template".to_owned(),
        dir.join("chat.jinja").display().to_string(),
        "--time-unit".to_owned(),
        "ms".to_owned(),
        "--block-size".to_owned(),
        "4".to_owned(),
    ]
}

/// A seeded word stream.
struct Words(u64);

impl Words {
    fn text(&mut self, count: usize) -> String {
        (0..count)
            .map(|_| {
                self.0 = self
                    .0
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                format!("w{}", (self.0 >> 33) % 100)
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The log, line by line: conversations over two instances that share one of three system
/// prompts and re-send their history, and every seventh line a bad one of a different kind.
/// Returns the lines and which of them are bad.
fn log_lines() -> (Vec<String>, Vec<bool>) {
    let mut words = Words(7);
    let systems: Vec<String> = (0..3).map(|_| words.text(9)).collect();
    let bad_kinds = [
        "{not json".to_owned(),
        json!({"request_id": "no-body", "timestamp": 1}).to_string(),
        json!({"request_id": "bad-messages", "timestamp": 1, "messages": "hi"}).to_string(),
        json!({"request_id": "empty", "timestamp": 1, "prompt_token_ids": []}).to_string(),
    ];
    let mut lines = Vec::new();
    let mut bad = Vec::new();
    let mut histories: Vec<Vec<Value>> = Vec::new();
    for request in 0..180_usize {
        if request % 7 == 6 {
            lines.push(bad_kinds[request / 7 % bad_kinds.len()].clone());
            bad.push(true);
            continue;
        }
        // A new conversation every fourth request, else one of the open ones goes on.
        if request % 4 == 0 || histories.is_empty() {
            histories.push(vec![
                json!({"role": "system", "content": systems[request % systems.len()]}),
            ]);
        }
        let conversation = request * 7 % histories.len();
        let history = &mut histories[conversation];
        history.push(json!({"role": "user", "content": words.text(3 + request % 6)}));
        lines.push(
            json!({
                "timestamp": 1_000 + request * 10,
                "request_id": format!("r{request}"),
                "model": format!("m{}", conversation % 2),
                "body": {"messages": history.clone()},
            })
            .to_string(),
        );
        bad.push(false);
        history.push(json!({"role": "assistant", "content": words.text(2 + request % 5)}));
    }
    (lines, bad)
}

fn append(path: &Path, text: &str) {
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// `replay --format openai` of `log` into `dir/name/`: the facts file.
fn replay_openai(dir: &Path, log: &Path, name: &str, spelling: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let mut args = vec!["replay".to_owned()];
    args.extend(spelling.iter().map(|arg| (*arg).to_owned()));
    args.extend([
        log.display().to_string(),
        "--out".to_owned(),
        out.display().to_string(),
        "--quiet".to_owned(),
    ]);
    args.extend(tokenize_flags(dir));
    ok(run_in(None, &args));
    out.join("litehit_facts.csv")
}

/// `query FACTS` at the monitor's slots: the overall summary line.
fn query_summary(facts: &Path) -> Value {
    let run = ok(run_in(
        None,
        [
            "query",
            facts.to_str().unwrap(),
            "-",
            "--capacity-blocks",
            "6,24",
            "--summary-only",
        ],
    ));
    let last = run.stdout.lines().last().unwrap().to_owned();
    serde_json::from_str(&last).unwrap()
}

#[test]
fn a_growing_log_gives_the_numbers_and_facts_of_a_replay_and_counts_bad_lines() {
    let dir = fixture();
    let (lines, bad) = log_lines();
    let bad_count = bad.iter().filter(|is_bad| **is_bad).count() as u64;
    let good_count = lines.len() as u64 - bad_count;
    let log = dir.path().join("gateway.jsonl");
    fs::write(&log, "").unwrap();
    let facts = dir.path().join("live_facts.csv");
    let mut args = vec![
        "--format".to_owned(),
        "openai".to_owned(),
        log.display().to_string(),
        "--capacity-gb".to_owned(),
        SLOTS.to_owned(),
        "--facts-out".to_owned(),
        facts.display().to_string(),
    ];
    args.extend(tokenize_flags(dir.path()));
    let mut monitor = HeadlessMonitor::start(&args);
    monitor.wait_for("the log opened", |report| report["reading"].is_string());
    // Bounded steps, one of them ending mid-line (the rest of the line comes with the next).
    let mut text = String::new();
    for line in &lines {
        text.push_str(line);
        text.push('\n');
    }
    let steps = 9;
    let step = text.len().div_ceil(steps);
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + step).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        append(&log, &text[at..end]);
        at = end;
        std::thread::sleep(Duration::from_millis(60));
    }
    let report = monitor.wait_for("every line read", |report| {
        report["total"]["requests"].as_u64() == Some(good_count)
            && report["bad_lines"].as_u64() == Some(bad_count)
    });
    // The format is the log's own, not the standard rows it becomes.
    assert_eq!(report["format"], "openai", "{report}");
    let (status, stderr) = monitor.stop();
    assert!(status.success(), "{status}: {stderr}");

    // The whole log replayed, its bad lines blanked (so the others keep their numbers).
    let blanked = lines
        .iter()
        .zip(&bad)
        .fold(String::new(), |mut out, (line, is_bad)| {
            if !*is_bad {
                out.push_str(line);
            }
            out.push('\n');
            out
        });
    let whole = dir.path().join("whole.jsonl");
    fs::write(&whole, blanked).unwrap();
    let replayed = replay_openai(dir.path(), &whole, "replayed", &["--format", "openai"]);
    assert_eq!(
        fs::read_to_string(&facts).unwrap(),
        fs::read_to_string(&replayed).unwrap(),
        "the live facts are the replay's, byte for byte"
    );
    let expected = query_summary(&replayed);
    let total = &report["total"];
    assert_eq!(total["requests"], expected["requests"], "{report}");
    assert_eq!(total["input_tokens"], expected["total_input_tokens"]);
    assert_eq!(
        total["hit_tokens"], expected["total_hit_tokens"],
        "{report}"
    );
    let hits: Vec<u64> = crate::common::cli_bin::u64s(&total["hit_tokens"]);
    assert!(hits[0] < hits[1], "the small slot evicts: {report}");
    assert_eq!(report["instances"].as_array().unwrap().len(), 2);

    // Skipped, counted and shown: the last bad line is named with its reason.
    let last_bad = bad.iter().rposition(|is_bad| *is_bad).unwrap() as u64 + 1;
    assert_eq!(report["last_error"]["line_number"], last_bad, "{report}");
    assert!(
        stderr.contains(&format!(
            "{bad_count} bad lines skipped; last: line {last_bad}: "
        )),
        "{stderr}"
    );
}

/// Issue #26: a lone surrogate escape (`"\ud800"`, as Python's `json.dumps` writes one) is
/// read as U+FFFD and counted: live, `lone_surrogates` in the headless JSON says what
/// `trace` says offline (3 here: two in one line, one in another); the
/// lines are kept, not bad.
#[test]
fn lone_surrogates_are_counted_live_as_offline() {
    let dir = fixture();
    let line = |id: &str, at: u64, content: &str| {
        format!(
            r#"{{"timestamp": {at}, "request_id": "{id}", "body": {{"messages": [{{"role": "user", "content": "{content}"}}]}}}}"#
        )
    };
    let text = [
        line("r1", 1000, r"w1 w2 \ud800 w3 w4 \udfff w5 w6"),
        line("r2", 1010, "w1 w2 w3 w4 w5 w6 w7"),
        line("r3", 1020, r"w7 w8 \ud83d\ude00 w9 \udc00 w10 w11"),
    ]
    .join("\n")
        + "\n";
    let log = dir.path().join("gateway.jsonl");
    fs::write(&log, &text).unwrap();
    // Offline: the summary counts 3 (the pair in r3 is no lone surrogate).
    let mut args = vec![
        "trace".to_owned(),
        log.display().to_string(),
        "--out".to_owned(),
        dir.path().join("trace.jsonl").display().to_string(),
    ];
    args.extend(tokenize_flags(dir.path()));
    let offline = ok(run_in(None, &args));
    assert!(
        offline.stderr.contains("3 lone surrogate escapes"),
        "{}",
        offline.stderr
    );
    // Live: the same count, every line a request.
    let mut args = vec![
        "--format".to_owned(),
        "openai".to_owned(),
        log.display().to_string(),
        "--capacity-gb".to_owned(),
        SLOTS.to_owned(),
    ];
    args.extend(tokenize_flags(dir.path()));
    let mut monitor = HeadlessMonitor::start(&args);
    let report = monitor.wait_for("every line read", |report| {
        report["total"]["requests"].as_u64() == Some(3)
    });
    assert_eq!(report["lone_surrogates"], 3, "{report}");
    assert_eq!(report["bad_lines"], 0, "{report}");
    let (status, stderr) = monitor.stop();
    assert!(status.success(), "{status}: {stderr}");
}

#[test]
fn every_spelling_of_an_openai_replay_gives_the_facts_of_trace_then_replay() {
    let dir = fixture();
    let (lines, bad) = log_lines();
    let good: String = lines.iter().zip(&bad).filter(|(_, is_bad)| !**is_bad).fold(
        String::new(),
        |mut out, (line, _)| {
            out.push_str(line);
            out.push('\n');
            out
        },
    );
    let log = dir.path().join("good.jsonl");
    fs::write(&log, good).unwrap();
    let by_format = replay_openai(dir.path(), &log, "by_format", &["--format", "openai"]);
    let by_tokenizer = replay_openai(dir.path(), &log, "by_tokenizer", &[]);
    let trace = dir.path().join("trace.jsonl");
    let mut args = vec![
        "trace".to_owned(),
        log.display().to_string(),
        "--out".to_owned(),
        trace.display().to_string(),
        "--quiet".to_owned(),
    ];
    args.extend(tokenize_flags(dir.path()));
    ok(run_in(None, &args));
    let out = dir.path().join("from_trace");
    ok(run_in(
        None,
        [
            "replay",
            trace.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--block-size",
            "4",
            "--quiet",
        ],
    ));
    let from_trace = fs::read(out.join("litehit_facts.csv")).unwrap();
    assert_eq!(fs::read(&by_format).unwrap(), from_trace);
    assert_eq!(fs::read(&by_tokenizer).unwrap(), from_trace);
}

#[test]
fn format_openai_without_what_it_needs_fails_at_start() {
    let dir = fixture();
    let log = dir.path().join("log.jsonl");
    fs::write(&log, "{\"prompt\": \"w1 w2\"}\n").unwrap();
    let log = log.to_str().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let tokenizer = dir.path().join("tokenizer.json");
    let tokenizer = tokenizer.to_str().unwrap();
    let broken = dir.path().join("broken.jinja");
    fs::write(&broken, "{{ raise_exception('no') }}").unwrap();
    let cases: [(Vec<&str>, &str); 6] = [
        (
            vec!["watch", "--format", "openai", log, "--headless"],
            "--format openai needs --tokenizer",
        ),
        (
            vec!["replay", "--format", "openai", log, "--out", out],
            "--format openai needs --tokenizer",
        ),
        (
            vec![
                "watch",
                "--format",
                "openai",
                log,
                "--headless",
                "--tokenizer",
                "missing.json",
            ],
            "missing.json: cannot load tokenizer",
        ),
        (
            vec![
                "watch",
                "--format",
                "openai",
                log,
                "--headless",
                "--tokenizer",
                tokenizer,
                "--chat-template",
                broken.to_str().unwrap(),
            ],
            "fails on a one-message probe",
        ),
        (
            vec![
                "watch",
                "--format",
                "standard",
                log,
                "--headless",
                "--tokenizer",
                tokenizer,
            ],
            "--tokenizer applies to an OpenAI request log",
        ),
        (
            vec!["replay", log, "--out", out, "--salt-field", "user"],
            "--salt-field applies to an OpenAI request log",
        ),
    ];
    for (args, expected) in cases {
        let run = run_in(None, &args);
        let message = failed(&run);
        assert!(message.contains(expected), "{args:?}: {message}");
    }
    assert!(!Path::new(out).exists(), "nothing was published");
}
