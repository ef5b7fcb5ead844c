//! The `tojson` filter as Hugging Face `transformers` defines it for chat templates:
//! `json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
//! sort_keys=sort_keys)`, byte for byte. minijinja's own `tojson` is serde_json's compact
//! form with `<`, `>`, `&` and `'` escaped for HTML; tool-calling templates (Qwen, Llama,
//! Mistral) print tool schemas and call arguments with it, so its separators decide tokens.
//!
//! Python's rules: separators `", "` and `": "` (with an indent, `","` and `": "`), keys in
//! insertion order (`sort_keys` sorts them, at every level), an indent of N spaces or of a
//! given string with one newline per item (empty containers stay `[]` / `{}`), strings
//! escaped as `json.dumps` does (`ensure_ascii=True`: every non-ASCII character as `\uXXXX`,
//! in UTF-16), floats as `repr` writes them (`1e+16`, `1.5e-07`, `100.0`), `NaN` and
//! `Infinity` as Python writes them. Where the log is read (serde_json) two things can differ
//! from Python's `json.loads`: integers above 2^64 become floats, and a decimal of 17
//! significant digits may land one bit off (serde_json without `float_roundtrip`).

use std::fmt::Write as _;

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{Error, ErrorKind};

/// How `json.dumps` is asked to write.
struct Options {
    ensure_ascii: bool,
    /// `None`: one line.
    indent: Option<String>,
    item_separator: String,
    key_separator: String,
    sort_keys: bool,
}

/// The filter: `x|tojson`, `x|tojson(2)`, `x|tojson(indent=4, sort_keys=true,
/// separators=[",", ":"], ensure_ascii=false)`.
#[expect(
    clippy::needless_pass_by_value,
    reason = "minijinja hands a filter its keyword arguments by value"
)]
pub fn tojson(value: &Value, indent: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let indent = match indent {
        Some(indent) => Some(indent),
        None => kwargs.get::<Option<Value>>("indent")?,
    };
    let indent = match indent {
        None => None,
        Some(value) if value.is_none() || value.is_undefined() => None,
        Some(value) => Some(if let Some(text) = value.as_str() {
            text.to_owned()
        } else {
            // Python: `' ' * indent`, so a negative one is no indentation (but newlines).
            let count = i64::try_from(value.clone()).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidOperation,
                    format!("tojson: indent must be an integer or a string, found {value}"),
                )
            })?;
            " ".repeat(usize::try_from(count).unwrap_or(0))
        }),
    };
    let separators = kwargs.get::<Option<Value>>("separators")?;
    let (item_separator, key_separator) = match separators {
        Some(pair) if !pair.is_none() && !pair.is_undefined() => {
            let parts: Vec<String> = pair
                .try_iter()?
                .map(|part| part.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .filter(|parts: &Vec<String>| parts.len() == 2)
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidOperation,
                        "tojson: separators must be two strings (item, key)",
                    )
                })?;
            (parts[0].clone(), parts[1].clone())
        }
        _ if indent.is_some() => (",".to_owned(), ": ".to_owned()),
        _ => (", ".to_owned(), ": ".to_owned()),
    };
    let options = Options {
        ensure_ascii: kwargs.get::<Option<bool>>("ensure_ascii")?.unwrap_or(false),
        indent,
        item_separator,
        key_separator,
        sort_keys: kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false),
    };
    kwargs.assert_all_used()?;
    let mut out = String::new();
    write_value(&mut out, value, &options, 0)?;
    Ok(Value::from_safe_string(out))
}

fn write_value(
    out: &mut String,
    value: &Value,
    options: &Options,
    depth: usize,
) -> Result<(), Error> {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            if value.is_integer() {
                write!(out, "{value}").expect("writing to a String cannot fail");
            } else {
                let number = f64::try_from(value.clone())
                    .map_err(|_| Error::new(ErrorKind::InvalidOperation, "tojson: not a number"))?;
                write_float(out, number);
            }
        }
        ValueKind::String => write_string(out, value.as_str().unwrap_or_default(), options),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = value.try_iter()?.collect();
            write_container(out, '[', ']', items.len(), options, depth, |out, at| {
                write_value(out, &items[at], options, depth + 1)
            })?;
        }
        ValueKind::Map => {
            let mut keys: Vec<Value> = value.try_iter()?.collect();
            if options.sort_keys {
                keys.sort_by_cached_key(key_text);
            }
            write_container(out, '{', '}', keys.len(), options, depth, |out, at| {
                let key = &keys[at];
                write_string(out, &key_text(key), options);
                out.push_str(&options.key_separator);
                write_value(out, &value.get_item(key)?, options, depth + 1)
            })?;
        }
        _ => write_string(out, &value.to_string(), options),
    }
    Ok(())
}

