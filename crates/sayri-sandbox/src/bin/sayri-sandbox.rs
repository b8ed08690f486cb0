//! `sayri-sandbox`: the sandbox CLI (`run`, `check`) and the hidden exec-helper mode
//! (`sayri-sandbox __sandbox-exec …`), the same entry points the main `sayri` binary nests.

use clap::Parser;
use sayri_sandbox::cli::{SandboxCommand, run_cli};
use sayri_sandbox::{EXEC_HELPER_ARG, LinuxSandboxSettings, exec_helper_main};
use std::ffi::OsString;

#[derive(Debug, Parser)]
#[command(
    name = "sayri-sandbox",
    about = "Run commands at a Sayri isolation level"
)]
struct Cli {
    #[command(subcommand)]
    cmd: SandboxCommand,
}

fn main() {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == EXEC_HELPER_ARG) {
        exec_helper_main(&args[2..]);
    }
    let cli = Cli::parse();
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("sayri-sandbox: cannot locate its own executable for the helper: {e}");
            std::process::exit(1);
        }
    };
    let settings = LinuxSandboxSettings::from_env(exe, vec![EXEC_HELPER_ARG.into()]);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sayri-sandbox: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = rt.block_on(run_cli(cli.cmd, settings));
    std::process::exit(code);
}
