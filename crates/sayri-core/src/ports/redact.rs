//! The `Redactor` port: hides secrets in text before it reaches the model, storage, logs or events.

/// What a redacted secret becomes: this prefix followed by its key name (`$SECRET:GITHUB_TOKEN`).
pub const SECRET_MARKER_PREFIX: &str = "$SECRET:";

/// Replaces every secret (in any encoded form) in a text with `$SECRET:<KEY>`.
/// The vault adapter implements it; until then [`NoSecrets`] is the identity.
pub trait Redactor: Send + Sync {
    /// Returns `text` with every known secret replaced by its marker.
    fn redact(&self, text: &str) -> String;
}

/// A redactor for a setup with no secrets: returns the text unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSecrets;

impl Redactor for NoSecrets {
    fn redact(&self, text: &str) -> String {
        text.to_string()
    }
}
