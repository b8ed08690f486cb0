//! TLS for every HTTP client of Sayri (the provider, model downloads, `sayri lookup`, the
//! Telegram gateway): rustls with the `ring` crypto provider, set up per endpoint so a plain
//! `http://` endpoint (a local model server) loads no certificates at all.
//!
//! * `https://`: the system's CA certificates (the distribution bundle; `SSL_CERT_FILE` and
//!   `SSL_CERT_DIR` are honoured), loaded when the client is built — on the first request.
//! * `http://`: an empty root store. Nothing is read, and a redirect to `https://` fails
//!   certificate verification instead of silently trusting anything.
//!
//! No OpenSSL is linked, so nothing TLS-related is mapped into the daemon until a request
//! needs it.

use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore};

/// Why no TLS configuration could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    /// An `https://` endpoint, and the system has no usable CA certificate.
    #[error(
        "no CA certificates found on this system for the https provider — install the ca-certificates package, or point SSL_CERT_FILE at a CA bundle"
    )]
    NoCertificates,
    /// rustls refused the protocol versions (a build without any).
    #[error("cannot set up TLS: {0}")]
    Setup(String),
}

/// The rustls configuration for an endpoint (`https` says whether its URL is `https://`).
///
/// # Errors
/// [`TlsError::NoCertificates`] when an `https://` endpoint is configured but the system has
/// no usable CA certificate.
pub fn client_config(https: bool) -> Result<ClientConfig, TlsError> {
    let mut roots = RootCertStore::empty();
    if https {
        let found = rustls_native_certs::load_native_certs();
        let (added, _ignored) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            return Err(TlsError::NoCertificates);
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Setup(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_endpoints_load_no_certificates_and_https_ones_load_the_system_store() {
        assert!(client_config(false).is_ok());
        // The test machines have the ca-certificates package (scripts/setup installs it).
        assert!(client_config(true).is_ok());
    }
}
