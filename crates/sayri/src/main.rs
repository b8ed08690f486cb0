//! `sayri`: the daemon and the CLI (see `sayri --help`).

fn main() -> std::process::ExitCode {
    sayri::cli::main()
}
