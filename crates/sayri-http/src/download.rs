//! One bounded download: a GET whose answer is streamed to the caller chunk by chunk and
//! given up as soon as it breaks one of its [`Limits`].
//!
//! * **Size.** A `Content-Length` above `max_bytes` is refused before any byte is read; a body
//!   that grows past `max_bytes` — or past its own `Content-Length` — is refused as soon as it
//!   does (nothing more is read or handed on).
//! * **Time.** `deadline` bounds the whole exchange, connecting and the last byte included;
//!   `stall` bounds the wait for each next chunk.
//! * **Truncation.** A body that ends before its `Content-Length` is an error, not a short file.
//!
//! Errors carry what happened ([`LimitError`]); each caller words them for its users. URLs in
//! messages go through [`without_credentials`].

use std::time::Duration;

/// The bounds of one download. `None` leaves that bound off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes the body may have.
    pub max_bytes: Option<u64>,
    /// How long the whole exchange may take, from sending the request to the last byte.
    pub deadline: Option<Duration>,
    /// How long the body may go without a byte arriving.
    pub stall: Option<Duration>,
}

/// What a finished download received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fetched {
    /// Bytes of the body.
    pub bytes: u64,
    /// The `Content-Length` the server sent, if any.
    pub total: Option<u64>,
}

/// Why a download stopped.
#[derive(Debug, thiserror::Error)]
pub enum LimitError<E> {
    /// The request failed, or the connection broke (the error holds no URL).
    #[error("{0}")]
    Transport(reqwest::Error),
    /// The server answered with a status other than success.
    #[error("HTTP {0}")]
    Status(reqwest::StatusCode),
    /// The `Content-Length` is above `max_bytes`.
    #[error("the server announces {announced} bytes, more than the {max} allowed")]
    Announced {
        /// The `Content-Length`.
        announced: u64,
        /// The cap.
        max: u64,
    },
    /// More than `limit` bytes arrived (`limit`: the smaller of `max_bytes` and the
    /// `Content-Length`).
    #[error("the server sent more than the {limit} bytes expected")]
    TooLong {
        /// The bound the body went past.
        limit: u64,
    },
    /// No byte arrived for `stall` after `done` bytes.
    #[error("no data for {} s after {done} bytes", stall.as_secs())]
    Stalled {
        /// Bytes received before the stall.
        done: u64,
        /// The stall timeout.
        stall: Duration,
    },
    /// The whole exchange took longer than `deadline`.
    #[error("no complete answer within {} s", deadline.as_secs())]
    Deadline {
        /// The deadline.
        deadline: Duration,
    },
    /// The body ended after `done` of its announced `total` bytes.
    #[error("connection closed after {done} of {total} bytes")]
    Truncated {
        /// Bytes received.
        done: u64,
        /// The `Content-Length`.
        total: u64,
    },
    /// The caller's sink refused a chunk.
    #[error("{0}")]
    Sink(E),
}

/// `url` without its credentials: the username and password of `http://user:pass@host/`
/// are removed; a string that is no URL is returned unchanged.
///
/// ```
/// assert_eq!(sayri_http::without_credentials("https://u:p@h.example/m.bin"), "https://h.example/m.bin");
/// assert_eq!(sayri_http::without_credentials("not a url"), "not a url");
/// ```
pub fn without_credentials(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        _ => url.to_string(),
    }
}

/// Sends `request` and streams its body into `sink` within `limits`. `progress` sees the bytes
/// done and the `Content-Length` after every chunk. On an error the caller discards what its
/// sink kept: the body is incomplete or over its bounds.
///
/// # Errors
/// [`LimitError`] naming the bound that was broken, the transport error, the HTTP status, or
/// the sink's own error.
pub async fn fetch<E>(
    request: reqwest::RequestBuilder,
    limits: Limits,
    sink: &mut (dyn FnMut(&[u8]) -> Result<(), E> + Send),
    progress: &mut (dyn FnMut(u64, Option<u64>) + Send),
) -> Result<Fetched, LimitError<E>> {
    let exchange = exchange(request, limits, sink, progress);
    match limits.deadline {
        Some(deadline) => tokio::time::timeout(deadline, exchange)
            .await
            .map_err(|_| LimitError::Deadline { deadline })?,
        None => exchange.await,
    }
}

async fn exchange<E>(
    request: reqwest::RequestBuilder,
    limits: Limits,
    sink: &mut (dyn FnMut(&[u8]) -> Result<(), E> + Send),
    progress: &mut (dyn FnMut(u64, Option<u64>) + Send),
) -> Result<Fetched, LimitError<E>> {
    let transport = |e: reqwest::Error| LimitError::Transport(e.without_url());
    let mut resp = request.send().await.map_err(transport)?;
    if !resp.status().is_success() {
        return Err(LimitError::Status(resp.status()));
    }
    let total = resp.content_length();
    if let (Some(announced), Some(max)) = (total, limits.max_bytes)
        && announced > max
    {
        return Err(LimitError::Announced { announced, max });
    }
    let limit = match (total, limits.max_bytes) {
        (Some(t), Some(m)) => Some(t.min(m)),
        (t, m) => t.or(m),
    };
    let mut done = 0u64;
    loop {
        let next = resp.chunk();
        let chunk = match limits.stall {
            Some(stall) => tokio::time::timeout(stall, next)
                .await
                .map_err(|_| LimitError::Stalled { done, stall })?,
            None => next.await,
        };
        let Some(chunk) = chunk.map_err(transport)? else {
            break;
        };
        done += chunk.len() as u64;
        if let Some(limit) = limit
            && done > limit
        {
            return Err(LimitError::TooLong { limit });
        }
        sink(&chunk).map_err(LimitError::Sink)?;
        progress(done, total);
    }
    if let Some(total) = total
        && total != done
    {
        return Err(LimitError::Truncated { done, total });
    }
    Ok(Fetched { bytes: done, total })
}
