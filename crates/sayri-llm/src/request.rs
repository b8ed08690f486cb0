//! The JSON body of a `POST /chat/completions` request.
//!
//! `{"model", "messages", "stream": true, "stream_options": {"include_usage": true}?,
//! "temperature"?, "max_tokens"? (omitted when 0), "tools"? (native path only)}`.
//! Messages: every non-empty `system` message is merged (blank-line separated) into one first
//! system message; the others keep their order with only `role` and `content` — reasoning is
//! never sent back, and error records (`Role::Error`) are dropped. A message with images has as
//! `content` a list of parts: the text (`{"type": "text", "text"}`) and then each image
//! (`{"type": "image_url", "image_url": {"url": "data:image/png;base64,…"}}`).

use sayri_core::ports::{ChatMessage, ChatRequest, Role};
use serde_json::{Value, json};

use crate::config::ClientConfig;

/// The `content` of `m`: its text, or text and image parts when it carries images.
fn content(m: &ChatMessage) -> Value {
    if m.images.is_empty() {
        return json!(m.content);
    }
    let mut parts = vec![json!({"type": "text", "text": m.content})];
    parts.extend(
        m.images
            .iter()
            .map(|i| json!({"type": "image_url", "image_url": {"url": i.data_url()}})),
    );
    Value::Array(parts)
}

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
        messages.push(json!({"role": m.role, "content": content(m)}));
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
