//! The Sayri daemon as a library: the server (`sayri daemon`) and the services it runs.
//!
//! Layers, each importing only those below it:
//!
//! 1. Loaders and helpers with no daemon state: [`config_file`], [`config_values`],
//!    [`agents`], [`policies`], [`skills`], [`stored_secrets`], [`settings_check`],
//!    [`local_model`], [`notify`], [`footprint`], [`assets`], [`desktop_tools`],
//!    [`command_peer`], [`supervisor`]. The `sayri` CLI calls the same loaders the handlers do.
//! 2. The event bus, [`bus`]: every event goes to every connected client.
//! 3. [`brain`]: the core wired to its adapters (store, model, sandbox, vault).
//! 4. The services: [`voice`], [`routines`], [`gateways`] — each gets the brain, the bus and
//!    what else it needs as narrow handles (gateways through [`gateways::Host`]), never the
//!    server's state.
//! 5. The server, [`daemon`]: sockets, connections, the command table; its handlers are
//!    private to this crate (a front-end talks to them over the socket, never by a call).
//!
//! Embedding: [`daemon::Daemon::bind`] with [`daemon::default_dispatcher`] (tests and the bench
//! add handlers to the dispatcher), or [`daemon::run_foreground`] as `sayri daemon` does.

pub mod agents;
pub mod assets;
pub mod brain;
pub mod bus;
pub mod command_peer;
pub mod config_file;
pub mod config_values;
pub mod daemon;
pub mod desktop_tools;
pub mod footprint;
pub mod gateways;
pub mod local_model;
pub mod notify;
pub mod policies;
pub mod routines;
pub mod settings_check;
pub mod skills;
pub mod stored_secrets;
pub mod supervisor;
pub mod voice;
