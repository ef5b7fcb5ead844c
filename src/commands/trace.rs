//! `litehit trace`: an OpenAI request log → a standard block trace, published atomically.
//! The conversion is `litehit_tokenize`'s; this file resolves flags and reports.

use std::fmt::Write as _;
use std::io::{BufReader, Write};
use std::path::Path;

use color_eyre::eyre::{Result, WrapErr as _, bail};

use crate::cli::LaneFlags;
use crate::cli::trace_args::{TokenizeFlags, TraceArgs};
use crate::cli::trace_format_arg::FormatArg;
use litehit_core::formats::TraceFormat;
use litehit_core::grammar::LaneBySpec;
use litehit_tokenize::record::FieldPaths;
use litehit_tokenize::sandbox::RendererCommand;
use litehit_tokenize::template::{
    ChatTemplate, TemplateBudget, TemplateOptions, TokenizerConfig, parse_template_kwarg,
};
use litehit_tokenize::tokenizer::TextTokenizer;
use litehit_tokenize::{ConvertOptions, ConvertSummary, Converter};

/// Tokens per block when none is given: defined beside its flag, `--block-size`.
pub use crate::cli::trace_args::DEFAULT_BLOCK_SIZE;

/// Read buffer of the log.
const READ_BUFFER_BYTES: usize = 1 << 20;

pub fn run(args: &TraceArgs) -> Result<()> {
    let model = super::resolve_model(&args.model)?;
    let converter = build_converter(
        &args.tokenize,
        args.lane_by.as_ref().and_then(|spec| spec.field.as_deref()),
        args.block_size,
        args.skip_bad,
    )?;
    let summary = if args.out == Path::new("-") {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let summary = convert_file(
            &converter,
            &args.log,
            args.line_cap.max_line_bytes,
            &mut out,
            &args.out,
        )?;
        out.flush()?;
        summary
    } else {
        litehit_core::facts::file::write_atomically(&args.out, |out| {
            convert_file(
                &converter,
                &args.log,
                args.line_cap.max_line_bytes,
                out,
                &args.out,
            )
        })?
    };
    if !args.quiet {
        eprint!(
            "{}",
            render_summary(&summary, args.block_size, &args.log, Some(&args.out))
        );
        if let Some(model) = &model {
            eprint!("{}", render_model_blocks(model, &summary, args.block_size));
        }
    }
    Ok(())
}

/// Whether `replay` or `watch` reads an OpenAI request log: `--format openai`, or
/// `--tokenizer` without `--format` (the older spelling). Refused at start: `--format openai`
/// without a tokenizer, a tokenizer with another format, a tokenizing flag without one, and
/// the lane flags that do not apply to the rows the log becomes.
pub fn reads_openai_log(lane: &LaneFlags, flags: &TokenizeFlags) -> Result<bool> {
    let openai = lane.is_openai() || (lane.format.is_none() && flags.tokenizer.is_some());
    if !openai {
        if flags.tokenizer.is_some() {
            bail!("--tokenizer applies to an OpenAI request log: use --format openai");
        }
        if let Some(flag) = flags.first_tokenize_only_flag() {
            bail!("{flag} applies to an OpenAI request log: use --format openai --tokenizer PATH");
        }
        return Ok(false);
    }
    if flags.tokenizer.is_none() {
        bail!(
            "--format openai needs --tokenizer: a tokenizer.json (or its directory), or \
             tiktoken:o200k_base / tiktoken:cl100k_base"
        );
    }
    if lane.prefix_hash {
        bail!("--prefix-hash does not apply to --format openai: its block keys are chained");
    }
    if lane.trace_block_size.is_some() {
        bail!(
            "--trace-block-size does not apply to --format openai: the blocks are cut at \
             --block-size tokens"
        );
    }
    Ok(true)
}

