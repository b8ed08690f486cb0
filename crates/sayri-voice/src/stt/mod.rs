//! Speech-to-text adapters.

pub mod on_demand;

#[cfg(feature = "whisper")]
pub mod whisper;

#[cfg(feature = "whisper")]
pub use whisper::WhisperStt;

pub use on_demand::{OnDemandStt, SttLoader};

/// The whisper language code for a config value: `auto`/empty → `auto`, `en_US`/`en-US` →
/// `en`, otherwise the first two letters, lowercased.
pub fn language_code(config: &str) -> String {
    let c = config.trim().to_lowercase();
    if c.is_empty() || c == "auto" {
        return "auto".into();
    }
    c.split(['_', '-'])
        .next()
        .unwrap_or(&c)
        .chars()
        .take(2)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_codes_follow_the_config() {
        assert_eq!(language_code(""), "auto");
        assert_eq!(language_code("auto"), "auto");
        assert_eq!(language_code("es_ES"), "es");
        assert_eq!(language_code("en-US"), "en");
        assert_eq!(language_code("de"), "de");
    }
}
