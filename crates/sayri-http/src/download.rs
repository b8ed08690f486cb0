//! One bounded download: a GET whose answer is streamed to the caller chunk by chunk and
//! given up as soon as it breaks one of its [`Limits`], optionally continuing a partial copy
//! an earlier attempt kept.
//!
//! * **Size.** `max_bytes` bounds the whole file. A length above it — the `Content-Length`, or
//!   the total of a `Content-Range` — is refused before any byte is read; a body that grows
//!   past `max_bytes`, or past its own announced length, is refused as soon as it does
//!   (nothing more is read or handed on).
//! * **Time.** `deadline` bounds the whole exchange, connecting and the last byte included;
//!   `stall` bounds the wait for each next chunk.
//! * **Truncation.** A body that ends before its announced length is an error saying how many
//!   bytes of how many arrived, never a short file.
//! * **Resuming** ([`fetch_resumable`]). A [`Partial`] is continued with `Range: bytes=N-` and
//!   `If-Range` carrying the validator the first answer gave (a strong `ETag`, else its
//!   `Last-Modified`); without one there is nothing to check a continuation against and the
//!   download starts again. A `206` is used only when its `Content-Range` starts at `N`, runs
//!   to the end, has the total the partial copy expects, and its validators are the partial
//!   copy's; anything else — a `200` (ranges ignored, or the file changed), a `416`, a `206`
//!   that does not fit — restarts from zero with a plain GET, and [`Start::restarted`] says
//!   why. The sink learns where the body begins before the first byte ([`Sink::start`]).
//!
//! Errors carry what happened ([`LimitError`]); each caller words them for its users. URLs in
//! messages go through [`without_credentials`].

use reqwest::StatusCode;
use reqwest::header::{CONTENT_RANGE, ETAG, HeaderMap, IF_RANGE, LAST_MODIFIED, RANGE};
use std::time::Duration;

/// The bounds of one download. `None` leaves that bound off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes the whole file may have.
    pub max_bytes: Option<u64>,
    /// How long the whole exchange may take, from sending the request to the last byte.
    pub deadline: Option<Duration>,
    /// How long the body may go without a byte arriving.
    pub stall: Option<Duration>,
}

/// What identifies one version of a file on its server: an answer's `ETag` and
/// `Last-Modified`, as sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    /// The `ETag` header (`"abc"`, or a weak `W/"abc"`).
    pub etag: Option<String>,
    /// The `Last-Modified` header.
    pub last_modified: Option<String>,
}

impl Validators {
    fn of(headers: &HeaderMap) -> Validators {
        let get = |name| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        Validators {
            etag: get(ETAG),
            last_modified: get(LAST_MODIFIED),
        }
    }

    /// What `If-Range` may carry: a strong `ETag`, else `Last-Modified` (a weak `ETag` is not
    /// allowed there). `None`: a partial copy of this version cannot be continued.
    pub fn if_range(&self) -> Option<&str> {
        self.etag
            .as_deref()
            .filter(|e| !e.starts_with("W/"))
            .or(self.last_modified.as_deref())
    }

    /// Whether `other` names another version: a validator both have differs.
    fn differ(&self, other: &Validators) -> bool {
        let differs =
            |a: &Option<String>, b: &Option<String>| matches!((a, b), (Some(a), Some(b)) if a != b);
        differs(&self.etag, &other.etag) || differs(&self.last_modified, &other.last_modified)
    }
}

/// What an earlier attempt kept of the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Partial {
    /// The bytes kept: the body continues at this offset.
    pub bytes: u64,
    /// The whole file's length, as the earlier answer gave it.
    pub total: Option<u64>,
    /// The earlier answer's validators.
    pub validators: Validators,
}

/// Why a partial copy could not be continued (the body starts again at 0).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Restart {
    /// The earlier answer gave neither a strong `ETag` nor a `Last-Modified`.
    #[error("the server gave nothing to check a continued download against")]
    NoValidator,
    /// A `200` with the same validators: the server does not serve ranges.
    #[error("the server does not continue downloads")]
    NoRanges,
    /// The file on the server is another version than the one partly downloaded.
    #[error("the file changed on the server")]
    Changed,
    /// A `206` whose `Content-Range` is not the continuation asked for.
    #[error("the server sent another range ({0}) than the one asked for")]
    BadRange(String),
    /// A `416`: the server holds no such range (the file is shorter now).
    #[error("the server refused the range (the file is shorter now)")]
    NotSatisfiable,
}

