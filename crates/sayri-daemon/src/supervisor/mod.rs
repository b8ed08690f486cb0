//! The supervisor: long-running child programs the daemon starts, restarts and stops — the
//! local model server, gateway processes, plugin background services.
//!
//! A feature describes its program with a [`ChildSpec`] and hands it to the daemon's one
//! [`Supervisor`] (`DaemonState::supervisor`):
//!
//! ```no_run
//! # async fn demo(supervisor: &sayri_daemon::supervisor::Supervisor) -> Result<(), sayri_daemon::supervisor::SupervisorError> {
//! use sayri_daemon::supervisor::ChildSpec;
//! let spec = ChildSpec::new("gateway-telegram-home", "/usr/bin/sayri-gateway-telegram")
//!     .arg("--api-base")
//!     .arg("https://api.telegram.org")
//!     .secret("TELEGRAM_BOT_TOKEN", "123:abc…"); // from the vault; never argv or environment
//! let status = supervisor.start(spec)?;             // state `running`, pid, restarts, …
//! supervisor.stop("gateway-telegram-home").await?;  // SIGTERM, grace, SIGKILL
//! # let _ = status; Ok(()) }
//! ```
//!
//! What every child gets:
//! * **Its own process group, tied to the daemon's life.** The program runs under a keeper (see
//!   `sayri_sandbox::keeper`): a child subreaper that the kernel signals when the daemon dies
//!   (`PR_SET_PDEATHSIG`, also on `kill -9`), and that then stops the program's whole tree,
//!   `setsid` and double-forked descendants included.
//! * **A log**: stdout and stderr go to `$STATE/logs/<name>.log`, rotated by size
//!   ([`LogLimits`]), with a `[sayri …]` line at each start and exit.
//! * **Restarts**: a program that exits without being asked to is restarted after 1 s, 2 s, 4 s …
//!   up to 60 s; a program that ran for a minute starts over at 1 s. The crash-loop breaker puts
//!   a child that crashed 5 times within 5 minutes in state [`ChildState::Failed`] with its last
//!   error, and it stays there until started again ([`RestartPolicy`]).
//! * **Clean stops** on [`Supervisor::stop`] and on daemon shutdown ([`Supervisor::shutdown`]):
//!   `SIGTERM` to the program's group, then `SIGKILL` to everything left after the grace period.
//! * **Secrets on a socket of their own** ([`ChildSpec::secret`], [`ChildSpec::fresh_secrets`]):
//!   the program finds its descriptor in `SAYRI_SECRETS_FD` and reads one JSON object from it
//!   (see `sayri_protocol::child_secrets`). Never in its arguments, which every local user can
//!   read, nor in its environment, which every process of the user can read in
//!   `/proc/PID/environ`; a spec whose arguments contain a secret value is refused.
//! * **A built environment**: [`INHERITED_ENV`] from the daemon plus the spec's own variables;
//!   nothing else of the daemon's environment, and descriptors 0–2 plus the ones the spec passes
//!   ([`ChildSpec::pass_fd`], numbered from 3 and named by an environment variable) only.
//! * **A pid file** when the spec asks for one ([`ChildSpec::pid_file`]): the program's pid
//!   while it runs, for programs that find each other by pid file.
//! * **A record** in `$STATE/children/` while it runs, so the next daemon kills it should it
//!   have survived a crash.
//!
//! State changes are reported to the observer given to [`Supervisor::with_observer`] (e.g. to
//! broadcast an `error` event and notify the desktop when a child fails), and [`Supervisor::list`]
//! gives every child's [`ChildStatus`] for IPC listings.

mod backoff;
mod child;
mod log;
mod pid_file;

pub use backoff::{AfterCrash, CrashHistory, RestartPolicy};
pub use child::{INHERITED_ENV, Launcher};
pub use log::{LogLimits, RotatingLog};

use sayri_core::sync::lock;
use serde::Serialize;
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use zeroize::Zeroizing;

