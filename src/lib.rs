//! The `litehit` command: what users type ([`cli`]), the glue that runs each subcommand
//! ([`commands`]) and what is printed ([`output`]).
//!
//! The analysis lives in `litehit-core`, the live monitor in `litehit-live` and its screen
//! in `litehit-tui`; this crate only turns a command line into calls to them and their
//! results into files and text. It is the one crate that uses `clap`, `color-eyre` and
//! `indicatif`. A library only so the integration tests and benchmarks can reach
//! `cli::Cli`, the commands and the output writers; nothing here is a stable API.
#![warn(clippy::unwrap_used)]

pub mod cli;
pub mod commands;
pub mod output;
