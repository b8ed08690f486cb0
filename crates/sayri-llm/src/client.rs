//! [`OpenAiClient`]: the `ChatModel` adapter for OpenAI-compatible servers.
//!
//! One request = one HTTP connection streamed with SSE. Retries (with doubling backoff) happen
//! only before the first body byte; once a byte arrived the stream is never restarted, so an
//! answer is never shown twice. Timeouts: connect, first byte, idle between reads. Dropping the
//! returned stream drops the response body, which closes the connection at once.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use sayri_core::ports::{ChatError, ChatEvent, ChatModel, ChatRequest, ChatStream, Redactor};
use serde_json::Value;

use crate::config::ClientConfig;
use crate::decode::ChunkDecoder;
use crate::endpoint::{Endpoint, display_url};
use crate::http_error::{http_error, parse_retry_after};
use crate::redact::CredentialRedactor;
use crate::request::chat_body;
use crate::sse::SseParser;

/// Longest `Retry-After` the client waits for by itself; longer ones are returned to the caller.
const MAX_RETRY_AFTER: u64 = 30;
/// Cap of the doubling backoff.
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// Most bytes read from one streamed answer (SSE framing included); a server that sends more
/// (an endless line, endless events) is misbehaving and the answer ends with an error.
pub const MAX_STREAM_BYTES: usize = 128 << 20;
/// Most bytes read from an error response body (the message shown is short anyway).
pub const MAX_ERROR_BODY_BYTES: usize = 64 << 10;
/// Most bytes read from a model list.
pub const MAX_MODELS_BODY_BYTES: usize = 16 << 20;

/// Streaming chat client for one OpenAI-compatible endpoint. Cheap to clone.
#[derive(Clone, Debug)]
pub struct OpenAiClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    config: ClientConfig,
    endpoint: Endpoint,
    headers: HeaderMap,
    redactor: CredentialRedactor,
}

/// Outcome of one attempt that may be retried.
enum Attempt<T> {
    Done(T),
    Retry(ChatError, Option<Duration>),
    Fail(ChatError),
}

