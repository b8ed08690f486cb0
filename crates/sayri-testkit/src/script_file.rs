//! A JSON script file for running the fake server as a process (`sayri-fake-llm`), for
//! CLI-level tests.
//!
//! ```json
//! {
//!   "replies": [
//!     {"content": ["Hel", "lo"], "finish": "stop", "write_size": 3, "delay_ms": 5},
//!     {"sse_file": "fixtures/22.sse", "event_writes": true},
//!     {"status": 401, "json": {"error": {"message": "bad key"}}, "headers": {"Retry-After": "1"}},
//!     {"status": 500, "text": "boom"}
//!   ],
//!   "repeat_last": true,
//!   "models": ["fake-model"]
//! }
//! ```
//! Relative `sse_file` paths are resolved against the script file's directory.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::reply::Reply;
use crate::server::Script;
use crate::sse;

/// One reply in a script file.
#[derive(Debug, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct ReplySpec {
    /// Content deltas for [`sse::stream_with_finish`].
    pub content: Option<Vec<String>>,
    /// Finish reason with `content` (default `stop`).
    pub finish: Option<String>,
    /// Raw SSE bytes from a file.
    pub sse_file: Option<String>,
    /// HTTP status for `json`/`text` replies (default 200).
    pub status: Option<u16>,
    /// JSON body.
    pub json: Option<Value>,
    /// Text body.
    pub text: Option<String>,
    /// Extra headers.
    pub headers: BTreeMap<String, String>,
    /// Bytes per write (0 = one write).
    pub write_size: usize,
    /// One write per SSE event.
    pub event_writes: bool,
    /// Milliseconds between writes.
    pub delay_ms: u64,
    /// Milliseconds before the status line.
    pub head_delay_ms: u64,
    /// Close after this many body bytes.
    pub cut_after: Option<usize>,
}

/// A whole script file.
#[derive(Debug, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptFile {
    /// Replies to chat requests, in order.
    pub replies: Vec<ReplySpec>,
    /// Keep answering with the last reply once the list is used up.
    pub repeat_last: bool,
    /// Model ids for `GET /v1/models` (default `["fake-model"]`).
    pub models: Option<Vec<String>>,
}

impl ReplySpec {
    fn build(&self, dir: &Path) -> Result<Reply, String> {
        let mut reply = if let Some(deltas) = &self.content {
            let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
            Reply::sse(sse::stream_with_finish(
                &refs,
                self.finish.as_deref().unwrap_or("stop"),
            ))
        } else if let Some(file) = &self.sse_file {
            let path = dir.join(file);
            let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            Reply::sse(bytes)
        } else if let Some(v) = &self.json {
            Reply::json(self.status.unwrap_or(200), v)
        } else if let Some(t) = &self.text {
            Reply::text(self.status.unwrap_or(200), t.clone())
        } else {
            return Err("a reply needs one of content, sse_file, json, text".into());
        };
        if let Some(s) = self.status {
            reply.status = s;
        }
        for (n, v) in &self.headers {
            reply = reply.with_header(n, v);
        }
        if self.write_size > 0 {
            reply = reply.with_write_size(self.write_size);
        }
        if self.event_writes {
            reply = reply.with_event_writes();
        }
        reply = reply
            .with_write_delay(Duration::from_millis(self.delay_ms))
            .with_head_delay(Duration::from_millis(self.head_delay_ms));
        if let Some(n) = self.cut_after {
            reply = reply.cut_after(n);
        }
        Ok(reply)
    }
}

impl ScriptFile {
    /// Reads and parses a script file.
    pub fn load(path: &Path) -> Result<ScriptFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Builds the [`Script`] and the models reply; `dir` resolves relative files.
    pub fn build(&self, dir: &Path) -> Result<(Script, Reply), String> {
        let replies: VecDeque<Reply> = self
            .replies
            .iter()
            .map(|r| r.build(dir))
            .collect::<Result<_, _>>()?;
        let models = self
            .models
            .clone()
            .unwrap_or_else(|| vec!["fake-model".into()]);
        let data: Vec<Value> = models
            .iter()
            .map(|m| json!({"id": m, "object": "model"}))
            .collect();
        let models = Reply::json(200, &json!({"object": "list", "data": data}));
        let script = if self.repeat_last {
            let mut queue = replies;
            let mut last: Option<Reply> = None;
            Script::from_fn(move |_| {
                if let Some(r) = queue.pop_front() {
                    last = Some(r.clone());
                    return r;
                }
                last.clone().unwrap_or_else(|| {
                    Reply::json(
                        500,
                        &json!({"error": {"message": "fake LLM script is empty"}}),
                    )
                })
            })
        } else {
            Script::Queue(replies)
        };
        Ok((script, models))
    }
}
