//! `--model` and `--kv-cache-dtype`: which model's KV cache a GB capacity holds. Parsed here;
//! `commands` resolves the name through `litehit_core::config::ModelKvSize`.

use litehit_core::config::KvCacheDtype;

/// The model flags of `replay`, `watch`, `demo`, `trace`, `query` and `mrc`.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct ModelFlags {
    /// The model whose KV cache the capacities hold: a Hugging Face `config.json` (or its
    /// folder), read offline, or a preset by its exact Hugging Face id (Qwen/Qwen3-8B,
    /// meta-llama/Llama-3.1-8B-Instruct, deepseek-ai/DeepSeek-V3, openai/gpt-oss-120b, ...;
    /// docs/PLANNING.md lists them). Its KV bytes per token = Σ over full-attention layers
    /// of 2 × KV heads × head dim (MLA: kv_lora_rank + qk_rope_head_dim) × dtype bytes;
    /// sliding-window layers are not modelled, and said so. Not with --block-bytes or
    /// --kv-bytes-per-token. On query and mrc: every facts row's block_bytes becomes this ×
    /// its block_size_tokens (a note says so)
    #[arg(long, value_name = "NAME_OR_CONFIG")]
    pub model: Option<String>,

    /// With --model: the KV cache dtype, instead of the model config's torch_dtype: fp8,
    /// bf16, fp16 or fp32
    #[arg(long, value_name = "DTYPE", value_parser = parse_kv_cache_dtype)]
    pub kv_cache_dtype: Option<KvCacheDtype>,
}

/// `--kv-cache-dtype`.
pub fn parse_kv_cache_dtype(text: &str) -> Result<KvCacheDtype, String> {
    KvCacheDtype::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = KvCacheDtype::ALL.iter().map(|dtype| dtype.name()).collect();
        format!("expected {}", names.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_names() {
        assert_eq!(parse_kv_cache_dtype("fp8"), Ok(KvCacheDtype::Fp8));
        assert!(
            parse_kv_cache_dtype("int4")
                .unwrap_err()
                .contains("fp8, bf16, fp16, fp32")
        );
    }
}
