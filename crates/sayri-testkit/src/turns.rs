//! Reading the chat requests the daemon sends, for scripted models that answer by the request:
//! which request is the session-title request, what the current request text is and which step
//! of the turn a request is.

use sayri_core::engine::TITLE_INSTRUCTION;
use serde_json::Value;

/// Whether a request body is the session-title request (its system message is the engine's
/// title instruction).
pub fn is_title_request(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s == TITLE_INSTRUCTION)
}

/// Whether a user message is an observation the engine fed back (a command result, a refusal,
/// history search results, a skill's file, a sub-agent's answer) rather than something the
/// person wrote.
pub fn is_observation(content: &str) -> bool {
    [
        "[Command",
        "[History",
        "[Skill",
        "[Sub-agent",
        "[Delegation",
    ]
    .iter()
    .any(|p| content.starts_with(p))
}

/// `(request text, step)` of a turn request: the last user message that is not an observation,
/// and how many assistant messages follow it (0 for the turn's first model call).
pub fn request_and_step(body: &Value) -> (String, usize) {
    let msgs = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let at = msgs
        .iter()
        .rposition(|m| {
            m["role"] == "user" && !is_observation(m["content"].as_str().unwrap_or_default())
        })
        .unwrap_or(0);
    let step = msgs[at.min(msgs.len())..]
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    let text = msgs
        .get(at)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    (text, step)
}

/// The content of a request's last message (the latest observation in a command step).
pub fn last_content(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}