/// Default time a program gets between `SIGTERM` and `SIGKILL` when stopped: 5 s.
pub const DEFAULT_STOP_GRACE: Duration = Duration::from_secs(5);

/// Secrets made afresh at every start of a child (e.g. the local model server's token).
pub type FreshSecrets =
    Arc<dyn Fn() -> Result<Vec<(String, Zeroizing<String>)>, String> + Send + Sync>;

/// A program to supervise. Build it with [`ChildSpec::new`] and the builder methods.
#[derive(Clone)]
pub struct ChildSpec {
    /// Unique name: 1–64 characters of `A–Z a–z 0–9 . _ -`, not starting with a dot. Names the
    /// log file `$STATE/logs/<name>.log`.
    pub name: String,
    /// Program: a path, or a name looked up in `PATH`.
    pub program: PathBuf,
    /// Arguments. Visible to every local user (`ps`): never put a secret here.
    pub args: Vec<String>,
    /// Extra environment variables (on top of [`INHERITED_ENV`] from the daemon). Never
    /// secrets: other processes of the user can read a process's environment.
    pub env: Vec<(String, String)>,
    /// Secrets (API tokens from the vault), sent on the secrets descriptor at each start. Never
    /// logged; their values must not appear in `program` or `args`.
    pub secrets: Vec<(String, Zeroizing<String>)>,
    /// Secrets made at each start, sent after [`ChildSpec::secrets`].
    pub fresh_secrets: Option<FreshSecrets>,
    /// Descriptors the program inherits, from 3 on (after the secrets descriptor, when there
    /// is one), each announced in the environment variable paired with it.
    pub fds: Vec<(String, Arc<OwnedFd>)>,
    /// Bytes written to the program's stdin at each start, after which stdin is closed
    /// (`None`: stdin is `/dev/null`).
    pub stdin: Option<Vec<u8>>,
    /// Working directory (`None`: the daemon's).
    pub cwd: Option<PathBuf>,
    /// Restart and breaker policy.
    pub restart: RestartPolicy,
    /// Time between `SIGTERM` and `SIGKILL` on a stop (default [`DEFAULT_STOP_GRACE`]).
    pub stop_grace: Duration,
    /// Log size limits.
    pub log: LogLimits,
    /// A file that holds the program's pid while it runs (`None`: none); see
    /// [`ChildSpec::pid_file`].
    pub pid_file: Option<PathBuf>,
}

impl std::fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildSpec")
            .field("name", &self.name)
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &self.env)
            .field(
                "secrets",
                &self.secrets.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("fresh_secrets", &self.fresh_secrets.is_some())
            .field("fds", &self.fds.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("stdin", &self.stdin.as_ref().map(|b| b.len()))
            .field("cwd", &self.cwd)
            .field("pid_file", &self.pid_file)
            .finish_non_exhaustive()
    }
}

impl ChildSpec {
    /// A spec running `program` without arguments, with the default policies.
    pub fn new(name: impl Into<String>, program: impl Into<PathBuf>) -> Self {
        ChildSpec {
            name: name.into(),
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            secrets: Vec::new(),
            fresh_secrets: None,
            fds: Vec::new(),
            stdin: None,
            cwd: None,
            restart: RestartPolicy::default(),
            stop_grace: DEFAULT_STOP_GRACE,
            log: LogLimits::default(),
            pid_file: None,
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, a: impl Into<String>) -> Self {
        self.args.push(a.into());
        self
    }

    /// Adds an environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Adds a secret (see the [`ChildSpec::secrets`] field).
    pub fn secret(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.secrets
            .push((key.into(), Zeroizing::new(value.into())));
        self
    }

    /// Sets secrets made afresh at each start (see [`FreshSecrets`]).
    pub fn fresh_secrets(mut self, make: FreshSecrets) -> Self {
        self.fresh_secrets = Some(make);
        self
    }

    /// Passes `fd` to the program (a duplicate at each start), announced as `env_name=N`.
    pub fn pass_fd(mut self, env_name: impl Into<String>, fd: Arc<OwnedFd>) -> Self {
        self.fds.push((env_name.into(), fd));
        self
    }

    /// Keeps the program's pid in `path` while it runs: written at each start once the
    /// program runs, removed when that run ends (only while the file still holds its pid).
    pub fn pid_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.pid_file = Some(path.into());
        self
    }

