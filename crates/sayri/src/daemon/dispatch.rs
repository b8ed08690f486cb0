//! The dispatcher: a table from command name to async handler.
//!
//! A handler is `async fn(params: serde_json::Value, ctx: Ctx) -> Result<Value, ProtocolError>`;
//! `params` is always a JSON object. Registering a command is one line:
//!
//! ```ignore
//! d.register(cmd::ASK, commands::ask::ask);          // runs in its own task
//! d.register_inline(cmd::PING, commands::runtime::ping); // quick: answered in arrival order
//! ```
//!
//! Task handlers run concurrently (a long `ask` never blocks `ping` or `permission_answer` on the
//! same connection); inline handlers must be quick and non-blocking, and are answered in the
//! order they arrived. Names in `names::cmd::ALL` without a handler answer `not_implemented`;
//! other names answer `unknown_command`.

use crate::daemon::broadcast::{Broadcaster, ClientId};
use crate::daemon::state::DaemonState;
use sayri_protocol::{ErrorCode, ProtocolError, names};
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The boxed future a handler returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, ProtocolError>> + Send>>;
/// A type-erased handler.
pub type Handler = Arc<dyn Fn(Value, Ctx) -> HandlerFuture + Send + Sync>;

/// How a command runs relative to its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Awaited by the connection's reader, in arrival order. For quick commands only.
    Inline,
    /// Spawned in its own task; responses may overtake earlier requests.
    Task,
}

/// What a handler gets besides its params.
#[derive(Clone)]
pub struct Ctx {
    /// Shared daemon state.
    pub daemon: Arc<DaemonState>,
    /// The requesting connection.
    pub client: ClientId,
    /// Cancelled when that client disconnects or is dropped.
    pub client_gone: CancellationToken,
    /// The client runs inside a command of this daemon
    /// ([`crate::daemon::command_peer::peer_is_command`]): management commands are refused.
    pub from_command: bool,
}

impl Ctx {
    /// The daemon-wide event fan-out.
    pub fn broadcaster(&self) -> &Broadcaster {
        &self.daemon.broadcaster
    }
}

/// Result of looking a command up.
pub enum Lookup {
    /// A handler exists.
    Found(Mode, Handler),
    /// A protocol command without a handler yet.
    NotImplemented,
    /// Not a protocol command.
    Unknown,
}

/// The command table.
#[derive(Default, Clone)]
pub struct Dispatcher {
    handlers: HashMap<String, (Mode, Handler)>,
}

impl Dispatcher {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `f` for `cmd`, run in its own task. Replaces an earlier registration.
    pub fn register<F, Fut>(&mut self, cmd: &str, f: F) -> &mut Self
    where
        F: Fn(Value, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ProtocolError>> + Send + 'static,
    {
        self.insert(cmd, Mode::Task, f)
    }

    /// Registers a quick `f` for `cmd`, answered in arrival order on its connection.
    pub fn register_inline<F, Fut>(&mut self, cmd: &str, f: F) -> &mut Self
    where
        F: Fn(Value, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ProtocolError>> + Send + 'static,
    {
        self.insert(cmd, Mode::Inline, f)
    }

    fn insert<F, Fut>(&mut self, cmd: &str, mode: Mode, f: F) -> &mut Self
    where
        F: Fn(Value, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ProtocolError>> + Send + 'static,
    {
        let h: Handler = Arc::new(move |p, c| Box::pin(f(p, c)));
        self.handlers.insert(cmd.to_string(), (mode, h));
        self
    }

    /// Finds the handler for `cmd`.
    pub fn lookup(&self, cmd: &str) -> Lookup {
        match self.handlers.get(cmd) {
            Some((mode, h)) => Lookup::Found(*mode, h.clone()),
            None if names::cmd::ALL.contains(&cmd) => Lookup::NotImplemented,
            None => Lookup::Unknown,
        }
    }

    /// The error for a command without a handler.
    pub fn missing(cmd: &str, lookup_unknown: bool) -> ProtocolError {
        if lookup_unknown {
            ProtocolError::new(
                ErrorCode::UnknownCommand,
                format!("unknown command: {cmd} (see PROTOCOL.md for the command list)"),
            )
        } else {
            ProtocolError::new(
                ErrorCode::NotImplemented,
                format!("command {cmd} is not implemented by this daemon yet"),
            )
        }
    }
}
