//! Where the vault's 32-byte data key comes from: OS keyring, a 0600 key file, or a passphrase.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::VaultError;

/// Length of the data key in bytes (XChaCha20-Poly1305 key size).
pub const KEY_LEN: usize = 32;

/// A data key held in memory: on a page left out of core dumps, wiped on drop (see
/// [`crate::dontdump`]).
pub(crate) type DataKey = crate::dontdump::KeyPage;

/// The kind of key source a vault was sealed with (recorded in the vault header).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeySourceKind {
    /// The OS keyring (Secret Service over D-Bus), service `sayri`, account `vault-data-key`.
    Keyring,
    /// A 0600 file of 32 random bytes in a 0700 directory apart from the vault.
    KeyFile,
    /// Derived from a passphrase with Argon2id; the salt and cost are in the vault header.
    Passphrase,
}

impl KeySourceKind {
    /// A short human name ("OS keyring", "key file", "passphrase").
    pub fn describe(self) -> &'static str {
        match self {
            Self::Keyring => "OS keyring",
            Self::KeyFile => "key file",
            Self::Passphrase => "passphrase",
        }
    }
}

/// Argon2id cost parameters (memory in KiB, passes, lanes). Stored in the vault header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KdfParams {
    /// Memory cost in KiB (default 19456 = 19 MiB, the OWASP interactive setting).
    pub m_kib: u32,
    /// Number of passes (default 2).
    pub t: u32,
    /// Degree of parallelism (default 1).
    pub p: u32,
}

impl Default for KdfParams {
    fn default() -> Self {
        Self {
            m_kib: 19 * 1024,
            t: 2,
            p: 1,
        }
    }
}

/// A passphrase for a passphrase-sealed vault, with the Argon2id cost used when a *new* vault is
/// created (an existing vault always uses the cost recorded in its header).
pub struct Passphrase {
    pub(crate) secret: Zeroizing<String>,
    pub(crate) params: KdfParams,
}

impl Passphrase {
    /// A passphrase with the default cost ([`KdfParams::default`]).
    pub fn new(secret: Zeroizing<String>) -> Self {
        Self {
            secret,
            params: KdfParams::default(),
        }
    }

    /// Sets the Argon2id cost for a new vault (tests use a small one).
    #[must_use]
    pub fn with_params(mut self, params: KdfParams) -> Self {
        self.params = params;
        self
    }
}

impl std::fmt::Debug for Passphrase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Passphrase")
            .field("secret", &"<hidden>")
            .field("params", &self.params)
            .finish()
    }
}

/// Which key source to use when opening a vault.
///
/// For an **existing** vault the source recorded in its header is used; `Auto` accepts it, an
/// explicit choice must match it ([`VaultError::KeySourceMismatch`] otherwise), and a passphrase vault
/// needs [`KeySource::Passphrase`]. For a **new** vault, `Auto` tries the OS keyring (only with the
/// `keyring` feature and a reachable Secret Service), then the key file; the other variants force one.
#[derive(Debug)]
pub enum KeySource {
    /// The recorded source, or keyring → key file for a new vault.
    Auto,
    /// The OS keyring only.
    Keyring,
    /// The key file only.
    KeyFile,
    /// A passphrase (Argon2id).
    Passphrase(Passphrase),
}

impl KeySource {
    pub(crate) fn requested_kind(&self) -> Option<KeySourceKind> {
        match self {
            Self::Auto => None,
            Self::Keyring => Some(KeySourceKind::Keyring),
            Self::KeyFile => Some(KeySourceKind::KeyFile),
            Self::Passphrase(_) => Some(KeySourceKind::Passphrase),
        }
    }
}

/// Fills a buffer from the OS random number generator (getrandom(2)).
pub(crate) fn random_bytes<const N: usize>() -> Result<[u8; N], VaultError> {
    let mut out = [0u8; N];
    chacha20poly1305::aead::common::getrandom::fill(&mut out)
        .map_err(|e| VaultError::Random(e.to_string()))?;
    Ok(out)
}

