//! `sayri-orb`: Sayri's desktop face — an animated orb and its card ("cajita") — as a pure
//! client of the daemon's NDJSON protocol. It never embeds the engine: every piece of state
//! comes from the daemon's events and responses.
//!
//! * GTK-free: [`view`] (the view model and its reducer), [`markdown`] (the reply's blocks),
//!   [`safe_text`] (how untrusted text is shown), [`link`] (the socket, reconnects, starting the
//!   daemon), [`demo`] (canned event scripts).
//! * GTK: [`ui`] (window, orb drawing, card, settings, tray, screenshots) and [`app`] (the
//!   program's entry point).

pub mod app;
pub mod demo;
pub mod link;
pub mod markdown;
pub mod safe_text;
pub mod ui;
pub mod view;
