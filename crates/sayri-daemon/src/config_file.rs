//! Reading and changing `sayri.toml` (the typed model and every key's check live in
//! `sayri_core::domain::config`).
//!
//! * A missing file means "all defaults". An invalid file is an error with `file:line`; it is
//!   never overwritten, reset or "repaired".
//! * A change edits the user's file in place: the values that changed are replaced where they
//!   stand (a new key goes at the end of its table, a new table at the end of the file), and
//!   every comment, blank line, key order and unrelated key survives. A file that does not exist
//!   yet is created with a short header comment.
//! * Every writer — the daemon and `sayri config set` without a daemon — holds an exclusive
//!   advisory lock on [`lock_path`] (`.sayri.toml.lock` next to the file) from reading the file
//!   to replacing it, and edits the text that is on disk at that moment: two writers never lose
//!   each other's change, and a hand edit made while the daemon runs survives its next change.
//! * The file is replaced atomically (`sayri_vault::atomic_write`): a temp file
//!   `.sayri.toml.tmp` created 0600 in the same directory → write → fsync → rename over the file
//!   → fsync of the directory. A crash leaves the old file or the new one, never a mix; a
//!   leftover temp file is harmless and the next save replaces it. The new file keeps the old
//!   one's permission bits (a new file is 0600), and a symlinked `sayri.toml` stays a symlink:
//!   its target is replaced.

use sayri_core::domain::config::{Config, ConfigError, ConfigValue};
use sayri_vault::atomic_write::{AtomicWriteError, write_atomic_with_mode};
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use toml_edit::{DocumentMut, Item, Table, Value};

/// How long a writer waits for another one to finish before giving up.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Most symbolic links followed from `sayri.toml` to the file that is replaced (as the kernel's
/// `ELOOP` limit).
const MAX_LINKS: usize = 40;

/// Errors reading or writing the config file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// OS error.
        source: io::Error,
    },
    /// The file could not be written.
    #[error("cannot write config file: {0}; check the directory's permissions")]
    Write(#[from] AtomicWriteError),
    /// The content is invalid, or a requested change is.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The value passes its own check but cannot work here (a policy file that does not load,
    /// an agent that does not exist); nothing was written.
    #[error("invalid value for {key}: {message}; nothing was changed")]
    Unusable {
        /// `group.key`.
        key: String,
        /// What stands in the way and what to do.
        message: String,
    },
    /// The file is valid but could not be edited in place; nothing was written.
    #[error("cannot edit config file {path} in place: {message}; nothing was changed")]
    Edit {
        /// The file.
        path: PathBuf,
        /// What stood in the way.
        message: String,
    },
    /// The writers' lock could not be taken.
    #[error("cannot lock {path}: {message}")]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// What went wrong and what to do.
        message: String,
    },
}

/// Written at the top of a `sayri.toml` that `sayri config set` creates.
const HEADER: &str = "# Sayri configuration. `sayri config set` changes values in place and keeps your comments.\n# Every setting and its default: `sayri config list`.\n";

/// The lock file every writer of `path` holds: `.<name>.lock` in the same directory.
pub fn lock_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.lock"))
}

/// Held from reading the file to replacing it; released on drop (close).
struct WriteLock {
    _file: File,
}

/// Takes the writers' lock of `path`, waiting up to [`LOCK_WAIT`] for another writer.
fn lock(path: &Path) -> Result<WriteLock, ConfigFileError> {
    let lock = lock_path(path);
    let err = |message: String| ConfigFileError::Lock {
        path: lock.clone(),
        message,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&lock)
        .map_err(|e| err(format!("{e}; check the config directory's permissions")))?;
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(WriteLock { _file: file }),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(err(format!(
                    "another sayri process has been changing the settings for {} s; try again, or stop the process that holds the lock (`fuser {}`)",
                    LOCK_WAIT.as_secs(),
                    lock.display()
                )));
            }
            Err(TryLockError::Error(e)) => return Err(err(e.to_string())),
        }
    }
}

