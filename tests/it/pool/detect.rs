//! `query` and `mrc` recognise the shared pool lane by its rows, not its name: a lane is the
//! pool when it holds every other lane's requests. Checked against independent answers: the
//! replay without a pool (the overall line and mrc's total must be its own), the same run
//! with the pool under replay's default name (whose comparison `pool.rs` and
//! `pool_windows.rs` check against the projector and the naive oracle), and the summed
//! per-instance lines. Also the `--pool [NAME]` flag's spellings, the error for shard files
//! of two shardings (the same rows of an instance in two files), and a shard that got no instance.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::cli_bin::{
    FACTS, InstanceSpec, config_json, failed, generate, ok, replay_to, run_in, run_with_stdin,
    standard_trace, write_file,
};
use litehit_core::workload::WorkloadConfig;

const TRACE_BLOCK_SIZE: &str = "16";
const CAPACITIES_GB: [&str; 3] = ["0.01", "0.2", "-1"];

/// A standard trace in `dir/name` with these instances.
fn trace(dir: &Path, name: &str, instance_ids: &[&str], requests: usize) -> PathBuf {
    let requests = generate(
        WorkloadConfig {
            seed: 23,
            instance_ids: instance_ids.iter().map(|&id| id.to_owned()).collect(),
            live_conversations: 30,
            ..WorkloadConfig::default()
        },
        requests,
    );
    write_file(dir, name, &standard_trace(&requests))
}

fn replay(trace: &Path, out: &Path, extra: &[&str]) -> PathBuf {
    let flags = [
        &["--trace-block-size", TRACE_BLOCK_SIZE, "--quiet"][..],
        extra,
    ]
    .concat();
    ok(replay_to(trace, out, &flags));
    out.join(FACTS)
}

/// `query FACTS --shard MORE… - CAPACITIES --summary-only EXTRA…`, as run.
fn query_run(facts: &[&Path], extra: &[&str]) -> crate::common::cli_bin::Run {
    let mut args: Vec<String> = vec!["query".into(), facts[0].display().to_string(), "-".into()];
    args.extend(CAPACITIES_GB.map(str::to_owned));
    args.push("--summary-only".into());
    for more in &facts[1..] {
        args.extend(["--shard".to_owned(), more.display().to_string()]);
    }
    args.extend(extra.iter().map(|&flag| flag.to_owned()));
    run_in(None, &args)
}

