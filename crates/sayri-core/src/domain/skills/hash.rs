//! Content hashes. Each file is hashed with SHA-256; the skill's hash is SHA-256 over the
//! sorted lines `<path>\0<file hash>\n`, so a renamed, added, removed or edited file changes it.

use super::SkillFile;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The hashes of one skill's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentHash {
    /// `sha256:<hex>` over every file (see the module docs).
    pub total: String,
    /// Per file: relative path → `sha256:<hex>`.
    pub files: BTreeMap<String, String>,
}

/// SHA-256 of `bytes` as `sha256:<hex>`.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The hashes of `files` (order does not matter).
///
/// ```
/// use sayri_core::domain::skills::{SkillFile, content_hash};
/// let a = content_hash(&[SkillFile::new("a", "1"), SkillFile::new("b", "2")]);
/// let b = content_hash(&[SkillFile::new("b", "2"), SkillFile::new("a", "1")]);
/// assert_eq!(a, b);
/// assert_ne!(a.total, content_hash(&[SkillFile::new("a", "1")]).total);
/// ```
pub fn content_hash(files: &[SkillFile]) -> ContentHash {
    let per_file: BTreeMap<String, String> = files
        .iter()
        .map(|f| (f.path.clone(), sha256(&f.bytes)))
        .collect();
    let mut all = Sha256::new();
    for (path, h) in &per_file {
        all.update(path.as_bytes());
        all.update([0]);
        all.update(h.as_bytes());
        all.update(b"\n");
    }
    ContentHash {
        total: format!("sha256:{}", hex::encode(all.finalize())),
        files: per_file,
    }
}