/// The lane flags of the standard trace an OpenAI log becomes: its format, and
/// `--block-size` (default [`DEFAULT_BLOCK_SIZE`]).
/// `--lane-by [instance,]PATH` becomes `--lane-by [instance,]tenant` (the converter writes
/// PATH's value as each row's `tenant`).
pub fn openai_lane(lane: &LaneFlags) -> LaneFlags {
    LaneFlags {
        format: Some(FormatArg::Trace(TraceFormat::Standard)),
        block_size: Some(lane.block_size.unwrap_or(DEFAULT_BLOCK_SIZE)),
        lane_by: lane.lane_by.as_ref().map(|spec| LaneBySpec {
            keep_instance: spec.keep_instance,
            field: spec.field.as_ref().map(|_| "tenant".to_owned()),
        }),
        ..lane.clone()
    }
}

/// The log's field a `--lane-by` names, which the converter writes as each row's `tenant`.
pub fn tenant_field(lane: &LaneFlags) -> Option<&str> {
    lane.lane_by.as_ref().and_then(|spec| spec.field.as_deref())
}

/// Converts the log at `log` into trace rows on `out`; a line longer than `max_line_bytes`
/// is an error naming it (`--max-line-bytes`), read no further than the cap.
pub fn convert_file(
    converter: &Converter,
    log: &Path,
    max_line_bytes: u64,
    out: &mut impl Write,
    out_path: &Path,
) -> Result<ConvertSummary> {
    let reader = litehit_core::formats::open_trace(log)
        .wrap_err_with(|| format!("opening {}", log.display()))?;
    let reader = BufReader::with_capacity(
        READ_BUFFER_BYTES,
        litehit_core::formats::LineCapReader::new(reader, max_line_bytes),
    );
    Ok(converter.convert(reader, log, out, out_path)?)
}

/// The tokenizer, chat template and field paths of the flags; every file is read and the
/// template rendered once here, so a missing file or a broken template fails at start.
pub fn build_converter(
    flags: &TokenizeFlags,
    tenant_field: Option<&str>,
    block_size: u64,
    skip_bad: bool,
) -> Result<Converter> {
    let Some(spec) = &flags.tokenizer else {
        bail!("--tokenizer is required: a tokenizer.json (or its directory), or tiktoken:NAME");
    };
    let tokenizer = TextTokenizer::load(spec)?;
    let config = match tokenizer.dir() {
        Some(dir) => TokenizerConfig::read(dir)?,
        None => TokenizerConfig::default(),
    };
    let kwargs = flags
        .template_kwarg
        .iter()
        .map(|text| parse_template_kwarg(text))
        .collect::<Result<Vec<_>, _>>()?;
    let options = TemplateOptions {
        add_generation_prompt: !flags.no_generation_prompt,
        kwargs,
    };
    let source = if let Some(file) = &flags.chat_template {
        let source = std::fs::read_to_string(file)
            .wrap_err_with(|| format!("{}: cannot read the chat template", file.display()))?;
        Some((source, file.display().to_string()))
    } else if let (Some(source), Some(dir)) = (&config.chat_template, tokenizer.dir()) {
        Some((
            source.clone(),
            dir.join("tokenizer_config.json").display().to_string(),
        ))
    } else {
        None
    };
    // Untrusted (it came with the model folder): rendered in a child process under budgets.
    let template = match source {
        Some((source, name)) => Some(ChatTemplate::sandboxed(
            source,
            name,
            &config,
            &options,
            TemplateBudget::default(),
            RendererCommand::current_exe().wrap_err("locating this program")?,
        )?),
        None => None,
    };
    let defaults = FieldPaths::default();
    let fields = FieldPaths {
        body: flags.body_field.clone(),
        time: if flags.line_time {
            None
        } else {
            flags.time_field.clone().or(defaults.time)
        },
        time_unit: flags.time_unit.unwrap_or(defaults.time_unit),
        request_id: flags.id_field.clone().unwrap_or(defaults.request_id),
        instance: flags.instance_field.clone().unwrap_or(defaults.instance),
        salt: flags.salt_field.clone(),
        tenant: tenant_field.map(str::to_owned),
        usage: flags.usage_field.clone().unwrap_or(defaults.usage),
        cached_tokens: defaults.cached_tokens,
        output: flags
            .output_field
            .clone()
            .map_or(defaults.output, |path| vec![path]),
    };
    let block_size = usize::try_from(block_size).wrap_err("--block-size is too large")?;
    Ok(Converter::new(
        tokenizer,
        template,
        ConvertOptions {
            block_size,
            fields,
            add_special_tokens: flags.add_special_tokens.unwrap_or_default(),
            skip_bad,
            cache_output: flags.cache_output,
        },
    ))
}

