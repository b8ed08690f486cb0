//! The local model the daemon serves itself (`provider.local_model`): a GGUF file run by an
//! OpenAI-compatible server that the daemon starts as a supervised child and uses instead of
//! `provider.base_url`.
//!
//! * **Where things are.** Installed models are `$STATE/models/<name>.gguf`
//!   ([`Paths::models_dir`]); a setting may also name any absolute `.gguf` path. The server is
//!   `server.mjs` (embedded in this binary, written to [`Paths::llm_server_dir`] before each
//!   start) run by Node.js with `node-llama-cpp` from that directory's `node_modules`; Node is
//!   `<llm-server>/bin/node` when present, else `node` from `PATH`. `./scripts/setup --model`
//!   installs both.
//! * **The child.** Named [`CHILD_NAME`] in the supervisor (so it restarts with backoff, dies
//!   with the daemon and has its log in `$STATE/logs/local-model.log`). It listens on
//!   `127.0.0.1` only, on a port the kernel picks at each start, which it writes to
//!   `<llm-server>/local-model.port` together with its pid; every `/v1/` request must carry a
//!   bearer token made fresh at each daemon start and handed over in the environment, so other
//!   local users cannot use it. It is a process of its own: its memory is not the daemon's.
//! * **Readiness.** A watcher follows the child: it is [`LocalState::Ready`] once the port
//!   file names the running program's pid and `GET /health` answers 200. Requests made while it
//!   starts (or restarts) wait for it ([`START_WAIT`]); once it failed they fail at once, naming
//!   its log.

use crate::brain::adapters::build_model;
use crate::supervisor::{ChildSpec, ChildState, Supervisor};
use futures::StreamExt;
use sayri_client::paths::Paths;
use sayri_core::domain::config::Config;
use sayri_core::ports::{ChatError, ChatModel, ChatRequest, ChatStream, Redactor};
use sayri_core::sync::lock;
use sayri_protocol::reply::runtime::LocalModelStatus;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The supervised child's name (and log name).
pub const CHILD_NAME: &str = "local-model";
/// The server script, written next to its `node_modules` before every start.
pub const SERVER_SCRIPT: &str = include_str!("../../../scripts/llm-server/server.mjs");
/// How long a request waits for a starting server before it fails.
pub const START_WAIT: Duration = Duration::from_secs(120);
/// The file the server writes `"<port> <pid>"` to, inside [`Paths::llm_server_dir`].
pub const PORT_FILE: &str = "local-model.port";
/// How often the watcher looks at a starting server.
const POLL_STARTING: Duration = Duration::from_millis(100);
/// How often the watcher looks at a ready server.
const POLL_READY: Duration = Duration::from_millis(500);

/// Where the local model server is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LocalState {
    /// `provider.local_model` is empty.
    Off,
    /// Being started (or restarted after a crash); requests wait.
    Starting,
    /// Answering on `127.0.0.1:port`.
    Ready {
        /// Loopback port.
        port: u16,
    },
    /// Cannot run; the reason says what to do.
    Failed {
        /// What went wrong and what to do.
        error: String,
    },
}

/// A model file in [`Paths::models_dir`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstalledModel {
    /// Name: the file name without `.gguf` (what `provider.local_model` may say).
    pub name: String,
    /// The file.
    pub path: PathBuf,
    /// Size in bytes.
    pub bytes: u64,
}

/// Every `*.gguf` in the models directory, by name.
pub fn installed(paths: &Paths) -> Vec<InstalledModel> {
    let Ok(dir) = std::fs::read_dir(paths.models_dir()) else {
        return Vec::new();
    };
    let mut v: Vec<InstalledModel> = dir
        .filter_map(Result::ok)
        .filter_map(|e| {
            let path = e.path();
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".gguf")?
                .to_string();
            let meta = std::fs::metadata(&path).ok()?;
            meta.is_file().then_some(InstalledModel {
                name,
                path,
                bytes: meta.len(),
            })
        })
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// The model file a `provider.local_model` value names: an absolute path as it is, a name as
/// `$STATE/models/<name>.gguf` (`.gguf` may be part of the name).
///
/// # Errors
/// The file does not exist, with what to do.
pub fn resolve(paths: &Paths, value: &str) -> Result<PathBuf, String> {
    let path = if value.starts_with('/') {
        PathBuf::from(value)
    } else {
        let file = if value.ends_with(".gguf") {
            value.to_string()
        } else {
            format!("{value}.gguf")
        };
        paths.models_dir().join(file)
    };
    if path.is_file() {
        return Ok(path);
    }
    let names: Vec<String> = installed(paths).into_iter().map(|m| m.name).collect();
    let have = if names.is_empty() {
        format!(
            "no model is installed in {} — `./scripts/setup --model` installs a small one, or `sayri models install FILE.gguf` adds yours",
            paths.models_dir().display()
        )
    } else {
        format!("installed: {}", names.join(", "))
    };
    Err(format!("{} does not exist; {have}", path.display()))
}

