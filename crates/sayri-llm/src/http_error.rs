//! Maps HTTP error responses and transport failures to short, useful [`ChatError`]s.
//!
//! Messages name the cause and the next step; the server's own message (from
//! `error.message`, `error`, `message` or `detail` of a JSON body, else the first 200
//! characters of a text body) is appended, shortened to one line. Every message passes the
//! credential redactor before it leaves the crate.

use sayri_core::ports::ChatError;
use serde_json::Value;

/// One line, at most 200 characters, control characters removed.
pub fn shorten(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let collapsed = one_line.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() > 200 {
        let cut: String = collapsed.chars().take(200).collect();
        format!("{cut}…")
    } else {
        collapsed
    }
}

/// The server's own error text from a response body.
pub fn server_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<Value>(body) {
        let pick = |v: &Value| -> Option<String> {
            match v {
                Value::String(s) => Some(s.clone()),
                Value::Object(_) => v.get("message").and_then(Value::as_str).map(str::to_string),
                _ => None,
            }
        };
        for field in ["error", "message", "detail"] {
            if let Some(m) = json.get(field).and_then(pick) {
                return shorten(&m);
            }
        }
    }
    shorten(body)
}

/// Builds the error for an HTTP status `status` with `body`, `retry_after` seconds and the
/// displayable endpoint URL. The caller redacts the result.
pub fn http_error(status: u16, body: &str, retry_after: Option<u64>, url: &str) -> ChatError {
    let server = server_message(body);
    let detail = if server.is_empty() {
        String::new()
    } else {
        format!(": {server}")
    };
    let message = match status {
        401 | 403 => format!(
            "the model server rejected the API key (HTTP {status}){detail} — set the right key: `sayri config set provider.api_key` (it asks for the key)"
        ),
        404 if url.trim_end_matches('/').ends_with("/models") => format!(
            "no model list at {url} (HTTP 404){detail} — fix the endpoint (it usually ends in /v1): `sayri config set provider.base_url URL`"
        ),
        404 => format!(
            "model or endpoint not found (HTTP 404) at {url}{detail} — fix the endpoint (`sayri config set provider.base_url URL`) or pick a model it serves (`sayri models list --remote`, then `sayri config set provider.model NAME`)"
        ),
        429 => {
            let wait = retry_after
                .map(|s| format!("; retry after {s} s"))
                .unwrap_or_default();
            format!("rate limit or quota exceeded (HTTP 429){wait}{detail}")
        }
        500..=599 => format!(
            "the model server failed (HTTP {status}){detail} — check its log, or try again later"
        ),
        _ => format!("the model server refused the request (HTTP {status}){detail}"),
    };
    ChatError::Http {
        status,
        message,
        retry_after,
    }
}

/// Parses a `Retry-After` header value given in seconds (HTTP dates are not used by the
/// providers we target and yield `None`).
pub fn parse_retry_after(value: Option<&str>) -> Option<u64> {
    value
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| s.ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_text_bodies() {
        assert_eq!(
            server_message(r#"{"error":{"message":"bad model"}}"#),
            "bad model"
        );
        assert_eq!(server_message(r#"{"error":"plain"}"#), "plain");
        assert_eq!(server_message(r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(
            server_message("<html>\n<b>502</b>\n</html>"),
            "<html> <b>502</b> </html>"
        );
        assert_eq!(server_message(&"x".repeat(500)).chars().count(), 201);
    }

    #[test]
    fn status_messages() {
        let e = http_error(429, "{}", Some(7), "http://h/v1/chat/completions");
        assert_eq!(
            e.to_string(),
            "rate limit or quota exceeded (HTTP 429); retry after 7 s: {}"
        );
        assert!(
            http_error(401, "", None, "u")
                .to_string()
                .contains("provider.api_key")
        );
        assert!(
            http_error(404, "", None, "http://h/v1/chat/completions")
                .to_string()
                .contains("http://h/v1/chat/completions")
        );
        // The model list names its own URL and does not suggest itself.
        let m = http_error(404, "", None, "http://h/v1/models").to_string();
        assert!(
            m.contains("http://h/v1/models") && !m.contains("models list"),
            "{m}"
        );
        assert!(
            http_error(503, "overloaded", None, "u")
                .to_string()
                .contains("HTTP 503): overloaded")
        );
        assert_eq!(parse_retry_after(Some(" 3 ")), Some(3));
        assert_eq!(
            parse_retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            None
        );
    }
}