/// The file's text, `None` when it does not exist.
fn read_text(path: &Path) -> Result<Option<String>, ConfigFileError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigFileError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn parse(text: Option<&str>, path: &Path) -> Result<Config, ConfigFileError> {
    let defaults = user_defaults();
    Ok(match text {
        Some(t) => Config::from_toml_str_over(t, &path.display().to_string(), defaults)?,
        None => defaults,
    })
}

/// The defaults for this user: the key table's, with the speech languages of their locale
/// (`LC_ALL`, `LC_MESSAGES`, `LANG`; English when unset or unknown).
pub fn user_defaults() -> Config {
    let var = |k: &str| std::env::var(k).ok();
    let (all, messages, lang) = (var("LC_ALL"), var("LC_MESSAGES"), var("LANG"));
    Config::defaults_for_locale(sayri_core::domain::config::locale::effective_locale(
        all.as_deref(),
        messages.as_deref(),
        lang.as_deref(),
    ))
}

/// Loads `path` over the defaults. Returns the config and whether the file existed.
///
/// # Errors
/// The file is unreadable, or invalid (with `file:line`).
pub fn load(path: &Path) -> Result<(Config, bool), ConfigFileError> {
    let text = read_text(path)?;
    Ok((parse(text.as_deref(), path)?, text.is_some()))
}

/// The file that replacing `path` must replace: `path` itself, or the file its chain of
/// symbolic links ends at (which may not exist yet).
fn link_target(path: &Path) -> Result<PathBuf, ConfigFileError> {
    let read_err = |source: io::Error| ConfigFileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&current).map_err(read_err)?;
                current = match current.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(read_err(e)),
        }
    }
    Err(read_err(io::Error::other(
        "too many levels of symbolic links",
    )))
}

/// Re-reads `path` under the writers' lock, applies `change`, writes the settings that changed
/// into the file in place, and returns the new config with `change`'s output. Nothing is
/// written if locking, reading, parsing or `change` fails, or if nothing changed.
///
/// # Errors
/// As [`load`]; `change`'s error; the lock cannot be taken; the file cannot be written.
pub fn update<T>(
    path: &Path,
    change: impl FnOnce(&mut Config) -> Result<T, ConfigFileError>,
) -> Result<(Config, T), ConfigFileError> {
    let _lock = lock(path)?;
    let text = read_text(path)?;
    let before = parse(text.as_deref(), path)?;
    let mut after = before.clone();
    let out = change(&mut after)?;
    let changed: Vec<_> = after
        .entries()
        .into_iter()
        .filter(|(spec, value)| before.get(&spec.full_name()).ok().as_ref() != Some(value))
        .collect();
    if changed.is_empty() {
        return Ok((after, out));
    }
    let edit_err = |message: String| ConfigFileError::Edit {
        path: path.to_path_buf(),
        message,
    };
    let mut doc = match &text {
        Some(t) => t
            .parse::<DocumentMut>()
            .map_err(|e| edit_err(e.to_string()))?,
        None => DocumentMut::new(),
    };
    for (spec, value) in &changed {
        set_in_place(&mut doc, spec.group, spec.key, value).map_err(edit_err)?;
    }
    let body = match text {
        Some(_) => doc.to_string(),
        None => format!("{HEADER}\n{doc}"),
    };
    let target = link_target(path)?;
    let mode = std::fs::metadata(&target)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0o600);
    write_atomic_with_mode(&target, body.as_bytes(), mode)?;
    Ok((after, out))
}

