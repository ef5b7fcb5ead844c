//! `--help` snapshots.

use crate::common::cli_bin::run_ok;

#[test]
fn help_texts_are_stable() {
    for (name, args) in [
        ("litehit_help", vec!["--help"]),
        ("replay_help", vec!["replay", "--help"]),
        ("query_help", vec!["query", "--help"]),
        ("mrc_help", vec!["mrc", "--help"]),
        ("watch_help", vec!["watch", "--help"]),
        ("demo_help", vec!["demo", "--help"]),
    ] {
        let run = run_ok(&args);
        assert_eq!(run.stderr, "");
        insta::assert_snapshot!(name, run.stdout);
    }
}
