//! `--engine ideal|vllm|sglang`: whose prefix-cache rules the facts follow. The rules are the
//! core's (`litehit_core::facts::EngineRule`); this file only reads the name.

use litehit_core::facts::EngineRule;

/// `--engine`.
pub fn parse_engine_rule(text: &str) -> Result<EngineRule, String> {
    EngineRule::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = EngineRule::ALL.iter().map(|rule| rule.name()).collect();
        format!("expected {}", names.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_names() {
        assert_eq!(parse_engine_rule("vllm"), Ok(EngineRule::Vllm));
        assert!(
            parse_engine_rule("trt")
                .unwrap_err()
                .contains("ideal, vllm, sglang")
        );
    }
}
