//! Safe publication (issue 16, points 1–3 and 6): one writer per destination, a fresh
//! exclusively created temp file, nothing planted beside the destination followed, used or
//! waited on, inputs named as temp files refused. Through the real binary.
//!
//! Regression tests for <https://github.com/litehit/litehit/issues/16>.

use std::fs;
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::cli_bin::{
    FACTS, assert_mentions, facts_temps, failed, generate, litehit, make_fifo, ok, run_in,
    standard_trace, write_file,
};
use litehit_core::workload::WorkloadConfig;

/// How long any one run may take before the test calls it hung (a regression fails, it
/// does not hang the suite).
const HANG_LIMIT: Duration = Duration::from_secs(120);

/// How often two writers race for one destination.
const RACE_REPETITIONS: usize = 20;

const BLOCK_FLAGS: [&str; 4] = ["--block-size", "16", "--block-bytes", "1048576"];

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temp paths are UTF-8")
}

/// A standard trace of `requests` requests from `seed`, written to `dir/name`.
fn trace(dir: &Path, name: &str, seed: u64, requests: usize) -> PathBuf {
    let config = WorkloadConfig {
        seed,
        instance_ids: vec!["pod-a".into(), "pod-b".into()],
        max_request_blocks: 24,
        turn_growth_blocks: (1, 4),
        system_prompt_blocks: (1, 4),
        ..WorkloadConfig::default()
    };
    write_file(dir, name, &standard_trace(&generate(config, requests)))
}

/// `litehit replay TRACE --out OUT --quiet` with the test's block flags.
fn replay_command(trace: &Path, out: &Path) -> Command {
    let mut command = litehit();
    command
        .args(["replay", path_str(trace), "--out", path_str(out), "--quiet"])
        .args(BLOCK_FLAGS);
    command
}

/// `litehit watch TRACE --headless --exit-at-eof --facts-out FACTS_OUT`: its facts are
/// published when it has read the whole trace.
fn headless_watch_command(trace: &Path, facts_out: &Path) -> Command {
    let mut command = litehit();
    command
        .args(["watch", path_str(trace), "--headless", "--exit-at-eof"])
        .args(["--facts-out", path_str(facts_out)])
        .args(BLOCK_FLAGS);
    command
}

/// What a finished child did.
struct Finished {
    code: Option<i32>,
    stderr: String,
}

/// Starts `command` with stderr piped (stdout discarded).
fn start(mut command: Command) -> Child {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the litehit binary runs")
}