/// A key as Python writes it: strings as they are, numbers and booleans as their JSON.
fn key_text(key: &Value) -> String {
    match key.kind() {
        ValueKind::String => key.as_str().unwrap_or_default().to_owned(),
        ValueKind::Bool => (if key.is_true() { "true" } else { "false" }).to_owned(),
        ValueKind::None | ValueKind::Undefined => "null".to_owned(),
        _ => key.to_string(),
    }
}

/// `[`/`{`, the items (each written by `item`), `]`/`}`, indented as Python indents.
fn write_container(
    out: &mut String,
    open: char,
    close: char,
    len: usize,
    options: &Options,
    depth: usize,
    mut item: impl FnMut(&mut String, usize) -> Result<(), Error>,
) -> Result<(), Error> {
    out.push(open);
    if len == 0 {
        out.push(close);
        return Ok(());
    }
    let newline = |out: &mut String, level: usize| {
        if let Some(indent) = &options.indent {
            out.push('\n');
            for _ in 0..level {
                out.push_str(indent);
            }
        }
    };
    for at in 0..len {
        if at > 0 {
            out.push_str(&options.item_separator);
        }
        newline(out, depth + 1);
        item(out, at)?;
    }
    newline(out, depth);
    out.push(close);
    Ok(())
}

/// A string as `json.dumps` escapes it.
fn write_string(out: &mut String, text: &str, options: &Options) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ch if (ch as u32) < 0x20 || (options.ensure_ascii && !ch.is_ascii()) => {
                let mut units = [0_u16; 2];
                for unit in ch.encode_utf16(&mut units) {
                    write!(out, "\\u{unit:04x}").expect("writing to a String cannot fail");
                }
            }
            ch => out.push(ch),
        }
    }
    out.push('"');
}

