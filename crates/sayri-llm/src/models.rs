//! What a server's model list (`GET /v1/models`) says about a model beyond its id.
//!
//! The context window appears under different names, depending on the server; only fields
//! that mean the window the server actually serves are read:
//!
//! | field | server |
//! |---|---|
//! | `max_model_len` | vLLM |
//! | `context_length` | OpenRouter, LM Studio, llama-swap |
//! | `max_context_length`, `loaded_context_length` | LM Studio's native list |
//! | `context_window` | Groq, Together and others |
//! | `meta.n_ctx` | llama.cpp builds that publish the running context |
//!
//! llama.cpp's `meta.n_ctx_train` (the context the model was *trained* with) is not used: the
//! server often runs with a smaller one, and overfilling it drops the front of the prompt.

use serde_json::Value;

/// Fields holding a served context window, in order of preference.
const WINDOW_FIELDS: &[&[&str]] = &[
    &["max_model_len"],
    &["loaded_context_length"],
    &["context_length"],
    &["max_context_length"],
    &["context_window"],
    &["meta", "n_ctx"],
];

fn field<'a>(entry: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(entry, |v, k| v.get(k))
}

/// The context window of `model` in a model list (`{"data": [...]}` or `{"models": [...]}`):
/// the entry whose `id` (or `name`/`model`) is `model`, or the only entry when the list has
/// one (single-model servers ignore the requested name). `None` when the list does not say or
/// the value is not a positive integer below 2³².
///
/// ```
/// use serde_json::json;
/// use sayri_llm::models::context_window;
/// let list = json!({"data": [{"id": "qwen", "max_model_len": 32768}]});
/// assert_eq!(context_window(&list, "qwen"), Some(32768));
/// assert_eq!(context_window(&json!({"data": [{"id": "a"}]}), "a"), None);
/// ```
pub fn context_window(list: &Value, model: &str) -> Option<u32> {
    let entries = list
        .get("data")
        .or_else(|| list.get("models"))
        .and_then(Value::as_array)?;
    let named = |e: &&Value| {
        ["id", "name", "model"]
            .iter()
            .any(|k| e.get(k).and_then(Value::as_str) == Some(model))
    };
    let entry = entries
        .iter()
        .find(named)
        .or_else(|| (entries.len() == 1).then(|| &entries[0]))?;
    WINDOW_FIELDS.iter().find_map(|path| {
        field(entry, path)
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
            .and_then(|n| u32::try_from(n).ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_served_window_of_the_named_model() {
        let list = json!({"data": [
            {"id": "small", "context_length": 8192},
            {"id": "big", "meta": {"n_ctx": 16384, "n_ctx_train": 131072}},
        ]});
        assert_eq!(context_window(&list, "small"), Some(8192));
        assert_eq!(context_window(&list, "big"), Some(16384));
        assert_eq!(context_window(&list, "other"), None);
    }

    #[test]
    fn a_single_model_server_answers_for_any_name_but_never_with_the_training_window() {
        let list = json!({"data": [{"id": "model.gguf", "meta": {"n_ctx_train": 131072}}]});
        assert_eq!(context_window(&list, "default"), None);
        let list = json!({"data": [{"id": "model.gguf", "max_model_len": 4096}]});
        assert_eq!(context_window(&list, "default"), Some(4096));
        assert_eq!(
            context_window(&json!({"data": [{"id": "x", "context_length": -1}]}), "x"),
            None
        );
    }
}
