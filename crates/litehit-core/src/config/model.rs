//! A model's KV cache size per token, from its Hugging Face `config.json` (read offline) or a
//! built-in preset ([`super::model_presets`], stored as the same config fields): the one rule
//! `--model` turns into bytes, so a GB capacity means what it means on the user's model.
//!
//! KV bytes per token = Σ over the layers that keep a full-attention KV cache of the values
//! one token stores there × the dtype's bytes:
//! - attention with K and V: `2 × num_key_value_heads × head_dim` (head dim = `head_dim`, else
//!   `hidden_size / num_attention_heads`; KV heads default to the attention heads);
//! - MLA (a `kv_lora_rank` key: DeepSeek V2/V3, Kimi K2): `kv_lora_rank + qk_rope_head_dim`,
//!   the compressed latent and the decoupled RoPE key, one vector for K and V alike.
//!
//! The dtype is `torch_dtype` (or `dtype`), unless `--kv-cache-dtype` says otherwise.
//! Sliding-window and linear-attention layers keep a bounded state, not a per-token cache, so
//! they are left out and every surface says so ([`ModelKvSize::windowed_notice`]); a model
//! whose every layer is windowed has no full-attention KV to model, which is an error.
//!
//! Which layers are windowed, in the order transformers decides it: `layer_types` (entries
//! other than `full_attention`), else `full_attention_interval` N or `sliding_window_pattern`
//! N (layer i is full when (i + 1) is a multiple of N; Gemma 2 and 3 leave the pattern out and
//! mean 2 and 6), else Qwen2's `use_sliding_window` (the first `max_window_layers` are full),
//! else a `sliding_window` set on every layer (Mistral 7B v0.1), unless `use_sliding_window`
//! is false.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::model_presets::{PRESETS, preset};
use crate::display::{self, Precision};

/// The KV cache element type: what one stored value costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvCacheDtype {
    /// 8-bit floats (vLLM and SGLang `--kv-cache-dtype fp8`).
    Fp8,
    /// bfloat16.
    Bf16,
    /// float16.
    Fp16,
    /// float32.
    Fp32,
}

impl KvCacheDtype {
    /// Every dtype, in the order the flag's help lists them.
    pub const ALL: [Self; 4] = [Self::Fp8, Self::Bf16, Self::Fp16, Self::Fp32];

    /// Bytes per stored value.
    #[must_use]
    pub fn bytes(self) -> u64 {
        match self {
            Self::Fp8 => 1,
            Self::Bf16 | Self::Fp16 => 2,
            Self::Fp32 => 4,
        }
    }

    /// The flag's spelling (`bf16`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Fp8 => "fp8",
            Self::Bf16 => "bf16",
            Self::Fp16 => "fp16",
            Self::Fp32 => "fp32",
        }
    }

    /// `--kv-cache-dtype NAME`: `fp8`, `bf16`, `fp16` or `fp32`.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|dtype| dtype.name() == name)
    }

    /// A config's `torch_dtype` (`bfloat16`, `float16`, `float32`, `float8_e4m3fn`, ...).
    #[must_use]
    pub fn from_torch_dtype(text: &str) -> Option<Self> {
        let text = text.strip_prefix("torch.").unwrap_or(text);
        match text {
            "bfloat16" => Some(Self::Bf16),
            "float16" | "half" => Some(Self::Fp16),
            "float32" | "float" => Some(Self::Fp32),
            _ if text.starts_with("float8") => Some(Self::Fp8),
            _ => Self::from_name(text),
        }
    }
}

