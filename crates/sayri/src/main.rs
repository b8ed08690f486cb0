//! `sayri`: the CLI and `sayri daemon` (see `sayri --help`). The sandbox's exec helper is the
//! separate `sayri-exec` program of the `sayri-sandbox` crate.

fn main() -> std::process::ExitCode {
    sayri::main()
}
