//! `litehit`: thin main — install error hooks, parse the command line, run, map to an exit code.
//!
//! Exit codes follow upstream's tools: 0 on success, 1 on any failure (a bad command line
//! too), so scripts written against them keep working.
#![warn(clippy::unwrap_used)]

use std::io::Write as _;
use std::process::ExitCode;

fn main() -> ExitCode {
    // A chat-template renderer for `--format openai` (litehit_tokenize::sandbox): no CLI.
    #[cfg(feature = "tokenize")]
    if litehit_tokenize::sandbox::is_renderer_invocation() {
        return match litehit_tokenize::sandbox::serve(std::io::stdin(), std::io::stdout()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    litehit::commands::install_error_hooks();
    let (mut cli, matches) = match litehit::cli::Cli::parse_args() {
        Ok(parsed) => parsed,
        Err(usage) => {
            // `--help` and `--version` print to stdout and succeed; anything else is a failure.
            let _ = usage.print();
            return if usage.use_stderr() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // The defaults file fills in the flags that were not typed (docs/CONFIG.md).
    let result = litehit::cli::defaults_file::apply_defaults(&mut cli, &matches)
        .map_err(color_eyre::Report::from)
        .and_then(|()| litehit::commands::run(cli));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if litehit::commands::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            // `eprintln!` would panic if stderr is gone (a closed terminal).
            let _ = writeln!(
                std::io::stderr(),
                "litehit: {}",
                litehit::commands::error_message(&error)
            );
            litehit::commands::interrupted_exit_status(&error)
                .map_or(ExitCode::FAILURE, ExitCode::from)
        }
    }
}