fn query(facts: &[&Path], extra: &[&str]) -> String {
    ok(query_run(facts, extra)).stdout
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The overall line: the summary without `instance_id` and without `pool`.
fn overall(text: &str) -> Value {
    lines(text)
        .into_iter()
        .find(|line| line.get("instance_id").is_none() && line.get("pool").is_none())
        .unwrap()
}

fn pool_line(text: &str) -> Option<Value> {
    lines(text)
        .into_iter()
        .find(|line| line.get("pool").is_some())
}

/// `text` with the default-named pool's lines renamed to `name` (the oracle for a pool of
/// another name: its lines sort after the engines' either way).
fn renamed(text: &str, name: &str) -> String {
    text.replace(
        r#""instance_id":"pool""#,
        &format!(r#""instance_id":"{name}""#),
    )
    .replace(r#""pool":"pool""#, &format!(r#""pool":"{name}""#))
}

fn mrc_json(facts: &[&Path], extra: &[&str]) -> Value {
    let mut args: Vec<String> = facts
        .iter()
        .map(|path| path.display().to_string())
        .collect();
    args.insert(0, "mrc".into());
    args.push("--json".into());
    args.extend(extra.iter().map(|&flag| flag.to_owned()));
    serde_json::from_str(&ok(run_in(None, &args)).stdout).unwrap()
}

#[test]
fn an_instance_called_pool_without_replay_pool_is_an_ordinary_instance() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(
        dir.path(),
        "t.jsonl",
        &["engine-0", "engine-1", "pool"],
        900,
    );
    let facts = replay(&trace, &dir.path().join("plain"), &[]);
    let out = query(&[&facts], &[]);
    assert!(pool_line(&out).is_none(), "no comparison: {out}");
    // Upstream's overall line: every row, the per-instance lines summed.
    let summaries = lines(&out);
    let per_instance: Vec<&Value> = summaries
        .iter()
        .filter(|line| line.get("instance_id").is_some())
        .collect();
    assert_eq!(per_instance.len(), 3);
    let sum = |key: &str| -> u64 { per_instance.iter().map(|l| l[key].as_u64().unwrap()).sum() };
    let total = overall(&out);
    assert_eq!(total["requests"], 900);
    assert_eq!(total["requests"], sum("requests"));
    assert_eq!(total["total_input_tokens"], sum("total_input_tokens"));
    for slot in 0..CAPACITIES_GB.len() {
        let hits: u64 = per_instance
            .iter()
            .map(|l| l["total_hit_tokens"][slot].as_u64().unwrap())
            .sum();
        assert_eq!(total["total_hit_tokens"][slot], hits);
    }
    let curves = mrc_json(&[&facts], &[]);
    assert!(curves.get("pool").is_none());
    assert_eq!(curves["total"]["requests"], 900);
    // Named as the pool, it is refused, saying what it holds.
    let message = failed(&query_run(&[&facts], &["--pool", "pool"])).to_owned();
    assert!(
        message.contains("--pool pool: lane pool is not a shared pool lane")
            && message.contains(&format!(
                "pool has {} rows, the other 2 lanes {} together",
                per_instance[2]["requests"],
                900 - per_instance[2]["requests"].as_u64().unwrap()
            )),
        "{message}"
    );
}

#[test]
fn a_pool_of_any_name_is_recognised_by_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(
        dir.path(),
        "t.jsonl",
        &["engine-0", "engine-1", "engine-2"],
        900,
    );
    let plain = replay(&trace, &dir.path().join("plain"), &[]);
    let default = replay(&trace, &dir.path().join("default"), &["--pool"]);
    let shared = replay(&trace, &dir.path().join("shared"), &["--pool=shared"]);
    let config = write_file(
        dir.path(),
        "keyed.json",
        &config_json(
            trace.to_str().unwrap(),
            dir.path().join("keyed").to_str().unwrap(),
            16,
            &["engine-0", "engine-1", "engine-2"].map(|id| InstanceSpec {
                instance_id: id,
                block_size: 16,
                block_bytes: 16 * 131_072,
            }),
            r#""pool_instance_id":"shared","#,
        ),
    );
    ok(run_in(
        None,
        ["replay", config.to_str().unwrap(), "--quiet"],
    ));
    let keyed = dir.path().join("keyed").join(FACTS);
    let expected = renamed(&query(&[&default], &[]), "shared");
    for facts in [&shared, &keyed] {
        let out = query(&[facts], &[]);
        assert_eq!(out, expected, "{}", facts.display());
        assert_eq!(query(&[facts], &["--pool", "shared"]), expected);
        // The overall line is the instances' own caches: the replay without the pool's.
        assert_eq!(overall(&out), overall(&query(&[&plain], &[])));
        assert_eq!(pool_line(&out).unwrap()["instances"], 3);
    }
    let curves = mrc_json(&[&shared], &[]);
    let reference = mrc_json(&[&plain], &[]);
    assert_eq!(
        curves["total"], reference["total"],
        "the pool is not in the total"
    );
    assert_eq!(curves["pool"]["instance_id"], "shared");
    let default_curves = mrc_json(&[&default], &[]);
    assert_eq!(
        curves["pool"]["comparison"],
        default_curves["pool"]["comparison"]
    );
    // Another lane named as the pool is refused, naming the pool it is not.
    let message = failed(&query_run(&[&shared], &["--pool", "engine-1"])).to_owned();
    assert!(
        message.contains("--pool engine-1: lane engine-1 is not a shared pool lane"),
        "{message}"
    );
    assert!(
        message.contains("the pool lane here is shared"),
        "{message}"
    );
    let message = failed(&run_in(
        None,
        ["mrc", shared.to_str().unwrap(), "--pool", "engine-1"],
    ))
    .to_owned();
    assert!(
        message.contains("lane engine-1 is not a shared pool lane"),
        "{message}"
    );
}

#[test]
fn shard_files_time_ranges_and_windows_find_the_pool_too() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(
        dir.path(),
        "t.jsonl",
        &["engine-0", "engine-1", "engine-2", "engine-3"],
        1000,
    );
    let default = replay(&trace, &dir.path().join("default"), &["--pool"]);
    // The `--shard` refusal's recipe: shards without the pool, the pool as one more task.
    let shards: Vec<PathBuf> = (0..2)
        .map(|k| {
            replay(
                &trace,
                &dir.path().join(format!("shards/{k}")),
                &["--shard", &format!("{k}/2")],
            )
        })
        .collect();
    let pool = replay(
        &trace,
        &dir.path().join("shards/pool"),
        &["--instance", "shared"],
    );
    let glob = dir.path().join("shards/*/litehit_facts.csv");
    let times: Vec<i64> = crate::common::cli_bin::read_facts(&default)
        .iter()
        .map(|row| row.timestamp_ns)
        .collect();
    let (first, last) = (*times.iter().min().unwrap(), *times.iter().max().unwrap());
    let span = last - first;
    // Absolute times need no first pass (the pool is recognised in the query's own); trace
    // seconds and a warm-up share do.
    let from_absolute = format!("{}ns", first + span / 4);
    let to_absolute = format!("{}ns", first + span * 3 / 4);
    #[expect(clippy::cast_precision_loss, reason = "a test's time point")]
    let from_seconds = format!("{}s", (span / 3) as f64 / 1e9);
    let width_seconds = format!("{}s", (span / 5) as f64 / 1e9);
    for extra in [
        &[][..],
        &["--from", &from_absolute, "--to", &to_absolute],
        &["--from", &from_seconds],
        &["--exclude-warmup", "20%"],
    ] {
        let expected = renamed(&query(&[&default], extra), "shared");
        assert_eq!(
            query(&[&shards[0], &shards[1], &pool], extra),
            expected,
            "{extra:?}"
        );
        assert_eq!(
            query(&[&pool, &shards[1], &shards[0]], extra),
            expected,
            "{extra:?}"
        );
        assert_eq!(query(&[&glob], extra), expected, "{extra:?}");
    }
    let windowed = |facts: &Path, extra: &[&str]| {
        let mut args = vec![
            "query",
            facts.to_str().unwrap(),
            "-",
            "0.01",
            "-1",
            "--window",
            &width_seconds,
        ];
        args.extend(extra);
        ok(run_in(None, &args)).stdout
    };
    let expected = renamed(&windowed(&default, &[]), "shared");
    assert!(expected.contains(r#""pool":"shared""#), "{expected}");
    assert_eq!(windowed(&glob, &[]), expected);
    assert_eq!(
        windowed(&glob, &["--from", &from_seconds]),
        renamed(&windowed(&default, &["--from", &from_seconds]), "shared")
    );
    let curves = mrc_json(&[&shards[0], &shards[1], &pool], &[]);
    assert_eq!(curves["pool"]["instance_id"], "shared");
    assert_eq!(
        curves["total"],
        mrc_json(&[&shards[0], &shards[1]], &[])["total"]
    );
}

#[test]
fn one_instance_and_its_pool_are_told_apart_by_name_only() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path(), "t.jsonl", &["engine-0"], 500);
    let default = replay(&trace, &dir.path().join("default"), &["--pool"]);
    let shared = replay(&trace, &dir.path().join("shared"), &["--pool=shared"]);
    // Replay's default name is taken; another name only with --pool NAME.
    let out = query(&[&default], &[]);
    assert_eq!(pool_line(&out).unwrap()["instances"], 1);
    assert_eq!(overall(&out)["requests"], 500);
    let unnamed = query(&[&shared], &[]);
    assert!(pool_line(&unnamed).is_none(), "{unnamed}");
    assert_eq!(
        overall(&unnamed)["requests"],
        1000,
        "documented: two equal lanes"
    );
    assert_eq!(
        query(&[&shared], &["--pool", "shared"]),
        renamed(&out, "shared")
    );
    // One lane alone is no pool, whatever its name (it was once taken as a pool of 0).
    let alone = self::trace(dir.path(), "alone.jsonl", &["pool"], 200);
    let alone = query(&[&replay(&alone, &dir.path().join("alone"), &[])], &[]);
    assert!(pool_line(&alone).is_none(), "{alone}");
    assert_eq!(overall(&alone)["requests"], 200);
}

