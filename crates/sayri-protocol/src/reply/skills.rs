//! Replies of the skill commands: `skills_list`, `skills_install`, `skills_uninstall`,
//! `skills_scan`, `skills_search`.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `skills_list` → every installed skill with its state.
pub type SkillsListReply = Vec<InstalledSkill>;

/// An installed skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledSkill {
    /// Its folder name.
    pub slug: String,
    /// `name` from its frontmatter (the slug when unreadable).
    pub name: String,
    /// `description` from its frontmatter.
    pub description: String,
    /// `ready` (offered to the model), `changed`, `rescan` or `unscanned`.
    pub state: String,
    /// The verdict it was admitted with (`ALLOW`, `WARN`), when it has an install record.
    pub verdict: Option<String>,
    /// The score it was admitted with.
    pub score: Option<u32>,
    /// Where it was installed from.
    pub source: Option<String>,
    /// Its folder.
    pub path: PathBuf,
}

/// What the scanner found in a skill (part of `skills_install` and `skills_scan`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanReport {
    /// `ALLOW`, `WARN` or `BLOCK`.
    pub verdict: String,
    /// 0–100.
    pub score: u32,
    /// One paragraph: the band and the heaviest reasons.
    pub explanation: String,
    /// Every finding, heaviest first.
    pub findings: Vec<Finding>,
    /// Files read.
    pub files_scanned: u64,
    /// Bytes read.
    pub bytes_scanned: u64,
    /// The version of the scanner.
    pub scanner_version: u32,
}

/// One finding of the scanner, with its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// What it is (`exfil_endpoint`, `hidden_text`, …).
    pub kind: String,
    /// The kind's weight.
    pub weight: u32,
    /// The file, relative to the skill.
    pub file: String,
    /// 1-based line.
    pub line: u64,
    /// The line (or its relevant part), hidden characters shown as `<U+XXXX>`.
    pub excerpt: String,
    /// Why, in a sentence.
    pub detail: String,
}

/// `skills_install` → the outcome with its report; a refused install is a result
/// (`installed: false`), not an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillsInstallReply {
    /// The slug installed as (as asked, when refused: possibly `null`).
    pub slug: Option<String>,
    /// It was installed.
    pub installed: bool,
    /// An installed copy was replaced.
    pub replaced: bool,
    /// What happened, in a sentence.
    pub message: String,
    /// For an install by slug: the SHA-256 (lowercase hex) of what was downloaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// For an install by slug: where it was downloaded from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download_url: Option<String>,
    /// The scan.
    #[serde(flatten)]
    pub report: ScanReport,
}

/// `skills_uninstall` → `{slug, removed}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillsUninstallReply {
    /// The skill.
    pub slug: String,
    /// Always true.
    pub removed: bool,
}

/// `skills_scan` → the report and whether it was admitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillsScanReply {
    /// For an installed skill: its current content is recorded as admitted.
    pub admitted: bool,
    /// Why it was not admitted (for a refused installed skill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The scan.
    #[serde(flatten)]
    pub report: ScanReport,
}

/// `skills_search` → the matching skills: the bare list, or with `detailed` the list and the
/// warnings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SkillsSearchReply {
    /// The results (the original's shape).
    List(Vec<FoundSkill>),
    /// `{results, warnings}`.
    Detailed(SkillsSearchDetail),
}

/// `skills_search {detailed: true}` → the results and why part of the search could not be made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillsSearchDetail {
    /// The results, installed skills first.
    pub results: Vec<FoundSkill>,
    /// Why the registry was not searched (unreachable, too slow, not an index), each a
    /// sentence; empty when everything was searched.
    pub warnings: Vec<String>,
}

/// One result of `skills_search`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoundSkill {
    /// Its folder name (for a registry skill: the slug to install it by).
    pub slug: String,
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its state (as in `skills_list`), or `available` for a registry skill not installed.
    pub state: String,
    /// Whether a skill of this slug is installed.
    pub installed: bool,
    /// `installed` (found among the installed skills) or `registry` (found in the registry).
    pub source: String,
    /// A registry skill's author.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// A registry skill's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}
