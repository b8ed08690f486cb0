//! The environment of a speech engine process: built, not inherited.
//!
//! The daemon's own environment may hold whatever the shell that started it exported (provider
//! keys, tokens). A speech engine reads text on stdin and writes audio on stdout; it gets only
//! what a program needs to find itself, its libraries and its locale.

use std::ffi::OsString;

/// Variables a speech engine keeps from the daemon's environment (`LC_*` too).
pub const KEPT: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "LD_LIBRARY_PATH",
    "ESPEAK_DATA_PATH",
];

/// The kept part of the current environment.
pub fn kept() -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| {
            k.to_str()
                .is_some_and(|k| KEPT.contains(&k) || k.starts_with("LC_"))
        })
        .collect()
}

/// Clears `cmd`'s environment and gives it the kept variables.
pub fn apply(cmd: &mut std::process::Command) {
    cmd.env_clear().envs(kept());
}
