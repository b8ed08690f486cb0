//! Ending an utterance early: the voice loop transcribes speculatively as soon as the person
//! pauses, and a transcript that reads as a finished sentence ends the utterance without
//! waiting for the whole end-of-speech silence.

/// Words that leave a sentence open when they come last (articles, prepositions, conjunctions,
/// possessives, fillers), lowercase, English and Spanish. Copulas are not among them: "I know
/// what it is." and "¿Qué hora es?" end on one. A transcript ending in one is not complete
/// whatever punctuation the recogniser put after it.
const OPEN_ENDINGS: &[&str] = &[
    // English
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "from", "with", "by", "and", "or", "but",
    "if", "that", "my", "your", "what's", "um", "uh", "so", // Spanish
    "el", "la", "los", "las", "un", "una", "de", "del", "y", "o", "que", "en", "por", "para",
    "con", "mi", "tu",
];

/// Whether `text` reads as a finished sentence: it ends with `.`, `?` or `!` (not an ellipsis),
/// has at least two words, and its last word does not leave the sentence open (see the
/// list above). Pinned by `a_transcript_is_complete_only_as_a_finished_sentence`.
pub fn looks_complete(text: &str) -> bool {
    let t = text.trim();
    if t.ends_with("...") || t.ends_with('…') || t.ends_with(',') {
        return false;
    }
    let Some(body) = t.strip_suffix(['.', '?', '!']) else {
        return false;
    };
    let words: Vec<String> = body
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    match words.last() {
        Some(last) if words.len() >= 2 => !OPEN_ENDINGS.contains(&last.as_str()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_is_complete_only_as_a_finished_sentence() {
        assert!(looks_complete("What is the capital of France?"));
        assert!(looks_complete("Turn on the kitchen lights."));
        assert!(looks_complete("¿Qué hora es?"));
        assert!(looks_complete("I know what it is."));
        assert!(!looks_complete("What is the capital of"));
        assert!(!looks_complete("What is the capital of."));
        assert!(!looks_complete("I want to go to the..."));
        assert!(
            !looks_complete("Hello."),
            "one word may be the start of more"
        );
        assert!(!looks_complete("Tell me a story and"));
        assert!(!looks_complete(""));
    }
}
