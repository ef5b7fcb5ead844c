//! Command-line interface (clap derive).
