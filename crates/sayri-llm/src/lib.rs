//! OpenAI-compatible streaming chat client: the `ChatModel` adapter of Sayri.
//!
//! [`OpenAiClient`] speaks `POST /v1/chat/completions` with `stream: true` to Ollama,
//! llama.cpp's llama-server, LM Studio, vLLM, OpenAI, OpenRouter and friends, and turns the SSE
//! stream into [`sayri_core::ports::ChatEvent`]s. See the crate README for the policy.
//!
//! ```no_run
//! use futures::StreamExt;
//! use sayri_core::ports::{ChatMessage, ChatModel, ChatRequest, Role};
//! use sayri_llm::{ClientConfig, OpenAiClient};
//! # async fn demo() -> Result<(), sayri_core::ports::ChatError> {
//! let client = OpenAiClient::new(ClientConfig::new("http://127.0.0.1:11434/v1"))?;
//! let mut stream = client.stream_chat(ChatRequest {
//!     model: "llama3.2".into(),
//!     messages: vec![ChatMessage::new(Role::User, "Hi")],
//!     ..Default::default()
//! });
//! while let Some(event) = stream.next().await {
//!     println!("{:?}", event?);
//! }
//! # Ok(()) }
//! ```

pub mod client;
pub mod config;
pub mod decode;
pub mod endpoint;
pub mod http_error;
pub mod models;
pub mod redact;
pub mod request;
pub mod sse;
pub mod think;

pub use client::OpenAiClient;
pub use config::{ClientConfig, parse_header_line};
pub use decode::ChunkDecoder;
pub use endpoint::Endpoint;
pub use redact::{CredentialRedactor, KEY_MARKER};
pub use sse::{SseEvent, SseParser};
pub use think::{InlineThink, Piece, ThinkSplitter};
