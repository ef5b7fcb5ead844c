//! `litehit trace`: OpenAI request logs → block traces through a tokenizer built here (a
//! WordLevel `tokenizer.json` written by hand, loaded by the `tokenizers` crate for the
//! expected counts) and a ChatML template; the hits through `replay` + `query`; tiktoken
//! counts against published ones.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::cli_bin::{failed, ok, replay_to, run_in, write_file};

/// Block size of these tests: small, so prompts of a few words span several blocks.
const BLOCK: u64 = 4;

const CHATML: &str = "{% for message in messages %}<|im_start|>{{ message['role'] }}\n\
{{ message['content'] }}<|im_end|>\n{% endfor %}\
{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// A temp dir with `tokenizer.json` (words `w0`..`w99`, roles, ChatML specials, a `<s>`
/// BOS added by the post-processor) and `chat.jinja`.
pub(super) struct Fixture {
    pub(super) dir: tempfile::TempDir,
}

impl Fixture {
    pub(super) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut vocab = serde_json::Map::new();
        let specials = ["<unk>", "<|im_start|>", "<|im_end|>", "<s>"];
        let words = ["system", "user", "assistant"];
        let mut id = 0_u64;
        for token in specials.iter().chain(&words) {
            vocab.insert((*token).to_owned(), json!(id));
            id += 1;
        }
        for word in 0..100 {
            vocab.insert(format!("w{word}"), json!(id));
            id += 1;
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
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": added,
            "normalizer": null,
            "pre_tokenizer": {"type": "WhitespaceSplit"},
            "post_processor": {
                "type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                         {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"<s>": {"id": "<s>", "ids": [3], "tokens": ["<s>"]}}
            },
            "decoder": null,
            "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}
        });
        fs::write(dir.path().join("tokenizer.json"), tokenizer.to_string()).unwrap();
        fs::write(dir.path().join("chat.jinja"), CHATML).unwrap();
        Self { dir }
    }

    pub(super) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The tokenizer's own count of `text`, through the `tokenizers` crate directly.
    pub(super) fn count(&self, text: &str, add_special: bool) -> u64 {
        let tokenizer = tokenizers::Tokenizer::from_file(self.path("tokenizer.json")).unwrap();
        tokenizer.encode(text, add_special).unwrap().get_ids().len() as u64
    }

    /// `litehit trace LOG --out trace.jsonl` with the fixture's tokenizer and template, and
    /// the rows written.
    pub(super) fn trace(&self, log: &str, extra: &[&str]) -> Vec<Value> {
        let log_path = write_file(self.dir.path(), "log.jsonl", log);
        let out = self.path("trace.jsonl");
        let _ = fs::remove_file(&out);
        let mut args = self.trace_args(&log_path, &out);
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        ok(run_in(None, &args));
        fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    pub(super) fn trace_args(&self, log: &Path, out: &Path) -> Vec<String> {
        vec![
            "trace".to_owned(),
            log.display().to_string(),
            "--out".to_owned(),
            out.display().to_string(),
            "--tokenizer".to_owned(),
            self.path("tokenizer.json").display().to_string(),
            "--chat-template".to_owned(),
            self.path("chat.jinja").display().to_string(),
            "--block-size".to_owned(),
            BLOCK.to_string(),
            "--line-time".to_owned(),
            "--quiet".to_owned(),
        ]
    }

    /// Per-request hit blocks at unlimited capacity: `replay` then `query`.
    pub(super) fn hits(&self, trace: &Path) -> Vec<u64> {
        let out = self.path("replay");
        let _ = fs::remove_dir_all(&out);
        ok(replay_to(
            trace,
            &out,
            &["--block-size", &BLOCK.to_string(), "--quiet"],
        ));
        let facts = out.join("litehit_facts.csv");
        let run = ok(run_in(None, ["query", facts.to_str().unwrap(), "-", "-1"]));
        let output =
            crate::common::cli_bin::parse_query_output(&run.stdout.replace("-inf", "null"));
        output
            .rows
            .iter()
            .map(|row| {
                row["hit_blocks"][0]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{row}"))
            })
            .collect()
    }
}

