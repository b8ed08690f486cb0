//! The `sayri` binary's library half: the daemon, the IPC client and the CLI.
//!
//! `main.rs` only calls [`cli::main`]. The library exists so integration tests and the bench
//! binary can embed a daemon with extra handlers and reuse the client.

pub mod agents;
pub mod assets;
pub mod brain;
pub mod cli;
pub mod client;
pub mod config_file;
pub mod daemon;
pub mod footprint;
pub mod gateways;
pub mod local_model;
pub mod logging;
pub mod notify;
pub mod paths;
pub mod policies;
pub mod routines;
pub mod settings_check;
pub mod skills;
pub mod store_health;
pub mod stored_secrets;
pub mod supervisor;
pub mod voice;
