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
