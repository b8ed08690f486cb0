//! One writer per model file: an exclusive `flock` on `<model file>.lock`, held by whoever
//! downloads, imports or removes it — `sayri models …`, `sayri setup` and the daemon's
//! `asset_download` alike, whichever process they run in. The lock file holds
//! `pid <pid>: <who>` of its holder, so a second writer can say whom it waits for. The file
//! stays when the lock is released (removing it would let a third writer lock a new file
//! while a second still waits on the old one); the kernel drops the lock when its holder
//! exits, however it ends.

use super::ModelError;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often a waiting writer tries the lock again.
const RETRY: Duration = Duration::from_millis(200);

/// A held lock on one model file; released when dropped.
#[derive(Debug)]
pub struct TargetLock {
    _file: File,
}

/// The lock file of model file `target`.
pub fn lock_path(target: &Path) -> PathBuf {
    let mut s = target.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

fn open(target: &Path) -> Result<(File, PathBuf), ModelError> {
    let path = lock_path(target);
    super::create_parent(&path)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| ModelError::Io(format!("{}: {e}", path.display())))?;
    Ok((file, path))
}

/// Takes the lock now, or says who holds it (`Err(Some(holder))`).
fn try_take(file: File, path: &Path, who: &str) -> Result<Result<TargetLock, File>, ModelError> {
    match file.try_lock() {
        Ok(()) => {
            let mut file = file;
            let line = format!("pid {}: {who}\n", std::process::id());
            let written = file
                .set_len(0)
                .and_then(|()| file.rewind())
                .and_then(|()| file.write_all(line.as_bytes()));
            written.map_err(|e| ModelError::Io(format!("{}: {e}", path.display())))?;
            Ok(Ok(TargetLock { _file: file }))
        }
        Err(TryLockError::WouldBlock) => Ok(Err(file)),
        Err(TryLockError::Error(e)) => Err(ModelError::Io(format!("{}: {e}", path.display()))),
    }
}

/// Who holds the lock of `file`, as its holder wrote it.
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.rewind().and_then(|()| file.read_to_string(&mut text));
    let text = text.trim();
    if text.is_empty() {
        "another process".into()
    } else {
        text.chars().take(200).collect()
    }
}

/// Takes the lock of `target` for `who` (`sayri models download`, `the daemon`), waiting while
/// another writer holds it; `waiting` is told once who that is.
///
/// # Errors
/// The lock file cannot be made or locked.
pub async fn wait_for(
    target: &Path,
    who: &str,
    waiting: &mut (dyn FnMut(String) + Send),
) -> Result<TargetLock, ModelError> {
    let (mut file, path) = open(target)?;
    let mut told = false;
    loop {
        match try_take(file, &path, who)? {
            Ok(lock) => return Ok(lock),
            Err(mut back) => {
                if !told {
                    told = true;
                    waiting(holder(&mut back));
                }
                file = back;
            }
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Takes the lock of `target` for `who` now, or fails naming its holder (`what` is the model,
/// as the message names it).
///
/// # Errors
/// [`ModelError::Busy`] while another writer holds it; the lock file cannot be made.
pub fn take_now(target: &Path, who: &str, what: &str) -> Result<TargetLock, ModelError> {
    let (file, path) = open(target)?;
    match try_take(file, &path, who)? {
        Ok(lock) => Ok(lock),
        Err(mut held) => Err(ModelError::Busy {
            what: what.to_string(),
            holder: holder(&mut held),
        }),
    }
}
