//! Sayri's zero-plaintext vault.
//!
//! - [`Vault`]: secrets in one sealed file (`vault.enc`, 0600). Every value is encrypted with
//!   XChaCha20-Poly1305 under a random 24-byte nonce, with its key name as associated data; the whole
//!   file carries an AEAD seal, so changing any byte is detected. The 32-byte data key comes from the
//!   OS keyring (feature `keyring`), a 0600 key file in a separate directory, or a passphrase
//!   (Argon2id) — see [`KeySource`].
//! - [`SecretRedactor`] / [`StreamRedactor`]: the one redaction mechanism for tool output, errors,
//!   logs, stored messages and events (implements [`sayri_core::ports::Redactor`]).
//! - [`cli`]: the `sayri vault …` subcommands as library code.
//!
//! See the crate README for the threat model.

pub mod atomic_write;
pub mod cli;
mod dontdump;
mod error;
mod file_lock;
mod key_name;
mod key_source;
#[cfg(feature = "keyring")]
mod keyring_store;
mod redact;
mod sealed_file;
mod vault;

pub use error::VaultError;
pub use key_name::{MAX_KEY_LEN, normalize_key};
pub use key_source::{KdfParams, KeySource, KeySourceKind, Passphrase};
pub use redact::{MARKER_PREFIX, SecretRedactor, SharedRedactor, StreamRedactor};
pub use sayri_core::domain::text::mask;
pub use vault::{SecretInfo, Vault, VaultPaths, VaultStatus};

/// Shortest secret value accepted by [`Vault::set`] and searched by the redactor, in characters.
pub const MIN_SECRET_CHARS: usize = 4;
