//! Every `litehit` command in `README.md` and `docs/*.md`, as written (issue #28): each one
//! parses with the real command line, and each one runs on the sample trace in a scratch
//! folder of its own code block, unless [`NOT_RUN`] says why it cannot (a server, a
//! deployment's path, a downloaded tokenizer, the TUI) and which test runs it instead.
//!
//! What "as written" allows: `cargo run --release --` is the `litehit` built for the tests,
//! `FACTS` is the facts file the scratch folder holds, a `watch` of a file or of standard
//! input gets `--headless --exit-at-eof` (the TUI would wait for `q`), and a command written
//! with `$k` (a loop's variable) runs once per value of its loop.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use litehit_core::workload::WorkloadConfig;

use crate::common::cli_bin::{NO_CONFIG_HOME, generate, litehit, ok, standard_trace};

/// Commands that only parse here, each with the substring that picks it and the reason.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "--listen",
        "serves HTTP until stopped (tests/it/http/ runs it)",
    ),
    (
        "/var/log/",
        "a deployment's own path (tests/it/watch/service.rs runs the unit)",
    ),
    (
        "Qwen3-8B/",
        "a downloaded tokenizer folder (tests/it/tokenize/real.rs)",
    ),
    (
        "--tokenizer tokenizer.json",
        "a downloaded tokenizer (tests/it/tokenize/)",
    ),
    (
        "litehit demo",
        "the TUI, which waits for `q` (tests/it/watch/pty.rs drives it in tmux)",
    ),
];

/// One command of a page: where it is written and its text, continuation lines joined and
/// the trailing comment removed.
#[derive(Debug, Clone)]
struct Documented {
    page: String,
    line: usize,
    /// The index of its code block in the page: a block is run in its own scratch folder.
    block: usize,
    text: String,
}

impl Documented {
    fn not_run(&self) -> Option<&'static str> {
        NOT_RUN
            .iter()
            .find(|(picks, _)| self.text.contains(picks))
            .map(|(_, reason)| *reason)
    }
}

/// The pages whose shell blocks are checked: the README and every page of `docs/`.
fn pages() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root.join("README.md"));
    pages
}

/// The `litehit` commands of `markdown`'s shell code blocks (`sh`, `bash`, `shell`,
/// `console`), in order.
fn documented_commands(page: &str, markdown: &str) -> Vec<Documented> {
    let mut commands = Vec::new();
    let mut in_shell_block = None;
    let mut block = 0;
    let mut pending = String::new();
    let mut pending_line = 0;
    for (index, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            in_shell_block = if in_shell_block.is_some() {
                None
            } else {
                block += 1;
                Some(matches!(info.trim(), "sh" | "bash" | "shell" | "console"))
            };
            continue;
        }
        if in_shell_block != Some(true) {
            continue;
        }
        if pending.is_empty() {
            pending_line = index + 1;
        }
        let code = without_comment(trimmed);
        if let Some(joined) = code.strip_suffix('\\') {
            pending.push_str(joined);
            pending.push(' ');
            continue;
        }
        pending.push_str(code);
        let whole = std::mem::take(&mut pending);
        let whole = whole.strip_prefix("$ ").unwrap_or(&whole);
        for part in whole.split(['|', ';']).flat_map(|part| part.split("&&")) {
            let part = part.trim().trim_end_matches('&').trim();
            let text = part
                .strip_prefix("cargo run --release -- ")
                .map_or_else(|| part.to_owned(), |rest| format!("litehit {rest}"));
            if text.starts_with("litehit ") {
                commands.push(Documented {
                    page: page.to_owned(),
                    line: pending_line,
                    block,
                    text,
                });
            }
        }
    }
    commands
}

/// `line` without a trailing ` # comment` (a `#` after white space, outside quotes).
fn without_comment(line: &str) -> &str {
    if line.starts_with('#') {
        return "";
    }
    let mut quote = None;
    let mut previous = ' ';
    for (at, char) in line.char_indices() {
        match (quote, char) {
            (None, '\'' | '"') => quote = Some(char),
            (Some(open), _) if char == open => quote = None,
            (None, '#') if previous.is_whitespace() => return line[..at].trim_end(),
            _ => {}
        }
        previous = char;
    }
    line.trim_end()
}

