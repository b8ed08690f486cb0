//! Keeping a plugin inside its folder: every file the loader reads or runs for a plugin is
//! named relative to the plugin's folder, resolved with every symbolic link followed, and
//! must still be inside that folder — and be written only by its owner.
//!
//! * A name is refused before touching the disk when it is empty, absolute, holds a NUL or a
//!   `..` component.
//! * The resolved file must be a regular file strictly inside the folder's resolved path (a
//!   link pointing out of it is refused even when its target exists).
//! * The folder and the file must belong to the user running Sayri or to root, and be
//!   writable by their owner only: a plugin someone else can change is not run.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// How a resolved program is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// A `.py` file: `python3 -u <file> <args…>`.
    Python,
    /// An executable file, run directly.
    Direct,
}

/// A file of a plugin that can be run: where it is (resolved, inside the plugin's folder) and
/// how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The resolved path.
    pub path: PathBuf,
    /// How it is run.
    pub runner: Runner,
}

/// Who may have written `meta`: its owner is us or root, and neither group nor others may
/// write it.
pub(crate) fn owner_only(path: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    let me = sayri_client::paths::euid();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(format!(
            "{} belongs to uid {}, not to you (uid {me}) nor root; a plugin someone else owns is not run",
            path.display(),
            meta.uid()
        ));
    }
    if meta.permissions().mode() & 0o022 != 0 {
        return Err(format!(
            "{} can be changed by other users (mode {:o}); make it writable by its owner only (chmod go-w)",
            path.display(),
            meta.permissions().mode() & 0o7777
        ));
    }
    Ok(())
}

/// The regular file `rel` names inside `dir` (already resolved), checked as the module says.
///
/// # Errors
/// A sentence naming the field (`what`), the name and why it is refused.
pub(crate) fn file_in(dir: &Path, rel: &str, what: &str) -> Result<PathBuf, String> {
    let shown: String = rel.chars().take(80).collect();
    let bad = rel.is_empty()
        || rel.contains('\0')
        || Path::new(rel)
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
    if bad {
        return Err(format!(
            "{what} {shown:?} is not a path inside the plugin's folder (no absolute path, no `..`)"
        ));
    }
    let joined = dir.join(rel);
    let resolved = joined
        .canonicalize()
        .map_err(|e| format!("{what} {shown:?} cannot be found in {}: {e}", dir.display()))?;
    if !resolved.starts_with(dir) || resolved == dir {
        return Err(format!(
            "{what} {shown:?} leads out of the plugin's folder (to {}); a plugin may only use files inside its folder",
            resolved.display()
        ));
    }
    let meta = std::fs::metadata(&resolved).map_err(|e| format!("{what} {shown:?}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{what} {shown:?} is not a regular file"));
    }
    owner_only(&resolved, &meta)?;
    Ok(resolved)
}

/// The program `rel` names inside `dir`: a `.py` file run with Python, else an executable file.
///
/// # Errors
/// As [`file_in`], or the file is neither a `.py` file nor executable.
pub(crate) fn program_in(dir: &Path, rel: &str, what: &str) -> Result<Program, String> {
    let path = file_in(dir, rel, what)?;
    let runner = if path.extension().is_some_and(|e| e == "py") {
        Runner::Python
    } else {
        let mode = std::fs::metadata(&path)
            .map(|m| m.permissions().mode())
            .unwrap_or(0);
        if mode & 0o100 == 0 {
            return Err(format!(
                "{what} {:?} is neither a .py script nor executable (chmod u+x it)",
                rel.chars().take(80).collect::<String>()
            ));
        }
        Runner::Direct
    };
    Ok(Program { path, runner })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn dir() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("plugin");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        let d = d.canonicalize().unwrap();
        (t, d)
    }

    fn write(path: &Path, mode: u32) {
        std::fs::write(path, "print(1)\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn names_that_leave_the_folder_are_refused_before_and_after_resolving() {
        let (t, d) = dir();
        write(&t.path().join("outside.py"), 0o644);
        write(&d.join("inside.py"), 0o644);
        symlink(t.path().join("outside.py"), d.join("link.py")).unwrap();
        symlink(&d, d.join("self")).unwrap();
        for rel in [
            "../outside.py",
            "/etc/passwd",
            "a/../../outside.py",
            "",
            "x\0y",
        ] {
            let e = file_in(&d, rel, "entrypoint").unwrap_err();
            assert!(e.contains("not a path inside"), "{rel}: {e}");
        }
        let e = file_in(&d, "link.py", "entrypoint").unwrap_err();
        assert!(e.contains("leads out of"), "{e}");
        let e = file_in(&d, "self", "entrypoint").unwrap_err();
        assert!(
            e.contains("leads out of") || e.contains("not a regular file"),
            "{e}"
        );
        assert_eq!(
            file_in(&d, "./inside.py", "entrypoint"),
            Ok(d.join("inside.py"))
        );
        let e = file_in(&d, "missing.py", "entrypoint").unwrap_err();
        assert!(e.contains("cannot be found"), "{e}");
    }

    #[test]
    fn a_file_others_can_write_is_not_run() {
        let (_t, d) = dir();
        write(&d.join("open.py"), 0o666);
        let e = file_in(&d, "open.py", "entrypoint").unwrap_err();
        assert!(e.contains("chmod go-w"), "{e}");
    }

    #[test]
    fn a_program_is_a_python_script_or_an_executable() {
        let (_t, d) = dir();
        write(&d.join("g.py"), 0o644);
        write(&d.join("run"), 0o755);
        write(&d.join("data.txt"), 0o644);
        assert_eq!(program_in(&d, "g.py", "e").unwrap().runner, Runner::Python);
        assert_eq!(program_in(&d, "run", "e").unwrap().runner, Runner::Direct);
        let e = program_in(&d, "data.txt", "e").unwrap_err();
        assert!(e.contains("neither a .py script nor executable"), "{e}");
    }
}
