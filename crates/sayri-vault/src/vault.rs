//! `Vault`: the sealed secrets file, its key, and the operations the daemon and CLI need.

use std::collections::BTreeMap;
use std::fs::{self, DirBuilder};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use zeroize::Zeroizing;

use crate::atomic_write::write_atomic;
use crate::file_lock::FileLock;
use crate::key_source::{
    DataKey, KeySource, KeySourceKind, create_or_read_key_file, derive_key, read_key_file,
};
use crate::sealed_file::{self, Body, KdfHeader};
use crate::{MIN_SECRET_CHARS, SecretRedactor, VaultError, mask, normalize_key};

/// File locations of a vault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VaultPaths {
    /// The sealed vault, normally `$CONFIG/vault.enc`.
    pub vault_file: PathBuf,
    /// The key file used by [`KeySourceKind::KeyFile`], normally `$STATE/keys/vault.key`; keep it out
    /// of the config directory so a copy of the config does not carry the key.
    pub key_file: PathBuf,
}

impl VaultPaths {
    /// `config_dir/vault.enc` and `state_dir/keys/vault.key`.
    pub fn new(config_dir: impl AsRef<Path>, state_dir: impl AsRef<Path>) -> Self {
        Self {
            vault_file: config_dir.as_ref().join("vault.enc"),
            key_file: state_dir.as_ref().join("keys").join("vault.key"),
        }
    }

    fn lock_file(&self) -> PathBuf {
        let mut name = self
            .vault_file
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        name.push(".lock");
        self.vault_file.with_file_name(name)
    }
}

/// What `sayri vault init|status` reports: which key source is in use and why.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct VaultStatus {
    /// The vault file.
    pub vault_file: PathBuf,
    /// The key source sealing it.
    pub key_source: KeySourceKind,
    /// Where that key lives (a path, the keyring entry, or "derived, never stored").
    pub key_location: String,
    /// Why this source (e.g. why the keyring was skipped).
    pub reason: String,
    /// True when this `open` created the vault.
    pub created: bool,
    /// Number of secrets.
    pub secrets: usize,
    /// Anything fixed on the way (e.g. permissions tightened).
    pub notes: Vec<String>,
}

impl VaultStatus {
    /// One line saying that the vault was just created and which key source seals it, and why
    /// (`None` when it existed before).
    pub fn creation_note(&self) -> Option<String> {
        self.created.then(|| {
            format!(
                "created the vault {}, sealed by the {} ({}): {}",
                self.vault_file.display(),
                self.key_source.describe(),
                self.key_location,
                self.reason
            )
        })
    }
}

impl std::fmt::Display for VaultStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "vault: {}{}",
            self.vault_file.display(),
            if self.created { " (created now)" } else { "" }
        )?;
        writeln!(
            f,
            "key source: {} — {}",
            self.key_source.describe(),
            self.key_location
        )?;
        writeln!(f, "why: {}", self.reason)?;
        write!(f, "secrets: {}", self.secrets)?;
        for n in &self.notes {
            write!(f, "\nnote: {n}")?;
        }
        Ok(())
    }
}

/// One row of [`Vault::list`]: never the value, only its mask (see [`crate::mask`]).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct SecretInfo {
    /// Normalised key name (also the environment variable name).
    pub key: String,
    /// [`mask`] of the value.
    pub masked: String,
    /// Free text given at `set`.
    pub description: String,
    /// Last change, seconds since the Unix epoch.
    pub updated_at: u64,
}

struct Entry {
    value: Zeroizing<String>,
    description: String,
    updated_at: u64,
}

/// Identity of the file last read or written, to notice changes made by another process.
#[derive(Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_ns: i64,
}

fn file_id(path: &Path) -> Option<FileId> {
    fs::metadata(path).ok().map(|m| FileId {
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        mtime: m.mtime(),
        mtime_ns: m.mtime_nsec(),
    })
}

