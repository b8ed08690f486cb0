//! Whisper's silence hallucinations: on near-silent or noisy audio the model invents stock
//! phrases learnt from subtitles ("Thank you for watching", "Subtítulos por…"). A transcript
//! is dropped as a hallucination only when it is such a phrase **and** the audio held little
//! speech; a clearly spoken "thank you" is kept.

use crate::static_regex::static_regex;
use regex::Regex;
use std::sync::LazyLock;

/// How much speech the audio of an utterance held, from the VAD.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SpeechEvidence {
    /// Milliseconds the VAD judged to be speech.
    pub voiced_ms: u32,
    /// Length of the utterance, milliseconds.
    pub total_ms: u32,
    /// Highest speech probability seen, 0..1.
    pub peak_probability: f32,
}

impl SpeechEvidence {
    /// Little speech: under 400 ms voiced, or the VAD never was confident (peak < 0.6).
    pub fn is_little_speech(&self) -> bool {
        self.voiced_ms < 400 || self.peak_probability < 0.6
    }
}

/// Stock subtitle phrases whisper produces from silence, lowercase, in several languages: a
/// transcript containing one is a hallucination candidate.
const GHOST_PHRASES: &[&str] = &[
    // English
    "thank you for watching",
    "thanks for watching",
    "thank you so much for watching",
    "please subscribe",
    "like and subscribe",
    "subtitles by",
    "captions by",
    "transcription by",
    "see you in the next video",
    "amara.org",
    // Spanish
    "gracias por ver",
    "subtítulos por",
    "subtitulos por",
    "subtítulos realizados por",
    "suscríbete",
    // French
    "merci d'avoir regardé",
    "sous-titres réalisés par",
    "sous-titrage",
    "abonnez-vous",
    // German
    "danke fürs zuschauen",
    "untertitel im auftrag",
    "untertitel von",
    // Portuguese
    "obrigado por assistir",
    "legendas pela comunidade",
    "inscreva-se",
    // Italian
    "grazie per la visione",
    "sottotitoli creati dalla comunità",
];

/// Short stock outputs that are hallucination candidates only as the whole transcript.
const GHOST_WHOLE: &[&str] = &[
    "thank you",
    "thanks",
    "you",
    "bye",
    "see you next time",
    "gracias",
    "hasta la próxima",
    "merci",
    "danke",
    "bis zum nächsten mal",
    "obrigado",
    "grazie",
];

static ANNOTATION: LazyLock<Regex> =
    LazyLock::new(|| static_regex(r"\[[^\]]*\]|\([^)]*\)|\*[^*]*\*|♪+"));

/// Cleans a raw transcript: removes `[…]`, `(…)`, `*…*` and `♪` annotations, squeezes
/// spaces, collapses a decoder repetition loop (see [`collapse_repetition`]) and trims
/// punctuation at both ends. Returns `None` when nothing speakable remains,
/// or when the text is a known silence hallucination and `evidence` shows little speech.
pub fn clean_transcript(raw: &str, evidence: SpeechEvidence) -> Option<String> {
    let stripped = ANNOTATION.replace_all(raw, " ");
    let squeezed = stripped.split_whitespace().collect::<Vec<_>>().join(" ");
    let squeezed = collapse_repetition(&squeezed);
    let text = squeezed
        .trim_matches(|c: char| c.is_whitespace() || ".,;:¿?¡!-_'\"…".contains(c))
        .to_string();
    if text.chars().filter(|c| c.is_alphanumeric()).count() < 2 {
        return None;
    }
    if evidence.is_little_speech() && is_ghost_phrase(&squeezed) {
        return None;
    }
    Some(text)
}

/// Shortest phrase, in words, that [`collapse_repetition`] treats as a repetition loop: shorter
/// repeats ("bye bye", "no no no") are how people talk.
const MIN_LOOP_WORDS: usize = 3;

/// Whisper's decoder sometimes falls into a loop and writes the whole utterance twice or more
/// ("What time is it? What time is it?"). When `text` (single-spaced) is nothing but the same
/// phrase of at least [`MIN_LOOP_WORDS`] words said two or more times in a row — compared
/// case- and punctuation-insensitively — only the first copy is kept; any other text is
/// returned unchanged.
pub fn collapse_repetition(text: &str) -> String {
    let tokens: Vec<&str> = text.split(' ').filter(|t| !t.is_empty()).collect();
    let bare: Vec<String> = tokens
        .iter()
        .map(|t| {
            t.chars()
                .filter(|c| c.is_alphanumeric())
                .flat_map(char::to_lowercase)
                .collect()
        })
        .collect();
    let n = bare.len();
    for unit in MIN_LOOP_WORDS..=n / 2 {
        if n.is_multiple_of(unit) && (unit..n).all(|i| bare[i] == bare[i % unit]) {
            return tokens[..unit].join(" ");
        }
    }
    text.to_string()
}

