//! Turns the `data:` payloads of an OpenAI `chat.completion.chunk` stream into [`ChatEvent`]s.
//!
//! Lenient by design (real servers differ): unknown fields are ignored; `choices` may be `[]`,
//! `null` or missing (usage-only and content-filter chunks); `delta` may be missing;
//! `content: null` appends nothing; only choice `index` 0 is used; `finish_reason` of `null` or
//! `""` (Ollama sends one on every chunk) means "not finished". Reasoning arrives as
//! `delta.reasoning_content` (DeepSeek, llama.cpp), `delta.reasoning` (Ollama, OpenRouter,
//! vLLM) or inline `<think>` tags (see [`crate::think`]); it always becomes
//! [`ChatEvent::Reasoning`], never [`ChatEvent::Content`]. Streamed `tool_calls` fragments are
//! assembled by index and emitted whole before the finish. The stream ends on `[DONE]` or at
//! EOF after a `finish_reason`; EOF without either is [`ChatError::CutOff`].

use std::collections::BTreeMap;

/// Most tool calls assembled from one streamed reply; further distinct calls are dropped.
pub const MAX_TOOL_CALLS: usize = 64;

use sayri_core::ports::{ChatError, ChatEvent, FinishReason, Usage};
use serde::Deserialize;
use serde_json::Value;

use crate::think::{InlineThink, Piece, ThinkSplitter};

#[derive(Debug, Deserialize, Default)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<UsageJson>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize, Default)]
struct Choice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    reasoning_content: Option<Value>,
    #[serde(default)]
    reasoning: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize, Default)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize, Default)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
