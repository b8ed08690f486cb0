//! Whole-value wildcard patterns.
//!
//! A pattern matches the **whole** value, case-insensitively: `*` matches any run of characters
//! (including none), `?` exactly one character, every other character itself. A pattern that is
//! exactly `*` matches anything, including the empty value. A pattern ending in ` *` (space, star)
//! names a command with any arguments, so it also matches the command without arguments:
//! `git push *` matches `git push`, `dd *` matches `dd` but not `ddrescue`.
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

impl Pattern {
    /// Whether some value matches both this pattern and `glob`, a shell glob written in a command
    /// (`*`, `?` and `[…]`, compared case-insensitively like patterns). Used to judge a path such
    /// as `/etc/shad?w` against deny and ask rules: the shell may expand it to a protected file.
    pub fn intersects_glob(&self, glob: &str) -> bool {
        self.intersects(glob, true)
    }

    /// Whether some value matched by this pattern could be a value of `shape`, a word whose
    /// run-time parts are written as `*` (they may hold any text, `/` and leading dots
    /// included; see [`crate::shell::Word::shape`]).
    pub fn intersects_shape(&self, shape: &str) -> bool {
        self.intersects(shape, false)
    }

    fn intersects(&self, glob: &str, segment_limited: bool) -> bool {
        let a: Vec<Class> = self.chars.iter().map(|c| pattern_class(*c)).collect();
        let b = glob_classes(&fold(glob));
        let tail_star = matches!(self.chars.as_slice(), [head @ .., ' ', '*'] if !head.is_empty());
        if classes_intersect(&a, &b, segment_limited) {
            return true;
        }
        tail_star && classes_intersect(&a[..a.len() - 2], &b, segment_limited)
    }
}

/// One position of a glob: any run (`*`), one character (`?`), a set, or a literal.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Class {
    Star,
    Any,
    Set {
        negated: bool,
        items: Vec<(char, char)>,
    },
    Lit(char),
}

fn pattern_class(c: char) -> Class {
    match c {
        '*' => Class::Star,
        '?' => Class::Any,
        c => Class::Lit(c),
    }
}

/// Parses a shell glob: `*`, `?`, `[abc]`, `[a-z]`, `[!x]`/`[^x]`; a `[` without its `]` is literal.
fn glob_classes(glob: &[char]) -> Vec<Class> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < glob.len() {
        match glob[i] {
            '*' => out.push(Class::Star),
            '?' => out.push(Class::Any),
            '[' => {
                let mut j = i + 1;
                let negated = matches!(glob.get(j), Some('!' | '^'));
                if negated {
                    j += 1;
                }
                let start = j;
                let mut items = Vec::new();
                while j < glob.len() && (glob[j] != ']' || j == start) {
                    if j + 2 < glob.len() && glob[j + 1] == '-' && glob[j + 2] != ']' {
                        items.push((glob[j], glob[j + 2]));
                        j += 3;
                    } else {
                        items.push((glob[j], glob[j]));
                        j += 1;
                    }
                }
                if j < glob.len() {
                    out.push(Class::Set { negated, items });
                    i = j;
                } else {
                    out.push(Class::Lit('['));
                }
            }
            c => out.push(Class::Lit(c)),
        }
        i += 1;
    }
    out
}

fn admits(class: &Class, c: char) -> bool {
    match class {
        Class::Star | Class::Any => true,
        Class::Lit(l) => *l == c,
        Class::Set { negated, items } => {
            items.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated
        }
    }
}

/// Whether two single-character classes can match the same character.
fn share(a: &Class, b: &Class) -> bool {
    match (a, b) {
        (Class::Lit(c), other) | (other, Class::Lit(c)) => admits(other, *c),
        (
            Class::Set {
                negated: false,
                items,
            },
            other,
        )
        | (
            other,
            Class::Set {
                negated: false,
                items,
            },
        ) => items.iter().any(|(lo, hi)| {
            let (lo, hi) = (*lo as u32, *hi as u32);
            (lo..=hi.min(lo + 256))
                .filter_map(char::from_u32)
                .any(|c| admits(other, c))
        }),
        // `?` or negated sets on both sides: some character fits both (sets are small).
        _ => true,
    }
}