/// The words the shell would pass (quotes removed, `$k` as `k_value`), without redirections.
fn words(text: &str, k_value: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut started = false;
    for char in text.chars() {
        match (quote, char) {
            (None, '\'' | '"') => {
                quote = Some(char);
                started = true;
            }
            (Some(open), _) if char == open => quote = None,
            (None, _) if char.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            _ => {
                word.push(char);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    let mut kept = Vec::new();
    let mut skip_next = false;
    for word in words {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        if word == ">" {
            skip_next = true;
            continue;
        }
        kept.push(word.replace("$k", k_value));
    }
    kept
}

fn all_documented() -> Vec<Documented> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    pages()
        .iter()
        .flat_map(|path| {
            let page = path.strip_prefix(&root).unwrap().display().to_string();
            documented_commands(&page, &fs::read_to_string(path).unwrap())
        })
        .collect()
}

#[test]
fn every_documented_command_parses_with_the_real_command_line() {
    let commands = all_documented();
    // The quick start alone has five; every task page has some: nothing passes by finding none.
    for page in [
        "README.md",
        "docs/LIVE.md",
        "docs/PLANNING.md",
        "docs/REQUEST_LOGS.md",
    ] {
        assert!(
            commands.iter().any(|command| command.page == page),
            "no command found in {page}"
        );
    }
    let refused: Vec<String> = commands
        .iter()
        .filter_map(|command| {
            let words = words(&command.text, "0");
            litehit::cli::Cli::parse_args_from(&words)
                .err()
                .map(|error| {
                    format!(
                        "{}:{}: {}\n{error}",
                        command.page, command.line, command.text
                    )
                })
        })
        .collect();
    assert!(refused.is_empty(), "{}", refused.join("\n\n"));
}

/// A scratch folder for one code block: the sample trace under every name the pages give a
/// trace (`trace.jsonl`, `fleet.jsonl`, `assets/sample_trace.jsonl`), or, for a block about
/// 16-token blocks or the upstream config, a generated 16-token trace of instance `i1` (the
/// config's); facts of it at `results/`; the config of `docs/PLANNING.md`; a few request bodies
/// in `prompts.jsonl`; and a home whose completion and man folders exist.
fn scratch_folder(block: &[&Documented], planning_config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let sixteen_token_blocks = block.iter().any(|command| {
        command.text.contains("--block-size 16") || command.text.contains("config.json")
    });
    let trace = if sixteen_token_blocks {
        let config = WorkloadConfig {
            instance_ids: vec!["i1".into()],
            block_size_tokens: 16,
            ..WorkloadConfig::default()
        };
        standard_trace(&generate(config, 300))
    } else {
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/sample_trace.jsonl");
        fs::read_to_string(sample).unwrap()
    };
    fs::create_dir_all(path.join("assets")).unwrap();
    for name in ["trace.jsonl", "fleet.jsonl", "assets/sample_trace.jsonl"] {
        fs::write(path.join(name), &trace).unwrap();
    }
    fs::write(path.join("lite_hit_config.json"), planning_config).unwrap();
    fs::write(
        path.join("prompts.jsonl"),
        "{\"prompt\": \"You are a helpful assistant. Hello!\"}\n\
         {\"prompt\": \"You are a helpful assistant. Hello! How are you today?\"}\n",
    )
    .unwrap();
    for folder in [
        ".local/share/bash-completion/completions",
        ".local/share/man/man1",
    ] {
        fs::create_dir_all(path.join("home").join(folder)).unwrap();
    }
    let block_size = if sixteen_token_blocks { "16" } else { "256" };
    ok(crate::common::cli_bin::run_in(
        Some(path),
        [
            "replay",
            "trace.jsonl",
            "--out",
            "results/",
            "--block-size",
            block_size,
        ],
    ));
    dir
}

/// The JSON config block of `docs/PLANNING.md` (the one `litehit replay CONFIG` there reads).
fn planning_config() -> String {
    let page =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/PLANNING.md")).unwrap();
    let start = page.find("```json\n").expect("PLANNING.md shows a config") + "```json\n".len();
    let end = start + page[start..].find("```").unwrap();
    page[start..end].to_owned()
}

/// Runs `command` as the shell would in `dir`, `litehit` first on the `PATH`.
fn run_as_written(command: &Documented, dir: &Path, k_value: &str) -> Result<(), String> {
    let mut text = command.text.replace("FACTS", "results/litehit_facts.csv");
    let reads_standard_input = text.starts_with("litehit watch - ");
    if text.starts_with("litehit watch ") {
        for flag in ["--headless", "--exit-at-eof"] {
            if !text.contains(flag) {
                text.push(' ');
                text.push_str(flag);
            }
        }
    }
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_litehit"));
    let path = std::env::join_paths(
        std::iter::once(binary.parent().unwrap().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    // The environment `litehit()` gives, read back from it: no defaults file, no colour.
    let template = litehit();
    let mut shell = Command::new("sh");
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => shell.env(key, value),
            None => shell.env_remove(key),
        };
    }
    shell
        .arg("-c")
        .arg(&text)
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", NO_CONFIG_HOME)
        .env("k", k_value)
        .stdin(if reads_standard_input {
            Stdio::from(fs::File::open(dir.join("trace.jsonl")).unwrap())
        } else {
            Stdio::null()
        });
    let output = shell.output().unwrap();
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}:{}: {text}\n{}",
            command.page,
            command.line,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

#[test]
fn every_documented_command_runs_on_the_sample_trace() {
    let commands = all_documented();
    let planning_config = planning_config();
    let mut blocks: Vec<Vec<&Documented>> = Vec::new();
    for command in &commands {
        match blocks.last_mut() {
            Some(block) if block[0].page == command.page && block[0].block == command.block => {
                block.push(command);
            }
            _ => blocks.push(vec![command]),
        }
    }
    let (mut ran, mut failures) = (0, Vec::new());
    for block in &blocks {
        let dir = scratch_folder(block, &planning_config);
        for command in block.iter().filter(|command| command.not_run().is_none()) {
            let k_values: &[&str] = if command.text.contains("$k") {
                &["0", "1", "2", "3"]
            } else {
                &["0"]
            };
            for k_value in k_values {
                ran += 1;
                if let Err(failure) = run_as_written(command, dir.path(), k_value) {
                    failures.push(failure);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Most of the pages' commands run; the rest are named in NOT_RUN with the test that does.
    let not_run = commands
        .iter()
        .filter(|command| command.not_run().is_some())
        .count();
    assert!(ran > not_run, "ran {ran}, only parsed {not_run}");
}

#[test]
fn a_stale_flag_in_a_page_is_found() {
    let page = "Text.\n\n```sh\nlitehit query FACTS - 10 --summary-only   # fine\n\
                litehit replay trace.jsonl \\\n    --no-such-flag\n```\n\n```json\n{}\n```\n";
    let commands = documented_commands("x.md", page);
    let texts: Vec<&str> = commands
        .iter()
        .map(|command| command.text.as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "litehit query FACTS - 10 --summary-only",
            "litehit replay trace.jsonl  --no-such-flag"
        ]
    );
    assert!(litehit::cli::Cli::parse_args_from(words(&commands[0].text, "0")).is_ok());
    assert!(litehit::cli::Cli::parse_args_from(words(&commands[1].text, "0")).is_err());
    assert_eq!(
        words(
            "litehit query 'shards/*/f.csv' x > out --shard shards/$k",
            "2"
        ),
        [
            "litehit",
            "query",
            "shards/*/f.csv",
            "x",
            "--shard",
            "shards/2"
        ]
    );
}