struct UsageJson {
    #[serde(default)]
    prompt_tokens: Option<u32>,
    #[serde(default)]
    completion_tokens: Option<u32>,
    #[serde(default)]
    total_tokens: Option<u32>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Stateful decoder of one chat stream.
#[derive(Debug)]
pub struct ChunkDecoder {
    think: ThinkSplitter,
    calls: BTreeMap<u32, PartialCall>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    done: bool,
}

/// Text of a `content`/`reasoning` value: strings as is, arrays of `{text}` parts joined,
/// anything else (including `null`) empty.
fn text_of(value: &Option<Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

fn finish_reason(raw: &str) -> FinishReason {
    match raw {
        "stop" | "eos" | "end_turn" => FinishReason::Stop,
        "length" | "max_tokens" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    }
}

impl ChunkDecoder {
    /// A decoder for a new stream with the given inline-`<think>` policy.
    pub fn new(think: InlineThink) -> Self {
        ChunkDecoder {
            think: ThinkSplitter::new(think),
            calls: BTreeMap::new(),
            finish: None,
            usage: None,
            done: false,
        }
    }

    /// Decodes a whole non-streamed `chat.completion` body (a server that ignored
    /// `"stream": true`): `choices[0].message` is treated as one delta (content, reasoning,
    /// tool calls), then the finish reason and `usage`, exactly as if it had been streamed in one
    /// chunk followed by `[DONE]`. A body without `choices` is an error.
    pub fn on_completion(&mut self, body: &str) -> Result<Vec<ChatEvent>, ChatError> {
        let json: Value = serde_json::from_str(body).map_err(|_| {
            ChatError::Other(
                "the model server answered with JSON that is not a chat completion".into(),
            )
        })?;
        if json.get("error").is_some_and(|e| !e.is_null()) {
            return self.on_data(body);
        }
        let choice = json
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .ok_or_else(|| {
                ChatError::Other(
                    "the model server's reply has no choices; is provider.base_url an OpenAI-compatible API?"
                        .into(),
                )
            })?;
        let mut delta = choice.get("message").cloned().unwrap_or(Value::Null);
        if let Some(calls) = delta.get_mut("tool_calls").and_then(Value::as_array_mut) {
            for (i, call) in calls.iter_mut().enumerate() {
                if let Some(c) = call.as_object_mut() {
                    c.entry("index").or_insert(Value::from(i));
                }
            }
        }
        let chunk = serde_json::json!({
            "choices": [{"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason")}],
            "usage": json.get("usage"),
        });
        let mut out = self.on_data(&chunk.to_string())?;
        out.extend(self.on_data("[DONE]")?);
        Ok(out)
    }

    /// True once `[DONE]` was seen; later data is ignored.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The usage reported so far (`None` when the server sent none: unknown, not zero).
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// Handles one SSE `data` payload. Malformed JSON is skipped (logged); an in-stream
    /// `{"error": …}` object is an error.
    pub fn on_data(&mut self, data: &str) -> Result<Vec<ChatEvent>, ChatError> {
        let mut out = Vec::new();
        if self.done {
            return Ok(out);
        }
        let data = data.trim();
        if data.is_empty() {
            return Ok(out);
        }
        if data == "[DONE]" {
            self.done = true;
            self.complete(&mut out);
            return Ok(out);
        }
        let chunk: Chunk = match serde_json::from_str(data) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, len = data.len(), "skipping a malformed stream chunk");
                return Ok(out);
            }
        };
        if let Some(err) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| err.as_str().map(str::to_string))
                .unwrap_or_else(|| err.to_string());
            return Err(ChatError::Other(format!(
                "the model server reported an error mid-stream: {}",
                crate::http_error::shorten(&message)
            )));
        }
        if let Some(u) = chunk.usage {
            let prompt = u.prompt_tokens.unwrap_or(0);
            let completion = u.completion_tokens.unwrap_or(0);
            self.usage = Some(Usage {
                prompt_tokens: prompt,
                completion_tokens: completion,
                total_tokens: u.total_tokens.unwrap_or(prompt + completion),
            });
        }
        for choice in chunk.choices.unwrap_or_default() {
            if choice.index.unwrap_or(0) != 0 {
                continue; // other choices are never mixed into choice 0
            }
            if let Some(delta) = choice.delta {
                self.on_delta(delta, &mut out);
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish = Some(finish_reason(&reason));
            }
        }
        Ok(out)
    }

    fn on_delta(&mut self, delta: Delta, out: &mut Vec<ChatEvent>) {
        let reasoning = text_of(&delta.reasoning_content) + &text_of(&delta.reasoning);
        if delta.reasoning_content.is_some() || delta.reasoning.is_some() {
            // The server separates reasoning itself: held content is answer.
            let released = self.think.answer_mode();
            push_pieces(released, out);
        }
        if !reasoning.is_empty() {
            out.push(ChatEvent::Reasoning(reasoning));
        }
        let content = text_of(&delta.content);
        if !content.is_empty() {
            let pieces = self.think.push(&content);
            push_pieces(pieces, out);
        }
        for (pos, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
            let index = call.index.unwrap_or(pos as u32);
            if !self.calls.contains_key(&index) && self.calls.len() >= MAX_TOOL_CALLS {
                // A flood of distinct calls would cost far more memory than its bytes on the
                // wire; calls past the cap are dropped.
                continue;
            }
            let entry = self.calls.entry(index).or_default();
            if let Some(id) = call.id.filter(|s| !s.is_empty()) {
                entry.id = id;
            }
            if let Some(f) = call.function {
                if let Some(name) = f.name.filter(|s| !s.is_empty()) {
                    entry.name = name;
                }
                if let Some(args) = f.arguments {
                    entry.arguments.push_str(&args);
                }
            }
        }
    }

    /// The byte stream ended. Complete if `[DONE]` or a finish reason was seen, else cut off.
    pub fn on_eof(&mut self) -> Result<Vec<ChatEvent>, ChatError> {
        let mut out = Vec::new();
        if self.done {
            return Ok(out);
        }
        if self.finish.is_none() {
            return Err(ChatError::CutOff);
        }
        self.done = true;
        self.complete(&mut out);
        Ok(out)
    }

    fn complete(&mut self, out: &mut Vec<ChatEvent>) {
        push_pieces(self.think.finish(), out);
        for (_, call) in std::mem::take(&mut self.calls) {
            out.push(ChatEvent::ToolCall {
                id: call.id,
                name: call.name,
                arguments: call.arguments,
            });
        }
        if let Some(u) = self.usage {
            out.push(ChatEvent::Usage(u));
        }
        out.push(ChatEvent::Finish(
            self.finish.take().unwrap_or(FinishReason::Stop),
        ));
    }
}

