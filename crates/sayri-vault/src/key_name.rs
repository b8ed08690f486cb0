//! Secret names: normalisation and the environment-variable-name rule.

use crate::VaultError;

/// Longest accepted secret name, in bytes.
pub const MAX_KEY_LEN: usize = 128;

/// Names a secret may not take, because injecting them as environment variables would change how
/// every command runs (loader, shell and identity variables).
const RESERVED: &[&str] = &[
    "PATH",
    "HOME",
    "SHELL",
    "USER",
    "LOGNAME",
    "PWD",
    "OLDPWD",
    "IFS",
    "ENV",
    "BASH_ENV",
    "TERM",
    "LANG",
    "TMPDIR",
    "PS4",
    "PROMPT_COMMAND",
];

/// Normalises a secret name (trim, upper-case, spaces → `_`) and then requires it to be a valid
/// environment variable name: only `[A-Z0-9_]`, not starting with a digit, at most
/// [`MAX_KEY_LEN`] bytes, not a reserved variable (`PATH`, `HOME`, `LD_*`, …).
///
/// # Errors
/// [`VaultError::InvalidKey`] naming the rule that failed.
///
/// ```
/// assert_eq!(sayri_vault::normalize_key(" github token ").unwrap(), "GITHUB_TOKEN");
/// assert!(sayri_vault::normalize_key("my-key").is_err());
/// ```
pub fn normalize_key(raw: &str) -> Result<String, VaultError> {
    let key: String = raw.trim().to_uppercase().replace(' ', "_");
    let err = |why| VaultError::InvalidKey {
        given: raw.to_string(),
        why,
    };
    if key.is_empty() {
        return Err(err("the name is empty"));
    }
    if key.len() > MAX_KEY_LEN {
        return Err(err("the name is longer than 128 characters"));
    }
    if !key
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(err(
            "it contains a character other than letters, digits, `_` and spaces",
        ));
    }
    if key.as_bytes()[0].is_ascii_digit() {
        return Err(err("it starts with a digit"));
    }
    if RESERVED.contains(&key.as_str()) || key.starts_with("LD_") {
        return Err(err(
            "it is a reserved environment variable that changes how every command runs",
        ));
    }
    Ok(key)
}
