//! One file per subcommand, glue only: resolve arguments through `config`, run the `engine`
//! or read facts, write through `facts::file` / `output`. No analysis logic lives here.

pub mod completions;
pub mod demo;
pub mod man;
pub mod mrc;
pub mod query;
pub mod quota;
pub mod replay;
#[cfg(feature = "tokenize")]
pub mod trace;
pub mod watch;
#[cfg(feature = "http")]
mod watch_http;

use color_eyre::eyre::{WrapErr as _, bail, eyre};

use crate::cli::{Cli, Command};
use litehit_core::formats::{detect_format, open_trace, peek_first_line};

/// Runs the parsed command line.
pub fn run(cli: Cli) -> color_eyre::Result<()> {
    match cli.command {
        Command::Replay(args) => replay::run(&args),
        Command::Query(args) => query::run(&args),
        Command::Mrc(args) => mrc::run(&args),
        Command::Watch(args) => watch::run(&args),
        Command::Demo(args) => demo::run(&args),
        #[cfg(feature = "tokenize")]
        Command::Trace(args) => trace::run(&args),
        Command::Completions(args) => completions::run(&args),
        Command::Man(args) => man::run(&args),
    }
}

/// Without the `tokenize` feature: an OpenAI request log (`--format openai`) is refused with
/// what this build lacks, before anything is read.
#[cfg(not(feature = "tokenize"))]
pub(crate) fn refuse_openai_log(lane: &crate::cli::LaneFlags) -> color_eyre::Result<()> {
    if lane.is_openai() {
        bail!(
            "--format openai: this litehit was built without the tokenizer (the `tokenize` \
             feature); build it with the default features to read OpenAI request logs"
        );
    }
    Ok(())
}

/// Checks `LITEHIT_THREADS` before `watch` and `demo`: their engine caps its lane threads
/// (and the HTTP server its workers) with it, so a bad value is an error naming the variable
/// at start rather than a cap of one later. (`replay` resolves its worker count, which caps
/// its parse workers and its lane threads, through the same variable.)
pub(crate) fn check_thread_cap() -> color_eyre::Result<()> {
    litehit_core::threads::available(None)?;
    Ok(())
}

/// Error and panic hooks: no location or environment sections; a panic is a bug.
pub fn install_error_hooks() {
    let installed = color_eyre::config::HookBuilder::default()
        .display_env_section(false)
        .panic_section("this is a bug, please report it at the project's issue tracker")
        .install();
    // Installing twice (tests) is harmless; the first hooks stay.
    let _ = installed;
}

/// `--model` (with `--kv-cache-dtype`) resolved: its KV size, or `None` without one. Each
/// surface names it and says what is not modelled (`ModelKvSize::windowed_notice`).
pub(crate) fn resolve_model(
    flags: &crate::cli::model_args::ModelFlags,
) -> color_eyre::Result<Option<litehit_core::config::ModelKvSize>> {
    let Some(name) = &flags.model else {
        if flags.kv_cache_dtype.is_some() {
            bail!("--kv-cache-dtype applies to a model's config: give --model NAME_OR_CONFIG");
        }
        return Ok(None);
    };
    let model = litehit_core::config::ModelKvSize::resolve(name, flags.kv_cache_dtype)
        .wrap_err("--model")?;
    Ok(Some(model))
}

/// `query`/`mrc --model`: its KV bytes per token, which replace every facts row's block bytes
/// (a note says so), or `None` without one.
pub(crate) fn facts_model(
    flags: &crate::cli::model_args::ModelFlags,
) -> color_eyre::Result<Option<u64>> {
    let model = resolve_model(flags)?;
    facts_model_note(model.as_ref());
    Ok(model.map(|model| model.kv_bytes_per_token))
}

/// The note of `query`/`mrc --model`: the facts' own block bytes are not used.
pub(crate) fn facts_model_note(model: Option<&litehit_core::config::ModelKvSize>) {
    let Some(model) = model else { return };
    note(Some(&format!(
        "note: --model {}: every facts row's block_bytes is taken as {} B/token × its \
         block_size_tokens, not the facts' own",
        model.model, model.kv_bytes_per_token
    )));
    if let Some(notice) = model.windowed_notice() {
        note(Some(&format!("note: {notice}")));
    }
}

