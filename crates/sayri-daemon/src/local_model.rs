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
//!   with the daemon and has its log in `$STATE/logs/local-model.log`). It is a process of its
//!   own: its memory is not the daemon's.
//! * **Its port is the daemon's.** The daemon binds `127.0.0.1:0` itself ([`crate::owned_port`]),
//!   keeps the listening socket while the local model is configured and passes it to every start
//!   of the server (`SAYRI_LISTEN_FD`), which accepts on it. So the port is never free while the
//!   server restarts, no other process (of any user) can bind it, and everything the daemon
//!   sends there reaches only its own child.
//! * **Its token is new at every start.** Every request but `GET /health` must carry a bearer
//!   token of 128 random bits, made at each start of the server and handed over on its secrets
//!   socket (`SAYRI_SECRETS_FD`), never in its arguments or environment; other local users can
//!   reach the port, not use the model. A request that raced a restart and met the new token is
//!   sent again once with it.
//! * **Readiness.** A watcher follows the child: it is [`LocalState::Ready`] once the supervisor
//!   says it runs and `GET /health` on the daemon's port answers 200. Requests made while it
//!   starts (or restarts) wait for it ([`START_WAIT`]); once it failed they fail at once, naming
//!   its log.

use crate::brain::adapters::build_model;
use crate::owned_port::{OwnedPort, PortError, bind_loopback};
use crate::supervisor::{ChildSpec, ChildState, Supervisor, SupervisorError};
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
use zeroize::Zeroizing;

/// The supervised child's name (and log name).
pub const CHILD_NAME: &str = "local-model";
/// The server script, written next to its `node_modules` before every start.
pub const SERVER_SCRIPT: &str = include_str!("../../../scripts/llm-server/server.mjs");
/// How long a request waits for a starting server before it fails.
pub const START_WAIT: Duration = Duration::from_secs(120);
/// The variable naming the listening socket the server accepts on.
pub const LISTEN_FD_ENV: &str = "SAYRI_LISTEN_FD";
/// The name of the token on the server's secrets socket.
pub const TOKEN_NAME: &str = "SAYRI_LLM_TOKEN";
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

