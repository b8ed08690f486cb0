//! Speech defaults that follow the user's locale: `stt.language`, `tts.language` and `tts.voice`
//! default to the language of `LC_ALL` / `LC_MESSAGES` / `LANG` (the first one set, as the C
//! library reads them), and to English when that is unset, `C`/`POSIX`, or a language Sayri
//! knows no voice for. A value in `sayri.toml` always wins over these defaults, and the
//! defaults are never written to the file.

/// The speech defaults for one locale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeechDefaults {
    /// Whisper language code for `stt.language`, e.g. `"en"`.
    pub stt_language: &'static str,
    /// Piper language key for `tts.language`, e.g. `"en_US"`.
    pub tts_language: &'static str,
    /// Piper voice name for `tts.voice`, e.g. `"joe"`.
    pub tts_voice: &'static str,
}

/// Languages with a known Piper voice: `(language, default country, voice)`. The first row is
/// the fallback.
const VOICES: &[(&str, &str, &str)] = &[
    ("en", "en_US", "joe"),
    ("es", "es_ES", "sharvard"),
    ("de", "de_DE", "thorsten"),
    ("fr", "fr_FR", "siwis"),
    ("it", "it_IT", "riccardo"),
    ("pt", "pt_BR", "faber"),
    ("nl", "nl_NL", "mls"),
];

/// Country-specific Piper language keys that have a voice of their own.
const COUNTRY_VOICES: &[(&str, &str)] = &[("en_GB", "alan"), ("es_MX", "claude")];

/// The locale name that applies, from the values of `LC_ALL`, `LC_MESSAGES` and `LANG` (in
/// that order; an empty variable counts as unset, as in the C library).
pub fn effective_locale<'a>(
    lc_all: Option<&'a str>,
    lc_messages: Option<&'a str>,
    lang: Option<&'a str>,
) -> Option<&'a str> {
    [lc_all, lc_messages, lang]
        .into_iter()
        .flatten()
        .find(|v| !v.is_empty())
}

/// The speech defaults for a locale name such as `de_DE.UTF-8`, `en_GB`, `es`, `C` (`None`:
/// no locale set). Unknown languages and `C`/`POSIX` give English.
pub fn speech_defaults(locale: Option<&str>) -> SpeechDefaults {
    let name = locale.unwrap_or("").split(['.', '@']).next().unwrap_or("");
    let lang = name.split('_').next().unwrap_or("").to_ascii_lowercase();
    let &(stt, country_default, voice) = VOICES
        .iter()
        .find(|(l, _, _)| *l == lang)
        .unwrap_or(&VOICES[0]);
    match COUNTRY_VOICES.iter().find(|(key, _)| *key == name) {
        Some(&(key, voice)) => SpeechDefaults {
            stt_language: stt,
            tts_language: key,
            tts_voice: voice,
        },
        None => SpeechDefaults {
            stt_language: stt,
            tts_language: country_default,
            tts_voice: voice,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_language_of_the_locale_picks_the_speech_defaults() {
        let d = speech_defaults(Some("de_DE.UTF-8"));
        assert_eq!(
            (d.stt_language, d.tts_language, d.tts_voice),
            ("de", "de_DE", "thorsten")
        );
        let d = speech_defaults(Some("es_AR.UTF-8"));
        assert_eq!((d.stt_language, d.tts_language), ("es", "es_ES"));
        let d = speech_defaults(Some("en_GB.UTF-8"));
        assert_eq!(
            (d.stt_language, d.tts_language, d.tts_voice),
            ("en", "en_GB", "alan")
        );
    }

    #[test]
    fn an_unknown_or_missing_locale_gives_english() {
        for l in [
            None,
            Some(""),
            Some("C"),
            Some("POSIX"),
            Some("C.UTF-8"),
            Some("xx_YY"),
        ] {
            let d = speech_defaults(l);
            assert_eq!(
                (d.stt_language, d.tts_language, d.tts_voice),
                ("en", "en_US", "joe"),
                "{l:?}"
            );
        }
    }

    #[test]
    fn lc_all_wins_then_lc_messages_then_lang_and_empty_counts_as_unset() {
        assert_eq!(
            effective_locale(Some("de_DE"), Some("fr_FR"), Some("es_ES")),
            Some("de_DE")
        );
        assert_eq!(
            effective_locale(Some(""), None, Some("es_ES")),
            Some("es_ES")
        );
        assert_eq!(
            effective_locale(None, Some("fr_FR"), Some("es_ES")),
            Some("fr_FR")
        );
        assert_eq!(effective_locale(None, None, None), None);
    }
}