fn push_pieces(pieces: Vec<Piece>, out: &mut Vec<ChatEvent>) {
    for p in pieces {
        match p {
            Piece::Answer(t) => out.push(ChatEvent::Content(t)),
            Piece::Reasoning(t) => out.push(ChatEvent::Reasoning(t)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::SseParser;

    /// Parses and decodes `bytes` delivered in two reads split at `cut`.
    fn decode(bytes: &[u8], cut: usize, think: InlineThink) -> (String, String, Vec<ChatEvent>) {
        let mut parser = SseParser::new();
        let mut decoder = ChunkDecoder::new(think);
        let mut events = Vec::new();
        for read in [&bytes[..cut], &bytes[cut..]] {
            for ev in parser.feed(read) {
                events.extend(decoder.on_data(&ev.data).unwrap());
            }
        }
        events.extend(decoder.on_eof().unwrap());
        let mut content = String::new();
        let mut reasoning = String::new();
        for e in &events {
            match e {
                ChatEvent::Content(t) => content.push_str(t),
                ChatEvent::Reasoning(t) => reasoning.push_str(t),
                _ => {}
            }
        }
        (content, reasoning, events)
    }

    #[test]
    fn a_flood_of_distinct_tool_calls_is_capped_and_a_known_call_still_grows() {
        let mut decoder = ChunkDecoder::new(InlineThink::Off);
        for i in 0..5_000u32 {
            let c = serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "id": format!("c{i}"), "function": {"name": "bash", "arguments": "{"}}
            ]}}]});
            decoder.on_data(&c.to_string()).unwrap();
        }
        let more = serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": "}"}}
        ]}, "finish_reason": "tool_calls"}]});
        let mut events = decoder.on_data(&more.to_string()).unwrap();
        events.extend(decoder.on_eof().unwrap());
        let calls: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                ChatEvent::ToolCall { id, arguments, .. } => Some((id.clone(), arguments.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(calls.len(), MAX_TOOL_CALLS);
        assert_eq!(calls[0], ("c0".to_string(), "{}".to_string()));
    }

    #[test]
    fn fixtures_give_the_same_result_at_every_split_point() {
        let fixtures: [(&[u8], &str, &str); 6] = [
            (
                include_bytes!("../tests/fixtures/sse-comments-crlf.sse"),
                "Hello",
                "",
            ),
            (
                include_bytes!("../tests/fixtures/sse-empty-choices-usage.a.sse"),
                "Done.",
                "",
            ),
            (
                include_bytes!("../tests/fixtures/sse-empty-choices-usage.b.sse"),
                "Done.",
                "",
            ),
            (
                include_bytes!("../tests/fixtures/sse-reasoning.a.sse"),
                ANSWER,
                REASONING,
            ),
            (
                include_bytes!("../tests/fixtures/sse-reasoning.b.sse"),
                ANSWER,
                REASONING,
            ),
            (
                include_bytes!("../tests/fixtures/sse-reasoning.c.sse"),
                ANSWER,
                REASONING,
            ),
        ];
        for (k, (bytes, answer, reasoning)) in fixtures.iter().enumerate() {
            for think in [InlineThink::Auto, InlineThink::Explicit] {
                for cut in 0..=bytes.len() {
                    let (c, r, events) = decode(bytes, cut, think);
                    assert_eq!(
                        (c.as_str(), r.as_str()),
                        (*answer, *reasoning),
                        "fixture {k} cut {cut}"
                    );
                    assert_eq!(events.last(), Some(&ChatEvent::Finish(FinishReason::Stop)));
                    let usage = events.iter().find_map(|e| match e {
                        ChatEvent::Usage(u) => Some(*u),
                        _ => None,
                    });
                    if k == 1 || k == 2 {
                        assert_eq!(
                            usage,
                            Some(Usage {
                                prompt_tokens: 12,
                                completion_tokens: 2,
                                total_tokens: 14
                            })
                        );
                    } else {
                        assert_eq!(usage, None);
                    }
                }
            }
        }
    }

    const REASONING: &str = "The user wants a listing. Old habit would be:\n```bash\nrm -rf ~/sayri-cache\n```\nbut listing is enough.";
    const ANSWER: &str = "Here is the listing:\n```bash\nls -la\n```\n";

    #[test]
    fn eof_without_finish_is_cut_off_and_with_finish_is_complete() {
        let mut d = ChunkDecoder::new(InlineThink::Explicit);
        d.on_data(r#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#)
            .unwrap();
        assert_eq!(d.on_eof(), Err(ChatError::CutOff));
        let mut d = ChunkDecoder::new(InlineThink::Explicit);
        d.on_data(r#"{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"length"}]}"#)
            .unwrap();
        assert_eq!(
            d.on_eof().unwrap(),
            vec![ChatEvent::Finish(FinishReason::Length)]
        );
    }

    #[test]
    fn data_after_done_is_ignored() {
        let mut d = ChunkDecoder::new(InlineThink::Explicit);
        assert_eq!(
            d.on_data("[DONE]").unwrap(),
            vec![ChatEvent::Finish(FinishReason::Stop)]
        );
        assert!(
            d.on_data(r#"{"choices":[{"index":0,"delta":{"content":"late"}}]}"#)
                .unwrap()
                .is_empty()
        );
        assert!(d.on_eof().unwrap().is_empty());
    }
}