/// A float as Python's `repr`: the shortest digits that read back, positional for decimal
/// exponents from -4 to 15 (always with a fraction), else `d.ddde+XX`.
fn write_float(out: &mut String, number: f64) {
    if number.is_nan() {
        out.push_str("NaN");
        return;
    }
    if number.is_infinite() {
        out.push_str(if number > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        });
        return;
    }
    // Rust's `{:e}` is the shortest round-trip form: `-1.2345e16`, `1e-7`.
    let scientific = format!("{number:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` always writes an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` writes an integer exponent");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    out.push_str(sign);
    if (-4..16).contains(&exponent) {
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        if exponent >= 0 {
            let whole = usize::try_from(exponent).unwrap_or(0) + 1;
            if digits.len() <= whole {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', whole - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..whole]);
                out.push('.');
                out.push_str(&digits[whole..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n(
                '0',
                usize::try_from(-exponent - 1).unwrap_or(0),
            ));
            out.push_str(&digits);
        }
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        write!(out, "{mantissa}e{sign}{:02}", exponent.unsigned_abs())
            .expect("writing to a String cannot fail");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders `source` with this filter and `x` (JSON text, read in its key order, as a
    /// request's messages are read) in the context.
    fn render(source: &str, x: &str) -> String {
        let mut env = minijinja::Environment::new();
        env.add_filter("tojson", tojson);
        let x: Value = serde_json::from_str(x).unwrap();
        env.render_str(source, minijinja::context! { x => x })
            .unwrap()
    }

    /// The value the expected strings below were made from, with Python 3:
    /// `python3 -c 'import json; x = json.loads(open("x.json").read()); print(repr(json.dumps(x, ensure_ascii=False)))'`
    /// (and `indent=2`, `indent=4, sort_keys=True` of `x["arguments"]`, `separators=(",", ":")`,
    /// `ensure_ascii=True` of `x["emoji"]`, `indent="\t"`, `indent=0`).
    const EXAMPLE: &str = r#"{"name": "get_weather",
        "arguments": {"city": "Zürich", "units": ["c", "f"],
                      "nested": {"deep": [1, 2.5, {"z": null, "a": true}]}},
        "emoji": "😀 \u2028 <tag> & 'q' \"dq\" back\\slash\n\t\u0001",
        "empty": [], "eo": {},
        "f": [1e16, 1.5e-07, 0.1, 100.0, -0.0, 1e-4, 1e300, 123456789.125, 2.5e-5]}"#;

    #[test]
    fn default_separators_keep_the_key_order_and_write_non_ascii_as_it_is() {
        assert_eq!(
            render("{{ x|tojson }}", EXAMPLE),
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"units\": [\"c\", \"f\"], \"nested\": {\"deep\": [1, 2.5, {\"z\": null, \"a\": true}]}}, \"emoji\": \"😀 \u{2028} <tag> & 'q' \\\"dq\\\" back\\\\slash\\n\\t\\u0001\", \"empty\": [], \"eo\": {}, \"f\": [1e+16, 1.5e-07, 0.1, 100.0, -0.0, 0.0001, 1e+300, 123456789.125, 2.5e-05]}"
        );
    }

    #[test]
    fn indent_puts_each_item_on_its_line_and_keeps_empty_containers() {
        assert_eq!(
            render("{{ x|tojson(indent=2) }}", EXAMPLE),
            "{\n  \"name\": \"get_weather\",\n  \"arguments\": {\n    \"city\": \"Zürich\",\n    \"units\": [\n      \"c\",\n      \"f\"\n    ],\n    \"nested\": {\n      \"deep\": [\n        1,\n        2.5,\n        {\n          \"z\": null,\n          \"a\": true\n        }\n      ]\n    }\n  },\n  \"emoji\": \"😀 \u{2028} <tag> & 'q' \\\"dq\\\" back\\\\slash\\n\\t\\u0001\",\n  \"empty\": [],\n  \"eo\": {},\n  \"f\": [\n    1e+16,\n    1.5e-07,\n    0.1,\n    100.0,\n    -0.0,\n    0.0001,\n    1e+300,\n    123456789.125,\n    2.5e-05\n  ]\n}"
        );
        assert_eq!(
            render("{{ x|tojson(2) }}", EXAMPLE),
            render("{{ x|tojson(indent=2) }}", EXAMPLE),
            "indent may be positional, as in Jinja"
        );
        assert_eq!(
            render("{{ x|tojson(indent='\t') }}", "[[], {}, [1]]"),
            "[\n\t[],\n\t{},\n\t[\n\t\t1\n\t]\n]"
        );
        assert_eq!(
            render("{{ x|tojson(indent=0) }}", r#"{"a": [1, 2]}"#),
            "{\n\"a\": [\n1,\n2\n]\n}"
        );
    }

    #[test]
    fn sort_keys_sorts_every_level_and_separators_are_taken() {
        assert_eq!(
            render(
                "{{ x.arguments|tojson(indent=4, sort_keys=true) }}",
                EXAMPLE
            ),
            "{\n    \"city\": \"Zürich\",\n    \"nested\": {\n        \"deep\": [\n            1,\n            2.5,\n            {\n                \"a\": true,\n                \"z\": null\n            }\n        ]\n    },\n    \"units\": [\n        \"c\",\n        \"f\"\n    ]\n}"
        );
        assert_eq!(
            render("{{ x.arguments|tojson(separators=[',', ':']) }}", EXAMPLE),
            "{\"city\":\"Zürich\",\"units\":[\"c\",\"f\"],\"nested\":{\"deep\":[1,2.5,{\"z\":null,\"a\":true}]}}"
        );
    }

    #[test]
    fn ensure_ascii_writes_utf16_escapes() {
        assert_eq!(
            render("{{ x.emoji|tojson(ensure_ascii=true) }}", EXAMPLE),
            "\"\\ud83d\\ude00 \\u2028 <tag> & 'q' \\\"dq\\\" back\\\\slash\\n\\t\\u0001\""
        );
    }

    #[test]
    fn a_tool_call_template_matches_python() {
        // A Qwen-style tool call: `{{ tool_call.arguments | tojson }}` inside a tag.
        let source = "{% for call in x %}<tool_call>\n{\"name\": \"{{ call.name }}\", \
                      \"arguments\": {{ call.arguments|tojson }}}\n</tool_call>{% endfor %}";
        let calls = r#"[{"name": "search",
            "arguments": {"q": "日本 の 天気", "k": 3, "filters": {"lang": ["ja", "en"]}}}]"#;
        // python3 -c 'import json; print(json.dumps({"q": "日本 の 天気", "k": 3, "filters": {"lang": ["ja", "en"]}}, ensure_ascii=False))'
        assert_eq!(
            render(source, calls),
            "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"日本 の 天気\", \"k\": 3, \"filters\": {\"lang\": [\"ja\", \"en\"]}}}\n</tool_call>"
        );
    }

    #[test]
    fn bad_arguments_are_errors() {
        let mut env = minijinja::Environment::new();
        env.add_filter("tojson", tojson);
        let x = serde_json::json!([1]);
        for source in [
            "{{ x|tojson(separators=[',']) }}",
            "{{ x|tojson(indent=[1]) }}",
            "{{ x|tojson(colour=1) }}",
        ] {
            assert!(
                env.render_str(source, minijinja::context! { x => x })
                    .is_err(),
                "{source}"
            );
        }
    }
}
