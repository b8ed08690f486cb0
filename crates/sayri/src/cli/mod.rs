//! The `sayri` command line (clap). Exit codes: 0 ok, 1 error (one line on stderr), 2 usage;
//! `sayri daemon` exits [`EX_CONFIG`] when the settings file is invalid.
//!
//! Client commands connect to the daemon, starting it in the background when it is not running
//! (see [`autostart`]), unless `--no-start` is given.

pub(crate) mod agents;
pub(crate) mod ask;
pub(crate) mod config;
pub(crate) mod db;
pub(crate) mod desktop_tools;
pub(crate) mod doctor;
pub(crate) mod doctor_database;
pub(crate) mod doctor_mcp;
pub(crate) mod doctor_security;
pub(crate) mod fix_apparmor;
pub(crate) mod gateway;
pub(crate) mod generate;
pub(crate) mod install;
pub(crate) mod local;
pub(crate) mod mcp;
pub(crate) mod mcp_card;
pub(crate) mod mcp_serve;
pub(crate) mod memory;
pub(crate) mod model_checks;
pub(crate) mod models;
pub(crate) mod permissions;
pub(crate) mod ping;
pub(crate) mod quit;
pub(crate) mod routines;
pub(crate) mod secret_input;
pub(crate) mod sessions;
pub(crate) mod setup;
pub(crate) mod skills;
pub(crate) mod status;
pub(crate) mod vault;
pub(crate) mod voice;
pub(crate) mod voice_models;
pub(crate) mod wake;
pub(crate) mod web;
pub(crate) mod window;

use clap::{Parser, Subcommand};
use sayri_client::paths::Paths;
use std::ops::ControlFlow;
use std::process::ExitCode;

/// Exit status of `sayri daemon` when `sayri.toml` is invalid (`EX_CONFIG` of `sysexits.h`), so
/// a service manager does not restart it in a loop; the message names the file and line.
pub(crate) const EX_CONFIG: i32 = 78;

