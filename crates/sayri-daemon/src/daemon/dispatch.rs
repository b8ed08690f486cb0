//! The dispatcher: the table from command name to access class, run mode and handler.
//!
//! A handler is `async fn(params: P, ctx: Ctx) -> Result<P::Reply, ProtocolError>` where `P` is
//! the command's params struct from `sayri_protocol::params` ([`Params`]) and `P::Reply` its
//! reply type from `sayri_protocol::reply`. The struct names the command and its reply, so
//! registering is one line with nothing to get out of step:
//!
//! ```ignore
//! d.register(Access::Assistant, Mode::Task, commands::agent::ask);      // own task
//! d.register(Access::ReadOnly, Mode::Inline, commands::runtime::ping);  // arrival order
//! ```
//!
//! * **Access class** ([`Access`]) — required, with no default: a command cannot be registered
//!   without saying who may use it, and [`Dispatcher::route`] refuses a class to a caller it is
//!   not for, from this table alone (no separate list to forget).
//! * **Params** are parsed once, before the handler runs; bad params answer `invalid_params`
//!   naming the parameter, and the handler is not called.
//! * **Replies** are typed: the handler returns its command's reply value, and the dispatcher
//!   encodes it (`sayri_protocol::reply::encode`), the one place a reply becomes JSON.
//! * **Mode** ([`Mode`]) — task handlers run concurrently (a long `ask` never blocks `ping` or
//!   `permission_answer` on the same connection); inline handlers must be quick and
//!   non-blocking, and are answered in the order they arrived.
//!
//! Names in `names::cmd::ALL` without a handler answer `not_implemented`; other names answer
//! `unknown_command`.

use crate::bus::{Broadcaster, ClientId};
use crate::command_peer::Caller;
use crate::daemon::state::DaemonState;
use sayri_core::sync::lock;
use sayri_protocol::params::AccessClass;
use sayri_protocol::{ErrorCode, Params, ProtocolError, names, params, reply};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The boxed future of a registered handler: its reply, encoded.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, ProtocolError>> + Send>>;
/// A type-erased handler: parses the params object, then runs the typed handler.
pub type Handler = Arc<dyn Fn(Map<String, Value>, Ctx) -> HandlerFuture + Send + Sync>;

/// Who may use a command. Given at registration; there is no default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    /// Looks at state and changes nothing (`ping`, `status`, `config_get`, `sessions_list`, …).
    ReadOnly,
    /// Uses the assistant: runs or steers turns and conversations (`ask`, `talk`, `interrupt`,
    /// `switch_session`, …).
    Assistant,
    /// Manages Sayri: answers or forgets permission questions, changes settings, agents or
    /// secrets, deletes the user's data, stops the daemon. Never for a command of a turn: the
    /// model must not approve its own commands or loosen its own limits.
    Management,
}

impl Access {
    /// Whether a caller of kind `caller` may use a command of this class.
    pub fn permits(self, caller: Caller) -> bool {
        match (self, caller) {
            (_, Caller::User) => true,
            (Access::ReadOnly | Access::Assistant, Caller::Command) => true,
            (Access::Management, Caller::Command) => false,
        }
    }

    /// The class's name as written in docs and logs (`read-only`, `assistant`, `management`).
    pub fn name(self) -> &'static str {
        match self {
            Access::ReadOnly => "read-only",
            Access::Assistant => "assistant",
            Access::Management => "management",
        }
    }
}

impl From<AccessClass> for Access {
    fn from(class: AccessClass) -> Access {
        match class {
            AccessClass::ReadOnly => Access::ReadOnly,
            AccessClass::Assistant => Access::Assistant,
            AccessClass::Management => Access::Management,
        }
    }
}

/// One limit a connection put on itself with `client_hello`: commands of class `ceiling` or
/// lower, plus the commands in `also`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfLimit {
    /// The highest class the connection keeps.
    pub ceiling: Access,
    /// Commands above `ceiling` it keeps anyway.
    pub also: BTreeSet<String>,
}

impl SelfLimit {
    /// Whether command `cmd` of class `access` passes this limit.
    pub fn permits(&self, cmd: &str, access: Access) -> bool {
        access <= self.ceiling || self.also.contains(cmd)
    }
}

/// The limits a connection put on itself, shared by all its requests. Limits are only ever
/// added, so a connection can narrow what it may do but never widen it again: a command must
/// pass every limit.
#[derive(Debug, Default)]
pub struct SelfLimits(Mutex<Vec<SelfLimit>>);

impl SelfLimits {
    /// Adds a limit (it applies to every later request of the connection).
    pub fn add(&self, limit: SelfLimit) {
        lock(&self.0).push(limit);
    }

    /// Whether command `cmd` of class `access` passes every limit (true when there is none).
    pub fn permits(&self, cmd: &str, access: Access) -> bool {
        lock(&self.0).iter().all(|l| l.permits(cmd, access))
    }

    /// Whether any limit was set.
    pub fn is_limited(&self) -> bool {
        !lock(&self.0).is_empty()
    }
}

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
    /// Who the requesting connection is.
    pub caller: Caller,
    /// What the connection limited itself to (`client_hello`).
    pub limits: Arc<SelfLimits>,
}

