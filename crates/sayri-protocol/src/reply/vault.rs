//! Replies of `vault_list`, `vault_set`, `vault_delete`. No reply carries a secret's value.

use serde::{Deserialize, Serialize};

/// `vault_list` → every secret, masked.
pub type VaultListReply = Vec<SecretInfo>;

/// One secret as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretInfo {
    /// Its key (also the environment variable name a command receives it as).
    pub key: String,
    /// Its value masked.
    pub masked: String,
    /// What it is for.
    pub description: String,
    /// Its last change, Unix seconds.
    pub updated_at: u64,
}

/// `vault_set` → `{key, saved, rewritten}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VaultSetReply {
    /// The key as stored (normalised).
    pub key: String,
    /// Always true.
    pub saved: bool,
    /// Stored rows (messages, titles, preferences, approvals) that held a secret and were
    /// redacted now.
    pub rewritten: u64,
}

/// `vault_delete` → `{key, deleted}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VaultDeleteReply {
    /// The key.
    pub key: String,
    /// It existed and was deleted.
    pub deleted: bool,
}
