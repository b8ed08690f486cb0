//! `VaultError`: every way a vault operation can fail, each message naming the cause and the next step.

use std::path::PathBuf;

/// Errors of the vault, its key sources and its CLI.
///
/// Every `Display` text is meant for a person: it says what happened and what to do next. No variant
/// ever carries a secret value.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// A key name that cannot become an environment variable name.
    #[error(
        "invalid secret name {given:?}: {why}. Use letters, digits and `_` (spaces become `_`), not starting with a digit, e.g. `GITHUB_TOKEN`"
    )]
    InvalidKey {
        /// The name as the user typed it.
        given: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A value shorter than [`crate::MIN_SECRET_CHARS`] characters (after trimming).
    #[error(
        "the value for {key} is too short ({chars} characters after trimming): secrets need at least {min} characters, because a shorter value cannot be redacted from command output without mangling ordinary text. Store the full token or password"
    )]
    ValueTooShort {
        /// Normalised key name.
        key: String,
        /// Length of the trimmed value in characters.
        chars: usize,
        /// The minimum ([`crate::MIN_SECRET_CHARS`]).
        min: usize,
    },
    /// The vault file exists but is not a sealed Sayri vault of a known version.
    #[error(
        "{path} is not a Sayri vault this version can read ({why}). It was left untouched; move it aside (or restore a backup) and run `sayri vault init`"
    )]
    Corrupt {
        /// The vault file.
        path: PathBuf,
        /// What the parser found.
        why: String,
    },
    /// The whole-file seal did not verify: the file was modified, or the data key is not the one that sealed it.
    #[error(
        "{path} failed its integrity check: the file was modified after Sayri wrote it, or the data key from {source_desc} is not the key that sealed it. Nothing was loaded and the file was left untouched; restore the vault (or the key) from a backup, or move the file aside and run `sayri vault init` to start empty"
    )]
    Tampered {
        /// The vault file.
        path: PathBuf,
        /// Where the key came from (for the message).
        source_desc: String,
    },
    /// The vault was sealed with a passphrase-derived key, and none was given.
    #[error(
        "{path} is sealed with a passphrase (Argon2id); give it with `SAYRI_VAULT_PASSPHRASE` or on the terminal prompt"
    )]
    PassphraseRequired {
        /// The vault file.
        path: PathBuf,
    },
    /// The caller asked for one key source but the vault records another.
    #[error(
        "{path} is sealed with a key from the {recorded}, but the {requested} was requested; open it with its own key source (or `auto`)"
    )]
    KeySourceMismatch {
        /// The vault file.
        path: PathBuf,
        /// Source recorded in the vault header.
        recorded: &'static str,
        /// Source the caller requested.
        requested: &'static str,
    },
    /// The key file is missing, unreadable, of the wrong size or too widely readable.
    #[error("vault key file {path}: {why}")]
    KeyFile {
        /// The key file.
        path: PathBuf,
        /// What is wrong and what to do.
        why: String,
    },
    /// The OS keyring could not provide the key.
    #[error("OS keyring: {why}")]
    Keyring {
        /// What failed and what to do.
        why: String,
    },
    /// No key source could be used for a new vault.
    #[error(
        "no key source is available for a new vault: {reasons}. Make the key directory writable, or initialise with a passphrase (`sayri vault init --passphrase`)"
    )]
    NoKeySource {
        /// Why each source was skipped.
        reasons: String,
    },
    /// Reading or writing a file failed.
    #[error("{action} {path}: {source}. Check that the directory exists and is writable by you")]
    Io {
        /// What was being done ("writing", "reading", ...).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The operating system's random number generator failed.
    #[error(
        "the system random number generator failed ({0}); nothing was written. Retry; if it persists, check /dev/urandom and getrandom(2)"
    )]
    Random(String),
    /// A cryptographic primitive failed (bad KDF parameters, message too long).
    #[error("{0}")]
    Crypto(String),
    /// A CLI usage problem (e.g. `--reveal` to a pipe).
    #[error("{0}")]
    Usage(String),
}

impl VaultError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