/// A fresh random data key.
pub(crate) fn random_key() -> Result<DataKey, VaultError> {
    let mut key = DataKey::zeroed()?;
    chacha20poly1305::aead::common::getrandom::fill(key.as_mut_slice())
        .map_err(|e| VaultError::Random(e.to_string()))?;
    Ok(key)
}

/// Derives the data key from a passphrase with Argon2id v1.3.
pub(crate) fn derive_key(
    passphrase: &str,
    salt: &[u8],
    params: KdfParams,
) -> Result<DataKey, VaultError> {
    let p = argon2::Params::new(params.m_kib, params.t, params.p, Some(KEY_LEN)).map_err(|e| {
        VaultError::Crypto(format!(
            "invalid Argon2id parameters {params:?} ({e}); the vault header may be damaged"
        ))
    })?;
    let kdf = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, p);
    let mut key = DataKey::zeroed()?;
    kdf.hash_password_into(passphrase.as_bytes(), salt, key.as_mut_slice())
        .map_err(|e| VaultError::Crypto(format!("Argon2id key derivation failed: {e}")))?;
    Ok(key)
}

fn key_file_err(path: &Path, why: impl Into<String>) -> VaultError {
    VaultError::KeyFile {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// Reads the key file, refusing anything but a regular file of exactly 32 bytes, owned by us, with no
/// group or other permission bits (fails closed).
pub(crate) fn read_key_file(path: &Path) -> Result<DataKey, VaultError> {
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                key_file_err(
                    path,
                    "it is missing, so the vault cannot be decrypted. Restore the key file from a backup; without it the secrets are lost (move the vault aside and run `sayri vault init` to start over)",
                )
            } else {
                key_file_err(path, format!("cannot open it ({e}); check its permissions"))
            }
        })?;
    let meta = file
        .metadata()
        .map_err(|e| key_file_err(path, format!("cannot stat it ({e})")))?;
    if !meta.file_type().is_file() {
        return Err(key_file_err(path, "it is not a regular file"));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if meta.uid() != uid {
        return Err(key_file_err(
            path,
            format!(
                "it is owned by uid {}, not by you (uid {uid}); refusing a key someone else controls",
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(key_file_err(
            path,
            format!(
                "its permissions are {:o}, readable by others; refusing to use a possibly exposed key. If you trust it, run `chmod 600 {}`",
                meta.mode() & 0o777,
                path.display()
            ),
        ));
    }
    if meta.len() != KEY_LEN as u64 {
        return Err(key_file_err(
            path,
            format!(
                "it holds {} bytes, not {KEY_LEN}; it is not a Sayri vault key. Restore it from a backup",
                meta.len()
            ),
        ));
    }
    let mut key = DataKey::zeroed()?;
    file.read_exact(key.as_mut_slice())
        .map_err(|e| key_file_err(path, format!("cannot read it ({e})")))?;
    Ok(key)
}

/// Creates the key directory (0700) and a new key file (0600, `O_EXCL`) holding a fresh random key.
/// An existing key file is reused (after the checks of [`read_key_file`]).
pub(crate) fn create_or_read_key_file(path: &Path) -> Result<DataKey, VaultError> {
    let dir = path
        .parent()
        .ok_or_else(|| key_file_err(path, "it has no parent directory"))?;
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| VaultError::io("creating the key directory", dir, e))?;
    let meta = fs::metadata(dir).map_err(|e| VaultError::io("checking", dir, e))?;
    if meta.mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| VaultError::io("restricting to 0700", dir, e))?;
    }
    if fs::symlink_metadata(path).is_ok() {
        return read_key_file(path);
    }
    let key = random_key()?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| VaultError::io("creating the key file", path, e))?;
    file.write_all(key.as_slice())
        .and_then(|()| file.sync_all())
        .map_err(|e| VaultError::io("writing the key file", path, e))?;
    crate::atomic_write::sync_dir(dir)?;
    Ok(key)
}