/// The lane flags as the core resolves them, `--model` read (the CLI only parses it).
pub(crate) fn single_instance_flags(
    lane: &crate::cli::LaneFlags,
    detected_format: Option<litehit_core::formats::TraceFormat>,
) -> color_eyre::Result<litehit_core::config::SingleInstanceFlags> {
    Ok(litehit_core::config::SingleInstanceFlags {
        model: resolve_model(&lane.model)?,
        ..lane.to_single_instance_flags(detected_format)
    })
}

/// KVCM logs do not say their key size, and reads rarely carry a length that could catch a
/// wrong one: `--block-size` alone takes the keys as blocks of that size (as for a standard
/// trace), which is a silent ×4 on every count if they are the usual 16-token blocks.
pub(crate) fn warn_assumed_kvcm_key_size(
    format: litehit_core::formats::TraceFormat,
    lane: &crate::cli::LaneFlags,
) {
    if format == litehit_core::formats::TraceFormat::Kvcm
        && lane.trace_block_size.is_none()
        && let Some(size) = lane.block_size.filter(|&size| size != 16)
    {
        eprintln!(
            "litehit: warning: KVCM logs do not say their block size: the keys are taken as \
             {size}-token blocks (--block-size {size}); if they are 16-token blocks, add \
             --trace-block-size 16 to coarsen them"
        );
    }
}

/// Whether two paths name one file, however they are spelled (symlinks, `./`, `..`; for a
/// file not created yet, its directory's real path and its name): the commands that write
/// files refuse to write over an input.
pub(crate) fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    a == b || real_path(a).is_some_and(|a| real_path(b) == Some(a))
}

/// Whether writing `output` would write over the input file `input`: for standard output
/// under any name (`-` too), whether stdout goes to that file (`query f.csv - >> f.csv`);
/// else whether the two paths name one file.
pub(crate) fn writes_over(output: &std::path::Path, input: &std::path::Path) -> bool {
    if litehit_core::facts::file::is_standard_output(output) {
        litehit_core::facts::file::is_where_stdout_goes(input)
    } else {
        same_file(input, output)
    }
}

/// `path` with every symlink and `.`/`..` resolved; for a path that does not exist yet
/// (also at the end of a dangling link, where a writer would create it), its directory
/// resolved and its file name appended.
fn real_path(path: &std::path::Path) -> Option<std::path::PathBuf> {
    let path = litehit_core::facts::file::resolve_symlinks(path).ok()?;
    std::fs::canonicalize(&path).ok().or_else(|| {
        let name = path.file_name()?;
        let directory = litehit_core::facts::file::directory_of(&path);
        Some(std::fs::canonicalize(directory).ok()?.join(name))
    })
}

/// The exit status for a run that a signal interrupted (128 + the signal), if it was one.
#[must_use]
pub fn interrupted_exit_status(error: &color_eyre::Report) -> Option<u8> {
    error
        .chain()
        .find_map(|cause| cause.downcast_ref::<replay::Interrupted>())
        .and_then(|interrupted| u8::try_from(128 + interrupted.signal).ok())
}

