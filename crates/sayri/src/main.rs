//! `sayri`: the daemon and the CLI (see `sayri --help`).

fn main() -> std::process::ExitCode {
    // The sandbox's single-threaded exec helper: isolation is applied here, before anything
    // else starts a thread (see `sayri_sandbox::exec_helper_main`).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == sayri_sandbox::EXEC_HELPER_ARG)
    {
        sayri_sandbox::exec_helper_main(&args[2..]);
    }
    sayri::cli::main()
}
