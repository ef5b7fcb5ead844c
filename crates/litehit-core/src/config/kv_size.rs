//! The one plausibility rule for a KV cache size per token: every surface that shows GB
//! (the replay summary, `query`, `mrc`, the monitor's geometry line, headless JSON) asks
//! [`ImplausibleKvSize::check`] and prints what it says; none has a rule of its own.

use crate::display::{self, Precision};

/// The KV cache sizes per token real models have (all layers, K and V): from 8 KiB (small
/// models, quantized or with few KV heads) to 4 MiB (the largest dense models in fp32). A
/// size outside is almost surely a per-block size given per token, or the other way round.
pub const PLAUSIBLE_KV_BYTES_PER_TOKEN: std::ops::RangeInclusive<u64> = (8 << 10)..=(4 << 20);

/// A lane geometry whose KV size per token is outside [`PLAUSIBLE_KV_BYTES_PER_TOKEN`]: its
/// GB capacities become blocks of an unlikely size, so GB answers are likely wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImplausibleKvSize {
    /// KV bytes per block, as configured.
    pub block_bytes: u64,
    /// Tokens per block, to express the size per token.
    pub block_size_tokens: u64,
}

impl ImplausibleKvSize {
    /// `Some` when `block_bytes / block_size_tokens` is below 8 KiB or above 4 MiB per
    /// token; `None` when plausible, or when either is 0 (a geometry not known yet).
    #[must_use]
    pub fn check(block_bytes: u64, block_size_tokens: u64) -> Option<Self> {
        if block_bytes == 0 || block_size_tokens == 0 {
            return None;
        }
        // Exact, in integers: bytes < min × tokens or bytes > max × tokens.
        let tokens = u128::from(block_size_tokens);
        let bytes = u128::from(block_bytes);
        let plausible = bytes >= u128::from(*PLAUSIBLE_KV_BYTES_PER_TOKEN.start()) * tokens
            && bytes <= u128::from(*PLAUSIBLE_KV_BYTES_PER_TOKEN.end()) * tokens;
        (!plausible).then_some(Self {
            block_bytes,
            block_size_tokens,
        })
    }

    /// The distinct implausible KV sizes among `geometries` (`(block_bytes,
    /// block_size_tokens)`, e.g. one per lane or facts row), in first-seen order: what a
    /// surface warns of, once each.
    #[must_use]
    pub fn distinct(geometries: impl IntoIterator<Item = (u64, u64)>) -> Vec<Self> {
        let mut warnings: Vec<Self> = Vec::new();
        for (block_bytes, block_size_tokens) in geometries {
            if let Some(warning) = Self::check(block_bytes, block_size_tokens)
                && !warnings.contains(&warning)
            {
                warnings.push(warning);
            }
        }
        warnings
    }

    /// The KV size per token, for display.
    #[must_use]
    pub fn per_token(&self) -> String {
        let per_token = self.block_bytes as f64 / self.block_size_tokens as f64;
        let (value, unit) = display::scale_bytes(per_token);
        format!(
            "{} {unit}",
            display::number(value, Precision::Significant(3))
        )
    }

    /// A few words for a narrow place (the monitor's geometry line).
    #[must_use]
    pub fn short(&self) -> String {
        format!("⚠ implausible KV size {}/token", self.per_token())
    }
}

/// The warning, one line: the size, the plausible range and what to do.
impl std::fmt::Display for ImplausibleKvSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "implausible KV size: {} per token ({} per {}-token block), where models hold {} \
             to {} per token (Llama 3.1 8B in bf16: 128 KiB), so GB capacities are likely \
             wrong: name your model (--model with its config.json, or a preset: {}), give its \
             KV bytes per token (--kv-bytes-per-token; in an upstream config, \
             location_spec_infos size per block), or no size at all (the default is 128 KiB)",
            self.per_token(),
            display::bytes(self.block_bytes, Precision::Significant(3)),
            self.block_size_tokens,
            display::bytes(
                *PLAUSIBLE_KV_BYTES_PER_TOKEN.start(),
                Precision::Significant(3)
            ),
            display::bytes(
                *PLAUSIBLE_KV_BYTES_PER_TOKEN.end(),
                Precision::Significant(3)
            ),
            super::model_presets::PRESETS
                .iter()
                .map(|preset| preset.id)
                .collect::<Vec<_>>()
                .join(", "),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plausible_is_8_kib_to_4_mib_per_token() {
        let cases: &[(u64, u64, bool)] = &[
            (1 << 20, 512, true),           // the old README example: 2 KiB per token
            (131_072 * 512, 512, false),    // the default 8B model
            (8192 * 16, 16, false),         // the lower edge is plausible
            (8192 * 16 - 1, 16, true),      // just below it
            ((4 << 20) * 16, 16, false),    // the upper edge is plausible
            ((4 << 20) * 16 + 1, 16, true), // just above it
            (2 << 20, 16, false),           // the KVCM log's 128 KiB per token
            (0, 16, false),                 // not known yet
            (1 << 20, 0, false),
            (u64::MAX, 1, true),
        ];
        for &(block_bytes, tokens, implausible) in cases {
            assert_eq!(
                ImplausibleKvSize::check(block_bytes, tokens).is_some(),
                implausible,
                "{block_bytes} B per {tokens}-token block"
            );
        }
    }

    #[test]
    fn distinct_keeps_each_implausible_geometry_once() {
        let warnings =
            ImplausibleKvSize::distinct([(1 << 20, 512), (2 << 20, 16), (1 << 20, 512), (1, 1)]);
        assert_eq!(
            warnings,
            [
                ImplausibleKvSize::check(1 << 20, 512).unwrap(),
                ImplausibleKvSize::check(1, 1).unwrap()
            ]
        );
    }

    #[test]
    fn says_the_size_and_the_range() {
        let warning = ImplausibleKvSize::check(1 << 20, 512).unwrap();
        assert_eq!(warning.per_token(), "2 KiB");
        assert_eq!(warning.short(), "⚠ implausible KV size 2 KiB/token");
        let text = warning.to_string();
        for part in [
            "2 KiB per token",
            "1 MiB per 512-token block",
            "8 KiB to 4 MiB",
            "--kv-bytes-per-token",
            "--model",
            "Qwen/Qwen3-8B",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
    }
}
