//! `sayri sandbox run|check`, as library code so the main `sayri` binary can nest it.

use crate::capabilities;
use crate::launcher::LinuxSandbox;
use crate::settings::LinuxSandboxSettings;
use clap::{Args, Subcommand};
use sayri_core::ports::{ExecRequest, ExecStatus, Sandbox};
use sayri_protocol::SandboxLevel;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// `sayri sandbox …` subcommands.
#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Run one command at an isolation level; exits with the command's exit code
    /// (126 when refused, 124 on timeout).
    Run(RunArgs),
    /// Report what each isolation level can guarantee on this machine.
    Check(CheckArgs),
}

/// Arguments of `sayri sandbox run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Isolation level: 0-4, a name such as LEVEL_1_READONLY, or no_exec/readonly/isolated/host/root.
    #[arg(long, short = 'l')]
    pub level: SandboxLevel,
    /// Level 2: writable workspace (default `$SAYRI_STATE_DIR/sandboxes/<agent>`); levels 3-4: working directory.
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Agent id naming the default level-2 workspace.
    #[arg(long, default_value = "cli")]
    pub agent: String,
    /// Levels 1-2: keep the host network.
    #[arg(long, overrides_with = "no_network")]
    pub network: bool,
    /// Levels 1-2: no network (the default).
    #[arg(long = "no-network", overrides_with = "network")]
    pub no_network: bool,
    /// Wall-clock limit in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    /// Output cap in bytes.
    #[arg(long, default_value_t = crate::settings::DEFAULT_OUTPUT_LIMIT)]
    pub output_limit: usize,
    /// Levels 1-2: read only the system directories, the writable places and these paths
    /// (repeatable; without it the command reads everything but the hidden paths).
    #[arg(long = "read", value_name = "PATH")]
    pub read: Vec<PathBuf>,
    /// Extra environment variable for the command (KEY=VALUE; repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Print the whole result as JSON.
    #[arg(long)]
    pub json: bool,
    /// The command (joined with spaces and run by `bash -c`).
    #[arg(trailing_var_arg = true, required = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// Arguments of `sayri sandbox check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs a subcommand; returns the process exit code.
pub async fn run_cli(cmd: SandboxCommand, settings: LinuxSandboxSettings) -> i32 {
    let sandbox = LinuxSandbox::new(settings);
    match cmd {
        SandboxCommand::Check(a) => match sandbox.capabilities().await {
            Ok(r) => {
                if a.json {
                    println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
                } else {
                    print!("{}", capabilities::render(&r));
                }
                if r.levels[1].guaranteed && r.levels[2].guaranteed {
                    0
                } else {
                    1
                }
            }
            Err(e) => {
                eprintln!("sayri sandbox check: {e}");
                1
            }
        },
        SandboxCommand::Run(a) => {
            let mut env = Vec::new();
            for kv in &a.env {
                match kv.split_once('=') {
                    Some((k, v)) if !k.is_empty() => env.push((k.to_string(), v.to_string())),
                    _ => {
                        eprintln!("sayri sandbox run: --env expects KEY=VALUE, got {kv:?}");
                        return 2;
                    }
                }
            }
            if !(a.timeout.is_finite() && a.timeout > 0.0) {
                eprintln!("sayri sandbox run: --timeout must be a positive number of seconds");
                return 2;
            }
            let req = ExecRequest {
                command: a.command.join(" "),
                level: a.level,
                agent_id: a.agent.clone(),
                workspace: a.workspace.clone(),
                timeout: Duration::from_secs_f64(a.timeout),
                allow_network: a.network && !a.no_network,
                env,
                allowed_secrets: Vec::new(),
                output_limit: a.output_limit,
                readable: (!a.read.is_empty()).then(|| a.read.clone()),
            };
            let cancel = CancellationToken::new();
            let c2 = cancel.clone();
            let ctrl_c = tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    c2.cancel();
                }
            });
            let r = sandbox.run(req, cancel).await;
            ctrl_c.abort();
            let output = r.output_text();
            if a.json {
                let size = r.output_size();
                let v = serde_json::json!({
                    "status": r.status,
                    "exit_code": r.exit_code,
                    "output": output,
                    "output_bytes": size.bytes,
                    "output_lines": size.lines,
                    "duration_ms": r.duration.as_secs_f64() * 1000.0,
                    "background_pid": r.background_pid,
                    "level": a.level,
                });
                println!("{v}");
            } else if r.status == ExecStatus::Denied {
                eprintln!("{output}");
            } else {
                let mut o = std::io::stdout().lock();
                let _ = o.write_all(output.as_bytes());
                if !output.is_empty() && !output.ends_with('\n') {
                    let _ = o.write_all(b"\n");
                }
            }
            match r.status {
                ExecStatus::Denied => 126,
                ExecStatus::Timeout => 124,
                ExecStatus::Killed => 130,
                _ => r.exit_code.unwrap_or(1),
            }
        }
    }
}