/// An open vault: decrypted values in memory (wiped on drop), the data key, and the file's identity.
///
/// Reads (`get`, `list`, `env_for`, `redactor`) use the in-memory copy; call [`Vault::refresh`] to
/// pick up changes another process (CLI vs daemon) made. Writes (`set`, `delete`) take an exclusive
/// lock, re-read and verify the file, apply the change and replace the file atomically, so writers in
/// different processes never lose each other's changes.
pub struct Vault {
    paths: VaultPaths,
    key: DataKey,
    key_source: KeySourceKind,
    kdf: Option<KdfHeader>,
    entries: BTreeMap<String, Entry>,
    status: VaultStatus,
    seen: Option<FileId>,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault")
            .field("status", &self.status)
            .field("keys", &self.entries.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Vault {
    /// Opens the vault at `paths.vault_file`, creating an empty one (and its key) if it does not exist.
    ///
    /// An existing file is read, its seal verified with the key from its recorded source, and every
    /// value decrypted; a file that fails any step is refused and left untouched. A new vault gets
    /// its key from `source` (see [`KeySource`]) and is written at once, 0600, in a config directory
    /// created 0700 if missing.
    ///
    /// # Errors
    /// [`VaultError::Corrupt`], [`VaultError::Tampered`], [`VaultError::PassphraseRequired`],
    /// [`VaultError::KeySourceMismatch`], [`VaultError::KeyFile`], [`VaultError::Keyring`],
    /// [`VaultError::NoKeySource`], [`VaultError::Io`].
    pub fn open(paths: VaultPaths, source: KeySource) -> Result<Self, VaultError> {
        if fs::symlink_metadata(&paths.vault_file).is_ok() {
            Self::open_existing(paths, source)
        } else {
            Self::create(paths, source)
        }
    }

    fn open_existing(paths: VaultPaths, source: KeySource) -> Result<Self, VaultError> {
        let path = paths.vault_file.clone();
        let bytes = fs::read(&path).map_err(|e| VaultError::io("reading", &path, e))?;
        let parsed = sealed_file::parse(&bytes).map_err(|why| VaultError::Corrupt {
            path: path.clone(),
            why: why.to_string(),
        })?;
        let recorded = parsed.body.key_source;
        if let Some(requested) = source.requested_kind()
            && requested != recorded
        {
            return Err(VaultError::KeySourceMismatch {
                path,
                recorded: recorded.describe(),
                requested: requested.describe(),
            });
        }
        let (key, key_location) = match recorded {
            KeySourceKind::KeyFile => (
                read_key_file(&paths.key_file)?,
                paths.key_file.display().to_string(),
            ),
            KeySourceKind::Keyring => (keyring_load()?, keyring_location()),
            KeySourceKind::Passphrase => {
                let KeySource::Passphrase(pass) = &source else {
                    return Err(VaultError::PassphraseRequired { path });
                };
                let kdf = parsed
                    .body
                    .kdf
                    .as_ref()
                    .ok_or_else(|| VaultError::Corrupt {
                        path: path.clone(),
                        why: "a passphrase vault without Argon2id parameters".into(),
                    })?;
                let salt = sealed_file::decode_salt(&kdf.salt)
                    .filter(|_| kdf.algorithm == "argon2id")
                    .ok_or_else(|| VaultError::Corrupt {
                        path: path.clone(),
                        why: "its Argon2id header is malformed".into(),
                    })?;
                let key = derive_key(&pass.secret, &salt, kdf.params).map_err(|_| {
                    VaultError::Tampered {
                        path: path.clone(),
                        source_desc: "the passphrase".into(),
                    }
                })?;
                (key, "derived from the passphrase, never stored".into())
            }
        };
        let mut notes = Vec::new();
        if let Ok(meta) = fs::metadata(&path)
            && meta.mode() & 0o077 != 0
        {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600))
                .map_err(|e| VaultError::io("restricting to 0600", &path, e))?;
            notes.push(format!(
                "{} was readable by others ({:o}); restricted it to 0600",
                path.display(),
                meta.mode() & 0o777
            ));
        }
        let mut vault = Self {
            key,
            key_source: recorded,
            kdf: None,
            entries: BTreeMap::new(),
            status: VaultStatus {
                vault_file: path,
                key_source: recorded,
                key_location,
                reason: "recorded in the vault header when it was created".into(),
                created: false,
                secrets: 0,
                notes,
            },
            seen: None,
            paths,
        };
        vault.load_verified(&bytes)?;
        Ok(vault)
    }

