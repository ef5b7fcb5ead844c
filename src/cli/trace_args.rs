//! `litehit trace LOG --out trace.jsonl`: the flags of the OpenAI-log → block-trace bridge.

#[cfg(feature = "tokenize")]
use std::path::PathBuf;

#[cfg(feature = "tokenize")]
use litehit_tokenize::convert::AddSpecialTokens;
#[cfg(feature = "tokenize")]
use litehit_tokenize::record::TimeUnit;

/// Tokens per block when none is given (vLLM's default).
pub const DEFAULT_BLOCK_SIZE: u64 = 16;

#[cfg(feature = "tokenize")]
/// `litehit trace LOG --out TRACE`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
#[command(after_long_help = "Examples:\n  \
litehit trace requests.jsonl --tokenizer Qwen3-8B/ --out trace.jsonl\n  \
litehit trace gateway.log.zst --tokenizer tokenizer.json --chat-template chat.jinja \\\n      \
--template-kwarg enable_thinking=false --time-field ts --time-unit ms --salt-field user --out trace.jsonl\n  \
litehit trace prompts.jsonl --tokenizer tiktoken:o200k_base --line-time --out - | head\n\n\
Each line is an OpenAI request body (`messages`, `prompt` as text or token ids, or \
`prompt_token_ids`), bare or wrapped in a log record (under `body` or `request`, or \
--body-field). Field paths are dotted and looked up in the record, then in the body. Each \
row's keys are the chained xxh3 hashes of its full blocks; `input_len` is the prompt's \
token count. The trace is published atomically.")]
pub struct TraceArgs {
    /// The request log: JSON Lines, optionally .gz or .zst; `-` reads standard input
    #[arg(value_name = "LOG")]
    pub log: PathBuf,

    /// The standard trace JSONL to write (`-`: standard output)
    #[arg(long, value_name = "TRACE")]
    pub out: PathBuf,

    /// Tokens per block: each full block gets a key, the partial tail none
    #[arg(long, value_name = "TOKENS", default_value_t = DEFAULT_BLOCK_SIZE,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub block_size: u64,

    #[command(flatten)]
    pub tokenize: TokenizeFlags,

    /// Write FIELD's value (a dotted path: `user`, `body.model`; `instance,FIELD` alike) as
    /// each row's `tenant`, so that `replay --lane-by tenant` (or `instance,tenant`) gives
    /// each tenant its own lane; a line without it gets none
    #[arg(long, value_name = "FIELD", value_parser = super::parse_lane_by)]
    pub lane_by: Option<litehit_core::grammar::LaneBySpec>,

    /// With --model: the summary also says the KV bytes the trace's blocks take
    #[command(flatten)]
    pub model: super::model_args::ModelFlags,

    #[command(flatten)]
    pub line_cap: super::LineCapFlags,

    /// Skip a bad line (bad JSON, a missing field, a template error) instead of stopping at
    /// it; the summary counts them and names the first
    #[arg(long)]
    pub skip_bad: bool,

    /// No summary on stderr
    #[arg(long, short)]
    pub quiet: bool,
}

