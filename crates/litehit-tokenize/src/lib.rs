//! LiteHit's bridge from request logs to block traces: an OpenAI-style log line (a
//! chat-completions body with `messages`, a completions body with `prompt`, or a pre-tokenized
//! row with `prompt_token_ids`, bare or wrapped in a log record) becomes one standard trace row
//! (`{"type":"request",...,"keys":[...],"input_len":N}`).
//!
//! The steps, in the order data flows: [`record`] (find the body and the fields of a line) →
//! [`template`] (render `messages` with the model's chat template, minijinja) → [`tokenizer`]
//! (Hugging Face `tokenizer.json` or an embedded tiktoken encoding; [`segments`] caches
//! re-sent history exactly) → [`blocks`] (full blocks,
//! each key chained on its parent's) → [`convert`] (the loop, the rows and the summary;
//! [`continuation`] counts next turns re-sending an earlier prompt and output).
//!
//! Chat templates are untrusted: each render has a fuel and a memory budget, the memory one
//! enforced by rendering in a child process ([`sandbox`]).
//!
//! What it must never do: download anything (no hub, no network feature of `tokenizers`),
//! print, or exit. Errors name file, line and field ([`TokenizeError`]); the caller reports.
#![warn(clippy::unwrap_used)]

pub mod blocks;
pub mod continuation;
pub mod convert;
pub mod cut;
pub mod error;
pub mod pyjson;
pub mod record;
pub mod sandbox;
pub mod segments;
pub mod template;
pub mod tokenizer;

pub use convert::{ConvertOptions, ConvertSummary, ConvertedLines, Converter};
pub use error::{Result, TokenizeError};
