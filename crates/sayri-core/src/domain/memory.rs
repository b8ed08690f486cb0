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
//! * **Who reads what** ([`MemoryScope::for_agent`]): an agent the person made reads its own
//!   facts and those for every agent. A sub-agent reads only its own, unless its creator is
//!   listed in `memory.shared_with_sub_agents`: then also what its creator reads. A model's
//!   fact is written to its own agent's memory only ([`MemoryScope::writes_to`]).
//! * **Recall within a budget** ([`recall_lines`]): facts go to the model best first, one line
//!   each, while the lines fit `memory.recall_tokens`; a fact that does not fit is left out
//!   whole, never cut.
//! * **Hygiene**: two facts are the same ([`same_fact`]) when they differ only in case, spacing
//!   or a final full stop; the same fact is never stored twice for one agent. Two facts
//!   **contradict** ([`contradicts`]) when they state a different value for the same subject:
//!   the words before the first ` is `, ` are `, ` = ` or `: ` ([`subject`]). A fact not
//!   recalled for `memory.ttl_days` is **stale** ([`is_stale`]): listed for review, never
//!   deleted by Sayri.
//! * **Automatic recall** ([`auto_recall_matches`]): a fact passes when it shares at least
//!   [`AUTO_RECALL_MIN_WORDS`] distinct words of [`AUTO_RECALL_MIN_CHARS`] or more characters
//!   with the person's message (case folded).

use crate::ports::{RecalledFact, Redactor};
use std::collections::HashSet;

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

/// What a turn may read from memory, and where its model's facts go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryScope {
    /// The agent of the turn (its model's facts are written here).
    pub agent: String,
    /// Agents whose own facts the turn reads (the turn's agent first).
    pub readable: Vec<String>,
    /// Whether the facts for every agent are read.
    pub every_agent: bool,
}

impl MemoryScope {
    /// The scope of a turn of `agent`, created by `parent` (`None` for an agent the person made),
    /// where `shared_with_sub_agents` lists the creators whose sub-agents may read their memory.
    ///
    /// ```
    /// use sayri_core::domain::memory::MemoryScope;
    /// let own = MemoryScope::for_agent("helper", Some("default"), &[]);
    /// assert_eq!(own.readable, ["helper"]);
    /// assert!(!own.every_agent);
    /// let shared = MemoryScope::for_agent("helper", Some("default"), &["default".into()]);
    /// assert_eq!(shared.readable, ["helper", "default"]);
    /// assert!(shared.every_agent);
    /// ```
    pub fn for_agent(
        agent: &str,
        parent: Option<&str>,
        shared_with_sub_agents: &[String],
    ) -> MemoryScope {
        let mut readable = vec![agent.to_string()];
        let every_agent = match parent {
            None => true,
            Some(p) if shared_with_sub_agents.iter().any(|s| s == p) => {
                readable.push(p.to_string());
                true
            }
            Some(_) => false,
        };
        MemoryScope {
            agent: agent.to_string(),
            readable,
            every_agent,
        }
    }

    /// Whether a fact of `agent` (`None`: every agent) is readable in this scope.
    pub fn reads(&self, agent: Option<&str>) -> bool {
        match agent {
            None => self.every_agent,
            Some(a) => self.readable.iter().any(|r| r == a),
        }
    }

    /// The agent a fact the model proposes is stored for: always the turn's own.
    pub fn writes_to(&self) -> &str {
        &self.agent
    }
}

/// The `[memory]` settings a turn uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemorySettings {
    /// `memory.auto_accept`: a model's fact is stored without a card.
    pub auto_accept: bool,
    /// `memory.recall_tokens`: most tokens of facts one recall puts in a request.
    pub recall_tokens: usize,
    /// `memory.auto_recall`: matching facts are added before the first model call of a turn.
    pub auto_recall: bool,
    /// `memory.shared_with_sub_agents`: creators whose sub-agents read their memory.
    pub shared_with_sub_agents: Vec<String>,
}

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            auto_accept: false,
            recall_tokens: DEFAULT_RECALL_TOKENS,
            auto_recall: false,
            shared_with_sub_agents: Vec::new(),
        }
    }
}

/// `memory.recall_tokens` by default.
pub const DEFAULT_RECALL_TOKENS: usize = 300;

/// Most facts one search asks the store for (the token budget usually stops earlier).
pub const RECALL_SEARCH_LIMIT: usize = 20;

/// Fewest shared words for [`auto_recall_matches`].
pub const AUTO_RECALL_MIN_WORDS: usize = 2;

/// Shortest word [`auto_recall_matches`] counts (shorter ones are mostly function words).
pub const AUTO_RECALL_MIN_CHARS: usize = 4;

/// The lines given to the model for `facts` (best first): `- <fact>` each, while their tokens
/// (`tokens_of` a line) stay within `cap`. Returns the text and the ids of the facts in it.
///
/// ```
/// use sayri_core::domain::memory::recall_lines;
/// use sayri_core::ports::RecalledFact;
/// let fact = |id, text: &str| RecalledFact { id, text: text.into(), agent: None };
/// let facts = vec![fact(1, "aaaa"), fact(2, &"b".repeat(40)), fact(3, "cc")];
/// let (text, ids) = recall_lines(&facts, 5, |l| l.len() / 2);
/// assert_eq!(ids, [1, 3]);
/// assert_eq!(text, "- aaaa\n- cc\n");
/// ```
pub fn recall_lines(
    facts: &[RecalledFact],
    cap: usize,
    tokens_of: impl Fn(&str) -> usize,
) -> (String, Vec<i64>) {
    let mut text = String::new();
    let mut ids = Vec::new();
    let mut used = 0usize;
    for f in facts {
        let line = format!("- {}\n", f.text.replace(['\n', '\r'], " "));
        let cost = tokens_of(&line);
        if used + cost > cap {
            continue;
        }
        used += cost;
        text.push_str(&line);
        ids.push(f.id);
    }
    (text, ids)
}