/// A model's KV size per token, and how it was found (what the surfaces say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelKvSize {
    /// The preset's Hugging Face id, or the config file as given.
    pub model: String,
    /// KV cache bytes one token takes over all full-attention layers (K and V).
    pub kv_bytes_per_token: u64,
    /// The element type counted (the config's, or `--kv-cache-dtype`).
    pub kv_cache_dtype: KvCacheDtype,
    /// Layers whose KV cache is counted.
    pub full_attention_layers: u64,
    /// Sliding-window or linear-attention layers, left out (not modelled).
    pub windowed_layers: u64,
    /// Values one token stores per full-attention layer (`2 × heads × head dim`, or MLA's
    /// `kv_lora_rank + qk_rope_head_dim`).
    pub values_per_layer: u64,
    /// Multi-head latent attention (a `kv_lora_rank` key).
    pub mla: bool,
}

impl ModelKvSize {
    /// The model named by `name_or_config`: an existing `config.json` (or a folder holding
    /// one), else a preset by its exact Hugging Face id. `dtype` overrides the config's.
    ///
    /// # Errors
    /// [`ModelError`]: the file cannot be read or lacks a field, the name is no preset, or
    /// every layer is windowed.
    pub fn resolve(name_or_config: &str, dtype: Option<KvCacheDtype>) -> Result<Self, ModelError> {
        let path = Path::new(name_or_config);
        if path.exists() {
            let file = if path.is_dir() {
                path.join("config.json")
            } else {
                path.to_path_buf()
            };
            let text = std::fs::read_to_string(&file).map_err(|error| ModelError::Read {
                path: file.clone(),
                error,
            })?;
            let json: Value = serde_json::from_str(&text).map_err(|error| ModelError::Json {
                path: file.clone(),
                error,
            })?;
            return Self::of_config(name_or_config, &json, dtype).map_err(|reason| {
                ModelError::Config {
                    source_name: file.display().to_string(),
                    reason,
                }
            });
        }
        let Some(found) = preset(name_or_config) else {
            if path
                .extension()
                .is_some_and(|extension| extension == "json")
            {
                // Meant as a file: say it is not there, not that it is no preset.
                return Err(ModelError::Read {
                    path: path.to_path_buf(),
                    error: std::io::ErrorKind::NotFound.into(),
                });
            }
            return Err(ModelError::Unknown {
                name: name_or_config.to_owned(),
                close: PRESETS
                    .iter()
                    .map(|preset| preset.id)
                    .find(|id| id.eq_ignore_ascii_case(name_or_config))
                    .or_else(|| {
                        let lower = name_or_config.to_ascii_lowercase();
                        PRESETS
                            .iter()
                            .map(|preset| preset.id)
                            .find(|id| id.to_ascii_lowercase().ends_with(&lower))
                    }),
            });
        };
        let json: Value = serde_json::from_str(found.config_json)
            .unwrap_or_else(|error| panic!("preset {}: {error}", found.id));
        Self::of_config(found.id, &json, dtype).map_err(|reason| ModelError::Config {
            source_name: format!("preset {}", found.id),
            reason,
        })
    }

