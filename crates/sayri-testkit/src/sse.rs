//! Builders for OpenAI `chat.completion.chunk` SSE streams.

use serde_json::{Value, json};

/// One `chat.completion.chunk` JSON object for choice 0.
pub fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    })
}

/// `data: <json>\n\n`.
pub fn data_event(value: &Value) -> String {
    format!("data: {value}\n\n")
}

/// `data: [DONE]\n\n`.
pub const DONE: &str = "data: [DONE]\n\n";

/// A complete stream: a role chunk, one chunk per content delta, a `stop` finish chunk and
/// `[DONE]`, LF line ends.
pub fn content_stream(deltas: &[&str]) -> Vec<u8> {
    stream_with_finish(deltas, "stop")
}

/// Like [`content_stream`] with another finish reason (e.g. `length`).
pub fn stream_with_finish(deltas: &[&str], finish: &str) -> Vec<u8> {
    let mut s = data_event(&chunk(json!({"role": "assistant", "content": ""}), None));
    for d in deltas {
        s.push_str(&data_event(&chunk(json!({"content": d}), None)));
    }
    s.push_str(&data_event(&chunk(json!({}), Some(finish))));
    s.push_str(DONE);
    s.into_bytes()
}

/// A usage-only chunk (`choices: []`), as servers send it last when asked with
/// `stream_options.include_usage`.
pub fn usage_event(prompt_tokens: usize, completion_tokens: usize) -> String {
    data_event(&json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "fake-model",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }))
}

/// `stream` (a complete stream ending with `[DONE]`) with a [`usage_event`] inserted before
/// `[DONE]`.
pub fn with_usage(stream: &[u8], prompt_tokens: usize, completion_tokens: usize) -> Vec<u8> {
    let text = String::from_utf8_lossy(stream);
    let body = text.strip_suffix(DONE).unwrap_or(&text);
    format!(
        "{body}{}{DONE}",
        usage_event(prompt_tokens, completion_tokens)
    )
    .into_bytes()
}
