//! One grammar, every entry point: each spelling a user may type goes through every place that
//! takes that kind of value — `query`'s GB arguments and `--capacity-blocks` (the real binary,
//! so clap's reading of `-inf` and friends is part of the test), `watch --capacity-gb` (the
//! parsed command line and the binary's refusal of ∞), the monitor's add-slot dialog (`App`),
//! `--block-bytes` and `--ttl-seconds` — and must mean the same thing in each, or be refused in
//! each with a reason. The expected values are written out by hand, not computed by the
//! grammar.

use crate::common::cli_bin::{run_in, write_file};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use litehit::cli::{Cli, Command};
use litehit_core::projector::Capacity;
use litehit_live::Command as LiveCommand;
use litehit_tui::app::App;

/// What a capacity spelling must mean, with one block per GiB (so GB and blocks compare).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Means {
    Blocks(u64),
    Unlimited,
    Refused,
}

/// Block bytes of the facts below: 1 GiB, so `40` GB is 40 blocks.
const BLOCK_BYTES: u64 = 1 << 30;
/// The one request's curve hits block `i` at capacity `i` for `i` in 1..=2000.
const CURVE_BLOCKS: u64 = 2000;

/// Spelling, then what it means as a `query` GB argument, as `--capacity-blocks`, and as a
/// `watch` slot (flag and dialog).
const CAPACITIES: &[(&str, Means, Means, Means)] = &[
    (
        "40",
        Means::Blocks(40),
        Means::Blocks(40),
        Means::Blocks(40),
    ),
    ("0.5", Means::Blocks(0), Means::Refused, Means::Blocks(0)),
    ("40GB", Means::Blocks(40), Means::Refused, Means::Blocks(40)),
    (
        "40GiB",
        Means::Blocks(40),
        Means::Refused,
        Means::Blocks(40),
    ),
    ("40g", Means::Blocks(40), Means::Refused, Means::Blocks(40)),
    ("0x10", Means::Blocks(16), Means::Refused, Means::Blocks(16)),
    (
        "1000b",
        Means::Refused,
        Means::Blocks(1000),
        Means::Blocks(1000),
    ),
    (
        "1000blocks",
        Means::Refused,
        Means::Blocks(1000),
        Means::Blocks(1000),
    ),
    // As the screens label a block slot (issue 26).
    (
        "1000blk",
        Means::Refused,
        Means::Blocks(1000),
        Means::Blocks(1000),
    ),
    ("inf", Means::Unlimited, Means::Refused, Means::Unlimited),
    (
        "infinite",
        Means::Unlimited,
        Means::Refused,
        Means::Unlimited,
    ),
    (
        "infinity",
        Means::Unlimited,
        Means::Refused,
        Means::Unlimited,
    ),
    ("∞", Means::Unlimited, Means::Refused, Means::Unlimited),
    ("-1", Means::Unlimited, Means::Refused, Means::Unlimited),
    ("-inf", Means::Unlimited, Means::Refused, Means::Unlimited),
    ("1.5b", Means::Refused, Means::Refused, Means::Refused),
    // Binary TB, as --tiers takes it (one block per GiB here, so the counts are GB).
    (
        "12TB",
        Means::Blocks(12_288),
        Means::Refused,
        Means::Blocks(12_288),
    ),
    (
        "0.5TiB",
        Means::Blocks(512),
        Means::Refused,
        Means::Blocks(512),
    ),
    (
        "1 tb",
        Means::Blocks(1024),
        Means::Refused,
        Means::Blocks(1024),
    ),
    ("-1TB", Means::Refused, Means::Refused, Means::Refused),
    ("12PB", Means::Refused, Means::Refused, Means::Refused),
    ("abc", Means::Refused, Means::Refused, Means::Refused),
];

fn facts_file(dir: &std::path::Path) -> std::path::PathBuf {
    let header =
        "trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,block_bytes,hit_curve";
    let tokens = CURVE_BLOCKS * 16;
    write_file(
        dir,
        "facts.csv",
        &format!("{header}\nr1,i,0,{tokens},16,{BLOCK_BYTES},\"[[1,{CURVE_BLOCKS}]]\"\n"),
    )
}