    /// Verifies and decrypts `bytes` with the vault's key and replaces the in-memory entries.
    fn load_verified(&mut self, bytes: &[u8]) -> Result<(), VaultError> {
        let path = &self.paths.vault_file;
        let parsed = sealed_file::parse(bytes).map_err(|why| VaultError::Corrupt {
            path: path.clone(),
            why: why.to_string(),
        })?;
        if !parsed.verify(&self.key) {
            return Err(VaultError::Tampered {
                path: path.clone(),
                source_desc: format!("the {}", self.key_source.describe()),
            });
        }
        if parsed.body.key_source != self.key_source {
            return Err(VaultError::Corrupt {
                path: path.clone(),
                why: "its key source changed while open".into(),
            });
        }
        let mut entries = BTreeMap::new();
        for rec in &parsed.body.entries {
            let corrupt = |why: String| VaultError::Corrupt {
                path: path.clone(),
                why,
            };
            if normalize_key(&rec.key).ok().as_deref() != Some(rec.key.as_str()) {
                return Err(corrupt(format!(
                    "it holds an invalid key name {:?}",
                    rec.key
                )));
            }
            let (value, description) = sealed_file::decrypt_entry(&self.key, rec)
                .map_err(|why| corrupt(why.to_string()))?;
            let entry = Entry {
                value,
                description,
                updated_at: rec.updated_at,
            };
            if entries.insert(rec.key.clone(), entry).is_some() {
                return Err(corrupt(format!("it holds {} twice", rec.key)));
            }
        }
        self.kdf = parsed.body.kdf.clone();
        self.entries = entries;
        self.status.secrets = self.entries.len();
        self.seen = file_id(path);
        Ok(())
    }

