//! The Sayri daemon as a library: the server (`sayri daemon`) and the services it runs.
//!
//! What may import what (a module imports only what its layer and the layers below hold):
//!
//! 1. Below everything: the event bus [`bus`] (every event goes to every connected client),
//!    the [`supervisor`] of child programs, [`command_peer`] (who is on the other end of a
//!    socket) and [`offload`] (SQLite calls and file reads off the async worker threads; every
//!    layer above uses it). They import nothing of this crate.
//! 2. The brain and the loaders: [`brain`] (the core wired to its adapters) with
//!    [`config_file`], [`config_values`], [`agents`], [`policies`], [`skills`],
//!    [`stored_secrets`], [`settings_check`], [`local_model`], [`notify`], [`footprint`],
//!    [`assets`], [`desktop_tools`], [`database`], [`store_health`], [`plugins`] (plugin
//!    folders and their manifests). The `sayri` CLI calls the
//!    same loaders the handlers do. [`wire`] turns the daemon's values into the protocol's
//!    reply and event types.
//! 3. The services: [`voice`], [`routines`], [`gateways`] — each gets the brain, the bus and
//!    what else it needs as narrow handles (gateways through [`gateways::Host`]), never the
//!    server's state; they do not import each other.
//! 4. The server, [`daemon`]: sockets, connections, the command table, [`daemon::DaemonState`].
//!    Nothing else imports it; its handlers are private to this crate (a front-end talks to
//!    them over the socket, never by a call).
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
pub mod database;
pub mod desktop_tools;
pub(crate) mod footprint;
pub mod gateways;
pub mod local_model;
pub mod mcp_tools;
pub mod notify;
pub mod offload;
pub mod owned_port;
pub mod plugins;
pub mod policies;
pub mod routines;
pub mod settings_check;
pub mod skills;
pub(crate) mod store_health;
pub mod stored_secrets;
pub mod supervisor;
pub mod ui_plugins;
pub mod voice;
pub mod wire;
