//! `docs/SQL.md`: its DuckDB query, run through the `duckdb` Python package on the facts of
//! the real traces (two shards read by glob), gives the totals of `litehit query`.
//!
//! Needs `python3` with `duckdb` (`.ci/run` installs it from PyPI; locally `pip install
//! duckdb`). Without them the test says why and passes, except with `CI` set, where it fails.

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::cli_bin::{ok, parse_query_output, replay_to, run_in, u64s};
use crate::common::shared_file;
use serde_json::Value;

/// Runs the documented query in `dir` (its glob is relative) and prints one JSON row a line.
const RUNNER: &str = r#"
import json, re, sys
import duckdb
doc = open(sys.argv[1], encoding="utf-8").read()
sql = re.search(r"<!-- sql-test: duckdb -->\n```sql\n(.*?)```", doc, re.S).group(1)
if len(sys.argv) > 2:  # a documented WHERE clause, before the query's GROUP BY
    sql = sql.replace("\nGROUP BY", "\n" + sys.argv[2] + "\nGROUP BY", 1)
statements = [s for s in sql.split(";") if s.strip()]
con = duckdb.connect()
for statement in statements[:-1]:
    con.execute(statement)
for instance_id, capacity_gb, requests, input_tokens, hit_tokens in con.execute(statements[-1]).fetchall():
    print(json.dumps({"instance_id": instance_id, "capacity_gb": float(capacity_gb),
                      "requests": int(requests), "input_tokens": int(input_tokens),
                      "hit_tokens": int(hit_tokens)}))
"#;