/// `litehit query FACTS - ARGS --summary-only`: the summary's total hit blocks, or `None`
/// when the command failed (its message must then say why).
fn query_hit_blocks(facts: &std::path::Path, args: &[&str]) -> Option<u64> {
    let mut command_line = vec!["query", facts.to_str().unwrap(), "-"];
    command_line.extend(args);
    command_line.push("--summary-only");
    let run = run_in(None, &command_line);
    if run.code != Some(0) {
        assert!(
            (run.stderr.starts_with("litehit: ") || run.stderr.starts_with("error: "))
                && run.stderr.len() > 20,
            "{command_line:?}: a refusal says why: {}",
            run.stderr
        );
        return None;
    }
    // `capacity_gb` echoes `-inf` as upstream prints it (`%g`), which is no JSON number.
    let last = run.stdout.lines().last().expect("a summary line");
    let summary: serde_json::Value = serde_json::from_str(&last.replace("-inf", "null")).unwrap();
    Some(
        summary["total_hit_blocks"][0]
            .as_u64()
            .expect("one capacity"),
    )
}

fn hits_of(means: Means) -> Option<u64> {
    match means {
        Means::Blocks(blocks) => Some(blocks.min(CURVE_BLOCKS)),
        Means::Unlimited => Some(CURVE_BLOCKS),
        Means::Refused => None,
    }
}

#[test]
fn query_capacity_arguments_read_every_spelling_alike() {
    let dir = tempfile::tempdir().unwrap();
    let facts = facts_file(dir.path());
    for &(spelling, as_gb, as_blocks, _) in CAPACITIES {
        assert_eq!(
            query_hit_blocks(&facts, &[spelling]),
            hits_of(as_gb),
            "query GB argument {spelling:?}"
        );
        assert_eq!(
            query_hit_blocks(&facts, &["--capacity-blocks", spelling]),
            hits_of(as_blocks),
            "query --capacity-blocks {spelling:?}"
        );
    }
}

fn watch_slot(spelling: &str) -> Result<Capacity, String> {
    let command_line = ["litehit", "watch", "t.jsonl", "--capacity-gb", spelling];
    match Cli::parse_args_from(command_line) {
        Ok(Cli {
            command: Command::Watch(args),
            ..
        }) => Ok(args.capacity_gb[0]),
        Ok(_) => unreachable!("watch parses as watch"),
        Err(error) => Err(error.to_string()),
    }
}

fn dialog_slot(spelling: &str) -> Result<Capacity, ()> {
    let press = |code| KeyEvent::new(code, KeyModifiers::NONE);
    let mut app = App::default();
    app.handle_key(press(KeyCode::Char('a')));
    for c in spelling.chars() {
        app.handle_key(press(KeyCode::Char(c)));
    }
    match app.handle_key(press(KeyCode::Enter)) {
        Some(LiveCommand::AddSlot(capacity)) => Ok(capacity),
        None => Err(()),
        Some(other) => panic!("{spelling:?}: unexpected {other:?}"),
    }
}

fn means_of(capacity: Capacity) -> Means {
    match capacity.blocks(BLOCK_BYTES) {
        Some(blocks) => Means::Blocks(blocks),
        None => Means::Unlimited,
    }
}

#[test]
fn watch_slots_and_the_dialog_read_every_spelling_alike() {
    for &(spelling, _, _, as_slot) in CAPACITIES {
        let flag = watch_slot(spelling).map(means_of);
        match as_slot {
            Means::Refused => assert!(flag.is_err(), "watch --capacity-gb {spelling:?}: {flag:?}"),
            means => assert_eq!(flag, Ok(means), "watch --capacity-gb {spelling:?}"),
        }
        // The dialog adds what the flag takes, except ∞, which is always shown.
        let dialog = dialog_slot(spelling).map(means_of);
        match as_slot {
            Means::Blocks(blocks) => {
                assert_eq!(dialog, Ok(Means::Blocks(blocks)), "dialog {spelling:?}");
            }
            Means::Unlimited | Means::Refused => {
                assert_eq!(dialog, Err(()), "dialog {spelling:?} is refused");
            }
        }
    }
}

