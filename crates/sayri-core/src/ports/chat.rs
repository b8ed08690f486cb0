//! The `ChatModel` port: a streaming chat completion (OpenAI-compatible semantics).

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The person (or an observation fed back as the user).
    User,
    /// The model.
    Assistant,
    /// A tool result (native tool-calling path).
    Tool,
    /// A stored error record: a request that failed (provider unreachable, answer cut off,
    /// interrupted by a crash). Shown to people as an error, never sent to a model: history
    /// replay skips it and the provider client drops it from requests.
    Error,
}

impl Role {
    /// The wire name (`system`, `user`, `assistant`, `tool`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Error => "error",
        }
    }
}

/// An image sent with a user message: on the wire an OpenAI `image_url` content part holding
/// a `data:` URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatImage {
    /// Media type: `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime: String,
    /// The file's bytes, standard base64.
    pub base64: String,
}

impl ChatImage {
    /// `data:<mime>;base64,<data>`.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime, self.base64)
    }
}

/// One message of a chat request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Author.
    pub role: Role,
    /// Text content.
    pub content: String,
    /// Images sent with the text (user messages only; empty for most).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ChatImage>,
}

impl ChatMessage {
    /// Builds a text message.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        ChatMessage {
            role,
            content: content.into(),
            images: Vec::new(),
        }
    }
}

/// A streaming chat-completion request. Endpoint, key and timeouts belong to the adapter.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Model name as the server knows it.
    pub model: String,
    /// Conversation, system message first.
    pub messages: Vec<ChatMessage>,
    /// Sampling temperature; `None` leaves the server default.
    pub temperature: Option<f32>,
    /// Completion token cap; `None` (or 0) is omitted from the request.
    pub max_tokens: Option<u32>,
    /// Native tool definitions (OpenAI `tools` array), only on the optional tool-calling path.
    pub tools: Option<serde_json::Value>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FinishReason {
    /// Natural end.
    Stop,
    /// Hit `max_tokens` or the context: the answer is incomplete.
    Length,
    /// The model asked for native tool calls.
    ToolCalls,
    /// The provider filtered the content.
    ContentFilter,
    /// Any other value a server sent.
    Other(String),
}

/// Token usage of one request, as reported by the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompt.
    pub prompt_tokens: u32,
    /// Tokens generated.
    pub completion_tokens: u32,
    /// Sum as the server reported it.
    pub total_tokens: u32,
}

/// One item of a chat stream.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatEvent {
    /// A piece of the answer text.
    Content(String),
    /// A piece of reasoning ("thinking") text: shown apart, never executed, never replayed.
    Reasoning(String),
    /// A fully assembled native tool call (optional path).
    ToolCall {
        /// Call id from the server.
        id: String,
        /// Function name.
        name: String,
        /// JSON arguments text.
        arguments: String,
    },
    /// Usage numbers (usually just before the end).
    Usage(Usage),
    /// The stream ended normally with this reason. Always the last item of a complete stream.
    Finish(FinishReason),
}

/// Why a chat stream failed. `Display` gives a short message fit for a user; it never
/// contains the API key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChatError {
    /// Nothing listens at the endpoint.
    #[error("no model server at {url}")]
    Unreachable {
        /// The endpoint that refused.
        url: String,
    },
    /// The server answered with an HTTP error.
    #[error("{message}")]
    Http {
        /// HTTP status code.
        status: u16,
        /// Short, useful message (already redacted).
        message: String,
        /// `Retry-After` in seconds, when the server sent one.
        retry_after: Option<u64>,
    },
    /// A connect, first-byte or idle timeout expired.
    #[error("{0}")]
    Timeout(String),
    /// The connection ended before `[DONE]` or a finish reason.
    #[error("the model stream was cut off")]
    CutOff,
    /// The configuration cannot work (e.g. empty base URL).
    #[error("{0}")]
    Config(String),
    /// Anything else (malformed stream, I/O error), already redacted.
    #[error("{0}")]
    Other(String),
}

/// A stream of chat events. Dropping it cancels the request (closes the connection).
pub type ChatStream = BoxStream<'static, Result<ChatEvent, ChatError>>;

/// An agent's own model endpoint (its profile's `model.base_url` and `model.api_key_secret`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelEndpoint {
    /// OpenAI-compatible base URL, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    /// Name of the vault secret holding its API key; `None` sends no key.
    pub api_key_secret: Option<String>,
}

/// A chat model reachable through some endpoint.
pub trait ChatModel: Send + Sync {
    /// Starts a streaming completion. Errors that happen before the first byte arrive as the
    /// stream's first (and only) item. A complete stream ends with [`ChatEvent::Finish`].
    fn stream_chat(&self, request: ChatRequest) -> ChatStream;

    /// The context window of `model` in tokens, when the server publishes it (in its model
    /// list); `None` when unknown. Adapters that cannot tell keep this default.
    fn context_window(&self, model: &str) -> BoxFuture<'static, Option<u32>> {
        let _ = model;
        Box::pin(futures::future::ready(None))
    }

    /// The same kind of model at another endpoint, for an agent with a model of its own. The
    /// default refuses (the turn then fails saying so): an adapter that cannot reach other
    /// endpoints must never answer with its own.
    ///
    /// # Errors
    /// [`ChatError::Config`] when the endpoint cannot be used (unsupported, bad URL, missing key).
    fn at_endpoint(
        &self,
        endpoint: &ModelEndpoint,
    ) -> Result<std::sync::Arc<dyn ChatModel>, ChatError> {
        Err(ChatError::Config(format!(
            "this agent has a model endpoint of its own ({}), which this Sayri cannot use",
            endpoint.base_url
        )))
    }
}