/// Whether some string matches both class sequences (dynamic programming over positions). With
/// `segment_limited`, `b` is a shell glob whose wildcards stay within one path segment.
fn classes_intersect(a: &[Class], b: &[Class], segment_limited: bool) -> bool {
    let (n, m) = (a.len(), b.len());
    // reach[i][j]: the prefixes a[..i] and b[..j] can match one common string.
    let mut reach = vec![vec![false; m + 1]; n + 1];
    reach[0][0] = true;
    for i in 0..=n {
        for j in 0..=m {
            if !reach[i][j] {
                continue;
            }
            if i < n && a[i] == Class::Star {
                reach[i + 1][j] = true;
                if j < m {
                    reach[i][j + 1] = true;
                }
            }
            // A glob's `*`, `?` and sets never match `/` (the shell expands one path segment),
            // nor a `.` that starts a segment (hidden files need a literal dot).
            let glob_at_segment_start = j == 0 || b[j - 1] == Class::Lit('/');
            let value_at_segment_start = i == 0 || a[i - 1] == Class::Lit('/');
            let wild_may_take = |c: &Class, at_start: bool| {
                !segment_limited || (*c != Class::Lit('/') && !(at_start && *c == Class::Lit('.')))
            };
            if j < m && b[j] == Class::Star {
                reach[i][j + 1] = true;
                if i < n && wild_may_take(&a[i], glob_at_segment_start && value_at_segment_start) {
                    reach[i + 1][j] = true;
                }
            }
            if i < n
                && j < m
                && a[i] != Class::Star
                && b[j] != Class::Star
                && (matches!(b[j], Class::Lit(_)) || wild_may_take(&a[i], glob_at_segment_start))
                && (!segment_limited || a[i] != Class::Lit('/') || b[j] == Class::Lit('/'))
                && share(&a[i], &b[j])
            {
                reach[i + 1][j + 1] = true;
            }
        }
    }
    reach[n][m]
}

/// `path` resolved lexically: repeated `/` and `.` segments removed, `..` applied to what precedes
/// it, and a leading `/proc/self/root`, `/proc/thread-self/root` or `/proc/<pid>/root` (the same
/// root seen through procfs) dropped. `None` for a relative path.
pub fn resolve_absolute(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
        if parts.len() == 3
            && parts[0] == "proc"
            && parts[2] == "root"
            && (parts[1] == "self"
                || parts[1] == "thread-self"
                || parts[1].chars().all(|c| c.is_ascii_digit()))
        {
            parts.clear();
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// A relative path (or one under `~`) resolved lexically as far as it can be: empty and `.`
/// segments dropped, `dir/..` removed; leading `..` stay.
///
/// ```
/// use sayri_permissions::pattern::clean_relative;
/// assert_eq!(clean_relative("./a//b/../c"), "a/c");
/// assert_eq!(clean_relative("x/../../etc/shadow"), "../etc/shadow");
/// assert_eq!(clean_relative("~/x/../.ssh/id_rsa"), "~/.ssh/id_rsa");
/// ```
pub fn clean_relative(path: &str) -> String {
    let (head, rest) = match path.strip_prefix('~') {
        Some(_) => match path.split_once('/') {
            Some((h, r)) => (Some(h), r),
            None => (Some(path), ""),
        },
        None => (None, path),
    };
    let mut parts: Vec<&str> = Vec::new();
    for seg in rest.split('/') {
        match seg {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    match head {
        Some(h) if body.is_empty() => h.to_string(),
        Some(h) => format!("{h}/{body}"),
        None if body.is_empty() => ".".into(),
        None => body,
    }
}

/// The glob of the absolute paths `path` may name when it climbs out of a directory that is not
/// known here — the working directory (`../../etc/shadow`) or a home directory
/// (`~root/../../etc/shadow`): `*/` followed by what remains after resolving it lexically
/// (`*/etc/shadow`). `None` for other paths (`~/.ssh/id_rsa` is matched as written).
///
/// ```
/// use sayri_permissions::pattern::unanchored_glob;
/// assert_eq!(unanchored_glob("../../etc/shadow").as_deref(), Some("*/etc/shadow"));
/// assert_eq!(unanchored_glob("~root/../../etc/./shadow").as_deref(), Some("*/etc/shadow"));
/// assert_eq!(unanchored_glob("~/.ssh/id_rsa"), None);
/// assert_eq!(unanchored_glob("src/../x"), None);
/// assert_eq!(unanchored_glob("/etc/x"), None);
/// ```
pub fn unanchored_glob(path: &str) -> Option<String> {
    let rest = match path.strip_prefix('~') {
        Some(after) => after.split_once('/').map_or("", |(_, r)| r),
        None if path.starts_with('/') => return None,
        None => path,
    };
    let mut parts: Vec<&str> = Vec::new();
    let mut climbs = false;
    for seg in rest.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    climbs = true;
                }
            }
            s => parts.push(s),
        }
    }
    climbs.then(|| format!("*/{}", parts.join("/")))
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

/// Shell normalisation: collapse whitespace runs to one space, trim, and delete the
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