#[test]
fn a_pool_of_its_own_name_on_standard_input_needs_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(
        dir.path(),
        "t.jsonl",
        &["engine-0", "engine-1", "engine-2"],
        600,
    );
    let default = replay(&trace, &dir.path().join("default"), &["--pool"]);
    let shared = replay(&trace, &dir.path().join("shared"), &["--pool=shared"]);
    let stdin = |facts: &Path, extra: &[&str]| {
        let mut args = vec!["query", "-", "-", "0.01", "--summary-only"];
        args.extend(extra);
        run_with_stdin(None, &args, std::fs::read(facts).unwrap())
    };
    let expected = renamed(&ok(stdin(&default, &[])).stdout, "shared");
    assert_eq!(ok(stdin(&shared, &["--pool", "shared"])).stdout, expected);
    let refused = stdin(&shared, &[]);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("lane shared is the shared pool lane")
            && refused.stderr.contains("--pool shared"),
        "{}",
        refused.stderr
    );
}

#[test]
fn pool_takes_its_name_after_a_space_and_says_when_it_took_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path(), "t.jsonl", &["engine-0", "engine-1"], 300);
    let equals = replay(&trace, &dir.path().join("equals"), &["--pool=shared"]);
    let spaced = replay(&trace, &dir.path().join("spaced"), &["--pool", "shared"]);
    assert_eq!(
        std::fs::read(&equals).unwrap(),
        std::fs::read(&spaced).unwrap()
    );
    let bare = replay(&trace, &dir.path().join("bare"), &["--pool"]);
    assert!(std::fs::read_to_string(&bare).unwrap().contains(",pool,"));
    // `--pool TRACE`: the trace became the pool's name.
    let text = trace.to_str().unwrap();
    for args in [
        vec![
            "replay",
            "--pool",
            text,
            "--out",
            dir.path().join("x").to_str().unwrap(),
        ],
        vec!["watch", "--pool", text, "--headless"],
    ] {
        let run = run_in(None, &args);
        assert_eq!(run.code, Some(1), "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "--pool took '{text}' as the pool's name; write --pool=NAME or put --pool after \
                 the trace"
            )),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert!(!dir.path().join("x").exists());
    // An instance of the pool's name: the error says how to name the pool otherwise.
    let clash = write_file(
        dir.path(),
        "clash.jsonl",
        &crate::common::cli_bin::get_row("pool", "t1", 1, &[1, 2], 32),
    );
    let message = failed(&run_in(
        None,
        [
            "replay",
            clash.to_str().unwrap(),
            "--trace-block-size",
            TRACE_BLOCK_SIZE,
            "--out",
            dir.path().join("clash").to_str().unwrap(),
            "--pool",
        ],
    ))
    .to_owned();
    assert!(message.contains("--pool=NAME"), "{message}");
}

