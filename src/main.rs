//! Temporary wiring on the `tui` branch (the lead wires `Command::{Watch, Demo}` in `cli`).
#![warn(clippy::unwrap_used)]

use std::process::ExitCode;

use clap::Parser as _;
use litehit::cli::watch_args::{DemoArgs, WatchArgs};

#[derive(Debug, clap::Parser)]
#[command(name = "litehit", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    Watch(WatchArgs),
    Demo(DemoArgs),
}

fn main() -> ExitCode {
    if let Err(err) = color_eyre::install() {
        eprintln!("litehit: {err}");
    }
    let result = match Cli::parse().command {
        Command::Watch(args) => litehit::commands::watch::run(&args),
        Command::Demo(args) => litehit::commands::demo::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("litehit: {err:?}");
            ExitCode::from(2)
        }
    }
}
