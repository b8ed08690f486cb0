//! Keeps the provider API key (and other credentials the client sends) out of every error,
//! log line and event.
//!
//! Replaced, wherever they appear: the key itself, its percent-encoded form, the values of
//! extra headers whose name looks like a credential (`authorization`, `*key*`, `*token*`,
//! `*secret*`, `cookie`), and the token after any `Bearer `. Replacement marker:
//! `$SECRET:PROVIDER_API_KEY` (the vault's `$SECRET:<KEY>` convention). Values shorter than
//! 4 characters are not searched for (placeholder keys such as `no`), but the `Bearer` rule
//! still applies to them. An optional vault [`Redactor`] runs afterwards.

use std::sync::Arc;

use sayri_core::ports::Redactor;

/// Marker that replaces the provider key.
pub const KEY_MARKER: &str = "$SECRET:PROVIDER_API_KEY";

/// Redactor for the client's own credentials, chained with an optional vault redactor.
#[derive(Clone, Default)]
pub struct CredentialRedactor {
    secrets: Vec<String>,
    next: Option<Arc<dyn Redactor>>,
}

impl std::fmt::Debug for CredentialRedactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialRedactor")
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

fn sensitive_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "authorization",
        "key",
        "token",
        "secret",
        "cookie",
        "password",
    ]
    .iter()
    .any(|w| n.contains(w))
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl CredentialRedactor {
    /// Builds the redactor from the key and the extra headers.
    pub fn new(api_key: Option<&str>, extra_headers: &[(String, String)]) -> Self {
        let mut secrets = Vec::new();
        let mut add = |v: &str| {
            let v = v.trim();
            let v = v.strip_prefix("Bearer ").unwrap_or(v).trim();
            if v.chars().count() >= 4 {
                secrets.push(v.to_string());
                let enc = percent_encode(v);
                if enc != v {
                    secrets.push(enc);
                }
            }
        };
        if let Some(k) = api_key {
            add(k);
        }
        for (name, value) in extra_headers {
            if sensitive_header(name) {
                add(value);
            }
        }
        // Longest first, so a secret containing another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        CredentialRedactor {
            secrets,
            next: None,
        }
    }

    /// Chains a vault redactor that runs after the credential rules.
    pub fn with_next(mut self, next: Arc<dyn Redactor>) -> Self {
        self.next = Some(next);
        self
    }
}

impl Redactor for CredentialRedactor {
    fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), KEY_MARKER);
            }
        }
        out = redact_bearer(&out);
        match &self.next {
            Some(next) => next.redact(&out),
            None => out,
        }
    }
}

/// Replaces the token after every case-insensitive `Bearer ` with the marker.
fn redact_bearer(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut search = 0;
    while let Some(pos) = lower[search..].find("bearer ") {
        let start = search + pos + "bearer ".len();
        let end = text[start..]
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',')
            .map_or(text.len(), |e| start + e);
        if end > start && &text[start..end] != KEY_MARKER {
            out.push_str(&text[last..start]);
            out.push_str(KEY_MARKER);
            last = end;
        }
        search = end.max(start);
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-local-7Hq2Zr9Wm4Xa1Pb6";

    #[test]
    fn key_and_encoded_forms_are_replaced() {
        let r = CredentialRedactor::new(Some("ab+c/d=e"), &[]);
        assert_eq!(
            r.redact("k=ab+c/d=e and ab%2Bc%2Fd%3De"),
            format!("k={KEY_MARKER} and {KEY_MARKER}")
        );
    }

    #[test]
    fn key_in_a_provider_error_body_is_replaced() {
        let r = CredentialRedactor::new(Some(KEY), &[]);
        let out = r.redact(&format!("Incorrect API key provided: {KEY}"));
        assert!(!out.contains("7Hq2Zr9Wm4Xa1Pb6"));
        assert!(out.contains(KEY_MARKER));
    }

    #[test]
    fn bearer_tokens_and_sensitive_headers() {
        let r = CredentialRedactor::new(
            None,
            &[
                ("X-Api-Key".into(), "hdr-secret-123".into()),
                ("X-Title".into(), "Sayri".into()),
            ],
        );
        let out = r.redact("authorization: Bearer abc.def, x-api-key: hdr-secret-123, title Sayri");
        assert_eq!(
            out,
            format!("authorization: Bearer {KEY_MARKER}, x-api-key: {KEY_MARKER}, title Sayri")
        );
    }
}
