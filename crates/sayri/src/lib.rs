//! The `sayri` command line. Its only public item is the entry point, [`main`], which the
//! `sayri` binary calls (and the orb's GUI tests, which run the real command line as a role of
//! their own executable). The daemon is the `sayri-daemon` library; what every front-end shares
//! is `sayri-client`.

mod cli;

pub use cli::main;