#[test]
fn overlapping_shard_files_are_refused_and_an_empty_shard_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(
        dir.path(),
        "t.jsonl",
        &["engine-0", "engine-1", "engine-2", "engine-3"],
        600,
    );
    let halves: Vec<PathBuf> = (0..2)
        .map(|k| {
            replay(
                &trace,
                &dir.path().join(format!("a/{k}")),
                &["--shard", &format!("{k}/2")],
            )
        })
        .collect();
    let thirds: Vec<PathBuf> = (0..3)
        .map(|k| {
            replay(
                &trace,
                &dir.path().join(format!("b/{k}")),
                &["--shard", &format!("{k}/3")],
            )
        })
        .collect();
    let disjoint = ok(query_run(&[&halves[0], &halves[1]], &[]));
    assert!(!disjoint.stderr.contains("note"), "{}", disjoint.stderr);
    // Shards of two shardings: an instance in both files, the same rows in each (one replay's
    // lane): refused, naming it and the files (a file split by rows only gets a note, see
    // `query_review2`).
    let (a, b) = (0..2)
        .flat_map(|i| (0..3).map(move |j| (i, j)))
        .find(|&(i, j)| {
            let ids = |path: &Path| -> std::collections::BTreeSet<String> {
                crate::common::cli_bin::read_facts(path)
                    .into_iter()
                    .map(|row| row.instance_id)
                    .collect()
            };
            !ids(&halves[i]).is_disjoint(&ids(&thirds[j]))
        })
        .map(|(i, j)| (&halves[i], &thirds[j]))
        .expect("two shardings of four instances overlap");
    for run in [
        query_run(&[a, b], &[]),
        run_in(None, ["mrc", a.to_str().unwrap(), b.to_str().unwrap()]),
    ] {
        let message = failed(&run);
        assert!(
            message.contains("the same rows of instance engine-")
                && message.contains(&format!(
                    " are in {} and {}: one facts file was given twice",
                    a.display(),
                    b.display()
                )),
            "{message}"
        );
    }
    // A trace of one instance: every shard but one is empty, and says so.
    let single = self::trace(dir.path(), "one.jsonl", &["engine-0"], 50);
    let notes: Vec<String> = (0..3)
        .map(|k| {
            let mut args = vec![
                "replay",
                single.to_str().unwrap(),
                "--trace-block-size",
                TRACE_BLOCK_SIZE,
            ];
            let out = dir.path().join(format!("one/{k}"));
            let shard = format!("{k}/3");
            args.extend(["--out", out.to_str().unwrap(), "--quiet", "--shard", &shard]);
            ok(run_in(None, &args)).stderr
        })
        .collect();
    let empty: Vec<&String> = notes.iter().filter(|note| !note.is_empty()).collect();
    assert_eq!(empty.len(), 2, "{notes:?}");
    for note in empty {
        assert!(
            note.contains("got none of the trace's 1 instance")
                && note.contains("cannot be split by --shard"),
            "{note}"
        );
    }
}

