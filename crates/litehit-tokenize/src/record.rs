//! One log line → the request it describes: where its body is, its time, id, instance,
//! salt, the engine's own prompt token count, and its prompt.
//!
//! Field paths are dotted (`response.usage.prompt_tokens`) and looked up in the log record
//! first, then in the request body, so a bare body and a wrapped record (`{"timestamp": ..,
//! "body": {"model": .., "messages": [..]}}`) both work with the defaults.

use serde_json::Value;

/// Where each field of a line is. Every path is dotted; see [`FieldPaths::default`].
#[derive(Debug, Clone, PartialEq)]
pub struct FieldPaths {
    /// The request body inside the record; `None`: the record itself when it has `messages`,
    /// `prompt` or `prompt_token_ids`, else `body`, else `request`.
    pub body: Option<String>,
    /// The request time; `None`: the 1-based line number, as nanoseconds (bare bodies carry
    /// no time).
    pub time: Option<String>,
    /// What one unit of the time field is.
    pub time_unit: TimeUnit,
    /// The request id (`trace_id`); absent in a line: `line-N`.
    pub request_id: String,
    /// The instance (`instance_id`: pod, upstream, model); absent in a line: `instance`.
    pub instance: String,
    /// The salt (tenant, LoRA adapter), hashed into the root key; `None`: no salt.
    pub salt: Option<String>,
    /// The tenant, written as the row's `tenant` (what `--lane-by` lanes by); `None`: no
    /// tenant field; absent in a line: none written.
    pub tenant: Option<String>,
    /// The engine's prompt token count, compared with ours in the summary.
    pub usage: String,
    /// Where the engine's own count of cached prompt tokens may be, the first found wins
    /// (written as the row's `cached_tokens`: the observed hits, beside the ideal).
    pub cached_tokens: Vec<String>,
    /// Where the generated output may be (`--cache-output`), the first found wins: token
    /// ids (an array of integers) or text (tokenized without special tokens).
    pub output: Vec<String>,
}

/// The generated output: vLLM's `output_token_ids`, else the text of the first choice of a
/// chat completion or a completion.
pub const OUTPUT_PATHS: [&str; 3] = [
    "output_token_ids",
    "choices.0.message.content",
    "choices.0.text",
];

/// The engine's cached prompt tokens: OpenAI-compatible servers (vLLM, SGLang) in
/// `usage.prompt_tokens_details.cached_tokens`, SGLang's native API in
/// `meta_info.cached_tokens`.
pub const CACHED_TOKENS_PATHS: [&str; 2] = [
    "usage.prompt_tokens_details.cached_tokens",
    "meta_info.cached_tokens",
];

impl Default for FieldPaths {
    fn default() -> Self {
        Self {
            body: None,
            time: Some("timestamp".to_owned()),
            time_unit: TimeUnit::Seconds,
            request_id: "request_id".to_owned(),
            instance: "model".to_owned(),
            salt: None,
            tenant: None,
            usage: "usage.prompt_tokens".to_owned(),
            cached_tokens: CACHED_TOKENS_PATHS.map(str::to_owned).to_vec(),
            output: OUTPUT_PATHS.map(str::to_owned).to_vec(),
        }
    }
}

/// The instance of a line without the instance field (the converters' default).
pub const DEFAULT_INSTANCE: &str = "instance";

/// The unit of the time field's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Milliseconds,
    Microseconds,
    Nanoseconds,
}

impl TimeUnit {
    /// `s`, `ms`, `us` or `ns`.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "s" => Self::Seconds,
            "ms" => Self::Milliseconds,
            "us" => Self::Microseconds,
            "ns" => Self::Nanoseconds,
            _ => return None,
        })
    }

    fn ns_per_unit(self) -> u64 {
        match self {
            Self::Seconds => 1_000_000_000,
            Self::Milliseconds => 1_000_000,
            Self::Microseconds => 1_000,
            Self::Nanoseconds => 1,
        }
    }

    /// `value` (an integer or a float) in nanoseconds; `None` when not a positive number
    /// that fits `i64`.
    pub fn to_ns(self, value: &Value) -> Option<i64> {
        let per = self.ns_per_unit();
        let ns = if let Some(whole) = value.as_u64() {
            whole.checked_mul(per)?
        } else {
            let float = value.as_f64()? * per as f64;
            if !(1.0..9.2e18).contains(&float) {
                return None;
            }
            // Rounded to the nanosecond; the range was checked above.
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "range checked"
            )]
            let ns = float.round() as u64;
            ns
        };
        i64::try_from(ns).ok().filter(|ns| *ns > 0)
    }
}

/// `path` (dotted) inside `value`; a step that is a number indexes an array
/// (`choices.0.text`).
pub fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(value, |inner, step| match inner {
            Value::Array(items) => step.parse::<usize>().ok().and_then(|at| items.get(at)),
            _ => inner.get(step),
        })
        .filter(|found| !found.is_null())
}

