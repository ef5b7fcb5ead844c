//! `litehit query`: glue from [`QueryArgs`] to [`query_facts_files`]; no analysis here.

use std::io;

use color_eyre::eyre::{WrapErr, bail, eyre};

use super::writes_over;
use crate::cli::query_args::QueryArgs;
use crate::output::query_jsonl::{QueryError, QueryOptions, QuerySlots, query_facts_files};
use litehit_core::facts::file::{is_standard_output, write_atomically};
use litehit_core::grammar::{GrammarError, parse_capacity_gb};

/// Runs the facts query: JSONL to OUT (atomically) or to stdout for `-`.
pub fn run(args: &QueryArgs) -> color_eyre::Result<()> {
    // `query FACTS 10 40`: the first capacity would silently become the output file.
    if args.out.as_os_str() != "-" && parse_capacity_gb(&args.out.to_string_lossy()).is_ok() {
        bail!(
            "OUT {} looks like a capacity: the output file comes before the capacities \
             (litehit query FACTS OUT CAPACITY_GB..., OUT - for stdout; ./{} for a file of \
             that name)",
            args.out.display(),
            args.out.display()
        );
    }
    let slots = slots(args)?;
    let options = QueryOptions {
        summary_only: args.summary_only,
    };
    let facts_paths = args.facts_paths();
    super::refuse_repeated_facts(&facts_paths)?;
    facts_paths
        .iter()
        .try_for_each(|path| super::refuse_temp_input(path))?;
    // `-`, or stdout under another name (`/dev/stdout`): through the stdout handle, which
    // shares the shell's file offset (`>>`) and the process's other output.
    let to_stdout = is_standard_output(&args.out);
    if let Some(input) = facts_paths
        .iter()
        .find(|input| writes_over(&args.out, input))
    {
        bail!(
            "{}: the output is a facts file being read; it would be overwritten (name another \
             OUT, or - for stdout)",
            input.display()
        );
    }
    if to_stdout {
        query_facts_files(&facts_paths, slots, options, io::stdout())
            .map(|_| ())
            .wrap_err("facts query failed")?;
    } else {
        write_atomically(&args.out, |out| {
            query_facts_files(&facts_paths, slots, options, out).map(|_| ())
        })
        .map_err(|e: QueryError| eyre!(e))
        .wrap_err("facts query failed")?;
        println!("facts query done: {}", args.out.display());
    }
    Ok(())
}

/// The GB slots (in argument order) and the block slots.
fn slots(args: &QueryArgs) -> color_eyre::Result<QuerySlots> {
    let capacity_gb = args
        .capacity_gb
        .iter()
        .map(|arg| {
            parse_capacity_gb(arg).map_err(|error| {
                let hint = if matches!(error, GrammarError::WrongKind { .. }) {
                    "; block counts go in --capacity-blocks"
                } else {
                    ""
                };
                eyre!(
                    "invalid capacity_gb: {arg} (binary GB such as 40, 0.5 or 40GB; -1 or inf \
                     = unlimited{hint})"
                )
            })
        })
        .collect::<color_eyre::Result<Vec<_>>>()?;
    let slots = QuerySlots {
        capacity_gb,
        capacity_blocks: args.capacity_blocks.clone(),
    };
    if slots.is_empty() {
        bail!("no capacity given: pass CAPACITY_GB values and/or --capacity-blocks");
    }
    Ok(slots)
}