#[cfg(feature = "tokenize")]
/// How request text becomes tokens, and where a log line keeps its fields; the defaults are
/// `FieldPaths::default`'s.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct TokenizeFlags {
    /// A Hugging Face `tokenizer.json` (or its directory, whose `tokenizer_config.json`
    /// gives the chat template and BOS/EOS), or `tiktoken:o200k_base` / `tiktoken:cl100k_base`
    /// (required by `trace` and by `--format openai`; with `replay` or `watch` and no --format,
    /// it makes the input an OpenAI request log)
    #[arg(long, value_name = "PATH")]
    pub tokenizer: Option<String>,

    /// A Jinja chat template file, instead of `tokenizer_config.json`'s `chat_template`
    #[arg(long, value_name = "FILE")]
    pub chat_template: Option<PathBuf>,

    /// Add the tokenizer's special tokens (BOS): auto = as vLLM, not to chat prompts (the
    /// template writes them), yes to completion prompts [default: auto]
    #[arg(long, value_name = "WHEN", value_parser = parse_add_special)]
    pub add_special_tokens: Option<AddSpecialTokens>,

    /// Render chat prompts without the assistant's generation prompt
    #[arg(long)]
    pub no_generation_prompt: bool,

    /// A template variable, NAME=VALUE (VALUE as JSON, else a string); repeatable, e.g.
    /// `--template-kwarg enable_thinking=false`
    #[arg(long, value_name = "NAME=VALUE")]
    pub template_kwarg: Vec<String>,

    /// Where the request body is (dotted path); default: the line itself when it has
    /// `messages`, `prompt` or `prompt_token_ids`, else `body`, else `request`
    #[arg(long, value_name = "PATH")]
    pub body_field: Option<String>,

    /// The request time (dotted path, a number in --time-unit) [default: timestamp]
    #[arg(long, value_name = "PATH", conflicts_with = "line_time")]
    pub time_field: Option<String>,

    /// The unit of the time field: s, ms, us or ns [default: s]
    #[arg(long, value_name = "UNIT", value_parser = parse_time_unit)]
    pub time_unit: Option<TimeUnit>,

    /// No time field: each request's time is its line number, in nanoseconds
    #[arg(long)]
    pub line_time: bool,

    /// The request id, written as `trace_id` (absent in a line: `line-N`) [default:
    /// request_id]
    #[arg(long, value_name = "PATH")]
    pub id_field: Option<String>,

    /// The instance (pod, upstream, model), written as `instance_id` (absent in a line:
    /// `instance`) [default: model]
    #[arg(long, value_name = "PATH")]
    pub instance_field: Option<String>,

    /// A salt (tenant, LoRA adapter) hashed into the first block's key, so that requests
    /// with different salts share no block; default: no salt
    #[arg(long, value_name = "PATH")]
    pub salt_field: Option<String>,

    /// The engine's own prompt token count, compared with the tokenizer's in the summary
    /// [default: usage.prompt_tokens]
    #[arg(long, value_name = "PATH")]
    pub usage_field: Option<String>,

    /// Cache each request's output: the full blocks the engine filled while generating it
    /// (prompt + output, without the last output token) enter the cache after the request,
    /// chained on its prompt, so a next turn re-sending them can hit; the request's own hits
    /// count its prompt only. Read from `output_token_ids`, else `choices.0.message.content`,
    /// else `choices.0.text` (text is tokenized without special tokens), or --output-field
    #[arg(long)]
    pub cache_output: bool,

    /// Where the output is for --cache-output (dotted path, a number indexes an array):
    /// token ids or text
    #[arg(long, value_name = "PATH", requires = "cache_output")]
    pub output_field: Option<String>,
}

#[cfg(feature = "tokenize")]
impl TokenizeFlags {
    /// The first flag given that only an OpenAI log reads, besides `--tokenizer` (as typed).
    #[must_use]
    pub fn first_tokenize_only_flag(&self) -> Option<&'static str> {
        let Self {
            tokenizer: _,
            chat_template,
            add_special_tokens,
            no_generation_prompt,
            template_kwarg,
            body_field,
            time_field,
            time_unit,
            line_time,
            id_field,
            instance_field,
            salt_field,
            usage_field,
            cache_output,
            output_field,
        } = self;
        [
            (chat_template.is_some(), "--chat-template"),
            (add_special_tokens.is_some(), "--add-special-tokens"),
            (*no_generation_prompt, "--no-generation-prompt"),
            (!template_kwarg.is_empty(), "--template-kwarg"),
            (body_field.is_some(), "--body-field"),
            (time_field.is_some(), "--time-field"),
            (time_unit.is_some(), "--time-unit"),
            (*line_time, "--line-time"),
            (id_field.is_some(), "--id-field"),
            (instance_field.is_some(), "--instance-field"),
            (salt_field.is_some(), "--salt-field"),
            (usage_field.is_some(), "--usage-field"),
            (*cache_output, "--cache-output"),
            (output_field.is_some(), "--output-field"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}

#[cfg(feature = "tokenize")]
fn parse_add_special(text: &str) -> Result<AddSpecialTokens, String> {
    match text {
        "auto" => Ok(AddSpecialTokens::Auto),
        "always" | "true" => Ok(AddSpecialTokens::Always),
        "never" | "false" => Ok(AddSpecialTokens::Never),
        _ => Err("expected auto, always or never".to_owned()),
    }
}

#[cfg(feature = "tokenize")]
fn parse_time_unit(text: &str) -> Result<TimeUnit, String> {
    TimeUnit::from_name(text).ok_or_else(|| "expected s, ms, us or ns".to_owned())
}

#[cfg(all(test, feature = "tokenize"))]
mod tests {
    use super::*;

    #[test]
    fn test_add_special_tokens() {
        assert_eq!(parse_add_special("auto"), Ok(AddSpecialTokens::Auto));
        assert_eq!(parse_add_special("true"), Ok(AddSpecialTokens::Always));
        assert_eq!(parse_add_special("never"), Ok(AddSpecialTokens::Never));
        assert!(parse_add_special("yes").is_err());
    }

    #[test]
    fn test_time_unit() {
        assert_eq!(parse_time_unit("ms"), Ok(TimeUnit::Milliseconds));
        assert!(parse_time_unit("h").is_err());
    }
}