/// The model's name as the server reports it: its file name without `.gguf`.
pub fn model_id(path: &Path) -> String {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(|n| n.strip_suffix(".gguf").unwrap_or(n).to_string())
        .unwrap_or_else(|| "local".into())
}

/// The Node.js program that runs the server: `<llm-server>/bin/node` when it exists, else `node`.
pub fn node_program(paths: &Paths) -> PathBuf {
    let own = paths.llm_server_dir().join("bin/node");
    if own.is_file() {
        own
    } else {
        PathBuf::from("node")
    }
}

/// Checks that the server's runtime (`node-llama-cpp`) is installed.
///
/// # Errors
/// What is missing and the command that installs it.
pub fn runtime_installed(paths: &Paths) -> Result<(), String> {
    let pkg = paths
        .llm_server_dir()
        .join("node_modules/node-llama-cpp/package.json");
    if pkg.is_file() {
        Ok(())
    } else {
        Err(format!(
            "the local model server is not installed ({} is missing) — run `./scripts/setup --model` from Sayri's source tree",
            pkg.display()
        ))
    }
}

/// What a `provider.local_model` value needs on this machine: the model file and the runtime.
///
/// # Errors
/// As [`resolve`] and [`runtime_installed`].
pub fn check_setting(paths: &Paths, value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    resolve(paths, value)?;
    runtime_installed(paths)
}

/// The daemon's local model: starts, stops and watches the supervised server, and hands out
/// the chat model that talks to it.
pub struct LocalModel {
    paths: Paths,
    supervisor: Supervisor,
    redactor: Arc<dyn Redactor>,
    /// The bearer token of this daemon's servers (`Err`: the random source failed, so no
    /// server is started).
    token: Result<String, String>,
    state: watch::Sender<LocalState>,
    inner: Mutex<Inner>,
    /// Serialises stop-then-start sequences.
    changes: Arc<tokio::sync::Mutex<()>>,
}

struct Inner {
    /// The setting value the server runs for (`""`: none).
    configured: String,
    /// The model file it serves.
    model: Option<PathBuf>,
    /// Stops the watcher of the current server.
    watcher: Option<CancellationToken>,
}

impl LocalModel {
    /// A local model manager with nothing running.
    pub fn new(paths: Paths, supervisor: Supervisor, redactor: Arc<dyn Redactor>) -> Arc<Self> {
        Arc::new(LocalModel {
            paths,
            supervisor,
            redactor,
            token: fresh_token(),
            state: watch::channel(LocalState::Off).0,
            inner: Mutex::new(Inner {
                configured: String::new(),
                model: None,
                watcher: None,
            }),
            changes: Arc::new(tokio::sync::Mutex::new(())),
        })
    }

    /// The current state.
    pub fn state(&self) -> LocalState {
        self.state.borrow().clone()
    }

    /// Whether the configured provider is the local model.
    pub fn active(&self) -> bool {
        !lock(&self.inner).configured.is_empty()
    }

    /// `status.local_model`: `{state, port?, error?, configured, model, log_file}`.
    pub fn status(&self) -> LocalModelStatus {
        let inner = lock(&self.inner);
        let (state, port, error) = match self.state() {
            LocalState::Off => ("off", None, None),
            LocalState::Starting => ("starting", None, None),
            LocalState::Ready { port } => ("ready", Some(port), None),
            LocalState::Failed { error } => ("failed", None, Some(error)),
        };
        LocalModelStatus {
            state: state.into(),
            port,
            error,
            configured: inner.configured.clone(),
            model: inner.model.as_deref().map(model_id),
            log_file: self
                .paths
                .logs_dir()
                .join(format!("{CHILD_NAME}.log"))
                .display()
                .to_string(),
        }
    }

    /// The endpoint the provider uses while the local model is active, e.g.
    /// `http://127.0.0.1:40123/v1` (`None` while it is not ready).
    pub fn base_url(&self) -> Option<String> {
        match self.state() {
            LocalState::Ready { port } => Some(format!("http://127.0.0.1:{port}/v1")),
            _ => None,
        }
    }