/// The pool task's file read with only some shards' files: the lane named `pool` holds more
/// rows than the others together, so it is no pool of these facts; it is counted as an
/// instance (as any lane that is not the pool), and a note says why and what is missing —
/// in `query`, `query --from` (its first pass) and `mrc`. `--pool pool` says it too.
#[test]
fn a_pool_file_read_with_some_shards_only_gets_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = trace(dir.path(), "fleet.jsonl", &["a", "b", "c", "d"], 600);
    let mut shards = Vec::new();
    for shard in 0..2 {
        let spec = format!("{shard}/2");
        let out = dir.path().join(format!("shard-{shard}"));
        shards.push(replay(&fleet, &out, &["--shard", &spec]));
    }
    let pool = replay(&fleet, &dir.path().join("pool"), &["--instance", "pool"]);
    let note = "note: lane pool has 600 rows, more than the other";
    // All shards: the pool is recognised and no note is printed.
    let all = query_run(&[&shards[0], &shards[1], &pool], &[]);
    assert!(!all.stderr.contains(note), "{}", all.stderr);
    assert!(pool_line(&ok(all).stdout).is_some());
    // One shard missing: counted as an instance, with the note.
    let some = [shards[0].as_path(), pool.as_path()];
    let others: u64 = overall(&query(&[&shards[0]], &[]))["requests"]
        .as_u64()
        .unwrap();
    assert!(
        others > 0 && others < 600,
        "shard 0 holds some instances: {others}"
    );
    for extra in [&[][..], &["--from", "0"][..]] {
        let run = query_run(&some, extra);
        assert!(run.stderr.contains(note), "{extra:?}: {}", run.stderr);
        assert!(
            run.stderr
                .contains("the facts of some instances (shards) are missing")
        );
        let text = ok(run).stdout;
        assert_eq!(overall(&text)["requests"].as_u64(), Some(600 + others));
        assert!(pool_line(&text).is_none());
    }
    let mrc = run_in(
        None,
        [
            "mrc",
            some[0].to_str().unwrap(),
            some[1].to_str().unwrap(),
            "--json",
        ],
    );
    assert!(mrc.stderr.contains(note), "{}", mrc.stderr);
    let named = query_run(&some, &["--pool", "pool"]);
    let stderr = failed(&named);
    assert!(
        stderr.contains(
            "more, so if it is the pool, the facts of some instances (shards) are missing"
        ),
        "{stderr}"
    );
}
