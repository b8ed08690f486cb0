//! Base URL normalisation: what a user types as the provider URL becomes the chat and model-list
//! endpoints.
//!
//! 1. Trim; empty is an error.
//! 2. No scheme: `http://` for loopback/`localhost` hosts (local servers speak plain HTTP),
//!    `https://` otherwise.
//! 3. Strip trailing `/`.
//! 4. If the URL ends with `/chat/completions`, that is the chat endpoint and the base is what
//!    precedes it.
//! 5. A URL with no path at all (`http://127.0.0.1:11434`) gets `/v1`: Ollama, llama-server,
//!    LM Studio and vLLM all serve the OpenAI API there. Any other path is kept as given
//!    (OpenRouter's `/api/v1`, gateways' own prefixes).
//!
//! Chat endpoint: `<base>/chat/completions`; model list: `<base>/models`.

use reqwest::Url;
use sayri_core::ports::ChatError;

/// The resolved endpoints of one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Normalised base, e.g. `http://127.0.0.1:11434/v1`.
    pub base: String,
    /// `POST` target for chat completions.
    pub chat: Url,
    /// `GET` target listing models.
    pub models: Url,
}

const CHAT_SUFFIX: &str = "/chat/completions";

impl Endpoint {
    /// Normalises `raw` (see module docs).
    ///
    /// Errors: [`ChatError::Config`] for an empty or unparsable URL.
    pub fn parse(raw: &str) -> Result<Endpoint, ChatError> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(ChatError::Config(
                "the model server URL is empty — set provider.base_url, e.g. http://127.0.0.1:11434/v1".into(),
            ));
        }
        let with_scheme = if trimmed.contains("://") {
            trimmed.to_string()
        } else {
            let host = trimmed.split(['/', ':']).next().unwrap_or("");
            let local = host == "localhost"
                || host.starts_with("127.")
                || host == "[::1]"
                || host == "0.0.0.0";
            format!("{}://{trimmed}", if local { "http" } else { "https" })
        };
        let mut base = with_scheme.trim_end_matches('/').to_string();
        if let Some(stripped) = base.strip_suffix(CHAT_SUFFIX) {
            base = stripped.trim_end_matches('/').to_string();
        }
        let parsed = Url::parse(&base).map_err(|e| {
            ChatError::Config(format!(
                "provider.base_url {} is not a valid URL ({e}) — use e.g. http://127.0.0.1:11434/v1",
                display_url(&base)
            ))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ChatError::Config(format!(
                "provider.base_url {} must start with http:// or https://",
                display_url(&base)
            )));
        }
        if parsed.path() == "/" || parsed.path().is_empty() {
            base.push_str("/v1");
        }
        let join = |suffix: &str| {
            Url::parse(&format!("{base}{suffix}")).map_err(|e| {
                ChatError::Config(format!(
                    "provider.base_url {} gives no valid endpoint ({e})",
                    display_url(&base)
                ))
            })
        };
        Ok(Endpoint {
            chat: join(CHAT_SUFFIX)?,
            models: join("/models")?,
            base,
        })
    }
}

/// A URL fit for messages and logs: user info (`user:pass@`) and the query are removed.
pub fn display_url(raw: &str) -> String {
    match Url::parse(raw) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.set_fragment(None);
            url.to_string().trim_end_matches('/').to_string()
        }
        Err(_) => raw
            .split(['?', '#'])
            .next()
            .unwrap_or("")
            .rsplit('@')
            .next()
            .unwrap_or("")
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(raw: &str) -> String {
        Endpoint::parse(raw).unwrap().chat.to_string()
    }

    #[test]
    fn normalisation_table() {
        assert_eq!(
            chat("http://127.0.0.1:11434/v1"),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        assert_eq!(
            chat(" http://127.0.0.1:11434/v1/ "),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        assert_eq!(
            chat("http://127.0.0.1:11434"),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        assert_eq!(
            chat("http://127.0.0.1:8080/"),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
        assert_eq!(
            chat("localhost:1234/v1"),
            "http://localhost:1234/v1/chat/completions"
        );
        assert_eq!(
            chat("api.openai.com/v1"),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            chat("https://openrouter.ai/api/v1"),
            "https://openrouter.ai/api/v1/chat/completions"
        );
        assert_eq!(
            chat("http://127.0.0.1:8000/v1/chat/completions"),
            "http://127.0.0.1:8000/v1/chat/completions"
        );
        let ep = Endpoint::parse("http://h:1/v1/chat/completions/").unwrap();
        assert_eq!(ep.models.as_str(), "http://h:1/v1/models");
        assert_eq!(ep.base, "http://h:1/v1");
    }

    #[test]
    fn empty_and_bad_urls_are_config_errors() {
        assert!(
            matches!(Endpoint::parse("  "), Err(ChatError::Config(m)) if m.contains("provider.base_url"))
        );
        assert!(matches!(
            Endpoint::parse("ftp://x/v1"),
            Err(ChatError::Config(_))
        ));
        assert!(matches!(
            Endpoint::parse("http://"),
            Err(ChatError::Config(_))
        ));
    }

    #[test]
    fn display_url_hides_credentials_and_query() {
        assert_eq!(display_url("http://u:p@h:1/v1?key=abc"), "http://h:1/v1");
    }
}
