//! Helpers shared by the suites.

use std::time::Duration;

use futures::StreamExt;
use sayri_core::ports::{
    ChatError, ChatEvent, ChatMessage, ChatModel, ChatRequest, FinishReason, Role, Usage,
};
use sayri_llm::{ClientConfig, OpenAiClient};

/// Everything a stream produced.
#[derive(Debug, Default)]
pub struct Outcome {
    pub events: Vec<ChatEvent>,
    pub content: String,
    pub reasoning: String,
    pub usage: Option<Usage>,
    pub finish: Option<FinishReason>,
    pub error: Option<ChatError>,
}

pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn hex_reads(name: &str) -> Vec<Vec<u8>> {
    String::from_utf8(fixture(name))
        .unwrap()
        .lines()
        .map(|l| {
            let l = l.trim();
            (0..l.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&l[i..i + 2], 16).unwrap())
                .collect()
        })
        .collect()
}

/// A config with fast retries for tests.
pub fn config(base_url: &str) -> ClientConfig {
    ClientConfig {
        retry_base_delay: Duration::from_millis(20),
        ..ClientConfig::new(base_url)
    }
}

pub fn client(base_url: &str) -> OpenAiClient {
    OpenAiClient::new(config(base_url)).unwrap()
}

pub fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        model: "fake-model".into(),
        messages: vec![ChatMessage::new(Role::User, text)],
        ..Default::default()
    }
}

pub async fn run(client: &OpenAiClient, request: ChatRequest) -> Outcome {
    let mut stream = client.stream_chat(request);
    let mut out = Outcome::default();
    while let Some(item) = tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .expect("stream made no progress for 30 s")
    {
        match item {
            Ok(ev) => {
                assert!(out.finish.is_none(), "event after Finish: {ev:?}");
                match &ev {
                    ChatEvent::Content(t) => out.content.push_str(t),
                    ChatEvent::Reasoning(t) => out.reasoning.push_str(t),
                    ChatEvent::Usage(u) => out.usage = Some(*u),
                    ChatEvent::Finish(f) => out.finish = Some(f.clone()),
                    ChatEvent::ToolCall { .. } => {}
                }
                out.events.push(ev);
            }
            Err(e) => {
                assert!(out.error.is_none(), "two errors");
                out.error = Some(e);
            }
        }
    }
    out
}

/// Asks `x` through `client` and returns the error the stream ended with (panics without one).
pub async fn error_of(client: &OpenAiClient) -> ChatError {
    run(client, ask("x"))
        .await
        .error
        .expect("the stream ended without an error")
}