    /// Follows `cfg.provider.local_model`: starts the server for a new value, stops it for
    /// `""`, restarts it for the same value when it failed. Returns at once; the change runs in
    /// the background (one at a time, in call order). Must be called inside a Tokio runtime.
    pub fn apply(self: &Arc<Self>, cfg: &Config) {
        let want = cfg.provider.local_model.clone();
        {
            let inner = lock(&self.inner);
            let failed = matches!(self.state(), LocalState::Failed { .. });
            if inner.configured == want && !failed {
                return;
            }
        }
        let resolved = if want.is_empty() {
            None
        } else {
            Some(
                resolve(&self.paths, &want)
                    .and_then(|p| runtime_installed(&self.paths).map(|()| p)),
            )
        };
        let old_watcher = {
            let mut inner = lock(&self.inner);
            inner.configured = want.clone();
            inner.model = resolved.as_ref().and_then(|r| r.as_ref().ok().cloned());
            inner.watcher.take()
        };
        if let Some(w) = old_watcher {
            w.cancel();
        }
        let _ = self.state.send(match &resolved {
            None => LocalState::Off,
            Some(Ok(_)) => LocalState::Starting,
            Some(Err(e)) => LocalState::Failed { error: e.clone() },
        });
        let this = self.clone();
        let changes = self.changes.clone();
        tokio::spawn(async move {
            let _serial = changes.lock().await;
            let _ = this.supervisor.remove(CHILD_NAME).await;
            let Some(Ok(model)) = resolved else {
                return;
            };
            if lock(&this.inner).configured != want {
                return; // a later change is queued behind us
            }
            if let Err(e) = this.start(&model) {
                tracing::error!("local model {}: {e}", model.display());
                let _ = this.state.send(LocalState::Failed { error: e });
            }
        });
    }

    /// Writes the script, starts the child and its watcher.
    fn start(self: &Arc<Self>, model: &Path) -> Result<(), String> {
        let dir = self.paths.llm_server_dir();
        let script = dir.join("server.mjs");
        write_if_changed(&script, SERVER_SCRIPT)
            .map_err(|e| format!("cannot write {}: {e}", script.display()))?;
        let port_file = dir.join(PORT_FILE);
        let _ = std::fs::remove_file(&port_file);
        let spec = ChildSpec::new(CHILD_NAME, node_program(&self.paths))
            .arg(script.display().to_string())
            .arg(model.display().to_string())
            .arg("0")
            .env("SAYRI_LLM_PORT_FILE", port_file.display().to_string())
            .secret_env("SAYRI_LLM_TOKEN", self.token.clone()?);
        let spec = ChildSpec {
            cwd: Some(dir),
            ..spec
        };
        self.supervisor.start(spec).map_err(|e| e.to_string())?;
        tracing::info!("local model server starting for {}", model.display());
        let stop = CancellationToken::new();
        lock(&self.inner).watcher = Some(stop.clone());
        tokio::spawn(watch_child(self.clone(), port_file, stop));
        Ok(())
    }

    /// Stops the server (daemon shutdown stops it too, through the supervisor).
    pub async fn stop(&self) {
        if let Some(w) = lock(&self.inner).watcher.take() {
            w.cancel();
        }
        let _ = self.supervisor.remove(CHILD_NAME).await;
        let _ = self.state.send(LocalState::Off);
    }

    /// The chat model that sends requests to the local server (waiting while it starts).
    pub fn chat(self: &Arc<Self>, cfg: &Config) -> Arc<dyn ChatModel> {
        Arc::new(LocalChat {
            local: self.clone(),
            cfg: cfg.clone(),
            client: Mutex::new(None),
        })
    }
}

