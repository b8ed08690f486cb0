//! `sayri completions SHELL` and `sayri man [--dir DIR]`: shell completions and man pages
//! generated from the clap definitions, so they always match the commands.

use crate::cli::Cli;
use anyhow::Context;
use clap::CommandFactory;
use std::path::Path;

/// Shells completions are generated for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Shell {
    /// Bash (`source <(sayri completions bash)`, or save as
    /// `~/.local/share/bash-completion/completions/sayri`).
    Bash,
    /// Zsh (save as `_sayri` in a directory on `$fpath`).
    Zsh,
    /// Fish (save as `~/.config/fish/completions/sayri.fish`).
    Fish,
}

/// Prints the completion script for `shell` to stdout.
pub(crate) fn completions(shell: Shell) {
    let mut cmd = Cli::command();
    let out = &mut std::io::stdout();
    match shell {
        Shell::Bash => clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, "sayri", out),
        Shell::Zsh => clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, "sayri", out),
        Shell::Fish => clap_complete::generate(clap_complete::Shell::Fish, &mut cmd, "sayri", out),
    }
}

/// Prints the `sayri(1)` page (roff) to stdout, or, with `dir`, writes one page per command
/// and subcommand there (`sayri.1`, `sayri-ask.1`, `sayri-config-set.1`, …).
///
/// # Errors
/// The directory cannot be created or written.
pub(crate) fn man(dir: Option<&Path>) -> anyhow::Result<()> {
    let cmd = Cli::command();
    match dir {
        None => {
            clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?;
        }
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
            clap_mangen::generate_to(cmd, d)
                .with_context(|| format!("cannot write man pages into {}", d.display()))?;
            println!("wrote the man pages into {}", d.display());
        }
    }
    Ok(())
}
