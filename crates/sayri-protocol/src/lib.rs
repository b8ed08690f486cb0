//! Sayri's wire protocol (see `PROTOCOL.md` at the repository root).
//!
//! Every front-end (CLI, orb, web bubble, gateways) speaks this protocol to the daemon over
//! `sayri-daemon.sock`: one JSON object per `\n`-terminated UTF-8 line (NDJSON).
//! This crate holds only data and codecs; it performs no I/O.

pub mod level;
pub mod names;

pub use level::SandboxLevel;

/// Version of the wire protocol, reported by `version` and `status` as `protocol_version`.
/// Bumped when a command or event changes shape incompatibly.
pub const PROTOCOL_VERSION: u32 = 1;
