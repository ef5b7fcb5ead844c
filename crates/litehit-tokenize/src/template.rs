//! The chat template: `messages` → the prompt text the serving engine tokenizes.
//!
//! Rendered with minijinja as `transformers` renders it: `trim_blocks` and `lstrip_blocks`,
//! loop controls, Python string/dict methods (`minijinja-contrib`'s pycompat callback),
//! `raise_exception`, and `tojson` as Python's `json.dumps` ([`crate::pyjson`]). The context holds `messages`, `tools` (when the request has them),
//! `add_generation_prompt`, `bos_token`/`eos_token` from `tokenizer_config.json`, and the
//! `--template-kwarg`s.

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{Result, TokenizeError};

const TEMPLATE_NAME: &str = "chat_template";

/// What one render of a chat template may use. Templates come with downloaded model folders,
/// so they are untrusted: fuel bounds the steps (a loop nest), memory what the strings it
/// builds may take (a string doubled in a loop), each per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateBudget {
    /// minijinja fuel: about one unit per template instruction.
    pub fuel: u64,
    /// Bytes the renderer process may map beyond what it maps at start (`RLIMIT_AS`).
    pub memory_bytes: u64,
}

/// Fuel per render by default: a real template spends tens of units per message.
pub const DEFAULT_TEMPLATE_FUEL: u64 = 5_000_000;

/// Memory per renderer by default.
pub const DEFAULT_TEMPLATE_MEMORY_BYTES: u64 = 1 << 30;

impl Default for TemplateBudget {
    fn default() -> Self {
        Self {
            fuel: DEFAULT_TEMPLATE_FUEL,
            memory_bytes: DEFAULT_TEMPLATE_MEMORY_BYTES,
        }
    }
}

/// A compiled chat template and its fixed context.
pub struct ChatTemplate {
    env: minijinja::Environment<'static>,
    /// Where it came from, for messages.
    source_name: String,
    /// bos/eos tokens, `add_generation_prompt` and the kwargs: merged under each request's.
    base_context: Map<String, Value>,
    /// Renders in a child process under the memory budget, when set (`crate::sandbox`).
    sandbox: Option<crate::sandbox::Sandbox>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("source_name", &self.source_name)
            .finish_non_exhaustive()
    }
}

/// What a `tokenizer_config.json` says about chat.
#[derive(Debug, Default)]
pub struct TokenizerConfig {
    pub chat_template: Option<String>,
    pub bos_token: Option<String>,
    pub eos_token: Option<String>,
}

impl TokenizerConfig {
    /// Reads `dir/tokenizer_config.json`; a missing file is an empty config.
    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join("tokenizer_config.json");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self::default());
            }
            Err(source) => return Err(TokenizeError::Io { path, source }),
        };
        let bad = |message: String| TokenizeError::Template {
            source_name: path.display().to_string(),
            message,
        };
        let json: Value = serde_json::from_str(&text).map_err(|error| bad(error.to_string()))?;
        let token = |field: &str| match json.get(field) {
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Object(added)) => added
                .get("content")
                .and_then(Value::as_str)
                .map(str::to_owned),
            _ => None,
        };
        // A string, or a list of named templates of which "default" is the chat one.
        let chat_template = match json.get("chat_template") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Array(named)) => Some(
                named
                    .iter()
                    .find(|entry| entry.get("name").and_then(Value::as_str) == Some("default"))
                    .and_then(|entry| entry.get("template").and_then(Value::as_str))
                    .ok_or_else(|| {
                        bad("field \"chat_template\": no template named \"default\"".to_owned())
                    })?
                    .to_owned(),
            ),
            Some(_) => {
                return Err(bad(
                    "field \"chat_template\": expected a string or a list of named templates"
                        .to_owned(),
                ));
            }
        };
        Ok(Self {
            chat_template,
            bos_token: token("bos_token"),
            eos_token: token("eos_token"),
        })
    }
}

/// How a template is rendered besides the messages.
#[derive(Debug, Clone, Default)]
pub struct TemplateOptions {
    pub add_generation_prompt: bool,
    /// `--template-kwarg NAME=VALUE`, in order.
    pub kwargs: Vec<(String, Value)>,
}