/// Whether the error is a closed stdout (`litehit query ... - | head`), which is not a failure.
#[must_use]
pub fn is_broken_pipe(error: &color_eyre::Report) -> bool {
    error.chain().any(|cause| {
        let kind = match cause.downcast_ref::<std::io::Error>() {
            Some(io) => Some(io.kind()),
            // `serde_json::to_writer` wraps the I/O error without exposing it as a source.
            None => cause
                .downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind),
        };
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// One line: every cause of the chain joined by `: ` (the CLI's error message format).
///
/// No cause repeats another's text: every error type wraps its cause either
/// `#[error(transparent)]` or as a `#[source]` left out of its own message, never both
/// (`tests` check the rule on every error enum's variants).
#[must_use]
pub fn error_message(error: &color_eyre::Report) -> String {
    error
        .chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

/// An error and its sources joined by `: `, for a message that adds to the error's text
/// (the same format as [`error_message`]).
pub(crate) fn chain_text(error: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(error), |cause| cause.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

/// Names the config keys that neither upstream nor LiteHit knows (upstream ignores them, and
/// so does LiteHit; a warning catches a typo such as `trace_fle_path`).
pub(crate) fn warn_unknown_config_keys(config_path: &std::path::Path, unknown_keys: &[String]) {
    use std::io::Write as _;
    for key in unknown_keys {
        let _ = writeln!(
            std::io::stderr(),
            "litehit: warning: {}: unknown key {key:?} ignored (as upstream does)",
            config_path.display()
        );
    }
}

/// FACTS arguments of `query` and `mrc` with their globs expanded
/// ([`litehit_report::expand_facts_globs`]).
pub(crate) fn expand_facts_globs(
    paths: &[std::path::PathBuf],
) -> color_eyre::Result<Vec<std::path::PathBuf>> {
    litehit_report::expand_facts_globs(paths).map_err(|error| eyre!(error))
}

/// The OPT facts to read beside `facts_paths` (the LRU facts): `--opt`'s, one per facts
/// file; else, unless `--no-opt`, the `NAME.opt.csv` beside each when every one has it (said
/// on stderr); else none. `refused` names what cannot take them (e.g. `--window`): typed
/// `--opt` is then an error, and siblings are not looked for.
pub(crate) fn opt_facts(
    arg: &crate::cli::query_args::OptArg,
    facts_paths: &[std::path::PathBuf],
    refused: Option<&str>,
) -> color_eyre::Result<Vec<std::path::PathBuf>> {
    if !arg.files.is_empty() {
        if let Some(refused) = refused {
            bail!("--opt: {refused} does not compare policies (leave out --opt)");
        }
        if arg.files.len() != facts_paths.len() {
            bail!(
                "--opt: {} OPT facts files for {} facts files: give one per facts file (shard), \
                 in the same order",
                arg.files.len(),
                facts_paths.len()
            );
        }
        let opt = arg
            .files
            .iter()
            .map(|path| litehit_core::facts::file::facts_input_path(path))
            .collect::<Vec<_>>();
        if let Some(path) = opt
            .iter()
            .find(|path| facts_paths.iter().any(|lru| same_file(lru, path)))
        {
            bail!(
                "--opt {}: that is a facts file already read as LRU's",
                path.display()
            );
        }
        // `query X.opt.csv --opt X.csv`: the files named the other way round, which the
        // same-trace check cannot see (both policies hit alike at unlimited capacity).
        if let Some((lru, opt)) = facts_paths.iter().zip(&opt).find(|(lru, opt)| {
            same_file(lru, &litehit_core::facts::file::opt_facts_path(opt))
                || *lru == &litehit_core::facts::file::opt_facts_path(opt)
        }) {
            bail!(
                "--opt {}: {} is the OPT facts written beside it, so the two look swapped: \
                 give the LRU facts first and the OPT facts (`*.opt.csv`) to --opt",
                opt.display(),
                lru.display()
            );
        }
        return Ok(opt);
    }
    if arg.no_opt || refused.is_some() {
        return Ok(Vec::new());
    }
    let siblings = litehit_report::opt_siblings(facts_paths).unwrap_or_default();
    for path in &siblings {
        note(Some(&format!(
            "reading the OPT facts beside: {} (--no-opt leaves them out)",
            path.display()
        )));
    }
    Ok(siblings)
}

/// Shards of one replay are separate files; the same file twice (as FACTS and again as a
/// `--shard`, say) would count every request twice and skew every rate, so it is refused.
pub(crate) fn refuse_repeated_facts(paths: &[std::path::PathBuf]) -> color_eyre::Result<()> {
    for (index, path) in paths.iter().enumerate() {
        if paths[..index].iter().any(|other| same_file(other, path)) {
            bail!(
                "{} is given twice: its requests would be counted twice",
                path.display()
            );
        }
    }
    Ok(())
}

/// Prints on stderr the note for lanes with rows in several of `paths` (a facts file split by
/// rows is fine; two overlapping shardings read together are not, and look the same).
pub(crate) fn note_lanes_in_several_files(
    lanes: &[litehit_report::LaneFingerprint],
    paths: &[std::path::PathBuf],
) {
    note(litehit_report::several_files_note(lanes, paths).as_deref());
}

/// Prints a note (`pool_detect`'s) on stderr, each of its lines after the `litehit: ` prefix.
pub(crate) fn note(note: Option<&str>) {
    use std::io::Write as _;
    for line in note.into_iter().flat_map(str::lines) {
        let _ = writeln!(std::io::stderr(), "litehit: {line}");
    }
}

/// Warns on stderr, once per geometry, of every implausible KV size per token among
/// `geometries` (`(block_bytes, block_size_tokens)`): the rule is the core's
/// ([`litehit_core::config::ImplausibleKvSize`]).
pub(crate) fn warn_implausible_kv_sizes(geometries: impl IntoIterator<Item = (u64, u64)>) {
    for warning in litehit_core::config::ImplausibleKvSize::distinct(geometries) {
        note(Some(&format!("warning: {warning}")));
    }
}

/// Refuses an input named as litehit's temp files are (`.NAME.PID.RANDOM.tmp`): it may be a
/// publication in progress, or a killed run's that the next writer of `NAME` removes.
pub(crate) fn refuse_temp_input(path: &std::path::Path) -> color_eyre::Result<()> {
    if litehit_core::facts::file::is_temp_path(path) {
        bail!(
            "{}: named as litehit's temp files are (.NAME.PID.RANDOM.tmp), which a writer may \
             remove; rename it",
            path.display()
        );
    }
    Ok(())
}

/// An opened trace and its format: the one forced, else detected from its first line.
pub(crate) struct OpenedTrace {
    pub(crate) reader: Box<dyn std::io::Read + Send>,
    pub(crate) format: litehit_core::formats::TraceFormat,
}

/// Opens `path` (`-` = standard input) once and, unless `forced`, detects its format from
/// its first non-blank line, keeping those bytes for the replay.
pub(crate) fn open_and_detect(
    path: &std::path::Path,
    forced: Option<litehit_core::formats::TraceFormat>,
) -> color_eyre::Result<OpenedTrace> {
    let reader = open_trace(path).wrap_err_with(|| format!("opening trace {}", path.display()))?;
    if let Some(format) = forced {
        return Ok(OpenedTrace { reader, format });
    }
    let peeked =
        peek_first_line(reader).wrap_err_with(|| format!("reading trace {}", path.display()))?;
    if peeked.first_line_cut {
        // Cut short, the line is no JSON whatever it holds: say so rather than where it broke.
        bail!(
            "{}: line {} is longer than {} MiB, the most read to detect the format (or the file \
             is not a text trace); pass --format (and a --max-line-bytes above its length) to \
             read it whole",
            path.display(),
            peeked.first_line_number,
            litehit_core::formats::MAX_PEEK_BYTES >> 20
        );
    }
    let format = format_of_first_line(path, peeked.first_line.as_deref())?;
    Ok(OpenedTrace {
        reader: peeked.reader,
        format,
    })
}

/// The format of the first non-blank line of `path` (decompressing `.gz` / `.zst`).
pub fn detect_trace_format(
    path: &std::path::Path,
) -> color_eyre::Result<litehit_core::formats::TraceFormat> {
    open_and_detect(path, None).map(|opened| opened.format)
}

fn format_of_first_line(
    path: &std::path::Path,
    first_line: Option<&[u8]>,
) -> color_eyre::Result<litehit_core::formats::TraceFormat> {
    let Some(line) = first_line else {
        bail!(
            "{}: trace contains no valid Request/Get events (it is empty)",
            path.display()
        );
    };
    detect_format(line).ok_or_else(|| {
        if line.trim_ascii_end() == litehit_core::facts::file::FACTS_HEADER.as_bytes() {
            eyre!(
                "{}: this is a facts file (what `litehit replay` writes), not a trace: read it \
                 with `litehit query` or `litehit mrc`",
                path.display()
            )
        } else if looks_like_a_config(line) {
            eyre!(
                "{}: this looks like a config file, not a trace: `litehit replay CONFIG` (without \
                 --out) or `litehit watch --config CONFIG` reads it",
                path.display()
            )
        } else if let Err(error) = serde_json::from_slice::<serde::de::IgnoredAny>(line) {
            // Every format is JSON lines: the line is broken, whatever format it meant.
            eyre!(
                "{}: line 1: invalid JSON: {error} (every trace format is JSON lines)",
                path.display()
            )
        } else {
            eyre!(
                "{}: cannot tell the trace format from its first line; pass --format \
                 (standard, mooncake, bailian, kvcm, lmcache)",
                path.display()
            )
        }
    })
}

/// A first line that opens a JSON document across lines (`{` alone) or names a config's
/// keys: a config given where a trace was expected.
pub(crate) fn looks_like_a_config(first_line: &[u8]) -> bool {
    let line = first_line.trim_ascii();
    line == b"{"
        || [
            &b"\"trace_file_path\""[..],
            b"\"instance_groups\"",
            b"\"instances\"",
        ]
        .iter()
        .any(|key| line.windows(key.len()).any(|window| window == *key))
}
