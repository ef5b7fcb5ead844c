//! Arguments of `litehit completions` and `litehit man`: text generated from this clap
//! definition, so completions and man pages can never drift from the flags.

use std::path::PathBuf;

/// `litehit completions SHELL`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
#[command(after_long_help = "Examples:\n  \
litehit completions bash > ~/.local/share/bash-completion/completions/litehit\n  \
litehit completions zsh > ~/.zfunc/_litehit        # with fpath+=~/.zfunc before compinit\n  \
litehit completions fish > ~/.config/fish/completions/litehit.fish")]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `litehit man [--out DIR]`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
#[command(after_long_help = "Examples:\n  \
litehit man | man -l -                       # read litehit(1) now\n  \
litehit man --out ~/.local/share/man/man1    # litehit.1, litehit-replay.1, …")]
pub struct ManArgs {
    /// Write `litehit.1` and one `litehit-SUBCOMMAND.1` per subcommand into DIR (created when
    /// missing), each published atomically. Default: print `litehit.1` on stdout
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}