impl Ctx {
    /// The daemon-wide event fan-out.
    pub fn broadcaster(&self) -> &Broadcaster {
        &self.daemon.broadcaster
    }

    /// Whether this connection may do what command `cmd` of class `access` does: its caller
    /// kind allows the class and it did not give the command up with `client_hello`. Handlers
    /// use it for actions a command can include (a turn that switches agents).
    pub fn may(&self, cmd: &str, access: Access) -> bool {
        access.permits(self.caller) && self.limits.permits(cmd, access)
    }
}

/// One registered command.
#[derive(Clone)]
pub struct Entry {
    /// Who may use it.
    pub access: Access,
    /// How it runs.
    pub mode: Mode,
    /// Parses params and runs.
    pub handler: Handler,
}

/// The command table.
#[derive(Default, Clone)]
pub struct Dispatcher {
    entries: BTreeMap<&'static str, Entry>,
}

impl Dispatcher {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `handler` for the command of `P` (`P::CMD`) with its access class and run
    /// mode. Replaces an earlier registration of the same command.
    pub fn register<P, F, Fut>(&mut self, access: Access, mode: Mode, handler: F) -> &mut Self
    where
        P: Params,
        F: Fn(P, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<P::Reply, ProtocolError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased: Handler = Arc::new(move |raw, ctx| match params::parse::<P>(raw) {
            Ok(p) => {
                let answer = handler(p, ctx);
                Box::pin(async move { encode_reply::<P>(&answer.await?) })
            }
            Err(e) => Box::pin(std::future::ready(Err(e))),
        });
        self.entries.insert(
            P::CMD,
            Entry {
                access,
                mode,
                handler: erased,
            },
        );
        self
    }

    /// Every registered command with its access class and mode, in name order.
    pub fn commands(&self) -> impl Iterator<Item = (&'static str, Access, Mode)> + '_ {
        self.entries.iter().map(|(c, e)| (*c, e.access, e.mode))
    }

    /// The entry for `cmd` if `caller` may use it and the connection's `limits` keep it.
    ///
    /// # Errors
    /// `unknown_command` for a name outside the protocol, `not_implemented` for a protocol
    /// command without a handler, `denied` when the command's class is not for `caller` or the
    /// connection gave the command up with `client_hello`.
    pub fn route(
        &self,
        cmd: &str,
        caller: Caller,
        limits: &SelfLimits,
    ) -> Result<&Entry, ProtocolError> {
        let Some(entry) = self.entries.get(cmd) else {
            return Err(if names::cmd::ALL.contains(&cmd) {
                ProtocolError::new(
                    ErrorCode::NotImplemented,
                    format!("command {cmd} is not implemented by this daemon yet"),
                )
            } else {
                ProtocolError::new(
                    ErrorCode::UnknownCommand,
                    format!("unknown command: {cmd} (see PROTOCOL.md for the command list)"),
                )
            });
        };
        if !entry.access.permits(caller) {
            return Err(ProtocolError::new(
                ErrorCode::Denied,
                format!(
                    "{cmd} is a {} command, refused to a client running inside a command of Sayri; run it yourself from a terminal",
                    entry.access.name()
                ),
            ));
        }
        if !limits.permits(cmd, entry.access) {
            return Err(ProtocolError::new(
                ErrorCode::Denied,
                format!(
                    "{cmd} is a {} command, and this connection gave it up with client_hello (the web bubble cannot use it); run it with the `sayri` command line",
                    entry.access.name()
                ),
            ));
        }
        Ok(entry)
    }
}

/// The `result` of command `P`'s reply.
///
/// # Errors
/// `internal` when the reply cannot be written as JSON (a path that is not UTF-8).
fn encode_reply<P: Params>(answer: &P::Reply) -> Result<Value, ProtocolError> {
    reply::encode(answer).map_err(|e| {
        ProtocolError::internal(format!(
            "the reply to {} cannot be written as JSON: {e}",
            P::CMD
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_management_is_refused_to_a_command_and_a_user_may_use_everything() {
        for access in [Access::ReadOnly, Access::Assistant, Access::Management] {
            assert!(access.permits(Caller::User));
            assert_eq!(
                access.permits(Caller::Command),
                access != Access::Management
            );
        }
    }

    #[test]
    fn self_limits_only_narrow_and_keep_the_commands_named() {
        let limits = SelfLimits::default();
        assert!(limits.permits("quit", Access::Management));
        limits.add(SelfLimit {
            ceiling: Access::Assistant,
            also: ["permission_answer".to_string()].into(),
        });
        assert!(limits.permits("talk", Access::Assistant));
        assert!(limits.permits("permission_answer", Access::Management));
        assert!(!limits.permits("config_set", Access::Management));
        // A second, wider limit does not give anything back.
        limits.add(SelfLimit {
            ceiling: Access::Management,
            also: BTreeSet::new(),
        });
        assert!(!limits.permits("config_set", Access::Management));
        limits.add(SelfLimit {
            ceiling: Access::ReadOnly,
            also: BTreeSet::new(),
        });
        assert!(!limits.permits("talk", Access::Assistant));
        assert!(!limits.permits("permission_answer", Access::Management));
        assert!(limits.permits("status", Access::ReadOnly));
    }
}