/// Where an answer's body begins in the whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    /// The offset of the body's first byte: the partial copy's length when it is continued,
    /// else 0 (the sink drops whatever it kept).
    pub offset: u64,
    /// The whole file's length, when the server said it.
    pub total: Option<u64>,
    /// This answer's validators, to keep with a partial copy.
    pub validators: Validators,
    /// Why a continuation asked for is not made (`offset` is then 0).
    pub restarted: Option<Restart>,
}

/// Where a download goes.
pub trait Sink {
    /// The sink's own error (a full disk, …).
    type Error;
    /// Called once before the first byte: where the body begins.
    ///
    /// # Errors
    /// The sink cannot take the body; the download stops with [`LimitError::Sink`].
    fn start(&mut self, start: &Start) -> Result<(), Self::Error>;
    /// The next bytes.
    ///
    /// # Errors
    /// The sink cannot take them; the download stops with [`LimitError::Sink`].
    fn write(&mut self, chunk: &[u8]) -> Result<(), Self::Error>;
    /// Bytes of the whole file there are now (a continued copy counts what it kept) and its
    /// length when known; called after every chunk.
    fn progress(&mut self, _done: u64, _total: Option<u64>) {}
}

/// What a finished download received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// Bytes of the whole file (a continued copy counts what it kept).
    pub bytes: u64,
    /// The whole file's length the server announced, if any.
    pub total: Option<u64>,
    /// The offset the body began at (non-zero: a partial copy was continued).
    pub resumed_from: u64,
}

/// Why a download stopped.
#[derive(Debug, thiserror::Error)]
pub enum LimitError<E> {
    /// The request failed before an answer came (the error holds no URL).
    #[error("{0}")]
    Transport(reqwest::Error),
    /// The server answered with a status other than success.
    #[error("HTTP {0}")]
    Status(reqwest::StatusCode),
    /// The announced length is above `max_bytes`.
    #[error("the server announces {announced} bytes, more than the {max} allowed")]
    Announced {
        /// The announced length of the whole file.
        announced: u64,
        /// The cap.
        max: u64,
    },
    /// More than `limit` bytes arrived (`limit`: the smaller of `max_bytes` and the announced
    /// length).
    #[error("the server sent more than the {limit} bytes expected")]
    TooLong {
        /// The bound the body went past.
        limit: u64,
    },
    /// No byte arrived for `stall` after `done` bytes.
    #[error("no data for {} after {}", seconds(*stall), byte_count(*done, *total))]
    Stalled {
        /// Bytes of the file there were when it stalled.
        done: u64,
        /// The announced length.
        total: Option<u64>,
        /// The stall timeout.
        stall: Duration,
    },
    /// The whole exchange took longer than `deadline`.
    #[error("no complete answer within {}", seconds(*deadline))]
    Deadline {
        /// The deadline.
        deadline: Duration,
    },
    /// The connection broke (or closed) after `done` bytes of the file.
    #[error("the connection broke after {} ({reason})", byte_count(*done, *total))]
    Broken {
        /// Bytes of the file there were.
        done: u64,
        /// The announced length.
        total: Option<u64>,
        /// What the transport said.
        reason: String,
    },
    /// The body ended after `done` of its announced `total` bytes.
    #[error("the connection closed after {}", byte_count(*done, Some(*total)))]
    Truncated {
        /// Bytes of the file there were.
        done: u64,
        /// The announced length.
        total: u64,
    },
    /// The caller's sink refused the body.
    #[error("{0}")]
    Sink(E),
}

/// `1234 of 5678 bytes (21%)`, or `1234 bytes` without a total.
pub fn byte_count(done: u64, total: Option<u64>) -> String {
    match total {
        Some(t) if t > 0 => format!(
            "{done} of {t} bytes ({}%)",
            u128::from(done) * 100 / u128::from(t)
        ),
        Some(t) => format!("{done} of {t} bytes"),
        None => format!("{done} bytes"),
    }
}

/// `30 s`, or `300 ms` for a part of a second.
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
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
    let mut sink = Closures { sink, progress };
    within(limits, async {
        let resp = send(request).await?;
        let start = Start {
            offset: 0,
            total: resp.content_length(),
            validators: Validators::of(resp.headers()),
            restarted: None,
        };
        body(resp, start, limits, &mut sink).await
    })
    .await
}

