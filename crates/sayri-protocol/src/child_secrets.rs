//! How a program the daemon supervises (a gateway, the local model server, a plugin service)
//! receives its secrets: never in its arguments or environment, which other processes can read
//! in `/proc`, but on a socket of its own.
//!
//! The environment variable [`SECRETS_FD_ENV`] names the descriptor (e.g. `SAYRI_SECRETS_FD=3`).
//! The program reads it to the end: one JSON object, `{"NAME": "value", …}`, then end of file.
//! It should read it first thing and close it. A program started without the variable was not
//! given secrets.
//!
//! ```
//! use sayri_protocol::child_secrets::{decode, encode};
//! let bytes = encode(&[("TELEGRAM_BOT_TOKEN".into(), "123:abc".into())]);
//! assert_eq!(decode(&bytes).unwrap()["TELEGRAM_BOT_TOKEN"], "123:abc");
//! ```

use std::collections::BTreeMap;

/// The variable that names the secrets descriptor.
pub const SECRETS_FD_ENV: &str = "SAYRI_SECRETS_FD";

/// The JSON object for `pairs` (later pairs of the same name win).
pub fn encode(pairs: &[(String, String)]) -> Vec<u8> {
    let map: BTreeMap<&str, &str> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    serde_json::to_vec(&map).unwrap_or_else(|_| b"{}".to_vec())
}

/// The names and values in `bytes` (what [`encode`] wrote).
///
/// # Errors
/// [`DecodeError`]: the bytes are not a JSON object of strings.
pub fn decode(bytes: &[u8]) -> Result<BTreeMap<String, String>, DecodeError> {
    serde_json::from_slice(bytes).map_err(DecodeError)
}

/// The passed secrets are not a JSON object of strings (the daemon and the child are then
/// probably different versions of Sayri).
#[derive(Debug, thiserror::Error)]
#[error("the secrets on {SECRETS_FD_ENV} are not a JSON object of strings: {0}")]
pub struct DecodeError(pub serde_json::Error);
