//! Small text helpers shared by the engine and the adapters (`sayri-store`, `sayri-vault`), so
//! each rule exists once: how text is shortened and how a secret is shown.

/// `s` cut to at most `max` characters (Unicode scalar values, not bytes); never splits a
/// character.
///
/// ```
/// use sayri_core::domain::text::cut_chars;
/// assert_eq!(cut_chars("héllo", 2), "hé");
/// assert_eq!(cut_chars("hi", 30), "hi");
/// ```
pub fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_string(),
        None => s.to_string(),
    }
}

/// A secret value masked for display: empty stays empty, up to 8 characters become `***`,
/// longer values keep their first 3 and last 3 characters around `...`. Counts Unicode scalar
/// values, not bytes.
///
/// ```
/// use sayri_core::domain::text::mask;
/// assert_eq!(mask(""), "");
/// assert_eq!(mask("hunter22"), "***");
/// assert_eq!(mask("sk-abcdefghij"), "sk-...hij");
/// ```
pub fn mask(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    match chars.len() {
        0 => String::new(),
        1..=8 => "***".into(),
        n => format!(
            "{}...{}",
            chars[..3].iter().collect::<String>(),
            chars[n - 3..].iter().collect::<String>()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_chars_counts_characters_not_bytes() {
        assert_eq!(cut_chars("ééé", 2), "éé");
        assert_eq!(cut_chars("", 3), "");
        assert_eq!(cut_chars("abc", 0), "");
    }

    #[test]
    fn mask_keeps_three_characters_each_side_of_long_values_only() {
        assert_eq!(mask("123456789"), "123...789");
        assert_eq!(mask("ééééééééé"), "ééé...ééé");
        assert_eq!(mask("x"), "***");
    }
}
