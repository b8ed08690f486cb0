//! Installed skills on disk: `$CONFIG/skills/<slug>/` (the skill's files) and
//! `$CONFIG/skills/.records/<slug>.json` (its install record: content hashes, scanner version,
//! report). One loader for the daemon and the CLI alike.
//!
//! Rules:
//! * Every install, reinstall and update is scanned before anything replaces the installed copy;
//!   `BLOCK` refuses, `WARN` needs `confirm`. The new copy is prepared beside the old one and
//!   swapped in by rename, so a refused or failed update leaves the old version byte-identical.
//! * A skill is offered to the model only while its files hash to its record and the record
//!   comes from this scanner version ([`install::state_of`]); otherwise `read_skill` refuses
//!   and `sayri skills list` shows why.
//! * Uninstall takes a slug (never a path) that has an install record, and deletes exactly that
//!   folder and that record.
//! * Settings a skill declares in its frontmatter are stored beside it ([`settings`]), never
//!   inside its folder, so setting one keeps the scan approval; the model reads their values
//!   after `SKILL.md`, never a secret's.
//! * A slug is installed from the configured registry ([`registry`]): downloaded within one
//!   deadline and a size cap, then installed through [`Skills::install_dir`] like any folder.
//! * Sources are read without following symlinks; special files, symlinks and hard links in a
//!   source folder are refused. Archives go through [`archive::unpack`].

pub mod archive;
pub mod registry;
pub mod settings;

use sayri_core::domain::prompt::SkillSummary;
use sayri_core::domain::skills::install::{self, InstallRecord, SkillState};
use sayri_core::domain::skills::{
    Report, SKILL_FILE, SkillFile, content_hash, parse_skill_md, scan, slug_from, valid_slug,
};
use sayri_core::ports::{SkillLibrary, SkillReadError};
use serde::Serialize;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Most files one skill may have.
pub const MAX_FILES: usize = 2_000;
/// Most bytes one skill may have (all files together).
pub const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Where the record files live, under the skills directory (a slug never starts with `.`).
const RECORDS: &str = ".records";

/// A failed skills operation, with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum SkillsError {
    /// The scan refused the content (`BLOCK`, or `WARN` without confirmation).
    #[error("{message}")]
    Refused {
        /// What the scanner found.
        report: Box<Report>,
        /// The sentence for the person.
        message: String,
    },
    /// Bad input: a path, a slug, an archive, a skill without `SKILL.md`, …
    #[error("{0}")]
    Invalid(String),
    /// A file could not be read or written.
    #[error("{0}")]
    Io(String),
    /// The skills registry could not give the skill.
    #[error(transparent)]
    Registry(#[from] registry::RegistryError),
}

impl SkillsError {
    fn io(what: &str, path: &Path, e: std::io::Error) -> SkillsError {
        SkillsError::Io(format!("cannot {what} {}: {e}", path.display()))
    }
}

/// One installed skill as `skills_list` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct InstalledSkill {
    /// Folder name.
    pub slug: String,
    /// `name` from the frontmatter (the slug when unreadable).
    pub name: String,
    /// `description` from the frontmatter.
    pub description: String,
    /// `ready`, `changed`, `rescan` or `unscanned`.
    pub state: &'static str,
    /// Verdict of the stored report (`ALLOW`/`WARN`), when there is a record.
    pub verdict: Option<String>,
    /// Score of the stored report.
    pub score: Option<u32>,
    /// Where it was installed from.
    pub source: Option<String>,
    /// The folder.
    pub path: PathBuf,
}

/// The result of an install or a rescan that was admitted.
#[derive(Debug, Clone, Serialize)]
pub struct Installed {
    /// Folder name.
    pub slug: String,
    /// Whether an installed copy was replaced.
    pub replaced: bool,
    /// The report the content was admitted with.
    pub report: Report,
}

/// The skills directory.
#[derive(Debug, Clone)]
pub struct Skills {
    dir: PathBuf,
}

impl Skills {
    /// Skills under `dir` (usually `$CONFIG/skills`). Creates nothing.
    pub fn new(dir: PathBuf) -> Skills {
        Skills { dir }
    }

    /// The folder of `slug`.
    pub fn skill_dir(&self, slug: &str) -> PathBuf {
        self.dir.join(slug)
    }

    fn record_path(&self, slug: &str) -> PathBuf {
        self.dir.join(RECORDS).join(format!("{slug}.json"))
    }

