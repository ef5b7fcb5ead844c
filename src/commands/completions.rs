//! `litehit completions SHELL`: the completion script clap_complete generates from the
//! command line's own definition, on stdout.

use std::io::Write as _;

use clap::CommandFactory as _;

use crate::cli::Cli;
use crate::cli::generate_args::CompletionsArgs;

pub fn run(args: &CompletionsArgs) -> color_eyre::Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "litehit", &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(())
}