    /// Sets what the program reads on stdin at each start.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Checks the name, the environment names and that no secret value appears in the program
    /// or its arguments.
    fn validate(&self) -> Result<(), SupervisorError> {
        let n = &self.name;
        let name_ok = !n.is_empty()
            && n.len() <= 64
            && !n.starts_with('.')
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !name_ok {
            return Err(SupervisorError::BadName(n.clone()));
        }
        let names = self.env.iter().map(|(k, _)| k);
        for k in names.chain(self.fds.iter().map(|(k, _)| k)) {
            if k.is_empty()
                || k.contains('=')
                || k.contains('\0')
                || k == sayri_protocol::child_secrets::SECRETS_FD_ENV
            {
                return Err(SupervisorError::BadEnv(k.clone()));
            }
        }
        let visible: Vec<String> = std::iter::once(self.program.to_string_lossy().into_owned())
            .chain(self.args.iter().cloned())
            .chain(self.env.iter().map(|(_, v)| v.clone()))
            .collect();
        for (k, v) in &self.secrets {
            if !v.is_empty() && visible.iter().any(|a| a.contains(v.as_str())) {
                return Err(SupervisorError::SecretInArguments(k.clone()));
            }
        }
        Ok(())
    }
}

/// Where a child is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildState {
    /// Being started.
    Starting,
    /// Running.
    Running,
    /// Exited on its own; waiting to be restarted.
    Backoff,
    /// A stop was requested; waiting for it to end.
    Stopping,
    /// Stopped on request (or never started again after a stop).
    Stopped,
    /// The crash-loop breaker tripped; see `last_error`. Only a new start revives it.
    Failed,
}

impl ChildState {
    /// The wire name (`starting`, `running`, `backoff`, `stopping`, `stopped`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            ChildState::Starting => "starting",
            ChildState::Running => "running",
            ChildState::Backoff => "backoff",
            ChildState::Stopping => "stopping",
            ChildState::Stopped => "stopped",
            ChildState::Failed => "failed",
        }
    }
}

/// A child as listed (`gateway_list` and friends).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChildStatus {
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: ChildState,
    /// The program's pid while it runs.
    pub pid: Option<u32>,
    /// The pid of its keeper while it runs.
    pub keeper_pid: Option<u32>,
    /// Restarts since it was last started by request.
    pub restarts: u32,
    /// Why it last exited on its own or failed to start (names its log).
    pub last_error: Option<String>,
    /// In state `backoff`: milliseconds until the next start (when the status was read).
    pub restart_in_ms: Option<u64>,
    /// The current log file.
    pub log_file: PathBuf,
}

/// Errors of [`Supervisor`] calls, with what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SupervisorError {
    /// Invalid name.
    #[error(
        "invalid child name {0:?}: use 1-64 letters, digits, '.', '_' or '-', not starting with '.'"
    )]
    BadName(String),
    /// Invalid environment variable name.
    #[error("invalid environment variable name {0:?}")]
    BadEnv(String),
    /// A secret's value appears in the program or its arguments.
    #[error(
        "the value of secret {0} appears in the command line or the environment, where other processes can read it; pass it only as a secret"
    )]
    SecretInArguments(String),
    /// A child with this name is running (or waiting to restart).
    #[error("{0} is already running; stop it first")]
    AlreadyRunning(String),
    /// No child with this name.
    #[error("no supervised child named {0}")]
    Unknown(String),
    /// The daemon is shutting down.
    #[error("the daemon is shutting down; nothing new is started")]
    ShuttingDown,
}