    /// The size of the model whose `config.json` is `json`, named `model` on the surfaces.
    ///
    /// # Errors
    /// A [`ConfigProblem`] naming the field at fault.
    pub fn of_config(
        model: &str,
        json: &Value,
        dtype: Option<KvCacheDtype>,
    ) -> Result<Self, ConfigProblem> {
        if !json.is_object() {
            return Err(ConfigProblem::NotAnObject);
        }
        // Multimodal wrappers (Gemma 3, Llama 4) keep the language model under `text_config`.
        let text = match json.get("text_config") {
            Some(inner @ Value::Object(_)) if json.get("num_hidden_layers").is_none() => inner,
            _ => json,
        };
        let kv_cache_dtype = match dtype {
            Some(dtype) => dtype,
            None => config_dtype(text).or_else(|_| config_dtype(json))?,
        };
        let layers = positive(text, "num_hidden_layers")?;
        let (values_per_layer, mla) = if present(text, "kv_lora_rank") {
            let rank = positive(text, "kv_lora_rank")?;
            let rope = positive(text, "qk_rope_head_dim")?;
            (
                checked(rank.checked_add(rope), "kv_lora_rank + qk_rope_head_dim")?,
                true,
            )
        } else {
            let heads = positive(text, "num_attention_heads")?;
            let kv_heads = if present(text, "num_key_value_heads") {
                positive(text, "num_key_value_heads")?
            } else {
                heads
            };
            let head_dim = if present(text, "head_dim") {
                positive(text, "head_dim")?
            } else {
                let hidden = positive(text, "hidden_size")?;
                if !hidden.is_multiple_of(heads) {
                    return Err(ConfigProblem::field(
                        "hidden_size",
                        format!(
                            "{hidden} is not a multiple of num_attention_heads {heads}, and \
                             there is no head_dim"
                        ),
                    ));
                }
                hidden / heads
            };
            let values = kv_heads
                .checked_mul(head_dim)
                .and_then(|values| values.checked_mul(2));
            (
                checked(values, "2 × num_key_value_heads × head_dim")?,
                false,
            )
        };
        let windowed_layers = windowed_layers(text, layers)?;
        let full_attention_layers = layers - windowed_layers;
        if full_attention_layers == 0 {
            return Err(ConfigProblem::AllWindowed { layers });
        }
        let kv_bytes_per_token = full_attention_layers
            .checked_mul(values_per_layer)
            .and_then(|values| values.checked_mul(kv_cache_dtype.bytes()));
        Ok(Self {
            model: model.to_owned(),
            kv_bytes_per_token: checked(kv_bytes_per_token, "the KV bytes per token")?,
            kv_cache_dtype,
            full_attention_layers,
            windowed_layers,
            values_per_layer,
            mla,
        })
    }

    /// What is not modelled, when some layers are windowed: said on every surface.
    #[must_use]
    pub fn windowed_notice(&self) -> Option<String> {
        (self.windowed_layers > 0).then(|| {
            format!(
                "{}: {} of its {} layers are sliding-window or linear attention and are not \
                 modelled (only the {} full-attention layers' KV cache is counted)",
                self.model,
                self.windowed_layers,
                self.windowed_layers + self.full_attention_layers,
                self.full_attention_layers
            )
        })
    }

    /// A few words for a narrow place (the monitor's geometry line): `openai/gpt-oss-20b
    /// 24 KiB/token ⚠ 12 of 24 layers windowed, not modelled`.
    #[must_use]
    pub fn short(&self) -> String {
        let windowed = if self.windowed_layers > 0 {
            format!(
                " ⚠ {} of {} layers windowed, not modelled",
                self.windowed_layers,
                self.windowed_layers + self.full_attention_layers
            )
        } else {
            String::new()
        };
        format!(
            "{} {}/token{windowed}",
            self.model,
            display::bytes(self.kv_bytes_per_token, Precision::Significant(3))
        )
    }

    /// One line for a summary: `Qwen/Qwen3-8B: 144 KiB of KV per token (36 layers × 2048
    /// values × bf16)`.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "{}: {} of KV per token ({} B: {} {} × {} values{} × {})",
            self.model,
            display::bytes(self.kv_bytes_per_token, Precision::Significant(3)),
            self.kv_bytes_per_token,
            self.full_attention_layers,
            if self.windowed_layers > 0 {
                "full-attention layers"
            } else {
                "layers"
            },
            self.values_per_layer,
            if self.mla { " (MLA)" } else { "" },
            self.kv_cache_dtype.name()
        )
    }
}

/// Why `--model` gives no size.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The config file cannot be read.
    #[error("{}: cannot read the model config: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why the system refused.
        error: std::io::Error,
    },
    /// The config file is not JSON.
    #[error("{}: invalid JSON: {error}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// serde_json's message, with line and column.
        error: serde_json::Error,
    },
    /// A field of the config is missing or wrong, or every layer is windowed.
    #[error("{source_name}: {reason}")]
    Config {
        /// The file, or `preset ID`.
        source_name: String,
        /// What is wrong, naming the field.
        reason: ConfigProblem,
    },
    /// Neither a file nor a preset.
    #[error(
        "{name:?} is neither a config.json (or a folder holding one) nor a preset{}; the \
         presets are: {}",
        close.map(|id| format!(" (did you mean {id}?)")).unwrap_or_default(),
        PRESETS.iter().map(|preset| preset.id).collect::<Vec<_>>().join(", ")
    )]
    Unknown {
        /// As typed.
        name: String,
        /// A preset it is close to (another case, or the id's end).
        close: Option<&'static str>,
    },
}

