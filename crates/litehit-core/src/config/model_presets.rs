//! The built-in models `--model` names by their exact Hugging Face id: each is the fields of
//! the model's published `config.json` that the KV size depends on, copied as written, and
//! read by the same rule as a user's file ([`super::model::ModelKvSize::of_config`]), so no
//! preset carries a number of its own. A test recomputes each from these fields.

/// One preset: a Hugging Face model id and the relevant fields of its `config.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelPreset {
    /// The exact Hugging Face id (`meta-llama/Llama-3.1-8B-Instruct`).
    pub id: &'static str,
    /// The fields of its published `config.json` the KV size depends on, as JSON.
    pub config_json: &'static str,
}

/// The preset named `id` exactly.
#[must_use]
pub fn preset(id: &str) -> Option<&'static ModelPreset> {
    PRESETS.iter().find(|preset| preset.id == id)
}

const LLAMA_3_1_8B: &str = r#"{
    "model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
    "num_attention_heads": 32, "num_key_value_heads": 8, "torch_dtype": "bfloat16"
}"#;

const LLAMA_3_1_70B: &str = r#"{
    "model_type": "llama", "num_hidden_layers": 80, "hidden_size": 8192,
    "num_attention_heads": 64, "num_key_value_heads": 8, "torch_dtype": "bfloat16"
}"#;

const QWEN3_8B: &str = r#"{
    "model_type": "qwen3", "num_hidden_layers": 36, "hidden_size": 4096, "head_dim": 128,
    "num_attention_heads": 32, "num_key_value_heads": 8, "sliding_window": null,
    "use_sliding_window": false, "max_window_layers": 36, "torch_dtype": "bfloat16"
}"#;

const QWEN3_32B: &str = r#"{
    "model_type": "qwen3", "num_hidden_layers": 64, "hidden_size": 5120, "head_dim": 128,
    "num_attention_heads": 64, "num_key_value_heads": 8, "sliding_window": null,
    "use_sliding_window": false, "max_window_layers": 64, "torch_dtype": "bfloat16"
}"#;

const QWEN3_235B_A22B: &str = r#"{
    "model_type": "qwen3_moe", "num_hidden_layers": 94, "hidden_size": 4096, "head_dim": 128,
    "num_attention_heads": 64, "num_key_value_heads": 4, "sliding_window": null,
    "use_sliding_window": false, "max_window_layers": 94, "torch_dtype": "bfloat16"
}"#;

/// DeepSeek V3 and R1 share the architecture (MLA: the latent of `kv_lora_rank` values and
/// the RoPE key of `qk_rope_head_dim`, per layer).
const DEEPSEEK_V3: &str = r#"{
    "model_type": "deepseek_v3", "num_hidden_layers": 61, "hidden_size": 7168,
    "num_attention_heads": 128, "num_key_value_heads": 128, "kv_lora_rank": 512,
    "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
    "torch_dtype": "bfloat16"
}"#;

const GPT_OSS_20B: &str = r#"{
    "model_type": "gpt_oss", "num_hidden_layers": 24, "hidden_size": 2880, "head_dim": 64,
    "num_attention_heads": 64, "num_key_value_heads": 8, "sliding_window": 128,
    "torch_dtype": "bfloat16",
    "layer_types": [
        "sliding_attention", "full_attention", "sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention"
    ]
}"#;

const GPT_OSS_120B: &str = r#"{
    "model_type": "gpt_oss", "num_hidden_layers": 36, "hidden_size": 2880, "head_dim": 64,
    "num_attention_heads": 64, "num_key_value_heads": 8, "sliding_window": 128,
    "torch_dtype": "bfloat16",
    "layer_types": [
        "sliding_attention", "full_attention", "sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention"
    ]
}"#;

/// The language model sits under `text_config`; every 6th layer is global, the others keep a
/// 1024-token window.
const GEMMA_3_27B: &str = r#"{
    "model_type": "gemma3", "torch_dtype": "bfloat16",
    "text_config": {
        "model_type": "gemma3_text", "num_hidden_layers": 62, "hidden_size": 5376,
        "head_dim": 128, "num_attention_heads": 32, "num_key_value_heads": 16,
        "sliding_window": 1024, "sliding_window_pattern": 6
    }
}"#;

const MIXTRAL_8X7B: &str = r#"{
    "model_type": "mixtral", "num_hidden_layers": 32, "hidden_size": 4096,
    "num_attention_heads": 32, "num_key_value_heads": 8, "sliding_window": null,
    "torch_dtype": "bfloat16"
}"#;

/// Every preset, in the order the error message lists them.
pub const PRESETS: &[ModelPreset] = &[
    ModelPreset {
        id: "meta-llama/Llama-3.1-8B",
        config_json: LLAMA_3_1_8B,
    },
    ModelPreset {
        id: "meta-llama/Llama-3.1-8B-Instruct",
        config_json: LLAMA_3_1_8B,
    },
    ModelPreset {
        id: "meta-llama/Llama-3.1-70B",
        config_json: LLAMA_3_1_70B,
    },
    ModelPreset {
        id: "meta-llama/Llama-3.1-70B-Instruct",
        config_json: LLAMA_3_1_70B,
    },
    ModelPreset {
        id: "Qwen/Qwen3-8B",
        config_json: QWEN3_8B,
    },
    ModelPreset {
        id: "Qwen/Qwen3-32B",
        config_json: QWEN3_32B,
    },
    ModelPreset {
        id: "Qwen/Qwen3-235B-A22B",
        config_json: QWEN3_235B_A22B,
    },
    ModelPreset {
        id: "deepseek-ai/DeepSeek-V3",
        config_json: DEEPSEEK_V3,
    },
    ModelPreset {
        id: "deepseek-ai/DeepSeek-R1",
        config_json: DEEPSEEK_V3,
    },
    ModelPreset {
        id: "openai/gpt-oss-20b",
        config_json: GPT_OSS_20B,
    },
    ModelPreset {
        id: "openai/gpt-oss-120b",
        config_json: GPT_OSS_120B,
    },
    ModelPreset {
        id: "google/gemma-3-27b-it",
        config_json: GEMMA_3_27B,
    },
    ModelPreset {
        id: "mistralai/Mixtral-8x7B-v0.1",
        config_json: MIXTRAL_8X7B,
    },
    ModelPreset {
        id: "mistralai/Mixtral-8x7B-Instruct-v0.1",
        config_json: MIXTRAL_8X7B,
    },
];
