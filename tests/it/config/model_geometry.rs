//! `--model` (issue 31 §1): a model's KV bytes per token from its `config.json` or a preset,
//! checked against a naive formula written here, and end to end: the facts of `replay
//! --model` are those of `--kv-bytes-per-token` typed by hand, and every surface names the
//! model and what it does not model.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::cli_bin::{
    FACTS, failed, generate, ok, read_facts, replay_to, run_in, standard_trace, write_file,
};
use crate::common::headless::headless_to_end;
use crate::common::shared_file;
use litehit_core::config::{KvCacheDtype, MODEL_PRESETS, ModelKvSize};
use litehit_core::workload::WorkloadConfig;

/// The naive rule, written out once more: per layer, what each full-attention layer keeps per
/// token, times the layers that are not windowed, times the dtype's bytes.
fn naive_kv_bytes_per_token(config: &Value, dtype_bytes: Option<u64>) -> u64 {
    let text = config
        .get("text_config")
        .filter(|_| config.get("num_hidden_layers").is_none())
        .unwrap_or(config);
    let int = |key: &str| text.get(key).and_then(Value::as_u64);
    let layers = int("num_hidden_layers").unwrap();
    let per_layer = if let Some(rank) = int("kv_lora_rank") {
        rank + int("qk_rope_head_dim").unwrap()
    } else {
        let heads = int("num_attention_heads").unwrap();
        let kv_heads = int("num_key_value_heads").unwrap_or(heads);
        let head_dim = int("head_dim").unwrap_or_else(|| int("hidden_size").unwrap() / heads);
        2 * kv_heads * head_dim
    };
    let full_layers = if let Some(types) = text.get("layer_types").and_then(Value::as_array) {
        types.iter().filter(|t| *t == "full_attention").count() as u64
    } else if let Some(every) = int("sliding_window_pattern") {
        (1..=layers).filter(|i| i % every == 0).count() as u64
    } else if text.get("sliding_window").is_some_and(|w| !w.is_null())
        && text.get("use_sliding_window") != Some(&Value::Bool(false))
    {
        0
    } else {
        layers
    };
    let dtype = text
        .get("torch_dtype")
        .or_else(|| config.get("torch_dtype"))
        .and_then(Value::as_str);
    let bytes = dtype_bytes.unwrap_or(match dtype {
        Some("bfloat16" | "float16") => 2,
        Some("float32") => 4,
        other => panic!("dtype {other:?}"),
    });
    full_layers * per_layer * bytes
}

#[test]
fn every_preset_equals_its_config_by_the_naive_formula() {
    for preset in MODEL_PRESETS {
        let config: Value = serde_json::from_str(preset.config_json).unwrap();
        for (dtype, bytes) in [(None, None), (Some(KvCacheDtype::Fp8), Some(1))] {
            let got = ModelKvSize::resolve(preset.id, dtype).unwrap();
            assert_eq!(
                got.kv_bytes_per_token,
                naive_kv_bytes_per_token(&config, bytes),
                "{} {dtype:?}",
                preset.id
            );
        }
    }
    // The worked examples.
    let bytes = |id| ModelKvSize::resolve(id, None).unwrap().kv_bytes_per_token;
    assert_eq!(bytes("meta-llama/Llama-3.1-8B-Instruct"), 131_072);
    assert_eq!(bytes("deepseek-ai/DeepSeek-V3"), 61 * 576 * 2);
    assert_eq!(bytes("deepseek-ai/DeepSeek-V3"), 70_272);
}