/// ChatML as the template renders it, written out by hand.
pub(super) fn chatml(messages: &[(&str, &str)], generation_prompt: bool) -> String {
    let mut text = String::new();
    for (role, content) in messages {
        for part in ["<|im_start|>", role, "\n", content, "<|im_end|>\n"] {
            text.push_str(part);
        }
    }
    if generation_prompt {
        text.push_str("<|im_start|>assistant\n");
    }
    text
}

fn words(range: std::ops::Range<u32>) -> String {
    range
        .map(|word| format!("w{word}"))
        .collect::<Vec<_>>()
        .join(" ")
}

pub(super) fn chat_line(id: &str, messages: &[(&str, &str)], extra: &Value) -> String {
    let messages: Vec<Value> = messages
        .iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({"request_id": id, "model": "m", "messages": messages});
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    body.to_string()
}

pub(super) fn input_len(row: &Value) -> u64 {
    row["input_len"].as_u64().unwrap()
}

pub(super) fn keys(row: &Value) -> Vec<i64> {
    row["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key.as_i64().unwrap())
        .collect()
}

#[test]
fn token_counts_equal_the_tokenizers_own_and_the_tail_has_no_key() {
    let fixture = Fixture::new();
    let chat = [("system", "w1 w2 w3"), ("user", "w4 w5 w6 w7 w8")];
    let log = [
        chat_line("chat", &chat, &json!({})),
        json!({"request_id": "completion", "prompt": "w9 w10 w11 w12 w13 w14 w15"}).to_string(),
        json!({"request_id": "ids", "prompt": [5, 6, 7, 8, 9]}).to_string(),
        json!({"request_id": "pretokenized", "prompt_token_ids": [5, 6, 7]}).to_string(),
        json!({"timestamp": 1, "body": {"prompt": "w1 w2 w3 w4 w5"}}).to_string(),
    ]
    .join("\n");
    let rows = fixture.trace(&log, &[]);
    let expected = [
        fixture.count(&chatml(&chat, true), false),
        fixture.count("w9 w10 w11 w12 w13 w14 w15", true),
        5,
        3,
        fixture.count("w1 w2 w3 w4 w5", true),
    ];
    // ChatML of 2 messages: 2 × (start, role, end) + 8 words + start, assistant = 16.
    assert_eq!(expected[0], 16);
    // Auto: the BOS goes on a completion prompt, not on a chat prompt.
    assert_eq!(expected[1], 8);
    assert_eq!(rows.iter().map(input_len).collect::<Vec<_>>(), expected);
    for row in &rows {
        assert_eq!(keys(row).len() as u64, input_len(row) / BLOCK, "{row}");
        assert_eq!(row["type"], "request");
    }
    assert_eq!(rows[0]["trace_id"], "chat");
    assert_eq!(rows[0]["instance_id"], "m");
    assert_eq!(rows[4]["trace_id"], "line-5");
    assert_eq!(rows[4]["instance_id"], "instance");
    assert_eq!(rows[2]["timestamp_ns"], 3);

    let never = fixture.trace(&log, &["--add-special-tokens", "never"]);
    assert_eq!(input_len(&never[1]), 7);
    let always = fixture.trace(&log, &["--add-special-tokens", "always"]);
    assert_eq!(input_len(&always[0]), 17);
}

#[test]
fn conversations_sharing_a_system_prompt_hit_exactly_the_shared_blocks() {
    let fixture = Fixture::new();
    let system = words(0..9);
    let first = [("system", system.as_str()), ("user", "w50 w51 w52 w53")];
    let second = [("system", system.as_str()), ("user", "w60 w61 w62 w63")];
    let log = [
        chat_line("a", &first, &json!({})),
        chat_line("b", &second, &json!({})),
    ]
    .join("\n");
    fixture.trace(&log, &[]);
    // Shared tokens: start, system, 9 words, end, start, user = 14 → 3 full blocks of 4.
    let shared = fixture.count(
        &format!("<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n"),
        false,
    );
    assert_eq!(shared, 14);
    assert_eq!(
        fixture.hits(&fixture.path("trace.jsonl")),
        [0, shared / BLOCK]
    );
}

#[test]
fn a_multi_turn_conversation_hits_the_previous_turns_full_blocks() {
    let fixture = Fixture::new();
    let turn1 = [("system", "w1 w2 w3"), ("user", "w4 w5 w6 w7 w8 w9")];
    let turn2 = [
        ("system", "w1 w2 w3"),
        ("user", "w4 w5 w6 w7 w8 w9"),
        ("assistant", "w10 w11 w12"),
        ("user", "w13 w14"),
    ];
    let log = [
        chat_line("t1", &turn1, &json!({})),
        chat_line("t2", &turn2, &json!({})),
    ]
    .join("\n");
    let rows = fixture.trace(&log, &[]);
    let len1 = fixture.count(&chatml(&turn1, true), false);
    assert_eq!(input_len(&rows[0]), len1);
    assert_eq!(len1 % BLOCK, 1, "the first turn ends inside a block");
    assert_eq!(
        fixture.hits(&fixture.path("trace.jsonl")),
        [0, len1 / BLOCK]
    );
    assert_eq!(keys(&rows[1])[..keys(&rows[0]).len()], keys(&rows[0]));
}

#[test]
fn a_salt_separates_tenants() {
    let fixture = Fixture::new();
    let chat = [("user", "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10")];
    let log = [
        chat_line("a1", &chat, &json!({"user": "tenant-a"})),
        chat_line("b1", &chat, &json!({"user": "tenant-b"})),
        chat_line("a2", &chat, &json!({"user": "tenant-a"})),
    ]
    .join("\n");
    let rows = fixture.trace(&log, &["--salt-field", "user"]);
    let full = input_len(&rows[0]) / BLOCK;
    assert!(full >= 3);
    assert_eq!(fixture.hits(&fixture.path("trace.jsonl")), [0, 0, full]);
    // Without the salt all three share every block.
    fixture.trace(&log, &[]);
    assert_eq!(fixture.hits(&fixture.path("trace.jsonl")), [0, full, full]);
}

#[test]
fn the_template_from_tokenizer_config_and_its_kwargs_are_used() {
    let fixture = Fixture::new();
    let template = "{% for message in messages %}{{ message.content }}{% endfor %}\
                    {% if enable_thinking is defined and not enable_thinking %} w99 w99{% endif %}";
    fs::write(
        fixture.path("tokenizer_config.json"),
        json!({"chat_template": template, "bos_token": "<s>"}).to_string(),
    )
    .unwrap();
    let log_path = write_file(
        fixture.dir.path(),
        "log.jsonl",
        &chat_line("x", &[("user", "w1 w2")], &json!({})),
    );
    let out = fixture.path("trace.jsonl");
    let dir = fixture.dir.path().display().to_string();
    for (kwargs, expected) in [
        (&[][..], 2),
        (&["--template-kwarg", "enable_thinking=false"][..], 4),
    ] {
        let _ = fs::remove_file(&out);
        let mut args = vec![
            "trace",
            log_path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(["--tokenizer", &dir, "--line-time", "--quiet"]);
        args.extend(kwargs);
        ok(run_in(None, &args));
        let row: Value = serde_json::from_str(fs::read_to_string(&out).unwrap().trim()).unwrap();
        assert_eq!(input_len(&row), expected, "{kwargs:?}");
    }
}

#[test]
fn usage_prompt_tokens_that_differ_are_counted_in_the_summary() {
    let fixture = Fixture::new();
    let log = [
        json!({"prompt": "w1 w2", "usage": {"prompt_tokens": 3}}).to_string(),
        json!({"prompt": "w1 w2", "usage": {"prompt_tokens": 5}}).to_string(),
        json!({"prompt": "w1 w2"}).to_string(),
    ]
    .join("\n");
    let log_path = write_file(fixture.dir.path(), "log.jsonl", &log);
    let mut args = fixture.trace_args(&log_path, &fixture.path("trace.jsonl"));
    args.retain(|arg| arg != "--quiet");
    let run = ok(run_in(None, &args));
    assert!(
        run.stderr.contains("1 of 2 prompts differ from the tokenizer's count (the first: line 2, tokenizer 3, engine 5"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_lines_fail_naming_file_line_and_field() {
    let fixture = Fixture::new();
    let cases = [
        (
            json!({"prompt": 7, "timestamp": 2}).to_string(),
            "log.jsonl:2: field \"prompt\"",
        ),
        (
            json!({"messages": "hi", "timestamp": 2}).to_string(),
            "log.jsonl:2: field \"messages\"",
        ),
        (
            json!({"prompt_token_ids": [1, -2], "timestamp": 2}).to_string(),
            "log.jsonl:2: field \"prompt_token_ids\"",
        ),
        (
            json!({"prompt": "w1", "timestamp": 2, "model": ""}).to_string(),
            "log.jsonl:2: field \"model\"",
        ),
        (
            json!({"body": {"prompt_token_ids": []}, "timestamp": 2}).to_string(),
            "log.jsonl:2: field \"prompt\": the prompt has no tokens",
        ),
        (
            json!({"other": 1}).to_string(),
            "log.jsonl:2: field \"messages\": missing",
        ),
        ("{not json".to_owned(), "log.jsonl:2: failed to parse JSON"),
        (
            json!({"prompt": "w1", "model": 3.5, "timestamp": "x"}).to_string(),
            "log.jsonl:2: field \"timestamp\"",
        ),
    ];
    for (bad, expected) in cases {
        let log = format!("{}\n{bad}\n", json!({"prompt": "w1", "timestamp": 1}));
        let log_path = write_file(fixture.dir.path(), "log.jsonl", &log);
        let out = fixture.path("bad.jsonl");
        let mut args = fixture.trace_args(&log_path, &out);
        args.retain(|arg| arg != "--line-time");
        let run = run_in(None, &args);
        let message = failed(&run);
        assert!(message.contains(expected), "{bad}: {message}");
        assert!(!out.exists(), "nothing is published on an error");
    }
}

#[test]
fn a_missing_tokenizer_or_a_broken_template_fails_at_start() {
    let fixture = Fixture::new();
    let log_path = write_file(fixture.dir.path(), "log.jsonl", "{\"prompt\":\"w1\"}\n");
    let out = fixture.path("trace.jsonl");
    let mut args = fixture.trace_args(&log_path, &out);
    let tokenizer_at = args.iter().position(|arg| arg == "--tokenizer").unwrap() + 1;
    args[tokenizer_at] = fixture.path("absent.json").display().to_string();
    let message = failed(&run_in(None, &args)).to_owned();
    assert!(
        message.contains("absent.json: cannot load tokenizer"),
        "{message}"
    );

    fs::write(
        fixture.path("chat.jinja"),
        "{% for m in messages %}{{ m.content }",
    )
    .unwrap();
    let message = failed(&run_in(None, fixture.trace_args(&log_path, &out))).to_owned();
    assert!(message.contains("chat.jinja: chat template"), "{message}");
    fs::write(
        fixture.path("chat.jinja"),
        "{{ raise_exception('only tools') }}",
    )
    .unwrap();
    let message = failed(&run_in(None, fixture.trace_args(&log_path, &out))).to_owned();
    assert!(message.contains("only tools"), "{message}");
    assert!(!out.exists());
}

/// Published reference encodings: the OpenAI cookbook ("How to count tokens with tiktoken":
/// "tiktoken is great!" is `["t", "ik", "token", " is", " great", "!"]` in cl100k_base) and
/// notebook/tutorial outputs of `tiktoken` itself, ids included.
#[test]
fn tiktoken_counts_equal_published_reference_counts() {
    use litehit_tokenize::tokenizer::TextTokenizer;
    let cl100k = TextTokenizer::load("tiktoken:cl100k_base").unwrap();
    let o200k = TextTokenizer::load("tiktoken:o200k_base").unwrap();
    assert_eq!(cl100k.encode("tiktoken is great!", false).unwrap().len(), 6);
    assert_eq!(
        cl100k
            .encode(
                "The Los Angeles Dodgers won the World Series in 2020.",
                false
            )
            .unwrap(),
        [
            791, 9853, 12167, 56567, 2834, 279, 4435, 11378, 304, 220, 2366, 15, 13
        ]
    );
    assert_eq!(
        cl100k.encode("China is great!", false).unwrap(),
        [23078, 374, 2294, 0]
    );
    assert_eq!(
        o200k
            .encode("this is a test example, tutorialexample.com", false)
            .unwrap(),
        [851, 382, 261, 1746, 4994, 11, 24000, 18582, 1136]
    );
    assert!(TextTokenizer::load("tiktoken:p50k_base").is_err());

    // Through `litehit trace`: the same count as input_len.
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(
        dir.path(),
        "log.jsonl",
        &json!({"prompt": "The Los Angeles Dodgers won the World Series in 2020."}).to_string(),
    );
    let out = dir.path().join("trace.jsonl");
    ok(run_in(
        None,
        [
            "trace",
            log.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--tokenizer",
            "tiktoken:cl100k_base",
            "--line-time",
            "--quiet",
        ],
    ));
    let row: Value = serde_json::from_str(fs::read_to_string(&out).unwrap().trim()).unwrap();
    assert_eq!(input_len(&row), 13);
}

/// `trace - --out -` in a pipe into `replay -`, and `replay LOG --tokenizer ..`: the same
/// trace bytes and the same facts bytes as through files.
#[test]
fn trace_through_pipes_gives_the_same_trace_and_facts_as_through_files() {
    use crate::common::cli_bin::run_with_stdin;
    let fixture = Fixture::new();
    let system = words(0..7);
    let mut lines = Vec::new();
    for conversation in 0..6_u32 {
        let user = words(10 + conversation..16 + conversation * 2);
        lines.push(chat_line(
            &format!("c{conversation}"),
            &[("system", system.as_str()), ("user", user.as_str())],
            &json!({"user": format!("tenant-{}", conversation % 2)}),
        ));
    }
    let log = lines.join("\n");
    fixture.trace(&log, &["--salt-field", "user"]);
    let from_file = fs::read(fixture.path("trace.jsonl")).unwrap();
    fixture.hits(&fixture.path("trace.jsonl"));
    let facts_from_file = fs::read(fixture.path("replay/litehit_facts.csv")).unwrap();

    let mut args = fixture.trace_args(Path::new("-"), Path::new("-"));
    args.extend(["--salt-field".to_owned(), "user".to_owned()]);
    let piped = ok(run_with_stdin(None, &args, log.into_bytes()));
    assert_eq!(piped.stdout.as_bytes(), from_file);
    let out = fixture.path("piped");
    ok(run_with_stdin(
        None,
        [
            "replay",
            "-",
            "--out",
            out.to_str().unwrap(),
            "--block-size",
            "4",
            "--quiet",
        ],
        piped.stdout.into_bytes(),
    ));
    assert_eq!(
        fs::read(out.join("litehit_facts.csv")).unwrap(),
        facts_from_file
    );

    // `replay LOG --tokenizer ..` converts in process through the same code.
    let log_path = fixture.path("log.jsonl");
    let out = fixture.path("direct");
    let mut args = fixture.trace_args(&log_path, &out);
    args[0] = "replay".to_owned();
    args.extend(["--salt-field".to_owned(), "user".to_owned()]);
    ok(run_in(None, &args));
    assert_eq!(
        fs::read(out.join("litehit_facts.csv")).unwrap(),
        facts_from_file
    );
}

#[test]
fn an_openai_replay_names_its_format_and_tiktoken_chat_needs_a_template() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(
        dir.path(),
        "log.jsonl",
        &format!(
            "{}\n{}\n",
            json!({"prompt": "The Los Angeles Dodgers won the World Series in 2020."}),
            json!({"prompt": "The Los Angeles Dodgers won the World Series in 2020, again."})
        ),
    );
    let out = dir.path().join("out");
    let run = ok(run_in(
        None,
        [
            "replay",
            "--format",
            "openai",
            log.to_str().unwrap(),
            "--tokenizer",
            "tiktoken:cl100k_base",
            "--line-time",
            "--out",
            out.to_str().unwrap(),
        ],
    ));
    let log_bytes = fs::metadata(&log).unwrap().len();
    assert!(
        run.stderr
            .contains(&format!("replayed {log_bytes} B (openai format, as ")),
        "the summary names the log, not the trace it became:\n{}",
        run.stderr
    );
    // A chat line needs a template, and a tiktoken encoding has none to offer.
    let chat = write_file(
        dir.path(),
        "chat.jsonl",
        &json!({"messages": [{"role": "user", "content": "hi"}]}).to_string(),
    );
    let run = run_in(
        None,
        [
            "trace",
            chat.to_str().unwrap(),
            "--tokenizer",
            "tiktoken:cl100k_base",
            "--line-time",
            "--out",
            "-",
        ],
    );
    let message = failed(&run);
    assert!(
        message.contains("a tiktoken encoding has no chat template; give --chat-template FILE"),
        "{message}"
    );
    assert!(!message.contains("tokenizer_config.json"), "{message}");
}

/// <https://github.com/litehit/litehit/issues/26>: `replay --format openai` named its input as
/// the output of the conversion (`-> chat.jsonl`).
#[test]
fn an_openai_replay_summary_names_the_log_as_input() {
    let fixture = Fixture::new();
    let log = write_file(
        fixture.dir.path(),
        "chat.jsonl",
        &json!({"prompt": "w1 w2 w3 w4 w5"}).to_string(),
    );
    let out = fixture.path("out");
    let run = ok(run_in(
        None,
        [
            "replay",
            "--format",
            "openai",
            log.to_str().unwrap(),
            "--tokenizer",
            fixture.path("tokenizer.json").to_str().unwrap(),
            "--line-time",
            "--out",
            out.to_str().unwrap(),
        ],
    ));
    assert!(!run.stderr.contains("-> "), "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("litehit: {}: 1 requests, ", log.display()))
            && run.stderr.contains(" tokens, replayed\n"),
        "{}",
        run.stderr
    );
}

/// <https://github.com/litehit/litehit/issues/26>: `trace` stopped at its first bad line;
/// `--skip-bad` skips and counts them (a template error, bad JSON, an empty prompt), and the
/// good lines' rows are the ones a clean log gives.
#[test]
fn skip_bad_skips_and_counts_bad_lines() {
    let fixture = Fixture::new();
    let good = [
        json!({"prompt": "w1 w2 w3 w4 w5"}).to_string(),
        json!({"prompt": "w6 w7 w8 w9"}).to_string(),
    ];
    let clean = fixture.trace(&format!("{}\n\n\n{}\n", good[0], good[1]), &[]);
    let log = format!(
        "{}\n{{not json\n{}\n{}\n",
        good[0],
        json!({"body": {"prompt_token_ids": []}}),
        good[1]
    );
    let log_path = write_file(fixture.dir.path(), "log.jsonl", &log);
    let out = fixture.path("skipped.jsonl");
    let mut args = fixture.trace_args(&log_path, &out);
    args.retain(|arg| arg != "--quiet");
    // Without the flag: the first bad line stops it.
    let run = run_in(None, &args);
    let message = failed(&run);
    assert!(
        message.contains("log.jsonl:2: failed to parse JSON"),
        "{message}"
    );
    args.push("--skip-bad".to_owned());
    let run = ok(run_in(None, &args));
    assert!(
        run.stderr
            .contains("litehit: --skip-bad: 2 bad lines skipped (the first: ")
            && run.stderr.contains("log.jsonl:2: failed to parse JSON"),
        "{}",
        run.stderr
    );
    let rows: Vec<Value> = fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let without_ids = |rows: &[Value]| -> Vec<(Value, Value)> {
        rows.iter()
            .map(|row| (row["keys"].clone(), row["input_len"].clone()))
            .collect()
    };
    assert_eq!(without_ids(&rows), without_ids(&clean));
}

/// <https://github.com/litehit/litehit/issues/26>: a log without times hints at `--line-time`.
#[test]
fn a_log_without_times_hints_at_line_time() {
    let fixture = Fixture::new();
    let log_path = write_file(
        fixture.dir.path(),
        "log.jsonl",
        &json!({"prompt": "w1"}).to_string(),
    );
    let mut args = fixture.trace_args(&log_path, &fixture.path("out.jsonl"));
    args.retain(|arg| arg != "--line-time");
    let run = run_in(None, &args);
    let message = failed(&run);
    assert!(
        message.contains("log.jsonl:1: field \"timestamp\": missing (--time-field names the time; --line-time numbers the lines of a log without times)"),
        "{message}"
    );
}

/// <https://github.com/litehit/litehit/issues/27>: one lone surrogate escape (`"\ud800"`,
/// which Python's `json.dumps` writes) stopped `trace`; it is read as U+FFFD and counted.
#[test]
fn a_lone_surrogate_is_read_as_a_replacement_character_and_counted() {
    let fixture = Fixture::new();
    // python3 -c 'import json; print(json.dumps({"prompt": "w1 \ud800 w2"}))'
    let log = "{\"prompt\": \"w1 \\ud800 w2\"}\n{\"prompt\": \"w3 \\ud83d\\ude00\"}\n";
    let log_path = write_file(fixture.dir.path(), "log.jsonl", log);
    let out = fixture.path("out.jsonl");
    let mut args = fixture.trace_args(&log_path, &out);
    args.retain(|arg| arg != "--quiet");
    let run = ok(run_in(None, &args));
    assert!(
        run.stderr.contains("litehit: 1 lone surrogate escapes (")
            && run.stderr.contains("read as U+FFFD (the first: line 1)"),
        "{}",
        run.stderr
    );
    let first: Value =
        serde_json::from_str(fs::read_to_string(&out).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(input_len(&first), fixture.count("w1 \u{fffd} w2", true));
}

/// Issue 31 §3: the engine's own cached prompt tokens (`usage.prompt_tokens_details.
/// cached_tokens`, SGLang's `meta_info.cached_tokens`) become each row's `cached_tokens`,
/// which `replay` reads as the observed hits.
#[test]
fn the_engines_cached_tokens_become_the_rows_cached_tokens() {
    let fixture = Fixture::new();
    let log = [
        json!({"prompt": words(0..12), "usage": {"prompt_tokens": 12,
            "prompt_tokens_details": {"cached_tokens": 0}}})
        .to_string(),
        json!({"prompt": words(0..12), "usage": {"prompt_tokens": 12,
            "prompt_tokens_details": {"cached_tokens": 8}}})
        .to_string(),
        json!({"prompt": words(0..12), "meta_info": {"cached_tokens": 4}}).to_string(),
        json!({"prompt": words(0..12)}).to_string(),
    ]
    .join("\n");
    let rows = fixture.trace(&log, &[]);
    let cached: Vec<Option<u64>> = rows
        .iter()
        .map(|row| {
            row.get("cached_tokens")
                .map(|value| value.as_u64().unwrap())
        })
        .collect();
    assert_eq!(cached, [Some(0), Some(8), Some(4), None]);

    let trace = fixture.path("trace.jsonl");
    let run = ok(replay_to(
        &trace,
        &fixture.path("out"),
        &["--block-size", "4"],
    ));
    assert!(
        run.stderr
            .contains("observed: the engine's cached tokens (3 of 4 requests carry them)"),
        "{}",
        run.stderr
    );

    let bad = json!({"prompt": "w1", "usage": {"prompt_tokens_details": {"cached_tokens": -1}}})
        .to_string();
    let log_path = write_file(fixture.dir.path(), "bad.jsonl", &bad);
    let run = run_in(
        None,
        fixture.trace_args(&log_path, &fixture.path("bad.out")),
    );
    assert!(
        failed(&run).contains("usage.prompt_tokens_details.cached_tokens"),
        "{}",
        run.stderr
    );

    // More cached than the prompt holds (by the engine's own count, or by the prompt as
    // tokenized when the log has no count) would be an observed rate over 100 %: refused,
    // naming the line and the field the count was read at.
    for (bad, field, says) in [
        (
            json!({"prompt": words(0..12), "usage": {"prompt_tokens": 12,
                "prompt_tokens_details": {"cached_tokens": 13}}}),
            "usage.prompt_tokens_details.cached_tokens",
            "the engine's own 12 prompt tokens",
        ),
        (
            json!({"prompt": words(0..12), "meta_info": {"cached_tokens": 99}}),
            "meta_info.cached_tokens",
            "tokens of the prompt as tokenized",
        ),
    ] {
        let log = format!("{}\n{bad}", json!({"prompt": words(0..12)}));
        let log_path = write_file(fixture.dir.path(), "over.jsonl", &log);
        let run = run_in(
            None,
            fixture.trace_args(&log_path, &fixture.path("over.out")),
        );
        let stderr = failed(&run);
        assert!(
            stderr.contains(":2") && stderr.contains(field) && stderr.contains(says),
            "{stderr}"
        );
    }
}
