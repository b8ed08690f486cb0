//! `strip_patterns`: removing unwanted text from the final answer.
//!
//! Always removes `<think>…</think>` and `<thought>…</thought>` (any case, across lines). Then
//! each entry of the configured pattern string ([`pattern_entries`]: split on commas and
//! newlines, trimmed, non-empty) is applied as a case-insensitive, dot-matches-newline regex
//! ([`compile_pattern`]). The setting is checked with [`check_patterns`] before it is stored, so
//! every entry compiles; an entry that still does not (settings built elsewhere) is removed
//! literally. Runs of 3+ newlines collapse to 2; the result is trimmed. Applied to the final
//! answer only.

use regex::{Regex, RegexBuilder};
use std::sync::OnceLock;

fn think_re() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?is)<think>.*?</think>|<thought>.*?</thought>").ok())
        .as_ref()
}

fn newlines_re() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\n{3,}").ok()).as_ref()
}

/// The entries of a `strip_patterns` value: split on commas and newlines, trimmed, empty ones
/// dropped. A pattern therefore cannot contain a comma.
pub fn pattern_entries(patterns: &str) -> impl Iterator<Item = &str> {
    patterns
        .split([',', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
}

/// Compiles one entry the way [`strip_patterns`] applies it: case-insensitive, `.` matching
/// newlines.
///
/// # Errors
/// The regex compiler's error.
pub fn compile_pattern(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .case_insensitive(true)
        .dot_matches_new_line(true)
        .build()
}

/// Checks that every entry of a `strip_patterns` value compiles.
///
/// # Errors
/// The first entry that does not, with the compiler's reason on one line, e.g.
/// `pattern "((((" does not compile: unclosed group`.
pub fn check_patterns(patterns: &str) -> Result<(), PatternError> {
    for p in pattern_entries(patterns) {
        if let Err(e) = compile_pattern(p) {
            return Err(PatternError {
                pattern: p.to_string(),
                reason: regex_reason(&e),
            });
        }
    }
    Ok(())
}

/// A `strip_patterns` entry that does not compile, with the compiler's reason on one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pattern {pattern:?} does not compile: {reason}")]
pub struct PatternError {
    /// The entry as written.
    pub pattern: String,
    /// The compiler's reason, e.g. `unclosed group`.
    pub reason: String,
}

/// The regex compiler's reason without its multi-line caret diagram (`unclosed group`).
fn regex_reason(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(text) => text
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("error:"))
            .map(|r| r.trim().to_string())
            .unwrap_or_else(|| text.split_whitespace().collect::<Vec<_>>().join(" ")),
        regex::Error::CompiledTooBig(limit) => {
            format!("it would compile to more than {limit} bytes; simplify it")
        }
        other => other.to_string(),
    }
}

/// Returns `text` cleaned by the built-in rules and `patterns` (see the module doc).
pub fn strip_patterns(text: &str, patterns: &str) -> String {
    let mut out = match think_re() {
        Some(re) => re.replace_all(text, "").into_owned(),
        None => text.to_string(),
    };
    for p in pattern_entries(patterns) {
        out = match compile_pattern(p) {
            Ok(re) => re.replace_all(&out, "").into_owned(),
            Err(_) => out.replace(p, ""),
        };
    }
    if let Some(re) = newlines_re() {
        out = re.replace_all(&out, "\n\n").into_owned();
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::{check_patterns, strip_patterns};

    #[test]
    fn think_tags_patterns_and_newlines() {
        let t = "<THINK>secret\nplan</think>Hello [[x]]\n\n\n\nWorld (*";
        assert_eq!(strip_patterns(t, r"\[\[.*?\]\], (*"), "Hello \n\nWorld");
        assert_eq!(strip_patterns("  a <thought>b</thought> ", ""), "a");
    }

    #[test]
    fn a_pattern_that_does_not_compile_is_named_with_the_compilers_reason() {
        assert_eq!(
            check_patterns("<x>.*?</x>, ((((").map_err(|e| e.to_string()),
            Err("pattern \"((((\" does not compile: unclosed group".into())
        );
        assert!(check_patterns(r"\[\[.*?\]\], <think>.*?</think>").is_ok());
        let big = check_patterns(r"\w{1000}{1000}").unwrap_err().to_string();
        assert!(big.contains("more than"), "{big}");
    }
}
