//! `litehit`: thin main — install error hooks, parse the command line, run, map to an exit code.
#![warn(clippy::unwrap_used)]

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    litehit::commands::install_error_hooks();
    match litehit::commands::run(litehit::cli::Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if litehit::commands::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("litehit: {}", litehit::commands::error_message(&error));
            ExitCode::from(2)
        }
    }
}