/// The capacities of the documented query, in its order.
pub(crate) const CAPACITIES_GB: [&str; 4] = ["1", "16", "160", "-1"];

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn the_documented_duckdb_query_gives_the_totals_of_query() {
    check_documented_sql(RUNNER, &["duckdb"], &[], "the docs/SQL.md DuckDB check");
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn the_documented_duckdb_time_window_gives_the_totals_of_query_from() {
    check_documented_window_clause(
        RUNNER,
        &["duckdb"],
        &[],
        "the docs/SQL.md DuckDB time-window check",
        "DuckDB",
    );
}

/// Whether `python3` can import every one of `modules`.
fn python_modules_available(modules: &[&str]) -> Result<(), String> {
    let import = format!("import {}", modules.join(", "));
    match Command::new("python3").args(["-c", &import]).output() {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(format!(
            "python3 cannot {import} (pip install {}): {}",
            modules.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )),
        Err(error) => Err(format!("no python3: {error}")),
    }
}

/// Whether every one of `programs` runs (`PROGRAM --version` exits 0), e.g. `java` for Spark.
fn programs_available(programs: &[&str]) -> Result<(), String> {
    for program in programs {
        match Command::new(program).arg("--version").output() {
            Ok(output) if output.status.success() => {}
            Ok(output) => {
                return Err(format!(
                    "{program} --version failed: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                ));
            }
            Err(error) => return Err(format!("no {program}: {error}")),
        }
    }
    Ok(())
}

/// The longest a runner may take before it is killed and the check fails. Spark, the slowest
/// (a JVM start, then the query), takes 20 s of CPU, 39 s wall on two cores at a load of 10;
/// a hung runner must not hang `cargo test`.
const RUNNER_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs `command` (stdout and stderr collected on threads, so neither pipe fills) for at most
/// [`RUNNER_TIMEOUT`]; past it, kills it and fails. The runner leads its own process group and
/// the whole group is killed: Spark's JVM would exit by itself once the Python that started it
/// is gone (it watches its stdin), but only seconds later, and not if it is the part that hung.
fn output_within_timeout(mut command: Command, what: &str) -> Output {
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{what}: python3 does not start: {error}"));
    let collect = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = collect(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = collect(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + RUNNER_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let group = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: the runner took more than {RUNNER_TIMEOUT:?} and was killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// What the SQL checks share: the real traces replayed as two shards in a temporary
/// directory, `litehit query` over them by glob, and `runner` (a Python script given
/// `docs/SQL.md`, run in that directory, printing one JSON row a line) whose rows must give the
/// same requests, input tokens and hit tokens per instance (and overall) at every capacity of
/// [`CAPACITIES_GB`]. Skips, saying why, when `modules` (Python's) or `programs` are missing —
/// except with `CI` set.
pub(crate) fn check_documented_sql(runner: &str, modules: &[&str], programs: &[&str], what: &str) {
    check_documented_sql_accounting(runner, modules, programs, what, None);
}

/// The time-window clause `docs/SQL.md` gives in its `## {section}` section (the first
/// `` `WHERE timestamp_ns >= …` `` after the heading), which accounts from 600 s on.
fn documented_window_clause(doc: &str, section: &str) -> String {
    let heading = format!("\n## {section}\n");
    let start = doc
        .find(&heading)
        .unwrap_or_else(|| panic!("docs/SQL.md has no {heading:?}"));
    let rest = &doc[start..];
    let clause_start = rest
        .find("`WHERE timestamp_ns >= ")
        .unwrap_or_else(|| panic!("no time-window clause in docs/SQL.md's {section} section"))
        + 1;
    let clause_len = rest[clause_start..]
        .find('`')
        .expect("the clause's closing backtick");
    rest[clause_start..clause_start + clause_len].to_owned()
}

/// [`check_documented_sql`] with the documented time-window clause of `section` added
/// before the query's `GROUP BY` (the runner gets it as its second argument), against
/// `litehit query --from 600` (the clause's 600 s).
pub(crate) fn check_documented_window_clause(
    runner: &str,
    modules: &[&str],
    programs: &[&str],
    what: &str,
    section: &str,
) {
    check_documented_sql_accounting(runner, modules, programs, what, Some(section));
}

fn check_documented_sql_accounting(
    runner: &str,
    modules: &[&str],
    programs: &[&str],
    what: &str,
    window_section: Option<&str>,
) {
    if let Err(reason) = python_modules_available(modules).and(programs_available(programs)) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set, so {what} may not skip: {reason}"
        );
        eprintln!("skipping {what}: {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (trace, instance) in [
        ("traces/conversation_trace.jsonl", "conversation"),
        ("traces/synthetic_trace.jsonl", "synthetic"),
    ] {
        let out = dir.path().join("shards").join(instance);
        ok(replay_to(
            &shared_file(trace),
            &out,
            &["--instance", instance, "--quiet"],
        ));
    }
    let glob = dir.path().join("shards/*/litehit_facts.csv");
    let mut args = vec!["query", glob.to_str().unwrap(), "-", "--summary-only"];
    args.extend(CAPACITIES_GB);
    if window_section.is_some() {
        args.extend(["--from", "600"]);
    }
    let query = parse_query_output(&ok(run_in(None, &args)).stdout);

    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/SQL.md");
    let mut python = Command::new("python3");
    python
        .args(["-c", runner, doc.to_str().unwrap()])
        .current_dir(dir.path());
    if let Some(section) = window_section {
        let clause = documented_window_clause(&std::fs::read_to_string(&doc).unwrap(), section);
        python.arg(clause);
    }
    let output = output_within_timeout(python, what);
    assert!(
        output.status.success(),
        "{what}: the documented SQL failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let mut summaries = query.instance_summaries.clone();
    summaries.push(query.overall.clone());
    assert_eq!(rows.len(), summaries.len() * CAPACITIES_GB.len());
    for summary in &summaries {
        let instance = summary.get("instance_id").cloned().unwrap_or(Value::Null);
        let hit_tokens = u64s(&summary["total_hit_tokens"]);
        for (slot, capacity) in CAPACITIES_GB.iter().enumerate() {
            let capacity: f64 = capacity.parse().unwrap();
            let row = rows
                .iter()
                .find(|row| row["instance_id"] == instance && row["capacity_gb"] == capacity)
                .unwrap_or_else(|| panic!("no SQL row for {instance} at {capacity} GB"));
            assert_eq!(row["requests"], summary["requests"], "{row}");
            assert_eq!(row["input_tokens"], summary["total_input_tokens"], "{row}");
            assert_eq!(row["hit_tokens"].as_u64(), Some(hit_tokens[slot]), "{row}");
        }
    }
    assert!(
        u64s(&query.overall["total_hit_tokens"])[0] > 0,
        "the smallest capacity hits something, so the check is not all zeros"
    );
}