/// What the supervisor needs from the daemon.
#[derive(Debug, Clone)]
pub struct SupervisorConfig {
    /// Directory of the logs (`$STATE/logs`).
    pub log_dir: PathBuf,
    /// How keepers are started and recorded.
    pub launcher: Launcher,
}

/// Called with a child's status at every state change. Must not block.
pub type Observer = Arc<dyn Fn(&ChildStatus) + Send + Sync>;

/// One child: its status, its stop switch and the task that runs it.
struct Slot {
    status: Mutex<ChildStatus>,
    /// When the current backoff ends (for `restart_in_ms`).
    restart_at: Mutex<Option<Instant>>,
    stop: CancellationToken,
    task: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

struct Shared {
    config: SupervisorConfig,
    children: Mutex<HashMap<String, Arc<Slot>>>,
    observer: Option<Observer>,
    closed: CancellationToken,
    tasks: TaskTracker,
}

/// The daemon's supervisor. Cheap to clone (all clones share the children).
#[derive(Clone)]
pub struct Supervisor {
    shared: Arc<Shared>,
}

impl Supervisor {
    /// A supervisor with no children.
    pub fn new(config: SupervisorConfig) -> Self {
        Self::build(config, None)
    }

    /// As [`Supervisor::new`], reporting every state change to `observer`.
    pub fn with_observer(config: SupervisorConfig, observer: Observer) -> Self {
        Self::build(config, Some(observer))
    }

    fn build(config: SupervisorConfig, observer: Option<Observer>) -> Self {
        Supervisor {
            shared: Arc::new(Shared {
                config,
                children: Mutex::new(HashMap::new()),
                observer,
                closed: CancellationToken::new(),
                tasks: TaskTracker::new(),
            }),
        }
    }

    /// Starts `spec` and supervises it until it is stopped or fails. A stopped or failed child
    /// of the same name is replaced (its restart count starts over). Returns the status right
    /// after the start was requested. Must be called inside a Tokio runtime.
    ///
    /// # Errors
    /// An invalid spec, a secret in the arguments, a child of that name still running, or a
    /// daemon shutting down.
    pub fn start(&self, spec: ChildSpec) -> Result<ChildStatus, SupervisorError> {
        spec.validate()?;
        if self.shared.closed.is_cancelled() {
            return Err(SupervisorError::ShuttingDown);
        }
        let log_file = self
            .shared
            .config
            .log_dir
            .join(format!("{}.log", spec.name));
        let mut children = lock(&self.shared.children);
        if let Some(old) = children.get(&spec.name) {
            let st = lock(&old.status).state;
            if !matches!(st, ChildState::Stopped | ChildState::Failed) {
                return Err(SupervisorError::AlreadyRunning(spec.name.clone()));
            }
        }
        let slot = Arc::new(Slot {
            status: Mutex::new(ChildStatus {
                name: spec.name.clone(),
                state: ChildState::Starting,
                pid: None,
                keeper_pid: None,
                restarts: 0,
                last_error: None,
                restart_in_ms: None,
                log_file: log_file.clone(),
            }),
            restart_at: Mutex::new(None),
            stop: self.shared.closed.child_token(),
            task: tokio::sync::Mutex::new(None),
        });
        let status = lock(&slot.status).clone();
        let name = spec.name.clone();
        let run = RunLoop {
            shared: self.shared.clone(),
            slot: slot.clone(),
            spec,
            log_file,
        };
        // Stored before the slot is visible, so a `stop` always finds the task to wait for.
        let handle = self.shared.tasks.spawn(run.run());
        if let Ok(mut t) = slot.task.try_lock() {
            *t = Some(handle);
        }
        children.insert(name, slot);
        Ok(status)
    }

