//! Client configuration (`provider.*` keys of `sayri.toml`).

use std::time::Duration;

use sayri_core::ports::ChatError;

use crate::think::InlineThink;

/// Everything the client needs to reach one OpenAI-compatible endpoint.
///
/// `Debug` never prints the API key or the values of extra headers.
#[derive(Clone)]
pub struct ClientConfig {
    /// `provider.base_url`, normalised by [`crate::endpoint::Endpoint::parse`]
    /// (e.g. `http://127.0.0.1:11434/v1`).
    pub base_url: String,
    /// `provider.api_key`; `None` or empty sends no `Authorization` header.
    pub api_key: Option<String>,
    /// `provider.connect_timeout`: TCP + TLS connect limit. Default 10 s.
    pub connect_timeout: Duration,
    /// `provider.timeout`: from sending the request to the first body byte (the model may
    /// take long to read a big prompt). Default 120 s.
    pub first_byte_timeout: Duration,
    /// `provider.idle_timeout`: longest silence between two reads of the body, once
    /// streaming. SSE comments (`: ping`) count as traffic. Default 60 s.
    pub idle_timeout: Duration,
    /// `provider.retries`: extra attempts before the first streamed byte (connect timeouts,
    /// resets, 429, 500/502/503/504). Never after streaming started. Default 2.
    pub retries: u32,
    /// First backoff delay; doubles per attempt, capped at 8 s. Default 500 ms.
    pub retry_base_delay: Duration,
    /// `provider.extra_headers`, parsed from `"Name: value"` with [`parse_header_line`].
    pub extra_headers: Vec<(String, String)>,
    /// Send `"stream_options":{"include_usage":true}`. Default true.
    pub include_usage: bool,
    /// `provider.native_tools`: send `tools` and assemble streamed `tool_calls`. Default false.
    pub native_tools: bool,
    /// Inline `<think>` handling. Default [`InlineThink::Auto`].
    pub inline_think: InlineThink,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            base_url: "http://127.0.0.1:11434/v1".to_string(),
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(60),
            retries: 2,
            retry_base_delay: Duration::from_millis(500),
            extra_headers: Vec::new(),
            include_usage: true,
            native_tools: false,
            inline_think: InlineThink::Auto,
        }
    }
}

impl ClientConfig {
    /// A default configuration for `base_url`.
    pub fn new(base_url: impl Into<String>) -> Self {
        ClientConfig {
            base_url: base_url.into(),
            ..Default::default()
        }
    }

    /// The API key when one is set and non-empty.
    pub fn key(&self) -> Option<&str> {
        self.api_key.as_deref().filter(|k| !k.trim().is_empty())
    }
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<String> = self
            .extra_headers
            .iter()
            .map(|(n, _)| format!("{n}: <hidden>"))
            .collect();
        f.debug_struct("ClientConfig")
            .field("base_url", &crate::endpoint::display_url(&self.base_url))
            .field("api_key", &self.key().map(|_| "<set>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("retries", &self.retries)
            .field("retry_base_delay", &self.retry_base_delay)
            .field("extra_headers", &headers)
            .field("include_usage", &self.include_usage)
            .field("native_tools", &self.native_tools)
            .field("inline_think", &self.inline_think)
            .finish()
    }
}

/// Parses one `provider.extra_headers` entry, `"Name: value"`.
///
/// Errors: [`ChatError::Config`] when there is no colon or the name is empty.
pub fn parse_header_line(line: &str) -> Result<(String, String), ChatError> {
    match line.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(ChatError::Config(format!(
            "provider.extra_headers entry {:?} is not of the form \"Name: value\" — fix it in sayri.toml",
            line.split(':').next().unwrap_or("").trim()
        ))),
    }
}
