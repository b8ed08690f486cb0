//! Unpacking a skill archive (`.zip`, `.tar.gz`/`.tgz`) into a fresh temporary folder.
//!
//! Every entry's name is checked by its path components before anything is written: no root,
//! no `..`, no `.` tricks, no empty or non-UTF-8 names. Only regular files and folders are
//! accepted: symlinks, hard links and device files refuse the whole archive. Limits: at most
//! [`super::MAX_FILES`] entries and [`super::MAX_BYTES`] bytes unpacked, counted from the bytes
//! actually written (a declared size is never trusted). Files are created with `create_new`
//! under folders this code made, so nothing can be written outside the temporary folder.
//! A refused archive leaves nothing behind.

use super::{MAX_BYTES, MAX_FILES, SkillsError};
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

/// The archive kinds accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `.zip`.
    Zip,
    /// `.tar.gz` / `.tgz`.
    TarGz,
}

impl Kind {
    /// The kind for a file name, or `None` when it is not an accepted archive.
    pub fn of(path: &Path) -> Option<Kind> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        if name.ends_with(".zip") {
            Some(Kind::Zip)
        } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
            Some(Kind::TarGz)
        } else {
            None
        }
    }
}

impl Kind {
    /// The kind of an archive from its first bytes (`PK\x03\x04` for a zip, the gzip magic
    /// for a `.tar.gz`), or `None`.
    ///
    /// ```
    /// use sayri_daemon::skills::archive::Kind;
    /// assert_eq!(Kind::sniff(b"PK\x03\x04rest"), Some(Kind::Zip));
    /// assert_eq!(Kind::sniff(b"\x1f\x8b\x08"), Some(Kind::TarGz));
    /// assert_eq!(Kind::sniff(b"---\nname: x"), None);
    /// ```
    pub fn sniff(head: &[u8]) -> Option<Kind> {
        if head.starts_with(b"PK\x03\x04") {
            Some(Kind::Zip)
        } else if head.starts_with(&[0x1f, 0x8b]) {
            Some(Kind::TarGz)
        } else {
            None
        }
    }
}

/// The safe relative path for an entry named `name`.
///
/// # Errors
/// A name with a root, a drive, `..`, or no normal component.
///
/// ```
/// use sayri_daemon::skills::archive::entry_path;
/// assert!(entry_path("a/b.txt").is_ok());
/// assert!(entry_path("../evil").is_err());
/// assert!(entry_path("a/../../evil").is_err());
/// assert!(entry_path("/etc/passwd").is_err());
/// ```
pub fn entry_path(name: &str) -> Result<PathBuf, SkillsError> {
    let mut out = PathBuf::new();
    for c in Path::new(name).components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(SkillsError::Invalid(format!(
                    "archive entry {name:?} points outside the skill (absolute path or ..); refused"
                )));
            }
        }
    }
    if out.as_os_str().is_empty() {
        return Err(SkillsError::Invalid(format!(
            "archive entry {name:?} has no usable name; refused"
        )));
    }
    Ok(out)
}

/// Counts entries and bytes against the limits.
struct Budget {
    files: usize,
    bytes: u64,
}

impl Budget {
    fn entry(&mut self) -> Result<(), SkillsError> {
        self.files += 1;
        if self.files > MAX_FILES {
            return Err(SkillsError::Invalid(format!(
                "the archive has more than {MAX_FILES} entries; refused"
            )));
        }
        Ok(())
    }
}

/// Writes one regular file from `reader` to `root/rel`, counting its real bytes.
fn write_file(
    root: &Path,
    rel: &Path,
    reader: &mut dyn Read,
    budget: &mut Budget,
) -> Result<(), SkillsError> {
    let to = root.join(rel);
    if let Some(parent) = to.parent() {
        make_dirs(root, parent)?;
    }
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&to)
        .map_err(|e| SkillsError::Invalid(format!("archive entry {}: {e}", rel.display())))?;
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| SkillsError::Invalid(format!("archive entry {}: {e}", rel.display())))?;
        if n == 0 {
            return Ok(());
        }
        budget.bytes += n as u64;
        if budget.bytes > MAX_BYTES {
            return Err(SkillsError::Invalid(format!(
                "the archive unpacks to more than {} MiB; refused",
                MAX_BYTES >> 20
            )));
        }
        out.write_all(&buf[..n])
            .map_err(|e| SkillsError::io("write", &to, e))?;
    }
}

/// Creates `dir` (under `root`) refusing any existing component that is not a real folder.
fn make_dirs(root: &Path, dir: &Path) -> Result<(), SkillsError> {
    let rel = dir.strip_prefix(root).unwrap_or(Path::new(""));
    let mut at = root.to_path_buf();
    for c in rel.components() {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(SkillsError::Invalid(format!(
                    "archive entry {} is both a file and a folder; refused",
                    rel.display()
                )));
            }
            Err(_) => std::fs::create_dir(&at).map_err(|e| SkillsError::io("create", &at, e))?,
        }
    }
    Ok(())
}