    /// Stops the child `name` (`SIGTERM`, its grace period, then `SIGKILL`) and waits until it
    /// and its whole tree are gone. Stopping a stopped or failed child changes nothing.
    ///
    /// # Errors
    /// No child of that name.
    pub async fn stop(&self, name: &str) -> Result<ChildStatus, SupervisorError> {
        let slot = lock(&self.shared.children)
            .get(name)
            .cloned()
            .ok_or_else(|| SupervisorError::Unknown(name.to_string()))?;
        slot.stop.cancel();
        let handle = slot.task.lock().await.take();
        if let Some(h) = handle {
            let _ = h.await;
        }
        Ok(self.snapshot(&slot))
    }

    /// Stops the child `name` and forgets it.
    ///
    /// # Errors
    /// No child of that name.
    pub async fn remove(&self, name: &str) -> Result<(), SupervisorError> {
        self.stop(name).await?;
        lock(&self.shared.children).remove(name);
        Ok(())
    }

    /// The status of `name`, if there is such a child.
    pub fn status(&self, name: &str) -> Option<ChildStatus> {
        let slot = lock(&self.shared.children).get(name).cloned()?;
        Some(self.snapshot(&slot))
    }

    /// Every child's status, by name.
    pub fn list(&self) -> Vec<ChildStatus> {
        let slots: Vec<Arc<Slot>> = lock(&self.shared.children).values().cloned().collect();
        let mut v: Vec<ChildStatus> = slots.iter().map(|s| self.snapshot(s)).collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Refuses new starts, stops every child at once (each with its own grace period) and waits
    /// until all are gone. Called by the daemon when it shuts down.
    pub async fn shutdown(&self) {
        self.shared.closed.cancel();
        self.shared.tasks.close();
        self.shared.tasks.wait().await;
    }

    fn snapshot(&self, slot: &Slot) -> ChildStatus {
        let mut st = lock(&slot.status).clone();
        st.restart_in_ms = match (st.state, *lock(&slot.restart_at)) {
            (ChildState::Backoff, Some(at)) => Some(
                u64::try_from(at.saturating_duration_since(Instant::now()).as_millis())
                    .unwrap_or(u64::MAX),
            ),
            _ => None,
        };
        if let Some(keeper) = st.keeper_pid {
            st.pid = program_pid(keeper);
        }
        st
    }
}

/// The program under keeper `keeper` (the keeper's direct child): from the keeper's
/// `/proc/PID/task/PID/children` list, or a scan of `/proc` when the kernel has no such list.
fn program_pid(keeper: u32) -> Option<u32> {
    if let Ok(list) = std::fs::read_to_string(format!("/proc/{keeper}/task/{keeper}/children")) {
        return list.split_whitespace().next().and_then(|p| p.parse().ok());
    }
    let keeper = i32::try_from(keeper).ok()?;
    sayri_sandbox::process_tree::all_processes()
        .into_iter()
        .find(|(_, st)| st.ppid == keeper)
        .and_then(|(pid, _)| u32::try_from(pid).ok())
}

/// The task that runs one child: start, wait, restart with backoff, until stopped or failed.
struct RunLoop {
    shared: Arc<Shared>,
    slot: Arc<Slot>,
    spec: ChildSpec,
    log_file: PathBuf,
}

/// How one run ended.
enum RunEnd {
    /// A stop was requested; the run is over.
    Stopped,
    /// It exited on its own (or could not start) after running this long, for this reason.
    Crashed(Duration, String),
}

impl RunLoop {
    async fn run(self) {
        let log = match RotatingLog::open(self.log_file.clone(), self.spec.log) {
            Ok(l) => Arc::new(Mutex::new(l)),
            Err(e) => {
                let msg = format!("cannot open its log {}: {e}", self.log_file.display());
                self.update(|s| {
                    s.state = ChildState::Failed;
                    s.last_error = Some(msg);
                });
                return;
            }
        };
        let mut history = CrashHistory::new(self.spec.restart);
        loop {
            let (ran_for, reason) = match self.run_once(&log).await {
                RunEnd::Stopped => return,
                RunEnd::Crashed(ran, reason) => (ran, reason),
            };
            child::note(&log, &format!("{}: {reason}", self.spec.name));
            match history.crashed(Instant::now(), ran_for) {
                AfterCrash::Fail => {
                    let p = self.spec.restart;
                    let msg = format!(
                        "{reason}; crashed {} times within {} s, so it is no longer restarted — start it again once fixed",
                        p.max_crashes,
                        p.window.as_secs()
                    );
                    tracing::error!("supervised child {} failed: {msg}", self.spec.name);
                    child::note(&log, &format!("giving up: {msg}"));
                    self.update(|s| {
                        s.state = ChildState::Failed;
                        s.keeper_pid = None;
                        s.last_error = Some(msg);
                    });
                    return;
                }
                AfterCrash::RestartAfter(delay) => {
                    tracing::warn!(
                        "supervised child {} {reason}; restarting in {:.1} s",
                        self.spec.name,
                        delay.as_secs_f64()
                    );
                    *lock(&self.slot.restart_at) = Some(Instant::now() + delay);
                    self.update(|s| {
                        s.state = ChildState::Backoff;
                        s.keeper_pid = None;
                        s.last_error = Some(reason);
                    });
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = self.slot.stop.cancelled() => {
                            self.update(|s| s.state = ChildState::Stopped);
                            return;
                        }
                    }
                    self.update(|s| s.restarts += 1);
                }
            }
        }
    }

