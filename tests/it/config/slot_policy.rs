//! One slot policy (issue #28, item 3): `watch --capacity-gb` (the real binary), the defaults
//! file's `capacity-gb` and the monitor's add-slot dialog (on `App` alone) refuse the same
//! slots with the same message, at the same block bytes (64 MiB here).

use crate::common::cli_bin::{failed, generate, run_in, standard_trace, write_file};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use litehit_core::grammar::parse_capacity;
use litehit_core::projector::Capacity;
use litehit_core::workload::WorkloadConfig;
use litehit_live::snapshot::{LaneSnapshot, Slot};
use litehit_live::{Command as LiveCommand, LiveSnapshot};
use litehit_tui::app::{App, Mode};

const BLOCK_BYTES: u64 = 64 << 20;

/// Slots as `--capacity-gb` takes them (the last one is the refused one) and the reason every
/// surface gives.
const REFUSED: &[(&str, &str)] = &[
    (
        "10,0",
        "0 GiB is 0 blocks of 64.00 MiB: a slot needs at least one block",
    ),
    (
        "10,0b",
        "0 blk is 0 blocks: a slot needs at least one block",
    ),
    // Under one block of 64 MiB (it was taken by the flag, refused by the dialog).
    (
        "1e-12",
        "is 0 blocks of 64.00 MiB: a slot needs at least one block",
    ),
    (
        "0.01",
        "0.01 GiB is 0 blocks of 64.00 MiB: a slot needs at least one block",
    ),
    (
        "10,160b",
        "160 blk is the same block count as the slot 10 GiB: each slot needs its own block count",
    ),
    (
        "10,10GiB",
        "10 GiB is given twice: each slot needs its own block count",
    ),
    (
        "10,-1",
        "unlimited (inf, or any negative size) is always shown (the ∞ column); leave it out",
    ),
];

/// Slots the flag and the defaults file take in one list whose refused slot is not the last,
/// with what the dialog is given for it (the slots before the refused one, then it) and the
/// reason (issue #28, item 3: `0,10` ran while the dialog refused `0`; both slots of
/// `1e-12,2e-12` are 0 blocks).
const REFUSED_FIRST: &[(&str, &str, &str)] = &[
    (
        "0,10",
        "0",
        "0 GiB is 0 blocks of 64.00 MiB: a slot needs at least one block",
    ),
    (
        "1e-12,2e-12",
        "1e-12",
        "is 0 blocks of 64.00 MiB: a slot needs at least one block",
    ),
];

/// A standard trace in a temp dir (its format, and so its block size, is known at start).
fn trace_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let requests = generate(WorkloadConfig::default(), 20);
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    (dir, trace)
}

/// What the add-slot dialog does with the last of `slots` typed, the others being slots
/// already, on lanes of [`BLOCK_BYTES`]: the slot it adds, or the reason it shows.
fn dialog(slots: &str) -> Result<Capacity, String> {
    let (existing, typed) = slots.rsplit_once(',').unwrap_or(("", slots));
    let existing: Vec<Capacity> = existing
        .split(',')
        .filter(|text| !text.is_empty())
        .map(|text| parse_capacity(text).unwrap())
        .collect();
    let mut app = App::default();
    app.observe(
        &LiveSnapshot {
            slots: existing
                .iter()
                .zip(1..)
                .map(|(&capacity, id)| Slot { id, capacity })
                .collect(),
            lanes: vec![LaneSnapshot {
                block_bytes: BLOCK_BYTES,
                block_size_tokens: 16,
                ..LaneSnapshot::default()
            }],
            ..LiveSnapshot::default()
        }
        .finished(),
    );
    let press = |code| KeyEvent::new(code, KeyModifiers::NONE);
    app.handle_key(press(KeyCode::Char('a')));
    for c in typed.chars() {
        app.handle_key(press(KeyCode::Char(c)));
    }
    match (app.handle_key(press(KeyCode::Enter)), &app.mode) {
        (Some(LiveCommand::AddSlot(capacity)), _) => Ok(capacity),
        (None, Mode::SlotEditor(editor)) => Err(editor.error.clone().unwrap_or_default()),
        (other, mode) => panic!("{slots:?}: unexpected {other:?} in {mode:?}"),
    }
}

#[test]
fn the_flag_the_defaults_file_and_the_dialog_refuse_the_same_slots_alike() {
    let (dir, trace) = trace_dir();
    let trace = trace.to_str().unwrap();
    let cases = REFUSED
        .iter()
        .map(|&(slots, reason)| (slots, slots, reason))
        .chain(REFUSED_FIRST.iter().copied());
    for (slots, typed, reason) in cases {
        // The flag.
        let run = run_in(
            Some(dir.path()),
            [
                "watch",
                trace,
                "--headless",
                "--exit-at-eof",
                "--no-config-file",
                "--block-bytes",
                "64MiB",
                "--capacity-gb",
                slots,
            ],
        );
        let stderr = failed(&run);
        assert!(stderr.contains("--capacity-gb: "), "{slots}: {stderr}");
        assert!(stderr.contains(reason), "--capacity-gb {slots}: {stderr}");
        // The defaults file, naming its line and key.
        let config = write_file(
            dir.path(),
            "config.toml",
            &format!("block-bytes = \"64MiB\"\ncapacity-gb = \"{slots}\"\n"),
        );
        let run = run_in(
            Some(dir.path()),
            [
                "--config-file",
                config.to_str().unwrap(),
                "watch",
                trace,
                "--headless",
                "--exit-at-eof",
            ],
        );
        let stderr = failed(&run);
        assert!(stderr.contains("config.toml:2"), "{slots}: {stderr}");
        assert!(stderr.contains(reason), "capacity-gb = {slots:?}: {stderr}");
        // The dialog.
        let shown = dialog(typed).unwrap_err();
        assert!(shown.contains(reason), "dialog {typed}: {shown}");
    }
    // A slot of its own block count is taken.
    assert_eq!(dialog("10,161b"), Ok(Capacity::Blocks(161)));
}