    /// The install record of `slug`, if it has a readable one.
    pub fn record(&self, slug: &str) -> Option<InstallRecord> {
        let text = std::fs::read(self.record_path(slug)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Every installed skill with its state, in slug order.
    ///
    /// # Errors
    /// The directory exists but cannot be read.
    pub fn list(&self) -> Result<Vec<InstalledSkill>, SkillsError> {
        let mut out = Vec::new();
        for slug in self.slugs()? {
            let dir = self.skill_dir(&slug);
            let record = self.record(&slug);
            let files = read_tree(&dir).unwrap_or_default();
            let state = install::state_of(record.as_ref(), &content_hash(&files));
            let doc = files
                .iter()
                .find(|f| f.path == SKILL_FILE)
                .and_then(|f| parse_skill_md(&f.bytes).ok());
            out.push(InstalledSkill {
                name: doc
                    .as_ref()
                    .and_then(|d| d.name.clone())
                    .unwrap_or_else(|| slug.clone()),
                description: doc.map(|d| d.description).unwrap_or_default(),
                state: state.name(),
                verdict: record.as_ref().map(|r| r.report.verdict.to_string()),
                score: record.as_ref().map(|r| r.report.score),
                source: record.map(|r| r.source),
                path: dir,
                slug,
            });
        }
        Ok(out)
    }

    fn slugs(&self) -> Result<Vec<String>, SkillsError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(SkillsError::io("read", &self.dir, e)),
        };
        let mut slugs: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|s| valid_slug(s))
            .collect();
        slugs.sort();
        Ok(slugs)
    }

    /// Installs (or replaces) the skill in folder `source`: read, scan, admit, then swap in.
    /// The slug is `slug` if given, else made from the frontmatter `name`, else the folder name.
    ///
    /// # Errors
    /// [`SkillsError::Refused`] with the report for `BLOCK` (or `WARN` without `confirm`); the
    /// installed copy, if any, is untouched. [`SkillsError::Invalid`] for a source that is not a
    /// skill folder (no `SKILL.md`, symlinks, special files, too big).
    pub fn install_dir(
        &self,
        source: &Path,
        slug: Option<&str>,
        origin: &str,
        confirm: bool,
        now: &str,
    ) -> Result<Installed, SkillsError> {
        let files = read_tree(source)?;
        let doc = files
            .iter()
            .find(|f| f.path == SKILL_FILE)
            .ok_or_else(|| {
                SkillsError::Invalid(format!(
                    "{} is not a skill: it has no {SKILL_FILE} at its top level",
                    source.display()
                ))
            })
            .and_then(|f| {
                parse_skill_md(&f.bytes).map_err(|e| {
                    SkillsError::Invalid(format!("{}/{SKILL_FILE}: {e}", source.display()))
                })
            })?;
        let slug = match slug {
            Some(s) if valid_slug(s) => s.to_string(),
            Some(s) => {
                return Err(SkillsError::Invalid(format!(
                    "{s:?} is not a skill name: use letters, digits, - and _"
                )));
            }
            None => doc
                .name
                .as_deref()
                .and_then(slug_from)
                .or_else(|| {
                    source
                        .file_name()
                        .and_then(|n| slug_from(&n.to_string_lossy()))
                })
                .ok_or_else(|| {
                    SkillsError::Invalid("the skill's name gives no usable folder name".into())
                })?,
        };
        let report = scan(&files);
        if let Err(refusal) = install::admit(&report, confirm) {
            return Err(SkillsError::Refused {
                message: format!("{slug}: {}", refusal.message(&report)),
                report: Box::new(report),
            });
        }
        let record = InstallRecord::new(
            &slug,
            doc.name.as_deref().unwrap_or(&slug),
            &doc.description,
            origin,
            content_hash(&files),
            report.clone(),
            now,
        );
        let replaced = self.swap_in(&slug, &files, &record)?;
        Ok(Installed {
            slug,
            replaced,
            report,
        })
    }

    /// Writes `files` into a fresh folder beside the skills, then replaces `slug`'s folder and
    /// record with it. Returns whether an old copy was replaced.
    fn swap_in(
        &self,
        slug: &str,
        files: &[SkillFile],
        record: &InstallRecord,
    ) -> Result<bool, SkillsError> {
        sayri_client::paths::ensure_private_dir(&self.dir.join(RECORDS))
            .map_err(|e| SkillsError::Io(e.to_string()))?;
        let staging = tempfile::Builder::new()
            .prefix(".staging-")
            .tempdir_in(&self.dir)
            .map_err(|e| SkillsError::io("create a folder in", &self.dir, e))?;
        for f in files {
            let to = staging.path().join(&f.path);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| SkillsError::io("create", parent, e))?;
            }
            std::fs::write(&to, &f.bytes).map_err(|e| SkillsError::io("write", &to, e))?;
        }
        let target = self.skill_dir(slug);
        let old = self.dir.join(format!(".old-{slug}"));
        let _ = std::fs::remove_dir_all(&old);
        let replaced = target.exists();
        if replaced {
            std::fs::rename(&target, &old).map_err(|e| SkillsError::io("move", &target, e))?;
        }
        let staged = staging.keep();
        if let Err(e) = std::fs::rename(&staged, &target) {
            if replaced {
                let _ = std::fs::rename(&old, &target);
            }
            let _ = std::fs::remove_dir_all(&staged);
            return Err(SkillsError::io("install into", &target, e));
        }
        let json = serde_json::to_vec_pretty(record).map_err(|e| SkillsError::Io(e.to_string()))?;
        let rec = self.record_path(slug);
        let tmp = rec.with_extension("json.tmp");
        std::fs::write(&tmp, json)
            .and_then(|()| std::fs::rename(&tmp, &rec))
            .map_err(|e| SkillsError::io("write", &rec, e))?;
        let _ = std::fs::remove_dir_all(&old);
        Ok(replaced)
    }

    /// Scans installed skill `slug` as it is now. Admitted content gets a new record (so a
    /// changed or old-scanner skill is offered again); refused content keeps the old record,
    /// so the skill stays disabled.
    ///
    /// # Errors
    /// Not installed; [`SkillsError::Refused`] with the report when refused.
    pub fn rescan(&self, slug: &str, confirm: bool, now: &str) -> Result<Installed, SkillsError> {
        let dir = self.installed_dir(slug)?;
        let files = read_tree(&dir)?;
        let report = scan(&files);
        if let Err(refusal) = install::admit(&report, confirm) {
            return Err(SkillsError::Refused {
                message: format!(
                    "{slug}: {} The skill stays disabled.",
                    refusal.message(&report)
                ),
                report: Box::new(report),
            });
        }
        let doc = files
            .iter()
            .find(|f| f.path == SKILL_FILE)
            .and_then(|f| parse_skill_md(&f.bytes).ok());
        let old = self.record(slug);
        let record = InstallRecord::new(
            slug,
            &doc.as_ref()
                .and_then(|d| d.name.clone())
                .unwrap_or_else(|| slug.into()),
            &doc.map(|d| d.description).unwrap_or_default(),
            &old.map(|r| r.source)
                .unwrap_or_else(|| "found installed".into()),
            content_hash(&files),
            report.clone(),
            now,
        );
        sayri_client::paths::ensure_private_dir(&self.dir.join(RECORDS))
            .map_err(|e| SkillsError::Io(e.to_string()))?;
        let json =
            serde_json::to_vec_pretty(&record).map_err(|e| SkillsError::Io(e.to_string()))?;
        let rec = self.record_path(slug);
        std::fs::write(&rec, json).map_err(|e| SkillsError::io("write", &rec, e))?;
        Ok(Installed {
            slug: slug.into(),
            replaced: false,
            report,
        })
    }

    fn installed_dir(&self, slug: &str) -> Result<PathBuf, SkillsError> {
        if !valid_slug(slug) {
            return Err(SkillsError::Invalid(format!(
                "{slug:?} is not an installed skill's name (names are letters, digits, - and _; paths are not accepted); see `sayri skills list`"
            )));
        }
        let dir = self.skill_dir(slug);
        let meta = std::fs::symlink_metadata(&dir);
        if !meta.is_ok_and(|m| m.is_dir()) {
            return Err(SkillsError::Invalid(format!(
                "no skill {slug} is installed; see `sayri skills list`"
            )));
        }
        Ok(dir)
    }

    /// Removes installed skill `slug`: its folder and its record, nothing else. Only a skill
    /// Sayri installed (one with a record) can be removed this way.
    ///
    /// # Errors
    /// Not a slug, not installed, no record, or the files cannot be removed.
    pub fn uninstall(&self, slug: &str) -> Result<(), SkillsError> {
        let dir = self.installed_dir(slug)?;
        if !self.record_path(slug).exists() {
            return Err(SkillsError::Invalid(format!(
                "{} was not installed by Sayri (it has no install record); remove it yourself if you mean to",
                dir.display()
            )));
        }
        std::fs::remove_dir_all(&dir).map_err(|e| SkillsError::io("remove", &dir, e))?;
        self.forget_settings(slug);
        let rec = self.record_path(slug);
        std::fs::remove_file(&rec).map_err(|e| SkillsError::io("remove", &rec, e))
    }

    /// The `SKILL.md` of `slug`, only while the skill is `ready`.
    ///
    /// # Errors
    /// Not installed, or changed / scanned by another version / never scanned.
    pub fn read_ready(&self, slug: &str) -> Result<String, SkillsError> {
        let dir = self.installed_dir(slug)?;
        let files = read_tree(&dir)?;
        let state = install::state_of(self.record(slug).as_ref(), &content_hash(&files));
        if let Some(why) = state.refusal(slug) {
            return Err(SkillsError::Invalid(why));
        }
        files
            .into_iter()
            .find(|f| f.path == SKILL_FILE)
            .map(|f| String::from_utf8_lossy(&f.bytes).into_owned())
            .ok_or_else(|| SkillsError::Invalid(format!("skill {slug} has no {SKILL_FILE}")))
    }
}

