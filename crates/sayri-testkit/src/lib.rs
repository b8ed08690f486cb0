//! Test support: a scripted OpenAI-compatible server ([`FakeLlm`]) that replays bytes exactly
//! as scripted, a launcher for a real local model ([`RealModelServer`]), in-memory fakes of
//! `sayri-core`'s ports ([`fakes`]), process helpers for crash tests and guards that stop the
//! processes a test or benchmark starts and find the ones it leaks ([`procs`]), and random setting
//! values for property tests ([`setting_values`]), pseudo-terminals ([`terminal`]), provider-style
//! token counts ([`tokens`]), readers of the chat requests the daemon sends ([`turns`]), a
//! loopback Telegram Bot API server recording every call ([`telegram`]), and a loopback file
//! server that serves ranges, cuts, holds and overflows downloads ([`file_server`]).
//!
//! ```no_run
//! use sayri_testkit::{FakeLlm, Reply, Script, sse};
//! # async fn demo() -> std::io::Result<()> {
//! let server = FakeLlm::start(Script::queue([
//!     Reply::sse(sse::content_stream(&["Hel", "lo"])).with_write_size(7),
//! ])).await?;
//! let base_url = server.base_url(); // http://127.0.0.1:PORT/v1
//! # let _ = base_url; Ok(()) }
//! ```

// Test support only (a dev-dependency of every crate but the benchmark, which is run by
// developers): a fixture that cannot be set up panics, and that panic is the test's report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod fakes;
pub mod file_server;
pub mod procs;
pub mod real_model;
pub mod reply;
pub mod script_file;
pub mod server;
pub mod setting_values;
pub mod skills;
pub mod sse;
pub mod telegram;
pub mod terminal;
pub mod tokens;
pub mod turns;

pub use real_model::{RealModelError, RealModelServer};
pub use reply::{Framing, Reply};
pub use server::{Disconnect, FakeLlm, RecordedRequest, Script};
