//! The loop: log lines → standard trace rows, in order, and the summary.
//!
//! Lines are parsed and templated one by one, then tokenized a batch at a time (the Hugging
//! Face tokenizer runs a batch on its thread pool), then hashed and written in line order.
//! Any bad line stops the conversion with its file, line and field.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::blocks::{block_keys, root_seed};
use crate::continuation::Continuations;
use crate::error::{Result, TokenizeError};
use crate::record::{
    DEFAULT_INSTANCE, FieldPaths, as_text, field, find_body, replace_lone_surrogates,
};
use crate::template::ChatTemplate;
use crate::tokenizer::TextTokenizer;

/// Whether the tokenizer adds its special tokens (BOS) to the prompt text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AddSpecialTokens {
    /// As vLLM does: not to a chat prompt (the template writes BOS), yes to a completion.
    #[default]
    Auto,
    Always,
    Never,
}

/// How a log becomes a trace.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    /// Tokens per block (> 0).
    pub block_size: usize,
    pub fields: FieldPaths,
    pub add_special_tokens: AddSpecialTokens,
    /// Skip a bad line (counted in the summary) instead of stopping at it.
    pub skip_bad: bool,
    /// Read each record's generated output ([`FieldPaths::output`]) and write the full
    /// blocks the engine filled while generating it as the row's `output_keys`
    /// (`--cache-output`).
    pub cache_output: bool,
}

/// What a conversion saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConvertSummary {
    pub requests: u64,
    pub prompt_tokens: u64,
    /// Full blocks written (keys).
    pub blocks: u64,
    /// Requests whose record carried the engine's prompt token count.
    pub usage_compared: u64,
    /// ... of which our count differs.
    pub usage_differs: u64,
    /// The first difference: line, our count, the engine's.
    pub first_usage_difference: Option<(u64, u64, u64)>,
    /// Requests whose record carried an output (`--cache-output`).
    pub outputs: u64,
    /// Requests whose record carried none (`--cache-output`).
    pub outputs_missing: u64,
    /// Full output blocks written (`output_keys`).
    pub output_blocks: u64,
    /// Requests whose prompt continues an earlier request's prompt and output
    /// ([`crate::continuation`]; `--cache-output`).
    pub continued: u64,
    /// ... of which the prompt re-sends every full block of that prompt and output.
    pub output_resent: u64,
    /// Lone surrogate escapes (`"\ud800"`, as Python's `json.dumps` writes) read as U+FFFD.
    pub lone_surrogates: u64,
    /// The first line that had one.
    pub first_lone_surrogate_line: Option<u64>,
    /// Bad lines skipped ([`ConvertOptions::skip_bad`]).
    pub skipped_lines: u64,
    /// The error of the first.
    pub first_skipped: Option<String>,
}

impl ConvertSummary {
    fn skip(&mut self, error: &TokenizeError) {
        self.skipped_lines += 1;
        self.first_skipped.get_or_insert_with(|| error.to_string());
    }
}

/// What [`Converter::convert_lines`] made of a chunk of live lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConvertedLines {
    /// Per line: its trace row (without the newline), or why it is bad.
    pub rows: Vec<std::result::Result<Vec<u8>, String>>,
    /// Lone surrogate escapes read as U+FFFD in the lines that became rows.
    pub lone_surrogates: u64,
}

/// The tokenizer, the optional chat template and the options: converts any number of logs.
#[derive(Debug)]
pub struct Converter {
    tokenizer: TextTokenizer,
    template: Option<ChatTemplate>,
    options: ConvertOptions,
}

/// Lines tokenized together.
const BATCH_LINES: usize = 512;