/// The core's port: both calls read the skills' files, so they run off the async worker
/// threads ([`crate::offload::blocking`]).
impl SkillLibrary for Skills {
    fn offered(&self) -> Vec<SkillSummary> {
        crate::offload::blocking(|| self.list())
            .unwrap_or_default()
            .into_iter()
            .filter(|s| s.state == SkillState::Ready.name())
            .map(|s| SkillSummary {
                id: s.slug,
                name: s.name,
                description: s.description,
            })
            .collect()
    }

    fn read(&self, id: &str) -> Result<String, SkillReadError> {
        crate::offload::blocking(|| {
            let text = self.read_ready(id).map_err(|e| match e {
                SkillsError::Io(message) => SkillReadError::Unreadable(message),
                refused => SkillReadError::Refused(refused.to_string()),
            })?;
            Ok(text + &self.settings_for_model(id))
        })
    }
}

/// Every regular file under `root` as [`SkillFile`]s (sorted by path). Refuses symlinks,
/// special files, files with more than one link (hard links), more than [`MAX_FILES`] files
/// or [`MAX_BYTES`] bytes.
///
/// # Errors
/// [`SkillsError::Invalid`] naming the entry; [`SkillsError::Io`] when unreadable.
pub fn read_tree(root: &Path) -> Result<Vec<SkillFile>, SkillsError> {
    let meta = std::fs::symlink_metadata(root).map_err(|e| SkillsError::io("read", root, e))?;
    if !meta.is_dir() {
        return Err(SkillsError::Invalid(format!(
            "{} is not a folder",
            root.display()
        )));
    }
    let mut out = Vec::new();
    let mut total = 0u64;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| SkillsError::io("read", &dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| SkillsError::io("read", &dir, e))?;
            let path = entry.path();
            let m =
                std::fs::symlink_metadata(&path).map_err(|e| SkillsError::io("read", &path, e))?;
            let rel = path
                .strip_prefix(root)
                .map_err(|_| SkillsError::Invalid(format!("{} escapes the skill", path.display())))?
                .to_str()
                .ok_or_else(|| {
                    SkillsError::Invalid(format!("{}: file names must be UTF-8", path.display()))
                })?
                .to_string();
            if m.is_dir() {
                stack.push(path);
                continue;
            }
            if !m.is_file() {
                return Err(SkillsError::Invalid(format!(
                    "{rel}: symlinks and special files are not accepted in a skill"
                )));
            }
            if m.nlink() > 1 {
                return Err(SkillsError::Invalid(format!(
                    "{rel}: hard-linked files are not accepted in a skill"
                )));
            }
            total += m.len();
            if out.len() >= MAX_FILES || total > MAX_BYTES {
                return Err(SkillsError::Invalid(format!(
                    "the skill is too big (more than {MAX_FILES} files or {} MiB)",
                    MAX_BYTES >> 20
                )));
            }
            let bytes = std::fs::read(&path).map_err(|e| SkillsError::io("read", &path, e))?;
            out.push(SkillFile::new(rel, bytes));
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Now, as stored in install records: seconds since the Unix epoch.
pub fn now() -> String {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs().to_string())
        .unwrap_or_default()
}

/// Installs from `path`: a skill folder, or an archive unpacked first with [`archive::unpack`].
///
/// # Errors
/// As [`Skills::install_dir`] and [`archive::unpack`].
pub fn install_path(
    skills: &Skills,
    path: &Path,
    slug: Option<&str>,
    confirm: bool,
) -> Result<Installed, SkillsError> {
    let origin = path.display().to_string();
    if archive::Kind::of(path).is_some() && path.is_file() {
        let (_tmp, root) = archive::unpack(path)?;
        skills.install_dir(&root, slug, &origin, confirm, &now())
    } else {
        skills.install_dir(path, slug, &origin, confirm, &now())
    }
}

/// Scans a folder or archive at `path` without installing it.
///
/// # Errors
/// As [`read_tree`] and [`archive::unpack`].
pub fn scan_path(path: &Path) -> Result<Report, SkillsError> {
    if archive::Kind::of(path).is_some() && path.is_file() {
        let (_tmp, root) = archive::unpack(path)?;
        Ok(scan(&read_tree(&root)?))
    } else {
        Ok(scan(&read_tree(path)?))
    }
}
