//! `sayri-exec`: the sandbox's exec helper as a small program of its own. The daemon starts it
//! for every command (`sayri-exec exec <spec-json>`, `sayri-exec probe`); it applies the
//! level's isolation in a fresh single-threaded process and runs `bash -c`. It is also the
//! keeper of every supervised program (`sayri-exec keep <spec-json>`). Keeping it apart
//! from the 20 MB `sayri` binary makes every command start faster. It must be installed next
//! to `sayri` (see `sayri_daemon::brain::settings::exec_helper_path`).

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    sayri_sandbox::exec_helper_main(&args)
}