/// A parsed line waiting for its tokens.
struct Pending {
    line: u64,
    /// Lone surrogate escapes read as U+FFFD.
    lone_surrogates: u64,
    timestamp_ns: i64,
    trace_id: String,
    instance_id: String,
    /// The tenant field's value, if the field is asked for and the line has it.
    tenant: Option<String>,
    seed: u64,
    usage: Option<u64>,
    /// The engine's own cached prompt tokens ([`FieldPaths::cached_tokens`]).
    cached_tokens: Option<u64>,
    /// The path `cached_tokens` was read at (an index into [`FieldPaths::cached_tokens`]),
    /// for the message when it exceeds the prompt.
    cached_tokens_path: usize,
    prompt: Prompt,
    /// The generated output (`--cache-output`), if the record has one.
    output: Option<Output>,
}

enum Prompt {
    /// Text to tokenize, with whether to add special tokens, and the field it came from.
    Text(String, bool, &'static str),
    Ids(Vec<u32>),
}

/// A generated output: text to tokenize (without special tokens) and the field it came
/// from, or token ids.
enum Output {
    Text(String, String),
    Ids(Vec<u32>),
}

impl Pending {
    /// The texts to tokenize, in order (the prompt's, then the output's): each with whether
    /// to add special tokens and its field.
    fn texts(&self) -> impl Iterator<Item = (&str, bool, &str)> {
        let prompt = match &self.prompt {
            Prompt::Text(text, special, field) => Some((text.as_str(), *special, *field)),
            Prompt::Ids(_) => None,
        };
        let output = match &self.output {
            Some(Output::Text(text, field)) => Some((text.as_str(), false, field.as_str())),
            _ => None,
        };
        prompt.into_iter().chain(output)
    }
}

/// The output of a record when `cache_output`: the first of `paths` found, token ids or text.
fn output_of<'a>(
    record: &Value,
    body: &Value,
    paths: &'a [String],
    cache_output: bool,
) -> std::result::Result<Option<Output>, (&'a str, String)> {
    if !cache_output {
        return Ok(None);
    }
    let Some((path, value)) = paths
        .iter()
        .find_map(|path| field(record, body, path).map(|value| (path, value)))
    else {
        return Ok(None);
    };
    match value {
        Value::String(text) => Ok(Some(Output::Text(text.clone(), path.clone()))),
        Value::Array(_) => token_ids(value)
            .map(|ids| Some(Output::Ids(ids)))
            .ok_or_else(|| {
                (
                    path.as_str(),
                    "expected an array of token ids (integers below 2^32)".to_owned(),
                )
            }),
        _ => Err((
            path.as_str(),
            format!("expected the output's text or token ids, found {value}"),
        )),
    }
}

/// A count the engine logged (its prompt tokens, its cached tokens): the first of `paths`
/// found (in the record, then the body); `Err` names the field whose value is no count.
fn first_count<'a>(
    record: &Value,
    body: &Value,
    paths: &'a [String],
) -> std::result::Result<Option<(usize, u64)>, (&'a str, String)> {
    let Some((index, path, value)) = paths
        .iter()
        .enumerate()
        .find_map(|(index, path)| field(record, body, path).map(|value| (index, path, value)))
    else {
        return Ok(None);
    };
    value
        .as_u64()
        .map(|count| Some((index, count)))
        .ok_or_else(|| {
            (
                path.as_str(),
                format!("expected a non-negative integer, found {value}"),
            )
        })
}

/// The engine's own counts on a record: its prompt tokens (`usage`) and its cached prompt
/// tokens with the index of the path they were read at. A cached count above the prompt
/// count is an error naming that path: the observed hits are a part of the prompt.
#[expect(clippy::type_complexity, reason = "two counts, one with its path")]
fn engine_counts(
    record: &Value,
    body: &Value,
    fields: &FieldPaths,
) -> std::result::Result<(Option<u64>, Option<(usize, u64)>), (String, String)> {
    let owned = |(field, message): (&str, String)| (field.to_owned(), message);
    let usage = first_count(record, body, std::slice::from_ref(&fields.usage))
        .map_err(owned)?
        .map(|(_, count)| count);
    let cached = first_count(record, body, &fields.cached_tokens).map_err(owned)?;
    if let (Some((path, cached)), Some(prompt_tokens)) = (cached, usage)
        && cached > prompt_tokens
    {
        return Err((
            fields.cached_tokens[path].clone(),
            format!(
                "{cached} cached tokens exceed the engine's own {prompt_tokens} prompt tokens ({})",
                fields.usage
            ),
        ));
    }
    Ok((usage, cached))
}

