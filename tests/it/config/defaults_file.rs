//! The defaults file (`~/.config/litehit/config.toml`, docs/CONFIG.md) through the real
//! binary: its values are used where no flag was typed, a flag wins, a bad value or an
//! unknown key names file, line and key, `--config-file` / `LITEHIT_CONFIG` /
//! `--no-config-file` choose the file, and `NO_COLOR` still turns colours off under `auto`.
//!
//! Expected outputs come from the same binary run with the flag typed instead (the file must
//! be exactly a stand-in for flags), never from hard-coded numbers.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::cli_bin::{FACTS, generate, litehit, ok, run_in, standard_trace, write_file};
use litehit::cli::defaults_file::KEYS;
use litehit_core::workload::WorkloadConfig;

/// A temp dir with `xdg/litehit/config.toml` holding `text` and a generated trace.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("xdg/litehit")).unwrap();
        std::fs::write(dir.path().join("xdg/litehit/config.toml"), config).unwrap();
        let requests = generate(
            WorkloadConfig {
                seed: 7,
                instance_ids: vec!["a".into(), "b".into()],
                ..WorkloadConfig::default()
            },
            300,
        );
        write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn config_path(&self) -> PathBuf {
        self.path().join("xdg/litehit/config.toml")
    }

    /// `litehit ARGS` with the standard place pointing at this setup's file.
    fn run(&self, args: &[&str]) -> crate::common::cli_bin::Run {
        self.run_with(args, &[])
    }

    fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> crate::common::cli_bin::Run {
        let mut command = litehit();
        command
            .env("XDG_CONFIG_HOME", self.path().join("xdg"))
            .current_dir(self.path())
            .args(args);
        for (key, value) in env {
            command.env(key, value);
        }
        let output = command.output().unwrap();
        crate::common::cli_bin::Run {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }

    /// Replays the trace into `out/` and returns the facts file's text.
    fn replay(&self, out: &str, extra: &[&str], env: &[(&str, &str)]) -> String {
        let mut args = vec![
            "replay",
            "trace.jsonl",
            "--out",
            out,
            "-q",
            "--block-size",
            "16",
        ];
        args.extend_from_slice(extra);
        ok(self.run_with(&args, env));
        std::fs::read_to_string(self.path().join(out).join(FACTS)).unwrap()
    }
}

/// The facts a replay of the setup's trace gives with `flags` and no defaults file at all.
fn replay_without_file(setup: &Setup, out: &str, flags: &[&str]) -> String {
    let mut args = vec![
        "--no-config-file",
        "replay",
        "trace.jsonl",
        "--out",
        out,
        "-q",
        "--block-size",
        "16",
    ];
    args.extend_from_slice(flags);
    ok(run_in(Some(setup.path()), &args));
    std::fs::read_to_string(setup.path().join(out).join(FACTS)).unwrap()
}

#[test]
fn a_value_from_the_file_is_used_where_no_flag_was_typed() {
    let setup = Setup::new("# my defaults\nblock-bytes = \"4MiB\"\n");
    let from_file = setup.replay("from_file", &[], &[]);
    assert!(
        from_file == replay_without_file(&setup, "typed", &["--block-bytes", "4194304"]),
        "the file's block-bytes is the flag's"
    );
    assert!(
        from_file != replay_without_file(&setup, "default", &[]),
        "and it changed something"
    );
}

#[test]
fn a_typed_flag_wins_over_the_file() {
    let setup = Setup::new("block-bytes = \"2MiB\"\n");
    assert!(
        setup.replay("typed", &["--block-bytes", "4096"], &[])
            == replay_without_file(&setup, "expected", &["--block-bytes", "4096"]),
    );
    // The conflicting flag wins too (the two cannot be combined).
    assert!(
        setup.replay("per_token", &["--kv-bytes-per-token", "1KiB"], &[])
            == replay_without_file(&setup, "expected2", &["--kv-bytes-per-token", "1024"]),
    );
}

