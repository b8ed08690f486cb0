//! The OS keyring (Secret Service over D-Bus) as a data-key store. Built only with feature `keyring`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use zeroize::Zeroizing;

use crate::VaultError;
use crate::key_source::{DataKey, KEY_LEN, random_key};

/// Secret Service attributes of the data key.
pub(crate) const SERVICE: &str = "sayri";
/// Account name of the data key.
pub(crate) const ACCOUNT: &str = "vault-data-key";

fn entry() -> Result<keyring::Entry, VaultError> {
    keyring::Entry::new(SERVICE, ACCOUNT).map_err(|e| VaultError::Keyring {
        why: format!(
            "no usable Secret Service ({e}); a D-Bus session bus and an unlocked keyring (e.g. gnome-keyring) are needed"
        ),
    })
}

/// Reads the data key; errors if the keyring is unreachable or holds no (or a malformed) key.
pub(crate) fn load() -> Result<DataKey, VaultError> {
    let text = Zeroizing::new(entry()?.get_password().map_err(|e| VaultError::Keyring {
        why: format!(
            "cannot read the vault key (service `{SERVICE}`, account `{ACCOUNT}`): {e}. Unlock the keyring, or restore the key"
        ),
    })?);
    decode(&text)
}

/// Parses the stored text (standard base64 of [`KEY_LEN`] bytes) into a key.
fn decode(text: &str) -> Result<DataKey, VaultError> {
    let bytes = Zeroizing::new(STANDARD.decode(text.trim().as_bytes()).map_err(|_| {
        VaultError::Keyring {
            why: format!("the entry `{SERVICE}`/`{ACCOUNT}` is not a Sayri vault key"),
        }
    })?);
    let arr: Zeroizing<[u8; KEY_LEN]> = Zeroizing::new(bytes.as_slice().try_into().map_err(
        |_| VaultError::Keyring {
            why: format!("the entry `{SERVICE}`/`{ACCOUNT}` has the wrong length"),
        },
    )?);
    DataKey::from_bytes(&arr)
}

/// Creates a fresh data key in the keyring, or reuses one already stored there (then the flag is
/// true: every vault of this user whose key is in the keyring shares that one entry).
pub(crate) fn create_or_load() -> Result<(DataKey, bool), VaultError> {
    let entry = entry()?;
    match entry.get_password() {
        Ok(text) => decode(&Zeroizing::new(text)).map(|key| (key, true)),
        Err(keyring::Error::NoEntry) => {
            let key = random_key()?;
            let text = Zeroizing::new(STANDARD.encode(key.as_slice()));
            entry.set_password(&text).map_err(|e| VaultError::Keyring {
                why: format!("cannot store the vault key: {e}"),
            })?;
            Ok((key, false))
        }
        Err(e) => Err(VaultError::Keyring {
            why: format!("the Secret Service is not usable: {e}"),
        }),
    }
}
