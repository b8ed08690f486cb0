//! What every Sayri front-end needs to talk to the daemon, and nothing of the daemon itself:
//!
//! * [`paths`] — where Sayri keeps things ([`Paths::from_env`]: config, state and runtime
//!   directories, the socket paths), private directories checked and made 0700.
//! * [`client`] — the NDJSON client of `sayri-daemon.sock` ([`Client`]: `ready` greeting,
//!   owner check of the socket, one request at a time with its events).
//! * [`autostart`] — [`connect_or_start`]: connect, or start `sayri daemon` in the background
//!   first (one client at a time starts it).
//! * [`terminal_text`] — [`terminal_safe`]: model text made safe to print on a terminal or show
//!   in a widget.
//! * [`logging`] — the `tracing` set-up every Sayri program shares (`SAYRI_LOG`).
//!
//! It links no database, web server, shell parser or assistant core: a front-end built on it
//! stays small.

pub mod autostart;
pub mod client;
pub mod logging;
pub mod paths;
pub mod terminal_text;

pub use autostart::connect_or_start;
pub use client::{Client, ClientError};
pub use paths::{Paths, PathsError};
pub use terminal_text::terminal_safe;
