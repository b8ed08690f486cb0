//! `strip_patterns`: removing unwanted text from the final answer.
//!
//! Always removes `<think>…</think>` and `<thought>…</thought>` (any case, across lines). Then
//! each entry of the configured pattern string (split on commas and newlines, trimmed,
//! non-empty) is applied as a case-insensitive, dot-matches-newline regex; an entry that is
//! not a valid regex is removed literally. Runs of 3+ newlines collapse to 2; the result is
//! trimmed. Applied to the final answer only.

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

/// Returns `text` cleaned by the built-in rules and `patterns` (see the module doc).
pub fn strip_patterns(text: &str, patterns: &str) -> String {
    let mut out = match think_re() {
        Some(re) => re.replace_all(text, "").into_owned(),
        None => text.to_string(),
    };
    for p in patterns
        .split([',', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        out = match RegexBuilder::new(p)
            .case_insensitive(true)
            .dot_matches_new_line(true)
            .build()
        {
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
    use super::strip_patterns;

    #[test]
    fn think_tags_patterns_and_newlines() {
        let t = "<THINK>secret\nplan</think>Hello [[x]]\n\n\n\nWorld (*";
        assert_eq!(strip_patterns(t, r"\[\[.*?\]\], (*"), "Hello \n\nWorld");
        assert_eq!(strip_patterns("  a <thought>b</thought> ", ""), "a");
    }
}