/// One config per architecture family, as a user's file, with the bytes the test expects.
fn family_configs() -> Vec<(&'static str, Value)> {
    vec![
        (
            "dense-gqa",
            json!({"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
                   "num_attention_heads": 32, "num_key_value_heads": 8,
                   "torch_dtype": "bfloat16"}),
        ),
        (
            "mla",
            json!({"model_type": "deepseek_v3", "num_hidden_layers": 61,
                   "num_attention_heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                   "torch_dtype": "bfloat16"}),
        ),
        (
            "sliding-window-mix",
            json!({"model_type": "gemma3_text", "num_hidden_layers": 12,
                   "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                   "sliding_window": 512, "sliding_window_pattern": 6,
                   "torch_dtype": "float32"}),
        ),
    ]
}

fn small_trace(dir: &Path) -> PathBuf {
    let requests = generate(
        WorkloadConfig {
            seed: 31,
            block_size_tokens: 16,
            ..WorkloadConfig::default()
        },
        60,
    );
    write_file(dir, "trace.jsonl", &standard_trace(&requests))
}

#[test]
fn a_config_file_of_each_family_sets_the_block_bytes_of_the_facts() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    for (name, config) in family_configs() {
        let expected = naive_kv_bytes_per_token(&config, None);
        let file = write_file(dir.path(), &format!("{name}.json"), &config.to_string());
        let out = dir.path().join(name);
        let run = ok(replay_to(
            &trace,
            &out,
            &["--block-size", "16", "--model", file.to_str().unwrap()],
        ));
        let rows = read_facts(&out.join(FACTS));
        assert!(!rows.is_empty());
        assert!(
            rows.iter().all(|row| row.block_bytes == expected * 16),
            "{name}: {expected} B/token"
        );
        // The summary names the model and its size; a windowed one says what is left out.
        assert!(
            run.stderr.contains(&format!("model: {}: ", file.display())),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr.contains(&format!("({expected} B: ")),
            "{}",
            run.stderr
        );
        assert_eq!(
            run.stderr.contains("are not modelled"),
            name == "sliding-window-mix",
            "{}",
            run.stderr
        );
    }
    // The folder holding a config.json is read too (a model downloaded for serving).
    let folder = dir.path().join("Llama-3.1-8B");
    std::fs::create_dir(&folder).unwrap();
    write_file(&folder, "config.json", &family_configs()[0].1.to_string());
    let out = dir.path().join("folder");
    ok(replay_to(
        &trace,
        &out,
        &[
            "--block-size",
            "16",
            "--model",
            folder.to_str().unwrap(),
            "--quiet",
        ],
    ));
    assert!(
        read_facts(&out.join(FACTS))
            .iter()
            .all(|row| row.block_bytes == 131_072 * 16)
    );
}

#[test]
fn refused_models_and_flags_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    let windowed = write_file(
        dir.path(),
        "mistral.json",
        &json!({"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "hidden_size": 4096, "torch_dtype": "bfloat16", "sliding_window": 4096})
        .to_string(),
    );
    let broken = write_file(
        dir.path(),
        "broken.json",
        &json!({"num_hidden_layers": 2, "head_dim": 8, "torch_dtype": "bfloat16"}).to_string(),
    );
    let model = |path: &Path| path.to_str().unwrap().to_owned();
    let cases: Vec<(Vec<String>, Vec<String>)> = vec![
        (
            vec!["--model".into(), model(&windowed)],
            vec![model(&windowed), "all 32 layers are sliding-window".into()],
        ),
        (
            vec!["--model".into(), model(&broken)],
            vec![model(&broken), "num_attention_heads: missing".into()],
        ),
        (
            vec!["--model".into(), "Qwen3-8B".into()],
            vec!["did you mean Qwen/Qwen3-8B?".into()],
        ),
        (
            vec![
                "--model".into(),
                "Qwen/Qwen3-8B".into(),
                "--kv-bytes-per-token".into(),
                "1024".into(),
            ],
            vec!["--kv-bytes-per-token".into(), "--model".into()],
        ),
        (
            vec![
                "--model".into(),
                "Qwen/Qwen3-8B".into(),
                "--block-bytes".into(),
                "1MiB".into(),
            ],
            vec!["--block-bytes".into(), "--model".into()],
        ),
        (
            vec!["--kv-cache-dtype".into(), "fp8".into()],
            vec!["--model".into()],
        ),
    ];
    for (index, (flags, fragments)) in cases.iter().enumerate() {
        let out = dir.path().join(format!("out{index}"));
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let run = replay_to(&trace, &out, &flags);
        // Ours start with `litehit: `, clap's conflicts with `error: `: both exit 1.
        assert_eq!(run.code, Some(1), "{flags:?}: {}", run.stderr);
        let message = &run.stderr;
        for fragment in fragments {
            assert!(message.contains(fragment.as_str()), "{flags:?}: {message}");
        }
        assert!(!out.join(FACTS).exists());
    }
}

#[test]
fn the_monitor_names_the_model_in_its_headless_lines() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    let (lines, _) = headless_to_end(
        &trace,
        &[
            "--block-size",
            "16",
            "--model",
            "google/gemma-3-27b-it",
            "--kv-cache-dtype",
            "fp8",
        ],
    );
    let last = lines.last().unwrap();
    let config: Value = serde_json::from_str(
        litehit_core::config::model_preset("google/gemma-3-27b-it")
            .unwrap()
            .config_json,
    )
    .unwrap();
    let expected = naive_kv_bytes_per_token(&config, Some(1));
    assert_eq!(last["model"]["name"], "google/gemma-3-27b-it");
    assert_eq!(last["model"]["kv_bytes_per_token"], expected);
    assert_eq!(last["model"]["kv_cache_dtype"], "fp8");
    assert_eq!(last["model"]["windowed_layers_not_modelled"], 52);
    assert!(
        last["model"]["notice"]
            .as_str()
            .unwrap()
            .contains("52 of its 62 layers")
    );
    for instance in last["instances"].as_array().unwrap() {
        assert_eq!(instance["block_bytes"], expected * 16, "{instance}");
    }
    // Without --model there is no such field.
    let (lines, _) = headless_to_end(&trace, &["--block-size", "16"]);
    assert!(lines.last().unwrap().get("model").is_none());
}

#[test]
fn the_defaults_file_gives_a_model_and_a_typed_size_wins() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    write_file(dir.path(), "gqa.json", &family_configs()[0].1.to_string());
    // A relative config path is read beside the defaults file.
    let defaults = write_file(
        dir.path(),
        "defaults.toml",
        "model = \"gqa.json\"\nkv-cache-dtype = \"fp8\"\n",
    );
    let replay = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "--config-file",
            defaults.to_str().unwrap(),
            "replay",
            trace.to_str().unwrap(),
            "--out",
            out,
            "--block-size",
            "16",
            "--quiet",
        ];
        args.extend_from_slice(extra);
        let out = dir.path().join(out);
        ok(run_in(Some(dir.path()), args));
        read_facts(&out.join(FACTS))[0].block_bytes
    };
    assert_eq!(replay("a", &[]), 65_536 * 16);
    assert_eq!(replay("b", &["--kv-bytes-per-token", "4096"]), 4096 * 16);
    assert_eq!(replay("c", &["--kv-cache-dtype", "fp32"]), 262_144 * 16);
    let bad = write_file(dir.path(), "bad.toml", "fps = 10\nmodel = \"nope\"\n");
    let run = run_in(
        Some(dir.path()),
        [
            "--config-file",
            bad.to_str().unwrap(),
            "replay",
            trace.to_str().unwrap(),
            "--out",
            "d",
        ],
    );
    let message = failed(&run);
    assert!(message.contains("bad.toml:2: model:"), "{message}");
}

