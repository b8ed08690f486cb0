//! Long-term memory: the short facts a person keeps for Sayri, and the rules every path that
//! writes one applies (adding, editing, importing).
//!
//! * A fact is one short text: trimmed, not empty, at most [`MAX_FACT_CHARS`] characters.
//! * It belongs to one agent (an agent id) or to every agent (`None`).
//! * Its provenance is one of [`MemorySource`]: written by the person, proposed by a model, or
//!   read from an import file.
//! * A fact that holds a vault secret is refused outright (never stored redacted): the check is
//!   the vault's own redactor, so a secret is recognised in every encoding it knows.
//! * A search takes the words of the query only ([`search_words`]): letters and digits, split at
//!   everything else, so no character a person types can become query syntax.

use crate::ports::Redactor;

/// The most characters a fact may have.
pub const MAX_FACT_CHARS: usize = 500;

/// Where a fact came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemorySource {
    /// Written by the person (`sayri memory add`, a front-end).
    Person,
    /// Proposed by a model during a turn.
    Model,
    /// Read from an import file.
    Import,
}

impl MemorySource {
    /// Every source, in the order they are documented.
    pub const ALL: [MemorySource; 3] = [
        MemorySource::Person,
        MemorySource::Model,
        MemorySource::Import,
    ];

    /// The name stored and sent on the wire: `person`, `model` or `import`.
    pub fn as_str(self) -> &'static str {
        match self {
            MemorySource::Person => "person",
            MemorySource::Model => "model",
            MemorySource::Import => "import",
        }
    }

    /// The source named `name`, if it is one.
    ///
    /// ```
    /// use sayri_core::domain::memory::MemorySource;
    /// assert_eq!(MemorySource::parse("import"), Some(MemorySource::Import));
    /// assert_eq!(MemorySource::parse("Person"), None);
    /// ```
    pub fn parse(name: &str) -> Option<MemorySource> {
        MemorySource::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// Why a fact cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactError {
    /// Nothing but whitespace.
    #[error("the fact is empty: write the fact itself, e.g. \"I prefer metric units\"")]
    Empty,
    /// Longer than [`MAX_FACT_CHARS`].
    #[error(
        "the fact has {chars} characters, more than {MAX_FACT_CHARS}: keep one short fact per entry (split a longer note into several)"
    )]
    TooLong {
        /// Its length in characters, trimmed.
        chars: usize,
    },
    /// It holds a value of the vault. The message never repeats the value.
    #[error(
        "the fact contains a secret stored in the vault (or an encoding of one); nothing was stored — secrets stay in the vault only: write the fact without the value"
    )]
    Secret,
    /// The agent is not a valid agent id.
    #[error(
        "{0:?} is not an agent id (letters, digits, '-' and '_'): give an agent of `sayri agents list`, or none for every agent"
    )]
    BadAgent(String),
}

/// `raw` as a fact may be stored: trimmed, checked for length and for secrets.
///
/// # Errors
/// [`FactError::Empty`], [`FactError::TooLong`], or [`FactError::Secret`] when `redactor`
/// recognises a secret in it.
///
/// ```
/// use sayri_core::domain::memory::{FactError, fact_text};
/// use sayri_core::ports::NoSecrets;
/// assert_eq!(fact_text("  I live in Cusco \n", &NoSecrets).unwrap(), "I live in Cusco");
/// assert_eq!(fact_text(" \t", &NoSecrets), Err(FactError::Empty));
/// ```
pub fn fact_text(raw: &str, redactor: &dyn Redactor) -> Result<String, FactError> {
    let text = raw.trim();
    if text.is_empty() {
        return Err(FactError::Empty);
    }
    let chars = text.chars().count();
    if chars > MAX_FACT_CHARS {
        return Err(FactError::TooLong { chars });
    }
    if holds_secret(text, redactor) {
        return Err(FactError::Secret);
    }
    Ok(text.to_string())
}