/// Sayri: a local AI assistant for the Linux desktop.
#[derive(Debug, Parser)]
#[command(
    name = "sayri",
    version,
    about,
    propagate_version = true,
    arg_required_else_help = true
)]
pub(crate) struct Cli {
    /// Do not start the daemon when it is not running; fail instead.
    #[arg(long, global = true)]
    pub no_start: bool,
    /// Ask the desktop front-ends to show, hide or toggle their window, or open the settings.
    #[command(flatten)]
    pub window: window::WindowFlags,
    /// What to do.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the daemon in the foreground (logs to stderr; stop with Ctrl-C or `sayri quit`).
    Daemon,
    /// Check that the daemon answers (prints "pong").
    Ping,
    /// Show the daemon's status.
    Status {
        /// Print the raw status object as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Read or change settings (sayri.toml).
    Config {
        /// get, set or list.
        #[command(subcommand)]
        action: config::ConfigAction,
    },
    /// Stop the daemon.
    Quit,
    /// Stop the daemon and start it again (as the systemd user service when Sayri is
    /// installed as one), e.g. after installing a new `sayri`.
    Restart,
    /// Ask one question; the answer streams to stdout, command steps to stderr.
    Ask {
        /// The question.
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
        /// Agent, session and timeout.
        #[command(flatten)]
        options: ask::AskOptions,
        /// Print the whole result object as JSON instead of streaming text.
        #[arg(long)]
        json: bool,
    },
    /// Stop the running request (its model stream and any running command).
    Interrupt,
    /// Interactive conversation (one question per line).
    Chat {
        /// Agent, session and timeout.
        #[command(flatten)]
        options: ask::AskOptions,
    },
    /// Agents: list, show, use, create (from flags or a sentence), edit, delete, detach.
    Agents {
        /// What to do.
        #[command(subcommand)]
        action: Box<agents::AgentsAction>,
    },
    /// List, show, rename or delete conversations.
    Sessions {
        /// What to do.
        #[command(subcommand)]
        action: sessions::SessionsAction,
    },
    /// Show the system prompt an agent gets.
    Prompt {
        /// What to do.
        #[command(subcommand)]
        action: local::PromptAction,
    },
    /// Learned preferences (what worked for which request).
    Pref {
        /// What to do.
        #[command(subcommand)]
        action: local::PrefAction,
    },
    /// Chat models: local ones Sayri serves itself (list, install), or the endpoint's.
    Models {
        /// What to do.
        #[command(subcommand)]
        action: models::ModelsAction,
    },
    /// Run a command in the sandbox, or check what each isolation level can guarantee here.
    Sandbox {
        /// What to do.
        #[command(subcommand)]
        action: sayri_sandbox::cli::SandboxCommand,
    },
    /// Check commands against permission rules; list or forget saved approvals.
    Permissions {
        /// What to do.
        #[command(subcommand)]
        action: permissions::PermissionsCommand,
    },
    /// Routines: prompts an agent runs on a schedule or at login.
    Routines {
        /// What to do.
        #[command(subcommand)]
        action: routines::RoutinesAction,
    },
    /// Channel gateways (Telegram): create, list, start, stop, pair.
    Gateway {
        /// What to do.
        #[command(subcommand)]
        action: gateway::GatewayAction,
    },
    /// MCP: the servers whose tools agents may call (add, list, show, remove, enable, disable,
    /// test, approve), and Sayri as an MCP server for other clients (serve).
    Mcp {
        /// What to do.
        #[command(subcommand)]
        action: mcp::McpAction,
    },
    /// Long-term memory: short facts you keep for Sayri (add, list, show, edit, forget, search,
    /// export, import; no agent recalls them yet).
    Memory {
        /// What to do.
        #[command(subcommand)]
        action: memory::MemoryAction,
    },
    /// The session database: its state, or rebuilding it when it is corrupt.
    Db {
        /// What to do.
        #[command(subcommand)]
        action: db::DbAction,
    },
    /// The encrypted secrets vault.
    Vault {
        /// What to do.
        #[command(subcommand)]
        action: sayri_vault::cli::VaultCommand,
    },
    // Web bubble.
    /// Serve the chat bubble to your browser on 127.0.0.1 (prints a one-launch login address).
    Web(web::WebArgs),
    // Skills
    /// Skills: list, scan, install, update, remove, read (every install is scanned first).
    Skills {
        /// What to do.
        #[command(subcommand)]
        action: skills::SkillsAction,
    },
    // Voice.
    /// Listen for one utterance and print its transcript (through the daemon, or from a WAV
    /// file with --file).
    Listen(voice::ListenArgs),
    /// Speak text on the speaker, or write the speech to a WAV file.
    Say(voice::SayArgs),
    /// Voice: what is installed and ready, and what to install.
    Voice {
        /// What to do.
        #[command(subcommand)]
        action: voice::VoiceAction,
    },
    /// Wake-word models: list them, or try one on a WAV file or the microphone.
    Wake {
        /// What to do.
        #[command(subcommand)]
        action: wake::WakeAction,
    },
    // Desktop integration.
    /// First-run setup: choose the model server and model, store an API key, and decide what
    /// the assistant may do (nothing is written until you confirm).
    Setup(setup::SetupArgs),
    /// Check settings, daemon, model server, vault, sandbox, voice and desktop, each with its
    /// fix; exits 1 when something needs fixing.
    Doctor {
        /// Print the report as JSON (`{"ok", "checks": [{"id","title","status","detail","fix"}]}`).
        #[arg(long)]
        json: bool,
        /// Install and load the AppArmor profile of the sandbox helper (asks first), so levels
        /// 1-2 work where AppArmor restricts user namespaces.
        #[arg(long)]
        fix_apparmor: bool,
        /// With --fix-apparmor: agree without being asked.
        #[arg(long, requires = "fix_apparmor")]
        yes: bool,
    },
    /// Install Sayri for your user: the systemd user service, the menu launcher, its icon and
    /// the autostart entry (from `ui.autostart` / `ui.autostart_mode`).
    Install(install::InstallArgs),
    /// Remove what `sayri install --user` installed (your data stays unless `--purge`).
    Uninstall(install::UninstallArgs),
    /// Print the completion script for a shell (bash, zsh, fish).
    Completions {
        /// The shell.
        shell: generate::Shell,
    },
    /// Look something up on the web (DuckDuckGo, Wikipedia, ArchWiki); read-only.
    Lookup(desktop_tools::LookupArgs),
    /// Take a screenshot of the whole screen and print where it was saved.
    Screenshot(desktop_tools::ScreenshotArgs),
    /// Show a desktop notification.
    Notify {
        /// The title.
        title: String,
        /// The text under it.
        body: Option<String>,
    },
    /// Print the sayri(1) man page, or write every page into a directory.
    Man {
        /// Write one page per command into this directory instead.
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}

/// Parses the command line, runs it, and maps the outcome to an exit code.
///
/// Every `sayri` process — the daemon, and each command that may hold a secret (`vault`,
/// `web`, `config set provider.api_key`, …) — is made non-dumpable with a core limit of 0
/// before it reads anything: no other process of the user can read its memory or environment or
/// attach to it, and it leaves no core file (see `sayri_sandbox::nondumpable`).
pub fn main() -> ExitCode {
    if let Err(e) = sayri_sandbox::nondumpable::protect() {
        eprintln!("sayri: error: {e}; refusing to run with memory other processes could read");
        return ExitCode::from(1);
    }
    let cli = Cli::parse();
    if cli.command.is_some() && cli.window.any() {
        use clap::CommandFactory;
        Cli::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "--show, --hide, --toggle and --settings are used alone, without a subcommand",
            )
            .exit();
    }
    if !matches!(cli.command, Some(Command::Daemon)) {
        // A client writing into a closed pipe (`sayri sessions list | head -1`) ends quietly,
        // as command-line tools do, instead of panicking. The daemon keeps ignoring SIGPIPE.
        // SAFETY: called before any thread is started; restores the default disposition.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    // Socket activation: the listening socket the service manager passed, taken (and the
    // LISTEN_* variables removed, so no child inherits them) before any thread starts.
    let mut passed = Vec::new();
    if matches!(cli.command, Some(Command::Daemon)) {
        // SAFETY: no thread has been started yet (the runtime and logging come later).
        match unsafe { sd_notify::listen_fds_with_names_and_unset_env() } {
            Ok(fds) => {
                for (fd, name) in fds {
                    // SAFETY: LISTEN_PID named this process: the service manager passed `fd`
                    // to it, and nothing else in this process owns it.
                    let fd = unsafe {
                        <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd)
                    };
                    passed.push((fd, name));
                }
            }
            Err(e) => {
                eprintln!(
                    "sayri: error: the service manager's LISTEN_FDS/LISTEN_PID are invalid ({e}); check sayri.socket"
                );
                return ExitCode::from(1);
            }
        }
    }
    match run(cli, passed) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            // An error may quote a server, a file or a model: shown without terminal controls.
            let msg = format!("{e:#}").replace('\n', " ");
            let msg = sayri_client::terminal_text::terminal_safe(&msg);
            eprintln!("sayri: error: {msg}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli, passed: Vec<(std::os::fd::OwnedFd, String)>) -> anyhow::Result<i32> {
    let paths = Paths::from_env()?;
    let Some(command) = cli.command else {
        let action = cli.window.action();
        return block_on(window::run(&paths, action)).map(|()| 0);
    };
    match run_local(command, &paths, passed)? {
        ControlFlow::Break(code) => Ok(code),
        ControlFlow::Continue(command) => {
            let start = !cli.no_start;
            block_on(run_client(command, paths, start))
        }
    }
}

/// Runs the commands that need no daemon connection (the daemon itself, local files, the vault,
/// installation, generated completions and man pages): `Break` with the exit code, or `Continue`
/// with a command that talks to the daemon.
fn run_local(
    command: Command,
    paths: &Paths,
    passed: Vec<(std::os::fd::OwnedFd, String)>,
) -> anyhow::Result<ControlFlow<i32, Command>> {
    let code = match command {
        Command::Daemon => {
            sayri_client::logging::init("info");
            match sayri_daemon::daemon::run_foreground(paths.clone(), passed) {
                Ok(()) => Ok(0),
                Err(e @ sayri_daemon::daemon::DaemonError::Config(_)) => {
                    // A service manager does not restart a daemon that exits with EX_CONFIG.
                    eprintln!("sayri: error: {}", format!("{e}").replace('\n', " "));
                    Ok(EX_CONFIG)
                }
                Err(e) => Err(e.into()),
            }
        }
        Command::Prompt { action } => local::prompt(paths, action).map(|()| 0),
        Command::Agents { action } if action.is_local() => agents::run_local(paths, *action),
        Command::Pref { action } => local::pref(paths, action).map(|()| 0),
        Command::Permissions { action } if !action.needs_daemon() => {
            paths.ensure_dirs()?;
            let store = sayri_store::Store::open(paths.database())?;
            Ok(permissions::run(&action, paths, &store))
        }
        Command::Skills { action } => skills::run(paths, action),
        Command::Listen(args) if args.file.is_some() => voice::listen_file(paths, &args),
        Command::Say(args) => voice::say(paths, &args),
        Command::Wake { action } => wake::run(paths, &action),
        Command::Install(args) => {
            let socket = match (args.socket_activation, args.no_socket_activation) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            };
            install::install(paths, socket).map(|()| 0)
        }
        Command::Uninstall(args) => install::uninstall(paths, args.purge).map(|()| 0),
        Command::Completions { shell } => {
            generate::completions(shell);
            Ok(0)
        }
        Command::Man { dir } => generate::man(dir.as_deref()).map(|()| 0),
        Command::Vault { action } => {
            paths.ensure_dirs()?;
            let changed = sayri_vault::cli::run(
                &action,
                &sayri_vault::VaultPaths::new(&paths.config_dir, &paths.state_dir),
            )?;
            if let Some(vault) = changed {
                vault::after_change(paths, &vault);
            }
            Ok(0)
        }
        other => return Ok(ControlFlow::Continue(other)),
    };
    code.map(ControlFlow::Break)
}

/// Runs a command through the daemon (started first when `start` and it is not running) and
/// gives its exit code.
async fn run_client(command: Command, paths: Paths, start: bool) -> anyhow::Result<i32> {
    let done = |r: anyhow::Result<()>| r.map(|()| 0);
    match command {
        Command::Ping => done(ping::run(&paths, start).await),
        Command::Status { json } => done(status::run(&paths, start, json).await),
        Command::Config { action } => done(config::run(&paths, start, action).await),
        Command::Quit => done(quit::run(&paths).await),
        Command::Restart => done(quit::restart(&paths).await),
        Command::Ask {
            text,
            options,
            json,
        } => ask::run_ask(&paths, start, &text.join(" "), &options, json).await,
        Command::Interrupt => done(ask::run_interrupt(&paths).await),
        Command::Chat { options } => done(ask::run_chat(&paths, start, &options).await),
        Command::Sessions { action } => done(sessions::run(&paths, start, action).await),
        Command::Db { action } => db::run(&paths, action).await,
        Command::Agents { action } => agents::run(&paths, start, *action).await,
        Command::Models { action } => models::run(&paths, action).await,
        Command::Routines { action } => routines::run(&paths, start, action).await,
        Command::Gateway { action } => done(gateway::run(&paths, start, action).await),
        Command::Mcp { action } => done(mcp::run(&paths, start, action).await),
        Command::Memory { action } => done(memory::run(&paths, start, action).await),
        Command::Listen(args) => voice::listen(&paths, start, &args).await,
        Command::Voice {
            action: voice::VoiceAction::Status { json },
        } => done(voice::status(&paths, json).await),
        Command::Permissions {
            action: permissions::PermissionsCommand::Answer(args),
        } => done(permissions::answer(&paths, &args).await),
        Command::Web(args) => done(web::run(&paths, start, &args).await),
        Command::Setup(args) => setup::run(&paths, args).await,
        Command::Doctor {
            fix_apparmor: true,
            yes,
            ..
        } => fix_apparmor::run(yes),
        Command::Doctor { json, .. } => doctor::run(&paths, json).await,
        Command::Lookup(args) => desktop_tools::lookup(&paths, &args).await,
        Command::Screenshot(args) => desktop_tools::screenshot(&paths, &args).await,
        Command::Notify { title, body } => desktop_tools::notify(&title, body.as_deref()).await,
        Command::Sandbox { action } => {
            let cfg = sayri_daemon::config_file::load(&paths.config_file())?.0;
            Ok(sayri_sandbox::cli::run_cli(
                action,
                sayri_daemon::brain::settings::sandbox_settings(&paths, &cfg),
            )
            .await)
        }
        Command::Daemon
        | Command::Prompt { .. }
        | Command::Pref { .. }
        | Command::Permissions { .. }
        | Command::Vault { .. }
        | Command::Skills { .. }
        | Command::Say(_)
        | Command::Wake { .. }
        | Command::Install(_)
        | Command::Uninstall(_)
        | Command::Completions { .. }
        | Command::Man { .. } => Ok(0),
    }
}

/// Runs a client future on a single-threaded runtime.
fn block_on<T>(f: impl std::future::Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(f)
}

/// Prints a reply (or any value) as pretty JSON for `--json`, with object members sorted by
/// name as the daemon writes them (a typed reply's fields are declared in another order).
pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!(
        "{}",
        serde_json::to_string_pretty(&serde_json::to_value(value)?)?
    );
    Ok(())
}
