//! The scripted model the benchmarks talk to: an OpenAI-compatible server on loopback
//! (`sayri_testkit::FakeLlm`) that answers at once and reports `usage` the way a server whose
//! model uses the `o200k_base` tokenizer would, so the daemon records provider-style token
//! counts.
//!
//! Replies, by the request text (the last user message that is not an observation) and the
//! step (assistant messages after it):
//!
//! | request | step 0 | later steps |
//! |---|---|---|
//! | `ping` | `pong` | |
//! | `Say hi …` | `Hi! How can I help?` | |
//! | `… disk space …` | prose + `df -h /` block | one-line answer |
//! | `How many lines does PATH have…` | prose + `cat PATH` block | one-line answer |
//! | `… capital of France …` (the spoken question of the voice section) | `Paris is the capital of France.` | |
//!
//! The title request a new session triggers is answered with a title and left out of counts.

use sayri_core::domain::tokens::exact::ExactTokenizer;
use sayri_testkit::turns::{is_title_request, request_and_step};
use sayri_testkit::{FakeLlm, RecordedRequest, Reply, Script, sse, tokens};
use serde_json::Value;
use std::sync::Arc;

/// The answer text for a turn request.
fn answer(text: &str, step: usize) -> String {
    if text == "ping" {
        return "pong".into();
    }
    if text.starts_with("Say hi") {
        return "Hi! How can I help?".into();
    }
    if text.contains("capital of France") {
        return "Paris is the capital of France.".into();
    }
    if text.contains("disk space") {
        return if step == 0 {
            "I will check.\n```bash\ndf -h /\n```".into()
        } else {
            "The root filesystem has space left; see the figures above.".into()
        };
    }
    if let Some(path) = text
        .strip_prefix("How many lines does ")
        .and_then(|rest| rest.split_whitespace().next())
    {
        return if step == 0 {
            format!("I'll read the log.\n```bash\ncat {path}\n```")
        } else {
            "The log has 60000 lines; the last one is `line 060000: status=ok`.".into()
        };
    }
    "I do not know that one.".into()
}

/// The scripted server, with its own runtime.
pub struct Model {
    /// The server.
    pub server: FakeLlm,
    _rt: tokio::runtime::Runtime,
}

impl Model {
    /// Starts the server; `tokenizer` counts the usage it reports.
    pub fn start(tokenizer: Arc<ExactTokenizer>) -> Result<Model, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a runtime: {e}"))?;
        let script = Script::from_fn(move |req: &RecordedRequest| {
            let body = req.json().unwrap_or(Value::Null);
            let text = if is_title_request(&body) {
                "Bench session".to_string()
            } else {
                let (request, step) = request_and_step(&body);
                // A merged user message (an interrupted turn before it) ends with the request.
                let request = request
                    .rsplit("\n\n")
                    .next()
                    .unwrap_or(&request)
                    .to_string();
                answer(&request, step)
            };
            let stream = sse::content_stream(&[&text]);
            let prompt = tokens::prompt_tokens(&tokenizer, &body);
            Reply::sse(sse::with_usage(&stream, prompt, tokenizer.count(&text)))
        });
        let server = rt
            .block_on(FakeLlm::start(script))
            .map_err(|e| format!("cannot start the scripted model: {e}"))?;
        Ok(Model { server, _rt: rt })
    }

    /// The turn requests received so far (title requests left out): raw body size in bytes and
    /// JSON body.
    pub fn turn_requests(&self) -> Vec<(usize, Value)> {
        self.server
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .filter_map(|r| Some((r.body.len(), r.json()?)))
            .filter(|(_, b)| !is_title_request(b))
            .collect()
    }
}