/// Parses `NAME=VALUE`: the value as JSON (`false`, `3`, `"x"`), else as a bare string.
pub fn parse_template_kwarg(text: &str) -> Result<(String, Value)> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(TokenizeError::TemplateKwarg {
            text: text.to_owned(),
        });
    };
    if name.is_empty() {
        return Err(TokenizeError::TemplateKwarg {
            text: text.to_owned(),
        });
    }
    let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
    Ok((name.to_owned(), value))
}

impl ChatTemplate {
    /// Compiles `source` and renders a probe conversation, so a template that cannot render
    /// fails here, at start, not on line 1834.
    pub fn new(
        source: String,
        source_name: String,
        config: &TokenizerConfig,
        options: &TemplateOptions,
    ) -> Result<Self> {
        Self::with_fuel(
            source,
            source_name,
            config,
            options,
            TemplateBudget::default().fuel,
        )
    }

    /// [`Self::new`], rendered in a child process (`renderer`: a program that runs
    /// [`crate::sandbox::serve`]) under `budget`: a template that runs out of either fails
    /// that request with an error naming the template; the process is started again for the
    /// next one. The probe conversation is rendered there too.
    pub fn sandboxed(
        source: String,
        source_name: String,
        config: &TokenizerConfig,
        options: &TemplateOptions,
        budget: TemplateBudget,
        renderer: crate::sandbox::RendererCommand,
    ) -> Result<Self> {
        let init = crate::sandbox::Init {
            source: source.clone(),
            source_name: source_name.clone(),
            bos_token: config.bos_token.clone(),
            eos_token: config.eos_token.clone(),
            add_generation_prompt: options.add_generation_prompt,
            kwargs: options.kwargs.clone(),
            fuel: budget.fuel,
            memory_bytes: budget.memory_bytes,
        };
        // Compiled here too (no render): a syntax error is reported without a process.
        let mut template = Self::compile(source, source_name, config, options, budget.fuel)?;
        let sandbox = crate::sandbox::Sandbox::start(renderer, &init).map_err(|message| {
            TokenizeError::Template {
                source_name: template.source_name.clone(),
                message,
            }
        })?;
        template.sandbox = Some(sandbox);
        Ok(template)
    }

    /// [`Self::new`] with `fuel` per render.
    pub fn with_fuel(
        source: String,
        source_name: String,
        config: &TokenizerConfig,
        options: &TemplateOptions,
        fuel: u64,
    ) -> Result<Self> {
        let template = Self::compile(source, source_name, config, options, fuel)?;
        let probe = serde_json::json!([{"role": "user", "content": "hello"}]);
        template
            .render_json(&probe, None)
            .map_err(|message| TokenizeError::Template {
                source_name: template.source_name.clone(),
                message: format!("fails on a one-message probe conversation: {message}"),
            })?;
        Ok(template)
    }

    fn compile(
        source: String,
        source_name: String,
        config: &TokenizerConfig,
        options: &TemplateOptions,
        fuel: u64,
    ) -> Result<Self> {
        let mut env = minijinja::Environment::new();
        env.set_fuel(Some(fuel));
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        // `json.dumps` as `transformers` calls it, not minijinja's HTML-safe compact JSON.
        env.add_filter("tojson", crate::pyjson::tojson);
        env.add_function(
            "raise_exception",
            |message: String| -> std::result::Result<minijinja::Value, minijinja::Error> {
                Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    message,
                ))
            },
        );
        env.add_template_owned(TEMPLATE_NAME, source)
            .map_err(|error| TokenizeError::Template {
                source_name: source_name.clone(),
                message: describe(&error),
            })?;
        let mut base_context = Map::new();
        for (field, token) in [
            ("bos_token", &config.bos_token),
            ("eos_token", &config.eos_token),
        ] {
            base_context.insert(
                field.to_owned(),
                Value::String(token.clone().unwrap_or_default()),
            );
        }
        base_context.insert(
            "add_generation_prompt".to_owned(),
            Value::Bool(options.add_generation_prompt),
        );
        for (name, value) in &options.kwargs {
            base_context.insert(name.clone(), value.clone());
        }
        Ok(Self {
            env,
            source_name,
            base_context,
            sandbox: None,
        })
    }

    /// Where the template came from (a file, or a `tokenizer_config.json`).
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// Renders the `messages` (and `tools`) of the request body at `body_path` (dotted,
    /// `""`: the record) of the log line `text`, in the order the line wrote its objects'
    /// keys; in the child process when sandboxed. The error is minijinja's message, or why
    /// the renderer stopped.
    pub fn render_body(&self, text: &str, body_path: &str) -> std::result::Result<String, String> {
        if let Some(sandbox) = &self.sandbox {
            return sandbox.render(text, body_path);
        }
        let ordered = ordered_body(text, body_path)?;
        let tools = ordered
            .get_attr("tools")
            .ok()
            .filter(|tools| !tools.is_none() && !tools.is_undefined());
        let messages = ordered.get_attr("messages").unwrap_or_default();
        self.render(messages, tools)
    }

    /// Renders one request's `messages` (and `tools`); the error is minijinja's message.
    /// The values keep their objects' key order as the request wrote it (a `serde_json`
    /// value sorts its keys: see [`Self::render_json`]), which `tojson` prints.
    pub fn render(
        &self,
        messages: minijinja::Value,
        tools: Option<minijinja::Value>,
    ) -> std::result::Result<String, String> {
        let mut context: Vec<(&str, minijinja::Value)> = self
            .base_context
            .iter()
            .map(|(name, value)| (name.as_str(), minijinja::Value::from_serialize(value)))
            .collect();
        context.push(("messages", messages));
        if let Some(tools) = tools {
            context.push(("tools", tools));
        }
        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|error| describe(&error))?;
        template
            .render(minijinja::Value::from_iter(context))
            .map_err(|error| describe(&error))
    }

    /// [`Self::render`] of `serde_json` values (whose objects' keys are sorted).
    pub fn render_json(
        &self,
        messages: &Value,
        tools: Option<&Value>,
    ) -> std::result::Result<String, String> {
        self.render(
            minijinja::Value::from_serialize(messages),
            tools.map(minijinja::Value::from_serialize),
        )
    }
}

