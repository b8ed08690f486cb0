//! Command handlers, one file per area. [`register_all`] is the full table of this build.

pub mod agent;
pub mod config;
pub mod permissions;
pub mod runtime;
pub mod vault;

use crate::daemon::dispatch::Dispatcher;
use sayri_protocol::ProtocolError;
use sayri_protocol::names::cmd;
use serde_json::Value;

/// Registers every implemented command.
pub fn register_all(d: &mut Dispatcher) {
    d.register_inline(cmd::PING, runtime::ping)
        .register_inline(cmd::VERSION, runtime::version)
        .register_inline(cmd::STATUS, runtime::status)
        .register_inline(cmd::QUIT, runtime::quit)
        .register_inline(cmd::CONFIG_GET, config::config_get)
        .register_inline(cmd::CONFIG_SET, config::config_set)
        .register_inline(cmd::CONFIG_LIST, config::config_list)
        .register(cmd::TALK, agent::talk)
        .register(cmd::ASK, agent::ask)
        .register_inline(cmd::INTERRUPT, agent::interrupt)
        .register_inline(cmd::NEW_CONVERSATION, agent::new_conversation)
        .register_inline(cmd::SWITCH_SESSION, agent::switch_session)
        .register(cmd::SESSIONS_LIST, agent::sessions_list)
        .register(cmd::SESSION_GET, agent::session_get)
        .register(cmd::SESSION_RENAME, agent::session_rename)
        .register(cmd::SESSION_DELETE, agent::session_delete)
        .register(cmd::AGENTS_LIST, agent::agents_list)
        .register_inline(cmd::AGENT_SWITCH, agent::agent_switch)
        .register_inline(cmd::PERMISSION_LIST, permissions::permission_list)
        .register_inline(cmd::PERMISSION_ANSWER, permissions::permission_answer)
        .register_inline(cmd::PERMISSION_FORGET, permissions::permission_forget)
        .register(cmd::VAULT_LIST, vault::vault_list)
        .register(cmd::VAULT_SET, vault::vault_set)
        .register(cmd::VAULT_DELETE, vault::vault_delete);
}

/// A required string parameter, or `invalid_params` naming it.
pub fn required_str<'a>(params: &'a Value, name: &str) -> Result<&'a str, ProtocolError> {
    params
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ProtocolError::invalid_params(format!("missing '{name}'")))
}
