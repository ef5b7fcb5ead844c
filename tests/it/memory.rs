//! Out of memory is an error, not an abort (issue 16 point 5, issue 18 "Bounded memory,
//! honestly"): the real binary under `RLIMIT_AS` (`ulimit -v` in `sh -c`) replaying a trace
//! with millions of unique blocks exits 1 with the message and leaves no temp file.

use std::fmt::Write as _;
use std::process::Command;

use crate::common::cli_bin::facts_temps;

/// 2,000 requests of 1,000 fresh random keys: 2 M unique blocks, a few tens of MB of core
/// state.
pub(crate) fn many_unique_blocks_trace() -> String {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut text = String::new();
    for request in 0..2_000_u64 {
        let keys: Vec<String> = (0..1_000)
            .map(|_| {
                // splitmix64: any fresh keys will do.
                state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                ((z ^ (z >> 31)) >> 2).to_string()
            })
            .collect();
        writeln!(
            text,
            r#"{{"type":"get","instance_id":"a","trace_id":"t{request}","timestamp_ns":{},"keys":[{}],"input_len":256000}}"#,
            request + 1,
            keys.join(",")
        )
        .unwrap();
    }
    text
}

#[test]
fn replay_out_of_memory_exits_1_with_the_message_and_no_temp_left() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, many_unique_blocks_trace()).unwrap();
    let mut out_of_memory_runs = 0;
    // The address-space limit that starts the binary but not the whole replay differs by
    // build and machine: try a few, each must fail cleanly or succeed. The lowest stays about
    // 30 MB above the edge where the debug binary cannot even start its replay (≈ 185 MB on
    // the project's machines, where glibc's per-thread arenas have reserved their 64 MiB
    // each): within a few MB of it, the first small allocation of whatever thread allocates
    // next fails, and Rust's infallible allocations abort (docs/OPERATIONS.md).
    for limit_kib in [210_000_u64, 240_000, 270_000, 300_000, 330_000] {
        let out = dir.path().join(format!("out-{limit_kib}"));
        std::fs::create_dir(&out).unwrap();
        let output = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v {limit_kib} && exec \"$0\" replay \"$1\" --out \"$2\" --quiet --workers 1"
            ))
            .arg(env!("CARGO_BIN_EXE_litehit"))
            .arg(&trace)
            .arg(&out)
            .env_remove("RUST_BACKTRACE")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let code = output.status.code();
        assert!(
            matches!(code, Some(0 | 1)),
            "limit {limit_kib} KiB: exit {code:?} (an abort?), stderr: {stderr}"
        );
        assert_eq!(
            facts_temps(&out),
            Vec::<std::path::PathBuf>::new(),
            "temp left"
        );
        if code == Some(1) {
            assert!(
                stderr.contains("out of memory after ")
                    && stderr.contains("unique blocks (about ")
                    && stderr.contains("GiB needed; try --memory-horizon or a TTL)"),
                "limit {limit_kib} KiB: {stderr}"
            );
            assert!(
                !out.join("litehit_facts.csv").exists(),
                "published after an error"
            );
            out_of_memory_runs += 1;
        }
    }
    assert!(
        out_of_memory_runs > 0,
        "no limit made the replay run out of memory"
    );
}