/// What is wrong inside a model config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigProblem {
    /// A field is missing or not what it must be.
    #[error("{field}: {reason}")]
    Field {
        /// The config key (`num_key_value_heads`).
        field: &'static str,
        /// What it should be.
        reason: String,
    },
    /// The JSON is not an object (a model's `config.json` is one).
    #[error("not a JSON object: a model's config.json is one ({{\"num_hidden_layers\": ..}})")]
    NotAnObject,
    /// No layer keeps a full-attention KV cache.
    #[error(
        "all {layers} layers are sliding-window or linear attention: no full-attention KV \
         cache to model (a windowed layer keeps a bounded state, not a prefix cache)"
    )]
    AllWindowed {
        /// Layers of the model.
        layers: u64,
    },
}

impl ConfigProblem {
    fn field(field: &'static str, reason: impl Into<String>) -> Self {
        Self::Field {
            field,
            reason: reason.into(),
        }
    }
}

/// Whether `key` is there and not `null`.
fn present(json: &Value, key: &str) -> bool {
    json.get(key).is_some_and(|value| !value.is_null())
}

/// A positive integer field.
fn positive(json: &Value, field: &'static str) -> Result<u64, ConfigProblem> {
    match json.get(field) {
        None | Some(Value::Null) => Err(ConfigProblem::field(field, "missing")),
        Some(value) => value.as_u64().filter(|&n| n > 0).ok_or_else(|| {
            ConfigProblem::field(field, format!("expected a positive integer, found {value}"))
        }),
    }
}

fn checked(value: Option<u64>, what: &'static str) -> Result<u64, ConfigProblem> {
    value.ok_or_else(|| ConfigProblem::field(what, "overflows a u64 byte count"))
}

/// `torch_dtype`, else `dtype`.
fn config_dtype(json: &Value) -> Result<KvCacheDtype, ConfigProblem> {
    let Some((field, value)) = ["torch_dtype", "dtype"]
        .into_iter()
        .find_map(|field| json.get(field).filter(|v| !v.is_null()).map(|v| (field, v)))
    else {
        return Err(ConfigProblem::field(
            "torch_dtype",
            "missing (and no dtype): give --kv-cache-dtype fp8|bf16|fp16|fp32",
        ));
    };
    value
        .as_str()
        .and_then(KvCacheDtype::from_torch_dtype)
        .ok_or_else(|| {
            ConfigProblem::field(
                if field == "dtype" {
                    "dtype"
                } else {
                    "torch_dtype"
                },
                format!("{value} is no float type; give --kv-cache-dtype fp8|bf16|fp16|fp32"),
            )
        })
}