/// Whether `redactor` finds a secret in `text` (it would change the text).
pub fn holds_secret(text: &str, redactor: &dyn Redactor) -> bool {
    redactor.redact(text) != text
}

/// `agent` as a fact's agent: `None` (or blank) is every agent, anything else must be a valid
/// agent id.
///
/// # Errors
/// [`FactError::BadAgent`].
pub fn fact_agent(agent: Option<&str>) -> Result<Option<String>, FactError> {
    match agent.map(str::trim).filter(|a| !a.is_empty()) {
        None => Ok(None),
        Some(a) if crate::domain::profile::valid_agent_id(a) => Ok(Some(a.to_string())),
        Some(a) => Err(FactError::BadAgent(a.to_string())),
    }
}

/// The words of a search query: maximal runs of letters, digits and combining marks, so
/// quotes, `*`, `-`, parentheses and every other symbol only separate words. Operator words
/// (`NEAR`, `OR`) stay words; the caller quotes each one as a plain term.
///
/// ```
/// use sayri_core::domain::memory::search_words;
/// assert_eq!(search_words("\"dog\" -cat NEAR(x*)"), ["dog", "cat", "NEAR", "x"]);
/// assert_eq!(search_words("café, ¿dónde?"), ["café", "dónde"]);
/// assert!(search_words("*** --").is_empty());
/// ```
pub fn search_words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !(c.is_alphanumeric() || is_combining_mark(c)))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Combining marks of the common blocks (a decomposed `é` is `e` and U+0301).
fn is_combining_mark(c: char) -> bool {
    matches!(c,
        '\u{0300}'..='\u{036F}'
        | '\u{1AB0}'..='\u{1AFF}'
        | '\u{1DC0}'..='\u{1DFF}'
        | '\u{20D0}'..='\u{20FF}'
        | '\u{FE20}'..='\u{FE2F}')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Knows one secret, plain or base64 (the real detector lives in the vault).
    struct OneSecret;

    impl Redactor for OneSecret {
        fn redact(&self, text: &str) -> String {
            text.replace("hunter2-very-secret", "$SECRET:K")
                .replace("aHVudGVyMi12ZXJ5LXNlY3JldA", "$SECRET:K")
        }
    }

    #[test]
    fn a_fact_is_trimmed_and_bounded_in_characters_not_bytes() {
        let at_limit = "é".repeat(MAX_FACT_CHARS);
        assert_eq!(fact_text(&at_limit, &OneSecret).unwrap(), at_limit);
        let over = format!("{at_limit}x");
        assert_eq!(
            fact_text(&over, &OneSecret),
            Err(FactError::TooLong {
                chars: MAX_FACT_CHARS + 1
            })
        );
        assert_eq!(fact_text("\n\t ", &OneSecret), Err(FactError::Empty));
    }

    #[test]
    fn a_fact_holding_a_secret_is_refused_and_the_message_does_not_repeat_it() {
        for text in [
            "my password is hunter2-very-secret",
            "encoded: aHVudGVyMi12ZXJ5LXNlY3JldA==",
        ] {
            let e = fact_text(text, &OneSecret).unwrap_err();
            assert_eq!(e, FactError::Secret);
            assert!(!e.to_string().contains("hunter2"), "{e}");
        }
    }

    #[test]
    fn agents_are_ids_or_every_agent() {
        assert_eq!(fact_agent(None), Ok(None));
        assert_eq!(fact_agent(Some("  ")), Ok(None));
        assert_eq!(fact_agent(Some("ops")), Ok(Some("ops".into())));
        assert!(matches!(
            fact_agent(Some("../x")),
            Err(FactError::BadAgent(_))
        ));
    }

    #[test]
    fn query_syntax_characters_only_separate_words() {
        assert_eq!(
            search_words("a\"b c*d e-f (g) h:i ^j {k} l+m"),
            [
                "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m"
            ]
        );
        assert_eq!(search_words("cafe\u{301} NEAR"), ["cafe\u{301}", "NEAR"]);
    }
}