#[test]
fn watch_refuses_an_unlimited_slot_in_every_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "t.jsonl", "");
    for spelling in ["inf", "infinite", "infinity", "-1", "∞"] {
        let run = run_in(
            None,
            [
                "watch",
                trace.to_str().unwrap(),
                "--headless",
                "--capacity-gb",
                spelling,
            ],
        );
        assert_eq!(run.code, Some(1), "{spelling}: {run:?}");
        assert!(
            run.stderr.contains("is always shown"),
            "{spelling}: {}",
            run.stderr
        );
    }
}

fn replay_flag(flag: &str, spelling: &str) -> Result<(Option<u64>, Option<u64>), String> {
    let command_line = [
        "litehit", "replay", "t.jsonl", "--out", "o/", flag, spelling,
    ];
    match Cli::parse_args_from(command_line) {
        Ok(Cli {
            command: Command::Replay(args),
            ..
        }) => Ok((args.lane.block_bytes, args.lane.ttl_ns)),
        Ok(_) => unreachable!("replay parses as replay"),
        Err(error) => Err(error.to_string()),
    }
}

#[test]
fn byte_sizes_and_durations_read_alike_in_every_flag() {
    for (spelling, bytes) in [
        ("1048576", Some(1_048_576)),
        ("1MiB", Some(1 << 20)),
        ("128KiB", Some(128 << 10)),
        ("2GiB", Some(2 << 30)),
        ("512B", Some(512)),
        ("1.5MiB", None),
        ("40GB", None),
        ("-1", None),
    ] {
        assert_eq!(
            replay_flag("--block-bytes", spelling)
                .ok()
                .and_then(|(b, _)| b),
            bytes,
            "--block-bytes {spelling:?}"
        );
        assert_eq!(
            replay_flag("--kv-bytes-per-token", spelling).is_ok(),
            bytes.is_some(),
            "--kv-bytes-per-token {spelling:?}"
        );
    }
    for (spelling, seconds) in [
        ("600", Some(600_000_000_000)),
        ("600s", Some(600_000_000_000)),
        ("10m", Some(600_000_000_000)),
        ("2h", Some(7_200_000_000_000)),
        // As docs/PLANNING.md ("Every value you type") promises for every duration (issue 26).
        ("1.5", Some(1_500_000_000)),
        ("1.5s", Some(1_500_000_000)),
        ("250ms", Some(250_000_000)),
        ("inf", None),
        ("-1", None),
    ] {
        assert_eq!(
            replay_flag("--ttl-seconds", spelling)
                .ok()
                .and_then(|(_, t)| t),
            seconds,
            "--ttl-seconds {spelling:?}"
        );
    }
}

/// Issue 26: the README (now docs/PLANNING.md) promises `1.5s` for every duration, and
/// `--ttl-seconds 1.5s` was refused. Through the real binary: a block reused 1.4 s later hits
/// under a TTL of 1.5 s, one reused 1.7 s later does not, in every spelling of 1.5 s.
#[test]
fn a_fractional_ttl_replays_to_the_nanosecond() {
    use crate::common::cli_bin::{FACTS, get_row, ok, parse_query_output, replay_to, u64s};
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(
        dir.path(),
        "trace.jsonl",
        &[
            get_row("i", "r1", 1_000_000_000, &[1, 2], 32),
            get_row("i", "r2", 2_400_000_000, &[1, 2], 32),
            get_row("i", "r3", 4_100_000_000, &[1, 2], 32),
        ]
        .concat(),
    );
    for spelling in ["1.5s", "1500ms", "1.5"] {
        let out = dir.path().join(spelling);
        ok(replay_to(
            &trace,
            &out,
            &["--block-size", "16", "--ttl-seconds", spelling, "--quiet"],
        ));
        let query = ok(run_in(
            None,
            ["query", out.join(FACTS).to_str().unwrap(), "-", "-1"],
        ));
        let hits: Vec<Vec<u64>> = parse_query_output(&query.stdout)
            .rows
            .iter()
            .map(|row| u64s(&row["hit_blocks"]))
            .collect();
        assert_eq!(hits, [[0], [2], [0]], "--ttl-seconds {spelling}");
    }
}