/// How many of the `layers` layers are sliding-window or linear attention (module doc).
fn windowed_layers(json: &Value, layers: u64) -> Result<u64, ConfigProblem> {
    if let Some(types) = json.get("layer_types").filter(|v| !v.is_null()) {
        let types = types.as_array().ok_or_else(|| {
            ConfigProblem::field("layer_types", "expected a list of layer type names")
        })?;
        if types.len() as u64 != layers {
            return Err(ConfigProblem::field(
                "layer_types",
                format!(
                    "{} entries for num_hidden_layers {layers} layers",
                    types.len()
                ),
            ));
        }
        let mut windowed = 0;
        for entry in types {
            match entry.as_str() {
                Some("full_attention") => {}
                Some(_) => windowed += 1,
                None => {
                    return Err(ConfigProblem::field(
                        "layer_types",
                        format!("expected layer type names, found {entry}"),
                    ));
                }
            }
        }
        return Ok(windowed);
    }
    let model_type = json.get("model_type").and_then(Value::as_str).unwrap_or("");
    let default_pattern = match model_type {
        "gemma2" => Some(2),
        "gemma3" | "gemma3_text" => Some(6),
        _ => None,
    };
    let interval = if present(json, "full_attention_interval") {
        Some(positive(json, "full_attention_interval")?)
    } else if present(json, "sliding_window_pattern") {
        Some(positive(json, "sliding_window_pattern")?)
    } else {
        default_pattern.filter(|_| present(json, "sliding_window"))
    };
    if let Some(every) = interval {
        return Ok(layers - layers / every);
    }
    let sliding = present(json, "sliding_window");
    match json.get("use_sliding_window").and_then(Value::as_bool) {
        Some(false) => Ok(0),
        Some(true) if sliding && present(json, "max_window_layers") => {
            let full = positive(json, "max_window_layers")?.min(layers);
            Ok(layers - full)
        }
        _ if sliding => Ok(layers),
        _ => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn size(json: &Value) -> Result<ModelKvSize, ConfigProblem> {
        ModelKvSize::of_config("m", json, None)
    }

    #[test]
    fn dense_gqa_counts_k_and_v_of_every_kv_head() {
        let llama = json!({"num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "hidden_size": 4096, "torch_dtype": "bfloat16"});
        let got = size(&llama).unwrap();
        assert_eq!(got.kv_bytes_per_token, 131_072);
        assert_eq!(got.values_per_layer, 2 * 8 * 128);
        let fp8 = ModelKvSize::of_config("m", &llama, Some(KvCacheDtype::Fp8)).unwrap();
        assert_eq!(fp8.kv_bytes_per_token, 65_536);
        // Without KV heads: one per attention head (MHA).
        let mha = json!({"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64,
            "dtype": "float32"});
        assert_eq!(size(&mha).unwrap().kv_bytes_per_token, 2 * 2 * 4 * 16 * 4);
    }

    /// What the walk-through typed: JSON that is no object, a `.json` path that is not there.
    #[test]
    fn a_non_object_config_and_a_missing_json_file_say_what_they_are() {
        for json in [json!([1, 2]), json!("x"), json!(null)] {
            assert_eq!(
                size(&json).unwrap_err(),
                ConfigProblem::NotAnObject,
                "{json}"
            );
        }
        let missing = ModelKvSize::resolve("no/such/dir/config.json", None).unwrap_err();
        assert!(
            matches!(&missing, ModelError::Read { error, .. }
                if error.kind() == std::io::ErrorKind::NotFound),
            "{missing}"
        );
        assert!(missing.to_string().starts_with("no/such/dir/config.json: "));
        // A name that is no file and no preset still lists the presets.
        let unknown = ModelKvSize::resolve("no-such-model", None).unwrap_err();
        assert!(matches!(unknown, ModelError::Unknown { .. }), "{unknown}");
    }

    #[test]
    fn mla_stores_the_latent_and_the_rope_key() {
        let v3 = json!({"num_hidden_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
            "num_attention_heads": 128, "num_key_value_heads": 128, "torch_dtype": "bfloat16"});
        let got = size(&v3).unwrap();
        assert_eq!(got.kv_bytes_per_token, 61 * 576 * 2);
        assert_eq!(got.kv_bytes_per_token, 70_272);
        assert!(got.mla);
    }

    #[test]
    fn windowed_layers_are_left_out_and_said() {
        let mixed = json!({"num_hidden_layers": 4, "num_attention_heads": 2, "head_dim": 8,
            "torch_dtype": "float16", "sliding_window": 128,
            "layer_types": ["sliding_attention", "full_attention", "linear_attention",
                            "full_attention"]});
        let got = size(&mixed).unwrap();
        assert_eq!((got.full_attention_layers, got.windowed_layers), (2, 2));
        assert_eq!(got.kv_bytes_per_token, 2 * 2 * 2 * 8 * 2);
        assert!(got.windowed_notice().unwrap().contains("2 of its 4 layers"));
        // Gemma 3: every 6th layer is global, also when the pattern is left out.
        let gemma = json!({"model_type": "gemma3_text", "num_hidden_layers": 62,
            "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128,
            "sliding_window": 1024, "torch_dtype": "bfloat16"});
        assert_eq!(size(&gemma).unwrap().full_attention_layers, 10);
        // Qwen2: the first max_window_layers are full, when sliding windows are on at all.
        let qwen = json!({"num_hidden_layers": 28, "num_attention_heads": 28,
            "num_key_value_heads": 4, "hidden_size": 3584, "torch_dtype": "bfloat16",
            "sliding_window": 131_072, "max_window_layers": 21, "use_sliding_window": true});
        assert_eq!(size(&qwen).unwrap().windowed_layers, 7);
        let off = json!({"num_hidden_layers": 28, "num_attention_heads": 28,
            "num_key_value_heads": 4, "hidden_size": 3584, "torch_dtype": "bfloat16",
            "sliding_window": 131_072, "max_window_layers": 21, "use_sliding_window": false});
        assert_eq!(size(&off).unwrap().windowed_layers, 0);
    }

    #[test]
    fn a_model_with_only_windowed_layers_is_an_error() {
        let mistral = json!({"num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "hidden_size": 4096, "torch_dtype": "bfloat16",
            "sliding_window": 4096});
        assert_eq!(
            size(&mistral).unwrap_err(),
            ConfigProblem::AllWindowed { layers: 32 }
        );
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (
                json!({"num_attention_heads": 2, "head_dim": 8, "torch_dtype": "bfloat16"}),
                "num_hidden_layers: missing",
            ),
            (
                json!({"num_hidden_layers": 2, "num_attention_heads": 3, "hidden_size": 8,
                    "torch_dtype": "bfloat16"}),
                "hidden_size: 8 is not a multiple",
            ),
            (
                json!({"num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 8}),
                "torch_dtype: missing",
            ),
            (
                json!({"num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 8,
                    "torch_dtype": "int8"}),
                "torch_dtype: \"int8\" is no float type",
            ),
            (
                json!({"num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": -8,
                    "torch_dtype": "bfloat16"}),
                "head_dim: expected a positive integer",
            ),
            (
                json!({"num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 8,
                    "torch_dtype": "bfloat16", "layer_types": ["full_attention"]}),
                "layer_types: 1 entries",
            ),
        ];
        for (config, expected) in cases {
            let message = size(&config).unwrap_err().to_string();
            assert!(message.starts_with(expected), "{message}");
        }
    }

    #[test]
    fn an_unknown_name_lists_the_presets_and_a_close_one() {
        let error = ModelKvSize::resolve("qwen/qwen3-8b", None)
            .unwrap_err()
            .to_string();
        assert!(error.contains("did you mean Qwen/Qwen3-8B?"), "{error}");
        assert!(error.contains("deepseek-ai/DeepSeek-V3"), "{error}");
        let error = ModelKvSize::resolve("Qwen3-8B", None)
            .unwrap_err()
            .to_string();
        assert!(error.contains("did you mean Qwen/Qwen3-8B?"), "{error}");
    }

    #[test]
    fn the_dtype_names_round_trip() {
        for dtype in KvCacheDtype::ALL {
            assert_eq!(KvCacheDtype::from_name(dtype.name()), Some(dtype));
        }
        assert_eq!(
            KvCacheDtype::from_torch_dtype("float8_e4m3fn"),
            Some(KvCacheDtype::Fp8)
        );
        assert_eq!(
            KvCacheDtype::from_torch_dtype("torch.float16"),
            Some(KvCacheDtype::Fp16)
        );
    }
}