impl OpenAiClient {
    /// Builds a client.
    ///
    /// Errors: [`ChatError::Config`] for an empty/invalid base URL, an invalid extra header,
    /// or a key that cannot be sent as a header.
    pub fn new(config: ClientConfig) -> Result<Self, ChatError> {
        let endpoint = Endpoint::parse(&config.base_url)?;
        let redactor = CredentialRedactor::new(config.key(), &config.extra_headers);
        let mut headers = HeaderMap::new();
        for (name, value) in &config.extra_headers {
            let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                ChatError::Config(format!(
                    "provider.extra_headers: {name:?} is not a valid header name — fix it in sayri.toml"
                ))
            })?;
            let mut v = HeaderValue::from_str(value).map_err(|_| {
                ChatError::Config(format!(
                    "provider.extra_headers: the value of {name:?} is not a valid header value — fix it in sayri.toml"
                ))
            })?;
            v.set_sensitive(true);
            headers.insert(n, v);
        }
        if let Some(key) = config.key() {
            let mut v = HeaderValue::from_str(&format!("Bearer {}", key.trim())).map_err(|_| {
                ChatError::Config(
                    "provider.api_key contains characters that cannot be sent in a header — re-enter the key".into(),
                )
            })?;
            v.set_sensitive(true);
            headers.insert(AUTHORIZATION, v);
        }
        let https = endpoint.chat.scheme() == "https";
        let http = sayri_http::client_builder(https)
            .map_err(|e| ChatError::Config(e.to_string()))?
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| {
                ChatError::Config(format!("cannot build the HTTP client: {}", e.without_url()))
            })?;
        Ok(OpenAiClient {
            inner: Arc::new(Inner {
                http,
                config,
                endpoint,
                headers,
                redactor,
            }),
        })
    }

    /// Chains a vault redactor (e.g. the vault's `Redactor`) after the credential redaction.
    pub fn with_redactor(self, vault: Arc<dyn Redactor>) -> Self {
        let inner = &self.inner;
        OpenAiClient {
            inner: Arc::new(Inner {
                http: inner.http.clone(),
                config: inner.config.clone(),
                endpoint: inner.endpoint.clone(),
                headers: inner.headers.clone(),
                redactor: inner.redactor.clone().with_next(vault),
            }),
        }
    }

    /// The resolved endpoints (for `sayri doctor` output).
    pub fn endpoint(&self) -> &Endpoint {
        &self.inner.endpoint
    }

    /// Model ids from `GET <base>/models` (OpenAI `data[].id`; Ollama-style `models[].name`
    /// also accepted), in server order. Same retries and error messages as chat.
    pub async fn list_models(&self) -> Result<Vec<String>, ChatError> {
        let json = self.models_json().await?;
        let mut ids = Vec::new();
        if let Some(data) = json.get("data").and_then(Value::as_array) {
            ids.extend(
                data.iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str))
                    .map(str::to_string),
            );
        } else if let Some(models) = json.get("models").and_then(Value::as_array) {
            ids.extend(
                models
                    .iter()
                    .filter_map(|m| {
                        m.get("name")
                            .or_else(|| m.get("model"))
                            .and_then(Value::as_str)
                    })
                    .map(str::to_string),
            );
        }
        Ok(ids)
    }

    /// The context window of `model` from `GET <base>/models`, when the server publishes it
    /// (see [`crate::models::context_window`]); `Ok(None)` when it does not.
    pub async fn model_context_window(&self, model: &str) -> Result<Option<u32>, ChatError> {
        let json = self.models_json().await?;
        Ok(crate::models::context_window(&json, model))
    }

    /// `GET <base>/models` as JSON, with the chat request's retries and error messages.
    async fn models_json(&self) -> Result<Value, ChatError> {
        let inner = self.inner.clone();
        let body = inner
            .with_retries(|| async {
                let url = inner.endpoint.models.clone();
                let send = inner.http.get(url).headers(inner.headers.clone()).send();
                let resp = match tokio::time::timeout(inner.config.first_byte_timeout, send).await {
                    Err(_) => return Attempt::Fail(inner.first_byte_timeout_error()),
                    Ok(Err(e)) => return inner.transport_attempt(e),
                    Ok(Ok(r)) => r,
                };
                if !resp.status().is_success() {
                    return inner.error_attempt(resp).await;
                }
                let read = read_capped(resp, MAX_MODELS_BODY_BYTES);
                match tokio::time::timeout(inner.config.first_byte_timeout, read).await {
                    Err(_) => Attempt::Fail(inner.first_byte_timeout_error()),
                    Ok(Err(e)) => Attempt::Fail(inner.other(&e)),
                    Ok(Ok((_, true))) => Attempt::Fail(ChatError::Other(format!(
                        "the model list from {} is larger than {} MiB; the server is misbehaving",
                        display_url(inner.endpoint.models.as_str()),
                        MAX_MODELS_BODY_BYTES >> 20
                    ))),
                    Ok(Ok((text, false))) => Attempt::Done(text),
                }
            })
            .await
            .map_err(|e| inner.redact_error(e))?;
        serde_json::from_str(&body).map_err(|_| {
            ChatError::Other(format!(
                "the model list from {} is not JSON — is provider.base_url an OpenAI-compatible API?",
                display_url(inner.endpoint.models.as_str())
            ))
        })
    }
}

impl Inner {
    fn chat_url(&self) -> String {
        display_url(self.endpoint.chat.as_str())
    }

    fn redact_error(&self, e: ChatError) -> ChatError {
        let r = |s: String| self.redactor.redact(&s);
        match e {
            ChatError::Unreachable { url } => ChatError::Unreachable { url: r(url) },
            ChatError::Http {
                status,
                message,
                retry_after,
            } => ChatError::Http {
                status,
                message: r(message),
                retry_after,
            },
            ChatError::Timeout(m) => ChatError::Timeout(r(m)),
            ChatError::CutOff => ChatError::CutOff,
            ChatError::Config(m) => ChatError::Config(r(m)),
            ChatError::Other(m) => ChatError::Other(r(m)),
        }
    }

    fn first_byte_timeout_error(&self) -> ChatError {
        ChatError::Timeout(format!(
            "the model server at {} sent nothing for {} s — it may still be loading the model; if it is slow, allow it more time: `sayri config set provider.timeout {}`",
            self.chat_url(),
            self.config.first_byte_timeout.as_secs(),
            self.config
                .first_byte_timeout
                .as_secs()
                .saturating_mul(2)
                .max(1)
        ))
    }