/// Unpacks `archive` into a new temporary folder and returns it (deleted when dropped). When
/// the archive has one top-level folder and nothing else, the skill is that folder (returned
/// as the second value).
///
/// # Errors
/// [`SkillsError::Invalid`] naming the first bad entry; nothing is left behind.
pub fn unpack(archive: &Path) -> Result<(tempfile::TempDir, PathBuf), SkillsError> {
    let kind = Kind::of(archive).ok_or_else(|| {
        SkillsError::Invalid(format!(
            "{} is not a .zip, .tar.gz or .tgz archive",
            archive.display()
        ))
    })?;
    unpack_as(archive, kind)
}

/// As [`unpack`], for an archive of `kind` whatever its file name (a download).
///
/// # Errors
/// As [`unpack`].
pub fn unpack_as(archive: &Path, kind: Kind) -> Result<(tempfile::TempDir, PathBuf), SkillsError> {
    let tmp = tempfile::Builder::new()
        .prefix("sayri-skill-")
        .tempdir()
        .map_err(|e| SkillsError::Io(format!("cannot create a temporary folder: {e}")))?;
    let file = std::fs::File::open(archive).map_err(|e| SkillsError::io("open", archive, e))?;
    let mut budget = Budget { files: 0, bytes: 0 };
    match kind {
        Kind::Zip => unpack_zip(file, tmp.path(), &mut budget)?,
        Kind::TarGz => unpack_tar_gz(file, tmp.path(), &mut budget)?,
    }
    let root = single_top_folder(tmp.path()).unwrap_or_else(|| tmp.path().to_path_buf());
    Ok((tmp, root))
}

fn single_top_folder(dir: &Path) -> Option<PathBuf> {
    let entries: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .collect();
    match entries.as_slice() {
        [one] if one.file_type().is_ok_and(|t| t.is_dir()) && !dir.join("SKILL.md").exists() => {
            Some(one.path())
        }
        _ => None,
    }
}

fn unpack_zip(file: std::fs::File, root: &Path, budget: &mut Budget) -> Result<(), SkillsError> {
    let mut zip = zip::ZipArchive::new(file)
        .map_err(|e| SkillsError::Invalid(format!("not a readable zip archive: {e}")))?;
    if zip.len() > MAX_FILES {
        return Err(SkillsError::Invalid(format!(
            "the archive has more than {MAX_FILES} entries; refused"
        )));
    }
    for i in 0..zip.len() {
        budget.entry()?;
        let mut entry = zip
            .by_index(i)
            .map_err(|e| SkillsError::Invalid(format!("zip entry {i}: {e}")))?;
        let name = entry
            .name()
            .map_err(|e| SkillsError::Invalid(format!("zip entry {i}: {e}")))?
            .into_owned();
        let rel = entry_path(&name)?;
        if entry.is_symlink() {
            return Err(SkillsError::Invalid(format!(
                "archive entry {name:?} is a symlink; refused"
            )));
        }
        if entry.is_dir() {
            make_dirs(root, &root.join(&rel))?;
        } else if entry.is_file() {
            write_file(root, &rel, &mut entry, budget)?;
        } else {
            return Err(SkillsError::Invalid(format!(
                "archive entry {name:?} is not a file or folder; refused"
            )));
        }
    }
    Ok(())
}

fn unpack_tar_gz(file: std::fs::File, root: &Path, budget: &mut Budget) -> Result<(), SkillsError> {
    let mut tar = tar::Archive::new(flate2::read::MultiGzDecoder::new(file));
    let entries = tar
        .entries()
        .map_err(|e| SkillsError::Invalid(format!("not a readable .tar.gz archive: {e}")))?;
    for entry in entries {
        budget.entry()?;
        let mut entry =
            entry.map_err(|e| SkillsError::Invalid(format!("unreadable archive entry: {e}")))?;
        let name = entry
            .path()
            .map_err(|e| SkillsError::Invalid(format!("archive entry name: {e}")))?
            .to_str()
            .ok_or_else(|| SkillsError::Invalid("archive entry names must be UTF-8".into()))?
            .to_string();
        let rel = entry_path(&name)?;
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            make_dirs(root, &root.join(&rel))?;
        } else if kind.is_file() {
            write_file(root, &rel, &mut entry, budget)?;
        } else if kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        } else {
            let what = if kind.is_symlink() {
                "a symlink"
            } else if kind.is_hard_link() {
                "a hard link"
            } else {
                "a device, fifo or other special file"
            };
            return Err(SkillsError::Invalid(format!(
                "archive entry {name:?} is {what}; refused"
            )));
        }
    }
    Ok(())
}
