//! Same facts bytes for every trace in `../shared` before and after the workspace split: the
//! real binary replays each trace (and each again with `--block-bytes 1048576`), and the
//! sha256 of its `litehit_facts.csv` must equal the digest the binary from before the split
//! (commit f9a1e16) produced for the same command.

use std::fmt::Write as _;
use std::fs;

use sha2::{Digest as _, Sha256};

use crate::common::cli_bin::{FACTS, run_in};
use crate::common::shared_file;

/// One `litehit replay TRACE --out DIR/ [FLAGS] --quiet` and the facts it must publish.
struct Case {
    trace: &'static str,
    flags: &'static [&'static str],
    sha256: &'static str,
    /// Lines of the facts file, the header included.
    lines: usize,
}

const MIB_BLOCKS: &[&str] = &["--block-bytes", "1048576"];

/// Digests and line counts from the binary at f9a1e16, before the split.
const CASES: [Case; 7] = [
    Case {
        trace: "traces/conversation_trace.jsonl",
        flags: &[],
        sha256: "9379029e732f9fb12cf4e618e6dba2e5f1b9ae3ce453b0a94f8ccbd0ae3d20ef",
        lines: 12_032,
    },
    Case {
        trace: "traces/conversation_trace.jsonl",
        flags: MIB_BLOCKS,
        sha256: "8c58ef2b99b5b2004529ba49483f190701d06a74c3e2284f6880a1c793e51809",
        lines: 12_032,
    },
    Case {
        trace: "traces/synthetic_trace.jsonl",
        flags: &[],
        sha256: "157a083ccce295f0e7542750f57667c20468e0df2d3438f44ccfa1f58eca2170",
        lines: 3_994,
    },
    Case {
        trace: "traces/synthetic_trace.jsonl",
        flags: MIB_BLOCKS,
        sha256: "75e587f85c4012df3bc8fe9fafd92132ec2742fc2bd6644e497ff6731de85677",
        lines: 3_994,
    },
    Case {
        trace: "traces/event_publisher.log",
        flags: &[],
        sha256: "8f7f5d653bdf3b3eaa37a3479250efc395779ed49b33d3ef813717a9d8670b1e",
        lines: 103,
    },
    Case {
        trace: "traces/event_publisher.log",
        flags: MIB_BLOCKS,
        sha256: "f9c24fb2dd53e8e6c298f8b96ee3e5d333265f77a2e3d0b8984fd65af584afa7",
        lines: 103,
    },
    Case {
        trace: "reference/zishano_hisim_smoke_trace.jsonl",
        flags: &[],
        sha256: "067b80795b9279d931bed0371476cd0e19de86d7114fcc2adda8a635d85a2090",
        lines: 17,
    },
];

fn sha256_hex(bytes: &[u8]) -> String {
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(bytes) {
        write!(hex, "{byte:02x}").unwrap();
    }
    hex
}

#[test]
fn sha256_hex_is_the_standard_digest() {
    assert_eq!(
        sha256_hex(b""),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn every_real_trace_replays_to_the_facts_bytes_of_before_the_split() {
    let mut differences = Vec::new();
    for case in &CASES {
        let trace = shared_file(case.trace);
        let dir = tempfile::tempdir().unwrap();
        let out = format!("{}/", dir.path().display());
        let mut args = vec!["replay", trace.to_str().unwrap(), "--out", &out];
        args.extend(case.flags);
        args.push("--quiet");
        let run = run_in(None, &args);
        if run.code != Some(0) {
            differences.push(format!(
                "{} {:?}: exit code {:?}, stderr {}",
                case.trace, case.flags, run.code, run.stderr
            ));
            continue;
        }
        let facts = fs::read(dir.path().join(FACTS)).unwrap();
        let sha256 = sha256_hex(&facts);
        let lines = std::str::from_utf8(&facts).unwrap().lines().count();
        if sha256 != case.sha256 || lines != case.lines {
            differences.push(format!(
                "{} {:?}: sha256 {sha256} ({lines} lines), expected {} ({} lines)",
                case.trace, case.flags, case.sha256, case.lines
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "facts differ from before the split:\n{}",
        differences.join("\n")
    );
}
