//! `litehit man [--out DIR]`: roff man pages clap_mangen renders from the command line's own
//! definition — `litehit.1` and one `litehit-SUBCOMMAND.1` per subcommand.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::CommandFactory as _;
use color_eyre::eyre::WrapErr as _;

use crate::cli::Cli;
use crate::cli::generate_args::ManArgs;

pub fn run(args: &ManArgs) -> color_eyre::Result<()> {
    let pages = pages()?;
    match &args.out {
        None => {
            let (_, top) = &pages[0];
            let mut out = std::io::stdout().lock();
            out.write_all(top)?;
            out.flush()?;
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).wrap_err_with(|| format!("creating {}", dir.display()))?;
            for (name, page) in &pages {
                let path = dir.join(name);
                write_page(&path, page)?;
            }
        }
    }
    Ok(())
}

/// Every page as (file name, roff text): the top level first, then each subcommand in the
/// order `--help` lists them (`help` itself left out).
pub fn pages() -> color_eyre::Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut command = Cli::command();
    command.build();
    let mut pages = vec![(
        PathBuf::from("litehit.1"),
        render(command.clone(), "litehit")?,
    )];
    for sub in command.get_subcommands() {
        if sub.get_name() == "help" || sub.is_hide_set() {
            continue;
        }
        // The page is titled `litehit-replay`; its synopsis (the bin name `build` set) says
        // `litehit replay`.
        let name = format!("litehit-{}", sub.get_name());
        let page = render(sub.clone(), &name)?;
        pages.push((PathBuf::from(format!("{name}.1")), page));
    }
    Ok(pages)
}

fn render(command: clap::Command, title: &str) -> color_eyre::Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command)
        .title(title.to_owned())
        .render(&mut page)
        .wrap_err("rendering a man page")?;
    Ok(page)
}

fn write_page(path: &Path, page: &[u8]) -> color_eyre::Result<()> {
    litehit_core::facts::file::write_atomically(path, |out| -> color_eyre::Result<()> {
        out.write_all(page)?;
        Ok(())
    })
    .wrap_err_with(|| format!("writing {}", path.display()))
}
