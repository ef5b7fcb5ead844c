//! `litehit completions SHELL` and `litehit man`: generated from the clap definition, so every
//! subcommand and flag is in them.

use clap::CommandFactory as _;

use crate::common::cli_bin::{run_in, run_ok};
use litehit::cli::Cli;

/// Every visible subcommand's name (`help` aside).
fn subcommands() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
        .map(|sub| sub.get_name().to_owned())
        .collect()
}

#[test]
fn the_bash_script_completes_every_subcommand_and_their_flags() {
    let run = run_ok(["completions", "bash"]);
    assert_eq!(run.stderr, "");
    let script = run.stdout;
    assert!(script.contains("complete -F"), "a bash completion script");
    // The words offered after `litehit `: the line after the top level's `litehit)` case.
    let top_level: Vec<&str> = script
        .lines()
        .skip_while(|line| line.trim() != "litehit)")
        .nth(1)
        .and_then(|line| line.trim().strip_prefix("opts=\""))
        .map(|words| words.trim_end_matches('"').split(' ').collect())
        .unwrap_or_default();
    let names = subcommands();
    assert!(names.len() >= 8, "{names:?}");
    for name in &names {
        assert!(
            top_level.contains(&name.as_str()),
            "{name} in {top_level:?}"
        );
        assert!(
            script.contains(&format!("litehit__subcmd__{}", name.replace('-', "__"))),
            "{name}'s own flags are completed"
        );
    }
    for flag in [
        "--capacity-gb",
        "--facts-out",
        "--config-file",
        "--block-bytes",
    ] {
        assert!(script.contains(flag), "{flag} is completed");
    }
}

#[test]
fn every_shell_gets_a_script_and_an_unknown_one_is_refused() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = run_ok(["completions", shell]);
        assert!(
            run.stdout.contains("watch") && run.stdout.contains("capacity-gb"),
            "{shell}"
        );
    }
    let run = run_in(None, ["completions", "tcsh"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("tcsh"), "{}", run.stderr);
}

#[test]
fn man_writes_one_page_per_subcommand_that_man_can_read() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let run = run_ok([
        std::ffi::OsStr::new("man"),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(run.stderr, "");
    let mut expected: Vec<String> = subcommands()
        .iter()
        .map(|name| format!("litehit-{name}.1"))
        .collect();
    expected.push("litehit.1".to_owned());
    expected.sort();
    let mut written: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(
        written, expected,
        "one page per subcommand, no temp file left"
    );
    let man = std::process::Command::new("man").arg("--version").output();
    let have_man = man.is_ok_and(|output| output.status.success());
    for name in &written {
        let page = std::fs::read_to_string(out.join(name)).unwrap();
        let title = name.trim_end_matches(".1");
        assert!(page.contains(&format!(".TH {title} 1")), "{name}: {page}");
        if have_man {
            let shown = std::process::Command::new("man")
                .arg("-l")
                .arg(out.join(name))
                .env("MANPAGER", "cat")
                .env("MANWIDTH", "100")
                .output()
                .unwrap();
            assert!(shown.status.success(), "man -l {name}");
            let text = String::from_utf8_lossy(&shown.stdout);
            assert!(text.contains("NAME") && text.contains("SYNOPSIS"), "{text}");
        }
    }
    let watch = std::fs::read_to_string(out.join("litehit-watch.1")).unwrap();
    assert!(
        watch.contains(r"\-\-capacity\-gb"),
        "the flags are documented"
    );
    let top = run_ok(["man"]).stdout;
    assert_eq!(top, std::fs::read_to_string(out.join("litehit.1")).unwrap());
}