/// Why the local model cannot run; the message says what is missing and what to do.
#[derive(Debug, thiserror::Error)]
pub enum LocalModelError {
    /// The model file a `provider.local_model` value names does not exist.
    #[error("{} does not exist; {installed}", path.display())]
    NoModelFile {
        /// Where the file was looked for.
        path: PathBuf,
        /// The models that are installed, or how to install one.
        installed: String,
    },
    /// The server's runtime (`node-llama-cpp`) is not installed.
    #[error(
        "the local model server is not installed ({} is missing) — run `./scripts/setup --model` from Sayri's source tree",
        package.display()
    )]
    NoRuntime {
        /// The runtime's `package.json` that is missing.
        package: PathBuf,
    },
    /// The server's script could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Script {
        /// The script's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The daemon's loopback port for the server could not be made.
    #[error(transparent)]
    Port(#[from] PortError),
    /// The supervisor refused to start the server.
    #[error(transparent)]
    Supervisor(#[from] SupervisorError),
    /// No random bytes for the server's token.
    #[error("cannot read /dev/urandom for the local model's token: {0}")]
    Token(std::io::Error),
}

/// The model file a `provider.local_model` value names: an absolute path as it is, a name as
/// `$STATE/models/<name>.gguf` (`.gguf` may be part of the name).
///
/// # Errors
/// The file does not exist, with what to do.
pub fn resolve(paths: &Paths, value: &str) -> Result<PathBuf, LocalModelError> {
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
    let installed = if names.is_empty() {
        format!(
            "no model is installed in {} — `./scripts/setup --model` installs a small one, or `sayri models install FILE.gguf` adds yours",
            paths.models_dir().display()
        )
    } else {
        format!("installed: {}", names.join(", "))
    };
    Err(LocalModelError::NoModelFile { path, installed })
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
pub fn runtime_installed(paths: &Paths) -> Result<(), LocalModelError> {
    let pkg = paths
        .llm_server_dir()
        .join("node_modules/node-llama-cpp/package.json");
    if pkg.is_file() {
        Ok(())
    } else {
        Err(LocalModelError::NoRuntime { package: pkg })
    }
}

/// What a `provider.local_model` value needs on this machine: the model file and the runtime.
///
/// # Errors
/// As [`resolve`] and [`runtime_installed`].
pub fn check_setting(paths: &Paths, value: &str) -> Result<(), LocalModelError> {
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
    /// The bearer token of the server's current start, and how many starts made one.
    token: Arc<Mutex<(u64, Option<Zeroizing<String>>)>>,
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
    /// The port the daemon holds for it (kept across restarts of the server).
    port: Option<OwnedPort>,
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
            token: Arc::new(Mutex::new((0, None))),
            state: watch::channel(LocalState::Off).0,
            inner: Mutex::new(Inner {
                configured: String::new(),
                model: None,
                port: None,
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
            Some(Err(e)) => LocalState::Failed {
                error: e.to_string(),
            },
        });
        let this = self.clone();
        let changes = self.changes.clone();
        tokio::spawn(async move {
            let _serial = changes.lock().await;
            let _ = this.supervisor.remove(CHILD_NAME).await;
            lock(&this.inner).port = None;
            let Some(Ok(model)) = resolved else {
                return;
            };
            if lock(&this.inner).configured != want {
                return; // a later change is queued behind us
            }
            if let Err(e) = this.start(&model) {
                tracing::error!("local model {}: {e}", model.display());
                let _ = this.state.send(LocalState::Failed {
                    error: e.to_string(),
                });
            }
        });
    }

    /// Writes the script, binds the daemon's port, starts the child and its watcher.
    fn start(self: &Arc<Self>, model: &Path) -> Result<(), LocalModelError> {
        let dir = self.paths.llm_server_dir();
        let script = dir.join("server.mjs");
        write_if_changed(&script, SERVER_SCRIPT).map_err(|source| LocalModelError::Script {
            path: script.clone(),
            source,
        })?;
        let port = bind_loopback()?;
        let tokens = self.token.clone();
        let spec = ChildSpec::new(CHILD_NAME, node_program(&self.paths))
            .arg(script.display().to_string())
            .arg(model.display().to_string())
            .arg("0")
            .pass_fd(LISTEN_FD_ENV, port.fd.clone())
            .fresh_secrets(Arc::new(move || {
                let token = fresh_token().map_err(|e| e.to_string())?;
                let mut slot = lock(&tokens);
                *slot = (slot.0 + 1, Some(token.clone()));
                Ok(vec![(TOKEN_NAME.to_string(), token)])
            }));
        let spec = ChildSpec {
            cwd: Some(dir),
            ..spec
        };
        let number = port.port;
        lock(&self.inner).port = Some(port);
        self.supervisor.start(spec)?;
        tracing::info!(
            "local model server starting for {} on 127.0.0.1:{number}",
            model.display()
        );
        let stop = CancellationToken::new();
        lock(&self.inner).watcher = Some(stop.clone());
        tokio::spawn(watch_child(self.clone(), number, stop));
        Ok(())
    }

    /// Stops the server (daemon shutdown stops it too, through the supervisor) and gives its
    /// port back.
    pub async fn stop(&self) {
        if let Some(w) = lock(&self.inner).watcher.take() {
            w.cancel();
        }
        let _ = self.supervisor.remove(CHILD_NAME).await;
        lock(&self.inner).port = None;
        lock(&self.token).1 = None;
        let _ = self.state.send(LocalState::Off);
    }

    /// The token of the server's current start and its number (`None` before the first).
    fn current_token(&self) -> (u64, Option<Zeroizing<String>>) {
        lock(&self.token).clone()
    }

    /// The chat model that sends requests to the local server (waiting while it starts).
    pub fn chat(self: &Arc<Self>, cfg: &Config) -> Arc<dyn ChatModel> {
        Arc::new(LocalChat {
            local: self.clone(),
            cfg: cfg.clone(),
            client: Arc::new(Mutex::new(None)),
        })
    }
}

/// A token of 32 hex characters (128 bits) from the kernel's random source.
fn fresh_token() -> Result<Zeroizing<String>, LocalModelError> {
    let mut buf = Zeroizing::new([0u8; 16]);
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, buf.as_mut_slice()))
        .map_err(LocalModelError::Token)?;
    let mut out = Zeroizing::new(String::with_capacity(32));
    for b in buf.iter() {
        out.push_str(&format!("{b:02x}"));
    }
    Ok(out)
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

