//! Command handlers, one file per area. [`register_all`] is the full table of this build.

pub mod config;
pub mod runtime;

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
        .register_inline(cmd::CONFIG_LIST, config::config_list);
}

/// A required string parameter, or `invalid_params` naming it.
pub fn required_str<'a>(params: &'a Value, name: &str) -> Result<&'a str, ProtocolError> {
    params
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ProtocolError::invalid_params(format!("missing '{name}'")))
}