/// True when `text` contains a stock subtitle phrase, or is one of the short stock outputs
/// ("thank you", "you") as a whole.
pub fn is_ghost_phrase(text: &str) -> bool {
    let lower = text.trim().to_lowercase();
    let bare = lower.trim_matches(|c: char| !c.is_alphanumeric());
    GHOST_PHRASES.iter().any(|p| lower.contains(p)) || GHOST_WHOLE.contains(&bare)
}

/// Removes a wake phrase (or its last word, when the detector fired mid-phrase) from the start
/// of `text`, with the punctuation after it: `"Jarvis, what time is it?"` → `"what time is
/// it?"`. `phrases` are lowercase.
pub fn strip_wake_phrase(text: &str, phrases: &[String]) -> String {
    let mut out = text.trim().to_string();
    for phrase in phrases {
        let words: Vec<&str> = phrase.split_whitespace().collect();
        for start in 0..words.len() {
            let tail = &words[start..];
            if let Some(rest) = strip_words(&out, tail) {
                out = rest;
                return out;
            }
        }
    }
    out
}

fn strip_words(text: &str, words: &[&str]) -> Option<String> {
    let mut rest = text;
    for w in words {
        rest = rest.trim_start_matches(|c: char| !c.is_alphanumeric());
        let head: String = rest.chars().take(w.chars().count()).collect();
        if !head.eq_ignore_ascii_case(w) {
            return None;
        }
        rest = &rest[head.len()..];
        if rest.chars().next().is_some_and(|c| c.is_alphanumeric()) {
            return None;
        }
    }
    let rest = rest.trim_start_matches(|c: char| !c.is_alphanumeric());
    Some(rest.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SILENT: SpeechEvidence = SpeechEvidence {
        voiced_ms: 100,
        total_ms: 3000,
        peak_probability: 0.4,
    };
    const SPOKEN: SpeechEvidence = SpeechEvidence {
        voiced_ms: 900,
        total_ms: 1200,
        peak_probability: 0.98,
    };

    #[test]
    fn a_transcript_said_twice_by_a_decoder_loop_is_kept_once() {
        assert_eq!(
            collapse_repetition("What time is it? What time is it?"),
            "What time is it?"
        );
        assert_eq!(
            collapse_repetition("turn on the lights turn on the lights, turn on the lights"),
            "turn on the lights"
        );
        assert_eq!(
            clean_transcript("what time is it what time is it", SPOKEN).as_deref(),
            Some("what time is it")
        );
    }

    #[test]
    fn repeats_people_say_and_partial_repeats_are_kept() {
        for text in [
            "bye bye",
            "no no no no",
            "thank you thank you",
            "what time is it what time",
            "is it is it is it late",
            "what time is it in Lima, what time is it in Quito",
        ] {
            assert_eq!(collapse_repetition(text), text);
        }
    }

    #[test]
    fn ghost_phrases_on_silence_are_dropped_in_several_languages() {
        for t in [
            "Thank you for watching!",
            " Thank you.",
            "Subtitles by the Amara.org community",
            "Gracias por ver el video.",
            "Subtítulos por la comunidad de Amara.org",
            "Untertitel im Auftrag des ZDF, 2021",
            "Sous-titres réalisés par la communauté d'Amara.org",
            "Obrigado por assistir.",
            "Sottotitoli creati dalla comunità Amara.org",
            "you",
        ] {
            assert_eq!(clean_transcript(t, SILENT), None, "{t}");
        }
    }

    #[test]
    fn clearly_spoken_thank_you_is_kept() {
        assert_eq!(
            clean_transcript("Thank you.", SPOKEN).as_deref(),
            Some("Thank you")
        );
        assert_eq!(
            clean_transcript("Thanks for watching the oven for me", SPOKEN).as_deref(),
            Some("Thanks for watching the oven for me")
        );
    }

    #[test]
    fn ordinary_text_survives_little_speech() {
        assert_eq!(
            clean_transcript("Turn on the kitchen lights.", SILENT).as_deref(),
            Some("Turn on the kitchen lights")
        );
        // "you" only counts as a ghost when it is the whole transcript.
        assert!(clean_transcript("Can you hear me", SILENT).is_some());
    }

    #[test]
    fn annotations_and_punctuation_are_removed() {
        assert_eq!(
            clean_transcript("[MUSIC] (applause) ♪ *sigh*", SPOKEN),
            None
        );
        assert_eq!(
            clean_transcript(" [BLANK_AUDIO] Hello   world! ", SPOKEN).as_deref(),
            Some("Hello world")
        );
    }

    #[test]
    fn wake_phrase_is_stripped_from_the_start_only() {
        let p = vec!["hey jarvis".to_string()];
        assert_eq!(
            strip_wake_phrase("Hey Jarvis, what time is it?", &p),
            "what time is it?"
        );
        assert_eq!(
            strip_wake_phrase("Jarvis. What time is it?", &p),
            "What time is it?"
        );
        assert_eq!(
            strip_wake_phrase("Ask Jarvis about it", &p),
            "Ask Jarvis about it"
        );
        assert_eq!(strip_wake_phrase("Heyday is over", &p), "Heyday is over");
    }
}