    fn other(&self, e: &reqwest::Error) -> ChatError {
        ChatError::Other(format!(
            "talking to the model server at {} failed: {}",
            self.chat_url(),
            error_chain(e)
        ))
    }

    /// Classifies a transport error that happened before any response byte.
    fn transport_attempt<T>(&self, e: reqwest::Error) -> Attempt<T> {
        if e.is_connect() {
            if e.is_timeout() {
                return Attempt::Retry(
                    ChatError::Timeout(format!(
                        "could not connect to the model server at {} within {} s — check the network, or point Sayri at another server: `sayri config set provider.base_url URL`",
                        self.chat_url(),
                        self.config.connect_timeout.as_secs()
                    )),
                    None,
                );
            }
            if nothing_listens(&e) {
                return Attempt::Fail(ChatError::Unreachable {
                    url: display_url(&self.endpoint.base),
                });
            }
            // TLS and other handshake failures: say what broke, do not blame a stopped server.
            return Attempt::Fail(ChatError::Other(format!(
                "could not connect to the model server at {}: {} — check http vs https and certificates: `sayri config set provider.base_url URL`",
                self.chat_url(),
                error_chain(&e)
            )));
        }
        if e.is_timeout() {
            return Attempt::Fail(self.first_byte_timeout_error());
        }
        // Reset or closed before the response: safe to retry, nothing was streamed.
        Attempt::Retry(self.other(&e), None)
    }

    /// Reads an error response and decides whether it is worth another attempt.
    async fn error_attempt<T>(&self, resp: reqwest::Response) -> Attempt<T> {
        let status = resp.status().as_u16();
        // The URL actually requested (chat completions or the model list).
        let url = display_url(resp.url().as_str());
        let retry_after = parse_retry_after(
            resp.headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok()),
        );
        let body = tokio::time::timeout(
            Duration::from_secs(10),
            read_capped(resp, MAX_ERROR_BODY_BYTES),
        )
        .await
        .ok()
        .and_then(Result::ok)
        .map(|(text, _)| text)
        .unwrap_or_default();
        let err = http_error(status, &body, retry_after, &url);
        match status {
            429 => match retry_after {
                Some(s) if s > MAX_RETRY_AFTER => Attempt::Fail(err),
                Some(s) => Attempt::Retry(err, Some(Duration::from_secs(s))),
                None => Attempt::Retry(err, None),
            },
            500 | 502 | 503 | 504 => Attempt::Retry(err, None),
            _ => Attempt::Fail(err),
        }
    }

    async fn with_retries<T, F, Fut>(&self, mut attempt: F) -> Result<T, ChatError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Attempt<T>>,
    {
        let mut delay = self.config.retry_base_delay;
        let mut n = 0;
        loop {
            match attempt().await {
                Attempt::Done(v) => return Ok(v),
                Attempt::Fail(e) => return Err(e),
                Attempt::Retry(e, wait) => {
                    if n >= self.config.retries {
                        return Err(e);
                    }
                    n += 1;
                    let wait = wait.unwrap_or(delay);
                    tracing::info!(attempt = n, wait_ms = wait.as_millis() as u64, error = %self.redactor.redact(&e.to_string()), "retrying the model request");
                    tokio::time::sleep(wait).await;
                    delay = (delay * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    /// Sends the chat request and waits for the first body byte (with retries).
    async fn open(&self, request: &ChatRequest) -> Result<(reqwest::Response, Bytes), ChatError> {
        let body = chat_body(&self.config, request);
        tracing::debug!(url = %self.chat_url(), model = %request.model, "chat request");
        self.with_retries(|| async {
            let send = async {
                let resp = match self
                    .http
                    .post(self.endpoint.chat.clone())
                    .headers(self.headers.clone())
                    .header("accept", "text/event-stream")
                    .json(&body)
                    .send()
                    .await
                {
                    Ok(r) => r,
                    Err(e) => return self.transport_attempt(e),
                };
                if !resp.status().is_success() {
                    return self.error_attempt(resp).await;
                }
                let mut resp = resp;
                loop {
                    match resp.chunk().await {
                        Ok(Some(b)) if b.is_empty() => continue,
                        Ok(Some(b)) => return Attempt::Done((resp, b)),
                        Ok(None) => {
                            return Attempt::Retry(
                                ChatError::Other(format!(
                                    "the model server at {} closed the stream without sending anything",
                                    self.chat_url()
                                )),
                                None,
                            );
                        }
                        Err(e) => return Attempt::Retry(self.other(&e), None),
                    }
                }
            };
            match tokio::time::timeout(self.config.first_byte_timeout, send).await {
                Ok(a) => a,
                Err(_) => Attempt::Fail(self.first_byte_timeout_error()),
            }
        })
        .await
    }
}

/// Whether a successful reply is one JSON document (`Content-Type: application/json`) rather
/// than an event stream.
fn is_json(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            t.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        })
}

/// True when the connect error means no server is there: refused, unreachable, or the host
/// name does not resolve.
fn nothing_listens(e: &reqwest::Error) -> bool {
    use std::io::ErrorKind;
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::AddrNotAvailable
                    | ErrorKind::HostUnreachable
                    | ErrorKind::NetworkUnreachable
            )
        {
            return true;
        }
        let text = s.to_string().to_ascii_lowercase();
        if text.contains("dns error") || text.contains("failed to lookup address") {
            return true;
        }
        source = s.source();
    }
    false
}

