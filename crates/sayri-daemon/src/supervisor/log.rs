//! A supervised child's log: `$STATE/logs/<name>.log`, rotated by size.
//!
//! When a write would make the file larger than the limit, `<name>.log` becomes `<name>.log.1`,
//! the older copies shift up (`.1` → `.2` …) and the oldest beyond `keep` is deleted. Writes
//! are whole chunks as the child wrote them, so a line may be split across two files.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Size limits of a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLimits {
    /// Largest size of the current file in bytes (default 1 MiB).
    pub max_bytes: u64,
    /// Rotated copies kept (default 3).
    pub keep: usize,
}

impl Default for LogLimits {
    fn default() -> Self {
        LogLimits {
            max_bytes: 1 << 20,
            keep: 3,
        }
    }
}

/// An open, size-rotated log file (mode 0600).
#[derive(Debug)]
pub struct RotatingLog {
    path: PathBuf,
    limits: LogLimits,
    file: File,
    size: u64,
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

impl RotatingLog {
    /// Opens (appending to) `path`, creating its directory with mode 0700.
    ///
    /// # Errors
    /// The directory or the file cannot be created.
    pub fn open(path: PathBuf, limits: LogLimits) -> io::Result<Self> {
        if let Some(dir) = path.parent() {
            sayri_client::paths::ensure_private_dir(dir).map_err(io::Error::other)?;
        }
        let file = open_append(&path)?;
        let size = file.metadata()?.len();
        Ok(RotatingLog {
            path,
            limits,
            file,
            size,
        })
    }

    /// The current file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `bytes`, rotating first when they would not fit.
    ///
    /// # Errors
    /// Rotating or writing failed.
    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.size > 0 && self.size + bytes.len() as u64 > self.limits.max_bytes {
            self.rotate()?;
        }
        self.file.write_all(bytes)?;
        self.size += bytes.len() as u64;
        Ok(())
    }

    /// Appends one line written by Sayri itself (`[sayri] …`).
    ///
    /// # Errors
    /// As [`RotatingLog::write`].
    pub fn note(&mut self, text: &str) -> io::Result<()> {
        let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
        self.write(format!("[sayri {stamp}] {text}\n").as_bytes())
    }

    fn rotated(&self, n: usize) -> PathBuf {
        let mut p = self.path.clone().into_os_string();
        p.push(format!(".{n}"));
        PathBuf::from(p)
    }

    fn rotate(&mut self) -> io::Result<()> {
        if self.limits.keep == 0 {
            OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&self.path)?;
            self.file = open_append(&self.path)?;
            self.size = 0;
            return Ok(());
        }
        let _ = std::fs::remove_file(self.rotated(self.limits.keep));
        for n in (1..self.limits.keep).rev() {
            let _ = std::fs::rename(self.rotated(n), self.rotated(n + 1));
        }
        std::fs::rename(&self.path, self.rotated(1))?;
        self.file = open_append(&self.path)?;
        self.size = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_rotates_by_size_and_keeps_the_newest_copies() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/child.log");
        let limits = LogLimits {
            max_bytes: 10,
            keep: 2,
        };
        let mut log = RotatingLog::open(path.clone(), limits).unwrap();
        for chunk in ["aaaaaa", "bbbbbb", "cccccc", "dddddd"] {
            log.write(chunk.as_bytes()).unwrap();
        }
        let read = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_default();
        assert_eq!(read(path.clone()), "dddddd");
        assert_eq!(read(dir.path().join("logs/child.log.1")), "cccccc");
        assert_eq!(read(dir.path().join("logs/child.log.2")), "bbbbbb");
        assert!(!dir.path().join("logs/child.log.3").exists());
        // Reopening appends, and the size counts what is already there.
        drop(log);
        let mut log = RotatingLog::open(path.clone(), limits).unwrap();
        log.write(b"ee").unwrap();
        assert_eq!(read(path.clone()), "ddddddee");
        log.write(b"fff").unwrap();
        assert_eq!(read(path), "fff");
    }
}
