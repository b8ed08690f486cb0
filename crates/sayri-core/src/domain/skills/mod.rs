//! Skills: folders with a `SKILL.md` (YAML frontmatter `name`, `description`, optional metadata,
//! then the instructions) and any other files. Everything here is pure: callers read the files
//! and hand their bytes in.
//!
//! * [`frontmatter`] — reading `SKILL.md`: frontmatter fields and the body.
//! * [`scanner`] — the pre-install audit: every file, whole, prose and code alike → a
//!   [`scanner::Report`] with a score and a verdict (`ALLOW < 40 ≤ WARN < 80 ≤ BLOCK`).
//! * [`install`] — install records, [`install::admit`] (may a report replace the installed
//!   copy) and [`install::state_of`] (may an installed skill be used now).
//! * [`settings`] — settings a skill declares in its frontmatter, and how values are checked.
//! * [`registry`] — a skills registry's index: the package a slug names, search results.
//! * [`hash`] — content hashes: one per file and one for the whole skill. An approval (an
//!   install record) holds for exactly the content it was given for.
//! * [`valid_slug`], [`display_text`] — names and the text shown to the model.

pub mod frontmatter;
pub mod hash;
pub mod install;
pub mod registry;
pub mod scanner;
pub mod settings;

pub use frontmatter::{SkillDoc, parse_skill_md};
pub use hash::{ContentHash, content_hash};
pub use scanner::{Finding, Kind, Report, SCANNER_VERSION, Verdict, scan};

/// The file every skill has at its top level.
pub const SKILL_FILE: &str = "SKILL.md";

/// The file a plugin has at its top level.
pub const PLUGIN_MANIFEST: &str = "manifest.json";

/// One file of a skill or plugin: its path relative to the skill's folder (`/`-separated,
/// no `.`/`..` parts) and its bytes, whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// Relative path, e.g. `scripts/lookup.py`.
    pub path: String,
    /// Whole content.
    pub bytes: Vec<u8>,
}

impl SkillFile {
    /// A file at `path` holding `bytes`.
    pub fn new(path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> SkillFile {
        SkillFile {
            path: path.into(),
            bytes: bytes.into(),
        }
    }
}

/// Whether `slug` can name an installed skill or plugin: 1–64 characters of ASCII letters,
/// digits, `-` and `_`, starting with a letter or digit. Paths, `..`, dots and spaces never are.
///
/// ```
/// use sayri_core::domain::skills::valid_slug;
/// assert!(valid_slug("note-helper"));
/// assert!(!valid_slug("../etc"));
/// assert!(!valid_slug(".hidden"));
/// assert!(!valid_slug("a/b"));
/// ```
pub fn valid_slug(slug: &str) -> bool {
    let mut chars = slug.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && slug.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A slug made from a free-form name: lowercased, runs of other characters turned into one
/// `-`, trimmed, cut to 64. `None` when nothing usable remains.
///
/// ```
/// use sayri_core::domain::skills::slug_from;
/// assert_eq!(slug_from("@openclaw/Weather Brief!").as_deref(), Some("openclaw-weather-brief"));
/// assert_eq!(slug_from("../.."), None);
/// ```
pub fn slug_from(name: &str) -> Option<String> {
    let mut out = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out: String = out.trim_matches(['-', '_']).chars().take(64).collect();
    let out = out.trim_end_matches(['-', '_']).to_string();
    valid_slug(&out).then_some(out)
}

/// Text from a skill as it may be shown to the model or a person on one line: invisible and
/// bidirectional-control characters removed, compatibility forms folded (NFKC), control
/// characters and runs of whitespace turned into one space, cut to `max_chars` (with `…`).
///
/// ```
/// use sayri_core::domain::skills::display_text;
/// assert_eq!(display_text("Dis\u{200b}regard\n all", 80), "Disregard all");
/// assert_eq!(display_text("abcdef", 4), "abc…");
/// ```
pub fn display_text(text: &str, max_chars: usize) -> String {
    let clean = scanner::hidden::normalize(text);
    let one_line = clean
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if one_line.chars().count() <= max_chars {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(max_chars.saturating_sub(1)).collect();
    cut = cut.trim_end().to_string();
    cut.push('…');
    cut
}
