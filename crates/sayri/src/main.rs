//! `sayri`: the daemon and the CLI.
//!
//! TEMPORARY wiring from the `permissions` branch so `sayri permissions …` can be tried; the
//! integration lead replaces it with the real CLI and the SQLite approval store.

mod cli {
    pub mod permissions;
}

use clap::{Parser, Subcommand};
use sayri_core::ports::{Approval, ApprovalStore, StoreError};

#[derive(Parser)]
#[command(name = "sayri", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Top>,
}

#[derive(Subcommand)]
enum Top {
    /// Check commands against permission rules; list or forget saved approvals.
    #[command(subcommand)]
    Permissions(cli::permissions::PermissionsCommand),
}

/// Placeholder until the SQLite store is wired: no saved approvals.
struct NoStore;

impl ApprovalStore for NoStore {
    fn approvals_for(&self, _: &str) -> Result<Vec<Approval>, StoreError> {
        Ok(Vec::new())
    }
    fn all_approvals(&self) -> Result<Vec<Approval>, StoreError> {
        Ok(Vec::new())
    }
    fn add_approval(&self, _: &Approval) -> Result<(), StoreError> {
        Err(StoreError(
            "the approval store is not wired in this build".into(),
        ))
    }
    fn forget_approvals(&self, _: Option<&str>, _: &str) -> Result<usize, StoreError> {
        Ok(0)
    }
}

fn main() {
    match Cli::parse().command {
        Some(Top::Permissions(cmd)) => std::process::exit(cli::permissions::run(&cmd, &NoStore)),
        None => println!("sayri {}", env!("CARGO_PKG_VERSION")),
    }
}
