//! `tiers` and `tier-mode` in the defaults file (docs/CONFIG.md): `query`, `mrc` and `watch`
//! give exactly what the typed flags give, a typed flag wins, a bad tier names the file, line
//! and key, `--tier-mode` typed with the file's tiers works (it needed `--tiers` typed
//! before), and `query --window` with typed capacities leaves the file's tiers out.
//! Expected outputs come from the same binary run with the flags typed.

use crate::common::cli_bin::{Run, generate, litehit, ok, replay_to, standard_trace, write_file};
use litehit_core::workload::WorkloadConfig;

/// A temp dir with the facts of a generated two-instance trace and a defaults file.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let requests = generate(
            WorkloadConfig {
                seed: 11,
                instance_ids: vec!["a".into(), "b".into()],
                ..WorkloadConfig::default()
            },
            400,
        );
        let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
        ok(replay_to(
            &trace,
            &dir.path().join("out"),
            &["--quiet", "--block-size", "16", "--block-bytes", "1MiB"],
        ));
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        Self { dir }
    }

    /// `litehit ARGS` reading this setup's defaults file.
    fn with_file(&self, args: &[&str]) -> Run {
        self.run(&[&["--config-file", "config.toml"], args].concat())
    }

    /// `litehit ARGS` reading no defaults file.
    fn typed(&self, args: &[&str]) -> Run {
        self.run(&[&["--no-config-file"], args].concat())
    }

    fn run(&self, args: &[&str]) -> Run {
        let output = litehit()
            .current_dir(self.dir.path())
            .args(args)
            .output()
            .unwrap();
        Run {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }
}

const QUERY: &[&str] = &["query", "out", "-", "0.01", "0.1", "--summary-only"];

#[test]
fn query_and_mrc_take_tiers_and_mode_from_the_file_as_if_typed() {
    let setup = Setup::new("tiers = [\"hbm=10b\", \"dram=200b\"]\ntier-mode = \"inclusive\"\n");
    let typed_flags = ["--tiers", "hbm=10b,dram=200b", "--tier-mode", "inclusive"];
    let from_file = ok(setup.with_file(QUERY)).stdout;
    assert_eq!(
        from_file,
        ok(setup.typed(&[QUERY, &typed_flags[..]].concat())).stdout
    );
    assert!(
        from_file.contains("\"tier_mode\":\"inclusive\""),
        "{from_file}"
    );
    assert_ne!(
        from_file,
        ok(setup.typed(QUERY)).stdout,
        "it changed something"
    );
    let mrc = ["mrc", "out"];
    assert_eq!(
        ok(setup.with_file(&mrc)).stdout,
        ok(setup.typed(&[&mrc[..], &typed_flags[..]].concat())).stdout
    );
}

#[test]
fn typed_tiers_win_and_a_typed_mode_applies_to_the_files_tiers() {
    let setup = Setup::new("tiers = \"10b,200b\"\n");
    let typed = ["--tiers", "5b,50b"];
    assert_eq!(
        ok(setup.with_file(&[QUERY, &typed[..]].concat())).stdout,
        ok(setup.typed(&[QUERY, &typed[..]].concat())).stdout
    );
    let mode = ["--tier-mode", "inclusive"];
    assert_eq!(
        ok(setup.with_file(&[QUERY, &mode[..]].concat())).stdout,
        ok(setup.typed(&[QUERY, &["--tiers", "10b,200b"][..], &mode[..]].concat())).stdout
    );
    // A mode with no tiers anywhere is still an error.
    let run = setup.typed(&[QUERY, &mode[..]].concat());
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("--tier-mode needs --tiers"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_bad_tier_in_the_file_names_file_line_and_key() {
    let setup = Setup::new("# tiers\n\ntiers = \"hbm=80GB,hbm=4TB\"\n");
    let run = setup.with_file(QUERY);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr
            .starts_with("litehit: config.toml:3: tiers: tier name hbm given twice"),
        "{}",
        run.stderr
    );
    std::fs::write(
        setup.dir.path().join("config.toml"),
        "tier-mode = \"both\"\n",
    )
    .unwrap();
    let run = setup.with_file(QUERY);
    assert!(
        run.stderr
            .starts_with("litehit: config.toml:1: tier-mode: expected"),
        "{}",
        run.stderr
    );
}

#[test]
fn query_window_with_typed_capacities_leaves_the_files_tiers_out() {
    let setup = Setup::new("tiers = \"10b,200b\"\n");
    let window = ["query", "out", "-", "0.01", "--window", "1s"];
    assert_eq!(
        ok(setup.with_file(&window)).stdout,
        ok(setup.typed(&window)).stdout
    );
    let tiers_only = ["query", "out", "-", "--window", "1s"];
    assert_eq!(
        ok(setup.with_file(&tiers_only)).stdout,
        ok(setup.typed(&[&tiers_only[..], &["--tiers", "10b,200b"][..]].concat())).stdout
    );
}

#[test]
fn a_file_with_only_tier_mode_asks_nothing_of_commands_without_tiers() {
    let setup = Setup::new("tier-mode = \"inclusive\"\n");
    assert_eq!(
        ok(setup.with_file(QUERY)).stdout,
        ok(setup.typed(QUERY)).stdout
    );
    ok(setup.with_file(&["mrc", "out"]));
    // With typed tiers the file's mode applies.
    let tiers = ["--tiers", "10b,200b"];
    assert_eq!(
        ok(setup.with_file(&[QUERY, &tiers[..]].concat())).stdout,
        ok(setup.typed(&[QUERY, &tiers[..], &["--tier-mode", "inclusive"][..]].concat())).stdout
    );
}

#[test]
fn tiers_out_of_order_for_the_files_mode_name_file_line_and_key() {
    let setup = Setup::new("tier-mode = \"inclusive\"\n\ntiers = [\"4GB\", \"2GB\"]\n");
    let run = setup.with_file(QUERY);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr
            .starts_with("litehit: config.toml:3: tiers: inclusive tiers must grow top first"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_files_tiers_out_of_order_for_a_typed_mode_name_the_file() {
    let setup = Setup::new("# hardware\ntiers = \"4TB,80GB\"\n");
    let run = setup.with_file(&[QUERY, &["--tier-mode", "inclusive"][..]].concat());
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr
            .starts_with("litehit: config.toml:2: tiers: inclusive tiers must grow top first"),
        "{}",
        run.stderr
    );
}
