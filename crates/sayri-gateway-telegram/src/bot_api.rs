//! A small Telegram Bot API client: `POST {base}/bot{token}/{method}` with a JSON body, and the
//! API's `{"ok", "result" | "error_code", "description", "parameters"}` answer.
//!
//! The token is part of every URL, so no URL is ever logged or put into an error: transport
//! errors are reported without it.

use serde_json::Value;
use std::time::Duration;

/// Why a call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// Telegram answered with an error.
    Refused {
        /// The HTTP status.
        status: u16,
        /// Telegram's `description`.
        description: String,
        /// `parameters.retry_after` (seconds), on 429.
        retry_after: Option<u64>,
    },
    /// No answer (connection, timeout) or an answer that is not the API's JSON.
    Transport(String),
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Refused {
                status,
                description,
                ..
            } => write!(f, "HTTP {status}: {description}"),
            ApiError::Transport(e) => write!(f, "{e}"),
        }
    }
}

impl ApiError {
    /// The HTTP status of a refusal.
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Refused { status, .. } => Some(*status),
            ApiError::Transport(_) => None,
        }
    }

    /// Whether Telegram could not parse the message's formatting.
    pub fn is_formatting(&self) -> bool {
        matches!(self, ApiError::Refused { status: 400, description, .. }
            if description.contains("can't parse entities")
                || description.contains("entity")
                || description.contains("entities"))
    }
}

/// The Bot API of one bot.
#[derive(Clone)]
pub struct BotApi {
    http: reqwest::Client,
    /// `{base}/bot{token}`.
    root: String,
}

impl BotApi {
    /// A client for the bot with `token` at `base` (e.g. `https://api.telegram.org`).
    ///
    /// # Errors
    /// The HTTP client cannot be built (TLS set-up).
    pub fn new(base: &str, token: &str) -> Result<BotApi, String> {
        // Sayri's TLS setup (rustls with `ring`, the system's CA certificates for `https://`);
        // the workspace's reqwest carries no crypto provider of its own.
        let http = sayri_http::client_builder(base.starts_with("https://"))
            .map_err(|e| format!("cannot set up TLS: {e}"))?
            .connect_timeout(Duration::from_secs(15))
            .build()
            .map_err(|e| format!("cannot set up HTTP: {}", e.without_url()))?;
        Ok(BotApi {
            http,
            root: format!("{}/bot{token}", base.trim_end_matches('/')),
        })
    }

    /// Calls `method` with `body`, waiting at most `timeout` for the whole answer. Returns
    /// `result`.
    ///
    /// # Errors
    /// [`ApiError::Refused`] with Telegram's status and description, or
    /// [`ApiError::Transport`].
    pub async fn call(
        &self,
        method: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, ApiError> {
        let transport = |e: reqwest::Error| ApiError::Transport(e.without_url().to_string());
        let resp = self
            .http
            .post(format!("{}/{method}", self.root))
            .json(body)
            .timeout(timeout)
            .send()
            .await
            .map_err(transport)?;
        let status = resp.status().as_u16();
        let bytes = bounded_body(resp, method).await?;
        let v: Value = serde_json::from_slice(&bytes).map_err(|_| {
            ApiError::Transport(format!(
                "{method}: HTTP {status} with an answer that is not the Bot API's JSON ({} bytes)",
                bytes.len()
            ))
        })?;
        if v["ok"] == Value::Bool(true) && (200..300).contains(&status) {
            return Ok(v["result"].clone());
        }
        Err(ApiError::Refused {
            status: v["error_code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(status),
            description: v["description"]
                .as_str()
                .unwrap_or("no description")
                .to_string(),
            retry_after: v["parameters"]["retry_after"].as_u64(),
        })
    }
}

/// The most bytes a Bot API answer may have (a full `getUpdates` batch is well under 1 MiB).
pub const MAX_ANSWER_BYTES: usize = 16 << 20;

/// `resp`'s body, refused as soon as it grows past [`MAX_ANSWER_BYTES`] (the request's timeout
/// bounds its time).
async fn bounded_body(mut resp: reqwest::Response, method: &str) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| ApiError::Transport(e.without_url().to_string()))?
    {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(ApiError::Transport(format!(
                "{method}: the answer is longer than {} MiB; refused",
                MAX_ANSWER_BYTES >> 20
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
