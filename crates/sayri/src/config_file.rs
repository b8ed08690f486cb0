//! Reading and writing `sayri.toml` (the typed model lives in `sayri_core::domain::config`).
//!
//! A missing file means "all defaults". An invalid file is an error with `file:line`; it is
//! never overwritten or reset. Updates re-read the file, apply one change, and replace the file
//! atomically (write a 0600 temporary file, fsync, rename), so a crash never leaves half a file.
//! Only values that differ from their defaults are written.

use sayri_core::domain::config::{Config, ConfigError};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

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
    #[error("cannot write config file {path}: {source}; check the directory's permissions")]
    Write {
        /// The file.
        path: PathBuf,
        /// OS error.
        source: io::Error,
    },
    /// The content is invalid, or a requested change is.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// Loads `path` over the defaults. Returns the config and whether the file existed.
pub fn load(path: &Path) -> Result<(Config, bool), ConfigFileError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok((
            Config::from_toml_str(&text, &path.display().to_string())?,
            true,
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((Config::default(), false)),
        Err(source) => Err(ConfigFileError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Re-reads `path`, applies `change`, writes the result, and returns the new config with
/// `change`'s output. Nothing is written if reading, parsing or `change` fails.
pub fn update<T>(
    path: &Path,
    change: impl FnOnce(&mut Config) -> Result<T, ConfigError>,
) -> Result<(Config, T), ConfigFileError> {
    let (mut cfg, _) = load(path)?;
    let out = change(&mut cfg)?;
    save(path, &cfg)?;
    Ok((cfg, out))
}

const HEADER: &str = "# Sayri configuration. Written by `sayri config set`; only non-default values appear.\n# Every setting and its default: `sayri config list`.\n\n";

/// Writes `cfg` to `path` atomically with mode 0600.
pub fn save(path: &Path, cfg: &Config) -> Result<(), ConfigFileError> {
    let err = |source| ConfigFileError::Write {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension(format!("toml.tmp{}", std::process::id()));
    let body = format!("{HEADER}{}", cfg.to_toml_string());
    let write = || -> io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(body.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(e)
    })
}
