//! Masked display of a secret value for listings.

/// Masks a value for display: the first 3 and last 3 characters around `...` when the value has more
/// than 8 characters, else `***`. Counts Unicode scalar values, not bytes.
///
/// ```
/// assert_eq!(sayri_vault::mask("sk-abcdefghij"), "sk-...hij");
/// assert_eq!(sayri_vault::mask("hunter22"), "***");
/// ```
pub fn mask(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    if chars.len() <= 8 {
        return "***".to_string();
    }
    let head: String = chars[..3].iter().collect();
    let tail: String = chars[chars.len() - 3..].iter().collect();
    format!("{head}...{tail}")
}
