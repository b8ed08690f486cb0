//! Skill fixtures: the case folders and the scanner corpus under `fixtures/skills/`
//! (`cases/`, `benign/`, `malicious/`), and a reader that turns a folder into the
//! [`SkillFile`]s the scanner takes.

use sayri_core::domain::skills::SkillFile;
use std::path::{Path, PathBuf};

/// `fixtures/skills` of this crate.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/skills")
}

/// `fixtures/skills/<rel>`, e.g. `fixture("cases/16-skill")`.
pub fn fixture(rel: &str) -> PathBuf {
    fixtures().join(rel)
}

/// Every file under `dir` (recursively, sorted, symlinks not followed) as a [`SkillFile`]
/// with its `/`-separated relative path.
///
/// # Panics
/// When the folder cannot be read (a broken fixture is a broken test).
pub fn read_dir(dir: &Path) -> Vec<SkillFile> {
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<SkillFile>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        let meta = std::fs::symlink_metadata(&p).expect("metadata");
        if meta.is_dir() {
            walk(root, &p, out);
        } else if meta.is_file() {
            let rel = p
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .replace('\\', "/");
            out.push(SkillFile::new(
                rel,
                std::fs::read(&p).expect("read fixture"),
            ));
        }
    }
}

/// The sub-folders of `fixtures/skills/<set>` (one skill each), sorted.
pub fn corpus(set: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixture(set))
        .unwrap_or_else(|e| panic!("{set}: {e}"))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}
