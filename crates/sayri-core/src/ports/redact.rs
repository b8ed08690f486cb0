//! The `Redactor` port: hides secrets in text before it reaches the model, storage, logs or events.

/// What a redacted secret becomes: this prefix followed by its key name (`$SECRET:GITHUB_TOKEN`).
pub const SECRET_MARKER_PREFIX: &str = "$SECRET:";

/// Replaces every secret (in any encoded form) in a text with `$SECRET:<KEY>`.
/// The vault adapter implements it; until then [`NoSecrets`] is the identity.
pub trait Redactor: Send + Sync {
    /// Returns `text` with every known secret replaced by its marker.
    fn redact(&self, text: &str) -> String;

    /// As [`Redactor::redact`], for a text that was cut short (a title, an intent): a trailing
    /// piece of at least 4 characters that starts a secret is replaced too, since the rest of
    /// the secret was cut off. The default redacts whole secrets only.
    fn redact_cut(&self, text: &str) -> String {
        self.redact(text)
    }

    /// As [`Redactor::redact`], for a text whose beginning was cut off (the tail of a long
    /// output): a leading piece of at least 4 characters that ends a secret is replaced too,
    /// since its start was cut off. The default redacts whole secrets only.
    fn redact_cut_start(&self, text: &str) -> String {
        self.redact(text)
    }
}

/// The first `max` characters of `text` as they may be shown or stored: redacted before the
/// cut (so the cut cannot split a secret into an unrecognisable prefix), and once more as a cut
/// text.
pub fn redacted_prefix(redactor: &dyn Redactor, text: &str, max: usize) -> String {
    let whole = redactor.redact(text);
    let cut = crate::domain::text::cut_chars(&whole, max);
    if cut.len() == whole.len() {
        cut
    } else {
        redactor.redact_cut(&cut)
    }
}

/// A redactor for a setup with no secrets: returns the text unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSecrets;

impl Redactor for NoSecrets {
    fn redact(&self, text: &str) -> String {
        text.to_string()
    }
}
