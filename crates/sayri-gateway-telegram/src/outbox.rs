//! The gateway's outbox: every update that names a chat, from the moment it is received until
//! its reply is delivered or given up, kept on disk so that a killed gateway loses nothing.
//!
//! * One file per update, `<update_id>.json` in the instance's state directory
//!   (`SAYRI_GATEWAY_STATE_DIR`, 0700), written whole to a temporary name, synced and renamed,
//!   so a crash leaves the old version or the new one, never half of one.
//! * An update is written **before** it is acknowledged (the next `getUpdates` offset), and the
//!   daemon's reply is written **before** its first `sendMessage`; after every part Telegram
//!   accepts, the count of delivered parts is written.
//! * After a restart the entries are loaded and worked off in `update_id` order per chat: an
//!   entry without a reply is asked again (the daemon answers a known `update_id` from its
//!   record, without a second turn), one with a reply continues at the first part not yet
//!   delivered, once its `next_attempt_at` has come. So a reply is sent exactly once, except
//!   for the part in flight at the instant of a crash.
//! * Without a state directory (the program started by hand) the outbox lives in memory only.

use sayri_protocol::legacy::IncomingMessage;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// One update on its way to a reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Telegram's `update_id`.
    pub update_id: i64,
    /// The chat the reply goes to.
    pub chat_id: String,
    /// The message as the daemon gets it.
    pub message: IncomingMessage,
    /// The daemon's reply (Markdown), once it answered.
    #[serde(default)]
    pub reply: Option<String>,
    /// Parts of the reply Telegram accepted so far.
    #[serde(default)]
    pub parts_delivered: usize,
    /// Failed delivery attempts.
    #[serde(default)]
    pub attempts: u32,
    /// When the next attempt is due, Unix seconds (`None`: at once).
    #[serde(default)]
    pub next_attempt_at: Option<f64>,
    /// What the last failed attempt was told.
    #[serde(default)]
    pub last_error: Option<String>,
}

/// The outbox of one gateway instance.
pub struct Outbox {
    dir: Option<PathBuf>,
    entries: Mutex<BTreeMap<i64, Entry>>,
}

fn file_of(dir: &Path, update_id: i64) -> PathBuf {
    dir.join(format!("{update_id}.json"))
}

/// Writes `bytes` to `path` atomically (temporary file, sync, rename, sync of the directory).
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = path.with_extension("json.tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

impl Outbox {
    /// The outbox in `dir` (created 0700 if needed), with the entries a previous run left, or
    /// one in memory when `dir` is `None`. Unreadable entry files are set aside as
    /// `<name>.unreadable` and named in the returned notes.
    pub fn open(dir: Option<PathBuf>) -> (Outbox, Vec<String>) {
        let mut entries = BTreeMap::new();
        let mut notes = Vec::new();
        if let Some(d) = &dir {
            if let Err(e) = create_private_dir(d) {
                notes.push(format!("cannot create the outbox {}: {e}", d.display()));
            }
            for (id, path) in entry_files(d) {
                let parsed = std::fs::read(&path)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Entry>(&b).ok());
                match parsed {
                    Some(e) if e.update_id == id => {
                        entries.insert(id, e);
                    }
                    _ => {
                        let aside = path.with_extension("json.unreadable");
                        let _ = std::fs::rename(&path, &aside);
                        notes.push(format!(
                            "outbox entry {} could not be read; set aside as {}",
                            path.display(),
                            aside.display()
                        ));
                    }
                }
            }
        }
        let outbox = Outbox {
            dir,
            entries: Mutex::new(entries),
        };
        (outbox, notes)
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<i64, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores `e` (replacing the entry of its update). The copy in memory is updated even when
    /// the file cannot be written (the error says so; the entry then does not survive a crash).
    ///
    /// # Errors
    /// The entry file could not be written.
    pub fn put(&self, e: &Entry) -> Result<(), String> {
        self.lock().insert(e.update_id, e.clone());
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let bytes = serde_json::to_vec(e).map_err(|x| x.to_string())?;
        let path = file_of(dir, e.update_id);
        write_atomic(&path, &bytes).map_err(|x| format!("cannot write {}: {x}", path.display()))
    }

    /// Forgets the entry of `update_id` (delivered, given up, or nothing to answer).
    pub fn remove(&self, update_id: i64) {
        self.lock().remove(&update_id);
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_file(file_of(dir, update_id));
        }
    }

    /// The entry of `update_id`.
    pub fn get(&self, update_id: i64) -> Option<Entry> {
        self.lock().get(&update_id).cloned()
    }

    /// Every entry, in `update_id` order.
    pub fn entries(&self) -> Vec<Entry> {
        self.lock().values().cloned().collect()
    }

    /// Whether the update is already in the outbox (Telegram sent it again).
    pub fn contains(&self, update_id: i64) -> bool {
        self.lock().contains_key(&update_id)
    }

    /// Entries waiting, and the earliest time an attempt is due among those that wait for one.
    pub fn summary(&self) -> (u64, Option<f64>) {
        let entries = self.lock();
        let next = entries
            .values()
            .filter_map(|e| e.next_attempt_at)
            .min_by(f64::total_cmp);
        (entries.len() as u64, next)
    }
}

fn create_private_dir(d: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(d)?;
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))
}

/// `(update_id, path)` of every `<id>.json` in `d`; leftover temporary files are removed.
fn entry_files(d: &Path) -> Vec<(i64, PathBuf)> {
    let Ok(read) = std::fs::read_dir(d) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for path in read.filter_map(Result::ok).map(|e| e.path()) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if name.ends_with(".json.tmp") {
            let _ = std::fs::remove_file(&path);
        } else if let Some(id) = name
            .strip_suffix(".json")
            .and_then(|s| s.parse::<i64>().ok())
        {
            out.push((id, path));
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: i64) -> Entry {
        Entry {
            update_id: id,
            chat_id: "1001".into(),
            message: IncomingMessage {
                text: format!("message {id}"),
                ..IncomingMessage::default()
            },
            reply: None,
            parts_delivered: 0,
            attempts: 0,
            next_attempt_at: None,
            last_error: None,
        }
    }

    #[test]
    fn entries_survive_reopening_in_update_order_and_a_damaged_file_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("outbox");
        let (ob, notes) = Outbox::open(Some(d.clone()));
        assert!(notes.is_empty());
        for id in [30, 10, 20] {
            ob.put(&entry(id)).unwrap();
        }
        let mut e = entry(20);
        e.reply = Some("the answer".into());
        e.parts_delivered = 1;
        e.next_attempt_at = Some(5.0);
        ob.put(&e).unwrap();
        ob.remove(30);
        std::fs::write(d.join("40.json"), b"{not json").unwrap();
        std::fs::write(d.join("50.json.tmp"), b"half").unwrap();
        drop(ob);

        let (ob, notes) = Outbox::open(Some(d.clone()));
        let ids: Vec<i64> = ob.entries().iter().map(|e| e.update_id).collect();
        assert_eq!(ids, [10, 20]);
        assert_eq!(ob.get(20).unwrap(), e);
        assert_eq!(ob.summary(), (2, Some(5.0)));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(d.join("40.json.unreadable").exists());
        assert!(!d.join("50.json.tmp").exists());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&d).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }
}