/// With `--model`: the model's lines of the summary, and the KV bytes one of the trace's
/// blocks holds (the trace itself has no sizes: `replay --model` gives its rows theirs).
fn render_model_blocks(
    model: &litehit_core::config::ModelKvSize,
    summary: &ConvertSummary,
    block_size: u64,
) -> String {
    let block_bytes = model.kv_bytes_per_token.saturating_mul(block_size);
    let mut text = crate::output::summary::render_model(model);
    let _ = writeln!(
        text,
        "model: {} per {block_size}-token block; the {} full blocks read, every one computed \
         anew, would take {} (replay with the same --model for the hits)",
        crate::output::summary::human_bytes(block_bytes),
        summary.blocks,
        crate::output::summary::human_bytes(block_bytes.saturating_mul(summary.blocks))
    );
    text
}

/// What stderr shows after converting `log`: into `out`, or (`None`) for a replay.
pub fn render_summary(
    summary: &ConvertSummary,
    block_size: u64,
    log: &Path,
    out: Option<&Path>,
) -> String {
    let mut text = format!(
        "litehit: {}: {} requests, {} prompt tokens, {} full blocks of {block_size} tokens",
        log.display(),
        summary.requests,
        summary.prompt_tokens,
        summary.blocks,
    );
    match out {
        Some(out) => writeln!(text, " -> {}", out.display()),
        None => writeln!(text, ", replayed"),
    }
    .expect("writing to a String cannot fail");
    if let Some(first) = &summary.first_skipped {
        writeln!(
            text,
            "litehit: --skip-bad: {} bad lines skipped (the first: {first})",
            summary.skipped_lines
        )
        .expect("writing to a String cannot fail");
    }
    if summary.usage_compared > 0 {
        write!(
            text,
            "litehit: usage.prompt_tokens: {} of {} prompts differ from the tokenizer's count",
            summary.usage_differs, summary.usage_compared
        )
        .expect("writing to a String cannot fail");
        if let Some((line, ours, engine)) = summary.first_usage_difference {
            write!(
                text,
                " (the first: line {line}, tokenizer {ours}, engine {engine}; check the chat \
                 template, its kwargs and --add-special-tokens)"
            )
            .expect("writing to a String cannot fail");
        }
        text.push('\n');
    }
    if summary.outputs + summary.outputs_missing > 0 {
        writeln!(
            text,
            "litehit: --cache-output: {} of {} requests carried an output ({} full output \
             blocks cached); {} prompts continue an earlier request's prompt + output, {} of \
             them re-sending all its full blocks (see docs/REQUEST_LOGS.md#cached-outputs)",
            summary.outputs,
            summary.outputs + summary.outputs_missing,
            summary.output_blocks,
            summary.continued,
            summary.output_resent,
        )
        .expect("writing to a String cannot fail");
    }
    if let Some(line) = summary.first_lone_surrogate_line {
        writeln!(
            text,
            "litehit: {} lone surrogate escapes (\\ud800-\\udfff without a pair, as Python's \
             json.dumps writes them) read as U+FFFD (the first: line {line})",
            summary.lone_surrogates
        )
        .expect("writing to a String cannot fail");
    }
    text
}