impl Converter {
    pub fn new(
        tokenizer: TextTokenizer,
        template: Option<ChatTemplate>,
        options: ConvertOptions,
    ) -> Self {
        Self {
            tokenizer,
            template,
            options,
        }
    }

    /// Converts the log `input` (named `path` in errors) into trace rows on `out` (named
    /// `out_path`).
    pub fn convert(
        &self,
        input: impl BufRead,
        path: &Path,
        out: &mut impl Write,
        out_path: &Path,
    ) -> Result<ConvertSummary> {
        let mut summary = ConvertSummary::default();
        let mut pending = Vec::with_capacity(BATCH_LINES);
        let mut writer = RowWriter::default();
        let mut continuations = Continuations::default();
        for (index, line) in input.lines().enumerate() {
            let line_no = index as u64 + 1;
            let text = line.map_err(|source| TokenizeError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            if text.trim().is_empty() {
                continue;
            }
            match self.parse_line(&text, path, line_no) {
                Ok(request) => pending.push(request),
                Err(error) if self.options.skip_bad => summary.skip(&error),
                Err(error) => return Err(error),
            }
            if pending.len() == BATCH_LINES {
                self.flush(
                    &mut pending,
                    path,
                    &mut writer,
                    &mut summary,
                    &mut continuations,
                )?;
                writer.drain(out, out_path)?;
            }
        }
        self.flush(
            &mut pending,
            path,
            &mut writer,
            &mut summary,
            &mut continuations,
        )?;
        writer.drain(out, out_path)?;
        out.flush().map_err(|source| TokenizeError::Io {
            path: out_path.to_path_buf(),
            source,
        })?;
        Ok(summary)
    }

    /// Converts the numbered lines of a live log one by one (`watch --format openai`): each
    /// gets its trace row (without the newline) or the reason it is bad, as a line-free
    /// message (`field "messages": ...`). Blank lines are the caller's to skip. The texts of
    /// the good lines are tokenized as one batch, the rows are the ones `convert` writes.
    /// Also counts the lone surrogate escapes read as U+FFFD in the lines that became rows,
    /// as [`ConvertSummary::lone_surrogates`] counts them offline.
    pub fn convert_lines(&self, lines: &[(u64, &[u8])], path: &Path) -> ConvertedLines {
        let mut results: Vec<std::result::Result<Vec<u8>, String>> =
            Vec::with_capacity(lines.len());
        let mut pending = Vec::with_capacity(lines.len());
        let mut pending_at = Vec::with_capacity(lines.len());
        for &(line, bytes) in lines {
            let parsed = std::str::from_utf8(bytes)
                .map_err(|error| format!("failed to parse JSON: invalid UTF-8: {error}"))
                .and_then(|text| {
                    self.parse_line(text, path, line)
                        .map_err(|error| error.reason())
                });
            match parsed {
                Ok(request) => {
                    pending_at.push(results.len());
                    pending.push(request);
                    results.push(Ok(Vec::new()));
                }
                Err(reason) => results.push(Err(reason)),
            }
        }
        let tokens: Vec<std::result::Result<Vec<u32>, String>> =
            match self.encode_texts(&pending, path) {
                Ok(encoded) => {
                    let mut encoded = encoded.into_iter();
                    pending
                        .iter_mut()
                        .map(|request| Ok(take_tokens(request, &mut encoded)))
                        .collect()
                }
                // One text fails: each alone, so only the failing lines are bad.
                Err(_) => pending
                    .iter_mut()
                    .map(|request| {
                        let one = std::slice::from_ref(&*request);
                        let mut encoded = self
                            .encode_texts(one, path)
                            .map_err(|error| error.reason())?
                            .into_iter();
                        Ok(take_tokens(request, &mut encoded))
                    })
                    .collect(),
            };
        let mut writer = RowWriter::default();
        let mut lone_surrogates = 0;
        for ((request, tokens), at) in pending.iter().zip(tokens).zip(pending_at) {
            results[at] = match tokens {
                Ok(tokens) if tokens.is_empty() => Err(EMPTY_PROMPT.to_owned()),
                Ok(tokens) => {
                    lone_surrogates += request.lone_surrogates;
                    writer.row(request, &tokens, self.options.block_size);
                    let mut row = std::mem::take(&mut writer.buffer);
                    row.pop(); // the newline
                    Ok(row)
                }
                Err(reason) => Err(reason),
            };
        }
        ConvertedLines {
            rows: results,
            lone_surrogates,
        }
    }

    fn parse_line(&self, text: &str, path: &Path, line: u64) -> Result<Pending> {
        // Python writes a lone surrogate as `"\ud800"`: read as U+FFFD, and counted.
        let replaced = replace_lone_surrogates(text);
        let (text, lone_surrogates) = replaced
            .as_ref()
            .map_or((text, 0), |(fixed, count)| (fixed.as_str(), *count));
        let fields = &self.options.fields;
        let record: Value = serde_json::from_str(text).map_err(|error| TokenizeError::Json {
            path: path.to_path_buf(),
            line,
            message: error.to_string(),
        })?;
        let bad = |field: &str, message: String| TokenizeError::Field {
            path: path.to_path_buf(),
            line,
            field: field.to_owned(),
            message,
        };
        if !record.is_object() {
            return Err(TokenizeError::Json {
                path: path.to_path_buf(),
                line,
                message: "expected a JSON object".to_owned(),
            });
        }
        let (body, body_path) = find_body(&record, fields.body.as_deref()).ok_or_else(|| {
            bad(
                fields.body.as_deref().unwrap_or("messages"),
                "missing: expected a request body with messages, prompt or prompt_token_ids \
                 (bare, or under body or request; --body-field names another place)"
                    .to_owned(),
            )
        })?;
        let timestamp_ns = match &fields.time {
            None => i64::try_from(line).unwrap_or(i64::MAX),
            Some(time) => {
                let value = field(&record, body, time).ok_or_else(|| {
                    bad(
                        time,
                        "missing (--time-field names the time; --line-time numbers the lines \
                         of a log without times)"
                            .to_owned(),
                    )
                })?;
                fields.time_unit.to_ns(value).ok_or_else(|| {
                    bad(
                        time,
                        format!("expected a positive number of time units, found {value}"),
                    )
                })?
            }
        };
        let trace_id = match field(&record, body, &fields.request_id) {
            None => format!("line-{line}"),
            Some(value) => as_text(value).ok_or_else(|| {
                bad(
                    &fields.request_id,
                    format!("expected a string or number, found {value}"),
                )
            })?,
        };
        let non_empty = |path: &str| {
            non_empty_text_at(&record, body, path).map_err(|message| bad(path, message))
        };
        let instance_id =
            non_empty(&fields.instance)?.unwrap_or_else(|| DEFAULT_INSTANCE.to_owned());
        let tenant = fields
            .tenant
            .as_deref()
            .map(non_empty)
            .transpose()?
            .flatten();
        let seed = match &fields.salt {
            None => 0,
            Some(salt) => match field(&record, body, salt) {
                None => root_seed(None),
                Some(value) => root_seed(Some(&as_text(value).ok_or_else(|| {
                    bad(salt, format!("expected a string or number, found {value}"))
                })?)),
            },
        };
        let (usage, cached) = engine_counts(&record, body, fields).map_err(|(f, m)| bad(&f, m))?;
        let (cached_tokens_path, cached_tokens) = cached.map_or((0, None), |(i, n)| (i, Some(n)));
        let prompt = self.prompt_of(text, body, body_path, path, line)?;
        let output = output_of(&record, body, &fields.output, self.options.cache_output)
            .map_err(|(field, message)| bad(field, message))?;
        Ok(Pending {
            line,
            lone_surrogates,
            timestamp_ns,
            trace_id,
            instance_id,
            tenant,
            seed,
            usage,
            cached_tokens,
            cached_tokens_path,
            prompt,
            output,
        })
    }

    /// The prompt of a request body: token ids, a completion's text, or rendered messages.
    fn prompt_of(
        &self,
        text: &str,
        body: &Value,
        body_path: &str,
        path: &Path,
        line: u64,
    ) -> Result<Prompt> {
        let bad = |field: &str, message: String| TokenizeError::Field {
            path: path.to_path_buf(),
            line,
            field: field.to_owned(),
            message,
        };
        let in_body = |name: &str| {
            if body_path.is_empty() {
                name.to_owned()
            } else {
                format!("{body_path}.{name}")
            }
        };
        let completion_special = self.options.add_special_tokens != AddSpecialTokens::Never;
        let prompt = if let Some(ids) = body.get("prompt_token_ids") {
            Prompt::Ids(token_ids(ids).ok_or_else(|| {
                bad(
                    &in_body("prompt_token_ids"),
                    "expected an array of token ids (integers below 2^32)".to_owned(),
                )
            })?)
        } else if let Some(messages) = body.get("messages") {
            let Some(template) = &self.template else {
                // A tiktoken encoding never comes with a template; a tokenizer.json may have
                // a tokenizer_config.json beside it that holds none.
                let why = if matches!(self.tokenizer, TextTokenizer::Tiktoken(_)) {
                    "a tiktoken encoding has no chat template"
                } else {
                    "the tokenizer's tokenizer_config.json has none"
                };
                return Err(bad(
                    &in_body("messages"),
                    format!(
                        "a chat request needs a chat template: {why}; give --chat-template FILE"
                    ),
                ));
            };
            if !messages.is_array() {
                return Err(bad(
                    &in_body("messages"),
                    format!("expected an array of messages, found {messages}"),
                ));
            }
            // Read again in the order the request wrote its objects' keys (a serde_json
            // value sorts them; Python keeps them, and `tojson` prints them).
            let text = template.render_body(text, body_path).map_err(|message| {
                bad(
                    &in_body("messages"),
                    format!("chat template {}: {message}", template.source_name()),
                )
            })?;
            Prompt::Text(
                text,
                self.options.add_special_tokens == AddSpecialTokens::Always,
                "messages",
            )
        } else {
            let prompt = body.get("prompt").unwrap_or(&Value::Null);
            match prompt {
                Value::String(text) => Prompt::Text(text.clone(), completion_special, "prompt"),
                Value::Array(items) if items.len() == 1 && items[0].is_string() => Prompt::Text(
                    items[0].as_str().unwrap_or_default().to_owned(),
                    completion_special,
                    "prompt",
                ),
                Value::Array(_) => Prompt::Ids(token_ids(prompt).ok_or_else(|| {
                    bad(
                        &in_body("prompt"),
                        "expected a string, one string or token ids (batched prompts are \
                         not supported)"
                            .to_owned(),
                    )
                })?),
                _ => {
                    return Err(bad(
                        &in_body("prompt"),
                        format!("expected a string or token ids, found {prompt}"),
                    ));
                }
            }
        };
        Ok(prompt)
    }

    /// Tokenizes, hashes and renders `pending`, in order.
    fn flush(
        &self,
        pending: &mut Vec<Pending>,
        path: &Path,
        writer: &mut RowWriter,
        summary: &mut ConvertSummary,
        continuations: &mut Continuations,
    ) -> Result<()> {
        let tokens: Vec<Result<Vec<u32>>> = match self.encode_texts(pending, path) {
            Ok(encoded) => {
                let mut encoded = encoded.into_iter();
                pending
                    .iter_mut()
                    .map(|request| Ok(take_tokens(request, &mut encoded)))
                    .collect()
            }
            Err(error) if !self.options.skip_bad => return Err(error),
            // One text fails: each alone, so only the failing lines are skipped.
            Err(_) => pending
                .iter_mut()
                .map(|request| {
                    let one = std::slice::from_ref(&*request);
                    let mut encoded = self.encode_texts(one, path)?.into_iter();
                    Ok(take_tokens(request, &mut encoded))
                })
                .collect(),
        };
        for (request, tokens) in pending.drain(..).zip(tokens) {
            let tokens = tokens.and_then(|tokens| {
                let bad = |field: &str, message: String| TokenizeError::Field {
                    path: path.to_path_buf(),
                    line: request.line,
                    field: field.to_owned(),
                    message,
                };
                if tokens.is_empty() {
                    return Err(bad("prompt", EMPTY_PROMPT.to_owned()));
                }
                match request.cached_tokens {
                    // The observed hits are a part of the prompt: more is a log LiteHit cannot
                    // compare with (an over-100 % observed rate), whatever its cause.
                    Some(cached) if cached > tokens.len() as u64 => Err(bad(
                        &self.options.fields.cached_tokens[request.cached_tokens_path],
                        format!(
                            "{cached} cached tokens exceed the {} tokens of the prompt as tokenized",
                            tokens.len()
                        ),
                    )),
                    _ => Ok(tokens),
                }
            });
            let tokens = match tokens {
                Ok(tokens) => tokens,
                Err(error) if self.options.skip_bad => {
                    summary.skip(&error);
                    continue;
                }
                Err(error) => return Err(error),
            };
            let input_len = tokens.len() as u64;
            writer.row(&request, &tokens, self.options.block_size);
            if self.options.cache_output {
                if request.output.is_some() {
                    summary.outputs += 1;
                    summary.output_blocks += writer.output_keys().len() as u64;
                } else {
                    summary.outputs_missing += 1;
                }
                continuations.observe(writer.prompt_keys(), writer.output_keys());
                summary.continued = continuations.continued;
                summary.output_resent = continuations.output_resent;
            }
            summary.requests += 1;
            summary.prompt_tokens += input_len;
            if request.lone_surrogates > 0 {
                summary.lone_surrogates += request.lone_surrogates;
                summary
                    .first_lone_surrogate_line
                    .get_or_insert(request.line);
            }
            summary.blocks += input_len / self.options.block_size as u64;
            if let Some(engine_count) = request.usage {
                summary.usage_compared += 1;
                if engine_count != input_len {
                    summary.usage_differs += 1;
                    summary.first_usage_difference.get_or_insert((
                        request.line,
                        input_len,
                        engine_count,
                    ));
                }
            }
        }
        Ok(())
    }

    /// The token ids of the text prompts in `pending`, in order. When a batch fails, each
    /// is tried alone so the error names its line.
    fn encode_texts(&self, pending: &[Pending], path: &Path) -> Result<Vec<Vec<u32>>> {
        let mut out = Vec::new();
        for add_special in [false, true] {
            let texts: Vec<String> = pending
                .iter()
                .flat_map(Pending::texts)
                .filter(|(_, special, _)| *special == add_special)
                .map(|(text, ..)| text.to_owned())
                .collect();
            if texts.is_empty() {
                continue;
            }
            let Ok(batch) = self.tokenizer.encode_batch(texts, add_special) else {
                return Err(self.first_failing_text(pending, add_special, path));
            };
            out.push((add_special, batch.into_iter()));
        }
        // Back into line order.
        let mut ordered = Vec::new();
        for (_, special, _) in pending.iter().flat_map(Pending::texts) {
            let batch = out
                .iter_mut()
                .find(|(add_special, _)| *add_special == special)
                .expect("every text's batch was encoded");
            ordered.push(batch.1.next().unwrap_or_default());
        }
        Ok(ordered)
    }
}

impl Converter {
    /// The error of the first text of `pending` that fails to encode alone.
    fn first_failing_text(
        &self,
        pending: &[Pending],
        add_special: bool,
        path: &Path,
    ) -> TokenizeError {
        for request in pending {
            for (text, special, field) in request.texts() {
                if special == add_special
                    && let Err(message) = self.tokenizer.encode(text, add_special)
                {
                    return TokenizeError::Field {
                        path: path.to_path_buf(),
                        line: request.line,
                        field: field.to_owned(),
                        message: format!("tokenizer: {message}"),
                    };
                }
            }
        }
        let line = pending.first().map_or(0, |request| request.line);
        TokenizeError::Field {
            path: path.to_path_buf(),
            line,
            field: "prompt".to_owned(),
            message: "tokenizer: a batch from this line on failed, each text alone encodes"
                .to_owned(),
        }
    }
}

/// Why a prompt without tokens is bad.
const EMPTY_PROMPT: &str = "the prompt has no tokens (input_len must be > 0)";

/// The token ids of `request`'s prompt and of its output (if it has one): its own, or the
/// next of `encoded` (its texts', in [`Pending::texts`]' order). Leaves the output as ids.
fn take_tokens(request: &mut Pending, encoded: &mut impl Iterator<Item = Vec<u32>>) -> Vec<u32> {
    let prompt = match std::mem::replace(&mut request.prompt, Prompt::Ids(Vec::new())) {
        Prompt::Ids(ids) => ids,
        Prompt::Text(..) => encoded.next().unwrap_or_default(),
    };
    if let Some(Output::Text(..)) = request.output {
        request.output = Some(Output::Ids(encoded.next().unwrap_or_default()));
    }
    prompt
}

/// The output's token ids once [`take_tokens`] ran (`None`: the record has no output).
fn output_tokens(request: &Pending) -> Option<&[u32]> {
    match &request.output {
        Some(Output::Ids(ids)) => Some(ids),
        Some(Output::Text(..)) | None => None,
    }
}

/// `[1, 2, 3]` as token ids.
fn token_ids(value: &Value) -> Option<Vec<u32>> {
    value
        .as_array()?
        .iter()
        .map(|id| id.as_u64().and_then(|id| u32::try_from(id).ok()))
        .collect()
}

/// Renders rows into a buffer reused between batches.
#[derive(Default)]
struct RowWriter {
    buffer: Vec<u8>,
    /// The last row's prompt keys, then its output's.
    keys: Vec<i64>,
    /// How many of `keys` are the prompt's.
    prompt_keys: usize,
    /// The prompt's partial tail and the output's tokens.
    tail: Vec<u32>,
    scratch: Vec<u8>,
}

impl RowWriter {
    fn prompt_keys(&self) -> &[i64] {
        &self.keys[..self.prompt_keys]
    }

