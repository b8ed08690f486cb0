//! The headless brain of Sayri.
//!
//! `sayri-core` makes every decision and touches no socket, file, process or clock itself:
//! it talks to the world only through the traits in [`ports`]. Adapters (`sayri-sandbox`,
//! `sayri-llm`, `sayri-store`, …) implement them; the `sayri` binary wires them together.
//!
//! * [`domain`] — pure decisions: agent profiles, permission rules and shell analysis, prompts.
//! * [`ports`] — the traits adapters implement.
//! * [`engine`] — the ReAct agent loop, its events, and the permission gate.
//! * [`assistant`] — `SayriCore`: active agent and session, turns, interrupt, remote turns.
//! * `static_regex` — the one way a pattern written in this crate is compiled.
//! * [`sync`] — poison-tolerant `lock`/`read`/`write`, the one way Sayri takes a lock.

pub mod assistant;
pub mod domain;
pub mod engine;
pub mod ports;
mod static_regex;
pub mod sync;

pub use sayri_protocol::SandboxLevel;
