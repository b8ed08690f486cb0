//! The sealed vault file format: per-value AEAD records plus one AEAD seal over the exact file bytes.
//!
//! ```text
//! SAYRI-VAULT 1\n
//! {"key_source":"key_file","kdf":null,"entries":[{"key":"K","nonce":"…","ciphertext":"…","updated_at":1}]}\n
//! <base64url, no padding: 24-byte nonce ‖ 16-byte tag>\n
//! ```
//!
//! Each entry is XChaCha20-Poly1305 over `u32-LE value length ‖ value ‖ description`, a fresh random
//! 24-byte nonce, and associated data `sayri-vault/1/entry\0<KEY>` (so a record moved to another name
//! fails). The last line is an XChaCha20-Poly1305 tag over an empty message whose associated data is
//! `sayri-vault/1/seal\0` followed by the first two lines byte for byte: any changed, added or removed
//! byte anywhere fails verification. Parsing is strict (exact layout, canonical base64 in the seal).

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::VaultError;
use crate::key_source::{DataKey, KdfParams, KeySourceKind, random_bytes};

/// First line of every vault file.
pub(crate) const MAGIC: &str = "SAYRI-VAULT 1";
const ENTRY_DOMAIN: &[u8] = b"sayri-vault/1/entry\0";
const SEAL_DOMAIN: &[u8] = b"sayri-vault/1/seal\0";
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;

/// Argon2id header of a passphrase vault.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub(crate) struct KdfHeader {
    pub algorithm: String,
    pub salt: String,
    #[serde(flatten)]
    pub params: KdfParams,
}

/// One encrypted value.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EntryRecord {
    pub key: String,
    pub nonce: String,
    pub ciphertext: String,
    /// Last change, seconds since the Unix epoch.
    pub updated_at: u64,
}

/// The JSON line.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Body {
    pub key_source: KeySourceKind,
    pub kdf: Option<KdfHeader>,
    pub entries: Vec<EntryRecord>,
}

/// A parsed but not yet verified file.
pub(crate) struct Parsed<'b> {
    pub body: Body,
    signed: &'b [u8],
    nonce: [u8; NONCE_LEN],
    tag: [u8; TAG_LEN],
}

fn cipher(key: &DataKey) -> XChaCha20Poly1305 {
    XChaCha20Poly1305::new(&(**key).into())
}

/// What is wrong with a vault file's form or one of its records: the reason of a
/// [`VaultError::Corrupt`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum Malformed {
    /// The file does not end with a newline.
    #[error("it does not end with a newline")]
    NoFinalNewline,
    /// The file has not exactly 3 lines.
    #[error("it does not have exactly 3 lines")]
    NotThreeLines,
    /// The first line is not the magic.
    #[error("the first line is not `{MAGIC}`")]
    Magic,
    /// The seal line is not base64.
    #[error("the seal line is not base64")]
    SealNotBase64,
    /// The seal line has the wrong length or padding.
    #[error("the seal line is malformed")]
    Seal,
    /// The header line is not the expected JSON.
    #[error("its header is not valid JSON of the expected shape ({0})")]
    Header(serde_json::Error),
    /// A record's nonce is malformed.
    #[error("the nonce of {0} is malformed")]
    Nonce(String),
    /// A record's ciphertext is not base64.
    #[error("the ciphertext of {0} is not base64")]
    Ciphertext(String),
    /// A record does not decrypt.
    #[error("the value of {0} does not decrypt")]
    Decrypt(String),
    /// A record decrypts to something else than a value and a description.
    #[error("the value of {0} is malformed")]
    Value(String),
}

/// Splits and parses a file without trusting it yet.
///
/// # Errors
/// [`Malformed`]: the reason for a [`VaultError::Corrupt`].
pub(crate) fn parse(bytes: &[u8]) -> Result<Parsed<'_>, Malformed> {
    let text_end = bytes.strip_suffix(b"\n").ok_or(Malformed::NoFinalNewline)?;
    let mut lines = text_end.split(|b| *b == b'\n');
    let (Some(magic), Some(body), Some(seal), None) =
        (lines.next(), lines.next(), lines.next(), lines.next())
    else {
        return Err(Malformed::NotThreeLines);
    };
    if magic != MAGIC.as_bytes() {
        return Err(Malformed::Magic);
    }
    let signed = &bytes[..magic.len() + 1 + body.len() + 1];
    let raw = URL_SAFE_NO_PAD
        .decode(seal)
        .map_err(|_| Malformed::SealNotBase64)?;
    if raw.len() != NONCE_LEN + TAG_LEN || URL_SAFE_NO_PAD.encode(&raw).as_bytes() != seal {
        return Err(Malformed::Seal);
    }
    let mut nonce = [0u8; NONCE_LEN];
    let mut tag = [0u8; TAG_LEN];
    nonce.copy_from_slice(&raw[..NONCE_LEN]);
    tag.copy_from_slice(&raw[NONCE_LEN..]);
    let body: Body = serde_json::from_slice(body).map_err(Malformed::Header)?;
    Ok(Parsed {
        body,
        signed,
        nonce,
        tag,
    })
}

