//! Sayri's HTTP client set-up, shared by every crate that speaks HTTP (the provider client of
//! `sayri-llm`, the voice model downloads of `sayri-voice`, `sayri lookup`, the Telegram
//! gateway):
//!
//! * [`tls`] — the rustls configuration (the `ring` provider, the system's CA certificates for
//!   `https://`, none for `http://`), and [`client_builder`], a `reqwest` builder that uses it.
//! * [`download`] — one bounded download: a size cap (also against the announced length), one
//!   deadline for the whole exchange, a stall timeout between chunks, errors that say how many
//!   bytes of how many arrived, continuing a partial copy with `Range` where the server allows
//!   it ([`fetch_resumable`]), and [`without_credentials`] for every URL an error or a line of
//!   output names.

pub mod download;
pub mod tls;

pub use download::{
    Fetched, LimitError, Limits, Partial, Restart, Sink, Start, Validators, byte_count, fetch,
    fetch_resumable, without_credentials,
};
pub use tls::{TlsError, client_config};

/// The HTTP client [`client_builder`] builds (`reqwest`'s), named for callers that hold one.
pub use reqwest::Client;

/// The `User-Agent` Sayri's downloads send (`sayri/<version>`).
pub const USER_AGENT: &str = concat!("sayri/", env!("CARGO_PKG_VERSION"));

/// A `reqwest` client builder with Sayri's TLS set-up for an endpoint (`https` says whether its
/// URL is `https://`). The caller adds its own timeouts and user agent.
///
/// # Errors
/// [`TlsError`] when an `https://` endpoint is asked for and the system has no CA certificate.
pub fn client_builder(https: bool) -> Result<reqwest::ClientBuilder, TlsError> {
    Ok(reqwest::Client::builder().tls_backend_preconfigured(client_config(https)?))
}
