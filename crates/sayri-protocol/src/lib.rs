//! Sayri's wire protocol (see `PROTOCOL.md` at the repository root).
//!
//! Every front-end (CLI, orb, web bubble, gateways) speaks this protocol to the daemon over
//! `sayri-daemon.sock`: one JSON object per `\n`-terminated UTF-8 line (NDJSON).
//! This crate holds only data and codecs; it performs no I/O.
//!
//! ```
//! use sayri_protocol::{Response, ndjson};
//! let line = ndjson::encode_line(&Response::ok("pong".into(), 1.into())).unwrap();
//! assert_eq!(line, b"{\"ok\":true,\"result\":\"pong\",\"id\":1}\n");
//! ```

pub mod child_secrets;
pub mod event;
pub mod legacy;
pub mod level;
pub mod message;
pub mod names;
pub mod ndjson;
pub mod params;
pub mod reply;
pub mod shape;

pub use level::SandboxLevel;
pub use message::{ErrorCode, Event, ProtocolError, Request, Response, ServerMessage};
pub use params::Params;

/// Version of the wire protocol, reported by `version` and `status` as `protocol_version`.
/// Bumped when a command or event changes shape incompatibly.
pub const PROTOCOL_VERSION: u32 = 1;