/// Downloads `url` with `client` into `sink` within `limits`, continuing `partial` when the
/// server allows it (the rules are in the module notes); [`Sink::start`] tells the sink where
/// the body begins. On an error the sink's copy is what arrived, in order from its start: the
/// caller may keep it as the next attempt's [`Partial`] (with [`Start::validators`] and
/// [`Start::total`]) when the error is a broken, stalled or late transfer.
///
/// # Errors
/// As [`fetch`].
pub async fn fetch_resumable<S: Sink + Send>(
    client: &reqwest::Client,
    url: &str,
    partial: Option<&Partial>,
    limits: Limits,
    sink: &mut S,
) -> Result<Fetched, LimitError<S::Error>> {
    within(limits, async {
        let (resp, start) = match partial.filter(|p| p.bytes > 0) {
            None => fresh(client, url, None).await?,
            Some(p) => resume(client, url, p).await?,
        };
        body(resp, start, limits, sink).await
    })
    .await
}

async fn within<T, E>(
    limits: Limits,
    exchange: impl Future<Output = Result<T, LimitError<E>>>,
) -> Result<T, LimitError<E>> {
    match limits.deadline {
        Some(deadline) => tokio::time::timeout(deadline, exchange)
            .await
            .map_err(|_| LimitError::Deadline { deadline })?,
        None => exchange.await,
    }
}

async fn send<E>(request: reqwest::RequestBuilder) -> Result<reqwest::Response, LimitError<E>> {
    let resp = request
        .send()
        .await
        .map_err(|e| LimitError::Transport(e.without_url()))?;
    if !resp.status().is_success() {
        return Err(LimitError::Status(resp.status()));
    }
    Ok(resp)
}

/// A plain GET: the body is the whole file.
async fn fresh<E>(
    client: &reqwest::Client,
    url: &str,
    restarted: Option<Restart>,
) -> Result<(reqwest::Response, Start), LimitError<E>> {
    let resp = send(client.get(url)).await?;
    let start = Start {
        offset: 0,
        total: resp.content_length(),
        validators: Validators::of(resp.headers()),
        restarted,
    };
    Ok((resp, start))
}

/// A GET of the rest of the file after `p`, or the whole file again when it cannot be.
async fn resume<E>(
    client: &reqwest::Client,
    url: &str,
    p: &Partial,
) -> Result<(reqwest::Response, Start), LimitError<E>> {
    let Some(validator) = p.validators.if_range() else {
        return fresh(client, url, Some(Restart::NoValidator)).await;
    };
    let request = client
        .get(url)
        .header(RANGE, format!("bytes={}-", p.bytes))
        .header(IF_RANGE, validator);
    let resp = request
        .send()
        .await
        .map_err(|e| LimitError::Transport(e.without_url()))?;
    let validators = Validators::of(resp.headers());
    match resp.status() {
        StatusCode::PARTIAL_CONTENT => match continuation(&resp, p, &validators) {
            Ok(total) => Ok((
                resp,
                Start {
                    offset: p.bytes,
                    total: Some(total),
                    validators,
                    restarted: None,
                },
            )),
            Err(why) => {
                drop(resp);
                fresh(client, url, Some(why)).await
            }
        },
        StatusCode::RANGE_NOT_SATISFIABLE => {
            drop(resp);
            fresh(client, url, Some(Restart::NotSatisfiable)).await
        }
        s if s.is_success() => {
            let why = if p.validators.differ(&validators) {
                Restart::Changed
            } else {
                Restart::NoRanges
            };
            let start = Start {
                offset: 0,
                total: resp.content_length(),
                validators,
                restarted: Some(why),
            };
            Ok((resp, start))
        }
        s => Err(LimitError::Status(s)),
    }
}