impl Parsed<'_> {
    /// True when the seal verifies under `key`.
    pub(crate) fn verify(&self, key: &DataKey) -> bool {
        let mut aad = Vec::with_capacity(SEAL_DOMAIN.len() + self.signed.len());
        aad.extend_from_slice(SEAL_DOMAIN);
        aad.extend_from_slice(self.signed);
        let nonce = XNonce::from(self.nonce);
        cipher(key)
            .decrypt(
                &nonce,
                Payload {
                    msg: &self.tag,
                    aad: &aad,
                },
            )
            .is_ok()
    }
}

/// Serialises `body` and appends a fresh seal.
pub(crate) fn seal(key: &DataKey, body: &Body) -> Result<Vec<u8>, VaultError> {
    let json = serde_json::to_vec(body)
        .map_err(|e| VaultError::Crypto(format!("cannot serialise the vault ({e})")))?;
    let mut out = Vec::with_capacity(MAGIC.len() + json.len() + 64);
    out.extend_from_slice(MAGIC.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(&json);
    out.push(b'\n');
    let mut aad = Vec::with_capacity(SEAL_DOMAIN.len() + out.len());
    aad.extend_from_slice(SEAL_DOMAIN);
    aad.extend_from_slice(&out);
    let nonce_bytes = random_bytes::<NONCE_LEN>()?;
    let tag = cipher(key)
        .encrypt(
            &XNonce::from(nonce_bytes),
            Payload {
                msg: &[],
                aad: &aad,
            },
        )
        .map_err(|_| VaultError::Crypto("sealing the vault failed".into()))?;
    let mut raw = nonce_bytes.to_vec();
    raw.extend_from_slice(&tag);
    out.extend_from_slice(URL_SAFE_NO_PAD.encode(&raw).as_bytes());
    out.push(b'\n');
    Ok(out)
}

fn entry_aad(key_name: &str) -> Vec<u8> {
    let mut aad = ENTRY_DOMAIN.to_vec();
    aad.extend_from_slice(key_name.as_bytes());
    aad
}

/// Encrypts one value and its description under a fresh random nonce.
pub(crate) fn encrypt_entry(
    key: &DataKey,
    name: &str,
    value: &str,
    description: &str,
    updated_at: u64,
) -> Result<EntryRecord, VaultError> {
    let len = u32::try_from(value.len()).map_err(|_| {
        VaultError::Crypto("a secret value larger than 4 GiB cannot be stored".into())
    })?;
    let mut plain = Zeroizing::new(Vec::with_capacity(4 + value.len() + description.len()));
    plain.extend_from_slice(&len.to_le_bytes());
    plain.extend_from_slice(value.as_bytes());
    plain.extend_from_slice(description.as_bytes());
    let nonce_bytes = random_bytes::<NONCE_LEN>()?;
    let aad = entry_aad(name);
    let ct = cipher(key)
        .encrypt(
            &XNonce::from(nonce_bytes),
            Payload {
                msg: &plain,
                aad: &aad,
            },
        )
        .map_err(|_| VaultError::Crypto("encrypting a secret failed".into()))?;
    Ok(EntryRecord {
        key: name.to_string(),
        nonce: STANDARD.encode(nonce_bytes),
        ciphertext: STANDARD.encode(ct),
        updated_at,
    })
}

/// Decrypts one record into (value, description).
///
/// # Errors
/// [`Malformed`]: the reason for a [`VaultError::Corrupt`].
pub(crate) fn decrypt_entry(
    key: &DataKey,
    rec: &EntryRecord,
) -> Result<(Zeroizing<String>, String), Malformed> {
    let nonce: [u8; NONCE_LEN] = STANDARD
        .decode(&rec.nonce)
        .ok()
        .and_then(|n| n.try_into().ok())
        .ok_or_else(|| Malformed::Nonce(rec.key.clone()))?;
    let ct = STANDARD
        .decode(&rec.ciphertext)
        .map_err(|_| Malformed::Ciphertext(rec.key.clone()))?;
    let aad = entry_aad(&rec.key);
    let plain = Zeroizing::new(
        cipher(key)
            .decrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: &ct,
                    aad: &aad,
                },
            )
            .map_err(|_| Malformed::Decrypt(rec.key.clone()))?,
    );
    let bad = || Malformed::Value(rec.key.clone());
    let len_bytes: [u8; 4] = plain
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(bad)?;
    let len = u32::from_le_bytes(len_bytes) as usize;
    let value = plain.get(4..4 + len).ok_or_else(bad)?;
    let desc = plain.get(4 + len..).ok_or_else(bad)?;
    let value = Zeroizing::new(std::str::from_utf8(value).map_err(|_| bad())?.to_string());
    let desc = std::str::from_utf8(desc).map_err(|_| bad())?.to_string();
    Ok((value, desc))
}

/// A new random Argon2id salt, base64.
pub(crate) fn new_salt() -> Result<String, VaultError> {
    Ok(STANDARD.encode(random_bytes::<16>()?))
}

/// Decodes a header salt.
pub(crate) fn decode_salt(salt: &str) -> Option<Vec<u8>> {
    STANDARD.decode(salt).ok()
}