/// End to end on the Mooncake conversation trace: each preset's facts are byte for byte those
/// of its KV bytes per token typed by hand, and so is every answer read from them.
#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn mooncake_facts_of_a_preset_are_those_of_its_bytes_typed_by_hand() {
    let trace = shared_file("traces/conversation_trace.jsonl");
    let dir = tempfile::tempdir().unwrap();
    for (model, by_hand) in [
        ("meta-llama/Llama-3.1-8B-Instruct", "131072"),
        ("deepseek-ai/DeepSeek-V3", "70272"),
        ("openai/gpt-oss-120b", "36864"),
    ] {
        let name = model.replace('/', "_");
        let with_model = dir.path().join(format!("{name}-model"));
        let with_bytes = dir.path().join(format!("{name}-bytes"));
        ok(replay_to(
            &trace,
            &with_model,
            &["--model", model, "--quiet"],
        ));
        ok(replay_to(
            &trace,
            &with_bytes,
            &["--kv-bytes-per-token", by_hand, "--quiet"],
        ));
        let facts_model = std::fs::read(with_model.join(FACTS)).unwrap();
        assert_eq!(facts_model, std::fs::read(with_bytes.join(FACTS)).unwrap());
        let query = |facts: &Path| {
            ok(run_in(
                None,
                [
                    "query",
                    facts.join(FACTS).to_str().unwrap(),
                    "-",
                    "10",
                    "40",
                    "80",
                ],
            ))
            .stdout
        };
        assert_eq!(query(&with_model), query(&with_bytes), "{model}");
        // 512-token Mooncake blocks of that model's KV.
        let rows = read_facts(&with_model.join(FACTS));
        let per_token: u64 = by_hand.parse().unwrap();
        assert!(rows.iter().all(|row| row.block_bytes == per_token * 512));
    }
}