    fn output_keys(&self) -> &[i64] {
        &self.keys[self.prompt_keys..]
    }

    /// The row of `request` with prompt `tokens`; with an output, also the keys of the full
    /// blocks the engine filled while generating it: the blocks of prompt + output past the
    /// prompt's full ones, without the last output token (sampled, never fed back, so its KV
    /// is never computed), chained on the prompt's last key.
    fn row(&mut self, request: &Pending, tokens: &[u32], block_size: usize) {
        self.keys.clear();
        block_keys(
            tokens,
            block_size,
            request.seed,
            &mut self.scratch,
            &mut self.keys,
        );
        self.prompt_keys = self.keys.len();
        if let Some(output) = output_tokens(request) {
            self.tail.clear();
            self.tail
                .extend_from_slice(&tokens[self.prompt_keys * block_size..]);
            self.tail
                .extend_from_slice(&output[..output.len().saturating_sub(1)]);
            let parent = self
                .keys
                .last()
                .map_or(request.seed, |key| u64::from_ne_bytes(key.to_ne_bytes()));
            block_keys(
                &self.tail,
                block_size,
                parent,
                &mut self.scratch,
                &mut self.keys,
            );
        }
        let mut number = itoa::Buffer::new();
        let out = &mut self.buffer;
        out.extend_from_slice(b"{\"type\":\"request\",\"instance_id\":");
        json_string(out, &request.instance_id);
        if let Some(tenant) = &request.tenant {
            out.extend_from_slice(b",\"tenant\":");
            json_string(out, tenant);
        }
        out.extend_from_slice(b",\"trace_id\":");
        json_string(out, &request.trace_id);
        out.extend_from_slice(b",\"timestamp_ns\":");
        out.extend_from_slice(number.format(request.timestamp_ns).as_bytes());
        out.extend_from_slice(b",\"keys\":[");
        write_keys(out, &self.keys[..self.prompt_keys]);
        out.extend_from_slice(b"],\"input_len\":");
        out.extend_from_slice(number.format(tokens.len()).as_bytes());
        if let Some(cached_tokens) = request.cached_tokens {
            out.extend_from_slice(b",\"cached_tokens\":");
            out.extend_from_slice(number.format(cached_tokens).as_bytes());
        }
        if output_tokens(request).is_some() {
            out.extend_from_slice(b",\"output_keys\":[");
            write_keys(out, &self.keys[self.prompt_keys..]);
            out.push(b']');
        }
        out.extend_from_slice(b"}\n");
    }