    fn create(paths: VaultPaths, source: KeySource) -> Result<Self, VaultError> {
        if let Some(dir) = paths.vault_file.parent()
            && !dir.as_os_str().is_empty()
        {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| VaultError::io("creating the config directory", dir, e))?;
        }
        let mut kdf = None;
        let (key, kind, key_location, reason) = match source {
            KeySource::Auto => {
                let keyring_why = match keyring_create() {
                    Ok((key, reused)) => {
                        return Self::finish_create(
                            paths,
                            key,
                            KeySourceKind::Keyring,
                            keyring_location(),
                            format!(
                                "the OS keyring (Secret Service) is reachable, so the data key is kept there{}",
                                reused_note(reused)
                            ),
                            None,
                        );
                    }
                    Err(e) => e.to_string(),
                };
                match create_or_read_key_file(&paths.key_file) {
                    Ok(key) => (
                        key,
                        KeySourceKind::KeyFile,
                        paths.key_file.display().to_string(),
                        format!(
                            "the OS keyring was not used ({keyring_why}); the data key is in a 0600 file in a 0700 directory apart from the vault"
                        ),
                    ),
                    Err(e) => {
                        return Err(VaultError::NoKeySource {
                            reasons: format!("keyring: {keyring_why}; key file: {e}"),
                        });
                    }
                }
            }
            KeySource::Keyring => {
                let (key, reused) = keyring_create()?;
                (
                    key,
                    KeySourceKind::Keyring,
                    keyring_location(),
                    format!("the OS keyring was requested{}", reused_note(reused)),
                )
            }
            KeySource::KeyFile => (
                create_or_read_key_file(&paths.key_file)?,
                KeySourceKind::KeyFile,
                paths.key_file.display().to_string(),
                "the key file was requested".into(),
            ),
            KeySource::Passphrase(pass) => {
                let salt_b64 = sealed_file::new_salt()?;
                let salt = sealed_file::decode_salt(&salt_b64)
                    .ok_or_else(|| VaultError::Crypto("salt encoding failed".into()))?;
                let key = derive_key(&pass.secret, &salt, pass.params)?;
                kdf = Some(KdfHeader {
                    algorithm: "argon2id".into(),
                    salt: salt_b64,
                    params: pass.params,
                });
                (
                    key,
                    KeySourceKind::Passphrase,
                    "derived from the passphrase, never stored".into(),
                    "a passphrase was requested; the key is derived with Argon2id (salt and cost in the vault header)".into(),
                )
            }
        };
        Self::finish_create(paths, key, kind, key_location, reason, kdf)
    }

    fn finish_create(
        paths: VaultPaths,
        key: DataKey,
        kind: KeySourceKind,
        key_location: String,
        reason: String,
        kdf: Option<KdfHeader>,
    ) -> Result<Self, VaultError> {
        let mut vault = Self {
            key,
            key_source: kind,
            kdf,
            entries: BTreeMap::new(),
            status: VaultStatus {
                vault_file: paths.vault_file.clone(),
                key_source: kind,
                key_location,
                reason,
                created: true,
                secrets: 0,
                notes: Vec::new(),
            },
            seen: None,
            paths,
        };
        let _lock = FileLock::acquire(&vault.paths.lock_file())?;
        if fs::symlink_metadata(&vault.paths.vault_file).is_ok() {
            // Another process created it meanwhile: never overwrite, load it instead.
            let bytes = fs::read(&vault.paths.vault_file)
                .map_err(|e| VaultError::io("reading", &vault.paths.vault_file, e))?;
            vault.status.created = false;
            vault.load_verified(&bytes)?;
            return Ok(vault);
        }
        vault.write()?;
        Ok(vault)
    }

    /// Seals the in-memory entries and replaces the file atomically.
    fn write(&mut self) -> Result<(), VaultError> {
        let mut records = Vec::with_capacity(self.entries.len());
        for (name, e) in &self.entries {
            records.push(sealed_file::encrypt_entry(
                &self.key,
                name,
                &e.value,
                &e.description,
                e.updated_at,
            )?);
        }
        let body = Body {
            key_source: self.key_source,
            kdf: self.kdf.clone(),
            entries: records,
        };
        let bytes = sealed_file::seal(&self.key, &body)?;
        write_atomic(&self.paths.vault_file, &bytes)?;
        self.seen = file_id(&self.paths.vault_file);
        self.status.secrets = self.entries.len();
        Ok(())
    }

    /// Runs `change` on freshly re-read entries under the writer lock, then writes the file. On any
    /// error the file and the in-memory state are left as they were on disk before the call.
    fn mutate<T>(&mut self, change: impl FnOnce(&mut Self) -> T) -> Result<T, VaultError> {
        let _lock = FileLock::acquire(&self.paths.lock_file())?;
        let path = self.paths.vault_file.clone();
        let bytes = fs::read(&path).map_err(|e| VaultError::io("reading", &path, e))?;
        self.load_verified(&bytes)?;
        let out = change(self);
        if let Err(e) = self.write() {
            // Back to what the file holds.
            self.load_verified(&bytes)?;
            return Err(e);
        }
        Ok(out)
    }

    /// Re-reads the file if another process changed it since this vault last read or wrote it.
    /// Returns true when it reloaded. Call it before building an environment or a redactor.
    ///
    /// # Errors
    /// As [`Vault::open`]; on error the in-memory state is unchanged.
    ///
    /// A file sealed under another key than this vault's — its key was moved (`sayri vault key`)
    /// or it was reset (`sayri vault reset`) — is opened afresh from its recorded key source; when
    /// that fails too, the first error is returned.
    pub fn refresh(&mut self) -> Result<bool, VaultError> {
        if file_id(&self.paths.vault_file) == self.seen {
            return Ok(false);
        }
        let path = self.paths.vault_file.clone();
        let bytes = fs::read(&path).map_err(|e| VaultError::io("reading", &path, e))?;
        let before = (std::mem::take(&mut self.entries), self.seen);
        if let Err(e) = self.load_verified(&bytes) {
            self.entries = before.0;
            self.seen = before.1;
            if matches!(e, VaultError::Tampered { .. } | VaultError::Corrupt { .. })
                && let Ok(fresh) = Self::open_existing(self.paths.clone(), KeySource::Auto)
            {
                *self = fresh;
                return Ok(true);
            }
            return Err(e);
        }
        Ok(true)
    }

    /// Moves the data key to the OS keyring or to the key file (`sayri vault key`): the vault
    /// is sealed again under the key of the new place — the key already in the keyring, or a
    /// new random key in a new key file — and the old key file is then removed (a keyring entry
    /// is left, since other vaults of the user may share it). Returns what was done, for a
    /// person.
    ///
    /// # Errors
    /// The key is already there, the vault uses a passphrase, the new place cannot hold a key
    /// (keyring unreachable, a key file already present), or the file cannot be written; in each
    /// case the vault and its old key are left as they were.
    pub fn move_key(&mut self, to: KeySourceKind) -> Result<String, VaultError> {
        let from = self.key_source;
        if from == to {
            return Err(VaultError::Usage(format!(
                "the vault's key is already in the {}; nothing changed",
                to.describe()
            )));
        }
        if from == KeySourceKind::Passphrase || to == KeySourceKind::Passphrase {
            return Err(VaultError::Usage(
                "a passphrase vault's key is derived from the passphrase and never stored, so it cannot be moved; start over with `sayri vault reset` to choose another key source".into(),
            ));
        }
        let _lock = FileLock::acquire(&self.paths.lock_file())?;
        let path = self.paths.vault_file.clone();
        let bytes = fs::read(&path).map_err(|e| VaultError::io("reading", &path, e))?;
        self.load_verified(&bytes)?;
        let key_file = self.paths.key_file.clone();
        let (key, location) = match to {
            KeySourceKind::Keyring => (keyring_create()?.0, keyring_location()),
            _ => {
                if fs::symlink_metadata(&key_file).is_ok() {
                    return Err(VaultError::KeyFile {
                        path: key_file,
                        why: "a key file is already there (perhaps the key of an older vault); move it aside first — nothing changed".into(),
                    });
                }
                (
                    create_or_read_key_file(&key_file)?,
                    key_file.display().to_string(),
                )
            }
        };
        let old_key = std::mem::replace(&mut self.key, key);
        self.key_source = to;
        if let Err(e) = self.write() {
            self.key = old_key;
            self.key_source = from;
            if to == KeySourceKind::KeyFile {
                let _ = fs::remove_file(&key_file);
            }
            return Err(e);
        }
        let mut said = format!(
            "moved the vault's key from the {} to the {} ({location}); {} re-sealed",
            from.describe(),
            to.describe(),
            path.display()
        );
        if from == KeySourceKind::KeyFile {
            match fs::remove_file(&key_file) {
                Ok(()) => said.push_str(&format!(
                    "; removed the old key file {}",
                    key_file.display()
                )),
                Err(e) => said.push_str(&format!(
                    "; the old key file {} could not be removed ({e}): delete it yourself",
                    key_file.display()
                )),
            }
        } else {
            said.push_str(
                "; the keyring entry was left in place (other vaults of yours may share it)",
            );
        }
        self.status.key_source = to;
        self.status.key_location = location;
        self.status.reason = format!(
            "moved there from the {} with `sayri vault key`",
            from.describe()
        );
        Ok(said)
    }

    /// Starts over (`sayri vault reset`): moves the vault file — and the key file, which only
    /// that vault can use — aside under `<name>.reset-<UTC time>` (never deleting either), then
    /// creates an empty vault with `source`. Returns it and every `(from, to)` move.
    ///
    /// # Errors
    /// There is no vault, a file cannot be moved (then nothing was created), or the new vault
    /// cannot be created.
    pub fn reset(
        paths: VaultPaths,
        source: KeySource,
    ) -> Result<(Self, Vec<(PathBuf, PathBuf)>), VaultError> {
        if fs::symlink_metadata(&paths.vault_file).is_err() {
            return Err(VaultError::Usage(format!(
                "there is no vault at {} to reset; `sayri vault init` creates one",
                paths.vault_file.display()
            )));
        }
        let stamp = utc_stamp(SystemTime::now());
        let mut moved = Vec::new();
        {
            let _lock = FileLock::acquire(&paths.lock_file())?;
            for from in [&paths.vault_file, &paths.key_file] {
                if fs::symlink_metadata(from).is_err() {
                    continue;
                }
                let to = aside_name(from, &stamp);
                fs::rename(from, &to).map_err(|e| VaultError::io("moving aside", from, e))?;
                moved.push((from.clone(), to));
            }
        }
        let vault = Self::open(paths, source)?;
        Ok((vault, moved))
    }

    /// Stores `value` (trimmed) under the normalised `key`, replacing any previous value, and returns
    /// the normalised key.
    ///
    /// # Errors
    /// [`VaultError::InvalidKey`]; [`VaultError::ValueTooShort`] for fewer than
    /// [`MIN_SECRET_CHARS`] characters; file and integrity errors as in [`Vault::open`].
    pub fn set(&mut self, key: &str, value: &str, description: &str) -> Result<String, VaultError> {
        let key = normalize_key(key)?;
        let value = Zeroizing::new(value.trim().to_string());
        let chars = value.chars().count();
        if chars < MIN_SECRET_CHARS {
            return Err(VaultError::ValueTooShort {
                key,
                chars,
                min: MIN_SECRET_CHARS,
            });
        }
        let entry = Entry {
            value,
            description: description.trim().to_string(),
            updated_at: now(),
        };
        let name = key.clone();
        self.mutate(move |v| {
            v.entries.insert(name, entry);
        })?;
        Ok(key)
    }

    /// Removes `key`; returns whether it existed.
    ///
    /// # Errors
    /// [`VaultError::InvalidKey`]; file and integrity errors as in [`Vault::open`].
    pub fn delete(&mut self, key: &str) -> Result<bool, VaultError> {
        let key = normalize_key(key)?;
        self.mutate(move |v| v.entries.remove(&key).is_some())
    }

    /// Every secret with its masked value, sorted by key.
    pub fn list(&self) -> Vec<SecretInfo> {
        self.entries
            .iter()
            .map(|(k, e)| SecretInfo {
                key: k.clone(),
                masked: mask(&e.value),
                description: e.description.clone(),
                updated_at: e.updated_at,
            })
            .collect()
    }

    /// The plaintext of `key` (normalised first), for environment injection and `get --reveal` only.
    pub fn get(&self, key: &str) -> Option<Zeroizing<String>> {
        let key = normalize_key(key).ok()?;
        self.entries.get(&key).map(|e| e.value.clone())
    }

    /// The `(NAME, value)` environment variables for a command whose profile allows `allowed`
    /// (names normalised; unknown names skipped — see [`Vault::missing`]). Sorted by name, no duplicates.
    pub fn env_for(&self, allowed: &[String]) -> Vec<(String, Zeroizing<String>)> {
        let mut names: Vec<String> = allowed
            .iter()
            .filter_map(|a| normalize_key(a).ok())
            .collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .filter_map(|n| self.entries.get(&n).map(|e| (n, e.value.clone())))
            .collect()
    }

    /// Names in `allowed` that are invalid or not in the vault (to warn about in the profile).
    pub fn missing(&self, allowed: &[String]) -> Vec<String> {
        allowed
            .iter()
            .filter(|a| normalize_key(a).map_or(true, |n| !self.entries.contains_key(&n)))
            .cloned()
            .collect()
    }

    /// A redactor for every secret in the vault (add non-vault values with
    /// [`SecretRedactor::with_extra`]).
    pub fn redactor(&self) -> SecretRedactor {
        SecretRedactor::new(
            self.entries
                .iter()
                .map(|(k, e)| (k.clone(), e.value.clone()))
                .collect(),
        )
    }

    /// Which key source is in use and why, the file, and the number of secrets.
    pub fn status(&self) -> &VaultStatus {
        &self.status
    }

    /// The file locations.
    pub fn paths(&self) -> &VaultPaths {
        &self.paths
    }
}