/// Reads at most `cap` bytes of a body as (lossy) UTF-8; `true` when more was left unread.
async fn read_capped(
    mut resp: reqwest::Response,
    cap: usize,
) -> Result<(String, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((String::from_utf8_lossy(&body).into_owned(), true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((String::from_utf8_lossy(&body).into_owned(), false))
}

/// Display of an error and its sources, without the URL (the caller names the endpoint).
fn error_chain(e: &reqwest::Error) -> String {
    let mut parts = Vec::new();
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = source {
        parts.push(s.to_string());
        source = s.source();
    }
    if parts.is_empty() {
        parts.push(e.to_string());
    }
    crate::http_error::shorten(&parts.join(": "))
}

/// State of one streamed chat.
struct ChatRun {
    inner: Arc<Inner>,
    request: Option<ChatRequest>,
    response: Option<reqwest::Response>,
    first: Option<Bytes>,
    parser: SseParser,
    decoder: ChunkDecoder,
    queue: VecDeque<ChatEvent>,
    ended: bool,
    /// Body bytes read so far (checked against [`MAX_STREAM_BYTES`]).
    received: usize,
}

impl ChatRun {
    async fn next_item(&mut self) -> Option<Result<ChatEvent, ChatError>> {
        loop {
            if let Some(ev) = self.queue.pop_front() {
                if matches!(ev, ChatEvent::Finish(_)) {
                    self.ended = true;
                    self.queue.clear();
                    self.response = None;
                }
                return Some(Ok(ev));
            }
            if self.ended {
                return None;
            }
            if let Some(request) = self.request.take() {
                match self.inner.open(&request).await {
                    Ok((resp, first)) if is_json(&resp) => {
                        if let Err(e) = self.whole_completion(resp, first).await {
                            return self.fail(e);
                        }
                        continue;
                    }
                    Ok((resp, first)) => {
                        self.response = Some(resp);
                        self.first = Some(first);
                    }
                    Err(e) => return self.fail(e),
                }
            }
            let read = match self.first.take() {
                Some(b) => Ok(Some(b)),
                None => {
                    let resp = self.response.as_mut()?;
                    match tokio::time::timeout(self.inner.config.idle_timeout, resp.chunk()).await {
                        Ok(r) => r,
                        Err(_) => {
                            return self.fail(ChatError::Timeout(format!(
                                "the model stream from {} stalled: nothing for {} s; if the model is just slow, allow more: `sayri config set provider.idle_timeout {}`",
                                self.inner.chat_url(),
                                self.inner.config.idle_timeout.as_secs(),
                                self.inner.config.idle_timeout.as_secs().saturating_mul(2).max(1)
                            )));
                        }
                    }
                }
            };
            match read {
                Ok(Some(bytes)) => {
                    self.received = self.received.saturating_add(bytes.len());
                    if self.received > MAX_STREAM_BYTES {
                        return self.fail(ChatError::Other(format!(
                            "the model server at {} sent more than {} MiB for one answer; it is misbehaving, so the answer was stopped — use another server: `sayri config set provider.base_url URL`",
                            self.inner.chat_url(),
                            MAX_STREAM_BYTES >> 20
                        )));
                    }
                    for event in self.parser.feed(&bytes) {
                        if event.event == "error" {
                            return self.fail(ChatError::Other(format!(
                                "the model server reported an error mid-stream: {}",
                                crate::http_error::server_message(&event.data)
                            )));
                        }
                        match self.decoder.on_data(&event.data) {
                            Ok(evs) => self.queue.extend(evs),
                            Err(e) => return self.fail(e),
                        }
                        if self.decoder.is_done() {
                            break;
                        }
                    }
                }
                Ok(None) => {
                    self.parser.finish();
                    match self.decoder.on_eof() {
                        Ok(evs) => self.queue.extend(evs),
                        Err(e) => return self.fail(e),
                    }
                }
                Err(e) => {
                    // The body broke mid-stream (reset, bad chunked framing): cut off unless
                    // the model had already finished.
                    tracing::warn!(error = %self.inner.redactor.redact(&error_chain(&e)), "model stream broke");
                    match self.decoder.on_eof() {
                        Ok(evs) => self.queue.extend(evs),
                        Err(err) => return self.fail(err),
                    }
                }
            }
        }
    }

    /// Reads a non-streamed `chat.completion` body (the server ignored `"stream": true`) and
    /// queues its events: the same limits as a stream (idle timeout between reads,
    /// [`MAX_STREAM_BYTES`]).
    async fn whole_completion(
        &mut self,
        mut resp: reqwest::Response,
        first: Bytes,
    ) -> Result<(), ChatError> {
        let mut body = first.to_vec();
        loop {
            if body.len() > MAX_STREAM_BYTES {
                return Err(ChatError::Other(format!(
                    "the model server at {} sent more than {} MiB for one answer; it is misbehaving — check provider.base_url",
                    self.inner.chat_url(),
                    MAX_STREAM_BYTES >> 20
                )));
            }
            match tokio::time::timeout(self.inner.config.idle_timeout, resp.chunk()).await {
                Err(_) => {
                    return Err(ChatError::Timeout(format!(
                        "the model reply from {} stalled: nothing for {} s (provider.idle_timeout)",
                        self.inner.chat_url(),
                        self.inner.config.idle_timeout.as_secs()
                    )));
                }
                Ok(Ok(Some(b))) => body.extend_from_slice(&b),
                Ok(Ok(None)) => break,
                Ok(Err(e)) => return Err(self.inner.other(&e)),
            }
        }
        let events = self
            .decoder
            .on_completion(&String::from_utf8_lossy(&body))?;
        self.queue.extend(events);
        Ok(())
    }

    fn fail(&mut self, e: ChatError) -> Option<Result<ChatEvent, ChatError>> {
        self.ended = true;
        self.response = None;
        let e = self.inner.redact_error(e);
        tracing::warn!(error = %e, "model stream failed");
        Some(Err(e))
    }
}

impl ChatModel for OpenAiClient {
    fn stream_chat(&self, request: ChatRequest) -> ChatStream {
        let run = ChatRun {
            inner: self.inner.clone(),
            request: Some(request),
            response: None,
            first: None,
            parser: SseParser::new(),
            decoder: ChunkDecoder::new(self.inner.config.inline_think),
            queue: VecDeque::new(),
            ended: false,
            received: 0,
        };
        futures::stream::unfold(run, |mut run| async move {
            run.next_item().await.map(|item| (item, run))
        })
        .boxed()
    }

    fn context_window(&self, model: &str) -> futures::future::BoxFuture<'static, Option<u32>> {
        let client = self.clone();
        let model = model.to_string();
        Box::pin(async move {
            match client.model_context_window(&model).await {
                Ok(w) => w,
                Err(e) => {
                    tracing::info!(error = %e, "the model list did not say the context window");
                    None
                }
            }
        })
    }
}