    fn drain(&mut self, out: &mut impl Write, out_path: &Path) -> Result<()> {
        out.write_all(&self.buffer)
            .map_err(|source| TokenizeError::Io {
                path: PathBuf::from(out_path),
                source,
            })?;
        self.buffer.clear();
        Ok(())
    }
}

/// The instance or tenant at `path` of a line, as text (`None`: the line has no such field).
fn non_empty_text_at(
    record: &Value,
    body: &Value,
    path: &str,
) -> std::result::Result<Option<String>, String> {
    field(record, body, path)
        .map(|value| {
            as_text(value)
                .filter(|text| !text.is_empty())
                .ok_or_else(|| format!("expected a non-empty string, found {value}"))
        })
        .transpose()
}

/// `keys` as a JSON array's items.
fn write_keys(out: &mut Vec<u8>, keys: &[i64]) {
    let mut number = itoa::Buffer::new();
    for (at, key) in keys.iter().enumerate() {
        if at > 0 {
            out.push(b',');
        }
        out.extend_from_slice(number.format(*key).as_bytes());
    }
}

fn json_string(out: &mut Vec<u8>, text: &str) {
    serde_json::to_writer(&mut *out, text).expect("a string always serializes into a Vec");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{TemplateOptions, TokenizerConfig, ordered_body};

    #[test]
    fn the_template_sees_the_body_in_the_order_the_line_wrote_it() {
        let line = r#"{"body": {"messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "function", "function": {"name": "f",
            "parameters": {"type": "object", "properties": {"b": {}, "a": {}}}}}]}}"#;
        let body = ordered_body(line, "body").unwrap();
        let template = ChatTemplate::new(
            "{{ tools|tojson }}".to_owned(),
            "test".to_owned(),
            &TokenizerConfig::default(),
            &TemplateOptions::default(),
        )
        .unwrap();
        let rendered = template
            .render(
                body.get_attr("messages").unwrap(),
                Some(body.get_attr("tools").unwrap()),
            )
            .unwrap();
        // python3 -c 'import json; print(json.dumps([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"b": {}, "a": {}}}}}], ensure_ascii=False))'
        assert_eq!(
            rendered,
            r#"[{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"b": {}, "a": {}}}}}]"#
        );
    }
}
