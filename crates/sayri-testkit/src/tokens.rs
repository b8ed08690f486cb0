//! Provider-style token counts for a scripted server: what an OpenAI-compatible server whose
//! model uses the `o200k_base` tokenizer would report as `usage`.

use sayri_core::domain::tokens::exact::ExactTokenizer;
use sayri_core::domain::tokens::{MESSAGE_OVERHEAD, REQUEST_OVERHEAD};
use serde_json::Value;

/// `usage.prompt_tokens` of a chat request body: the `o200k_base` tokens of every message's
/// content, plus the chat format's per-message and per-request overhead.
pub fn prompt_tokens(tokenizer: &ExactTokenizer, body: &Value) -> usize {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    REQUEST_OVERHEAD
        + messages
            .iter()
            .map(|m| tokenizer.count(m["content"].as_str().unwrap_or("")) + MESSAGE_OVERHEAD)
            .sum::<usize>()
}