/// A token of 32 hex characters from the kernel's random source.
fn fresh_token() -> Result<String, String> {
    let mut buf = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut buf))
        .map_err(|e| format!("cannot read /dev/urandom for the local model's token: {e}"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `text` to `path` (mode 0600, through a temporary file) unless it already holds it.
fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = path.with_extension("mjs.part");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Follows the child until `stop`: `Ready` once the port file names the running program and
/// `/health` answers, `Starting` while it (re)starts, `Failed` when the supervisor gave up.
async fn watch_child(local: Arc<LocalModel>, port_file: PathBuf, stop: CancellationToken) {
    loop {
        let next = match local.supervisor.status(CHILD_NAME) {
            None => LocalState::Starting,
            Some(st) => match st.state {
                ChildState::Failed => LocalState::Failed {
                    error: format!(
                        "the local model server stopped working: {} — fix it, then run `sayri config set provider.local_model {}` to start it again",
                        st.last_error.unwrap_or_default(),
                        lock(&local.inner).configured
                    ),
                },
                ChildState::Running => match (st.pid, read_port_file(&port_file)) {
                    (Some(pid), Some((port, file_pid)))
                        if pid == file_pid && healthy(port).await =>
                    {
                        LocalState::Ready { port }
                    }
                    _ => LocalState::Starting,
                },
                _ => LocalState::Starting,
            },
        };
        if stop.is_cancelled() {
            return;
        }
        let pause = if matches!(next, LocalState::Ready { .. }) {
            POLL_READY
        } else {
            POLL_STARTING
        };
        local.state.send_if_modified(|s| {
            if *s == next {
                false
            } else {
                if let LocalState::Ready { port } = next {
                    tracing::info!("local model server ready on 127.0.0.1:{port}");
                }
                *s = next;
                true
            }
        });
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(pause) => {}
        }
    }
}

/// `(port, pid)` from the port file.
fn read_port_file(path: &Path) -> Option<(u16, u32)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut it = text.split_whitespace();
    let port = it.next()?.parse().ok()?;
    let pid = it.next()?.parse().ok()?;
    Some((port, pid))
}

/// Whether `GET http://127.0.0.1:port/health` answers 200 within a second.
async fn healthy(port: u16) -> bool {
    let probe = async {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .await
            .ok()?;
        let mut head = [0u8; 12];
        s.read_exact(&mut head).await.ok()?;
        Some(head.starts_with(b"HTTP/1.1 200"))
    };
    tokio::time::timeout(Duration::from_secs(1), probe)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// The provider while the local model is active: waits for the server, then streams through a
/// client for its current port (rebuilt when a restart moved it).
struct LocalChat {
    local: Arc<LocalModel>,
    cfg: Config,
    client: Mutex<Option<(u16, Arc<dyn ChatModel>)>>,
}

impl LocalChat {
    fn client_for(&self, port: u16) -> Arc<dyn ChatModel> {
        let mut slot = lock(&self.client);
        if let Some((p, c)) = slot.as_ref()
            && *p == port
        {
            return c.clone();
        }
        let mut cfg = self.cfg.clone();
        cfg.provider.base_url = format!("http://127.0.0.1:{port}/v1");
        cfg.provider.extra_headers.clear();
        let c = build_model(
            &cfg,
            self.local.token.clone().ok(),
            self.local.redactor.clone(),
        );
        *slot = Some((port, c.clone()));
        c
    }
}

/// Waits (up to [`START_WAIT`]) until the server is ready; the error says why not.
async fn wait_ready(mut rx: watch::Receiver<LocalState>) -> Result<u16, ChatError> {
    let wait = rx.wait_for(|s| !matches!(s, LocalState::Starting));
    match tokio::time::timeout(START_WAIT, wait).await {
        Ok(Ok(s)) => match &*s {
            LocalState::Ready { port } => Ok(*port),
            LocalState::Failed { error } => Err(ChatError::Config(error.clone())),
            _ => Err(ChatError::Config(
                "the local model is off (provider.local_model is empty)".into(),
            )),
        },
        Ok(Err(_)) => Err(ChatError::Config("the daemon is stopping".into())),
        Err(_) => Err(ChatError::Timeout(format!(
            "the local model server did not become ready within {} s — see {}",
            START_WAIT.as_secs(),
            "`sayri status`"
        ))),
    }
}

impl ChatModel for LocalChat {
    fn stream_chat(&self, request: ChatRequest) -> ChatStream {
        if let LocalState::Ready { port } = self.local.state() {
            return self.client_for(port).stream_chat(request);
        }
        let rx = self.local.state.subscribe();
        let this = LocalChat {
            local: self.local.clone(),
            cfg: self.cfg.clone(),
            client: Mutex::new(lock(&self.client).clone()),
        };
        Box::pin(
            futures::stream::once(async move {
                match wait_ready(rx).await {
                    Ok(port) => this.client_for(port).stream_chat(request),
                    Err(e) => Box::pin(futures::stream::once(async move { Err(e) })),
                }
            })
            .flatten(),
        )
    }
}