/// The request body at `body_path` (dotted, `""`: the record) of the line `text`, as a
/// template value whose objects keep their keys in the line's order.
pub fn ordered_body(text: &str, body_path: &str) -> std::result::Result<minijinja::Value, String> {
    let record: minijinja::Value =
        serde_json::from_str(text).map_err(|error| format!("failed to parse JSON: {error}"))?;
    if body_path.is_empty() {
        return Ok(record);
    }
    body_path.split('.').try_fold(record, |inner, step| {
        inner
            .get_attr(step)
            .map_err(|error| format!("{body_path}: {error}"))
    })
}

/// minijinja's message with its cause chain, on one line.
fn describe(error: &minijinja::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHATML: &str = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

    fn chatml(options: &TemplateOptions) -> ChatTemplate {
        ChatTemplate::new(
            CHATML.to_owned(),
            "test".to_owned(),
            &TokenizerConfig::default(),
            options,
        )
        .unwrap()
    }

    #[test]
    fn renders_chatml_with_generation_prompt() {
        let template = chatml(&TemplateOptions {
            add_generation_prompt: true,
            kwargs: Vec::new(),
        });
        let messages = serde_json::json!([{"role": "user", "content": "hi"}]);
        assert_eq!(
            template.render_json(&messages, None).unwrap(),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn kwargs_and_python_methods_reach_the_template() {
        let source = "{% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}{{ messages[0].content.strip().upper() }}";
        let options = TemplateOptions {
            add_generation_prompt: false,
            kwargs: vec![parse_template_kwarg("enable_thinking=false").unwrap()],
        };
        let template = ChatTemplate::new(
            source.to_owned(),
            "test".to_owned(),
            &TokenizerConfig::default(),
            &options,
        )
        .unwrap();
        let messages = serde_json::json!([{"role": "user", "content": "  hi "}]);
        assert_eq!(
            template.render_json(&messages, None).unwrap(),
            "<think></think>HI"
        );
    }

    #[test]
    fn template_that_raises_fails_at_start() {
        let error = ChatTemplate::new(
            "{{ raise_exception('no users here') }}".to_owned(),
            "bad.jinja".to_owned(),
            &TokenizerConfig::default(),
            &TemplateOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("bad.jinja: chat template: fails on a one-message probe"),
            "{error}"
        );
        assert!(error.contains("no users here"), "{error}");
    }

    #[test]
    fn kwarg_needs_a_name_and_equals() {
        assert!(parse_template_kwarg("enable_thinking").is_err());
        assert!(parse_template_kwarg("=1").is_err());
        assert_eq!(
            parse_template_kwarg("mode=fast").unwrap(),
            ("mode".to_owned(), Value::String("fast".to_owned()))
        );
    }
}
