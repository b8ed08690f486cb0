//! Whole-value wildcard patterns (spec §6.2).
//!
//! A pattern matches the **whole** value, case-insensitively: `*` matches any run of characters
//! (including none), `?` exactly one character, every other character itself. A pattern that is
//! exactly `*` matches anything, including the empty value. A pattern ending in ` *` (space, star)
//! names a command with any arguments, so it also matches the command without arguments:
//! `git push *` matches `git push` (spec §15.1 item 5), `dd *` matches `dd` but not `ddrescue`.
//!
//! Shell values and shell patterns are compared after [`normalize_shell`]: whitespace runs become
//! one space, the ends are trimmed, and spaces around `|`, `;` and `&` are removed, so `a | b` and
//! `a|b` are the same text. Path values of `read`/`write` (see [`normalize_path`]) use `/` as the
//! separator and carry no trailing slash.

/// A compiled pattern: lower-cased characters, ready for repeated matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    source: String,
    chars: Vec<char>,
}

impl Pattern {
    /// Compiles `pattern` as written (no normalisation; see [`Pattern::shell`]).
    pub fn new(pattern: &str) -> Self {
        Pattern {
            source: pattern.to_string(),
            chars: fold(pattern),
        }
    }

    /// Compiles a pattern for the `shell` action: whitespace-normalised first.
    pub fn shell(pattern: &str) -> Self {
        let normalized = normalize_shell(pattern);
        Pattern {
            chars: fold(&normalized),
            source: pattern.to_string(),
        }
    }

    /// The pattern as written by its author.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern is the match-everything `*`.
    pub fn is_match_all(&self) -> bool {
        !self.chars.is_empty() && self.chars.iter().all(|c| *c == '*')
    }

    /// Whether `value` (already normalised by the caller) matches the whole pattern.
    pub fn matches(&self, value: &str) -> bool {
        let value = fold(value);
        if wildcard_match(&self.chars, &value) {
            return true;
        }
        match self.chars.as_slice() {
            [head @ .., ' ', '*'] if !head.is_empty() => wildcard_match(head, &value),
            _ => false,
        }
    }
}

/// Case folding used by matching: Unicode lower case, character by character.
fn fold(text: &str) -> Vec<char> {
    text.chars().flat_map(char::to_lowercase).collect()
}

/// Iterative whole-value wildcard matcher with single-star backtracking (linear memory, no
/// exponential blow-up on patterns such as `*a*a*a*b`).
fn wildcard_match(pattern: &[char], value: &[char]) -> bool {
    let (mut p, mut v) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while v < value.len() {
        if p < pattern.len() && (pattern[p] == '?' || pattern[p] == value[v]) {
            p += 1;
            v += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, v));
            p += 1;
        } else if let Some((sp, sv)) = star {
            p = sp + 1;
            v = sv + 1;
            star = Some((sp, sv + 1));
        } else {
            return false;
        }
    }
    while p < pattern.len() && pattern[p] == '*' {
        p += 1;
    }
    p == pattern.len()
}

/// Shell normalisation (spec §6.2): collapse whitespace runs to one space, trim, and delete the
/// spaces around `|`, `;` and `&`.
pub fn normalize_shell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    for c in text.trim().chars() {
        if c.is_whitespace() {
            pending_space = true;
            continue;
        }
        if matches!(c, '|' | ';' | '&') {
            pending_space = false;
            while out.ends_with(' ') {
                out.pop();
            }
            out.push(c);
            continue;
        }
        if pending_space && !out.is_empty() && !out.ends_with(['|', ';', '&']) {
            out.push(' ');
        }
        pending_space = false;
        out.push(c);
    }
    out
}

/// Path normalisation for `read`/`write` values: backslashes become `/`, trailing slashes are
/// removed (an empty result becomes `/`).
pub fn normalize_path(text: &str) -> String {
    let replaced = text.trim().replace('\\', "/");
    let trimmed = replaced.trim_end_matches('/');
    if trimmed.is_empty() {
        "/".to_string()
    } else {
        trimmed.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_value_and_case_insensitive() {
        assert!(Pattern::new("git *").matches("GIT status"));
        assert!(!Pattern::new("git").matches("git status"));
        assert!(!Pattern::new("dd *").matches("ddrescue --help"));
        assert!(Pattern::new("dd *").matches("dd"));
        assert!(Pattern::new("git push *").matches("git push"));
        assert!(!Pattern::new("git push *").matches("git pushx"));
        assert!(Pattern::new("a?c").matches("abc"));
        assert!(!Pattern::new("a?c").matches("ac"));
        assert!(Pattern::new("*").matches(""));
        assert!(Pattern::new("*a*a*b").matches("xaxaxab"));
        assert!(!Pattern::new("*a*a*b").matches("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac"));
    }

    #[test]
    fn shell_normalisation() {
        assert_eq!(normalize_shell("  a  |  b ;c &&  d \t e"), "a|b;c&&d e");
        assert!(Pattern::shell("curl *| sh").matches(&normalize_shell("curl x |sh")));
        assert_eq!(normalize_path("C:\\x\\"), "C:/x");
        assert_eq!(normalize_path("///"), "/");
    }
}