    /// Starts the program once and waits until it exits or a stop is requested.
    async fn run_once(&self, log: &Arc<Mutex<RotatingLog>>) -> RunEnd {
        if self.slot.stop.is_cancelled() {
            self.update(|s| s.state = ChildState::Stopped);
            return RunEnd::Stopped;
        }
        self.update(|s| s.state = ChildState::Starting);
        let mut running = match self.shared.config.launcher.launch(&self.spec, log).await {
            Ok(r) => r,
            Err(e) => return RunEnd::Crashed(Duration::ZERO, e),
        };
        child::note(
            log,
            &format!(
                "started {} (keeper pid {})",
                self.spec.program.display(),
                running.keeper_pid
            ),
        );
        self.update(|s| {
            s.state = ChildState::Running;
            s.keeper_pid = Some(running.keeper_pid);
        });
        let started = Instant::now();
        let pid_file = match &self.spec.pid_file {
            Some(path) => pid_file::write(path, running.keeper_pid)
                .await
                .map(|pid| (path.as_path(), pid)),
            None => None,
        };
        let exit = tokio::select! {
            st = running.wait() => st,
            _ = self.slot.stop.cancelled() => {
                self.update(|s| s.state = ChildState::Stopping);
                let st = running.stop(self.spec.stop_grace).await;
                if let Some((path, pid)) = pid_file {
                    pid_file::remove(path, pid);
                }
                let how = child::describe_exit(&st, &self.spec, "this log");
                child::note(log, &format!("stopped on request ({how})"));
                self.update(|s| {
                    s.state = ChildState::Stopped;
                    s.keeper_pid = None;
                });
                return RunEnd::Stopped;
            }
        };
        if let Some((path, pid)) = pid_file {
            pid_file::remove(path, pid);
        }
        let reason = child::describe_exit(&exit, &self.spec, &self.log_file.display().to_string());
        RunEnd::Crashed(started.elapsed(), reason)
    }

    /// Changes the status and tells the observer.
    fn update(&self, f: impl FnOnce(&mut ChildStatus)) {
        let snapshot = {
            let mut st = lock(&self.slot.status);
            f(&mut st);
            st.clone()
        };
        if let Some(o) = &self.shared.observer {
            o(&snapshot);
        }
    }
}
