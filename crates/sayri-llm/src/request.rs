//! The JSON body of a `POST /chat/completions` request.
//!
//! `{"model", "messages", "stream": true, "stream_options": {"include_usage": true}?,
//! "temperature"?, "max_tokens"? (omitted when 0), "tools"? (native path only)}`.
//! Messages: every non-empty `system` message is merged (blank-line separated) into one first
//! system message; the others keep their order with only `role` and `content` — reasoning is
//! never sent back, and error records (`Role::Error`) are dropped.

use sayri_core::ports::{ChatRequest, Role};
use serde_json::{Value, json};

use crate::config::ClientConfig;

/// Builds the request body for `request` under `config`.
pub fn chat_body(config: &ClientConfig, request: &ChatRequest) -> Value {
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System && !m.content.trim().is_empty())
        .map(|m| m.content.as_str())
        .collect();
    let mut messages = Vec::with_capacity(request.messages.len());
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system.join("\n\n")}));
    }
    // Error records are for people; a model never sees them.
    for m in request
        .messages
        .iter()
        .filter(|m| m.role != Role::System && m.role != Role::Error)
    {
        messages.push(json!({"role": m.role, "content": m.content}));
    }
    let model = if request.model.trim().is_empty() {
        "default"
    } else {
        request.model.as_str()
    };
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
    });
    if config.include_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(n) = request.max_tokens.filter(|&n| n > 0) {
        body["max_tokens"] = json!(n);
    }
    if config.native_tools
        && let Some(tools) = request.tools.as_ref().filter(|t| !t.is_null())
    {
        body["tools"] = tools.clone();
    }
    body
}