/// Waits for `child` at most [`HANG_LIMIT`]; a child still running then is killed and the
/// test fails, naming `what`.
fn finish(mut child: Child, what: &str) -> Finished {
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > HANG_LIMIT {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{what} hung: still running after {HANG_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    Finished {
        code: status.code(),
        stderr,
    }
}

/// Runs `command` to its end (bounded by [`HANG_LIMIT`]).
fn run_bounded(command: Command, what: &str) -> Finished {
    finish(start(command), what)
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// One racer's result: it published (exit 0), or it found the other writer at once (exit 1,
/// naming the path and the other writer). Returns whether it published.
fn published_or_refused(run: &Finished, what: &str, facts: &Path) -> bool {
    match run.code {
        Some(0) => true,
        Some(1) => {
            assert_mentions(
                &run.stderr,
                &[
                    "another writer (pid ",
                    "is publishing this file",
                    path_str(facts),
                ],
            );
            false
        }
        other => panic!("{what} exited {other:?}: {}", run.stderr),
    }
}

/// Two `replay`s of different traces into one `--out`, at once, 20 times: the facts file is
/// always exactly one of the two replays' outputs (before the fix, the second truncated the
/// first's temp file, and the published file held NUL bytes and the other trace's rows),
/// and nothing but the facts file is left.
#[test]
fn two_replays_into_one_out_publish_one_whole_output() {
    let dir = tempfile::tempdir().unwrap();
    let traces = [
        trace(dir.path(), "a.jsonl", 1, 40_000),
        trace(dir.path(), "b.jsonl", 2, 40_000),
    ];
    let expected: Vec<Vec<u8>> = traces
        .iter()
        .enumerate()
        .map(|(index, trace)| {
            let alone = dir.path().join(format!("alone-{index}"));
            let run = run_bounded(replay_command(trace, &alone), "a lone replay");
            assert_eq!(run.code, Some(0), "{}", run.stderr);
            fs::read(alone.join(FACTS)).unwrap()
        })
        .collect();
    assert_ne!(expected[0], expected[1], "the two traces give other facts");

    let out = dir.path().join("shared-out");
    let facts = out.join(FACTS);
    for repetition in 0..RACE_REPETITIONS {
        let children = [
            start(replay_command(&traces[0], &out)),
            start(replay_command(&traces[1], &out)),
        ];
        let [a, b] = children.map(|child| finish(child, "a racing replay"));
        let published = [
            published_or_refused(&a, "replay a", &facts),
            published_or_refused(&b, "replay b", &facts),
        ];
        assert!(
            published.iter().any(|&p| p),
            "repetition {repetition}: neither published\na: {}\nb: {}",
            a.stderr,
            b.stderr
        );
        let written = fs::read(&facts).unwrap();
        let matches: Vec<bool> = expected.iter().map(|e| *e == written).collect();
        assert!(
            (0..2).any(|i| matches[i] && published[i]),
            "repetition {repetition}: the facts ({} bytes, NUL bytes among them: {}) are not \
             the output of a replay that published (published: {published:?})",
            written.len(),
            written.contains(&0)
        );
        assert_eq!(names_in(&out), [FACTS], "repetition {repetition}");
    }
}

/// A `replay` and a monitor's facts snapshot (headless `watch --facts-out`, which publishes
/// at the end as `s` does) into one path at once, 20 times: the file is exactly one of
/// their outputs, whole.
#[test]
fn a_replay_and_a_live_snapshot_into_one_path_publish_one_whole_output() {
    let dir = tempfile::tempdir().unwrap();
    let replayed = trace(dir.path(), "replayed.jsonl", 3, 30_000);
    let watched = trace(dir.path(), "watched.jsonl", 4, 3_000);
    let alone = dir.path().join("alone");
    let run = run_bounded(replay_command(&replayed, &alone), "a lone replay");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let replay_output = fs::read(alone.join(FACTS)).unwrap();
    let alone_snapshot = dir.path().join("alone-snapshot.csv");
    let run = run_bounded(
        headless_watch_command(&watched, &alone_snapshot),
        "a lone watch",
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let snapshot_output = fs::read(&alone_snapshot).unwrap();
    assert_ne!(replay_output, snapshot_output);

    let out = dir.path().join("shared");
    fs::create_dir(&out).unwrap();
    let facts = out.join(FACTS);
    for repetition in 0..RACE_REPETITIONS {
        let children = [
            start(replay_command(&replayed, &out)),
            start(headless_watch_command(&watched, &facts)),
        ];
        let [replay, watch] = children.map(|child| finish(child, "a racing writer"));
        let replay_published = published_or_refused(&replay, "replay", &facts);
        let watch_published = published_or_refused(&watch, "watch", &facts);
        let written = fs::read(&facts).unwrap();
        assert!(
            (replay_published && written == replay_output)
                || (watch_published && written == snapshot_output),
            "repetition {repetition}: the facts ({} bytes) are neither writer's output \
             (replay published: {replay_published}, watch published: {watch_published})\n\
             replay: {}\nwatch: {}",
            written.len(),
            replay.stderr,
            watch.stderr
        );
        assert_eq!(names_in(&out), [FACTS], "repetition {repetition}");
    }
}

/// What a planted file is, and how to plant it.
#[derive(Clone, Copy, Debug)]
enum Plant {
    /// A symlink to a file elsewhere (whose content must stay).
    Symlink,
    /// A dangling symlink to a path elsewhere (which must not be created).
    DanglingSymlink,
    /// A world-writable regular file with content.
    WorldWritableFile,
    /// A FIFO no one reads (opening it for writing would block forever).
    Fifo,
}

const PLANTS: [Plant; 4] = [
    Plant::Symlink,
    Plant::DanglingSymlink,
    Plant::WorldWritableFile,
    Plant::Fifo,
];

/// Plants `plant` at `at`; returns the file a symlink points to (in `elsewhere`).
fn plant(plant: Plant, at: &Path, elsewhere: &Path) -> Option<PathBuf> {
    match plant {
        Plant::Symlink => {
            let victim = write_file(elsewhere, "victim.txt", "precious\n");
            symlink(&victim, at).unwrap();
            Some(victim)
        }
        Plant::DanglingSymlink => {
            let target = elsewhere.join("never-created.txt");
            symlink(&target, at).unwrap();
            Some(target)
        }
        Plant::WorldWritableFile => {
            fs::write(at, "planted\n").unwrap();
            fs::set_permissions(at, fs::Permissions::from_mode(0o666)).unwrap();
            None
        }
        Plant::Fifo => {
            make_fifo(at);
            None
        }
    }
}

/// Checks that what was planted at `at` is as it was: not followed, not written, not
/// replaced (a regular file at a temp name of this destination may have been removed as a
/// killed run's, but never written).
fn assert_untouched(plant: Plant, at: &Path, target: Option<&Path>, may_be_removed: bool) {
    let metadata = fs::symlink_metadata(at);
    match plant {
        Plant::Symlink => {
            assert!(metadata.unwrap().file_type().is_symlink(), "{plant:?} kept");
            let victim = target.unwrap();
            assert_eq!(fs::read_to_string(victim).unwrap(), "precious\n");
        }
        Plant::DanglingSymlink => {
            assert!(metadata.unwrap().file_type().is_symlink(), "{plant:?} kept");
            assert!(!target.unwrap().exists(), "the link was followed");
        }
        Plant::WorldWritableFile => match metadata {
            Ok(_) => assert_eq!(fs::read_to_string(at).unwrap(), "planted\n"),
            Err(_) => assert!(may_be_removed, "{} was removed", at.display()),
        },
        Plant::Fifo => assert!(metadata.unwrap().file_type().is_fifo()),
    }
}

/// Whether the published facts file is a fresh file: a regular file, not any planted inode,
/// with the permissions a new file gets under this umask (those of `reference`).
fn assert_fresh_file(facts: &Path, planted: &Path, reference: &Path) {
    let published = fs::symlink_metadata(facts).unwrap();
    assert!(published.is_file(), "the facts are a regular file");
    if let Ok(planted) = fs::symlink_metadata(planted) {
        assert_ne!(
            (published.dev(), published.ino()),
            (planted.dev(), planted.ino()),
            "the planted file became the facts"
        );
    }
    fs::write(reference, "").unwrap();
    let expected_mode = fs::metadata(reference).unwrap().mode() & 0o7777;
    fs::remove_file(reference).unwrap();
    assert_eq!(
        published.mode() & 0o7777,
        expected_mode,
        "the facts have the umask's permissions"
    );
    let text = fs::read_to_string(facts).unwrap();
    assert!(text.starts_with("trace_id,"), "facts, whole: {text:.80}");
}

/// A symlink, a world-writable file or a FIFO at a name a writer of the facts might use as
/// its temp file — the name older versions used (`litehit_facts.csv.tmp`) or one in the new
/// pattern — is never followed, written or waited on; the facts are published fresh.
#[test]
fn planted_files_at_temp_names_are_never_followed_used_or_waited_on() {
    for plant_kind in PLANTS {
        for temp_name in [
            "litehit_facts.csv.tmp".to_owned(),
            format!(".{FACTS}.{}.0123456789abcdef.tmp", std::process::id()),
            format!(".{FACTS}.1.ffffffffffffffff.tmp"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let elsewhere = dir.path().join("elsewhere");
            fs::create_dir(&elsewhere).unwrap();
            let input = trace(dir.path(), "t.jsonl", 5, 200);
            let out = dir.path().join("out");
            fs::create_dir(&out).unwrap();
            let at = out.join(&temp_name);
            let target = plant(plant_kind, &at, &elsewhere);
            let run = run_bounded(replay_command(&input, &out), "replay beside a plant");
            assert_eq!(
                run.code,
                Some(0),
                "{plant_kind:?} at {temp_name}: {}",
                run.stderr
            );
            let is_new_pattern = temp_name.starts_with('.');
            assert_untouched(plant_kind, &at, target.as_deref(), is_new_pattern);
            assert_fresh_file(&out.join(FACTS), &at, &dir.path().join("reference"));
            assert!(facts_temps(&out).iter().all(|temp| *temp == at));
        }
    }
}

/// The lock file beside the destination: a symlink, a FIFO or a regular file with other
/// content than a pid there is not litehit's lock, so the run stops at once (nothing
/// followed, created, published, written, deleted or waited on).
#[test]
fn planted_files_at_the_lock_name_are_never_followed_written_or_waited_on() {
    for plant_kind in PLANTS {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        let input = trace(dir.path(), "t.jsonl", 6, 200);
        let out = dir.path().join("out");
        fs::create_dir(&out).unwrap();
        let lock = out.join(format!(".{FACTS}.lock"));
        let target = plant(plant_kind, &lock, &elsewhere);
        let run = run_bounded(replay_command(&input, &out), "replay beside a planted lock");
        assert_eq!(run.code, Some(1), "{plant_kind:?}: {}", run.stderr);
        assert_mentions(&run.stderr, &[path_str(&lock), "not litehit's lock file"]);
        assert!(!out.join(FACTS).exists(), "{plant_kind:?}: published");
        assert_untouched(plant_kind, &lock, target.as_deref(), false);
        assert!(facts_temps(&out).is_empty(), "{:?}", names_in(&out));
    }
}

/// Issue 16, point 3: a trace named as the old temp file (`<facts path>.tmp`) is an
/// ordinary input now, replayed and left intact; one named as the new temp files are is
/// refused (a writer of that destination would remove it), and left intact too.
#[test]
fn a_trace_named_as_a_temp_file_is_never_destroyed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let old_style = trace(&out, "litehit_facts.csv.tmp", 7, 300);
    let text = fs::read(&old_style).unwrap();
    let run = run_bounded(replay_command(&old_style, &out), "replay of x.csv.tmp");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(fs::read(&old_style).unwrap(), text, "the trace is intact");
    assert!(fs::read_to_string(out.join(FACTS)).unwrap().lines().count() > 300);

    let new_style = out.join(format!(".{FACTS}.4242.0123456789abcdef.tmp"));
    fs::write(&new_style, &text).unwrap();
    let run = run_in(
        None,
        [
            "replay",
            path_str(&new_style),
            "--out",
            path_str(&out),
            "--quiet",
        ]
        .into_iter()
        .chain(BLOCK_FLAGS),
    );
    assert_mentions(
        failed(&run),
        &[path_str(&new_style), "named as litehit's temp files are"],
    );
    assert_eq!(fs::read(&new_style).unwrap(), text, "the trace is intact");

    let facts_out = dir.path().join("live.csv");
    let run = run_in(
        None,
        [
            "watch",
            path_str(&new_style),
            "--headless",
            "--exit-at-eof",
            "--facts-out",
            path_str(&facts_out),
        ]
        .into_iter()
        .chain(BLOCK_FLAGS),
    );
    assert_mentions(failed(&run), &["named as litehit's temp files are"]);
    assert_eq!(fs::read(&new_style).unwrap(), text, "the trace is intact");
    assert!(!facts_out.exists());

    // A facts file so named may be a publication in progress: query and mrc refuse it too.
    let facts_named_as_temp = out.join(format!(".{FACTS}.4243.0123456789abcdef.tmp"));
    fs::copy(out.join(FACTS), &facts_named_as_temp).unwrap();
    for command in [
        vec!["query", path_str(&facts_named_as_temp), "-", "1"],
        vec!["mrc", path_str(&facts_named_as_temp), "--json"],
    ] {
        let run = run_in(None, &command);
        assert_mentions(
            failed(&run),
            &[
                path_str(&facts_named_as_temp),
                "named as litehit's temp files are",
            ],
        );
    }
}

/// Issue 16, point 6: a `--facts-out` in a directory where no file can be created is said
/// at startup, not when the run ends. The trace is followed forever (no `--exit-at-eof`),
/// so only a check at startup ends the run; `/proc` takes no new file, even for root.
#[test]
fn an_unwritable_facts_out_is_said_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let input = trace(dir.path(), "t.jsonl", 8, 50);
    let facts_out = Path::new("/proc/litehit-publication-test.csv");
    let mut command = litehit();
    command
        .args(["watch", path_str(&input), "--headless"])
        .args(["--facts-out", path_str(facts_out)])
        .args(BLOCK_FLAGS);
    let run = run_bounded(command, "watch with an unwritable --facts-out");
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_mentions(&run.stderr, &["--facts-out", path_str(facts_out)]);
}

/// A killed run's temp and lock files are removed by the next writer of that destination
/// (it holds the lock, so they are no one's); the next run publishes and leaves only the
/// facts.
#[test]
fn the_next_writer_removes_a_killed_runs_temp_and_lock_files() {
    let dir = tempfile::tempdir().unwrap();
    let input = trace(dir.path(), "t.jsonl", 9, 300);
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    // What SIGKILL leaves: a lock file naming the killed writer (or, from an older
    // LiteHit, an empty one), the temp file its lock was born in, and a partial temp file.
    let dead_pid = exited_pid();
    for lock_content in [format!("{dead_pid}\n"), String::new()] {
        fs::write(out.join(format!(".{FACTS}.lock")), &lock_content).unwrap();
        let lock_temp = out.join(format!("..{FACTS}.lock.{dead_pid}.00000000deadbeef.tmp"));
        fs::write(&lock_temp, &lock_content).unwrap();
        let stale = out.join(format!(".{FACTS}.99999.00000000deadbeef.tmp"));
        fs::write(&stale, "trace_id,partial").unwrap();
        ok(run_in(
            None,
            [
                "replay",
                path_str(&input),
                "--out",
                path_str(&out),
                "--quiet",
            ]
            .into_iter()
            .chain(BLOCK_FLAGS),
        ));
        assert_eq!(names_in(&out), [FACTS], "after a lock of {lock_content:?}");
    }
}

/// The pid of a process that has exited and been reaped (so no process has it, until the
/// kernel hands it out again, which takes a whole turn of the pid space).
fn exited_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// A writer that holds the lock is named by its pid in the losing writer's message, however
/// the two interleave: the lock file holds the pid before it takes the lock's name. Here a
/// live lock is held by this test process, as a writer killed mid-publication would not.
#[test]
fn a_held_lock_names_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let input = trace(dir.path(), "t.jsonl", 9, 300);
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    let lock = out.join(format!(".{FACTS}.lock"));
    fs::write(&lock, format!("{}\n", std::process::id())).unwrap();
    let held = fs::File::open(&lock).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    let run = run_bounded(replay_command(&input, &out), "replay beside a held lock");
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_mentions(
        &run.stderr,
        &[
            &format!("another writer (pid {}", std::process::id()),
            "is publishing this file",
            path_str(&lock),
        ],
    );
    assert!(!out.join(FACTS).exists(), "published past a held lock");
    assert_eq!(names_in(&out), [format!(".{FACTS}.lock")]);
    drop(held);
}

/// A symlink at the destination planted by another user in a sticky world-writable
/// directory (`/tmp`) is not followed, as the kernel's `protected_symlinks` would not follow
/// it; one of this user's own is. Needs root to give the link another owner.
#[test]
fn another_users_symlink_in_a_sticky_directory_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = write_file(dir.path(), "victim.txt", "precious\n");
    let link = shared.join("facts.csv");
    symlink(&victim, &link).unwrap();
    let input = trace(dir.path(), "t.jsonl", 10, 100);
    if std::os::unix::fs::lchown(&link, Some(65_534), Some(65_534)).is_err() {
        eprintln!("skipping: giving a symlink another owner needs root");
        return;
    }
    // The directory is root's (this test runs as root) and the link is nobody's.
    let run = run_bounded(
        replay_command(&input, &link),
        "replay through a planted link",
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_mentions(
        &run.stderr,
        &["symbolic link of another user", "not following it"],
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");

    // The user's own link is followed, as documented.
    fs::remove_file(&link).unwrap();
    symlink(&victim, &link).unwrap();
    let run = run_bounded(replay_command(&input, &link), "replay through own link");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        fs::read_to_string(&victim)
            .unwrap()
            .starts_with("trace_id,")
    );
}
