//! `sayri`: the daemon and the CLI (see `sayri --help`). The sandbox's exec helper is the
//! separate `sayri-exec` program (`src/bin/sayri-exec.rs`).

fn main() -> std::process::ExitCode {
    sayri::cli::main()
}