/// The whole file's length, when the `206` continues `p` exactly: its `Content-Range` is
/// `bytes <p.bytes>-<total-1>/<total>`, `total` is the one `p` expects, its body is that long
/// and it is the same version of the file.
fn continuation(
    resp: &reqwest::Response,
    p: &Partial,
    validators: &Validators,
) -> Result<u64, Restart> {
    if p.validators.differ(validators) {
        return Err(Restart::Changed);
    }
    let header = resp
        .headers()
        .get(CONTENT_RANGE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let bad = || {
        Restart::BadRange(if header.is_empty() {
            "none".into()
        } else {
            header.clone()
        })
    };
    let (first, last, total) = parse_content_range(&header).ok_or_else(bad)?;
    let fits = first == p.bytes
        && last.checked_add(1) == Some(total)
        && p.total.is_none_or(|t| t == total)
        && resp
            .content_length()
            .is_none_or(|n| Some(n) == (last + 1).checked_sub(first));
    if fits { Ok(total) } else { Err(bad()) }
}

/// `bytes 10-99/100` → (10, 99, 100); an unknown total (`*`) or a malformed header → `None`.
fn parse_content_range(v: &str) -> Option<(u64, u64, u64)> {
    let (range, total) = v.trim().strip_prefix("bytes ")?.split_once('/')?;
    let (first, last) = range.split_once('-')?;
    let (first, last, total) = (
        first.trim().parse().ok()?,
        last.trim().parse().ok()?,
        total.trim().parse().ok()?,
    );
    (first <= last).then_some((first, last, total))
}

/// Streams `resp`'s body, which begins at `start.offset` of the whole file, into `sink`.
async fn body<S: Sink + ?Sized>(
    mut resp: reqwest::Response,
    start: Start,
    limits: Limits,
    sink: &mut S,
) -> Result<Fetched, LimitError<S::Error>> {
    let total = start.total;
    if let (Some(announced), Some(max)) = (total, limits.max_bytes)
        && announced > max
    {
        return Err(LimitError::Announced { announced, max });
    }
    let limit = match (total, limits.max_bytes) {
        (Some(t), Some(m)) => Some(t.min(m)),
        (t, m) => t.or(m),
    };
    sink.start(&start).map_err(LimitError::Sink)?;
    let mut done = start.offset;
    loop {
        let next = resp.chunk();
        let chunk = match limits.stall {
            Some(stall) => tokio::time::timeout(stall, next)
                .await
                .map_err(|_| LimitError::Stalled { done, total, stall })?,
            None => next.await,
        };
        let chunk = chunk.map_err(|e| LimitError::Broken {
            done,
            total,
            reason: innermost(&e),
        })?;
        let Some(chunk) = chunk else {
            break;
        };
        done += chunk.len() as u64;
        if let Some(limit) = limit
            && done > limit
        {
            return Err(LimitError::TooLong { limit });
        }
        sink.write(&chunk).map_err(LimitError::Sink)?;
        sink.progress(done, total);
    }
    if let Some(total) = total
        && total != done
    {
        return Err(LimitError::Truncated { done, total });
    }
    Ok(Fetched {
        bytes: done,
        total,
        resumed_from: start.offset,
    })
}

/// The most specific cause of a transport error ("end of file before message length
/// reached" rather than "error decoding response body"), without the URL.
fn innermost(e: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// [`fetch`]'s closures as a [`Sink`].
struct Closures<'a, E> {
    sink: &'a mut (dyn FnMut(&[u8]) -> Result<(), E> + Send),
    progress: &'a mut (dyn FnMut(u64, Option<u64>) + Send),
}

impl<E> Sink for Closures<'_, E> {
    type Error = E;

    fn start(&mut self, _: &Start) -> Result<(), E> {
        Ok(())
    }

    fn write(&mut self, chunk: &[u8]) -> Result<(), E> {
        (self.sink)(chunk)
    }

    fn progress(&mut self, done: u64, total: Option<u64>) {
        (self.progress)(done, total);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_content_range_is_read_only_when_whole_and_ordered() {
        assert_eq!(parse_content_range("bytes 10-99/100"), Some((10, 99, 100)));
        assert_eq!(parse_content_range("bytes 10-99/*"), None);
        assert_eq!(parse_content_range("bytes 99-10/100"), None);
        assert_eq!(parse_content_range("items 10-99/100"), None);
        assert_eq!(parse_content_range(""), None);
    }

    #[test]
    fn if_range_carries_a_strong_etag_else_the_date_and_never_a_weak_etag() {
        let v = |etag: Option<&str>, lm: Option<&str>| Validators {
            etag: etag.map(str::to_string),
            last_modified: lm.map(str::to_string),
        };
        assert_eq!(v(Some("\"a\""), Some("d")).if_range(), Some("\"a\""));
        assert_eq!(v(Some("W/\"a\""), Some("d")).if_range(), Some("d"));
        assert_eq!(v(Some("W/\"a\""), None).if_range(), None);
        assert!(v(Some("\"a\""), None).differ(&v(Some("\"b\""), None)));
        assert!(!v(Some("\"a\""), None).differ(&v(None, Some("d"))));
    }

    #[test]
    fn byte_counts_say_how_many_of_how_many() {
        assert_eq!(byte_count(25, Some(100)), "25 of 100 bytes (25%)");
        assert_eq!(byte_count(25, None), "25 bytes");
    }
}