/// Sets `group.key` in `doc`: an existing value is replaced where it stands, keeping the
/// comments around it; a new key goes at the end of its table; a new table at the end of the
/// file, after a blank line.
fn set_in_place(
    doc: &mut DocumentMut,
    group: &str,
    key: &str,
    value: &ConfigValue,
) -> Result<(), String> {
    if !doc.contains_key(group) {
        // A file of comments only keeps them above the first table.
        let comments = doc.trailing().as_str().unwrap_or_default().to_string();
        let mut table = Table::new();
        if !doc.as_table().is_empty() {
            table.decor_mut().set_prefix("\n");
        } else if !comments.trim().is_empty() {
            table
                .decor_mut()
                .set_prefix(format!("{}\n", comments.trim_end()));
            doc.set_trailing("");
        }
        doc.insert(group, Item::Table(table));
    }
    let root = doc.as_table_mut();
    let table = root
        .get_mut(group)
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| format!("[{group}] is not a table"))?;
    let mut new = toml_value(value);
    match table.get_mut(key) {
        Some(Item::Value(old)) => {
            *new.decor_mut() = old.decor().clone();
            *old = new;
        }
        _ => {
            table.insert(key, Item::Value(new));
        }
    }
    Ok(())
}

fn toml_value(value: &ConfigValue) -> Value {
    match value {
        ConfigValue::Bool(b) => Value::from(*b),
        ConfigValue::Int(i) => Value::from(*i),
        ConfigValue::Float(f) => Value::from(*f),
        ConfigValue::Str(s) => Value::from(s.as_str()),
        ConfigValue::StrList(l) => Value::Array(l.iter().map(String::as_str).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMENTED: &str = "\
# My Sayri settings.

[ui]
# Keep the orb small.
orb_size = 80   # pixels

[provider]
# Local model server.
base_url = \"http://127.0.0.1:11434/v1\"
model = \"qwen\" # the one I like
retries = 2
";

    fn set(path: &Path, key: &str, value: serde_json::Value) -> Config {
        update(path, |c| Ok(c.set_json(key, &value)?)).unwrap().0
    }

    #[test]
    fn a_change_keeps_every_comment_blank_line_and_key_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sayri.toml");
        std::fs::write(&path, COMMENTED).unwrap();
        let cfg = set(&path, "provider.model", serde_json::json!("x"));
        assert_eq!(cfg.provider.model, "x");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            COMMENTED.replace(
                "model = \"qwen\" # the one I like",
                "model = \"x\" # the one I like"
            )
        );
        // A new key joins its table; a new table goes at the end; both still parse.
        set(&path, "provider.timeout", serde_json::json!(30));
        set(&path, "stt.mode", serde_json::json!("manual"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with(
                &COMMENTED
                    .replace("\"qwen\"", "\"x\"")
                    .replace("retries = 2\n", "retries = 2\ntimeout = 30\n")
            ),
            "{text}"
        );
        assert!(text.ends_with("\n[stt]\nmode = \"manual\"\n"), "{text}");
        let (cfg, _) = load(&path).unwrap();
        assert_eq!(
            (cfg.provider.timeout, cfg.stt.mode.as_str()),
            (30, "manual")
        );
    }

    #[test]
    fn a_new_file_gets_a_header_and_only_the_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sayri.toml");
        set(&path, "ui.autostart", serde_json::json!(false));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{HEADER}\n[ui]\nautostart = false\n"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // A file of comments only keeps them, above the new table.
        std::fs::write(&path, "# just notes\n\n# more notes\n").unwrap();
        set(&path, "ui.autostart", serde_json::json!(false));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "# just notes\n\n# more notes\n[ui]\nautostart = false\n"
        );
    }

    #[test]
    fn an_invalid_file_or_value_is_refused_and_the_file_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sayri.toml");
        let broken = "# mine\n[provider]\nmodel = \"qwen\"\ntemprature = 0.5\n";
        std::fs::write(&path, broken).unwrap();
        let e = update(&path, |c| Ok(c.set_json("provider.model", &"x".into())?)).unwrap_err();
        assert!(e.to_string().contains(":4:"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
        std::fs::write(&path, COMMENTED).unwrap();
        let e = update(&path, |c| Ok(c.set_json("ui.orb_size", &"big".into())?)).unwrap_err();
        assert!(e.to_string().contains("ui.orb_size"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), COMMENTED);
    }
}
