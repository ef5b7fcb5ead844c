//! The generated traces the benches share (`pipeline`, `live`): a seeded workload written
//! once to `target/bench-data/` and reused, so the benches time the same bytes. Included with
//! `#[path]` by the benches that read one (not a part of `common`, which every bench has).

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::time::Instant;

use litehit_core::workload::{KeyStyle, SyntheticRequest, Workload, WorkloadConfig};

/// Which generated trace: the standard format with prefix-hash chained keys (what KVCM /
/// vLLM-style producers emit), or the Mooncake format with dense ids and 512-token blocks.
/// `Large`: the core bench's large workload ([`crate::common::large_workload_config`]) as a
/// Mooncake trace, sized in requests rather than bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Generated {
    StandardHashed,
    MooncakeDense,
    #[allow(dead_code, reason = "only the pipeline bench reads the large trace")]
    Large {
        requests: u64,
    },
}

/// `target/bench-data/generated[-mooncake]-{gigabytes}gb.jsonl` (`large-{requests}.jsonl`),
/// written on first use.
pub fn generated_trace(gigabytes: f64, kind: Generated) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).expect("create target/bench-data");
    let path = dir.join(match kind {
        Generated::StandardHashed => format!("generated-{gigabytes}gb.jsonl"),
        Generated::MooncakeDense => format!("generated-mooncake-{gigabytes}gb.jsonl"),
        Generated::Large { requests } => format!("large-{requests}.jsonl"),
    });
    if path.exists() {
        return path;
    }
    let started = Instant::now();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "byte budget"
    )]
    let target_bytes = (gigabytes * f64::from(1 << 30)) as u64;
    let temp = path.with_extension("tmp");
    let mut out =
        BufWriter::with_capacity(1 << 20, File::create(&temp).expect("create bench trace"));
    let mut config = WorkloadConfig {
        seed: 2026,
        instance_ids: vec!["instance-0".into()],
        live_conversations: 20_000,
        zipf_exponent: 0.8,
        ..WorkloadConfig::default()
    };
    match kind {
        Generated::StandardHashed => {}
        Generated::MooncakeDense => {
            config.key_style = KeyStyle::Dense;
            config.block_size_tokens = 512;
        }
        Generated::Large { .. } => {
            config = crate::common::large_workload_config();
            config.block_size_tokens = 512;
        }
    }
    let mut workload = Workload::new(config);
    let mut request = SyntheticRequest::default();
    let mut line = String::new();
    let (mut written, mut requests) = (0_u64, 0_u64);
    let done = |written: u64, requests: u64| match kind {
        Generated::Large { requests: wanted } => requests >= wanted,
        _ => written >= target_bytes,
    };
    while !done(written, requests) {
        workload.fill_next(&mut request);
        line.clear();
        match kind {
            Generated::StandardHashed => request.to_standard_jsonl(&mut line),
            Generated::MooncakeDense | Generated::Large { .. } => {
                request.to_mooncake_jsonl(&mut line);
            }
        }
        out.write_all(line.as_bytes()).expect("write bench trace");
        written += line.len() as u64;
        requests += 1;
    }
    out.flush().expect("flush bench trace");
    std::fs::rename(&temp, &path).expect("publish bench trace");
    eprintln!(
        "generated {} ({written} bytes) in {:.1} s",
        path.display(),
        started.elapsed().as_secs_f64()
    );
    path
}