/// The distinct words of `text` that [`auto_recall_matches`] compares: case folded, at least
/// [`AUTO_RECALL_MIN_CHARS`] characters.
fn content_words(text: &str) -> HashSet<String> {
    search_words(text)
        .into_iter()
        .map(|w| w.to_lowercase())
        .filter(|w| w.chars().count() >= AUTO_RECALL_MIN_CHARS)
        .collect()
}

/// The facts of `candidates` that share at least [`AUTO_RECALL_MIN_WORDS`] content words with
/// `message`, in the candidates' order.
///
/// ```
/// use sayri_core::domain::memory::auto_recall_matches;
/// use sayri_core::ports::RecalledFact;
/// let fact = |id, text: &str| RecalledFact { id, text: text.into(), agent: None };
/// let facts = vec![fact(1, "My backup disk is /mnt/tank"), fact(2, "I like backup tapes")];
/// let hits = auto_recall_matches("Where is my BACKUP disk?", &facts);
/// assert_eq!(hits.iter().map(|f| f.id).collect::<Vec<_>>(), [1]);
/// ```
pub fn auto_recall_matches(message: &str, candidates: &[RecalledFact]) -> Vec<RecalledFact> {
    let asked = content_words(message);
    candidates
        .iter()
        .filter(|f| content_words(&f.text).intersection(&asked).count() >= AUTO_RECALL_MIN_WORDS)
        .cloned()
        .collect()
}

/// `text` as compared for sameness: lower case, runs of whitespace as one space, without a
/// final `.`.
fn fact_key(text: &str) -> String {
    let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
    words.join(" ").trim_end_matches('.').trim_end().to_string()
}

/// Whether `a` and `b` say the same thing (see the module rules).
///
/// ```
/// use sayri_core::domain::memory::same_fact;
/// assert!(same_fact("My backup disk is /mnt/tank.", "my  backup disk is /mnt/tank"));
/// assert!(!same_fact("My backup disk is /mnt/tank", "My backup disk is /mnt/pool"));
/// ```
pub fn same_fact(a: &str, b: &str) -> bool {
    fact_key(a) == fact_key(b)
}

/// The subject of a fact: its words before the first ` is `, ` are `, ` = ` or `: `, in lower
/// case; `None` when it has no such separator or nothing before it.
///
/// ```
/// use sayri_core::domain::memory::subject;
/// assert_eq!(subject("My backup disk is /mnt/tank").as_deref(), Some("my backup disk"));
/// assert_eq!(subject("Editor: vim").as_deref(), Some("editor"));
/// assert_eq!(subject("I prefer metric units"), None);
/// ```
pub fn subject(text: &str) -> Option<String> {
    let key = fact_key(text);
    let cut = [" is ", " are ", " = ", ": "]
        .iter()
        .filter_map(|sep| key.find(sep))
        .min()?;
    let s = key[..cut].trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// Whether `newer` and `older` give different values for the same subject.
///
/// ```
/// use sayri_core::domain::memory::contradicts;
/// assert!(contradicts("My backup disk is /mnt/pool", "my backup disk is /mnt/tank"));
/// assert!(!contradicts("My backup disk is /mnt/tank.", "My backup disk is /mnt/tank"));
/// assert!(!contradicts("My editor is vim", "My backup disk is /mnt/tank"));
/// ```
pub fn contradicts(newer: &str, older: &str) -> bool {
    match (subject(newer), subject(older)) {
        (Some(a), Some(b)) => a == b && !same_fact(newer, older),
        _ => false,
    }
}

/// The pairs `(newer, older)` of indices into `facts` (each `(agent, text)`, oldest first)
/// that [`contradict`](contradicts) each other within one agent, newest first.
///
/// ```
/// use sayri_core::domain::memory::conflicting_pairs;
/// let facts = [
///     (None, "My backup disk is /mnt/tank"),
///     (Some("ops"), "My backup disk is /srv/b"),
///     (None, "My backup disk is /mnt/pool"),
/// ];
/// assert_eq!(conflicting_pairs(&facts), [(2, 0)]);
/// ```
pub fn conflicting_pairs(facts: &[(Option<&str>, &str)]) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for (j, (agent_j, newer)) in facts.iter().enumerate().rev() {
        for (i, (agent_i, older)) in facts[..j].iter().enumerate().rev() {
            if agent_i == agent_j && contradicts(newer, older) {
                pairs.push((j, i));
            }
        }
    }
    pairs
}

/// Whether a fact last recalled at `last_recalled` (or never: then counted from `created_at`)
/// is stale at `now` with `ttl_days`.
///
/// ```
/// use sayri_core::domain::memory::is_stale;
/// let day = 86_400.0;
/// assert!(is_stale(0.0, None, 91.0 * day, 90));
/// assert!(!is_stale(0.0, Some(2.0 * day), 91.0 * day, 90));
/// ```
pub fn is_stale(created_at: f64, last_recalled: Option<f64>, now: f64, ttl_days: u32) -> bool {
    let since = last_recalled.unwrap_or(created_at);
    now - since > f64::from(ttl_days) * 86_400.0
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