/// Follows the child until `stop`: `Ready` once it runs and `/health` on the daemon's `port`
/// answers, `Starting` while it (re)starts, `Failed` when the supervisor gave up.
async fn watch_child(local: Arc<LocalModel>, port: u16, stop: CancellationToken) {
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
                ChildState::Running if healthy(port).await => LocalState::Ready { port },
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
/// client for its port and the token of its current start (rebuilt when a restart made a new
/// one).
struct LocalChat {
    local: Arc<LocalModel>,
    cfg: Config,
    client: Arc<Mutex<Option<CachedClient>>>,
}

/// A client, for the port and the start (token) number it was made for.
type CachedClient = (u16, u64, Arc<dyn ChatModel>);

impl LocalChat {
    /// The client for `port` with the current token, and the token's start number.
    fn client_for(&self, port: u16) -> (u64, Arc<dyn ChatModel>) {
        let (number, token) = self.local.current_token();
        let mut slot = lock(&self.client);
        if let Some((p, n, c)) = slot.as_ref()
            && *p == port
            && *n == number
        {
            return (number, c.clone());
        }
        let mut cfg = self.cfg.clone();
        cfg.provider.base_url = format!("http://127.0.0.1:{port}/v1");
        cfg.provider.extra_headers.clear();
        let c = build_model(
            &cfg,
            token.as_deref().map(|t| t.to_string()),
            self.local.redactor.clone(),
        );
        *slot = Some((port, number, c.clone()));
        (number, c)
    }

    fn clone_handle(&self) -> LocalChat {
        LocalChat {
            local: self.local.clone(),
            cfg: self.cfg.clone(),
            client: self.client.clone(),
        }
    }

    /// Streams `request` once the server is ready. A `401` from a server that restarted since
    /// the client was made (the request met the new start's token) is retried once, after the
    /// new start is ready.
    async fn stream_ready(self, request: ChatRequest) -> ChatStream {
        let port = match wait_ready(self.local.state.subscribe()).await {
            Ok(p) => p,
            Err(e) => return Box::pin(futures::stream::once(async move { Err(e) })),
        };
        let (number, client) = self.client_for(port);
        let mut stream = client.stream_chat(request.clone());
        let first = stream.next().await;
        let stale = matches!(&first, Some(Err(ChatError::Http { status: 401, .. })))
            && self.local.current_token().0 != number;
        if !stale {
            let head = futures::stream::iter(first);
            return Box::pin(head.chain(stream));
        }
        drop(stream);
        match wait_ready(self.local.state.subscribe()).await {
            Ok(port) => self.client_for(port).1.stream_chat(request),
            Err(e) => Box::pin(futures::stream::once(async move { Err(e) })),
        }
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
    fn stream_chat(&self, mut request: ChatRequest) -> ChatStream {
        // The local model decodes at its own temperature (greedy by default): a small model
        // sampled at an agent's usual 0.7 answers at random.
        #[allow(clippy::cast_possible_truncation)]
        let temperature = self.cfg.provider.local_temperature as f32;
        request.temperature = Some(temperature);
        let this = self.clone_handle();
        Box::pin(futures::stream::once(this.stream_ready(request)).flatten())
    }
}