#[test]
fn watch_takes_slots_from_the_file_and_the_flag_wins() {
    let setup = Setup::new("capacity-gb = [\"1000b\", 0.5]\ninterval = 0.2\n");
    let slots = |extra: &[&str]| -> Vec<String> {
        let mut args = vec![
            "watch",
            "trace.jsonl",
            "--headless",
            "--exit-at-eof",
            "--block-size",
            "16",
        ];
        args.extend_from_slice(extra);
        let run = ok(setup.run(&args));
        let last = run.stdout.lines().last().unwrap().to_owned();
        let report: serde_json::Value = serde_json::from_str(&last).unwrap();
        report["slots"]
            .as_array()
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    let from_file = slots(&[]);
    let typed = slots(&["--capacity-gb", "1000b,0.5"]);
    assert_eq!(from_file, typed, "the file's slots are the flag's");
    assert_eq!(from_file.len(), 2);
    assert_ne!(
        slots(&["--capacity-gb", "7"]),
        from_file,
        "a typed flag wins"
    );
}

#[test]
fn a_bad_value_names_file_line_and_key() {
    let setup = Setup::new("fps = 5\n\n# bytes\nblock-bytes = \"2MB\"\n");
    let run = setup.run(&["replay", "trace.jsonl", "--out", "o"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let expected = format!(
        "litehit: {}:4: block-bytes: ",
        setup.config_path().display()
    );
    assert!(run.stderr.starts_with(&expected), "{}", run.stderr);
    assert!(run.stderr.contains("\"2MB\""), "the value: {}", run.stderr);
    assert!(!setup.path().join("o").exists(), "nothing ran");
    // The same check for a slot and a syntax error.
    std::fs::write(setup.config_path(), "capacity-gb = \"10,40PB\"\n").unwrap();
    let run = setup.run(&["demo", "--headless", "--requests", "1"]);
    let expected = format!(
        "litehit: {}:1: capacity-gb: ",
        setup.config_path().display()
    );
    assert!(run.stderr.starts_with(&expected), "{}", run.stderr);
    std::fs::write(setup.config_path(), "fps = 5\nfps = 6\n").unwrap();
    let run = setup.run(&["demo", "--headless", "--requests", "1"]);
    let expected = format!("litehit: {}:2: ", setup.config_path().display());
    assert!(run.stderr.starts_with(&expected), "{}", run.stderr);
}

#[test]
fn an_unknown_key_is_refused_with_the_known_keys() {
    let setup = Setup::new("fps = 5\nblock_bytes = 4096\n");
    let run = setup.run(&["replay", "trace.jsonl", "--out", "o"]);
    assert_eq!(run.code, Some(1));
    let expected = format!(
        "litehit: {}:2: block_bytes: unknown key",
        setup.config_path().display()
    );
    assert!(run.stderr.starts_with(&expected), "{}", run.stderr);
    for (key, _, _) in KEYS {
        assert!(run.stderr.contains(key), "{key} is listed: {}", run.stderr);
    }
}

#[test]
fn config_file_flag_environment_and_no_config_file_choose_the_file() {
    let setup = Setup::new("block-bytes = \"2MiB\"\n");
    let other = setup.path().join("other.toml");
    std::fs::write(&other, "block-bytes = 8192\n").unwrap();
    let other = other.to_str().unwrap();
    let expected_other = replay_without_file(&setup, "e_other", &["--block-bytes", "8192"]);
    let expected_none = replay_without_file(&setup, "e_none", &[]);
    assert!(expected_other != expected_none);
    assert!(setup.replay("flag", &["--config-file", other], &[]) == expected_other);
    assert!(setup.replay("env", &[], &[("LITEHIT_CONFIG", other)]) == expected_other);
    assert!(
        setup.replay("none", &["--no-config-file"], &[("LITEHIT_CONFIG", other)]) == expected_none
    );
    let run = setup.run(&[
        "--config-file",
        "missing.toml",
        "replay",
        "trace.jsonl",
        "--out",
        "o",
    ]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("missing.toml"), "{}", run.stderr);
}

/// The SGR colour parameters (30–37, 38, 40–47, 48, 90–97, 100–107) in `screen`, a
/// `capture-pane -e` dump.
fn colour_codes(screen: &str) -> usize {
    screen
        .split("\x1b[")
        .skip(1)
        .filter_map(|rest| rest.split_once('m').map(|(params, _)| params))
        .flat_map(|params| params.split(';'))
        .filter_map(|param| param.parse::<u32>().ok())
        .filter(|code| matches!(code, 30..=38 | 40..=48 | 90..=97 | 100..=107))
        .count()
}

/// The demo's screen in tmux with `config` as the defaults file and `env` set, as escape
/// codes (`capture-pane -e`), once its table shows.
fn demo_screen(setup: &Setup, args: &str, env: &[&str]) -> String {
    static SESSIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let session = format!(
        "litehit-cfg-{}-{}",
        std::process::id(),
        SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let command = format!(
        "{} demo --rate 500 --requests 2000 {args}; sleep 30",
        env!("CARGO_BIN_EXE_litehit")
    );
    // A server of its own: a shared one exits with another test's last session.
    let socket = std::env::temp_dir().join(format!("litehit-tmux-{session}"));
    let mut tmux = Command::new("tmux");
    tmux.arg("-S").arg(&socket);
    tmux.args(["new-session", "-d", "-s", &session, "-x", "120", "-y", "40"]);
    tmux.args([
        "-e",
        &format!("XDG_CONFIG_HOME={}", setup.path().join("xdg").display()),
    ]);
    tmux.args(["-e", "LITEHIT_CONFIG="]);
    for pair in env {
        tmux.args(["-e", pair]);
    }
    tmux.arg("-c").arg(setup.path()).arg(command);
    assert!(tmux.status().unwrap().success(), "tmux new-session");
    let deadline = Instant::now() + Duration::from_secs(30);
    let screen = loop {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["capture-pane", "-e", "-p", "-t", &session])
            .output()
            .unwrap();
        let screen = String::from_utf8_lossy(&out.stdout).into_owned();
        if screen.contains("instance-0") || Instant::now() > deadline {
            break screen;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = Command::new("tmux")
        .arg("-S")
        .arg(&socket)
        .arg("kill-server")
        .status();
    let _ = std::fs::remove_file(&socket);
    assert!(screen.contains("instance-0"), "the demo ran:\n{screen}");
    screen
}

#[test]
fn no_color_is_honoured_under_auto_and_always_wins_over_it() {
    if !crate::watch::pty::tmux_ready() {
        return;
    }
    // NO_COLOR must be absent from the tmux server's environment for the coloured cases.
    let setup = Setup::new("color = \"auto\"\n");
    let coloured = demo_screen(&setup, "", &["NO_COLOR="]);
    assert!(colour_codes(&coloured) > 0, "auto, no NO_COLOR: colours");
    let plain = demo_screen(&setup, "", &["NO_COLOR=1"]);
    assert_eq!(
        colour_codes(&plain),
        0,
        "NO_COLOR wins over auto:\n{plain:?}"
    );
    assert!(
        plain.contains("\x1b[7m") || plain.contains(";7m"),
        "reverse stays"
    );
    let forced = demo_screen(&setup, "--color always", &["NO_COLOR=1"]);
    assert!(
        colour_codes(&forced) > 0,
        "--color always wins over NO_COLOR"
    );
    std::fs::write(setup.config_path(), "color = \"never\"\n").unwrap();
    let never = demo_screen(&setup, "", &["NO_COLOR="]);
    assert_eq!(colour_codes(&never), 0, "the file's never");
}

#[test]
fn max_line_bytes_comes_from_the_file_and_the_flag_wins() {
    let setup = Setup::new("max-line-bytes = \"100B\"\n");
    let run = setup.run(&["replay", "trace.jsonl", "--out", "capped", "-q"]);
    assert!(
        run.stderr
            .contains("line 1: longer than --max-line-bytes (100 B)"),
        "{}",
        run.stderr
    );
    // The typed flag wins: the replay succeeds.
    setup.replay("typed", &["--max-line-bytes", "1MiB"], &[]);
}

/// Issue #26: the five HTTP flags are keys of the defaults file, as `listen` and `max-body`
/// are: read by the flag's own parser, used where the flag was not typed, the typed flag
/// wins (a typed `--allowed-host` replaces the whole list), and a bad value names the file,
/// line and key. A relative token file is found beside the defaults file.
#[test]
fn http_budget_keys_come_from_the_file_and_the_flags_win() {
    use litehit::cli::defaults_file::parse;
    use litehit::cli::{Cli, Command as Sub};
    let text = "listen = 9000\nhttp-idle-timeout = \"2.5s\"\nmax-connections = 7\n\
                max-body-total = \"1GiB\"\nallowed-host = [\"a.internal\", \"b.internal\"]\n\
                listen-token-file = \"token\"\n";
    let defaults = parse(Path::new("/etc/lh/config.toml"), text).unwrap();
    let watch = |args: &[&str]| {
        let (mut cli, matches) =
            Cli::parse_matches_from(["litehit", "watch"].iter().chain(args)).unwrap();
        defaults.apply(&mut cli, &matches);
        let Sub::Watch(watch) = cli.command else {
            panic!("a watch")
        };
        watch
    };
    let from_file = watch(&[]);
    assert!((from_file.http_idle_timeout - 2.5).abs() < f64::EPSILON);
    assert_eq!(from_file.max_connections, Some(7));
    assert_eq!(from_file.max_body_total, Some(1 << 30));
    assert_eq!(from_file.allowed_host, ["a.internal", "b.internal"]);
    assert_eq!(
        from_file.listen_token_file,
        Some(PathBuf::from("/etc/lh/token"))
    );
    let typed = watch(&[
        "--listen",
        "9001",
        "--http-idle-timeout",
        "4",
        "--max-connections",
        "9",
        "--max-body-total",
        "1MiB",
        "--allowed-host",
        "c.internal",
        "--listen-token-file",
        "mine",
    ]);
    assert!((typed.http_idle_timeout - 4.0).abs() < f64::EPSILON);
    assert_eq!(typed.max_connections, Some(9));
    assert_eq!(typed.max_body_total, Some(1 << 20));
    assert_eq!(typed.allowed_host, ["c.internal"]);
    assert_eq!(typed.listen_token_file, Some(PathBuf::from("mine")));
    // One comma-separated string, as the flag takes it.
    let names = parse(Path::new("c.toml"), "allowed-host = \"x,y\"\n").unwrap();
    assert_eq!(
        names.allowed_host,
        Some(vec!["x".to_owned(), "y".to_owned()])
    );

    // A bad value stops the command, naming file, line and key (through the binary).
    for (line, expected) in [
        ("max-connections = 0", "max-connections: "),
        ("http-idle-timeout = \"soon\"", "http-idle-timeout: "),
        ("max-body-total = \"1GB\"", "max-body-total: "),
        ("listen-token-file = \"\"", "listen-token-file: "),
        ("allowed-host = [1, [2]]", "allowed-host: "),
    ] {
        let setup = Setup::new(&format!("fps = 5\n{line}\n"));
        let run = setup.run(&["watch", "--listen", "0", "--headless"]);
        assert_eq!(run.code, Some(1), "{line}: {}", run.stderr);
        let prefix = format!("litehit: {}:2: {expected}", setup.config_path().display());
        assert!(run.stderr.starts_with(&prefix), "{line}: {}", run.stderr);
    }
}