/// `t` as `YYYYMMDDTHHMMSSZ` (UTC), for names of files moved aside.
fn utc_stamp(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%Y%m%dT%H%M%SZ")
        .to_string()
}

/// `path` with `.reset-<stamp>` appended (and `-2`, `-3`, … when that name is taken).
fn aside_name(path: &Path, stamp: &str) -> PathBuf {
    let base = format!("{}.reset-{stamp}", path.display());
    let mut candidate = PathBuf::from(&base);
    let mut n = 2;
    while fs::symlink_metadata(&candidate).is_ok() {
        candidate = PathBuf::from(format!("{base}-{n}"));
        n += 1;
    }
    candidate
}

fn keyring_location() -> String {
    "Secret Service entry service `sayri`, account `vault-data-key`".into()
}

#[cfg(feature = "keyring")]
fn keyring_load() -> Result<DataKey, VaultError> {
    crate::keyring_store::load()
}

/// Said of a new vault whose keyring key already existed (another vault of this user made it).
fn reused_note(reused: bool) -> &'static str {
    if reused {
        " (reusing the key already stored in that entry: every keyring-sealed vault of this user shares it)"
    } else {
        ""
    }
}

#[cfg(feature = "keyring")]
fn keyring_create() -> Result<(DataKey, bool), VaultError> {
    crate::keyring_store::create_or_load()
}

#[cfg(not(feature = "keyring"))]
fn keyring_load() -> Result<DataKey, VaultError> {
    Err(VaultError::Keyring {
        why: "this vault keeps its key in the OS keyring, but this build of sayri has no `keyring` feature; use a build with it (`cargo build -p sayri --features keyring`)".into(),
    })
}

#[cfg(not(feature = "keyring"))]
fn keyring_create() -> Result<(DataKey, bool), VaultError> {
    Err(VaultError::Keyring {
        why:
            "this build has no `keyring` feature (`cargo build -p sayri --features keyring` has it)"
                .into(),
    })
}

#[cfg(test)]
mod stamp_tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn stamps_are_utc_calendar_times() {
        let at = |secs: u64| utc_stamp(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "19700101T000000Z");
        assert_eq!(at(951_782_400), "20000229T000000Z");
        assert_eq!(at(1_733_084_730), "20241201T202530Z");
    }
}