/// The request body of `record`, and the path it was found at (`""`: the record).
pub fn find_body<'a>(
    record: &'a Value,
    body_path: Option<&'a str>,
) -> Option<(&'a Value, &'a str)> {
    if let Some(path) = body_path {
        return lookup(record, path).map(|body| (body, path));
    }
    let is_body = |value: &Value| {
        ["messages", "prompt", "prompt_token_ids"]
            .iter()
            .any(|field| value.get(field).is_some())
    };
    if is_body(record) {
        return Some((record, ""));
    }
    ["body", "request"].into_iter().find_map(|path| {
        record
            .get(path)
            .filter(|inner| is_body(inner))
            .map(|inner| (inner, path))
    })
}

/// `path` in the record, else in the body.
pub fn field<'a>(record: &'a Value, body: &'a Value, path: &str) -> Option<&'a Value> {
    lookup(record, path).or_else(|| lookup(body, path))
}

/// A string or number field as text (ids and salts are either).
pub fn as_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// `text` (a JSON line) with each lone surrogate escape (`\ud800`–`\udfff` not in a
/// high-low pair, which Python's `json.dumps` writes for a lone surrogate and strict JSON
/// parsers refuse) replaced by `\ufffd` (U+FFFD), as Python's `errors="replace"` decodes it,
/// and how many were replaced; `None` when there is none (no allocation then).
pub fn replace_lone_surrogates(text: &str) -> Option<(String, u64)> {
    if !text.contains("\\ud") && !text.contains("\\uD") {
        return None;
    }
    let bytes = text.as_bytes();
    let surrogate_at = |at: usize| -> Option<u32> {
        let escape = bytes.get(at..at + 6)?;
        if escape[0] != b'\\' || escape[1] != b'u' {
            return None;
        }
        let hex = std::str::from_utf8(&escape[2..]).ok()?;
        u32::from_str_radix(hex, 16)
            .ok()
            .filter(|code| (0xD800..=0xDFFF).contains(code))
    };
    let mut out = String::with_capacity(text.len());
    let mut replaced = 0_u64;
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        match surrogate_at(at) {
            // A high-low pair is a character.
            Some(0xD800..=0xDBFF) if surrogate_at(at + 6).is_some_and(|low| low >= 0xDC00) => {
                at += 12;
            }
            Some(_) => {
                out.push_str(&text[copied..at]);
                out.push_str("\\ufffd");
                replaced += 1;
                at += 6;
                copied = at;
            }
            // Any other escape: its second byte is never the start of one.
            None => at += 2,
        }
    }
    if replaced == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some((out, replaced))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn body_is_found_bare_or_wrapped() {
        let bare = json!({"messages": []});
        assert_eq!(find_body(&bare, None).unwrap().1, "");
        let wrapped = json!({"timestamp": 1, "body": {"prompt": "x"}});
        assert_eq!(find_body(&wrapped, None).unwrap().1, "body");
        let custom = json!({"req": {"inner": {"prompt": "x"}}});
        assert_eq!(
            find_body(&custom, Some("req.inner")).unwrap().1,
            "req.inner"
        );
        assert!(find_body(&json!({"other": 1}), None).is_none());
    }

    #[test]
    fn fields_come_from_the_record_then_the_body() {
        let record = json!({"model": "outer", "body": {"model": "inner", "user": "t1"}});
        let body = &record["body"];
        assert_eq!(field(&record, body, "model"), Some(&json!("outer")));
        assert_eq!(field(&record, body, "user"), Some(&json!("t1")));
        assert_eq!(field(&record, body, "body.user"), Some(&json!("t1")));
        assert_eq!(field(&record, body, "absent"), None);
        let reply = json!({"choices": [{"message": {"content": "hi"}}, {"text": "x"}]});
        assert_eq!(
            lookup(&reply, "choices.0.message.content"),
            Some(&json!("hi"))
        );
        assert_eq!(lookup(&reply, "choices.1.text"), Some(&json!("x")));
        assert_eq!(lookup(&reply, "choices.2.text"), None);
        assert_eq!(lookup(&reply, "choices.x"), None);
    }

    /// <https://github.com/litehit/litehit/issues/27>: Python's `json.dumps("\ud800")`.
    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let line = r#"{"a": "x\ud800y", "b": "\ud83d\ude00", "c": "\\ud800", "d": "\uDC00"}"#;
        let (fixed, count) = replace_lone_surrogates(line).unwrap();
        assert_eq!(count, 2);
        let value: Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(value["a"], "x\u{fffd}y");
        assert_eq!(value["b"], "😀", "a pair stays");
        assert_eq!(value["c"], "\\ud800", "an escaped backslash is no escape");
        assert_eq!(value["d"], "\u{fffd}");
        assert!(replace_lone_surrogates(r#"{"b": "\ud83d\ude00 ok"}"#).is_none());
        assert!(replace_lone_surrogates(r#"{"plain": 1}"#).is_none());
    }

    #[test]
    fn time_units_convert_to_positive_ns() {
        assert_eq!(TimeUnit::Seconds.to_ns(&json!(1.5)), Some(1_500_000_000));
        assert_eq!(TimeUnit::Milliseconds.to_ns(&json!(3)), Some(3_000_000));
        assert_eq!(TimeUnit::Nanoseconds.to_ns(&json!(0)), None);
        assert_eq!(TimeUnit::Seconds.to_ns(&json!(-1)), None);
        assert_eq!(TimeUnit::Seconds.to_ns(&json!("1")), None);
        assert_eq!(TimeUnit::Seconds.to_ns(&json!(u64::MAX)), None);
    }
}
