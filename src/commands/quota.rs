//! `litehit query --quota-total`: glue from the flags to `litehit_report::plan_quotas`; the
//! line and the table come from `output::quota`.

use std::io::Write as _;

use color_eyre::eyre::{WrapErr as _, bail, eyre};

use crate::cli::query_args::QueryArgs;
use crate::output::quota::{quota_line, render_quota_table};
use litehit_core::facts::file::{is_standard_output, write_atomically};
use litehit_core::projector::Capacity;
use litehit_report::{MrcBuilder, QuotaRequest, plan_quotas};

/// Plans the quotas of `total` over the facts' lanes and writes the line to OUT.
pub fn run(args: &QueryArgs, total: Capacity) -> color_eyre::Result<()> {
    let facts = super::expand_facts_globs(&args.facts_paths())?;
    super::refuse_repeated_facts(&facts)?;
    if let Some(input) = facts
        .iter()
        .find(|input| super::writes_over(&args.out, input))
    {
        bail!(
            "{}: the output is a facts file being read; it would be overwritten (name another \
             OUT, or - for stdout)",
            input.display()
        );
    }
    let mut builder = MrcBuilder::new().with_pool(args.pool.rule());
    builder
        .add_facts_files(&facts)
        .wrap_err("planning the quotas failed")?;
    let curves = builder
        .try_finish()
        .wrap_err("planning the quotas failed")?;
    let request = args.quota.request().unwrap_or(QuotaRequest {
        total,
        floors: Vec::new(),
        step: None,
    });
    let plan = plan_quotas(&curves, &request)
        .map_err(|error| eyre!(error))
        .wrap_err("planning the quotas failed")?;
    let line = quota_line(&plan);
    let table = render_quota_table(&plan);
    if is_standard_output(&args.out) {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(&line)
            .and_then(|()| stdout.flush())
            .wrap_err("writing the quota line to standard output")?;
        eprint!("{table}");
    } else {
        write_atomically(&args.out, |out| out.write_all(&line).map_err(|e| eyre!(e)))
            .wrap_err_with(|| format!("writing {}", args.out.display()))?;
        print!("{table}");
    }
    super::note(curves.pool_note.as_deref());
    Ok(())
}
